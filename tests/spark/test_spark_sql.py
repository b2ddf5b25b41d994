"""``fermion.spark.sql``: views that read only the columns a query names, same answers.

Each query's answer is compared with the same query over views of every column and over
Spark's Parquet copy of the same rows. Shapes tried: a column name shared by two tables
(resolved by Spark's scoping in a correlated subquery), ``*``, ``count(*)`` alone,
backquoted and differently cased names, a version per view. Bad inputs tried: a version
for a view not in ``tables``, an empty view name, a missing table.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import fermion.table as ft
from fermion.errors import DatasetError, InvalidArgumentError
from fermion.spark import sql
from fermion.spark.sql import query_columns

ORDERS = pa.table(
    {
        "id": pa.array(range(20), pa.int64()),
        "cust": pa.array([i % 4 for i in range(20)], pa.int64()),
        "amount": pa.array([float(i * 3 % 7) for i in range(20)]),
        "Note": [f"n{i}" for i in range(20)],
    }
)
CUSTOMERS = pa.table(
    {
        "id": pa.array(range(4), pa.int64()),  # same name as orders.id
        "name": ["ann", "bob", "cy", "di"],
        "amount": pa.array([1.0, 2.0, 3.0, 4.0]),  # same name as orders.amount
    }
)

QUERIES = [
    "SELECT name, sum(o.amount) AS total FROM orders o JOIN customers c ON o.cust = c.id "
    "GROUP BY name",
    # `amount` inside the subquery is customers.amount (innermost scope), not orders'
    "SELECT id FROM orders WHERE cust IN (SELECT id FROM customers WHERE amount > 2.0)",
    "SELECT o.id FROM orders o WHERE o.amount > (SELECT avg(amount) FROM orders)",
    "SELECT * FROM customers WHERE id < 2",
    "SELECT count(*) AS n FROM orders",
    "SELECT `NOTE` FROM orders WHERE id % 5 = 0",
    "SELECT c.* FROM customers c JOIN orders o ON o.cust = c.id WHERE o.id = 3",
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    root = tmp_path_factory.mktemp("sql")
    fermion, parquet = {}, {}
    for name, rows in (("orders", ORDERS), ("customers", CUSTOMERS)):
        fermion[name] = str(root / name)
        ft.write_dataset(rows, fermion[name], max_rows_per_file=8)
        parquet[name] = str(root / f"{name}.parquet")
        pq.write_table(rows, parquet[name])
    return {"fermion": fermion, "parquet": parquet}


def _rows(frame: object) -> list[str]:
    return sorted(str(r) for r in frame.collect())  # type: ignore[attr-defined]


@pytest.mark.parametrize("query", QUERIES)
def test_answers_equal_full_views_and_parquet(
    spark: SparkSession, tables: dict[str, dict[str, str]], query: str
) -> None:
    pruned = _rows(sql(spark, query, tables["fermion"]))
    for name, uri in tables["fermion"].items():
        spark.read.format("fermion").load(uri).createOrReplaceTempView(name)
    full = _rows(spark.sql(query))
    for name, path in tables["parquet"].items():
        spark.read.parquet(path).createOrReplaceTempView(name)
    assert pruned == full == _rows(spark.sql(query))
    assert pruned  # every query here has an answer


def test_views_read_only_the_named_columns(
    spark: SparkSession, tables: dict[str, dict[str, str]]
) -> None:
    sql(spark, "SELECT sum(amount) FROM orders WHERE cust = 1", tables["fermion"])
    assert spark.table("orders").columns == ["cust", "amount"]
    assert spark.table("customers").columns == ["amount"]  # only the name is known
    sql(spark, "SELECT count(*) FROM orders", {"orders": tables["fermion"]["orders"]})
    assert spark.table("orders").columns == ["id"]


def test_query_columns() -> None:
    names = ["id", "Note", "a,b", "x"]
    assert query_columns("SELECT note FROM t", names) == ["Note"]
    assert query_columns("SELECT t.* FROM t", names) == names
    assert query_columns("SELECT count(*) FROM t", names) == ["id"]
    assert query_columns("SELEC nonsense (", names) == names
    assert query_columns("SELECT `a,b`, x FROM t", names) == ["a,b", "x"]


def test_versions_and_names_that_the_columns_option_cannot_hold(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"a,b": [1, 2], "x": [3, 4]}), uri)
    ft.write_dataset(pa.table({"a,b": [5], "x": [6]}), uri, mode="append")
    frame = sql(spark, "SELECT sum(`a,b`) AS s FROM t", {"t": uri}, versions={"t": 1})
    assert frame.collect()[0].s == 3
    assert sql(spark, "SELECT sum(x) AS s FROM t", {"t": uri}).collect()[0].s == 13


def test_bad_inputs(spark: SparkSession, tables: dict[str, dict[str, str]], tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"\['nope'\]"):
        sql(spark, "SELECT 1", tables["fermion"], versions={"nope": 1})
    with pytest.raises(InvalidArgumentError, match="view name"):
        sql(spark, "SELECT 1", {" ": tables["fermion"]["orders"]})
    with pytest.raises(DatasetError):
        sql(spark, "SELECT * FROM t", {"t": str(tmp_path / "missing")})
