"""fermion_backfill and fermion_ingest's replace mode run for real with ``dag.test()`` (the
Airflow environment, local Spark): a day ingested, a feature column backfilled (equal to
``Dataset.add_columns``), the day replaced by a corrected one; a bad expression and a
corrected day with a row of another day fail without retrying and commit nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion.table as ft
from scripts import sample
from scripts.airflow_env import AirflowHome

DAY = "2026-11-20"


def _write_day(root: Path, table: pa.Table) -> None:
    folder = root / f"ds={DAY}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "part-0.parquet")


def _files(table: Path) -> list[str]:
    return sorted(str(p.relative_to(table)) for p in table.rglob("*") if p.is_file())


def _with_day(table: pa.Table, days: list[str]) -> pa.Table:
    return table.append_column("ds", pa.array(days, pa.string()))


@pytest.mark.slow
def test_backfill_dag_and_replace_mode(airflow: AirflowHome, tmp_path: Path) -> None:
    table, reports = tmp_path / "table", tmp_path / "quality"
    day = sample.feature_table(day=1, requests=8, features=3)
    day = _with_day(day, [DAY] * day.num_rows)
    _write_day(tmp_path / "input", day)
    conf: dict[str, Any] = {
        "table": str(table), "input_root": str(tmp_path / "input"),
        "reports_dir": str(reports), "max_rows_per_file": 100,
    }  # fmt: skip
    run = airflow.dag_test("fermion_ingest", DAY, conf)
    assert run["state"] == "success", run
    assert ft.dataset(table).version == 1

    columns = {"f000_x2": "f000 * 2", "pos_label": "position + label"}
    expected = ft.write_dataset(ft.dataset(table).to_table(), tmp_path / "local")
    expected.add_columns(dict(columns))
    backfill_conf = {"table": str(table), "reports_dir": str(reports), "columns": columns}
    run = airflow.dag_test("fermion_backfill", DAY, backfill_conf)
    assert run["state"] == "success", run
    summary = run["tasks"]["backfill_columns"]["summary"]
    assert summary["committed_version"] == 2 and summary["files_out"] == summary["files_in"]
    assert run["tasks"]["validate"]["summary"]["passed"] is True
    ours = ft.dataset(table)
    assert ours.schema == expected.schema
    key = ["request_id", "position"]
    assert (
        ours.to_table()
        .sort_by([(k, "ascending") for k in key])
        .equals(expected.to_table().sort_by([(k, "ascending") for k in key]))
    )

    before = _files(table)
    bad = {**backfill_conf, "columns": {"broken": "no_such_column * 2"}}
    run = airflow.dag_test("fermion_backfill", DAY, bad)
    assert run["state"] == "failed"
    assert run["tasks"]["backfill_columns"]["tries"] == 1  # ColumnNotFoundError: no retry
    assert ft.dataset(table).version == 2 and _files(table) == before

    # a corrected day: fewer requests, the table's columns (the backfilled ones too)
    fixed = sample.feature_table(day=1, requests=5, features=3)
    fixed = _with_day(fixed, [DAY] * fixed.num_rows)
    fixed = fixed.append_column("f000_x2", pa.compute.multiply(fixed["f000"], 2))
    fixed = fixed.append_column(
        "pos_label", pa.compute.add(fixed["position"].cast(pa.float32()), fixed["label"])
    )
    shutil.rmtree(tmp_path / "input")
    _write_day(tmp_path / "fixed", fixed.select(ours.schema.names).cast(ours.schema))
    replace = {**conf, "input_root": str(tmp_path / "fixed"), "mode": "replace"}
    run = airflow.dag_test("fermion_ingest", DAY, replace)
    assert run["state"] == "success", run
    ingest = run["tasks"]["ingest"]["summary"]
    assert ingest["committed_version"] == 3 and ingest["replace_where"] == f"ds = '{DAY}'"
    replaced = ft.dataset(table)
    assert replaced.manifest.summary.operation == "update"
    assert replaced.count_rows() == fixed.num_rows
    assert ft.dataset(table, version=2).count_rows() == day.num_rows

    before = _files(table)
    stray = fixed.set_column(
        fixed.schema.get_field_index("ds"), "ds",
        pa.array([DAY] * (fixed.num_rows - 1) + ["2026-11-21"], pa.string()),
    )  # fmt: skip
    shutil.rmtree(tmp_path / "fixed")
    _write_day(tmp_path / "fixed", stray.select(ours.schema.names).cast(ours.schema))
    run = airflow.dag_test("fermion_ingest", DAY, replace)
    assert run["state"] == "failed"
    assert run["tasks"]["ingest"]["tries"] == 1  # InvalidArgumentError: no retry
    assert ft.dataset(table).version == 3 and _files(table) == before
