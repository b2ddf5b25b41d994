"""A multi-table SQL workload through Spark: TPC-H written and queried, Fermion vs Parquet.

Rows (systems ``fermion`` and ``parquet``; ``vs Parquet`` is Fermion's time over Spark
with Parquet's):

- ``spark_tpch_write``: the eight TPC-H tables read from ``tpchgen-cli``'s Parquet files and
  written through ``df.write.format("fermion")`` vs ``df.write.parquet``; and as system
  ``python-sink`` the same writes into ``benchmarks.tpch_cases.NullSink``, a Python data
  source that keeps nothing (the floor of any Python data source's write);
- ``spark_tpch_<query>``: each query of ``benchmarks.tpch_queries`` over the copy each
  system wrote, registered as temporary views (``spark.read.format("fermion").load`` vs
  ``spark.read.parquet``), answer collected; and as system ``fermion-sql`` the same
  query through ``fermion.spark.sql``, whose views read only the columns the query names
  (Spark gives Python data sources no column pruning; docs/SPARK.md);
- ``spark_tpch_geomean``: the geometric mean of a system's query medians (so its
  ``vs Parquet`` is the geometric mean of the per-query ratios).

Answers are compared between the systems (sorted rows, doubles to 12 digits); a query
whose answers differ is reported ``wrong-result`` for both, and then no geometric mean is
given. Scale: lineitem's (SF 1 in full runs, SF 0.01 with ``--quick``).

    python -m benchmarks.run --only tpch_bench [--quick]
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from benchmarks import tpch_queries as tpch
from benchmarks.config import FULL, QUICK, WORKER_TIMEOUT_S, Sizes
from benchmarks.spark_bench import mark_differences

__all__ = ["SYSTEMS", "method_notes", "query_rows", "run"]

SYSTEMS = ("fermion", "parquet")


def _sizes() -> Sizes:
    return QUICK if os.environ.get("FERMION_BENCH_QUICK") == "1" else FULL


def method_notes(sizes: Sizes) -> list[tuple[str, str]]:
    """The Method line of these rows."""
    return [
        (
            "spark_tpch_*",
            f"TPC-H SF{sizes.lineitem_scale:g} (`tpchgen-cli`, all 8 tables), one fresh process "
            "per system with one local[2] SparkSession (start-up not timed). Write: the 8 "
            "tables read from the generated Parquet and written through Spark, into emptied "
            "directories (Spark's default snappy for Parquet); `python-sink`: the same writes into "
            "a Python data source that only counts the batches it is handed; queries: "
            f"{len(tpch.QUERIES)} TPC-H-style queries (benchmarks/tpch_queries.py) over "
            "temporary views of the copy each system wrote, `collect()` timed; `fermion-sql`: "
            "the same queries through `fermion.spark.sql` on the fermion copy (views of "
            "only the columns each query names); one warm-up then the timed runs, medians; "
            "answers compared between the systems",
        )
    ]


def _row(scenario: str, variant: str, system: str, result: dict[str, Any]) -> dict[str, Any]:
    row = {
        "scenario": scenario,
        "variant": variant,
        "system": system,
        "unit": "s",
        "status": result.get("status", "error"),
        "value": result.get("value"),
        "note": result.get("note", ""),
    }
    if "runs" in result:
        row["runs"] = result["runs"]
    if isinstance(result.get("check"), dict):
        row["io"] = {"check": result["check"]}
    return row


def _agree(rows: list[dict[str, Any]]) -> bool:
    """Mark the rows ``wrong-result`` if their checks differ; True if all are ok and agree."""
    mark_differences(rows)
    return all(r["status"] == "ok" for r in rows)


def _query_results(outcomes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Query system → its results by query name (``fermion-sql`` from the fermion worker)."""
    out = {s: outcomes[s].get("queries", {}) for s in SYSTEMS}
    if "queries_sql" in outcomes["fermion"]:
        out = {"fermion": out["fermion"], "fermion-sql": outcomes["fermion"]["queries_sql"],
               "parquet": out["parquet"]}  # fmt: skip
    return out


def query_rows(outcomes: dict[str, dict[str, Any]], scale: float) -> list[dict[str, Any]]:
    """The rows of both workers' outcomes, answers compared, with the geometric means.

    Example:
        >>> ok = lambda v, d: {"status": "ok", "value": v, "check": {"rows": 1, "digest": d}}
        >>> fermion = {"write": ok(2.0, "w"), "queries": {"q": ok(2.0, "a")},
        ...            "queries_sql": {"q": ok(1.5, "a")}}
        >>> parquet = {"write": ok(1.0, "w"), "queries": {"q": ok(1.0, "a")}}
        >>> rows = query_rows({"fermion": fermion, "parquet": parquet}, 1)
        >>> [(r["scenario"], r["system"], r["value"]) for r in rows][-3:]
        [('spark_tpch_geomean', 'fermion', 2.0), ('spark_tpch_geomean', 'fermion-sql', 1.5), \
('spark_tpch_geomean', 'parquet', 1.0)]
    """
    sf = f"SF{scale:g}"
    out: list[dict[str, Any]] = []
    missing = {"status": "error", "note": "the worker returned nothing"}
    writes = {s: outcomes[s].get("write", missing) for s in SYSTEMS}
    if "write_sink" in outcomes["fermion"]:
        writes = {"fermion": writes["fermion"], "python-sink": outcomes["fermion"]["write_sink"],
                  "parquet": writes["parquet"]}  # fmt: skip
    write = [_row("spark_tpch_write", f"8 tables {sf}, local[2]", s, r) for s, r in writes.items()]
    mark_differences(write)
    out += write
    by_system = _query_results(outcomes)
    names = sorted(set().union(*by_system.values()))
    agreed = True
    for name in names:
        pair = [
            _row(f"spark_tpch_{name}", f"{sf}, local[2]", system, results.get(name, missing))
            for system, results in by_system.items()
        ]
        agreed = _agree(pair) and agreed
        out += pair
    for system, results in by_system.items():
        row: dict[str, Any] = {
            "scenario": "spark_tpch_geomean",
            "variant": f"{len(names)} queries {sf}, local[2]",
            "system": system,
            "unit": "s",
            "status": "ok" if agreed and names else "error",
            "value": None,
            "note": "" if agreed and names else "not every query answered alike by all",
        }
        if row["status"] == "ok":
            logs = [math.log(results[n]["value"]) for n in names]
            row["value"] = math.exp(sum(logs) / len(logs))
        out.append(row)
    return out


def run(results: list[dict[str, Any]]) -> None:
    """Generate the tables, measure both systems, append the rows to ``results``."""
    from benchmarks.launch import log as _log
    from benchmarks.launch import run_worker

    sizes = _sizes()
    repeat = int(os.environ.get("FERMION_BENCH_REPEAT", "5"))
    data_dir = Path(os.environ.get("FERMION_BENCH_DATA_DIR", f".bench-data/{sizes.name}"))
    data_dir = data_dir.resolve()
    _log(f"generating TPC-H SF{sizes.lineitem_scale:g} (all tables) with tpchgen-cli")
    source = tpch.generate(data_dir, sizes.lineitem_scale)
    outcomes = {}
    for system in SYSTEMS:
        _log(f"TPC-H write + {len(tpch.QUERIES)} queries with {system} (one Spark session)")
        spec = {
            "mode": "spark-tpch",
            "system": system,
            "source": str(source),
            "work": str(data_dir / "tmp" / "tpch" / system),
            "repeat": repeat,
            "queries": sorted(tpch.QUERIES),
        }
        outcomes[system] = run_worker(spec, timeout=WORKER_TIMEOUT_S * 2)
        if outcomes[system].get("status") != "ok":
            _log(f"  FAILED: {outcomes[system].get('note')}")
            outcomes[system] = {"write": outcomes[system], "queries": {}}
    results += query_rows(outcomes, sizes.lineitem_scale)
