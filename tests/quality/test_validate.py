"""fermion.quality.validate_dataframe on a real local Spark session: each kind of check
passes on good data and fails on bad data; the JSON result and the data docs name what
failed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import fermion.table as ft
from fermion.quality import QualityCheckError, validate_dataframe

SUITE = """\
suite: orders
row_count: {min: 2, max: 100}
not_null: [order_id, amount]
unique: [order_id, [customer, line]]
ranges:
  amount: {min: 0, max: 1000}
batch_integrity:
  column: customer
"""
COLUMNS = ["order_id", "customer", "line", "amount"]
GOOD = [(1, "a", 0, 10.0), (2, "a", 1, 20.0), (3, "b", 0, 5.5)]


@pytest.fixture()
def suite_path(tmp_path: Path) -> Path:
    path = tmp_path / "orders.yaml"
    path.write_text(SUITE)
    return path


def _page_text(path: str | None) -> str:
    """The visible text of a data docs page, whitespace collapsed."""
    assert path is not None
    text = re.sub(r"<[^>]+>", " ", Path(path).read_text())
    return re.sub(r"\s+", " ", text)


def _df(spark: Any, rows: list[tuple[Any, ...]]) -> Any:
    return spark.createDataFrame(rows, "order_id long, customer string, line int, amount double")


def test_good_data_passes(spark: Any, suite_path: Path, tmp_path: Path) -> None:
    report = validate_dataframe(_df(spark, GOOD), suite_path, output_dir=tmp_path / "out")
    assert report.success, report.failed
    checks = sorted(r["check"] for r in report.results)
    assert checks == [
        "expect_column_values_to_be_between",
        "expect_column_values_to_be_unique",
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_not_be_null",
        "expect_compound_columns_to_be_unique",
        "expect_table_row_count_to_be_between",
    ]
    saved = json.loads(Path(report.json_path).read_text())
    assert saved["success"] is True and saved["suite"] == "orders"
    assert saved["great_expectations"]["success"] is True
    assert "Status: Succeeded" in _page_text(report.docs_path)
    assert (tmp_path / "out" / "data_docs" / "index.html").is_file()
    report.raise_for_failure()


@pytest.mark.parametrize(
    ("rows", "failing", "shown"),
    [
        (GOOD[:1], "expect_table_row_count_to_be_between", "to 100 rows"),
        ([*GOOD, (4, "c", 0, None)], "expect_column_values_to_not_be_null", "never be null"),
        ([*GOOD, (3, "c", 0, 1.0)], "expect_column_values_to_be_unique", "values must be unique"),
        ([*GOOD, (4, "a", 1, 1.0)], "expect_compound_columns_to_be_unique", "unique together"),
        ([*GOOD, (4, "c", 0, 1e6)], "expect_column_values_to_be_between", "or equal to 1000"),
    ],
    ids=["row_count", "not_null", "unique", "compound_unique", "range"],
)
def test_bad_data_fails_and_is_named(
    spark: Any, suite_path: Path, tmp_path: Path, rows: list[Any], failing: str, shown: str
) -> None:
    report = validate_dataframe(_df(spark, rows), suite_path, output_dir=tmp_path / "out")
    assert not report.success
    assert [r["check"] for r in report.failed] == [failing]
    saved = json.loads(Path(report.json_path).read_text())
    assert saved["success"] is False
    assert [r["check"] for r in saved["results"] if not r["success"]] == [failing]
    page = _page_text(report.docs_path)
    assert "Status: Failed" in page and "Unsuccessful Expectations 1 " in page
    assert shown in page
    with pytest.raises(QualityCheckError, match=failing):
        report.raise_for_failure()


def test_batch_integrity_of_the_table(spark: Any, suite_path: Path, tmp_path: Path) -> None:
    """The DataFrame passes; the table it came from splits customer 'a' across fragments."""
    uri = str(tmp_path / "orders")
    table = pa.table({name: [row[i] for row in GOOD] for i, name in enumerate(COLUMNS)})
    ft.write_dataset(table, uri, max_rows_per_file=1)
    df = _df(spark, GOOD)
    report = validate_dataframe(df, suite_path, table_uri=uri, output_dir=tmp_path / "out")
    assert [r["check"] for r in report.failed] == ["batch_integrity"]
    assert report.failed[0]["split_batches"] == ["a"]
    whole = str(tmp_path / "whole")
    ft.write_dataset(table, whole)
    assert validate_dataframe(df, suite_path, table_uri=whole, output_dir=tmp_path / "out").success
    # without a table (or with the column unset) the integrity check does not run
    assert validate_dataframe(df, suite_path, output_dir=tmp_path / "out").success
