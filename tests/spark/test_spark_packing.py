"""Small fragments packed into few Spark partitions (fermion/spark/packing.py).

A table of many small appends is read by about as many tasks as the session has cores,
not one task per fragment, and answers as Spark's Parquet source over the same rows: the
same DataFrame counted, filtered and counted again, one view on both sides of a join and
in a scalar subquery, with deletions and with the ``filter`` option. Bad inputs tried:
``max_partition_bytes`` and ``min_partitions`` of 0, negative, or not a number.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import fermion.table as ft
from fermion.errors import InvalidArgumentError
from fermion.spark import FermionReader, FragmentSlice, FragmentSlices, ReadOptions
from fermion.spark.packing import OPEN_COST_BYTES, pack, slice_bytes
from fermion.spark.types import spark_schema

APPENDS, ROWS = 40, 50


def _part(k: int) -> pa.Table:
    ids = list(range(k * ROWS, (k + 1) * ROWS))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "g": pa.array([i % 7 for i in ids], pa.int32()),
        "s": [None if i % 5 == 0 else f"s{i % 13}" for i in ids],
    })  # fmt: skip


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A table of 40 appends of 50 rows each (40 fragments), and the same rows as 40
    Parquet files."""
    root = tmp_path_factory.mktemp("packing")
    uri, parquet = str(root / "t"), root / "p"
    parquet.mkdir()
    for k in range(APPENDS):
        ft.write_dataset(_part(k), uri, mode="append" if k else "create")
        pq.write_table(_part(k), parquet / f"{k:03d}.parquet")
    return uri, str(parquet)


def test_pack_follows_sparks_rule() -> None:
    mib = 1 << 20
    assert pack([], 128 * mib, 2) == []
    assert pack([mib] * 4, 128 * mib, None) == [[0], [1], [2], [3]]
    # small table: about `parallelism` partitions
    assert len(pack([mib] * 40, 128 * mib, 2)) == 2
    assert len(pack([mib] * 40, 128 * mib, 8)) == 8
    # large table: partitions of at most max_partition_bytes (one slice over it stays alone)
    groups = pack([30 * mib] * 40, 128 * mib, 2)
    assert all(sum(30 * mib + OPEN_COST_BYTES for _ in g) <= 128 * mib + 34 * mib for g in groups)
    assert [i for g in groups for i in g] == list(range(40))  # order kept, nothing lost
    assert pack([500 * mib, mib], 128 * mib, 2) == [[0], [1]]
    assert pack([mib] * 3, 1, 2) == [[0], [1], [2]]
    assert slice_bytes(1000, 0, 10, 10, 10) == 0 and slice_bytes(1000, 3, 0, 5, 0) == 1000


def test_many_small_fragments_read_by_few_tasks_answer_as_parquet(
    spark: SparkSession, small: tuple[str, str]
) -> None:
    uri, parquet = small
    assert len(ft.dataset(uri).fragments) == APPENDS
    frame = spark.read.format("fermion").load(uri)
    peer = spark.read.parquet(parquet)
    assert frame.rdd.getNumPartitions() == 2  # local[2]
    assert sorted(frame.collect()) == sorted(peer.collect())
    # the same frame counted, filtered, counted again
    assert frame.count() == peer.count() == APPENDS * ROWS
    condition = "g = 3 AND s IS NOT NULL"
    assert frame.filter(condition).count() == peer.filter(condition).count()
    assert frame.count() == APPENDS * ROWS
    # the same view on both sides of a join, and in a scalar subquery
    frame.createOrReplaceTempView("packed_t")
    peer.createOrReplaceTempView("packed_p")
    for query in (
        "SELECT count(*) FROM {t} a JOIN {t} b ON a.id = b.id WHERE a.g = 1 AND b.s LIKE 's1%'",
        "SELECT count(*) FROM {t} WHERE g > (SELECT avg(g) FROM {t} WHERE id < 500)",
    ):
        got = spark.sql(query.format(t="packed_t")).collect()
        assert got == spark.sql(query.format(t="packed_p")).collect(), query
    wider = spark.read.format("fermion").option("min_partitions", 8).load(uri)
    assert wider.rdd.getNumPartitions() == 8 and wider.count() == APPENDS * ROWS
    single = spark.read.format("fermion").option("max_partition_bytes", 1).load(uri)
    assert single.rdd.getNumPartitions() == APPENDS


def test_packed_reads_apply_deletions_and_the_filter_option(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "t")
    for k in range(12):
        ft.write_dataset(_part(k), uri, mode="append" if k else "create")
    ft.dataset(uri).delete(pc.field("g") == 2)
    parquet = tmp_path / "p"
    parquet.mkdir()
    for k in range(12):
        part = _part(k)
        pq.write_table(part.filter(pc.not_equal(part["g"], 2)), parquet / f"{k:02d}.parquet")
    for text in (None, "id >= 120 AND id < 430", "s = 's3'"):
        reader = spark.read.format("fermion")
        if text is not None:
            reader = reader.option("filter", text)
        got = reader.load(uri)
        expected = spark.read.parquet(str(parquet))
        if text is not None:
            expected = expected.filter(text)
        assert got.rdd.getNumPartitions() <= 2
        assert sorted(got.collect()) == sorted(expected.collect()), text


def test_reader_partitions_hold_every_slice_once(small: tuple[str, str]) -> None:
    uri, _ = small
    schema = spark_schema(ft.dataset(uri).schema)
    packed = FermionReader(ReadOptions(uri), schema, parallelism=3).partitions()
    plain = FermionReader(ReadOptions(uri), schema).partitions()
    assert len(packed) == 3 and len(plain) == APPENDS
    assert all(isinstance(p, FragmentSlice) for p in plain)
    flat = [s for p in packed for s in (p.slices if isinstance(p, FragmentSlices) else (p,))]
    assert flat == plain


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_partition_bytes", "0"),
        ("max_partition_bytes", "-5"),
        ("max_partition_bytes", "x"),
        ("min_partitions", "0"),
        ("min_partitions", "two"),
    ],  # fmt: skip
)
def test_bad_packing_options_are_refused(key: str, value: str) -> None:
    with pytest.raises(InvalidArgumentError, match=key):
        ReadOptions.parse({"path": "/t", key: value})
