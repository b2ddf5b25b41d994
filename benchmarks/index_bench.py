"""Scalar index benchmark (issue 40): lookups through a BTREE / BITMAP index against pylance.

One table of ``rows`` rows (default 5,000,000) in 5 fragments: ``key`` random int64,
``label`` a string of 100 values (1% selectivity each), ``value`` float64. Each system
writes it, builds its index, and answers, in the same run:

- ``eq``: ``key = k`` for a random existing key (Fermion without an index, with a BTREE
  index; Lance with a BTREE index);
- ``in100``: ``key IN (100 keys)`` (BTREE);
- ``bitmap1pct``: ``label = 'l042'`` (a BITMAP index on ``label``);
- the build time and bytes of the BTREE index;
- ``eq`` and ``in100`` again after 20 appends, a compaction and ``optimize_indices``
  (:func:`run_after_maintenance`).

Every answer is checked against the unindexed Fermion scan. Medians of
``FERMION_BENCH_REPEAT`` runs (default 5), the systems timed round-robin after one warm-up
call each (:func:`benchmarks.timing.interleaved_ms`).

    python -m benchmarks.index_bench [rows]        # prints the result rows as JSON
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import fermion
from benchmarks.timing import interleaved_ms

SCENARIO = "index_lookup"
__all__ = ["index_table", "lance_installed", "run", "run_after_maintenance", "run_index_lookups"]


def lance_installed() -> bool:
    """Whether pylance (the ``bench`` extra) is importable."""
    return importlib.util.find_spec("lance") is not None


def index_table(rows: int, seed: int = 0) -> pa.Table:
    """The benchmark table (see the module docstring)."""
    rng = np.random.default_rng(seed)
    labels = np.array([f"l{i:03d}" for i in range(100)])
    return pa.table({
        "key": rng.integers(-(2**62), 2**62, rows, dtype=np.int64),
        "label": labels[rng.integers(0, 100, rows)],
        "value": rng.random(rows),
    })  # fmt: skip


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_index_lookups(
    results: list[dict[str, Any]], *, rows: int = 5_000_000, runs: int = 5, seed: int = 0
) -> None:
    """Append the index rows to ``results``."""
    table = index_table(rows, seed)
    keys = table.column("key").to_numpy()
    rng = np.random.default_rng(seed + 1)
    probe = int(keys[rng.integers(0, rows)])
    many = ", ".join(str(int(k)) for k in keys[rng.choice(rows, 100, replace=False)])
    filters = {"eq": f"key = {probe}", "in100": f"key IN ({many})", "bitmap1pct": "label = 'l042'"}
    root = Path(tempfile.mkdtemp(prefix="fermion-index-bench-"))
    try:
        ds = fermion.write_dataset(table, str(root / "fermion"), max_rows_per_file=rows // 5)
        expected = {c: ds.to_table(filter=f).num_rows for c, f in filters.items()}

        def add(case: str, system: str, metric: str, value: float, unit: str) -> None:
            row = {"scenario": SCENARIO, "variant": case, "system": system, "metric": metric}
            results.append({**row, "value": value, "unit": unit, "status": "ok"})

        def checked(fn: Callable[[], pa.Table], case: str) -> Callable[[], pa.Table]:
            def call() -> pa.Table:
                out = fn()
                if out.num_rows != expected[case]:
                    raise AssertionError(f"{case}: {out.num_rows} rows, not {expected[case]}")
                return out

            return call

        systems: dict[str, dict[str, Callable[[], Any]]] = {c: {} for c in filters}
        plain = ds.scanner(None, filters["eq"], use_indices=False)  # (a scanner is reusable)
        systems["eq"]["fermion_noindex"] = checked(lambda: plain.to_table(), "eq")
        started = time.perf_counter()
        ds.create_index("key", "BTREE")
        add("build", "fermion", "build_s", time.perf_counter() - started, "s")
        add("index bytes", "fermion", "index_bytes", ds.indices()[0].size_bytes, "B")
        ds.create_index("label", "BITMAP")
        for case, text in filters.items():
            systems[case]["fermion"] = checked(lambda t=text: ds.to_table(filter=t), case)
        if lance_installed():
            import lance

            path = root / "lance"
            lds = lance.write_dataset(table, str(path), max_rows_per_file=rows // 5)
            started = time.perf_counter()
            lds.create_scalar_index("key", "BTREE")
            add("build", "lance", "build_s", time.perf_counter() - started, "s")
            add("index bytes", "lance", "index_bytes", _size(path / "_indices"), "B")
            lds.create_scalar_index("label", "BITMAP")
            lds = lance.dataset(str(path))
            for case, text in filters.items():
                systems[case]["lance"] = checked(lambda t=text: lds.to_table(filter=t), case)
        for case, fns in systems.items():
            for system, times in interleaved_ms(fns, runs, warmup=True).items():
                add(case, system, "lookup_ms", statistics.median(times), "ms")
    finally:
        shutil.rmtree(root, ignore_errors=True)


#: The maintained-table case: appends after the index build, then one compaction.
APPENDS = 20


def run_after_maintenance(
    results: list[dict[str, Any]], *, rows: int = 5_000_000, runs: int = 5, seed: int = 0
) -> None:
    """A key lookup after 20 appends and a compaction, the index brought up to date.

    Each system writes the first three quarters of the table in fragments of ``rows / 5``
    rows and builds a BTREE index on ``key``, then appends the last quarter in 20 commits,
    compacts (``target_rows_per_fragment = rows / 5``) and updates the index (Fermion
    ``Dataset.optimize_indices``, Lance ``optimize.optimize_indices``). Timed: ``key = k``
    for a key of an appended row, and ``key IN`` 100 keys from the whole table. The
    maintenance sequence itself (write, build, appends, compaction, index update) runs
    ``runs`` times per system, alternating, each in a directory of its own, and its median
    seconds are rows of their own; the last run's tables answer the lookups.
    """
    table = index_table(rows, seed)
    keys = table.column("key").to_numpy()
    rng = np.random.default_rng(seed + 2)
    base_rows = rows * 3 // 4
    probe = int(keys[rng.integers(base_rows, rows)])
    many = ", ".join(str(int(k)) for k in keys[rng.choice(rows, 100, replace=False)])
    filters = {"eq": f"key = {probe}", "in100": f"key IN ({many})"}
    per_append = -(-(rows - base_rows) // APPENDS)
    target = rows // 5
    root = Path(tempfile.mkdtemp(prefix="fermion-index-maint-"))
    variant = f"after {APPENDS} appends + compaction, optimize_indices"

    def add(case: str, system: str, metric: str, value: float, unit: str) -> None:
        row = {"scenario": SCENARIO, "variant": f"{case}, {variant}", "system": system}
        results.append({**row, "metric": metric, "value": value, "unit": unit, "status": "ok"})

    def fermion_sequence(path: Path) -> Any:
        ds = fermion.write_dataset(table.slice(0, base_rows), str(path), max_rows_per_file=target)
        ds.create_index("key", "BTREE")
        for k in range(APPENDS):
            ds.append(table.slice(base_rows + k * per_append, per_append))
        ds.compact_files(target_rows_per_fragment=target)
        ds.optimize_indices()
        return fermion.dataset(str(path))

    def lance_sequence(path: Path) -> Any:
        import lance

        lds = lance.write_dataset(table.slice(0, base_rows), str(path), max_rows_per_file=target)
        lds.create_scalar_index("key", "BTREE")
        for k in range(APPENDS):
            part = table.slice(base_rows + k * per_append, per_append)
            lds = lance.write_dataset(part, str(path), mode="append")
        lds.optimize.compact_files(target_rows_per_fragment=target)
        lds = lance.dataset(str(path))
        lds.optimize.optimize_indices()
        return lance.dataset(str(path))

    sequences: dict[str, Callable[[Path], Any]] = {"fermion": fermion_sequence}
    if lance_installed():
        sequences["lance"] = lance_sequence
    try:
        # the whole sequence ``runs`` times per system, the systems alternating, each run in
        # a directory of its own; the last run's tables answer the lookups
        seconds: dict[str, list[float]] = {name: [] for name in sequences}
        built: dict[str, Any] = {}
        for attempt in range(runs):
            for name, sequence in sequences.items():
                started = time.perf_counter()
                built[name] = sequence(root / f"{name}-{attempt}")
                seconds[name].append(time.perf_counter() - started)
                if attempt:
                    shutil.rmtree(root / f"{name}-{attempt - 1}", ignore_errors=True)
        for name, times in seconds.items():
            add("maintenance", name, "maintenance_s", statistics.median(times), "s")
        ds, lds = built["fermion"], built.get("lance")
        unindexed = {
            c: ds.scanner(None, f, use_indices=False).to_table() for c, f in filters.items()
        }
        if unindexed["eq"].num_rows < 1:
            raise AssertionError("the probe key is not in the table")
        fns: dict[str, dict[str, Callable[[], Any]]] = {c: {} for c in filters}
        for case, text in filters.items():
            fns[case]["fermion"] = lambda t=text: ds.to_table(filter=t)
            if lds is not None:
                fns[case]["lance"] = lambda t=text: lds.to_table(filter=t)
        for case, systems in fns.items():
            for name, fn in systems.items():  # every answer checked once, untimed
                if fn().num_rows != unindexed[case].num_rows:
                    raise AssertionError(f"{case}: {name} disagrees with the unindexed scan")
            for system, times in interleaved_ms(systems, runs, warmup=True).items():
                add(case, system, "lookup_ms", statistics.median(times), "ms")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(results: list[dict[str, Any]]) -> None:
    """The ``make bench`` entry point (``benchmarks/run.py`` extra module)."""
    quick = os.environ.get("FERMION_BENCH_QUICK") == "1"
    runs = int(os.environ.get("FERMION_BENCH_REPEAT", "5"))
    rows = 200_000 if quick else 5_000_000
    run_index_lookups(results, rows=rows, runs=runs)
    run_after_maintenance(results, rows=rows, runs=runs)


if __name__ == "__main__":
    found: list[dict[str, Any]] = []
    run_index_lookups(found, rows=int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000)
    print(json.dumps(found, indent=1))
