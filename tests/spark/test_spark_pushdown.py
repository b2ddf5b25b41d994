"""Filters over the ``fermion`` source: Spark's own answers, and pruning fixed per load().

Spark's filters are never taken by the reader (docs/SPARK.md, "Why nothing is pushed
implicitly"): a filtered frame reads every fragment and Spark keeps the rows. The
``filter`` option and :func:`fermion.spark.read_dataset` prune fragments; their answers are
compared with Spark's own evaluation of the same predicate.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import fermion.table as ft
from fermion.errors import ColumnNotFoundError, InvalidArgumentError
from fermion.spark import FermionReader, ReadOptions, read_dataset
from fermion.spark.filters import exact_conjuncts
from fermion.spark.types import spark_schema
from fermion.table.scan import ScanStats

N, PER_FILE = 100, 25
#: Partitions of at most one byte: one per fragment read (no packing), so the partitions
#: count the fragments that pruning left.
ONE_PER_FRAGMENT = {"max_partition_bytes": "1"}
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


#: (predicate, fragments read_dataset reads: its exact conjuncts prune, the rest is Spark's)
PREDICATES = [
    ("id = 7", 1),
    ("id <=> 7", 4),  # null-safe equality stays with Spark
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
    ("ts >= TIMESTAMP '2024-01-01 00:01:20Z'", 4),  # timestamps: the session time zone
    ("ntz < TIMESTAMP_NTZ '2024-01-01 00:00:10'", 4),
    ("d = DATE '2024-01-05'", 1),
    # a literal the decimal(10, 2) column holds exactly is pushed, and prunes by the
    # fragments' decimal bounds (kept as exact text in the manifest)
    ("dec > 20.00", 1),
    ("dec > 20.125", 4),  # more fraction digits than the scale: Spark alone
    ("dec BETWEEN 2 AND 4.5 OR dec < -1", 1),
    ("b", 4),
    ("NOT b", 4),
    ("bin = X'0102'", 4),
    ("id < 50 OR s IS NULL", 4),  # every fragment has a null s
    ("id < 20 OR id > 95", 2),
    ("id > 90 AND f > 20.0", 1),  # the float conjunct stays with Spark, the other prunes
    ("id + 1 > 91", 4),  # arithmetic stays with Spark
]


def _ids(frame: DataFrame) -> list[int]:
    return sorted(r.id for r in frame.select("id").collect())


@pytest.mark.parametrize(("predicate", "partitions"), PREDICATES)
def test_spark_filters_give_spark_answers_and_read_every_fragment(
    spark: SparkSession, table_uri: str, reference: dict[str, list[int]], predicate: str,
    partitions: int,
) -> None:  # fmt: skip
    frame = spark.read.format("fermion").options(**ONE_PER_FRAGMENT).load(table_uri)
    filtered = frame.filter(predicate)
    assert _ids(filtered) == reference[predicate]
    assert filtered.rdd.getNumPartitions() == N // PER_FILE  # nothing taken from Spark
    assert frame.count() == N  # the same frame, scanned again, unfiltered


@pytest.mark.parametrize(("predicate", "partitions"), PREDICATES)
def test_read_table_gives_spark_answers_and_prunes_by_exact_conjuncts(
    spark: SparkSession, table_uri: str, reference: dict[str, list[int]], predicate: str,
    partitions: int,
) -> None:  # fmt: skip
    frame = read_dataset(spark, table_uri, ["id"], predicate, options=ONE_PER_FRAGMENT)
    assert _ids(frame) == reference[predicate]
    assert frame.rdd.getNumPartitions() == partitions


#: (filter option, its ids, fragments read): Fermion's predicate language, evaluated at
#: the source for every scan of the load()
OPTION_FILTERS = [
    ("id > 90", [i for i in range(N) if i > 90], 1),
    ("id >= 40 AND id <= 60", list(range(40, 61)), 2),
    ("d = DATE '2024-01-05'", [4], 1),
    ("k IN (1, 2) AND id < 25", [i for i in range(25) if i % 7 and i % 5 in (1, 2)], 1),
    ("s IS NULL", [i for i in range(N) if i % 6 == 0], 4),
    # every fragment holds a NaN, which float statistics cannot bound: nothing pruned
    ("f > 20.0", [i for i in range(N) if i % 9 and i % 10 != 3 and i / 4 > 20], 4),
]


@pytest.mark.parametrize(("text", "ids", "partitions"), OPTION_FILTERS)
def test_filter_option_prunes_for_every_scan_of_the_load(
    spark: SparkSession, table_uri: str, text: str, ids: list[int], partitions: int
) -> None:
    frame = spark.read.format("fermion").option("filter", text)
    frame = frame.options(**ONE_PER_FRAGMENT).load(table_uri)
    assert frame.rdd.getNumPartitions() == partitions
    assert _ids(frame) == ids
    assert frame.count() == len(ids)
    inner = frame.filter("id % 2 = 0").select("id").join(frame.select("id"), "id")
    assert _ids(inner) == [i for i in ids if i % 2 == 0]  # both sides read the same rows


def test_filter_option_applies_to_columns_not_read(spark: SparkSession, table_uri: str) -> None:
    load = spark.read.format("fermion").option("filter", "d < '2024-01-04'")
    frame = load.option("columns", "s").load(table_uri)
    assert frame.columns == ["s"] and sorted(r.s or "" for r in frame.collect()) == ["", "a1", "b2"]


def _reader(uri: str, text: str | None = None) -> FermionReader:
    return FermionReader(ReadOptions(uri, filter=text), spark_schema(ft.dataset(uri).schema))


def test_reader_opens_only_the_files_the_filter_option_can_match(table_uri: str) -> None:
    reader = _reader(table_uri, "id > 80")
    stats = ScanStats()
    rows = [b for p in reader.partitions() for b in reader.read_slice(p, stats)]
    assert stats.files_opened == 1 and sum(b.num_rows for b in rows) == 19
    everything = _reader(table_uri)
    assert not hasattr(everything, "pushFilters") or everything.pushFilters.__qualname__.startswith(
        "DataSourceReader."
    )  # Spark's default: every filter back to Spark
    stats = ScanStats()
    assert sum(b.num_rows for p in everything.partitions() for b in everything.read_slice(p, stats))
    assert stats.files_opened == N // PER_FILE


def test_exact_conjuncts_keep_only_what_arrow_evaluates_as_spark() -> None:
    schema = _data().schema
    assert exact_conjuncts("id = 7", schema) == "id = 7"
    assert exact_conjuncts("7 < id AND k IS NOT NULL", schema) == "7 < id AND NOT k IS NULL"
    assert exact_conjuncts("id > 2.5", schema) is None  # Spark compares as decimal
    assert exact_conjuncts("id > -3 AND id IN (1, 2)", schema) == "id > -3 AND id IN (1, 2)"
    assert exact_conjuncts("k = 99999999999", schema) is None  # does not fit the int32 column
    assert exact_conjuncts("s = 3", schema) is None  # Spark casts the string column
    assert exact_conjuncts("s LIKE 'a\\_%'", schema) is None  # an escape
    assert exact_conjuncts("s LIKE 'a!_%' ESCAPE '!'", schema) is None
    assert exact_conjuncts("d = '2024-1-5'", schema) is None  # Spark's lenient date text
    assert exact_conjuncts("d BETWEEN '2024-01-01' AND DATE '2024-02-01'", schema) is not None
    assert exact_conjuncts("f > 1.0 OR id = 1", schema) is None  # one float side is enough
    assert exact_conjuncts("(id = 1 OR id = 2) AND b", schema) == "(id = 1 OR id = 2) AND b"
    assert exact_conjuncts("ID = 1", schema) is None  # Spark resolves names case-blind
    assert exact_conjuncts("id = (SELECT 1)", schema) is None
    assert exact_conjuncts("id IN (SELECT 1)", schema) is None
    assert exact_conjuncts("nope = 1", schema) is None
    assert exact_conjuncts("this is not sql (", schema) is None
    assert exact_conjuncts("b = true AND NOT b", schema) == "b = TRUE AND NOT b"
    # decimals: literals the decimal(10, 2) column holds exactly, no exponent
    assert exact_conjuncts("dec < 24 AND dec >= -0.5", schema) == "dec < 24 AND dec >= -0.5"
    assert exact_conjuncts("dec > 0.055", schema) is None  # would round to 0.06
    assert exact_conjuncts("dec = 1e2", schema) is None
    assert exact_conjuncts("dec = 123456789", schema) is None  # 9 integer digits > 8
    assert exact_conjuncts("dec = '1.5'", schema) is None  # Spark casts the string


def _error(action: object) -> str:
    with pytest.raises(PySparkException) as caught:
        action()  # type: ignore[operator]
    return str(caught.value)


def test_bad_filter_options(spark: SparkSession, table_uri: str) -> None:
    """Bad inputs tried: a missing column, text that is not a condition, an empty filter."""
    load = spark.read.format("fermion")
    message = _error(lambda: load.option("filter", "nope > 1").load(table_uri).collect())
    assert "ColumnNotFoundError" in message and "nope" in message
    message = _error(lambda: load.option("filter", "id >").load(table_uri).collect())
    assert "InvalidArgumentError" in message and "cannot parse" in message
    message = _error(lambda: load.option("filter", "  ").load(table_uri).collect())
    assert "option filter is empty" in message
    with pytest.raises(ColumnNotFoundError):
        _reader(table_uri, "nope = 1")
    with pytest.raises(InvalidArgumentError, match="is not a"):
        _reader(table_uri, "id = 'x'")
