"""Batch lookup benchmark (issue 4): 1,000 random batch ids on Fermion vs Parquet vs Lance.

A wide feature table (1,000 float32 columns plus ``batch_id``), batches of 1-64 rows, is
written three ways:

- Fermion in batch mode (``append_batch``; ``page_size`` 8 KiB so a batch's column slice
  is a small page), looked up with ``FileReader.read_batches``;
- Parquet (pyarrow, zstd, 8,192-row row groups, sorted ``batch_id`` so row-group
  statistics prune), looked up with ``pyarrow.dataset`` and a ``batch_id == x`` filter;
- Lance (``lance.write_dataset`` + a BTREE scalar index on ``batch_id``), looked up with
  ``to_table(filter="batch_id = x")``.

Each run looks up the same 1,000 random ids projecting the same 50 columns; the median of
``runs`` runs is reported. For Fermion, pages and bytes read per batch are counted.

    python -m benchmarks.batch_bench          # prints the result rows as JSON lines
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.parquet as pq

import fermion

SCENARIO = "batch_lookup"


def _table(rng: np.random.Generator, rows: int, columns: int) -> dict[str, np.ndarray]:
    return {f"f{i:04d}": rng.random(rows, dtype=np.float32) for i in range(columns)}


def _data(num_batches: int, columns: int, seed: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 65, num_batches)
    ids = np.cumsum(rng.integers(1, 10, num_batches)).astype(np.int64) + 1_000_000
    rows = int(sizes.sum())
    cols = {"batch_id": np.repeat(ids, sizes)}
    cols.update(_table(rng, rows, columns))
    return pa.table(cols), ids, sizes


def _median_ms(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def run(
    results: list[dict[str, Any]],
    *,
    num_batches: int = 2000,
    columns: int = 1000,
    project: int = 50,
    lookups: int = 1000,
    runs: int = 5,
    seed: int = 0,
) -> None:
    """Append one result dict per (system, metric) to ``results``.

    Example:
        >>> rows: list[dict] = []
        >>> run(rows, num_batches=20, columns=8, project=3, lookups=5, runs=1)  # doctest: +SKIP
    """
    table, ids, sizes = _data(num_batches, columns, seed)
    rng = np.random.default_rng(seed + 1)
    wanted = rng.choice(ids, size=lookups, replace=True)
    names = [f"f{i:04d}" for i in sorted(rng.choice(columns, size=project, replace=False))]
    expected_rows = int(sizes[np.searchsorted(ids, wanted)].sum())
    tmp = Path(tempfile.mkdtemp(prefix="fermion-batch-bench-"))

    def add(system: str, metric: str, value: float, unit: str) -> None:
        results.append(
            {"scenario": SCENARIO, "system": system, "metric": metric, "value": value, "unit": unit}
        )

    try:
        # -- Fermion --------------------------------------------------------------------
        fpath = tmp / "t.fermion"
        starts = np.concatenate([[0], np.cumsum(sizes)])
        user = table.drop_columns(["batch_id"])
        t0 = time.perf_counter()
        with fermion.FileWriter(fpath, user.schema, page_size=8 << 10) as w:
            for k, bid in enumerate(ids.tolist()):
                w.append_batch(bid, user.slice(int(starts[k]), int(sizes[k])))
        add("fermion", "write_s", time.perf_counter() - t0, "s")
        add("fermion", "file_mb", fpath.stat().st_size / 1e6, "MB")

        io: dict[str, float] = {}

        def fermion_lookups() -> None:
            with fermion.FileReader(fpath, coalesce_gap=0) as r:
                pages = 0
                inner = r.source.read_ranges

                def counting(ranges: Any, *, max_gap: int) -> Any:
                    nonlocal pages
                    pages += len(ranges)
                    return inner(ranges, max_gap=max_gap)

                r.source.read_ranges = counting  # type: ignore[method-assign]
                got = 0
                for bid in wanted.tolist():
                    got += r.read_batches([bid], columns=names).num_rows
                assert got == expected_rows
                io["pages"] = pages / lookups
                io["bytes"] = r.source.stats.bytes_read / lookups
                io["requests"] = r.source.stats.requests / lookups

        add("fermion", f"{lookups}_lookups_ms", _median_ms(fermion_lookups, runs), "ms")
        add("fermion", "pages_read_per_batch", io["pages"], "pages")
        add("fermion", "bytes_read_per_batch", io["bytes"], "bytes")
        add("fermion", "requests_per_batch", io["requests"], "requests")

        # -- Parquet ------------------------------------------------------------------------
        ppath = tmp / "t.parquet"
        t0 = time.perf_counter()
        pq.write_table(table, ppath, row_group_size=8192, compression="zstd")
        add("parquet", "write_s", time.perf_counter() - t0, "s")
        add("parquet", "file_mb", ppath.stat().st_size / 1e6, "MB")

        def parquet_lookups() -> None:
            ds = pds.dataset(ppath, format="parquet")
            got = 0
            for bid in wanted.tolist():
                got += ds.to_table(columns=names, filter=pds.field("batch_id") == bid).num_rows
            assert got == expected_rows

        add("parquet", f"{lookups}_lookups_ms", _median_ms(parquet_lookups, runs), "ms")

        # -- Lance --------------------------------------------------------------------------
        try:
            import lance
        except ImportError:  # pragma: no cover - bench extra not installed
            return
        lpath = tmp / "t.lance"
        t0 = time.perf_counter()
        lance.write_dataset(table, str(lpath))
        lds = lance.dataset(str(lpath))
        lds.create_scalar_index("batch_id", index_type="BTREE")
        add("lance", "write_s", time.perf_counter() - t0, "s")
        size = sum(p.stat().st_size for p in lpath.rglob("*") if p.is_file())
        add("lance", "file_mb", size / 1e6, "MB")

        def lance_lookups() -> None:
            ds = lance.dataset(str(lpath))
            got = 0
            for bid in wanted.tolist():
                got += ds.to_table(columns=names, filter=f"batch_id = {bid}").num_rows
            assert got == expected_rows

        add("lance", f"{lookups}_lookups_ms", _median_ms(lance_lookups, runs), "ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    rows: list[dict[str, Any]] = []
    run(rows)
    for row in rows:
        print(json.dumps(row))
