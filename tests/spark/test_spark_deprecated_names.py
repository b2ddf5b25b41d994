"""Old Spark names still work and warn: ``fermion.spark.read_table`` (now ``read_dataset``:
``fermion.read_table`` reads one file) and ``fermion.spark.read.open_table`` (now
``open_dataset``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import fermion.spark
import fermion.table as ft
from fermion.spark.options import ReadOptions
from fermion.spark.read import open_dataset, open_table


def test_read_table_warns_and_reads_as_read_dataset(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), uri)
    with pytest.warns(DeprecationWarning, match="fermion.spark.read_table is deprecated"):
        old = fermion.spark.read_table(spark, uri, ["v"], filter="id >= 2")
    new = fermion.spark.read_dataset(spark, uri, ["v"], filter="id >= 2")
    assert sorted(old.collect()) == sorted(new.collect())
    assert "read_table" not in fermion.spark.__all__ and "read_dataset" in fermion.spark.__all__


def test_open_table_warns_and_is_open_dataset(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1]}), uri)
    with pytest.warns(DeprecationWarning, match="open_dataset"):
        assert open_table(ReadOptions(uri)).version == open_dataset(ReadOptions(uri)).version
