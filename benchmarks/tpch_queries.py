"""A multi-table SQL workload: the eight TPC-H tables and analytical queries over them.

The tables come from ``tpchgen-cli`` (Parquet, one file per table). A system's copy is
written through Spark (``df.write.format("fermion")`` or ``df.write.parquet``), then
registered as temporary views and queried with Spark SQL. The queries follow the shapes of
TPC-H's: scans with aggregates, joins of up to six tables, ``EXISTS`` / ``IN`` subqueries,
and scalar and correlated subqueries that read one table twice with different filters (the
case that needs every scan of one ``load()`` to read its own rows; docs/SPARK.md).

Answers are compared between systems as sorted rows (``normalise``): decimals and
integers exactly, doubles to 1e-9 relative.

Example:
    >>> sorted(QUERIES)[:3]
    ['q01_pricing_summary', 'q03_shipping_priority', 'q04_order_priority']
    >>> normalise([(1, 2.0000000000001, "a")])
    [('1', 2.0, 'a')]
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchmarks import datagen

__all__ = [
    "NULL_SINK",
    "QUERIES",
    "TABLES",
    "answers",
    "generate",
    "normalise",
    "register_views",
    "run_query",
    "table_uris",
    "write_tables",
]

#: The TPC-H tables, in the order they are written.
TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")

QUERIES: dict[str, str] = {
    "q01_pricing_summary": """
        SELECT l_returnflag, l_linestatus, sum(l_quantity) AS qty,
               sum(l_extendedprice) AS base,
               sum(l_extendedprice * (1 - l_discount)) AS disc_price,
               sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS charge,
               avg(l_quantity) AS avg_qty, avg(l_discount) AS avg_disc, count(*) AS n
        FROM lineitem WHERE l_shipdate <= DATE '1998-09-02'
        GROUP BY l_returnflag, l_linestatus""",
    "q03_shipping_priority": """
        SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue,
               o_orderdate, o_shippriority
        FROM customer JOIN orders ON c_custkey = o_custkey
             JOIN lineitem ON l_orderkey = o_orderkey
        WHERE c_mktsegment = 'BUILDING' AND o_orderdate < DATE '1995-03-15'
              AND l_shipdate > DATE '1995-03-15'
        GROUP BY l_orderkey, o_orderdate, o_shippriority
        ORDER BY revenue DESC, o_orderdate, l_orderkey LIMIT 10""",
    "q04_order_priority": """
        SELECT o_orderpriority, count(*) AS n FROM orders
        WHERE o_orderdate >= DATE '1993-07-01' AND o_orderdate < DATE '1993-10-01'
              AND EXISTS (SELECT 1 FROM lineitem
                          WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
        GROUP BY o_orderpriority""",
    "q05_local_supplier": """
        SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
        FROM customer JOIN orders ON c_custkey = o_custkey
             JOIN lineitem ON l_orderkey = o_orderkey
             JOIN supplier ON l_suppkey = s_suppkey AND c_nationkey = s_nationkey
             JOIN nation ON s_nationkey = n_nationkey
             JOIN region ON n_regionkey = r_regionkey
        WHERE r_name = 'ASIA' AND o_orderdate >= DATE '1994-01-01'
              AND o_orderdate < DATE '1995-01-01'
        GROUP BY n_name""",
    "q06_forecast_revenue": """
        SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem
        WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'
              AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24""",
    "q12_shipping_modes": """
        SELECT l_shipmode,
               sum(CASE WHEN o_orderpriority IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END) AS high,
               sum(CASE WHEN o_orderpriority NOT IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END)
                   AS low
        FROM orders JOIN lineitem ON o_orderkey = l_orderkey
        WHERE l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate
              AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01'
              AND l_receiptdate < DATE '1995-01-01'
        GROUP BY l_shipmode""",
    "q17_small_quantity": """
        SELECT sum(l_extendedprice) / 7.0 AS avg_yearly
        FROM lineitem JOIN part ON p_partkey = l_partkey
        WHERE p_brand = 'Brand#23' AND p_container = 'MED BOX'
              AND l_quantity < (SELECT 0.2 * avg(l2.l_quantity) FROM lineitem l2
                                WHERE l2.l_partkey = p_partkey)""",
    "q18_large_volume": """
        SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) AS qty
        FROM customer JOIN orders ON c_custkey = o_custkey
             JOIN lineitem ON o_orderkey = l_orderkey
        WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey
                             HAVING sum(l_quantity) > 300)
        GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
        ORDER BY o_totalprice DESC, o_orderdate, o_orderkey LIMIT 100""",
    "q22_sales_opportunity": """
        SELECT substring(c_phone, 1, 2) AS code, count(*) AS n, sum(c_acctbal) AS total
        FROM customer
        WHERE substring(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17')
              AND c_acctbal > (SELECT avg(c_acctbal) FROM customer
                               WHERE c_acctbal > 0.00
                                 AND substring(c_phone, 1, 2)
                                     IN ('13', '31', '23', '29', '30', '18', '17'))
              AND NOT EXISTS (SELECT 1 FROM orders WHERE o_custkey = c_custkey)
        GROUP BY substring(c_phone, 1, 2)""",
}


def generate(data_dir: Path, scale: float) -> Path:
    """The directory holding ``<table>.parquet`` for every TPC-H table at ``scale`` (made once).

    Raises:
        subprocess.CalledProcessError: ``tpchgen-cli`` failed.
    """
    out = data_dir / "tpch" / f"sf{scale:g}-all"
    if all((out / f"{t}.parquet").exists() for t in TABLES):
        return out
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cmd = [
        datagen.tpchgen_binary(),
        "parquet",
        "-s",
        f"{scale:g}",
        "--output-dir",
        str(tmp),
        "--quiet",
    ]
    subprocess.run(cmd, check=True)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


#: the name the benchmarks' null Python sink is registered under (``python-sink`` writes)
NULL_SINK = "fermion_bench_null_sink"


def write_tables(spark: Any, source: Path, target: Path, system: str) -> dict[str, int]:
    """Write every table of ``source`` through Spark as ``system``; rows written per table.

    ``system`` ``fermion``: ``df.write.format("fermion").mode("overwrite").save``;
    ``parquet``: ``df.write.mode("overwrite").parquet``; ``python-sink``: the Python data
    source registered as :data:`NULL_SINK` (``benchmarks.tpch_cases.NullSink``), which keeps
    nothing, so ``target`` is not written.
    """
    rows = {}
    for table in TABLES:
        frame = spark.read.parquet(str(source / f"{table}.parquet"))
        if system == "fermion":
            frame.write.mode("overwrite").format("fermion").save(str(target / table))
        elif system == "python-sink":
            frame.write.format(NULL_SINK).mode("append").save()
        else:
            frame.write.mode("overwrite").parquet(str(target / table))
        rows[table] = frame.count()
    return rows


def register_views(spark: Any, root: Path, system: str) -> None:
    """Every table under ``root`` as a temporary view of its name, read as ``system``."""
    for table in TABLES:
        path = str(root / table)
        if system == "fermion":
            frame = spark.read.format("fermion").load(path)
        else:
            frame = spark.read.parquet(path)
        frame.createOrReplaceTempView(table)


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, Decimal | int) and not isinstance(value, bool):
        return str(value)
    return value if value is None or isinstance(value, str | bool) else str(value)


def normalise(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows as sorted tuples of exactly comparable values (doubles to 12 digits)."""
    plain = [tuple(_plain(v) for v in row) for row in rows]
    return sorted(plain, key=lambda row: tuple((v is None, str(v)) for v in row))


def run_query(spark: Any, name: str, tables: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    """The normalised answer of one query over the registered views.

    With ``tables`` (view name → Fermion table URI), the query runs through
    ``fermion.spark.sql``, whose views read only the columns the query names.
    """
    if tables is None:
        return normalise(spark.sql(QUERIES[name]).collect())
    import fermion.spark

    return normalise(fermion.spark.sql(spark, QUERIES[name], tables).collect())


def table_uris(root: Path) -> dict[str, str]:
    """View name → the Fermion table of that name under ``root``."""
    return {table: str(root / table) for table in TABLES}


def answers(spark: Any, names: Sequence[str] | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """Every query's normalised answer (``names``: a subset, in that order)."""
    chosen: Sequence[str] = sorted(QUERIES) if names is None else names
    return {name: run_query(spark, name) for name in chosen}
