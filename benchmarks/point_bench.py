"""Point access benchmark (issue 16): batch lookups and ``take`` on shapes beyond the others.

Two families, each against pyarrow.parquet and pylance in the same run:

- **batch lookup**: 4,000 batches of 1-64 rows of 300 float32 columns and one
  ``list<int64>`` column (about 130k rows), written by ``append_batch`` with default
  options. 200 lookups of one random batch, 50 columns (49 float32 and the list), a fresh
  reader per lookup: ``FileReader.read_batches([id])`` against
  ``pq.read_table(path, filters=[("batch_id", "=", id)])`` on the same data with
  20,000-row row groups (zstd), and against Lance's ``take`` of the same rows (a fresh
  ``lance.dataset`` per lookup). Bytes read per lookup are counted for Fermion.
- **lineitem with float64 prices**: TPC-H lineitem (``tpchgen-cli``) with its decimals
  cast to float64, as many ML pipelines store prices. ``take`` of 1,000 random rows
  (sorted, all columns, fresh reader) against Lance's file reader ``take_rows``; the
  full scan against ``pq.read_table`` (zstd, default row groups); the bytes a ``take``
  reads through fsspec (``FsspecSource``) as a fraction of the file; and ``take`` per
  column against Lance.

Medians of ``FERMION_BENCH_REPEAT`` runs (default 5), the systems compared timed
round-robin after one warm-up call each (a run of each, then the next round), so that each
sees the same load drift on a shared machine. Files are written once into
``FERMION_BENCH_DATA_DIR`` (default ``.bench-data/``) and reused.

    python -m benchmarks.point_bench [batch|lineitem]   # prints the result rows as JSON
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import fermion
from benchmarks.config import DEFAULT_DATA_DIR
from benchmarks.timing import interleaved_ms

SCENARIO_BATCH = "point_batch_lookup"
SCENARIO_LINEITEM = "point_lineitem_f64"
__all__ = ["run", "run_batch_lookup", "run_lineitem"]


def _medians_ms(fns: dict[str, Callable[[], Any]], runs: int) -> dict[str, float]:
    """Median milliseconds of each system's call: one warm-up call each, then ``runs``
    rounds of one call of each in turn (:func:`benchmarks.timing.interleaved_ms`)."""
    return {k: statistics.median(v) for k, v in interleaved_ms(fns, runs, warmup=True).items()}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _data_dir() -> Path:
    return Path(os.environ.get("FERMION_BENCH_DATA_DIR", DEFAULT_DATA_DIR)) / "point"


def _tag() -> str:
    """Files are rewritten when the writer's format version changes."""
    from fermion.format.metadata.structs import FORMAT_VERSION_MAJOR, FORMAT_VERSION_MINOR

    return f"v{FORMAT_VERSION_MAJOR}_{FORMAT_VERSION_MINOR}"


# -- batch lookup -------------------------------------------------------------------------


def batch_table(
    num_batches: int, columns: int, seed: int
) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """(table with ``batch_id``, batch ids, batch sizes)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 65, num_batches)
    ids = np.cumsum(rng.integers(1, 10, num_batches)).astype(np.int64) + 1_000_000
    rows = int(sizes.sum())
    cols: dict[str, Any] = {"batch_id": np.repeat(ids, sizes)}
    cols.update({f"f{i:03d}": rng.random(rows, dtype=np.float32) for i in range(columns)})
    lengths = rng.integers(0, 9, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = pa.array(rng.integers(0, 1 << 40, int(lengths.sum())))
    cols["tags"] = pa.ListArray.from_arrays(pa.array(offsets), values)
    return pa.table(cols), ids, sizes


def run_batch_lookup(
    results: list[dict[str, Any]],
    *,
    num_batches: int = 4_000,
    columns: int = 300,
    project: int = 50,
    lookups: int = 200,
    runs: int = 5,
    seed: int = 0,
) -> None:
    """Append the batch-lookup rows to ``results``."""
    table, ids, sizes = batch_table(num_batches, columns, seed)
    rng = np.random.default_rng(seed + 1)
    wanted = rng.choice(ids, size=lookups, replace=True)
    floats = sorted(rng.choice(columns, size=project - 1, replace=False).tolist())
    names = [f"f{i:03d}" for i in floats] + ["tags"]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    where = np.searchsorted(ids, wanted)
    rows_of = [np.arange(starts[k], starts[k] + sizes[k]) for k in where.tolist()]
    expected_rows = int(sizes[where].sum())
    out = _data_dir() / f"batch-{num_batches}x{columns}-{seed}"
    out.mkdir(parents=True, exist_ok=True)

    def add(system: str, metric: str, value: float, unit: str) -> None:
        results.append(
            {
                "scenario": SCENARIO_BATCH,
                "system": system,
                "metric": metric,
                "value": value,
                "unit": unit,
                "load": _load(),
            }
        )

    fpath = out / f"t-{_tag()}.fermion"
    if not fpath.exists():
        user = table.drop_columns(["batch_id"])
        tmp = fpath.with_suffix(".tmp")
        t0 = time.perf_counter()
        with fermion.FileWriter(tmp, user.schema) as w:
            for k, bid in enumerate(ids.tolist()):
                w.append_batch(bid, user.slice(int(starts[k]), int(sizes[k])))
        add("fermion", "write_s", time.perf_counter() - t0, "s")
        tmp.rename(fpath)
    add("fermion", "file_mb", fpath.stat().st_size / 1e6, "MB")
    ppath = out / "t.parquet"
    if not ppath.exists():
        pq.write_table(table, ppath, row_group_size=20_000, compression="zstd")
    lpath = out / "t.lance"
    has_lance = lance_installed()  # the bench extra; without it Lance's rows are left out
    if has_lance and not lpath.exists():
        import lance

        lance.write_dataset(table, str(lpath))
    io: dict[str, float] = {}

    def fermion_lookups() -> None:
        got = nbytes = 0
        for bid in wanted.tolist():
            with fermion.FileReader(fpath) as r:
                got += r.read_batches([bid], columns=names).num_rows
                nbytes += r.source.stats.bytes_read
        assert got == expected_rows
        io["bytes"] = nbytes / lookups

    def parquet_lookups() -> None:
        got = 0
        for bid in wanted.tolist():
            got += pq.read_table(ppath, columns=names, filters=[("batch_id", "=", bid)]).num_rows
        assert got == expected_rows

    def lance_lookups() -> None:
        import lance

        got = 0
        for rows in rows_of:
            got += lance.dataset(str(lpath)).take(rows.tolist(), columns=names).num_rows
        assert got == expected_rows

    systems = {"fermion": fermion_lookups, "parquet": parquet_lookups}
    if has_lance:
        systems["lance"] = lance_lookups
    for system, ms in _medians_ms(systems, runs).items():
        add(system, "lookup_ms", ms / lookups, "ms")
    add("fermion", "bytes_per_lookup", io["bytes"], "bytes")
    with fermion.FileReader(fpath, memory_map=False) as r:  # pread: bytes really read
        opened = r.source.stats.bytes_read  # the open's tail read (footer, schema, CMBs)
        r.read_batches([int(wanted[0])], columns=names)
        add("fermion", "pread_open_bytes", opened, "bytes")
        add("fermion", "pread_bytes_per_lookup", r.source.stats.bytes_read - opened, "bytes")


# -- lineitem with float64 prices ---------------------------------------------------------


def lineitem_f64(scale: float) -> pa.Table:
    """TPC-H lineitem with every decimal column cast to float64."""
    from benchmarks import datagen

    data_dir = Path(os.environ.get("FERMION_BENCH_DATA_DIR", DEFAULT_DATA_DIR))
    table = datagen.load_lineitem(datagen.lineitem_source(data_dir, scale))
    fields = [
        pa.field(f.name, pa.float64() if pa.types.is_decimal(f.type) else f.type, f.nullable)
        for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def lance_installed() -> bool:
    """Whether pylance (the ``bench`` extra) is importable."""
    return importlib.util.find_spec("lance") is not None


def run_lineitem(
    results: list[dict[str, Any]], *, scale: float = 1.0, runs: int = 5, per_column: bool = True
) -> None:
    """Append the lineitem-with-float64-prices rows to ``results``."""
    from benchmarks import datagen

    out = _data_dir() / f"lineitem-f64-sf{scale:g}"
    out.mkdir(parents=True, exist_ok=True)
    fpath, ppath, lpath = out / f"t-{_tag()}.fermion", out / "t.parquet", out / "t.lance"
    has_lance = lance_installed()  # the bench extra; without it Lance's rows are left out
    table: pa.Table | None = None
    if not (fpath.exists() and ppath.exists() and (lpath.exists() or not has_lance)):
        table = lineitem_f64(scale)
    if not fpath.exists():
        assert table is not None
        fermion.write_table(table, fpath.with_suffix(".tmp"))
        fpath.with_suffix(".tmp").rename(fpath)
    if not ppath.exists():
        assert table is not None
        pq.write_table(table, ppath, compression="zstd")
    if has_lance and not lpath.exists():
        from lance.file import LanceFileWriter

        assert table is not None
        with LanceFileWriter(str(lpath), table.schema) as writer:
            writer.write_batch(table)
    del table

    num_rows = fermion.FileReader(fpath).num_rows
    idx = datagen.take_indices(num_rows, 1_000)

    def add(system: str, metric: str, value: float, unit: str) -> None:
        results.append(
            {
                "scenario": SCENARIO_LINEITEM,
                "system": system,
                "metric": metric,
                "value": value,
                "unit": unit,
                "load": _load(),
            }
        )

    add("fermion", "file_mb", fpath.stat().st_size / 1e6, "MB")
    add("parquet", "file_mb", ppath.stat().st_size / 1e6, "MB")
    if has_lance:
        add("lance", "file_mb", lpath.stat().st_size / 1e6, "MB")

    def takes(columns: list[str] | None) -> dict[str, Callable[[], Any]]:
        fns: dict[str, Callable[[], Any]] = {
            "fermion": lambda: fermion.FileReader(fpath).take(idx, columns=columns)
        }
        if has_lance:
            from lance.file import LanceFileReader

            fns["lance"] = lambda: (
                LanceFileReader(str(lpath), columns=columns).take_rows(idx.tolist()).to_table()
            )
        return fns

    for system, ms in _medians_ms(takes(None), runs).items():
        add(system, "take1000_ms", ms, "ms")
    scans = {"fermion": lambda: fermion.read_table(fpath), "parquet": lambda: pq.read_table(ppath)}
    for system, ms in _medians_ms(scans, runs).items():
        add(system, "scan_ms", ms, "ms")
    with fermion.FileReader((fsspec.filesystem("file"), str(fpath))) as r:
        opened = r.source.stats.bytes_read  # the open's tail read (footer, schema, CMBs)
        r.take(idx)
        taken = r.source.stats.bytes_read - opened
        add("fermion", "fsspec_open_bytes", opened, "bytes")
        add("fermion", "fsspec_take_bytes", taken, "bytes")
        add("fermion", "fsspec_take_fraction", taken / r.source.size, "")
    if per_column:
        for name in fermion.FileReader(fpath).schema.names:
            for system, ms in _medians_ms(takes([name]), runs).items():
                add(system, f"take1000_ms[{name}]", ms, "ms")


def run(results: list[dict[str, Any]]) -> None:
    """The ``make bench`` entry point (``benchmarks/run.py`` extra module)."""
    quick = os.environ.get("FERMION_BENCH_QUICK") == "1"
    runs = int(os.environ.get("FERMION_BENCH_REPEAT", "5"))
    if quick:
        run_batch_lookup(results, num_batches=200, columns=30, project=10, lookups=20, runs=runs)
        run_lineitem(results, scale=0.01, runs=runs, per_column=False)
    else:
        run_batch_lookup(results, runs=runs)
        run_lineitem(results, runs=runs)


if __name__ == "__main__":
    rows: list[dict[str, Any]] = []
    which = sys.argv[1:] or ["batch", "lineitem"]
    if "batch" in which:
        run_batch_lookup(rows)
    if "lineitem" in which:
        run_lineitem(rows)
    if "clean" in which:
        shutil.rmtree(_data_dir(), ignore_errors=True)
    for row in rows:
        print(json.dumps(row))
