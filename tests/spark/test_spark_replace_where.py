"""``df.write.format("fermion").mode("overwrite").option("replace_where", ...)`` on real
local Spark: one Update version equal to ``write_dataset(..., replace_where=...)``, and a
row outside the condition fails the write with nothing committed."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

import fermion.table as ft
from fermion.errors import DatasetError, InvalidArgumentError
from fermion.spark.options import WriteOptions
from fermion.spark.write import plan_spark_write
from tests.spark.conftest import data_files

DAYS = ["2026-11-19", "2026-11-20", "2026-11-21"]


def _base(uri: Path) -> ft.Dataset:
    rows = pa.table(
        {
            "ds": [d for d in DAYS for _ in range(4)],
            "id": pa.array(range(12), pa.int64()),
            "v": pa.array([float(i) for i in range(12)]),
        }
    )
    return ft.write_dataset(rows, uri, max_rows_per_file=5)


def _sorted(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.to_pylist(), key=lambda r: (r["ds"], r["id"], r["v"]))


def test_replace_where_equals_the_in_memory_replace(spark: SparkSession, tmp_path: Path) -> None:
    spark_uri, local_uri = tmp_path / "spark", tmp_path / "local"
    _base(spark_uri)
    _base(local_uri)
    fixed = pa.table(
        {"ds": ["2026-11-20"] * 3, "id": pa.array([100, 101, 102], pa.int64()),
         "v": [-1.0, -2.0, -3.0]}
    )  # fmt: skip
    df = spark.createDataFrame(fixed.to_pandas()).repartition(2)
    (
        df.write.format("fermion").mode("overwrite")
        .option("replace_where", "ds = '2026-11-20'").save(str(spark_uri))
    )  # fmt: skip
    ft.write_dataset(fixed, local_uri, mode="overwrite", replace_where="ds = '2026-11-20'")
    ours, expected = ft.dataset(spark_uri), ft.dataset(local_uri)
    assert ours.version == 2
    assert ours.manifest.summary.operation == "update"
    assert _sorted(ours.to_table()) == _sorted(expected.to_table())
    assert ft.dataset(spark_uri, version=1).count_rows() == 12  # the old version unchanged


def test_a_row_outside_the_condition_commits_nothing(spark: SparkSession, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _base(uri)
    before = data_files(uri)
    bad = pa.table(
        {"ds": ["2026-11-20", "2026-11-21"], "id": pa.array([7, 8], pa.int64()), "v": [0.0, 0.0]}
    )
    df = spark.createDataFrame(bad.to_pandas()).coalesce(1)
    with pytest.raises(PySparkException, match="InvalidArgumentError: replace_where"):
        (
            df.write.format("fermion").mode("overwrite")
            .option("replace_where", "ds = '2026-11-20'").save(str(uri))
        )  # fmt: skip
    ds = ft.dataset(uri)
    assert ds.version == 1
    assert ds.count_rows() == 12
    assert data_files(uri) == before  # the failed task's files were removed by the abort


def test_replace_where_refusals_on_the_driver(spark: SparkSession, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _base(uri)
    schema = spark.createDataFrame(_base(tmp_path / "other").to_table().to_pandas()).schema
    with pytest.raises(InvalidArgumentError, match="needs mode\\('overwrite'\\)"):
        plan_spark_write(WriteOptions.parse({"path": str(uri), "replace_where": "ds = 'x'"}),
                         schema, False)  # fmt: skip
    with pytest.raises(DatasetError):
        plan_spark_write(
            WriteOptions.parse({"path": str(tmp_path / "none"), "replace_where": "ds = 'x'"}),
            schema, True,
        )  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="replace_where is empty"):
        WriteOptions.parse({"path": str(uri), "replace_where": " "})
    with pytest.raises(PySparkException, match="ColumnNotFoundError"):
        (
            spark.createDataFrame(_base(tmp_path / "third").to_table().to_pandas())
            .write.format("fermion").mode("overwrite")
            .option("replace_where", "no_such = 1").save(str(uri))
        )  # fmt: skip
    assert ft.dataset(uri).version == 1
