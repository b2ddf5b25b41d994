"""compact, materialize_deletions, rebuild_index and delete end to end on local Spark.

In-process runs share the session-scoped ``spark`` fixture; one run of each job goes
through ``spark-submit`` or ``python jobs/<job>.py`` as users run them. Bad inputs tried: a
missing table, a predicate naming an unknown column, a predicate that does not parse, an
out-of-range threshold, a mistyped key — each exits non-zero with a one-line error and
commits nothing.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import fermion
from fermion.spark.jobs.config import (
    CompactConfig,
    DeleteConfig,
    MaterializeDeletionsConfig,
    RebuildIndexConfig,
)
from fermion.spark.jobs.maintenance import compact, delete, materialize_deletions, rebuild_index
from fermion.spark.jobs.runner import run
from fermion.table.tasks import STATS_INDEX_NAME
from tests.jobs.helpers import run_job, submit_job, write_config

JOBS: dict[str, Any] = {
    "compact": (CompactConfig, compact),
    "materialize_deletions": (MaterializeDeletionsConfig, materialize_deletions),
    "rebuild_index": (RebuildIndexConfig, rebuild_index),
    "delete": (DeleteConfig, delete),
}


def _run(spark: Any, job: str, config: str, *sets: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    cls, body = JOBS[job]
    args = ["--config", config]
    for item in sets:
        args += ["--set", item]
    code = run(job, cls, body, args, spark=spark, stdout=out)
    return code, json.loads(out.getvalue().strip().splitlines()[-1])


def _batched_table(uri: Path, commits: int = 6, rows: int = 12) -> None:
    """Small batch-mode fragments: batch ids b // 4 (4 rows a batch), increasing."""
    for c in range(commits):
        ids = list(range(c * rows, (c + 1) * rows))
        data = pa.table({"b": pa.array([i // 4 for i in ids], pa.int64()), "v": ids})
        fermion.write_dataset(data, str(uri), mode="append")


def _ids(uri: Path) -> list[int]:
    return sorted(fermion.dataset(str(uri)).to_table()["v"].to_pylist())


def test_compact_job_merges_small_fragments(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _batched_table(uri)
    fermion.dataset(str(uri)).delete("v IN (5, 6)")
    config = write_config(tmp_path / "c.yaml", table=str(uri), target_rows_per_fragment=40)
    code, summary = _run(spark, "compact", config)
    assert code == 0, summary
    assert summary["status"] == "ok" and summary["files_in"] == 6
    assert summary["files_out"] == 2 and summary["rows_out"] == 70
    assert summary["committed_version"] == summary["read_version"] + 1
    ds = fermion.dataset(str(uri))
    assert [f.physical_rows for f in ds.fragments] == [34, 36]
    assert _ids(uri) == [i for i in range(72) if i not in (5, 6)]
    again_code, again = _run(spark, "compact", config)
    assert again_code == 0 and again["committed_version"] is None and again["files_in"] == 0


def test_compact_job_through_spark_submit_on_a_batch_mode_table(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    for c in range(4):  # written in batch mode: the table records its batch-id column
        ids = list(range(c * 10, (c + 1) * 10))
        data = pa.table({"b": pa.array([i // 5 for i in ids], pa.int64()), "v": ids})
        plan = fermion.table.tasks.plan_write(str(uri), data.schema, batch_id_column="b")
        fermion.table.tasks.commit_write(plan, [fermion.table.tasks.execute_write(plan, data)])
    config = write_config(tmp_path / "c.yaml", table=str(uri), target_rows_per_fragment=100)
    done = submit_job("compact", "--config", config)
    assert done.code == 0, done.stderr[-3000:]
    assert done.summary["files_in"] == 4 and done.summary["files_out"] == 1
    ds = fermion.dataset(str(uri))
    path = ds.storage.path(ds.fragments[0].files[0].path)
    with fermion.FileReader(path) as reader:
        table = reader.read(columns=["b", "_batch_id"])
    assert table["b"].to_pylist() == table["_batch_id"].to_pylist() == [i // 5 for i in range(40)]


def test_materialize_deletions_job(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _batched_table(uri, commits=3)
    fermion.dataset(str(uri)).delete("v < 8 OR v = 20")  # fragment 0: 8 of 12, fragment 1: 1
    config = write_config(tmp_path / "m.yaml", table=str(uri), threshold=0.5)
    code, summary = _run(spark, "materialize_deletions", config)
    assert code == 0, summary
    assert (summary["files_in"], summary["files_out"], summary["rows_out"]) == (1, 1, 4)
    ds = fermion.dataset(str(uri))
    assert [f.HasField("deletion_file") for f in ds.manifest.fragments] == [False, True, False]
    assert _ids(uri) == [i for i in range(36) if i >= 8 and i != 20]


def test_rebuild_index_job_rebuilds_only_stale_fragments(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _batched_table(uri, commits=3)
    config = write_config(tmp_path / "r.yaml", table=str(uri), columns=["v"])
    code, summary = _run(spark, "rebuild_index", config)
    assert code == 0, summary
    assert summary["fragments_rebuilt"] == 3 and summary["committed_version"] == 4
    (index,) = fermion.dataset(str(uri)).manifest.indices
    assert index.name == STATS_INDEX_NAME and sorted(index.fragment_ids) == [0, 1, 2]
    _batched_table(uri, commits=1)  # one new fragment, not covered yet
    code, summary = _run(spark, "rebuild_index", config)
    assert code == 0 and summary["fragments_rebuilt"] == 1
    code, summary = _run(spark, "rebuild_index", config)
    assert code == 0 and summary["fragments_rebuilt"] == 0
    assert summary["committed_version"] is None


def test_rebuild_index_job_builds_and_refreshes_scalar_indices(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _batched_table(uri, commits=3)
    indices = [{"column": "v", "kind": "BTREE"}, {"column": "b", "kind": "BITMAP", "name": "by_b"}]
    config = write_config(tmp_path / "r.yaml", table=str(uri), columns=["v"], indices=indices)
    code, summary = _run(spark, "rebuild_index", config)
    assert code == 0, summary
    assert [(i["name"], i["fragments_indexed"]) for i in summary["indices"]] == [
        ("v_idx", 3), ("by_b", 3),
    ]  # fmt: skip
    ds = fermion.dataset(str(uri))
    assert {i.name: i.fragment_ids for i in ds.indices() if i.kind != "zonemap"} == {
        "v_idx": (0, 1, 2), "by_b": (0, 1, 2),
    }  # fmt: skip
    scanner = ds.scanner(["v"], "v IN (5, 30)")
    assert scanner.to_table()["v"].to_pylist() == [5, 30]
    assert scanner.stats.index_files_read == 1 and scanner.stats.files_opened == 2
    _batched_table(uri, commits=1)  # fragment 3, not covered yet
    fermion.dataset(str(uri)).compact_files(target_rows_per_fragment=24)  # rewrites 0-3
    code, summary = _run(spark, "rebuild_index", config)
    assert code == 0, summary
    ds = fermion.dataset(str(uri))
    present = tuple(sorted(f.id for f in ds.fragments))
    assert [i["fragments_indexed"] for i in summary["indices"]] == [len(present)] * 2
    assert {i.name: i.fragment_ids for i in ds.indices() if i.kind != "zonemap"} == {
        "v_idx": present, "by_b": present,
    }  # fmt: skip
    for text in ("v = 40", "b IN (2, 9)", "v > 44"):
        assert ds.to_table(filter=text).equals(ds.scanner(None, text, use_indices=False).to_table())
    code, summary = _run(spark, "rebuild_index", config)  # nothing left to index
    assert code == 0 and [i["fragments_indexed"] for i in summary["indices"]] == [0, 0]
    assert not [p for p in (uri / "_indices").rglob("run-*")]  # the runs are removed


def test_delete_job_with_a_sql_predicate(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _batched_table(uri, commits=3)
    config = write_config(tmp_path / "d.yaml", table=str(uri), predicate="v BETWEEN 10 AND 13")
    done = run_job("delete", "--config", config)
    assert done.code == 0, done.stderr[-3000:]
    assert done.summary["rows_deleted"] == 4 and done.summary["committed_version"] == 4
    assert _ids(uri) == [i for i in range(36) if not 10 <= i <= 13]
    again = run_job("delete", "--config", config)  # nothing left to delete
    assert again.code == 0 and again.summary["committed_version"] is None


@pytest.mark.parametrize(
    ("job", "keys", "code", "error"),
    [
        ("delete", {"predicate": "nope = 1"}, 1, "ColumnNotFoundError"),
        ("delete", {"predicate": "v = "}, 1, "InvalidArgumentError"),
        ("materialize_deletions", {"threshold": 1.5}, 2, "ConfigError"),
        ("compact", {"target_rows_per_fragmnt": 5}, 2, "ConfigError"),
        ("compact", {"table": "MISSING"}, 1, "DatasetError"),
    ],
)
def test_bad_inputs_exit_non_zero_and_commit_nothing(
    spark: Any, tmp_path: Path, job: str, keys: dict[str, Any], code: int, error: str
) -> None:
    uri = tmp_path / "t"
    _batched_table(uri, commits=2)
    table = str(tmp_path / "missing") if keys.get("table") == "MISSING" else str(uri)
    settings = {**keys, "table": table}
    if job == "delete":
        settings.setdefault("predicate", "v = 1")
    config = write_config(tmp_path / f"{job}.yaml", **settings)
    got, summary = _run(spark, job, config)
    assert got == code and summary["status"] == "error"
    assert summary["error"].startswith(error) and "\n" not in summary["error"]
    assert fermion.dataset(str(uri)).version == 2


def _interleaved_table(uri: Path, appends: int = 3, tasks: int = 6, ids: int = 400) -> int:
    """``appends`` batch-mode writes of ``tasks`` tasks each, every task holding ids from the
    whole range of its write (as a hash-partitioned ingest wrote them); returns the rows."""
    total = 0
    for a in range(appends):
        batch = [a * ids + i for i in range(ids) for _ in range(1 + i % 3)]
        data = pa.table(
            {"b": pa.array(batch, pa.int64()), "v": [total + i for i in range(len(batch))]}
        )
        total += len(batch)
        plan = fermion.table.tasks.plan_write(str(uri), data.schema, batch_id_column="b")
        parts = [
            data.filter(pa.array([(b * 7_919) % tasks == k for b in batch])) for k in range(tasks)
        ]
        fermion.table.tasks.commit_write(
            plan,
            [fermion.table.tasks.execute_write(plan, p, task_id=k) for k, p in enumerate(parts)],
        )
    return total


@pytest.mark.parametrize(("target", "partitions"), [(1_000_000, 0), (300, 3)])
def test_compact_job_merges_interleaved_batch_mode_fragments_by_id_range(
    spark: Any, tmp_path: Path, target: int, partitions: int
) -> None:
    uri = tmp_path / "t"
    rows = _interleaved_table(uri)
    before = fermion.dataset(str(uri))
    assert len(before.fragments) == 18
    batches = {b: sorted(v) for b, v in _group(before.to_table()).items()}
    config = write_config(
        tmp_path / "c.yaml", table=str(uri), target_rows_per_fragment=target,
        partitions=partitions,
    )  # fmt: skip
    code, summary = _run(spark, "compact", config)
    assert code == 0, summary
    ds = fermion.dataset(str(uri))
    wanted = -(-rows // target)
    assert summary["files_in"] == 18 and summary["files_out"] == len(ds.fragments)
    assert wanted <= len(ds.fragments) <= wanted + max(0, partitions - 1)
    spans = []
    for fragment in ds.fragments:
        with fermion.FileReader(ds.storage.path(fragment.files[0].path)) as reader:
            got = reader.read(columns=["b", "_batch_id"])
        values = got["b"].to_pylist()
        assert values == sorted(values) == got["_batch_id"].to_pylist()
        spans.append((values[0], values[-1]))
    spans.sort()
    assert all(hi < lo for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False)), spans
    assert {b: sorted(v) for b, v in _group(ds.to_table()).items()} == batches


def _group(table: pa.Table) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for b, v in zip(table["b"].to_pylist(), table["v"].to_pylist(), strict=True):
        out.setdefault(b, []).append(v)
    return out
