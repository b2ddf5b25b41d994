"""The TPC-H workload measured inside one worker process per system (see ``tpch_bench``).

The worker starts one ``local[2]`` SparkSession (untimed), then:

1. writes the eight tables through Spark (``benchmarks.tpch_queries.write_tables``): an
   untimed warm-up, then the timed runs, each into an emptied directory. The ``fermion``
   worker then times the same writes into :class:`NullSink`, a Python data source whose
   tasks only count the Arrow batches Spark hands them: the floor of any Python data
   source's write (reported as the system ``python-sink``);
2. registers the last copy as temporary views and times every query (``collect()`` of its
   answer): an untimed warm-up, then the timed runs. The ``fermion`` worker then times
   every query again through ``fermion.spark.sql`` (views of only the columns the query
   names), reported as the system ``fermion-sql``.

The answers (normalised rows) and the rows written per table are returned for the driver
to compare between the systems.
"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from benchmarks import tpch_queries as tpch
from benchmarks.config import WARMUP_RUNS
from benchmarks.spark_cases import SPARK_CONF

__all__ = ["NullSink", "digest", "measure"]


class _CountingWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        rows = 0
        for batch in iterator:
            rows += batch.num_rows
        return _Counted(rows)


class _Counted(WriterCommitMessage):
    """A task's commit message: the rows it was handed."""

    def __init__(self, rows: int) -> None:
        self.rows = rows


class NullSink(DataSource):
    """A Python data source whose writer receives every Arrow batch and keeps nothing.

    Its write time is what Spark's Python data source write path costs by itself (the
    Python workers and the Arrow hand-over from the JVM), the floor under any Python
    data source's write, Fermion's included.
    """

    @classmethod
    def name(cls) -> str:
        return tpch.NULL_SINK

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return _CountingWriter()


def digest(answer: list[tuple[Any, ...]]) -> str:
    """A short fingerprint of a normalised answer.

    Example:
        >>> digest([("a", "1")]) == digest([("a", "1")]) != digest([("a", "2")])
        True
    """
    return hashlib.sha256(repr(answer).encode()).hexdigest()[:16]


def _timed(
    op: Callable[[], Any], repeat: int, before: Callable[[], None] | None = None
) -> tuple[list[float], Any]:
    """Warm-up runs, then ``repeat`` timed runs of ``op``; (times, last result)."""
    result = None
    for _ in range(WARMUP_RUNS):
        if before is not None:
            before()
        result = op()
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.perf_counter()
        result = op()
        times.append(time.perf_counter() - t0)
    return times, result


def _case(times: list[float], check: dict[str, Any]) -> dict[str, Any]:
    return {"status": "ok", "value": statistics.median(times), "runs": times, "check": check}


def _error(exc: Exception) -> dict[str, Any]:
    return {"status": "error", "value": None, "note": f"{type(exc).__name__}: {exc}"[:300]}


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Write the tables, then time every query, as ``spec['system']``.

    ``spec``: ``system`` (``fermion`` | ``parquet``), ``source`` (the generated tables),
    ``work`` (a directory of this system's own), ``repeat``, ``queries`` (names).
    """
    import fermion.spark

    system, repeat = spec["system"], spec["repeat"]
    source, work = Path(spec["source"]), Path(spec["work"])
    started = time.perf_counter()
    spark = fermion.spark.session("fermion-bench-tpch", conf=SPARK_CONF)
    spark.sparkContext.setLogLevel("ERROR")
    startup = time.perf_counter() - started
    out: dict[str, Any] = {"status": "ok", "session_start_s": round(startup, 2), "queries": {}}
    try:
        try:
            times, rows = _timed(
                lambda: tpch.write_tables(spark, source, work, system),
                repeat,
                before=lambda: shutil.rmtree(work, ignore_errors=True),
            )
            out["write"] = _case(times, {"rows": sum(rows.values()), **rows})
        except Exception as exc:  # the queries cannot run without the tables
            out["write"] = _error(exc)
            return out
        if system == "fermion":  # the floor of a Python data source's write
            try:
                spark.dataSource.register(NullSink)
                times, rows = _timed(
                    lambda: tpch.write_tables(spark, source, work, "python-sink"), repeat
                )
                out["write_sink"] = _case(times, {"rows": sum(rows.values()), **rows})
            except Exception as exc:
                out["write_sink"] = _error(exc)
        modes: dict[str, dict[str, str] | None] = {"queries": None}
        if system == "fermion":  # also through fermion.spark.sql: only the named columns
            modes["queries_sql"] = tpch.table_uris(work)
        for key, tables in modes.items():
            out[key] = {}
            tpch.register_views(spark, work, system)
            for name in spec["queries"]:
                try:
                    times, answer = _timed(
                        lambda n=name, t=tables: tpch.run_query(spark, n, t), repeat
                    )
                    check = {"rows": len(answer), "digest": digest(answer)}
                    out[key][name] = _case(times, check)
                except Exception as exc:  # one failing query must not lose the others
                    out[key][name] = _error(exc)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return out
