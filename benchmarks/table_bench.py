"""Table benchmarks: fragment pruning and opening a 1,000-fragment table.

``run(results)`` appends one dict per measurement; ``python -m benchmarks.table_bench``
prints them. Data is generated in a temporary directory and removed afterwards.

Measured:

* a selective filter over a 1,000-fragment table: data files opened vs total (pruning
  from the manifest's per-field statistics) and the query time;
* opening the latest version of a 1,000-fragment table and ``count_rows()`` (median ms);
* the same filter after deleting rows (deletion files applied, still pruned).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import fermion.table as ft

FRAGMENTS = 1000
ROWS_PER_FRAGMENT = 100
REPEATS = 7


def _median_ms(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _build(uri: str) -> None:
    n = FRAGMENTS * ROWS_PER_FRAGMENT
    ids = np.arange(n, dtype=np.int64)
    table = pa.table({"id": ids, "value": ids.astype(np.float64) * 0.5, "key": ids % 97})
    # one write, one fragment per 100 rows: 1,000 fragments in version 1
    ft.write_dataset(table, uri, max_rows_per_file=ROWS_PER_FRAGMENT)


def run(results: list[dict[str, Any]]) -> None:
    """Append the table benchmark measurements to ``results``."""
    with tempfile.TemporaryDirectory(prefix="fermion-table-bench-") as uri:
        _build(uri)
        predicate = (pc.field("id") >= 12_345) & (pc.field("id") < 12_365)
        ds = ft.dataset(uri)
        scanner = ds.scanner(filter=predicate)
        rows = scanner.to_table().num_rows
        results.append(
            {
                "benchmark": "table: selective filter, 1,000 fragments",
                "rows_returned": rows,
                "fragments_total": scanner.stats.fragments_total,
                "files_opened": scanner.stats.files_opened,
                "median_ms": round(_median_ms(lambda: ds.to_table(filter=predicate)), 2),
            }
        )
        results.append(
            {
                "benchmark": "table: open latest + count_rows, 1,000 fragments",
                "median_ms": round(_median_ms(lambda: ft.dataset(uri).count_rows()), 2),
                "rows": ft.dataset(uri).count_rows(),
            }
        )
        ds.delete(pc.field("key") == 0)
        scanner = ft.dataset(uri).scanner(filter=predicate)
        rows = scanner.to_table().num_rows
        results.append(
            {
                "benchmark": "table: selective filter after delete (deletion files applied)",
                "rows_returned": rows,
                "fragments_total": scanner.stats.fragments_total,
                "files_opened": scanner.stats.files_opened,
                "deletion_files_read": scanner.stats.deletion_files_read,
                "median_ms": round(
                    _median_ms(lambda: ft.dataset(uri).to_table(filter=predicate)), 2
                ),
            }
        )
        results.append(
            {
                "benchmark": "table: open latest + count_rows after delete",
                "median_ms": round(_median_ms(lambda: ft.dataset(uri).count_rows()), 2),
                "rows": ft.dataset(uri).count_rows(),
            }
        )


if __name__ == "__main__":
    out: list[dict[str, Any]] = []
    run(out)
    for row in out:
        print(row)
