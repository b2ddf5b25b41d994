"""Decimals of at most 18 digits read as their unscaled longs, and ``fermion.spark.sql``
turning them back into the same decimals in Spark.

The ``unscaled_decimals`` option reads ``decimal(p <= 18, s)`` columns as LongType (the
digits without the point) and leaves wider decimals as they are. ``fermion.spark.sql``
reads its views' decimals so and restores them with Spark's ``MakeDecimal``: each query's
answer is compared with the same query over views of every column and over Spark's
Parquet copy of the same rows (nulls, negative values, a decimal filter pushed as the
``filter`` option, grouping by a decimal, arithmetic). Bad input tried: an option value
other than true or false.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.types import DecimalType, LongType

import fermion.table as ft
from fermion.errors import InvalidArgumentError
from fermion.spark import sql
from fermion.spark.options import ReadOptions

ROWS = 40
PRICES = pa.table(
    {
        "id": pa.array(range(ROWS), pa.int64()),
        "qty": pa.array(
            [None if i % 9 == 4 else Decimal(i * 7 % 50) for i in range(ROWS)],
            pa.decimal128(15, 2),
        ),
        "disc": pa.array([Decimal(i % 11) / 100 for i in range(ROWS)], pa.decimal128(15, 2)),
        "price": pa.array(
            [Decimal(i * 12345 - 200_000) / 1000 for i in range(ROWS)], pa.decimal128(18, 3)
        ),
        "wide": pa.array([Decimal(10**19 + i) / 100 for i in range(ROWS)], pa.decimal128(22, 2)),
        "flag": [("A", "B", "C")[i % 3] for i in range(ROWS)],
    }
)

QUERIES = [
    "SELECT flag, sum(qty) AS q, sum(price * (1 - disc)) AS p, avg(disc) AS d, count(*) AS n "
    "FROM prices GROUP BY flag",
    "SELECT sum(price * disc) AS revenue FROM prices WHERE disc BETWEEN 0.05 AND 0.07 AND qty < 24",
    "SELECT qty, count(*) AS n FROM prices WHERE qty IS NOT NULL GROUP BY qty",
    "SELECT id, price, wide FROM prices WHERE price < 0 ORDER BY id",
    "SELECT max(wide) AS w, min(price) AS p FROM prices",
    # the view scanned twice: a scalar subquery over it, and a self-join
    "SELECT count(*) AS n, sum(qty) AS q FROM prices "
    "WHERE price > (SELECT avg(price) FROM prices WHERE disc > 0.05)",
    "SELECT a.flag, sum(a.qty - b.qty) AS dq, count(*) AS n FROM prices a "
    "JOIN prices b ON a.id = b.id + 1 WHERE b.disc < 0.08 GROUP BY a.flag",
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("decimals")
    fermion = str(root / "prices")
    ft.write_dataset(PRICES, fermion, max_rows_per_file=16)
    parquet = str(root / "prices.parquet")
    pq.write_table(PRICES, parquet)
    return {"fermion": fermion, "parquet": parquet}


def test_the_option_reads_narrow_decimals_as_unscaled_longs(
    spark: SparkSession, tables: dict[str, str]
) -> None:
    frame = spark.read.format("fermion").option("unscaled_decimals", "true").load(tables["fermion"])
    types = {f.name: f.dataType for f in frame.schema.fields}
    assert types["qty"] == types["disc"] == types["price"] == LongType()
    assert types["wide"] == DecimalType(22, 2)  # more than 18 digits: as it is
    rows = sorted(frame.collect(), key=lambda r: r["id"])
    assert [r["qty"] for r in rows] == [
        None if v is None else int(v.scaleb(2)) for v in PRICES["qty"].to_pylist()
    ]
    assert [r["price"] for r in rows] == [int(v.scaleb(3)) for v in PRICES["price"].to_pylist()]
    assert [r["wide"] for r in rows] == PRICES["wide"].to_pylist()
    plain = spark.read.format("fermion").load(tables["fermion"])
    assert {f.name: f.dataType for f in plain.schema.fields}["qty"] == DecimalType(15, 2)


@pytest.mark.parametrize("query", QUERIES)
def test_sql_answers_equal_full_views_and_parquet(
    spark: SparkSession, tables: dict[str, str], query: str
) -> None:
    answer = sql(spark, query, {"prices": tables["fermion"]})
    plan = answer._jdf.queryExecution().analyzed().toString()
    assert "MakeDecimal" in plan or "make_decimal" in plan.lower()  # the longs were read
    pruned = sorted(map(str, answer.collect()))
    spark.read.format("fermion").load(tables["fermion"]).createOrReplaceTempView("prices")
    full = sorted(map(str, spark.sql(query).collect()))
    spark.read.parquet(tables["parquet"]).createOrReplaceTempView("prices")
    assert pruned == full == sorted(map(str, spark.sql(query).collect()))
    assert pruned


def test_sql_views_keep_the_tables_decimal_types(
    spark: SparkSession, tables: dict[str, str]
) -> None:
    sql(spark, "SELECT qty, disc, price, wide FROM prices", {"prices": tables["fermion"]})
    types = {f.name: f.dataType for f in spark.table("prices").schema.fields}
    assert types == {
        "qty": DecimalType(15, 2),
        "disc": DecimalType(15, 2),
        "price": DecimalType(18, 3),
        "wide": DecimalType(22, 2),
    }


def test_a_bad_option_value_is_refused(spark: SparkSession, tables: dict[str, str]) -> None:
    with pytest.raises(InvalidArgumentError, match="unscaled_decimals='yes'"):
        ReadOptions.parse({"path": tables["fermion"], "unscaled_decimals": "yes"})
    reader = spark.read.format("fermion").option("unscaled_decimals", "yes")
    with pytest.raises(PySparkException, match="give true or false"):
        reader.load(tables["fermion"]).collect()
