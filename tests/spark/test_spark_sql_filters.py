"""``fermion.spark.sql`` with ``filters=True``: views skip the rows their ``WHERE`` rules out.

Answers are compared with the same query over Spark's Parquet copy of the same rows. Shapes
tried: a table read once with a filter; a self-join with a different filter per side; a
scalar and a correlated subquery over the table the outer query filters; a ``LEFT JOIN``
whose ``WHERE`` keeps null-extended rows (nothing may be pushed there); a CTE named like a
table; ``UNION ALL`` of two filtered reads; an unqualified name two tables share; ``OR``,
``IN``, ``LIKE``, dates and strings; a float comparison (stays with Spark).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import fermion.table as ft
from fermion.spark import sql
from fermion.spark.sql_views import plan_views

N = 60
ORDERS = pa.table(
    {
        "id": pa.array(range(N), pa.int64()),
        "cust": pa.array([i % 5 for i in range(N)], pa.int64()),
        "day": pa.array([dt.date(2026, 1, 1) + dt.timedelta(days=i % 30) for i in range(N)]),
        "status": [("open", "done", None)[i % 3] for i in range(N)],
        "amount": pa.array([float(i * 7 % 11) for i in range(N)]),
    }
)
CUSTOMERS = pa.table(
    {
        "id": pa.array(range(5), pa.int64()),  # same name as orders.id
        "name": ["ann", "bob", "cy", "di", "ed"],
        "region": ["n", "s", "n", None, "s"],
    }
)
SCHEMAS = {"orders": ORDERS.schema, "customers": CUSTOMERS.schema}

QUERIES = [
    "SELECT id, amount FROM orders WHERE day >= DATE '2026-01-20' AND status = 'open'",
    # a self-join, each side with its own filter
    "SELECT a.id, b.id FROM orders a JOIN orders b ON a.cust = b.cust "
    "WHERE a.id < 10 AND b.status IS NULL AND b.id > 40",
    # a scalar subquery over the table the outer query filters differently
    "SELECT count(*) AS n FROM orders WHERE cust = 2 AND amount > "
    "(SELECT avg(amount) FROM orders WHERE cust IN (1, 3))",
    # correlated: `id` inside is customers.id, the outer filter is on orders
    "SELECT o.id FROM orders o WHERE o.day < '2026-01-05' AND EXISTS "
    "(SELECT 1 FROM customers c WHERE c.id = o.cust AND c.region = 'n')",
    # a LEFT JOIN: the WHERE keeps the null-extended rows, nothing is pushed
    "SELECT c.name, o.id FROM customers c LEFT JOIN orders o ON o.cust = c.id AND o.id < 3 "
    "WHERE o.id IS NULL OR o.status = 'done'",
    # a CTE named like a table shadows the view in its scope, not outside it
    "SELECT id FROM orders WHERE cust = 1 UNION ALL SELECT id FROM (WITH orders AS "
    "(SELECT id, id AS cust FROM customers) SELECT id FROM orders WHERE cust = 2)",
    "SELECT id FROM orders WHERE status LIKE 'd%' UNION ALL "
    "SELECT id FROM orders WHERE day = '2026-01-03' OR cust NOT IN (0, 1)",
    # `id` is in both tables: the unqualified conjunct is Spark's alone (ambiguous, so the
    # query qualifies it), the qualified ones are pushed
    "SELECT o.id, c.name FROM orders o JOIN customers c ON o.cust = c.id "
    "WHERE c.region = 'n' AND o.id BETWEEN 5 AND 25 AND amount > 3.0",
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    root = tmp_path_factory.mktemp("sql-filters")
    fermion, parquet = {}, {}
    for name, rows in (("orders", ORDERS), ("customers", CUSTOMERS)):
        fermion[name] = str(root / name)
        ft.write_dataset(rows, fermion[name], max_rows_per_file=16)
        parquet[name] = str(root / f"{name}.parquet")
        pq.write_table(rows, parquet[name])
    return {"fermion": fermion, "parquet": parquet}


def _rows(frame: object) -> list[str]:
    return sorted(str(r) for r in frame.collect())  # type: ignore[attr-defined]


@pytest.mark.parametrize("query", QUERIES)
def test_filtered_views_answer_as_parquet(
    spark: SparkSession, tables: dict[str, dict[str, str]], query: str
) -> None:
    pushed = _rows(sql(spark, query, tables["fermion"]))
    unpushed = _rows(sql(spark, query, tables["fermion"], filters=False))
    for name, path in tables["parquet"].items():
        spark.read.parquet(path).createOrReplaceTempView(name)
    assert pushed == unpushed == _rows(spark.sql(query))
    assert pushed  # every query here has an answer


def test_a_view_read_once_holds_only_the_rows_its_filter_keeps(
    spark: SparkSession, tables: dict[str, dict[str, str]]
) -> None:
    query = "SELECT sum(amount) AS s FROM orders WHERE cust = 1 AND day < '2026-01-10'"
    sql(spark, query, tables["fermion"])
    expected = sum(
        1 for c, d in zip(ORDERS["cust"].to_pylist(), ORDERS["day"].to_pylist(), strict=True)
        if c == 1 and d < dt.date(2026, 1, 10)
    )  # fmt: skip
    assert 0 < spark.table("orders").count() == expected < N
    sql(spark, query, tables["fermion"], filters=False)
    assert spark.table("orders").count() == N


def test_a_self_join_reads_one_view_per_side(
    spark: SparkSession, tables: dict[str, dict[str, str]]
) -> None:
    query = "SELECT count(*) AS n FROM orders a JOIN orders b ON a.id = b.id WHERE a.cust = 1"
    plan = plan_views(query, SCHEMAS)
    assert plan.filters == {"orders": None, "customers": None, "__fermion_orders_0": "cust = 1"}
    assert plan.query is not None and "__fermion_orders_0 AS a" in plan.query
    assert sql(spark, query, tables["fermion"]).collect()[0].n == N // 5
    assert spark.table("__fermion_orders_0").count() == N // 5
    assert spark.table("orders").count() == N  # side b reads every row


@pytest.mark.parametrize(
    ("query", "filters"),
    [
        # outer, semi and anti joins: the select pushes nothing
        ("SELECT * FROM orders o LEFT JOIN customers c ON o.cust = c.id WHERE o.id = 1", {}),
        ("SELECT * FROM orders o LEFT SEMI JOIN customers c ON o.cust = c.id WHERE o.id = 1", {}),
        # `id` unqualified with two tables of that name: not attributed
        ("SELECT name FROM orders o JOIN customers c ON o.cust = c.id WHERE id = 1", {}),
        # a subquery in FROM: its columns are unknown, so only qualified names are pushed
        (
            "SELECT * FROM orders o JOIN (SELECT 1 AS cust) s ON o.cust = s.cust "
            "WHERE o.id = 2 AND status = 'open'",
            {"orders": "id = 2"},
        ),
        # floats, arithmetic and subqueries stay with Spark
        ("SELECT * FROM orders WHERE amount > 1.0 AND id + 1 = 3", {}),
        ("SELECT * FROM orders WHERE id IN (SELECT id FROM customers)", {}),
        ("SELECT * FROM orders TABLESAMPLE (50 PERCENT) WHERE id = 1", {}),
        # a table read once in a subquery, with its own filter
        (
            "SELECT name FROM customers WHERE id IN "
            "(SELECT cust FROM orders WHERE status = 'open' OR id IN (1, 2))",
            {"orders": "(status = 'open' OR id IN (1, 2))"},
        ),
        ("SELEC broken (", {}),
    ],
)
def test_what_is_pushed(query: str, filters: dict[str, str]) -> None:
    plan = plan_views(query, SCHEMAS)
    assert plan.query is None
    assert {k: v for k, v in plan.filters.items() if v is not None} == filters
