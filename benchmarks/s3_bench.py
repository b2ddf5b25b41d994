"""Tables on an S3-compatible server (moto on 127.0.0.1) next to the local disk.

``run(results)`` starts the server (``tests/support/s3server.py``), appends one dict per
measurement and stops it; ``python -m benchmarks.s3_bench`` prints them. Measured:

* commits/s of one writer appending small batches (write a fragment + commit), local disk
  vs S3 (each S3 commit: a data-file PUT, a transaction PUT, a listing, the manifest's
  conditional PUT);
* planning a selective scan of a 1,000-fragment table: open the latest version (list
  ``_versions/``, read the manifest) and prune fragments by their statistics, no data read
  (median ms), local disk vs S3;
* the bytes and GET requests of a selective scan on S3 (counted on the wire by
  :class:`tests.support.s3count.CountingS3FileSystem`) next to the size of the manifest
  (read whole) and of the table.

moto answers every request from memory in one Python process, one at a time: its latency
is not S3's (no network, no disk), so the S3 rows show request counts and the cost of the
client path, not what a real bucket would give.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import fermion.table as ft
from tests.support.s3count import CountingS3FileSystem
from tests.support.s3server import S3Server, start_s3_server

__all__ = ["measure", "method_notes", "run"]

FRAGMENTS = 1000
FRAGMENTS_QUICK = 100
ROWS_PER_FRAGMENT = 100
COMMITS = 30
COMMITS_QUICK = 5
REPEATS = 5


def _median_ms(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _rows(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "value": ids.astype(np.float64) * 0.5, "key": ids % 97})


def _commits_per_s(where: Any, commits: int) -> float:
    ft.write_dataset(_rows(0, 10), where)
    started = time.perf_counter()
    for i in range(commits):
        ft.write_dataset(_rows(10 * (i + 1), 10), where, mode="append")
    return commits / (time.perf_counter() - started)


def _predicate(fragments: int) -> pc.Expression:
    """20 rows in the middle of the table: one fragment of ``fragments`` survives pruning."""
    start = fragments * ROWS_PER_FRAGMENT // 2 + 45
    return (pc.field("id") >= start) & (pc.field("id") < start + 20)


def _plan(where: Any, predicate: pc.Expression) -> int:
    return len(ft.dataset(where).scanner(filter=predicate).fragments())


def _load() -> float:
    return round(os.getloadavg()[0], 1)


def measure(server: S3Server, *, fragments: int, commits: int) -> list[dict[str, Any]]:
    """The three measurements on ``server`` and a temporary local directory."""
    bucket = server.create_bucket()
    fs = CountingS3FileSystem(**server.storage_options(), skip_instance_cache=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fermion-s3-bench-") as local:
        load = _load()
        local_rate = _commits_per_s(os.path.join(local, "commits"), commits)
        s3_rate = _commits_per_s((fs, f"{bucket}/commits"), commits)
        rows.append(
            {
                "benchmark": "s3: commits/s, one writer appending 10 rows per commit",
                "commits": commits,
                "local_commits_per_s": round(local_rate, 1),
                "s3_commits_per_s": round(s3_rate, 1),
                "load_1min": load,
            }
        )
        table = _rows(0, fragments * ROWS_PER_FRAGMENT)
        local_uri, s3_where = os.path.join(local, "wide"), (fs, f"{bucket}/wide")
        ft.write_dataset(table, local_uri, max_rows_per_file=ROWS_PER_FRAGMENT)
        ft.write_dataset(table, s3_where, max_rows_per_file=ROWS_PER_FRAGMENT)
        predicate = _predicate(fragments)
        kept = _plan(s3_where, predicate)
        if kept != _plan(local_uri, predicate) or kept < 1:
            raise RuntimeError(f"the S3 and local plans differ or are empty ({kept})")
        load = _load()
        local_ms = _median_ms(lambda: _plan(local_uri, predicate))
        fs.reset()
        s3_ms = _median_ms(lambda: _plan(s3_where, predicate))
        plan_requests = sum(fs.counts.values()) / REPEATS
        rows.append(
            {
                "benchmark": f"s3: plan a selective scan of a {fragments:,}-fragment table",
                "fragments_kept": kept,
                "local_median_ms": round(local_ms, 2),
                "s3_median_ms": round(s3_ms, 2),
                "s3_requests_per_plan": round(plan_requests, 1),
                "load_1min": load,
            }
        )
        table_bytes = sum(fs.size(p) for p in fs.find(f"{bucket}/wide"))
        fs.reset()
        got = ft.dataset(s3_where).to_table(columns=["id", "value"], filter=predicate)
        if got.num_rows != 20:
            raise RuntimeError(f"the selective scan returned {got.num_rows} rows, not 20")
        rows.append(
            {
                "benchmark": "s3: bytes read by a selective scan (20 rows, 2 of 3 columns)",
                "rows_returned": got.num_rows,
                "bytes_read": fs.bytes_read,
                "get_requests": fs.counts["get_object"],
                "all_requests": sum(fs.counts.values()),
                "manifest_bytes": fs.size(f"{bucket}/wide/_versions/1.manifest"),
                "table_bytes": table_bytes,
                "load_1min": _load(),
            }
        )
    return rows


def method_notes(sizes: Any) -> list[tuple[str, str]]:
    """The Method line of the S3 rows."""
    return [
        (
            "s3:*",
            "Tables on moto's S3 server (`tests/support/s3server.py`, 127.0.0.1, one request "
            "at a time, objects in memory) next to the local disk, through `s3fs`; requests "
            "and bytes counted on the client (`tests/support/s3count.py`). moto has no "
            "network or disk latency: the S3 figures show request counts and the client "
            "path's cost, not a real bucket's latency.",
        )
    ]


def run(results: list[dict[str, Any]]) -> None:
    """Append the S3 measurements to ``results`` (smaller with ``FERMION_BENCH_QUICK=1``)."""
    quick = os.environ.get("FERMION_BENCH_QUICK") == "1"
    server = start_s3_server()
    try:
        results += measure(
            server,
            fragments=FRAGMENTS_QUICK if quick else FRAGMENTS,
            commits=COMMITS_QUICK if quick else COMMITS,
        )
    finally:
        server.stop()


if __name__ == "__main__":
    out: list[dict[str, Any]] = []
    run(out)
    for row in out:
        print(row)
