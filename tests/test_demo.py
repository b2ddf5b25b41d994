"""The ``make run`` demo, at a tiny size."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion.format as fmt
from fermion.demo import NULL_COLUMN_FRACTION, main, make_feature_table, run_demo


def test_feature_table_shape() -> None:
    table = make_feature_table(40, 123)
    assert (table.num_rows, table.num_columns) == (123, 40 + 4)
    all_null = [name for name in table.column_names if table[name].null_count == 123]
    assert len(all_null) == int(40 * NULL_COLUMN_FRACTION)  # typed, but only nulls
    assert table.schema.field("embedding").type == pa.list_(pa.float32())
    assert {table.schema.field(n).type for n in table.column_names[:40]} == {
        pa.int64(),
        pa.float32(),
    }


def test_demo_runs_and_reports(tmp_path: Path) -> None:
    out = io.StringIO()
    report = run_demo(columns=40, rows=2_000, workdir=str(tmp_path), out=out)
    text = out.getvalue()

    table = make_feature_table(40, 2_000)
    key = report.projection[0]
    expected = table.select(list(report.projection)).filter(pc.field(key) < 50)
    assert report.rows_expected == expected.num_rows > 0
    assert report.rows_matched == expected.num_rows
    assert report.results_identical
    assert len(report.projection) == 10
    assert (tmp_path / "features.fermion").stat().st_size == report.fermion_bytes
    assert (tmp_path / "features.parquet").stat().st_size == report.parquet_bytes
    assert fmt.read_table(str(tmp_path / "features.fermion")).equals(table)
    assert f"{expected.num_rows:,} rows matched" in text
    assert "results identical: True" in text
    assert "no CMB: every value is null" in text  # the inspected all-null column
    if report.io_requests is not None:
        assert report.io_requests > 0 and report.io_bytes_read
        assert "IO requests" in text


def test_demo_main_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--columns", "12", "--rows", "100"]) == 0
    assert "results identical: True" in capsys.readouterr().out
