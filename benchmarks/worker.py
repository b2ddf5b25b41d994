"""The subprocess that prepares one file or times one (case, system).

Run as ``python -m benchmarks.worker '<json spec>'``; prints one line
``BENCH-RESULT <json>`` on stdout. A fresh process per measurement makes
``ru_maxrss`` (peak resident set size) a per-(scenario, system) figure.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks import datagen, systems
from benchmarks.config import RESULT_MARKER, WARMUP_RUNS
from benchmarks.prepare import write_dataset_copy
from benchmarks.scenarios import Case, Dataset

__all__ = ["RESULT_MARKER", "main", "measure"]


def _max_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _num_rows(case: Case, data_dir: Path) -> int:
    ds = case.dataset
    if ds.family == "lineitem":
        return pq.ParquetFile(datagen.lineitem_source(data_dir, ds.scale)).metadata.num_rows
    return ds.rows


def _expected_shape(case: Case, data_dir: Path) -> tuple[int, int] | None:
    """(rows, columns) a correct result has, where the case determines it."""
    if case.kind == "read" and case.columns is not None:
        return case.dataset.rows, len(case.columns)
    if case.kind == "take":
        return min(case.take_count, _num_rows(case, data_dir)), -1
    if case.kind == "scan":
        return _num_rows(case, data_dir), -1
    return None


def _operation(
    case: Case, system: systems.System, path: Path, data_dir: Path, tmp: Path
) -> tuple[Callable[[], Any], Callable[[], None]]:
    """The timed operation and the untimed step run before each repetition."""
    cols = None if case.columns is None else list(case.columns)

    def nothing() -> None:
        return None

    if case.kind == "schema":
        return (lambda: system.schema(path)), nothing
    if case.kind in ("read", "scan"):
        return (lambda: system.read(path, cols)), nothing
    if case.kind == "take":
        indices = datagen.take_indices(_num_rows(case, data_dir), case.take_count)
        return (lambda: system.take(path, indices)), nothing
    if case.kind == "write":
        table = case.dataset.build(data_dir)
        return (lambda: system.write(table, tmp)), (lambda: system.remove(tmp))
    raise ValueError(f"nothing to time for kind {case.kind!r}")


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Time ``spec['case']`` for ``spec['system']``: warm-up, then ``repeat`` timed runs."""
    case = Case.from_json(spec["case"])
    system = systems.get(spec["system"])
    data_dir = Path(spec["data_dir"])
    path = Path(spec["path"])
    tmp = data_dir / "tmp" / f"write-{system.name}{system.suffix}"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    rss_start = _max_rss_mb()
    op, before_each = _operation(case, system, path, data_dir, tmp)
    rss_setup = _max_rss_mb()
    pool = pa.default_memory_pool()

    before_each()
    result = op()  # warm-up, also checked for shape
    problem = None
    expected = _expected_shape(case, data_dir)
    if expected is not None and isinstance(result, pa.Table):
        rows, ncols = expected
        if result.num_rows != rows or (ncols >= 0 and result.num_columns != ncols):
            problem = (
                f"wrong result shape: {result.num_rows} rows x {result.num_columns} cols, "
                f"expected {rows} rows" + (f" x {ncols} cols" if ncols >= 0 else "")
            )
    del result
    for _ in range(WARMUP_RUNS - 1):
        before_each()
        op()
    times = []
    for _ in range(spec["repeat"]):
        before_each()
        t0 = time.perf_counter()
        op()
        times.append(time.perf_counter() - t0)
    rss_peak = _max_rss_mb()
    pool_peak = pool.max_memory()
    system.remove(tmp)
    io: dict[str, Any] = {}
    if case.kind in ("schema", "read"):
        columns = None if case.columns is None else list(case.columns)
        io = system.io_probe(path, columns, read=case.kind == "read")
    elif case.kind == "take":
        io = system.take_io(path, datagen.take_indices(_num_rows(case, data_dir), case.take_count))
    return {
        "status": "ok" if problem is None else "wrong-result",
        "value": statistics.median(times),
        "unit": "s",
        "runs": times,
        "peak_rss_mb": round(rss_peak, 1),
        "rss_after_import_mb": round(rss_start, 1),
        "rss_after_setup_mb": round(rss_setup, 1),
        "arrow_pool_peak_mb": None if pool_peak is None else round(pool_peak / 2**20, 1),
        "io": io,
        "note": problem or "",
    }


def prepare(spec: dict[str, Any]) -> dict[str, Any]:
    """Write ``spec['system']``'s copy of ``spec['dataset']`` to ``spec['path']``."""
    t0 = time.perf_counter()
    check = write_dataset_copy(
        Path(spec["data_dir"]),
        Dataset.from_json(spec["dataset"]),
        spec["system"],
        Path(spec["path"]),
    )
    return {"status": "ok", "seconds": time.perf_counter() - t0, "check": check}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(args[0])
    if spec["mode"] == "spark":  # imports pyspark: only in the Spark cases' workers
        from benchmarks import spark_cases

        out = spark_cases.measure(spec)
    elif spec["mode"] == "spark-tpch":
        from benchmarks import tpch_cases

        out = tpch_cases.measure(spec)
    elif spec["mode"] == "spark-prepare":
        from benchmarks import spark_bench

        out = spark_bench.prepare_input(spec)
    else:
        out = prepare(spec) if spec["mode"] == "prepare" else measure(spec)
    print(RESULT_MARKER + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
