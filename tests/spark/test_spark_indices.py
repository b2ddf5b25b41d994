"""A key lookup through Spark uses the table's scalar index: the driver plans only the
fragments holding the key (``read_dataset(filter=...)`` and the ``filter`` option)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import fermion.table as ft
from fermion.spark import FermionReader, ReadOptions, read_dataset
from fermion.spark.types import spark_schema
from fermion.table.scan import ScanStats

N, PER_FILE = 4000, 1000


@pytest.fixture(scope="module")
def indexed_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Random keys (statistics prune nothing), four fragments, a BTREE index on ``k``."""
    keys = np.random.default_rng(3).permutation(N).astype(np.int64) * 7
    uri = str(tmp_path_factory.mktemp("indexed") / "t")
    data = pa.table({"k": keys, "v": np.arange(N, dtype=np.int64)})
    ds = ft.write_dataset(data, uri, max_rows_per_file=PER_FILE)
    ds.create_index("k", "BTREE")
    return uri


def _key_of(uri: str, v: int) -> int:
    return int(ft.dataset(uri).to_table(filter=f"v = {v}")["k"][0].as_py())


def test_the_filter_option_reads_only_the_fragment_holding_the_key(indexed_uri: str) -> None:
    key = _key_of(indexed_uri, 2345)
    schema = spark_schema(ft.dataset(indexed_uri).schema)
    reader = FermionReader(ReadOptions(indexed_uri, filter=f"k = {key}"), schema)
    parts = reader.partitions()
    stats = ScanStats()
    rows = pa.Table.from_batches([b for p in parts for b in reader.read_slice(p, stats)])
    assert len(parts) == 1 and stats.files_opened == 1
    assert rows.to_pydict() == {"k": [key], "v": [2345]}
    plain = ft.dataset(indexed_uri).scanner(None, f"k = {key}", use_indices=False)
    assert len(plain.fragments()) == N // PER_FILE  # without the index: every fragment


def test_read_table_with_a_key_filter(spark: SparkSession, indexed_uri: str) -> None:
    keys = [_key_of(indexed_uri, v) for v in (10, 3990)]
    text = f"k IN ({keys[0]}, {keys[1]})"
    frame = spark.read.format("fermion").option("filter", text)
    frame = frame.option("max_partition_bytes", 1).load(indexed_uri)
    assert frame.rdd.getNumPartitions() == 2  # the first and the last fragment
    assert sorted(r.v for r in frame.collect()) == [10, 3990]
    frame = read_dataset(spark, indexed_uri, filter=f"k = {keys[1]}")
    assert [(r.k, r.v) for r in frame.collect()] == [(keys[1], 3990)]


def test_an_indexed_frame_reused_answers_as_spark_parquet(
    spark: SparkSession, indexed_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """One indexed load() scanned several times (count, filter, count; a self-join; a
    scalar subquery) gives the answers of Spark's Parquet source over the same rows."""
    keys = [_key_of(indexed_uri, v) for v in (10, 500, 1500, 3990)]
    text = f"k IN ({', '.join(map(str, keys))})"
    path = str(tmp_path_factory.mktemp("pq") / "t.parquet")
    spark.createDataFrame(ft.dataset(indexed_uri).to_table().to_pandas()).write.parquet(path)
    frames = {
        "fermion": read_dataset(spark, indexed_uri, filter=text),
        "parquet": spark.read.parquet(path).filter(text),
    }
    answers = {}
    for system, frame in frames.items():
        frame.createOrReplaceTempView(f"t_{system}")
        first = frame.count()
        narrowed = frame.filter("v > 1000").count()
        again = frame.count()
        joined = spark.sql(
            f"select count(*) from t_{system} a join t_{system} b on a.k = b.k and a.v <= b.v"
        ).collect()[0][0]
        sub = spark.sql(
            f"select count(*) from t_{system} where v > (select avg(v) from t_{system})"
        ).collect()[0][0]
        answers[system] = (first, narrowed, again, joined, sub)
    assert answers["fermion"] == answers["parquet"] == (4, 2, 4, 4, 1)  # avg(v) = 1500
