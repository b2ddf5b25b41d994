"""Quality checks inside the jobs, on local Spark: ingest checks its input before writing
(a failed check commits nothing and leaves no file), compaction checks that its new
fragments hold exactly the live rows they replace before it commits."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion
from fermion.quality import check_rows_conserved
from fermion.spark.jobs import maintenance
from fermion.spark.jobs.config import CompactConfig, IngestConfig
from fermion.spark.jobs.ingest import ingest
from fermion.spark.jobs.maintenance import compact
from fermion.spark.jobs.runner import run
from fermion.table.tasks import execute_rewrite, plan_compaction
from tests.jobs.helpers import write_config

SUITE = "suite: orders\nnot_null: [b]\nranges: {v: {min: 0, max: 100}}\n"


def _run(spark: Any, job: str, cls: Any, body: Any, config: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run(job, cls, body, ["--config", config], spark=spark, stdout=out)
    return code, json.loads(out.getvalue().strip().splitlines()[-1])


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("bad", [False, True], ids=["passes", "fails"])
def test_ingest_checks_its_input_before_writing(spark: Any, tmp_path: Path, bad: bool) -> None:
    uri = tmp_path / "table"
    fermion.write_dataset(pa.table({"b": [0], "v": [1]}), str(uri))
    before = _files(uri)
    source = tmp_path / "in.parquet"
    values = [5, 6, 500 if bad else 7]
    pq.write_table(pa.table({"b": [1, 1, 2], "v": values}), source)
    (tmp_path / "suite.yaml").write_text(SUITE)
    config = write_config(
        tmp_path / "ingest.yaml", table=str(uri), source=str(source), batch_id_column="b",
        suite=str(tmp_path / "suite.yaml"), quality_dir=str(tmp_path / "quality"),
    )  # fmt: skip
    code, summary = _run(spark, "ingest", IngestConfig, ingest, config)
    results = list((tmp_path / "quality" / "results").glob("*.json"))
    assert len(results) == 1
    if not bad:
        assert (code, summary["committed_version"]) == (0, 2)
        assert summary["quality"]["passed"] and summary["quality"]["checks"] == 2
        return
    assert code == 1 and summary["status"] == "error"
    assert summary["error"].startswith("QualityCheckError: suite 'orders' failed: ")
    assert "expect_column_values_to_be_between(v)" in summary["error"]
    assert str(results[0]) in summary["error"]
    assert fermion.dataset(str(uri)).version == 1
    assert _files(uri) == before  # nothing written, nothing committed
    saved = json.loads(results[0].read_text())
    assert [r["check"] for r in saved["results"] if not r["success"]] == [
        "expect_column_values_to_be_between"
    ]


def _small_fragments(uri: Path) -> None:
    for c in range(4):
        fermion.write_dataset(pa.table({"v": [c, c + 10]}), str(uri), mode="append")


def test_rows_conserved_flags_a_lost_fragment(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _small_fragments(uri)
    plan = plan_compaction(str(uri), target_rows_per_fragment=100)
    results = [execute_rewrite(t) for t in plan.tasks]
    assert check_rows_conserved(plan, results).success
    fragment = results[0].new_fragments[0]
    doubled = dataclasses.replace(results[0], new_fragments=(fragment, fragment))
    check = check_rows_conserved(plan, [doubled])
    assert not check.success
    assert check.mismatched == [
        {"task": doubled.task_id, "live_rows": 8, "written": 16, "deleted": 0}
    ]
    assert check.to_json()["check"] == "rows_conserved"


def test_compaction_that_loses_rows_commits_nothing(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rewrite's result claims all rows but one of its files is missing from it."""
    uri = tmp_path / "t"
    _small_fragments(uri)

    def lossy(spark: Any, tasks: Any, execute: Any, partitions: int = 0) -> list[Any]:
        results = [execute(t) for t in tasks]
        return [dataclasses.replace(r, new_fragments=r.new_fragments[:-1]) for r in results]

    monkeypatch.setattr(maintenance, "run_tasks", lossy)
    config = write_config(tmp_path / "compact.yaml", table=str(uri))
    code, summary = _run(spark, "compact", CompactConfig, compact, config)
    assert code == 1
    assert summary["error"].startswith(
        "QualityCheckError: compact: rewritten fragments do not hold the live rows"
    )
    ds = fermion.dataset(str(uri))
    assert ds.version == 4 and len(ds.fragments) == 4
    assert sorted(ds.to_table()["v"].to_pylist()) == [0, 1, 2, 3, 10, 11, 12, 13]
    committed = {d.path for f in ds.fragments for d in f.files}
    on_disk = {str(p.relative_to(uri)) for p in (uri / "data").rglob("*.fermion")}
    assert on_disk == committed  # the rewrite's files were removed


def test_compaction_reports_conserved_rows(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _small_fragments(uri)
    config = write_config(tmp_path / "compact.yaml", table=str(uri))
    code, summary = _run(spark, "compact", CompactConfig, compact, config)
    assert (code, summary["rows_in"], summary["rows_out"]) == (0, 8, 8)
    assert len(fermion.dataset(str(uri)).fragments) == 1
