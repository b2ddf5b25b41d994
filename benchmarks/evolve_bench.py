"""Changing a table in place (issue 41): merge-insert, update and add_columns against pylance.

One table of ``rows`` rows (default 2,000,000) x 21 columns (``id`` int64, ``f0``..``f19``
float64) in 4 fragments, written by each system. Each timed run starts from a fresh copy
of that table (the copy is not timed) and makes one version:

- ``merge_insert``: upsert on ``id`` of a source holding 1% existing ids (new values) and
  1% new ids (``when_matched_update_all`` + ``when_not_matched_insert_all``);
- ``add_columns``: one float64 column from the expression ``f0 * 2 + f1``;
- ``update``: ``f0 = f0 + 1`` where ``id < rows / 100`` (1% of the rows).

Each system's result is checked (row count, and the sum of the changed column equal
between the systems). Reported: median seconds of ``FERMION_BENCH_REPEAT`` runs (default
5), the systems timed round-robin after one warm-up run each, and the bytes each run wrote
(the table directory's growth). For ``add_columns`` the note compares Fermion's bytes
with the new column alone written as one zstd Fermion file.

    python -m benchmarks.evolve_bench [rows]        # prints the result rows as JSON
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
import pyarrow.compute as pc

import fermion

SCENARIO = "table_evolve"
COLUMNS = 20
__all__ = ["evolve_table", "run", "run_evolve"]


def evolve_table(rows: int, seed: int = 0) -> pa.Table:
    """The benchmark table (see the module docstring)."""
    rng = np.random.default_rng(seed)
    columns: dict[str, Any] = {"id": np.arange(rows, dtype=np.int64)}
    for i in range(COLUMNS):
        columns[f"f{i}"] = rng.random(rows)
    return pa.table(columns)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _source(table: pa.Table, seed: int) -> pa.Table:
    """1% of the rows with new values, and 1% new ids."""
    rows = table.num_rows
    rng = np.random.default_rng(seed + 1)
    picked = np.sort(rng.choice(rows, max(1, rows // 100), replace=False))
    updated = table.take(picked)
    updated = updated.set_column(1, "f0", pc.add(updated.column("f0"), 10.0))
    fresh = evolve_table(max(1, rows // 100), seed + 2)
    fresh = fresh.set_column(0, "id", pa.array(np.arange(rows, rows + fresh.num_rows)))
    return pa.concat_tables([updated, fresh])


def _fermion_ops(source: pa.Table, rows: int) -> dict[str, Callable[[str], Any]]:
    def merge(uri: str) -> Any:
        ds = fermion.dataset(uri)
        builder = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        return builder.execute(source)

    return {
        "merge_insert": merge,
        "add_columns": lambda uri: fermion.dataset(uri).add_columns({"g": "f0 * 2 + f1"}),
        "update": lambda uri: fermion.dataset(uri).update(
            f"id < {rows // 100}", set={"f0": "f0 + 1"}
        ),
    }


def _lance_ops(source: pa.Table, rows: int) -> dict[str, Callable[[str], Any]]:
    import lance

    def merge(uri: str) -> Any:
        ds = lance.dataset(uri)
        builder = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        return builder.execute(source)

    return {
        "merge_insert": merge,
        "add_columns": lambda uri: lance.dataset(uri).add_columns({"g": "f0 * 2 + f1"}),
        "update": lambda uri: lance.dataset(uri).update(
            {"f0": "f0 + 1"}, where=f"id < {rows // 100}"
        ),
    }


def _check(system: str, uri: str, case: str) -> tuple[int, float]:
    """(rows, sum of the changed column) of the result."""
    column = {"merge_insert": "f0", "add_columns": "g", "update": "f0"}[case]
    if system == "fermion":
        table = fermion.dataset(uri).to_table(columns=[column])
    else:
        import lance

        table = lance.dataset(uri).to_table(columns=[column])
    return table.num_rows, round(float(pc.sum(table.column(column)).as_py()), 3)


def run_evolve(
    results: list[dict[str, Any]], *, rows: int = 2_000_000, runs: int = 5, seed: int = 0
) -> None:
    """Append the rows of every (case, system) to ``results``."""
    table = evolve_table(rows, seed)
    source = _source(table, seed)
    root = Path(tempfile.mkdtemp(prefix="fermion-evolve-bench-"))
    try:
        pristine = {"fermion": root / "fermion"}
        fermion.write_dataset(table, str(pristine["fermion"]), max_rows_per_file=rows // 4)
        ops = {"fermion": _fermion_ops(source, rows)}
        if importlib.util.find_spec("lance") is not None:  # the bench extra
            import lance

            pristine["lance"] = root / "lance"
            lance.write_dataset(table, str(pristine["lance"]), max_rows_per_file=rows // 4)
            ops["lance"] = _lance_ops(source, rows)
        column_alone = root / "column.fermion"
        new_column = pc.add(pc.multiply(table.column("f0"), 2.0), table.column("f1"))
        fermion.write_table(pa.table({"g": new_column}), str(column_alone))
        for case in ("merge_insert", "add_columns", "update"):
            times: dict[str, list[float]] = {s: [] for s in ops}
            written: dict[str, int] = {}
            checks: dict[str, tuple[int, float]] = {}
            for attempt in range(runs + 1):  # the first run of each system is a warm-up
                for system, fns in ops.items():
                    work = root / f"work-{system}"
                    shutil.rmtree(work, ignore_errors=True)
                    shutil.copytree(pristine[system], work)
                    before = _size(work)
                    t0 = time.perf_counter()
                    fns[case](str(work))
                    elapsed = time.perf_counter() - t0
                    if attempt:
                        times[system].append(elapsed)
                    written[system] = _size(work) - before
                    checks[system] = _check(system, str(work), case)
            status = "ok" if len(set(checks.values())) == 1 else "wrong-result"
            for system in ops:
                note = f"wrote {written[system]:,} B"
                if case == "add_columns":
                    ratio = written[system] / max(1, column_alone.stat().st_size)
                    note += f" ({ratio:.2f}x the new column alone as a zstd Fermion file)"
                if status != "ok":
                    note += f"; results differ: {checks}"
                results.append({
                    "scenario": SCENARIO, "variant": case, "system": system,
                    "metric": "seconds", "value": statistics.median(times[system]),
                    "unit": "s", "runs": times[system], "bytes_written": written[system],
                    "status": status, "note": note,
                })  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(results: list[dict[str, Any]]) -> None:
    """The ``make bench`` entry point (``benchmarks/run.py`` extra module)."""
    quick = os.environ.get("FERMION_BENCH_QUICK") == "1"
    runs = int(os.environ.get("FERMION_BENCH_REPEAT", "5"))
    run_evolve(results, rows=40_000 if quick else 2_000_000, runs=runs)


if __name__ == "__main__":
    found: list[dict[str, Any]] = []
    run_evolve(found, rows=int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000)
    print(json.dumps(found, indent=1))
