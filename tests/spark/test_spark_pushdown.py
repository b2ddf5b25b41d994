"""Pushed filters: exact results (nulls and NaN included) and fewer fragments read."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    In,
    IsNotNull,
    IsNull,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

import fermion.table as ft
from fermion.spark import FermionReader, ReadOptions
from fermion.spark.filters import translate
from fermion.spark.types import spark_schema
from fermion.table.scan import ScanStats

N, PER_FILE = 100, 25
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _data() -> pa.Table:
    ids = list(range(N))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([None if i % 7 == 0 else i % 5 for i in ids], pa.int32()),
            "s": [None if i % 6 == 0 else ("a" if i % 2 else "b") + str(i) for i in ids],
            "f": pa.array(
                [None if i % 9 == 0 else (float("nan") if i % 10 == 3 else i / 4) for i in ids]
            ),
            "ts": pa.array([T0 + dt.timedelta(seconds=i) for i in ids], pa.timestamp("us", "UTC")),
            "ntz": pa.array(
                [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i) for i in ids], pa.timestamp("us")
            ),
            "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids]),
            "dec": pa.array([Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
            "b": pa.array([None if i % 8 == 0 else i % 2 == 0 for i in ids]),
            "bin": pa.array([bytes([i % 3, i % 4]) for i in ids], pa.binary()),
        }
    )


@pytest.fixture(scope="module")
def table_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = str(tmp_path_factory.mktemp("pushdown") / "t")
    ft.write_dataset(_data(), uri, max_rows_per_file=PER_FILE)
    return uri


@pytest.fixture(scope="module")
def reference(spark: SparkSession, table_uri: str) -> dict[str, list[int]]:
    """Each predicate's ids as Spark itself evaluates it (one job over materialised rows)."""
    rows = spark.read.format("fermion").load(table_uri).localCheckpoint()
    tests = [F.expr(p).alias(f"p{i}") for i, (p, _) in enumerate(PREDICATES)]
    result = rows.select("id", *tests).collect()
    return {
        p: sorted(r.id for r in result if r[f"p{i}"] is True) for i, (p, _) in enumerate(PREDICATES)
    }


PREDICATES = [
    ("id = 7", 1),
    ("id <=> 7", 1),
    ("NOT (id <=> 7)", 4),
    ("NOT (k <=> 3)", 4),
    ("k <=> NULL", 4),
    ("id > 90", 1),
    ("id >= 40 AND id <= 60", 2),
    ("id >= 90 AND k IS NULL", 1),
    ("k IN (1, 2)", 4),
    ("k NOT IN (1, 2)", 4),
    ("k != 3", 4),
    ("s LIKE 'a1%'", 4),
    ("s NOT LIKE 'a%'", 4),
    ("s LIKE '%9'", 4),
    ("s LIKE '%b1%'", 4),
    ("s IS NULL", 4),
    ("s = 'b10'", 4),  # every fragment's string range holds 'b10'
    ("f > 20.0", 4),  # floats: Spark keeps NaN (above every number): not pushed
    ("f = double('NaN')", 4),
    ("f IS NULL", 4),
    ("ts >= TIMESTAMP '2024-01-01 00:01:20Z'", 1),
    ("ntz < TIMESTAMP_NTZ '2024-01-01 00:00:10'", 1),
    ("d = DATE '2024-01-05'", 1),
    ("dec > 20.00", 4),  # pushed, but the manifest keeps no decimal statistics
    ("b", 4),
    ("NOT b", 4),
    ("bin = X'0102'", 4),
    ("id < 50 OR s IS NULL", 4),  # an OR is never pushed
]


def _ids(frame: DataFrame) -> list[int]:
    return sorted(r.id for r in frame.select("id").collect())


@pytest.mark.parametrize(("predicate", "partitions"), PREDICATES)
def test_pushed_results_equal_spark_own_and_prune_fragments(
    spark: SparkSession,
    table_uri: str,
    reference: dict[str, list[int]],
    predicate: str,
    partitions: int,
) -> None:
    pushed = spark.read.format("fermion").load(table_uri).filter(predicate)
    assert _ids(pushed) == reference[predicate]
    assert pushed.rdd.getNumPartitions() == partitions  # fragments left after pruning


def _reader(uri: str) -> FermionReader:
    return FermionReader(ReadOptions(uri), spark_schema(ft.dataset(uri).schema))


def test_reader_opens_only_the_files_the_filter_can_match(table_uri: str) -> None:
    reader = _reader(table_uri)
    assert list(reader.pushFilters([GreaterThan(("id",), 80)])) == []
    stats = ScanStats()
    rows = [b for p in reader.partitions() for b in reader.read_slice(p, stats)]
    assert stats.files_opened == 1 and sum(b.num_rows for b in rows) == 19
    everything = _reader(table_uri)
    stats = ScanStats()
    assert sum(b.num_rows for p in everything.partitions() for b in everything.read_slice(p, stats))
    assert stats.files_opened == N // PER_FILE


def test_unsupported_filters_go_back_to_spark(table_uri: str) -> None:
    reader = _reader(table_uri)
    float_filter = GreaterThan(("f",), 1.0)
    nested = EqualTo(("s", "x"), 1)
    unknown = EqualTo(("nope",), 1)
    wrong_value = EqualTo(("id",), "not a number")
    kept = [IsNull(("f",)), EqualTo(("id",), 3)]
    rejected = list(reader.pushFilters([float_filter, nested, unknown, wrong_value, *kept]))
    expected = [float_filter, nested, unknown, wrong_value]
    assert all(r is f for r, f in zip(rejected, expected, strict=True))  # the very objects


def _kept(filters: list[object], table: pa.Table) -> list[object]:
    pushed = translate(filters, table.schema)  # type: ignore[arg-type]
    assert pushed.rejected == [] and pushed.expression is not None
    return table.filter(pushed.expression).column("a").to_pylist()


def test_translation_follows_sql_three_valued_logic() -> None:
    table = pa.table({"a": pa.array([1, 2, None, 3], pa.int64()), "s": ["ab", None, "b", "ac"]})
    assert _kept([Not(EqualTo(("a",), 1))], table) == [2, 3]
    assert _kept([Not(In(("a",), (1, 2)))], table) == [3]
    assert _kept([Not(In(("a",), (1, None)))], table) == []  # NOT IN with a NULL: never TRUE
    assert _kept([In(("a",), (1, None))], table) == [1]
    assert _kept([EqualNullSafe(("a",), None)], table) == [None]
    assert _kept([Not(EqualNullSafe(("a",), 1))], table) == [2, None, 3]
    assert _kept([Not(IsNull(("a",)))], table) == [1, 2, 3]
    assert _kept([IsNotNull(("s",)), LessThanOrEqual(("a",), 2)], table) == [1]
    assert _kept([StringStartsWith(("s",), "a")], table) == [1, 3]
    assert _kept([Not(StringStartsWith(("s",), "a"))], table) == [None]
    assert _kept([StringEndsWith(("s",), "c")], table) == [3]
    assert _kept([Not(StringContains(("s",), "b"))], table) == [3]
    assert _kept([StringStartsWith(("s",), "\U0010ffff")], table) == []
