"""Batch-mode write benchmark (issue 16, item 3): ``append_batch`` of many small batches.

Three shapes, each written four ways from the same in-memory data:

- ``wide_f32``: 2,000 batches of 16 rows, 1,000 float32 columns (32,000 rows, 128 MB);
- ``issue16``: 4,000 batches of 1-64 rows (seeded), 300 float32 columns and one
  ``list<int64>`` column (0-7 values a row);
- ``tiny``: 50,000 batches of 1-4 rows (seeded), 50 columns cycling int64 / float64 /
  string (short ids like ``"v123456"``): many tiny batches, no numeric type with enough
  columns for a bulk gather to dominate.

Systems: ``fermion`` (``FileWriter.append_batch`` once per batch, each batch a
``RecordBatch``), ``fermion-tables`` (the same with each batch a one-chunk ``pa.Table``
slice), ``fermion-write_table`` (``fermion.write_table`` of the whole table, no batches) and
``parquet`` (``pq.write_table`` of the whole table, default options: snappy, 1 Mi-row
groups). Default options everywhere (Fermion: zstd level 3). The systems are timed
round-robin, ``runs`` rounds; the median per system is reported, with the 1-minute load
average when the case started (the machine may be shared).

    python -m benchmarks.batch_write_bench          # prints the result rows as JSON lines
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import fermion
from benchmarks.timing import interleaved_ms

SCENARIO = "batch_write"


def shape(name: str, quick: bool, seed: int = 0) -> tuple[pa.Table, np.ndarray]:
    """The table of a shape and its batch sizes (quick: a tenth of the batches/columns).

    Example:
        >>> t, sizes = shape("issue16", quick=True)
        >>> t.num_columns, int(sizes.sum()) == t.num_rows
        (31, True)
    """
    rng = np.random.default_rng(seed)
    if name == "tiny":
        sizes = rng.integers(1, 5, 5_000 if quick else 50_000)
        rows = int(sizes.sum())
        mixed: dict[str, Any] = {}
        for i in range(50):
            if i % 3 == 0:
                mixed[f"i{i:02d}"] = rng.integers(-1000, 1000, rows)
            elif i % 3 == 1:
                mixed[f"d{i:02d}"] = rng.random(rows)
            else:
                ids = rng.integers(0, 10**6, rows).astype(str)
                mixed[f"s{i:02d}"] = pa.array(np.char.add("v", ids).tolist(), pa.string())
        return pa.table(mixed), sizes
    if name == "wide_f32":
        batches, columns = (200, 100) if quick else (2000, 1000)
        sizes = np.full(batches, 16)
    else:
        batches, columns = (400, 30) if quick else (4000, 300)
        sizes = rng.integers(1, 65, batches)
    rows = int(sizes.sum())
    cols: dict[str, Any] = {f"f{i:04d}": rng.random(rows, dtype=np.float32) for i in range(columns)}
    if name == "issue16":
        lengths = rng.integers(0, 8, rows)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        values = pa.array(rng.integers(0, 1 << 40, int(offsets[-1])), pa.int64())
        cols["tokens"] = pa.ListArray.from_arrays(pa.array(offsets), values)
    return pa.table(cols), sizes


def _interleaved(systems: dict[str, Callable[[], None]], runs: int) -> dict[str, list[float]]:
    """``runs`` timed calls (seconds) of every system, round-robin."""
    return {k: [t / 1000 for t in v] for k, v in interleaved_ms(systems, runs).items()}


def _systems(table: pa.Table, sizes: np.ndarray, tmp: Path) -> dict[str, Callable[[], None]]:
    starts = np.concatenate([[0], np.cumsum(sizes)])
    tables = [table.slice(int(a), int(n)) for a, n in zip(starts, sizes, strict=False)]
    batches = [t.combine_chunks().to_batches()[0] for t in tables]

    def appends(parts: list[Any]) -> Callable[[], None]:
        def write() -> None:
            with fermion.FileWriter(tmp / "a.fermion", table.schema) as w:
                for k, part in enumerate(parts):
                    w.append_batch(k, part)

        return write

    return {
        "fermion": appends(batches),
        "fermion-tables": appends(tables),
        "fermion-write_table": lambda: fermion.write_table(table, tmp / "w.fermion"),
        "parquet": lambda: pq.write_table(table, tmp / "p.parquet"),
    }


_FILES = {
    "fermion": "a.fermion",
    "fermion-tables": "a.fermion",
    "fermion-write_table": "w.fermion",
    "parquet": "p.parquet",
}


def run(results: list[dict[str, Any]], *, runs: int | None = None) -> None:
    """Append one result row per (shape, system) to ``results``."""
    quick = os.environ.get("FERMION_BENCH_QUICK") == "1"
    runs = runs or max(5, int(os.environ.get("FERMION_BENCH_REPEAT", "5")))
    tmp = Path(tempfile.mkdtemp(prefix="fermion-batch-write-"))
    try:
        for name in ("wide_f32", "issue16", "tiny"):
            table, sizes = shape(name, quick)
            load = os.getloadavg()[0]
            timed = _interleaved(_systems(table, sizes, tmp), runs)
            for system, times in timed.items():
                median = statistics.median(times)
                results.append(
                    {
                        "scenario": SCENARIO,
                        "variant": name,
                        "system": system,
                        "metric": "write_s",
                        "status": "ok",
                        "value": median,
                        "unit": "s",
                        "runs": [round(t, 3) for t in times],
                        "batches": len(sizes),
                        "rows": table.num_rows,
                        "arrow_mb": round(table.nbytes / 1e6, 1),
                        "file_mb": round((tmp / _FILES[system]).stat().st_size / 1e6, 1),
                        "load_1min": round(load, 2),
                    }
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def method_notes(sizes: Any) -> list[tuple[str, str]]:
    """The report's Method lines for this module."""
    return [
        (
            "batch_write",
            "append_batch once per batch (RecordBatch, or one-chunk Table slices) vs "
            "fermion.write_table and pq.write_table of the whole table: 2,000 x 16 rows x "
            "1,000 float32; 4,000 x 1-64 rows x (300 float32 + list<int64>); 50,000 x 1-4 "
            "rows x 50 int64/float64/string; median of >= 5",
        )
    ]


if __name__ == "__main__":
    rows: list[dict[str, Any]] = []
    run(rows)
    for row in rows:
        print(json.dumps(row))
