"""Row ids under real concurrent writers (processes racing on one table directory):
appends that retry get distinct ids, and a compaction racing them moves rows with theirs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

import fermion.table as ft

Runner = Callable[..., list[tuple[str, Any]]]

WORKERS = 4
COMMITS = 6
ROWS = 3


def _append(uri: str, worker: int) -> int:
    """``COMMITS`` appends of ``ROWS`` rows whose ``key`` names (worker, commit, row)."""
    attempts = 0
    for commit in range(COMMITS):
        base = (worker * COMMITS + commit) * ROWS
        data = pa.table({"key": pa.array(range(base, base + ROWS), pa.int64())})
        ds = ft.write_dataset(data, uri, mode="append")
        assert ds.last_commit is not None
        attempts += ds.last_commit.attempts
    return attempts


def _compact(uri: str, rounds: int) -> int:
    """Compact repeatedly while the appends run; returns the fragments it removed."""
    removed = 0
    for _ in range(rounds):
        ds = ft.dataset(uri)
        removed += ds.compact_files(target_rows_per_fragment=10_000)["fragments_removed"]
    return removed


def test_concurrent_appends_and_compaction_keep_ids_unique_and_stable(
    tmp_path: Path, processes: Runner
) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"key": pa.array([], pa.int64())}), uri)
    results = processes(_run, [("append", uri, w) for w in range(WORKERS)] + [("compact", uri, 6)])
    assert all(status == "ok" for status, _ in results), results
    appends = [value for _, value in results[:WORKERS]]
    # every append committed (once or after retries on a newer version: whether any
    # retried depends on the machine's timing, so it is counted, not asserted)
    assert sum(appends) >= WORKERS * COMMITS

    ds = ft.dataset(uri)
    ds.compact_files(target_rows_per_fragment=10_000)  # at least one compaction, whatever raced
    assert len(ds.fragments) == 1
    total = WORKERS * COMMITS * ROWS
    table = ds.to_table(columns=["_rowid", "key"])
    ids = table["_rowid"].to_pylist()
    assert sorted(ids) == list(range(total))  # distinct, none lost, none skipped
    assert ds.manifest.next_row_id == total
    final = dict(zip(table["key"].to_pylist(), ids, strict=True))
    # every version agrees: a row keeps its id through every append and compaction
    for version in ds.storage.versions():
        old = ft.dataset(uri, version).to_table(columns=["_rowid", "key"])
        for key, rowid in zip(old["key"].to_pylist(), old["_rowid"].to_pylist(), strict=True):
            assert final[key] == rowid, (version, key)


def _run(kind: str, uri: str, arg: int) -> int:
    return _append(uri, arg) if kind == "append" else _compact(uri, arg)
