"""The Spark cases, run inside one worker process per (scenario, system).

One worker process per system starts one ``local[2]`` SparkSession (untimed: JVM start-up
is not part of any figure), then measures every case in turn: an untimed warm-up run,
then the timed runs. The two systems are ``fermion`` (the ``fermion`` data source, the
ingest and compact job libraries) and ``parquet`` (Spark's built-in Parquet source and
writer) on the same data.

Every case computes a check after its last run (untimed): an aggregate over the result
(row count, sum of every numeric column, max of every other one). The runner compares it
between the two systems and with the source's row count.

Peak RSS here is the largest sampled sum of the resident set sizes of the worker's whole
process tree (the Python driver, the JVM it starts and Spark's Python workers) while the
case runs; the memory a previous case left in use (the JVM keeps its heap) is included.
"""

from __future__ import annotations

import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchmarks.config import WARMUP_RUNS

__all__ = [
    "BACKFILL_COLUMN",
    "RSS_SAMPLE_S",
    "SPARK_CONF",
    "SPARK_SCENARIOS",
    "TreeRss",
    "aggregate_check",
    "id_layout",
    "measure",
]

#: Settings of the benchmark's session (both systems): 2 local cores, the same heap.
SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.driver.memory": "2g",
    "spark.ui.enabled": "false",
}

#: Stable scenario ids of the Spark cases, in report order, with what each one times.
SPARK_SCENARIOS: dict[str, str] = {
    "spark_lineitem_agg": "Spark: load lineitem + count and sum/max of every column",
    "spark_wide_read10": "Spark: load 10 of the wide table's columns + count and sums",
    "spark_ingest": "Spark: the ingest job (fermion) vs read + df.write.parquet (parquet)",
    "spark_migrate": "Spark: the migrate_parquet job, verified (fermion) vs read + "
    "df.write.parquet (parquet)",
    "spark_compact": "Spark: the compact job (fermion) vs read small files + coalesce + write",
    "spark_backfill": "Spark: the backfill_columns job adding 1 column (fermion) vs read + "
    "withColumn + df.write.parquet (parquet)",
}

#: The column the backfill case adds, as SQL (the same text for both systems).
BACKFILL_COLUMN = ("l_rowkey", "l_orderkey * 8 + l_linenumber")

#: Seconds between two samples of the process tree's resident memory.
RSS_SAMPLE_S = 0.2


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class TreeRss:
    """Samples the summed RSS of a process and all its descendants in a thread."""

    def __init__(self, root: int | None = None, interval: float = RSS_SAMPLE_S) -> None:
        self.root = os.getpid() if root is None else root
        self.interval = interval
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> float:
        """The tree's current summed RSS (MB); also updates :attr:`peak_mb`."""
        children = _children_map()
        todo, total = [self.root], 0.0
        while todo:
            pid = todo.pop()
            total += _rss_mb(pid)
            todo.extend(children.get(pid, []))
        self.peak_mb = max(self.peak_mb, total)
        return total

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> None:
        self.sample()
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self.sample()
        return self.peak_mb


def _plain(value: Any) -> Any:
    """A JSON-able, exactly comparable form of one aggregate value."""
    if isinstance(value, Decimal | int) or value is None:
        return str(value)
    if isinstance(value, float):
        return value
    return str(value)


def aggregate_check(df: Any) -> dict[str, Any]:
    """``{"rows": n, "sum(c)"/"max(c)": value, ...}`` over every column of ``df``.

    Numeric columns are summed, the others (strings, dates, ...) give their maximum.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType

    aggregates = [F.count(F.lit(1)).alias("rows")]
    names = ["rows"]
    for i, field in enumerate(df.schema.fields):
        column = F.col(f"`{field.name}`")
        kind = "sum" if isinstance(field.dataType, NumericType) else "max"
        aggregates.append((F.sum(column) if kind == "sum" else F.max(column)).alias(f"a{i}"))
        names.append(f"{kind}({field.name})")
    row = df.agg(*aggregates).collect()[0]
    return {name: _plain(value) for name, value in zip(names, row, strict=True)}


def id_layout(runs: list[Any]) -> str:
    """``"sorted, disjoint"`` if every run of ids (one per output file, an array-like of
    integers) is non-decreasing and the runs' ranges do not overlap, else what is wrong.

    Example:
        >>> id_layout([[1, 2, 2], [5, 9], []])
        'sorted, disjoint'
        >>> id_layout([[1, 5], [3, 9]])
        'ranges overlap: [1, 5] and [3, 9]'
    """
    import numpy as np

    spans = []
    for k, run in enumerate(runs):
        ids = np.asarray(run)
        if ids.size == 0:
            continue
        if np.any(ids[1:] < ids[:-1]):
            return f"file {k} is not sorted by id"
        spans.append((int(ids[0]), int(ids[-1])))
    spans.sort()
    for a, b in zip(spans, spans[1:], strict=False):
        if b[0] <= a[1]:
            return f"ranges overlap: [{a[0]}, {a[1]}] and [{b[0]}, {b[1]}]"
    return "sorted, disjoint"


def _fermion_layout(uri: str, column: str) -> str:
    from fermion.table import dataset
    from fermion.table.scan import read_fragment

    ds = dataset(uri)
    return id_layout(
        [
            read_fragment(ds.storage, ds.table_schema, f, [column])[column].to_numpy()
            for f in ds.fragments
        ]
    )


def _parquet_layout(directory: Path, column: str) -> str:
    import pyarrow.parquet as pq

    files = sorted(directory.glob("*.parquet"))
    return id_layout([pq.read_table(f, columns=[column])[column].to_numpy() for f in files])


def _fresh(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


Operation = tuple[Callable[[], Any], Callable[[], None], Callable[[], dict[str, Any]]]


def _operation(spark: Any, spec: dict[str, Any]) -> Operation:
    """(timed operation, untimed step before each run, untimed check after the last)."""
    import fermion.spark

    scenario, system, paths = spec["scenario"], spec["system"], spec["paths"]
    work = Path(paths["work"])

    def nothing() -> None:
        return None

    if scenario in ("spark_lineitem_agg", "spark_wide_read10"):
        columns = spec.get("columns")

        def load() -> Any:
            if system == "fermion" and columns is None:
                return spark.read.format("fermion").load(paths["table"])
            if system == "fermion":
                return fermion.spark.read_dataset(spark, paths["table"], columns=columns)
            frame = spark.read.parquet(paths["parquet"])
            return frame if columns is None else frame.select(*columns)

        return (lambda: aggregate_check(load())), nothing, lambda: aggregate_check(load())

    if scenario == "spark_ingest":
        if system == "fermion":
            from fermion.spark.jobs.config import IngestConfig
            from fermion.spark.jobs.ingest import ingest
            from fermion.spark.jobs.runner import JobContext

            config = IngestConfig(
                table=str(work), source=paths["parquet"],
                batch_id_column=spec.get("batch_id_column"),
            )  # fmt: skip
            config.check()
            context = JobContext("ingest", {}, spark)

            def run_ingest() -> Any:
                result = ingest(context, config)
                if result.committed_version is None:
                    raise RuntimeError(f"the ingest committed nothing: {result.extra}")
                return result

            def check_ingest() -> dict[str, Any]:
                return aggregate_check(spark.read.format("fermion").load(str(work)))

            return run_ingest, (lambda: _fresh(work)), check_ingest

        def write_parquet() -> None:
            spark.read.parquet(paths["parquet"]).write.parquet(str(work))

        def check_write() -> dict[str, Any]:
            return aggregate_check(spark.read.parquet(str(work)))

        return write_parquet, (lambda: _fresh(work)), check_write

    if scenario == "spark_migrate":
        if system == "fermion":
            from fermion.spark.jobs.config import MigrateParquetConfig
            from fermion.spark.jobs.migrate_parquet import migrate_parquet
            from fermion.spark.jobs.runner import JobContext

            migrate = MigrateParquetConfig(table=str(work), source=paths["parquet"])
            migrate.check()
            job = JobContext("migrate_parquet", {}, spark)

            def run_migrate() -> Any:
                result = migrate_parquet(job, migrate)
                if result.committed_version is None or not result.extra["verified"]:
                    raise RuntimeError(f"the migration committed nothing: {result.extra}")
                return result

            def check_migrate() -> dict[str, Any]:
                return aggregate_check(spark.read.format("fermion").load(str(work)))

            return run_migrate, (lambda: _fresh(work)), check_migrate

        def copy_parquet() -> None:
            spark.read.parquet(paths["parquet"]).write.parquet(str(work))

        def check_copy() -> dict[str, Any]:
            return aggregate_check(spark.read.parquet(str(work)))

        return copy_parquet, (lambda: _fresh(work)), check_copy

    if scenario == "spark_compact":
        batch_id = spec.get("batch_id_column")
        if system == "fermion":
            from fermion.spark.jobs.config import CompactConfig
            from fermion.spark.jobs.maintenance import compact
            from fermion.spark.jobs.runner import JobContext
            from fermion.table import dataset

            config = CompactConfig(table=str(work), target_rows_per_fragment=spec["target_rows"])
            config.check()
            context = JobContext("compact", {}, spark)

            def restore() -> None:
                _fresh(work)
                shutil.copytree(paths["table"], work)

            def run_compact() -> Any:
                result = compact(context, config)
                if result.committed_version is None:
                    raise RuntimeError("the compaction committed nothing")
                return result

            def check_compact() -> dict[str, Any]:
                out = aggregate_check(spark.read.format("fermion").load(str(work)))
                out["files_out"] = len(dataset(str(work)).fragments)
                if batch_id:
                    out["layout"] = _fermion_layout(str(work), batch_id)
                return out

            return run_compact, restore, check_compact

        def rewrite() -> None:
            frame = spark.read.parquet(paths["parquet_files"])
            if batch_id:
                frame = frame.repartitionByRange(spec["files_out"], batch_id)
                frame.sortWithinPartitions(batch_id).write.parquet(str(work))
            else:
                frame.coalesce(spec["files_out"]).write.parquet(str(work))

        def check_rewrite() -> dict[str, Any]:
            out = aggregate_check(spark.read.parquet(str(work)))
            out["files_out"] = len(list(work.glob("*.parquet")))
            if batch_id:
                out["layout"] = _parquet_layout(work, batch_id)
            return out

        return rewrite, (lambda: _fresh(work)), check_rewrite

    if scenario == "spark_backfill":
        name, expression = BACKFILL_COLUMN
        if system == "fermion":
            from fermion.spark.jobs.backfill_columns import backfill_columns
            from fermion.spark.jobs.config import BackfillColumnsConfig
            from fermion.spark.jobs.runner import JobContext

            backfill = BackfillColumnsConfig(table=str(work), columns={name: expression})
            backfill.check()
            job = JobContext("backfill_columns", {}, spark)

            def restore_table() -> None:
                _fresh(work)
                shutil.copytree(paths["table"], work)

            def run_backfill() -> Any:
                result = backfill_columns(job, backfill)
                if result.committed_version is None:
                    raise RuntimeError(f"the backfill committed nothing: {result.extra}")
                return result

            def check_backfill() -> dict[str, Any]:
                return aggregate_check(spark.read.format("fermion").load(str(work)))

            return run_backfill, restore_table, check_backfill

        def rewrite_with_column() -> None:
            from pyspark.sql import functions as F

            frame = spark.read.parquet(paths["parquet"])
            frame.withColumn(name, F.expr(expression)).write.parquet(str(work))

        def check_rewrite_with_column() -> dict[str, Any]:
            return aggregate_check(spark.read.parquet(str(work)))

        return rewrite_with_column, (lambda: _fresh(work)), check_rewrite_with_column

    raise ValueError(f"unknown Spark scenario {scenario!r}")


def _measure_case(spark: Any, spec: dict[str, Any], rss: TreeRss) -> dict[str, Any]:
    """Warm up, time ``spec['repeat']`` runs, check the result (the session is running)."""
    work = Path(spec["paths"]["work"])
    rss.peak_mb = rss.sample()  # this case's peak starts from the memory in use now
    try:
        op, before_each, check = _operation(spark, spec)
        for _ in range(WARMUP_RUNS):
            before_each()
            op()
        times = []
        for _ in range(spec["repeat"]):
            before_each()
            t0 = time.perf_counter()
            op()
            times.append(time.perf_counter() - t0)
        result = check()
        rss.sample()
    except Exception as exc:  # one failing case must not lose the others
        return {"status": "error", "value": None, "note": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        _fresh(work)
    return {
        "status": "ok",
        "value": statistics.median(times),
        "unit": "s",
        "runs": times,
        "peak_rss_mb": round(rss.peak_mb, 1),
        "check": result,
        "note": "",
    }


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Start one session (untimed), then measure every case of ``spec['cases']`` in turn.

    Each case: ``scenario``, ``system`` (``fermion`` | ``parquet``), ``paths`` (``work``
    plus its inputs), ``repeat`` and its own keys. Returns ``{"status": "ok", "cases":
    [result, ...], "session_start_s": ...}``.
    """
    import fermion.spark

    rss = TreeRss()
    rss.start()
    started = time.perf_counter()
    spark = fermion.spark.session("fermion-bench", conf=SPARK_CONF)
    spark.sparkContext.setLogLevel("ERROR")
    startup = time.perf_counter() - started
    try:
        results = [_measure_case(spark, case, rss) for case in spec["cases"]]
    finally:
        rss.stop()
        spark.stop()
    return {"status": "ok", "cases": results, "session_start_s": round(startup, 2)}
