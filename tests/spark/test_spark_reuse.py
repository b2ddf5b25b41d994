"""One loaded table scanned several times gives the same answers as Spark's own Parquet.

Spark (pyspark 4.1–4.3) keeps the reader a Python data source planned last on the table
object shared by every scan of one ``load()``: a reused DataFrame, both sides of a
self-join, a scalar subquery over the same view. docs/SPARK.md ("Why nothing is pushed
implicitly") says why the ``fermion`` source therefore pushes no filter Spark hands it.
Every test here runs the same query over a ``fermion`` table and over Spark's Parquet
source reading the same rows, and compares the answers; each query reads one table at
least twice with different filters, which returned wrong rows while the reader pushed them.

Both settings of ``spark.sql.python.filterPushdown.enabled`` are tried: Spark plans a
Python source's read differently under each.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

import fermion.table as ft

N, PER_FILE = 100, 10
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def _rows() -> pa.Table:
    ids = list(range(N))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([i % 10 for i in ids], pa.int32()),
            "s": [None if i % 7 == 0 else f"{'ab'[i % 2]}{i:03d}" for i in ids],
            "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids]),
            "dec": pa.array([Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
            "f": pa.array([float("nan") if i % 11 == 0 else i / 3 for i in ids]),
        }
    )


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The same rows as a Fermion table (10 fragments, two versions) and as Parquet."""
    root = tmp_path_factory.mktemp("reuse")
    rows = _rows()
    fermion_uri = str(root / "fermion")
    ft.write_dataset(rows.slice(0, 60), fermion_uri, max_rows_per_file=PER_FILE)
    ft.write_dataset(rows.slice(60), fermion_uri, mode="append", max_rows_per_file=PER_FILE)
    (root / "parquet").mkdir()
    (root / "parquet_v1").mkdir()
    # one row group: pyarrow's Parquet statistics leave NaN out, and Spark's row-group
    # pruning then drops the NaN rows of `f > 20.0` that Spark's own semantics keep (NaN
    # is above every number); with one group the reference is Spark's semantics
    pq.write_table(rows, root / "parquet" / "part-0.parquet")
    pq.write_table(rows.slice(0, 60), root / "parquet_v1" / "part-0.parquet")
    return {
        "fermion": fermion_uri,
        "parquet": str(root / "parquet"),
        "parquet_v1": str(root / "parquet_v1"),
    }


@pytest.fixture(params=["true", "false"], ids=["pushdown-on", "pushdown-off"])
def spark_conf(spark: SparkSession, request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    """The shared session with Python filter pushdown on, then off."""
    before = spark.conf.get(PUSHDOWN)
    spark.conf.set(PUSHDOWN, request.param)
    yield spark
    spark.conf.set(PUSHDOWN, before)


Loader = Callable[..., DataFrame]


def _loaders(spark: SparkSession, tables: dict[str, str]) -> dict[str, Loader]:
    def fermion(version: int | None = None) -> DataFrame:
        reader = spark.read.format("fermion")
        if version is not None:
            reader = reader.option("version", version)
        return reader.load(tables["fermion"])

    def parquet(version: int | None = None) -> DataFrame:
        return spark.read.parquet(tables["parquet_v1" if version == 1 else "parquet"])

    return {"fermion": fermion, "parquet": parquet}


def _same_on_both(
    spark: SparkSession, tables: dict[str, str], query: Callable[[Loader], object]
) -> object:
    """``query`` run on the Fermion table, then on Parquet; the answers must be equal."""
    answers = {name: query(load) for name, load in _loaders(spark, tables).items()}
    assert answers["fermion"] == answers["parquet"], answers
    return answers["fermion"]


def test_one_dataframe_counted_filtered_counted_again(
    spark_conf: SparkSession, tables: dict[str, str]
) -> None:
    def query(load: Loader) -> list[int]:
        frame = load()
        return [frame.count(), frame.filter("k = 3").count(), frame.count()]

    assert _same_on_both(spark_conf, tables, query) == [N, 10, N]


def test_same_view_on_both_sides_of_a_join(
    spark_conf: SparkSession, tables: dict[str, str]
) -> None:
    def query(load: Loader) -> list[tuple[int, int]]:
        frame = load()
        left = frame.filter("k = 3").select("id", "k")
        right = frame.filter("id >= 50").select("id", "s")
        joined = left.join(right, "id")
        return sorted((r.id, r.k) for r in joined.collect())

    assert _same_on_both(spark_conf, tables, query) == [(i, 3) for i in range(53, N, 10)]


def test_self_join_in_sql_on_a_temporary_view(
    spark_conf: SparkSession, tables: dict[str, str]
) -> None:
    def query(load: Loader) -> list[tuple[int, int]]:
        load().createOrReplaceTempView("reuse_t")
        rows = spark_conf.sql(
            "SELECT a.id, b.id AS other FROM reuse_t a JOIN reuse_t b ON a.k = b.k "
            "WHERE a.id < 5 AND b.id > 90"
        ).collect()
        return sorted((r.id, r.other) for r in rows)

    expected = sorted((a, b) for a in range(5) for b in range(91, N) if a % 10 == b % 10)
    assert _same_on_both(spark_conf, tables, query) == expected


def test_scalar_subquery_over_the_same_view(
    spark_conf: SparkSession, tables: dict[str, str]
) -> None:
    def query(load: Loader) -> int:
        load().createOrReplaceTempView("reuse_t")
        sql = "SELECT count(*) AS n FROM reuse_t WHERE k > (SELECT avg(k) FROM reuse_t WHERE k > 5)"
        return int(spark_conf.sql(sql).collect()[0].n)

    assert _same_on_both(spark_conf, tables, query) == 20


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "uncached"])
def test_cached_and_uncached_frames(
    spark_conf: SparkSession, tables: dict[str, str], cached: bool
) -> None:
    def query(load: Loader) -> list[int]:
        frame = load()
        narrow = frame.filter("id < 30").count()
        if cached:
            frame = frame.cache()
        try:
            everything = frame.count()
            other = frame.filter("k IN (1, 2)").count()
            return [narrow, everything, other, frame.count(), frame.filter("id < 30").count()]
        finally:
            frame.unpersist()

    assert _same_on_both(spark_conf, tables, query) == [30, N, 20, N, 30]


PREDICATES = [
    "k IN (1, 2, 9)",
    "k NOT IN (1, 2)",
    "s IS NULL",
    "s IS NOT NULL",
    "s LIKE 'a0%'",
    "s LIKE '%7'",
    "s = 'b011'",
    "s > 'b050'",
    "d = DATE '2024-01-05'",
    "d >= DATE '2024-03-01'",
    "dec > 20.00",
    "dec BETWEEN 1.25 AND 3.5",
    "f > 20.0",
    "isnan(f)",
    "NOT (k <=> 3)",
]


@pytest.mark.parametrize("predicate", PREDICATES)
def test_predicates_on_a_reused_frame(
    spark_conf: SparkSession, tables: dict[str, str], predicate: str
) -> None:
    """Another filter's scan, the predicate's rows, every row, the predicate in a self-join."""

    def query(load: Loader) -> tuple[list[int], int, list[int]]:
        frame = load()
        assert frame.filter("k = 3").count() == 10
        kept = sorted(r.id for r in frame.filter(predicate).select("id").collect())
        everything = frame.count()
        pairs = frame.filter(predicate).select("id").join(frame.select("id", "k"), "id")
        return kept, everything, sorted(r.id for r in pairs.collect())

    kept, everything, joined = _same_on_both(spark_conf, tables, query)  # type: ignore[misc]
    assert everything == N and kept == joined


def test_a_version_read_beside_a_latest_read(
    spark_conf: SparkSession, tables: dict[str, str]
) -> None:
    def query(load: Loader) -> tuple[int, int, int, list[int]]:
        old, new = load(version=1), load()
        old_filtered = old.filter("k = 3").count()
        both = old.select("id").join(new.filter("id >= 55").select("id"), "id")
        ids = sorted(r.id for r in both.collect())
        return old_filtered, old.count(), new.count(), ids

    assert _same_on_both(spark_conf, tables, query) == (6, 60, N, list(range(55, 60)))


def test_parquet_copy_is_the_reference(tmp_path: Path, spark: SparkSession) -> None:
    """The comparisons above mean something only if both copies hold the same rows."""
    rows = _rows()
    uri = str(tmp_path / "t")
    ft.write_dataset(rows, uri, max_rows_per_file=PER_FILE)
    pq.write_table(rows, tmp_path / "p.parquet")
    fermion_rows = spark.read.format("fermion").load(uri).orderBy("id").collect()
    parquet_rows = spark.read.parquet(str(tmp_path / "p.parquet")).orderBy("id").collect()
    assert len(fermion_rows) == N
    assert str(fermion_rows) == str(parquet_rows)  # NaN != NaN: compared as text
    fermion_types = spark.read.format("fermion").load(uri).dtypes
    assert fermion_types == spark.read.parquet(str(tmp_path / "p.parquet")).dtypes


def test_pruned_frames_reused(spark_conf: SparkSession, tables: dict[str, str]) -> None:
    """read_dataset's and the filter option's pruning is the load()'s own: reuse keeps it."""
    from fermion.spark import read_dataset

    def reuse(frame: DataFrame) -> list[int]:
        return [frame.count(), frame.filter("k = 3").count(), frame.count()]

    parquet = spark_conf.read.parquet(tables["parquet"]).filter("id >= 50 AND s IS NOT NULL")
    expected = reuse(parquet)
    assert expected == [43, 4, 43]
    pruned = read_dataset(spark_conf, tables["fermion"], filter="id >= 50 AND s IS NOT NULL")
    assert reuse(pruned) == expected
    option = spark_conf.read.format("fermion").option("filter", "id >= 50 AND s IS NOT NULL")
    assert reuse(option.load(tables["fermion"])) == expected
