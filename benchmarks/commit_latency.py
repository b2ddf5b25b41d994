"""Append-heavy commit benchmark: many small commits, one after the other, in one process.

``python -m benchmarks.commit_latency [COMMITS] [DIRECTORY]`` appends a 3-row table
``COMMITS`` times (default 200) to a new table under ``DIRECTORY`` (default: a temporary
directory; give one on the disk you care about) and prints the total and per-commit time
and the number of ``fsync`` calls per commit (docs/TABLE_FORMAT.md, "Durability"). Not part
of ``make bench``: it measures the disk's fsync latency more than Fermion.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any

import pyarrow as pa

import fermion.table as ft


def run(commits: int = 200, directory: str | None = None) -> dict[str, Any]:
    """Time ``commits`` small appends; returns the measurements."""
    calls = 0
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        nonlocal calls
        calls += 1
        real_fsync(fd)

    data = pa.table({"x": pa.array([1, 2, 3], pa.int64())})
    with tempfile.TemporaryDirectory(prefix="fermion-commit-bench-", dir=directory) as uri:
        ft.write_dataset(data, uri)
        os.fsync = counting_fsync
        try:
            started = time.perf_counter()
            for _ in range(commits):
                ft.write_dataset(data, uri, mode="append")
            elapsed = time.perf_counter() - started
        finally:
            os.fsync = real_fsync
    return {
        "commits": commits,
        "seconds": round(elapsed, 3),
        "ms_per_commit": round(1000 * elapsed / commits, 2),
        "fsyncs_per_commit": calls / commits,
    }


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(run(count, sys.argv[2] if len(sys.argv) > 2 else None))
