"""The ingest job end to end on local Spark: batch alignment, idempotency, failures."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion
from fermion.spark.jobs.config import IngestConfig
from fermion.spark.jobs.ingest import ingest
from fermion.spark.jobs.runner import run
from fermion.table.scan import read_fragment
from tests.jobs.helpers import CONF, submit_job, write_config


def _source(directory: Path, rows: int, files: int = 2, first: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    ids = list(range(first, first + rows))
    table = pa.table({
        "batch_id": [i // 7 for i in ids],
        "x": ids,
        "s": [f"row {i}" for i in ids],
        "f": [[float(i)] * (i % 3) for i in ids],
    })  # fmt: skip
    step = -(-rows // files)
    for k in range(files):
        pq.write_table(table.slice(k * step, step), directory / f"part-{first}-{k}.parquet")


def _ingest(spark: Any, config: str, *sets: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    argv = ["--config", config, *[a for s in sets for a in ("--set", s)]]
    code = run("ingest", IngestConfig, ingest, argv, spark=spark, stdout=out)
    return code, json.loads(out.getvalue().splitlines()[-1])


def _data_files(uri: Path) -> list[str]:
    return sorted(str(p) for p in (uri / "data").rglob("*") if p.is_file())


def test_ingest_keeps_batches_whole_and_runs_once_per_input(spark: Any, tmp_path: Path) -> None:
    uri, source = tmp_path / "t", tmp_path / "in"
    _source(source, 3_000)
    config = write_config(
        tmp_path / "ingest.yaml", table=str(uri), source=str(source), batch_id_column="batch_id",
        max_rows_per_file=700, partitions=3,
    )  # fmt: skip
    code, summary = _ingest(spark, config)
    assert code == 0, summary
    assert summary["status"] == "ok" and summary["skipped"] is False
    assert (summary["read_version"], summary["committed_version"]) == (0, 1)
    assert (summary["rows_in"], summary["rows_out"], summary["files_in"]) == (3_000, 3_000, 2)
    ds = fermion.dataset(str(uri))
    assert summary["files_out"] == len(ds.fragments) >= 5
    assert sorted(ds.to_table()["x"].to_pylist()) == list(range(3_000))
    owner: dict[int, set[int]] = {}
    for fragment in ds.fragments:
        table = read_fragment(ds.storage, ds.table_schema, fragment, ["batch_id"])
        for batch in set(table["batch_id"].to_pylist()):
            owner.setdefault(batch, set()).add(fragment.id)
    assert len(owner) == 429 and all(len(f) == 1 for f in owner.values())
    assert ds.manifest.config["fermion.batch_id_column"] == "batch_id"
    assert ds.versions()[-1].summary["fermion.job"] == "ingest"

    again_code, again = _ingest(spark, config)
    assert again_code == 0 and again["skipped"] is True and again["committed_version"] is None
    assert "already ingested (version 1)" in again["reason"]
    assert fermion.dataset(str(uri)).version == 1

    _source(source, 500, files=1, first=3_000)  # new input: a new file in the directory
    code, more = _ingest(spark, config)
    assert code == 0 and more["committed_version"] == 2 and more["rows_out"] == 3_500
    assert more["retries"] == 0 and more["read_version"] == 1
    assert fermion.dataset(str(uri)).count_rows() == 3_500 + 3_000


def test_an_explicit_input_key_identifies_the_input(spark: Any, tmp_path: Path) -> None:
    uri, source = tmp_path / "t", tmp_path / "in"
    _source(source, 100, files=1)
    config = write_config(tmp_path / "ingest.yaml", table=str(uri), source=str(source))
    assert _ingest(spark, config, "input_key=dt=2026-11-01")[1]["committed_version"] == 1
    assert _ingest(spark, config, "input_key=dt=2026-11-01")[1]["skipped"] is True
    assert _ingest(spark, config, "input_key=dt=2026-11-02")[1]["committed_version"] == 2
    assert fermion.dataset(str(uri)).count_rows() == 200


def test_json_and_csv_sources(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "a.json").write_text("".join(
        json.dumps({"batch_id": i // 2, "name": f"n{i}"}) + "\n" for i in range(10)
    ))  # fmt: skip
    (tmp_path / "c.csv").write_text("batch_id,name\n1,a\n1,b\n2,c\n")
    config = write_config(tmp_path / "ingest.yaml", table=str(tmp_path / "t"), source="")
    code, summary = _ingest(
        spark, config, f"source={tmp_path / 'j'}", "source_format=json", "batch_id_column=batch_id"
    )
    assert code == 0 and summary["rows_out"] == 10
    names = fermion.dataset(str(tmp_path / "t")).to_table()["name"].to_pylist()
    assert sorted(names) == sorted(f"n{i}" for i in range(10))
    code, summary = _ingest(
        spark, config, f"source={tmp_path / 'c.csv'}", "source_format=csv",
        "source_options={header: true, inferSchema: true}", "batch_id_column=batch_id",
    )  # fmt: skip
    # CSV infers int32 ids where JSON gave int64: an append must match the table's types
    assert code == 1 and summary["error"] == (
        "SchemaMismatchError: column 'batch_id' has type int32, the table has int64"
    )
    code, summary = _ingest(
        spark, config, f"source={tmp_path / 'c.csv'}", "source_format=csv",
        "source_options={header: true, inferSchema: true}", f"table={tmp_path / 'csv'}",
    )  # fmt: skip
    assert code == 0 and summary["rows_out"] == 3 and summary["committed_version"] == 1
    assert fermion.dataset(str(tmp_path / "csv")).to_table().to_pydict() == {
        "batch_id": [1, 1, 2], "name": ["a", "b", "c"],
    }  # fmt: skip


def test_failed_tasks_commit_nothing_and_leave_no_files(spark: Any, tmp_path: Path) -> None:
    uri, source = tmp_path / "t", tmp_path / "in"
    source.mkdir()
    table = pa.table({"batch_id": [1, 1, None, 2] * 50, "x": list(range(200))})
    pq.write_table(table, source / "nulls.parquet")
    config = write_config(
        tmp_path / "ingest.yaml", table=str(uri), source=str(source), batch_id_column="batch_id"
    )
    code, summary = _ingest(spark, config, "partitions=2")
    assert code == 1 and summary["status"] == "error"
    assert summary["committed_version"] is None and summary["error"]
    assert "\n" not in summary["error"]
    assert not (uri / "_versions").exists() or not os.listdir(uri / "_versions")
    assert _data_files(uri) == []


def test_bad_inputs_exit_non_zero_without_a_table(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    missing = write_config(tmp_path / "a.yaml", table=str(uri), source=str(tmp_path / "none"))
    code, summary = _ingest(spark, missing)
    assert code == 1 and "PATH_NOT_FOUND" in summary["error"]
    source = tmp_path / "in"
    _source(source, 10, files=1)
    text_id = write_config(
        tmp_path / "b.yaml", table=str(uri), source=str(source), batch_id_column="s"
    )
    code, summary = _ingest(spark, text_id)
    assert code == 1 and summary["error"].startswith("InvalidArgumentError: batch_id_column")
    code, summary = _ingest(spark, text_id, "source_format=table")
    assert code == 2 and "key 'input_key': required" in summary["error"]
    assert not uri.exists() or not list((uri / "_versions").glob("*"))


def test_schema_mismatch_on_append_commits_nothing(spark: Any, tmp_path: Path) -> None:
    uri, source = tmp_path / "t", tmp_path / "in"
    fermion.write_dataset(pa.table({"batch_id": [1], "x": ["not an int"]}), str(uri))
    _source(source, 10, files=1)
    config = write_config(tmp_path / "i.yaml", table=str(uri), source=str(source))
    code, summary = _ingest(spark, config)
    assert code == 1 and summary["error"].startswith("SchemaMismatchError")
    assert fermion.dataset(str(uri)).version == 1 and len(_data_files(uri)) == 1


def test_ingest_through_spark_submit(tmp_path: Path) -> None:
    uri, source = tmp_path / "t", tmp_path / "in"
    _source(source, 1_000)
    submitted = submit_job(
        "ingest", "--config", str(CONF / "ingest.yaml"), "--env", "local",
        "--set", f"table={uri}", "--set", f"source={source}",
    )  # fmt: skip
    assert submitted.code == 0, submitted.stderr[-3000:]
    assert submitted.summary["committed_version"] == 1 and submitted.summary["rows_out"] == 1_000
    assert fermion.dataset(str(uri)).count_rows() == 1_000
    # spark-submit's PythonRunner merges the driver's stderr into its stdout: the progress
    # lines arrive there, and the summary stays the last line
    assert "INFO fermion.jobs.ingest: committed version 1" in submitted.stdout
    assert submitted.stdout.strip().splitlines()[-1].startswith('{"job": "ingest"')


@pytest.mark.parametrize("partitions", [1])
def test_empty_source_commits_nothing(spark: Any, tmp_path: Path, partitions: int) -> None:
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(pa.table({"batch_id": pa.array([], pa.int64())}), source / "empty.parquet")
    config = write_config(tmp_path / "i.yaml", table=str(tmp_path / "t"), source=str(source))
    code, summary = _ingest(spark, config, f"partitions={partitions}")
    assert code == 0 and summary["skipped"] is True and summary["committed_version"] is None
    assert summary["reason"] == "the source has no rows"


@pytest.mark.parametrize(("table_exists", "reader"), [(True, "auto"), (False, "spark")])
def test_a_concurrent_run_of_the_same_input_commits_once(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_exists: bool, reader: str
) -> None:
    """The other run commits between this run's writes and its commit: this one's commit
    is incompatible (same fermion.input key), its files are removed, and it says so."""
    from fermion.spark.jobs import ingest as module

    uri, source = tmp_path / "t", tmp_path / "in"
    _source(source, 600)
    first = 0
    if table_exists:
        seed = pa.table({"batch_id": [-1], "x": [-1], "s": ["seed"], "f": [[0.5]]})
        first = fermion.write_dataset(seed, str(uri)).version
    config = write_config(
        tmp_path / "ingest.yaml", table=str(uri), source=str(source), batch_id_column="batch_id",
        file_reader=reader,
    )  # fmt: skip
    step = "execute_file_tasks" if reader == "auto" else "execute_write_tasks"
    real = getattr(module, step)
    others: list[dict[str, Any]] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        results = real(*args, **kwargs)
        if not others:
            others.append({})
            others[0] = _ingest(spark, config)[1]  # the concurrent run commits first
        return results

    monkeypatch.setattr(module, step, racing)
    code, summary = _ingest(spark, config)
    assert others[0]["reader"] == ("pyarrow" if reader == "auto" else "spark")
    assert others[0]["committed_version"] == first + 1 and others[0]["rows_out"] == 600
    assert code == 0 and summary["skipped"] is True and summary["committed_version"] is None
    assert summary["reason"] == f"input ingested concurrently (version {first + 1})"
    ds = fermion.dataset(str(uri))
    assert ds.version == first + 1 and ds.count_rows() == 600 + first
    assert len(_data_files(uri)) == len(ds.fragments)  # the losing run's files are gone


def test_a_driver_killed_mid_run_leaves_the_table_committed_and_a_rerun_completes(
    tmp_path: Path,
) -> None:
    import signal
    import subprocess
    import sys

    from tests.jobs.helpers import JOBS, ROOT, job_env, run_job

    uri, source = tmp_path / "t", tmp_path / "in"
    _source(source, 2_000)
    fermion.write_dataset(
        pa.table({"batch_id": [-1], "x": [-1], "s": ["seed"], "f": [[0.5]]}), str(uri)
    )
    config = write_config(
        tmp_path / "ingest.yaml", table=str(uri), source=str(source), batch_id_column="batch_id"
    )
    process = subprocess.Popen(
        [sys.executable, str(JOBS / "ingest.py"), "--config", config],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=job_env(), cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        for line in process.stderr:  # planned: the tasks are about to write
            if "INFO fermion.jobs.ingest: ingest " in line:
                break
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()
    ds = fermion.dataset(str(uri))
    assert ds.version == 1 and ds.count_rows() == 1  # still the committed version
    rerun = run_job("ingest", "--config", config)
    assert rerun.code == 0 and rerun.summary["committed_version"] == 2, rerun.stderr[-2000:]
    assert sorted(fermion.dataset(str(uri)).to_table()["x"].to_pylist()) == list(range(-1, 2_000))


def test_batches_crossing_spark_arrow_batches_stay_whole(spark: Any, tmp_path: Path) -> None:
    """Spark hands a task its rows in Arrow batches of maxRecordsPerBatch rows; a batch id
    whose rows straddle two of them is still one append_batch."""
    uri, source = tmp_path / "t", tmp_path / "in"
    _source(source, 1_000, files=1)
    config = write_config(
        tmp_path / "ingest.yaml", table=str(uri), source=str(source), batch_id_column="batch_id",
        partitions=2,
    )  # fmt: skip
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    spark.conf.set(key, "64")  # 64 is not a multiple of the 7-row batches
    try:
        code, summary = _ingest(spark, config)
    finally:
        spark.conf.unset(key)
    assert code == 0 and summary["rows_out"] == 1_000, summary
    ds = fermion.dataset(str(uri))
    for fragment in ds.fragments:
        path = str(uri / fragment.files[0].path)
        with fermion.FileReader(path) as reader:
            ids = sorted(set(reader.read(columns=["batch_id"])["batch_id"].to_pylist()))
            sizes = [reader.read_batches([i], columns=["x"]).num_rows for i in ids]
        assert sizes == [min(7, 1_000 - 7 * i) for i in ids]


def test_batch_mode_ingest_writes_disjoint_increasing_id_ranges(spark: Any, tmp_path: Path) -> None:
    """Hashed (random) request ids spread over every source file: each task writes one
    increasing run of ids, so the fragments of the write hold disjoint id ranges."""
    uri, source = tmp_path / "t", tmp_path / "in"
    source.mkdir()
    ids = [(i * 2_654_435_761) % 1_000_003 for i in range(600)]  # hashed ids, out of order
    rows = [(b, k) for b in ids for k in range(1 + b % 3)]
    table = pa.table({"batch_id": [b for b, _ in rows], "x": list(range(len(rows)))})
    for k in range(3):
        pq.write_table(table.slice(k * 450, 450), source / f"part-{k}.parquet")
    config = write_config(
        tmp_path / "ingest.yaml", table=str(uri), source=str(source), batch_id_column="batch_id",
        max_rows_per_file=300, partitions=3,
    )  # fmt: skip
    code, summary = _ingest(spark, config)
    assert code == 0, summary
    ds = fermion.dataset(str(uri))
    assert len(ds.fragments) >= 4
    spans = []
    for fragment in ds.fragments:
        with fermion.FileReader(str(uri / fragment.files[0].path)) as reader:
            got = reader.read(columns=["batch_id", "_batch_id"])
        values = got["batch_id"].to_pylist()
        assert values == sorted(values) == got["_batch_id"].to_pylist()
        spans.append((values[0], values[-1]))
    spans.sort()
    assert all(hi < lo for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False)), spans
    assert sorted(ds.to_table()["x"].to_pylist()) == list(range(len(rows)))
