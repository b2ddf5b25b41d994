"""Jobs racing on one table, and a job driver killed mid-run (docs/TABLE_FORMAT.md).

Scenario 1: three real processes run at once against one batch-mode table — ingest of
three daily inputs, three compactions and three deletes — each ``python jobs/<job>.py``
with its own Spark driver. The deletes only target rows that exist before the race, so the
final rows are known exactly: every ingested row once, no deleted row back.

Scenario 2: the ingest driver SIGKILLs itself at one of three points of the commit
(after its transaction file, before the manifest put, after the manifest put). The table
is at the old or the new version, never between; a re-run completes the ingest (or says
it is done) and the rows are exactly right.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion
from fermion.io import failpoints
from tests.jobs.helpers import JOBS, ROOT, job_env, write_config

INITIAL = 300
DAY_ROWS = 200


def _day(day: int) -> pa.Table:
    start = 10_000 * day
    ids = list(range(start, start + DAY_ROWS))
    return pa.table({"b": pa.array([i // 5 for i in ids], pa.int64()), "v": ids})


def _setup(tmp_path: Path, days: int) -> tuple[Path, list[Path]]:
    uri = tmp_path / "t"
    initial = pa.table({"b": pa.array([i // 5 for i in range(INITIAL)], pa.int64()),
                        "v": list(range(INITIAL))})  # fmt: skip
    plan = fermion.table.tasks.plan_write(str(uri), initial.schema, batch_id_column="b",
                                          max_rows_per_file=50)  # fmt: skip
    fermion.table.tasks.commit_write(plan, [fermion.table.tasks.execute_write(plan, initial)])
    sources = []
    for day in range(1, days + 1):
        folder = tmp_path / "src" / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(_day(day), folder / "part-0.parquet")
        sources.append(folder)
    return uri, sources


def _script(commands: list[list[str]]) -> str:
    """A Python program that runs the commands one after the other and fails on the first
    non-zero exit (a sequence of job runs in one racing process)."""
    return (
        "import subprocess, sys\n"
        f"for cmd in {commands!r}:\n"
        "    done = subprocess.run(cmd, capture_output=True, text=True)\n"
        "    sys.stdout.write(done.stdout)\n"
        "    if done.returncode:\n"
        "        sys.stderr.write(done.stderr[-4000:])\n"
        "        sys.exit(done.returncode)\n"
    )


def _job(name: str, config: str, *sets: str) -> list[str]:
    command = [sys.executable, str(JOBS / f"{name}.py"), "--config", config]
    for item in sets:
        command += ["--set", item]
    return command


@pytest.mark.slow
def test_ingest_compaction_and_deletes_race_without_losing_a_row(tmp_path: Path) -> None:
    uri, sources = _setup(tmp_path, days=3)
    ingest = write_config(tmp_path / "ingest.yaml", table=str(uri), source="",
                          batch_id_column="b", partitions=2)  # fmt: skip
    compact = write_config(tmp_path / "compact.yaml", table=str(uri),
                           target_rows_per_fragment=400)  # fmt: skip
    delete = write_config(tmp_path / "delete.yaml", table=str(uri), predicate="v < 0")
    deleted = [(0, 40), (100, 150), (220, 300)]  # only initial rows: the outcome is exact
    racers = [
        [_job("ingest", ingest, f"source={s}") for s in sources],
        [_job("compact", compact) for _ in range(3)],
        [_job("delete", delete, f"predicate=v >= {a} AND v < {b}") for a, b in deleted],
    ]
    processes = [
        subprocess.Popen([sys.executable, "-c", _script(commands)], cwd=ROOT, env=job_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for commands in racers
    ]  # fmt: skip
    outputs = [p.communicate(timeout=900) for p in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, f"{out[-2000:]}\n{err[-4000:]}"
    ds = fermion.dataset(str(uri))
    got = ds.to_table()["v"].to_pylist()
    gone = {v for a, b in deleted for v in range(a, b)}
    expected = [v for v in range(INITIAL) if v not in gone]
    expected += [v for day in range(1, 4) for v in _day(day)["v"].to_pylist()]
    assert len(got) == len(set(got)), "a row appears twice"
    assert sorted(got) == sorted(expected), "rows lost or resurrected"
    versions = [v.version for v in ds.versions()]
    assert versions == list(range(1, ds.version + 1))  # contiguous, none skipped
    operations = [v.operation for v in ds.versions()]
    assert operations.count("append") == 3 and operations.count("delete") == 3
    # each batch is still in one fragment, its rows contiguous
    owner: dict[int, int] = {}
    for fragment in ds.fragments:
        path = ds.storage.path(fragment.files[0].path)
        with fermion.FileReader(path) as reader:
            ids = reader.read(columns=["b"])["b"].to_pylist()
        for batch_id in set(ids):
            assert owner.setdefault(batch_id, fragment.id) == fragment.id


@pytest.mark.parametrize("point", ["after_txn_write", "before_manifest_put",
                                   "after_manifest_put"])  # fmt: skip
def test_killed_ingest_driver_leaves_a_committed_version_and_a_rerun_completes(
    tmp_path: Path, point: str
) -> None:
    uri, sources = _setup(tmp_path, days=1)
    config = write_config(tmp_path / "ingest.yaml", table=str(uri), source=str(sources[0]),
                          batch_id_column="b")  # fmt: skip
    env = job_env()
    env[failpoints.ENV_VAR] = f"{point}:kill"
    env[failpoints.ENABLE_VAR] = failpoints.ENABLE_TOKEN  # the explicit opt-in of a test
    killed = subprocess.run(_job("ingest", config), cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=600)  # fmt: skip
    assert killed.returncode == -9, killed.stderr[-3000:]
    after_kill = fermion.dataset(str(uri))
    expected_version = 2 if point == "after_manifest_put" else 1
    assert after_kill.version == expected_version
    assert after_kill.count_rows() == INITIAL + (DAY_ROWS if expected_version == 2 else 0)
    rerun = subprocess.run(_job("ingest", config), cwd=ROOT, env=job_env(),
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    summary = rerun.stdout.strip().splitlines()[-1]
    assert ('"skipped": true' in summary) == (point == "after_manifest_put"), summary
    ds = fermion.dataset(str(uri))
    assert sorted(ds.to_table()["v"].to_pylist()) == list(range(INITIAL)) + _day(1)["v"].to_pylist()
    assert ds.version == 2
