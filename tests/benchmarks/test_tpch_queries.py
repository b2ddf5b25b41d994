"""The TPC-H workload through the ``fermion`` source gives Spark's Parquet answers (SF 0.1).

The eight tables are generated with ``tpchgen-cli``, written through Spark twice (the
``fermion`` data source and Spark's Parquet writer), and every query of
``benchmarks.tpch_queries`` is answered over each copy. Several queries read one table
twice with different filters (Q4, Q17, Q18, Q22: subqueries over the table the outer query
reads), which returned wrong answers while the reader took Spark's filters.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from benchmarks import tpch_queries as tpch

SCALE = 0.1


@pytest.fixture(scope="module")
def written(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path | dict[str, int]]:
    root = tmp_path_factory.mktemp("tpch")
    source = tpch.generate(root / "data", SCALE)
    out: dict[str, Path | dict[str, int]] = {}
    for system in ("fermion", "parquet"):
        target = root / system
        out[f"{system}_rows"] = tpch.write_tables(spark, source, target, system)
        out[system] = target
    return out


def test_every_table_is_written_whole(
    spark: SparkSession, written: dict[str, Path | dict[str, int]]
) -> None:
    rows = written["fermion_rows"]
    assert rows == written["parquet_rows"]
    assert isinstance(rows, dict) and rows["lineitem"] > 500_000 and rows["region"] == 5
    root = written["fermion"]
    assert isinstance(root, Path)
    for table, count in rows.items():
        assert spark.read.format("fermion").load(str(root / table)).count() == count


def test_queries_answer_as_spark_parquet(
    spark: SparkSession, written: dict[str, Path | dict[str, int]]
) -> None:
    results = {}
    for system in ("fermion", "parquet"):
        root = written[system]
        assert isinstance(root, Path)
        tpch.register_views(spark, root, system)
        results[system] = tpch.answers(spark)
    root = written["fermion"]
    assert isinstance(root, Path)
    uris = tpch.table_uris(root)  # through fermion.spark.sql: only the columns named
    results["fermion-sql"] = {name: tpch.run_query(spark, name, uris) for name in tpch.QUERIES}
    for name in tpch.QUERIES:
        assert results["fermion"][name] == results["parquet"][name], name
        assert results["fermion-sql"][name] == results["parquet"][name], name
    assert all(results["parquet"][name] for name in tpch.QUERIES)  # no empty answer
    assert len(results["parquet"]["q01_pricing_summary"]) == 4


def test_floor_probe_answers_as_spark_parquet(
    spark: SparkSession,
    written: dict[str, Path | dict[str, int]],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The floor probe's IPC source (benchmarks/floor_probe.py) reads the views
    ``fermion.spark.sql`` plans, with their columns and filters, and gets Parquet's
    answers: Q6 (filters on one table), Q17 (a table read twice) and Q12 (a join)."""
    import fermion.table as ft
    from benchmarks import floor_probe

    root, parquet = written["fermion"], written["parquet"]
    assert isinstance(root, Path) and isinstance(parquet, Path)
    ipc_roots = floor_probe.ipc_copies(root, tmp_path_factory.mktemp("ipc"))
    assert sorted(p.name for p in ipc_roots["lineitem"].glob("*.arrow"))  # files written
    schemas = {t: ft.dataset(str(root / t)).schema for t in tpch.TABLES}
    spark.dataSource.register(floor_probe.IpcFloorSource)
    for name in ("q06_forecast_revenue", "q17_small_quantity", "q12_shipping_modes"):
        query = tpch.QUERIES[name]
        floor = tpch.normalise(floor_probe.floor_sql(spark, query, ipc_roots, schemas).collect())
        tpch.register_views(spark, parquet, "parquet")
        assert floor == tpch.normalise(spark.sql(query).collect()), name
        assert floor, name
