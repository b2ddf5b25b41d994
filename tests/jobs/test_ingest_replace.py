"""The ingest job's replace mode (a corrected day) on local Spark: one version equal to
``write_dataset(..., replace_where=...)``; an input row outside the day is an
InvalidArgumentError with nothing committed."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import fermion.table as ft
from fermion.spark.jobs.config import IngestConfig
from fermion.spark.jobs.ingest import ingest
from fermion.spark.jobs.runner import EXIT_CONFIG, EXIT_FAILURE, run
from tests.jobs.helpers import write_config


def _day(ds: str, first: int, rows: int, scale: float = 1.0) -> pa.Table:
    ids = list(range(first, first + rows))
    return pa.table(
        {"ds": [ds] * rows, "batch_id": [i // 5 for i in ids], "x": [i * scale for i in ids]}
    )


def _write(directory: Path, table: pa.Table) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, directory / "part-0.parquet")
    return str(directory)


def _ingest(spark: Any, config: str, *sets: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    argv = ["--config", config, *[a for s in sets for a in ("--set", s)]]
    code = run("ingest", IngestConfig, ingest, argv, spark=spark, stdout=out)
    return code, json.loads(out.getvalue().splitlines()[-1])


def _files(uri: Path) -> set[str]:
    return {str(p.relative_to(uri)) for p in uri.rglob("*") if p.is_file()}


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["ds"], r["batch_id"], r["x"]))


def test_replace_mode_replaces_one_day(spark: Any, tmp_path: Path) -> None:
    uri, local = tmp_path / "t", tmp_path / "local"
    days = [_day("2026-11-19", 0, 40), _day("2026-11-20", 40, 40)]
    for n, day in enumerate(days):
        config = write_config(
            tmp_path / "ingest.yaml", table=str(uri), batch_id_column="batch_id",
            source=_write(tmp_path / f"in{n}", day), max_rows_per_file=15,
        )  # fmt: skip
        assert _ingest(spark, config)[0] == 0
    ft.write_dataset(pa.concat_tables(days), local, max_rows_per_file=15)
    corrected = _day("2026-11-20", 40, 30, scale=-1.0)
    config = write_config(
        tmp_path / "replace.yaml", table=str(uri), batch_id_column="batch_id",
        source=_write(tmp_path / "fixed", corrected), replace_where="ds = '2026-11-20'",
    )  # fmt: skip
    code, summary = _ingest(spark, config)
    assert code == 0, summary
    assert (summary["read_version"], summary["committed_version"]) == (2, 3)
    assert summary["rows_out"] == 30 and summary["replace_where"] == "ds = '2026-11-20'"
    ft.write_dataset(corrected, local, mode="overwrite", replace_where="ds = '2026-11-20'")
    ours = ft.dataset(uri)
    assert ours.manifest.summary.operation == "update"
    assert _rows(ours.to_table()) == _rows(ft.dataset(local).to_table())
    assert ft.dataset(uri, version=2).count_rows() == 80

    # again: the same rows replaced by the same data (a replace is not recorded)
    code, again = _ingest(spark, config)
    assert code == 0 and again["committed_version"] == 4
    assert _rows(ft.dataset(uri).to_table()) == _rows(ft.dataset(local).to_table())


def test_a_row_outside_the_day_commits_nothing(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    ft.write_dataset(_day("2026-11-19", 0, 40), uri)
    before = _files(uri)
    bad = pa.concat_tables([_day("2026-11-20", 40, 30), _day("2026-11-21", 70, 1)])
    config = write_config(
        tmp_path / "replace.yaml", table=str(uri), source=_write(tmp_path / "bad", bad),
        replace_where="ds = '2026-11-20'",
    )  # fmt: skip
    code, summary = _ingest(spark, config)
    assert code == EXIT_FAILURE, summary
    assert summary["error"].startswith(
        "InvalidArgumentError: replace_where \"ds = '2026-11-20'\": 1 new rows do not match"
    ), summary
    assert ft.dataset(uri).version == 1 and _files(uri) == before

    code, summary = _ingest(spark, config, "replace_where=no_such = 1")
    assert code == EXIT_FAILURE and summary["error"].startswith("ColumnNotFoundError"), summary
    code, summary = _ingest(spark, config, "replace_where= ")
    assert code == EXIT_CONFIG and "key 'replace_where'" in summary["error"], summary
    assert ft.dataset(uri).version == 1 and _files(uri) == before
