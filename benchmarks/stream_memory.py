"""Streams into and out of a Fermion table (issue 15): memory stays bounded while DuckDB and
Polars read a table larger than memory should hold.

1. **write**: a generator-backed ``RecordBatchReader`` of ``--gb`` GB of Arrow data (int64
   and float64 columns made with numpy) is written with ``fermion.write_dataset``;
2. **read**: the same aggregate query runs in a fresh process per engine and path:

   - ``pyarrow``: the reference, ``pyarrow.compute`` over ``ds.to_batches()``;
   - ``duckdb-stream``: ``duckdb.sql("... from stream")`` over ``pa.RecordBatchReader
     .from_stream(ds)`` — the whole table, every column, through ``__arrow_c_stream__``;
   - ``duckdb-dataset``: ``duckdb.sql("... from ads")`` with ``ads = ds.arrow_dataset()``:
     DuckDB sees a ``pyarrow.dataset.Dataset`` and passes the query's columns and filter to
     ``ads.scanner()``, then reads ``scanner.to_reader()``;
   - ``polars-stream``: ``pl.scan_arrow_c_stream(ds.to_reader())`` (every column);
   - ``polars-dataset``: ``pl.scan_pyarrow_dataset(ds)`` (Polars passes columns and the
     filter to ``ds.to_batches``).

Every process reports its peak RSS (``getrusage``: the high-water mark of the whole
process, imports included) and its wall time; the results must equal pyarrow's exactly
(integer sums, and float sums of multiples of 1/8, which are exact in float64).

    python -m benchmarks.stream_memory --gb 4.3        # prints one JSON line per step
    python -m benchmarks.stream_memory --gb 0.3 --dir /tmp/s   # a quick one

Measured 2026-11-23 16:02-16:07 UTC (2 cores shared with other jobs, load average 13-17;
duckdb 2.0.0, polars 2.1.0, pyarrow 26.0.1): 4.3 GB of Arrow data (67,187,500 rows x 8
int64/float64 columns), 65 fragments, 1.0 GB on disk; the query keeps 33,599,270 rows and
every engine's result equals pyarrow's. Peak RSS is the whole process (its baseline after
imports: 136 MB for the write, 188 MB for the reads)::

    step              peak RSS   wall time
    write (stream)     333 MB     128.8 s
    pyarrow            431 MB      19.6 s
    duckdb-stream      594 MB      17.7 s   every column through __arrow_c_stream__
    duckdb-dataset     465 MB      17.2 s   columns + filter pushed into scanner()
    polars-stream      586 MB      13.3 s   every column through __arrow_c_stream__
    polars-dataset     454 MB       8.1 s   columns + filter pushed into ds.to_batches()

The duckdb-dataset row was measured with ``Dataset`` itself a ``pyarrow.dataset.Dataset``;
it is now ``ds.arrow_dataset()`` (same ``scanner()`` / ``to_reader()`` path). Re-run at
16:56 UTC (load average 6): 454 MB, 11.7 s, result equal.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT

ROWS_PER_BATCH = 1 << 20
COLUMNS = ["k", "v", "f", "g", "w0", "w1", "w2", "w3"]
ROW_BYTES = 8 * len(COLUMNS)  # every column is 8 bytes wide, no nulls
QUERY = (
    "select count(*) as n, sum(k) as sum_k, sum(v) as sum_v, sum(f) as sum_f, "
    "min(f) as min_f, max(f) as max_f from {name} where g < 500"
)
ENGINES = ["pyarrow", "duckdb-stream", "duckdb-dataset", "polars-stream", "polars-dataset"]


def schema() -> pa.Schema:
    """The table's schema: ``k`` (row number), ``v``, ``g`` and four filler int64 columns,
    and ``f = v / 8`` as float64."""
    return pa.schema([(c, pa.float64() if c == "f" else pa.int64()) for c in COLUMNS])


def batches(
    rows: int, batch_rows: int = ROWS_PER_BATCH, seed: int = 15
) -> Iterator[pa.RecordBatch]:
    """``rows`` rows in batches of ``batch_rows``, made as they are asked for."""
    rng = np.random.default_rng(seed)
    for start in range(0, rows, batch_rows):
        n = min(batch_rows, rows - start)
        v = rng.integers(0, 10_000, n)
        columns = {
            "k": np.arange(start, start + n, dtype=np.int64),
            "v": v,
            "f": v * 0.125,
            "g": rng.integers(0, 1_000, n),
        }
        for i in range(4):
            columns[f"w{i}"] = rng.integers(0, 1 << 20, n)
        yield pa.RecordBatch.from_pydict(columns, schema=schema())


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write(uri: str, rows: int, rows_per_file: int, batch_rows: int) -> dict[str, Any]:
    """Write the generated stream as a table; the reader is never materialised."""
    import fermion

    base = peak_rss_mb()
    started = time.perf_counter()
    reader = pa.RecordBatchReader.from_batches(schema(), batches(rows, batch_rows))
    ds = fermion.write_dataset(reader, uri, max_rows_per_file=rows_per_file)
    return {
        "rows": ds.count_rows(),
        "fragments": len(ds.fragments),
        "arrow_gb": round(rows * ROW_BYTES / 1e9, 2),
        "disk_gb": round(sum(f.files[0].size_bytes for f in ds.fragments) / 1e9, 2),
        "seconds": round(time.perf_counter() - started, 1),
        "baseline_rss_mb": round(base),
    }


def _pyarrow(ds: Any) -> dict[str, Any]:
    n = sum_k = sum_v = 0
    sum_f = 0.0
    low, high = float("inf"), float("-inf")
    for batch in ds.to_batches(["k", "v", "f"], pc.field("g") < 500):
        n += batch.num_rows
        sum_k += pc.sum(batch.column("k")).as_py() or 0
        sum_v += pc.sum(batch.column("v")).as_py() or 0
        sum_f += pc.sum(batch.column("f")).as_py() or 0.0
        bounds = pc.min_max(batch.column("f"))
        low, high = min(low, bounds["min"].as_py()), max(high, bounds["max"].as_py())
    return {"n": n, "sum_k": sum_k, "sum_v": sum_v, "sum_f": sum_f, "min_f": low, "max_f": high}


def read(uri: str, engine: str) -> dict[str, Any]:
    """Run the query with ``engine``; returns its result, time and memory."""
    import duckdb
    import polars as pl

    import fermion

    base = peak_rss_mb()
    started = time.perf_counter()
    ds = fermion.dataset(uri)
    keys = ["n", "sum_k", "sum_v", "sum_f", "min_f", "max_f"]
    if engine == "pyarrow":
        result = _pyarrow(ds)
    elif engine == "duckdb-stream":
        stream = pa.RecordBatchReader.from_stream(ds)  # noqa: F841 - found by name
        result = dict(zip(keys, duckdb.sql(QUERY.format(name="stream")).fetchall()[0], strict=True))
    elif engine == "duckdb-dataset":
        ads = ds.arrow_dataset()  # noqa: F841 - found by name
        result = dict(zip(keys, duckdb.sql(QUERY.format(name="ads")).fetchall()[0], strict=True))
    elif engine in ("polars-stream", "polars-dataset"):
        lazy = (
            pl.scan_arrow_c_stream(ds.to_reader())
            if engine == "polars-stream"
            else pl.scan_pyarrow_dataset(ds)
        )
        frame = (
            lazy.filter(pl.col("g") < 500)
            .select(
                pl.len().alias("n"),
                pl.col("k").sum().alias("sum_k"),
                pl.col("v").sum().alias("sum_v"),
                pl.col("f").sum().alias("sum_f"),
                pl.col("f").min().alias("min_f"),
                pl.col("f").max().alias("max_f"),
            )
            .collect()
        )
        result = frame.row(0, named=True)
    else:
        raise SystemExit(f"unknown engine {engine!r}")
    result = {k: (int(v) if k != "sum_f" and k != "min_f" and k != "max_f" else float(v))
              for k, v in result.items()}  # fmt: skip
    return {
        "result": result,
        "seconds": round(time.perf_counter() - started, 1),
        "baseline_rss_mb": round(base),
    }


def _child(step: str, uri: str, rows: int, rows_per_file: int, batch_rows: int) -> dict[str, Any]:
    """Run one step in a fresh interpreter (its peak RSS is that step's alone)."""
    command = [sys.executable, "-m", "benchmarks.stream_memory", "--step", step, "--dir", uri]
    command += ["--rows", str(rows), "--rows-per-file", str(rows_per_file)]
    command += ["--batch-rows", str(batch_rows)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{step} failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(
    rows: int,
    directory: str | None,
    engines: list[str],
    rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
    batch_rows: int = ROWS_PER_BATCH,
) -> list[dict[str, Any]]:
    """Write, then read with every engine; every row carries ``peak_rss_mb``."""
    sizes = (rows_per_file, batch_rows)
    root = directory or tempfile.mkdtemp(prefix="fermion-stream-")
    uri = os.path.join(root, "table")
    shutil.rmtree(uri, ignore_errors=True)
    rows_out = [{"step": "write", **_child("write", uri, rows, *sizes)}]
    print(json.dumps(rows_out[-1]), flush=True)
    try:
        for engine in engines:
            rows_out.append({"step": engine, **_child(engine, uri, rows, *sizes)})
            print(json.dumps(rows_out[-1]), flush=True)
    finally:
        if directory is None:
            shutil.rmtree(root, ignore_errors=True)
    reference = rows_out[1]["result"] if engines and engines[0] == "pyarrow" else None
    for row in rows_out[1:]:
        row["equal_to_pyarrow"] = reference is not None and row["result"] == reference
    return rows_out


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--gb`` of Arrow data (or ``--rows``), ``--dir`` to keep the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=4.3, help="Arrow size of the table in GB")
    parser.add_argument("--rows", type=int, default=None, help="rows (overrides --gb)")
    parser.add_argument("--dir", default=None, help="folder for the table (kept)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated")
    parser.add_argument(
        "--rows-per-file", type=int, default=MAX_ROWS_PER_FILE_DEFAULT, help="rows per fragment"
    )
    parser.add_argument(
        "--batch-rows", type=int, default=ROWS_PER_BATCH, help="rows per generated batch"
    )
    parser.add_argument("--step", default=None, help=argparse.SUPPRESS)  # one child step
    args = parser.parse_args(argv)
    rows = args.rows if args.rows is not None else int(args.gb * 1e9 / ROW_BYTES)
    if args.step is not None:
        if args.step == "write":
            out = write(args.dir, rows, args.rows_per_file, args.batch_rows)
        else:
            out = read(args.dir, args.step)
        out["peak_rss_mb"] = round(peak_rss_mb())
        print(json.dumps(out))
        return 0
    engines = [e for e in args.engines.split(",") if e]
    results = run(rows, args.dir, engines, args.rows_per_file, args.batch_rows)
    summary = {
        r["step"]: (r["peak_rss_mb"], r["seconds"], r.get("equal_to_pyarrow")) for r in results
    }
    print(json.dumps({"summary": summary}))
    return 0 if all(r.get("equal_to_pyarrow", True) for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
