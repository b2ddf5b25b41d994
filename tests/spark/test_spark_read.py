"""Reading Fermion tables through the ``fermion`` data source: options, schemas, errors."""

from __future__ import annotations

import functools
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

import fermion.table as ft
from fermion.errors import InvalidArgumentError
from fermion.format import FileWriter
from fermion.spark import FermionReader, FragmentSlice, ReadOptions, read_dataset
from fermion.spark.read import _stripe_groups
from fermion.spark.table import _mentioned
from fermion.table.scan import ScanStats


def _table(n: int = 20) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": [None if i % 4 == 0 else f"n{i}" for i in range(n)],
            "score": pa.array([i / 2 for i in range(n)], pa.float64()),
        }
    )


@pytest.fixture
def versioned(tmp_path: Path) -> str:
    """Version 1: ids 0..9; version 2: ids 0..19 (tagged ``full``); version 3: ids 20..21."""
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_table(10), uri, max_rows_per_file=4)
    ds = ft.write_dataset(_table(20).slice(10), uri, mode="append", max_rows_per_file=4)
    ds.create_tag("full")
    ft.write_dataset(
        pa.table({"id": [20, 21], "name": ["x", None], "score": [1.0, 2.0]}), uri, mode="append"
    )
    return uri


def _ids(frame: object) -> list[int]:
    return sorted(r.id for r in frame.collect())  # type: ignore[attr-defined]


def test_load_reads_the_latest_version_with_the_table_schema(
    spark: SparkSession, versioned: str
) -> None:
    frame = spark.read.format("fermion").load(versioned)
    assert frame.schema.simpleString() == "struct<id:bigint,name:string,score:double>"
    assert _ids(frame) == list(range(22))
    # small fragments are packed for the session's 2 cores (fermion.spark.packing)
    assert frame.rdd.getNumPartitions() == 2
    single = spark.read.format("fermion").option("max_partition_bytes", 1).load(versioned)
    assert single.rdd.getNumPartitions() == 7  # one per fragment: 3 + 3 + 1
    assert _ids(single) == list(range(22))


def test_version_and_tag_options(spark: SparkSession, versioned: str) -> None:
    reader = spark.read.format("fermion")
    assert _ids(reader.option("version", 1).load(versioned)) == list(range(10))
    assert _ids(reader.option("version", "2").load(versioned)) == list(range(20))
    assert _ids(spark.read.format("fermion").option("tag", "full").load(versioned)) == list(
        range(20)
    )


def test_columns_option_reads_those_columns_in_that_order(
    spark: SparkSession, versioned: str
) -> None:
    frame = spark.read.format("fermion").option("columns", "score, id").load(versioned)
    assert frame.columns == ["score", "id"]
    rows = sorted(frame.collect())
    assert rows[0].asDict() == {"score": 0.0, "id": 0}


def test_user_schema_reads_only_its_columns_and_casts(spark: SparkSession, versioned: str) -> None:
    frame = spark.read.format("fermion").schema("id int, name string").load(versioned)
    assert frame.schema.simpleString() == "struct<id:int,name:string>"
    rows = {r.id: r.name for r in frame.collect()}
    assert rows[5] == "n5" and rows[4] is None and len(rows) == 22
    reader = FermionReader(ReadOptions(versioned), frame.schema)
    assert reader.columns == ["id", "name"]
    assert sorted(r.id for r in frame.filter("id > 19").collect()) == [20, 21]  # Spark's filter


def test_read_table_projects_and_pushes_the_filter(spark: SparkSession, versioned: str) -> None:
    frame = read_dataset(spark, versioned, ["name"], "id >= 18 AND name IS NOT NULL", version=2)
    assert frame.columns == ["name"]
    assert sorted(r.name for r in frame.collect()) == ["n18", "n19"]
    frame = read_dataset(spark, versioned, filter=pc_free_filter(spark))
    assert _ids(frame) == [20, 21]
    assert read_dataset(spark, versioned, tag="full").count() == 20


def pc_free_filter(spark: SparkSession) -> object:
    """A Column filter (not a SQL string)."""
    from pyspark.sql import functions as F

    return F.col("id") >= 20


def test_filter_columns_are_found_in_sql_and_columns() -> None:
    names = ["id", "name", "Score", "weird col"]
    assert _mentioned("id > 3 AND `weird col` = 'id'", names) == ["id", "weird col"]
    assert _mentioned("Column<'(score > 1)'>", names) == ["Score"]


def test_empty_result_and_empty_table(spark: SparkSession, versioned: str) -> None:
    assert spark.read.format("fermion").load(versioned).filter("id > 1000").count() == 0
    frame = spark.read.format("fermion").option("filter", "id > 1000").load(versioned)
    assert frame.rdd.getNumPartitions() == 1  # Spark's stand-in for an empty partition list
    assert frame.count() == 0 and frame.filter("id > 3").count() == 0


@pytest.fixture
def striped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """One fragment of 1,000 rows in 10 stripes, 100 of its rows deleted."""
    import fermion.table.fragments as fragments

    def small_stripes(
        target: object, schema: pa.Schema, field_ids: list[int], _props: object = None
    ) -> FileWriter:
        return FileWriter(target, schema, field_ids=list(field_ids), max_stripe_rows=100)

    monkeypatch.setattr(fragments, "open_data_writer", small_stripes)
    uri = str(tmp_path / "striped")
    ds = ft.write_dataset(_table(1000), uri)
    ds.delete((pc.field("id") >= 450) & (pc.field("id") < 550))
    return uri


def test_large_fragments_split_by_stripes_keep_deletions(spark: SparkSession, striped: str) -> None:
    frame = spark.read.format("fermion").option("rows_per_partition", 300)
    frame = frame.option("max_partition_bytes", 1).load(striped)
    assert frame.rdd.getNumPartitions() == 4  # stripes 0-2, 3-5, 6-8, 9
    assert _ids(frame) == [i for i in range(1000) if not 450 <= i < 550]
    whole = spark.read.format("fermion").load(striped)
    assert whole.rdd.getNumPartitions() == 1
    assert sorted(whole.collect()) == sorted(frame.collect())
    pushed = spark.read.format("fermion").option("rows_per_partition", 300)
    pushed = pushed.option("filter", "id >= 540 AND id < 560").load(striped)
    assert _ids(pushed) == list(range(550, 560))


def test_stripe_groups() -> None:
    assert _stripe_groups([100] * 10, 300) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert _stripe_groups([500, 10], 300) == [(0, 1), (1, 2)]
    assert _stripe_groups([5], 300) == [(0, 1)]


def test_reader_partitions_are_plain_values(versioned: str) -> None:
    import pickle

    from fermion.spark.types import spark_schema

    schema = spark_schema(ft.dataset(versioned).schema)
    reader = FermionReader(ReadOptions(versioned, version=1), schema)
    parts = reader.partitions()
    assert isinstance(parts, list) and all(isinstance(p, FragmentSlice) for p in parts)
    again = pickle.loads(pickle.dumps((reader, parts)))
    stats = ScanStats()
    rows = sum(b.num_rows for p in again[1] for b in again[0].read_slice(p, stats))
    assert rows == 10 and stats.files_opened == len(parts) == 3


def test_tasks_get_only_the_columns_they_read(spark: SparkSession, versioned: str) -> None:
    from fermion.spark.types import spark_schema
    from fermion.table.codec import fragment_to_proto

    schema = spark_schema(pa.schema([ft.dataset(versioned).schema.field("name")]))
    options = ReadOptions.parse({"path": versioned, "columns": "name", "filter": "id >= 18"})
    reader = FermionReader(options, schema)
    # the schema pickled into every task: the columns read and those the filter names
    assert reader.table_schema.arrow.names == ["name", "id"]
    parts = reader.partitions()
    assert parts and all(not fragment_to_proto(p.fragment).stats for p in parts)
    assert all(fragment_to_proto(f).stats for f in ft.dataset(versioned).fragments)
    names = [n for p in parts for b in reader.read(p) for n in b.column("name").to_pylist()]
    assert sorted(names, key=str) == sorted(["n18", "n19", "x", None], key=str)  # ids 18-21
    frame = spark.read.format("fermion").option("columns", "name").option("filter", "id >= 18")
    assert sorted(frame.load(versioned).collect(), key=str) == sorted(
        spark.read.format("fermion").load(versioned).filter("id >= 18").select("name").collect(),
        key=str,
    )


def _error(action: functools.partial[object]) -> str:
    with pytest.raises(PySparkException) as caught:
        action()
    return str(caught.value)


def test_bad_inputs_give_clear_errors(spark: SparkSession, versioned: str, tmp_path: Path) -> None:
    load = spark.read.format("fermion")
    missing = str(tmp_path / "nothing")
    assert "DatasetError" in _error(functools.partial(load.load, missing))
    assert "not a Fermion table" in _error(functools.partial(load.load, missing))
    message = _error(functools.partial(load.option("columns", "id,nope").load, versioned))
    assert "ColumnNotFoundError" in message and "['nope']" in message
    message = _error(
        functools.partial(spark.read.format("fermion").option("version", 9).load, versioned)
    )
    assert "DatasetError" in message and "9" in message
    message = _error(
        functools.partial(spark.read.format("fermion").option("version", "x").load, versioned)
    )
    assert "version='x' is not an integer" in message
    message = _error(
        functools.partial(spark.read.format("fermion").option("verison", "1").load, versioned)
    )
    assert "unknown read option(s) ['verison']" in message
    message = _error(
        functools.partial(
            spark.read.format("fermion").schema("id long, zzz string").load(versioned).collect
        )
    )
    assert "ColumnNotFoundError" in message and "zzz" in message
    with pytest.raises(InvalidArgumentError, match="version or tag, not both"):
        ReadOptions.parse({"path": versioned, "version": "1", "tag": "full"})
