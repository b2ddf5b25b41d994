"""``df.write.format("fermion")`` with ``fermion.write.*`` options: the table's write
properties, recorded when the write creates the table and used by every Spark task."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import fermion
from tests.spark.conftest import data_files


def _layout(path: str) -> tuple[set[str], set[str]]:
    """(compressions of the DATA pages, columns with bloom pages) of a data file."""
    with fermion.FileReader(path) as reader:
        columns = reader.describe()["columns"]
    compressions = {
        c
        for column in columns
        for s in column["streams"]
        if s["stream_type"] == "DATA"
        for chunk in s["chunks"]
        for c in chunk["compressions"]
    }
    blooms = {
        column["name"]
        for column in columns
        for s in column["streams"]
        if s["stream_type"] == "BLOOM" and s["chunks"]
    }
    return compressions, blooms


def test_spark_tasks_write_with_the_properties(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    frame = (
        spark.range(20_000)
        .select((F.col("id") * 7919 % 20_011).alias("k"), F.rand(seed=1).alias("v"))
        .repartition(3)
    )
    (
        frame.write.format("fermion").mode("append")
        .option("fermion.write.compression", "none")
        .option("fermion.write.bloom_filter_columns", '["k"]')
        .save(uri)
    )  # fmt: skip
    ds = fermion.dataset(uri)
    assert ds.write_properties.compression == "none"
    first = data_files(uri)
    assert len(first) >= 3  # one file per task at least
    spark.range(5_000).select(F.col("id").alias("k"), F.rand(seed=2).alias("v")).write.format(
        "fermion"
    ).mode("append").save(uri)  # names no property: the table's
    for path in data_files(uri):
        compressions, blooms = _layout(str(Path(uri) / path))
        assert not any(c.startswith("ZSTD") for c in compressions), (path, compressions)
        assert blooms == {"k"}, path
    assert fermion.dataset(uri).count_rows() == 25_000


def test_unknown_or_conflicting_properties_fail_before_writing(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "t")
    frame = spark.range(10)
    writer = frame.write.format("fermion").mode("append")
    with pytest.raises(Exception, match="unknown write property"):
        writer.option("fermion.write.colour", "red").save(uri)
    frame.write.format("fermion").mode("append").option("fermion.write.compression", "none").save(
        uri
    )
    with pytest.raises(Exception, match="differ from the table's"):
        frame.write.format("fermion").mode("append").option(
            "fermion.write.compression", "zstd"
        ).save(uri)
    assert fermion.dataset(uri).version == 1
