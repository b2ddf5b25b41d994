"""SIGKILL at every kill point of every mutating operation (docs/TABLE_FORMAT.md, scenario 7).

Each case starts a writer process (from the fork server of ``conftest.py``), arms one
failpoint in it (:mod:`fermion.io.failpoints`) and runs one operation on a small table; the
process must die by SIGKILL at that point. Afterwards the table opens at the old or the new
version, never between, and reads exactly the state before or the state after the
operation (computed by running it, unkilled, on a copy); cleanup keeps the orphans while
they are younger than the threshold and removes them after, leaving only referenced files;
and the table takes the next write.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import fermion.table as ft
from fermion.errors import CommitConflictError
from fermion.io import failpoints
from fermion.io.atomic import is_temp_name
from fermion.table.deletions import deletion_path
from fermion.table.manifest_store import SQLiteManifestStore, is_staging_path
from fermion.table.storage import TableStorage
from tests.table.conftest import CTX, run_processes

X = pa.int64()


def _append(uri: str, store: Any) -> None:
    ft.write_dataset(
        pa.table({"x": pa.array([10, 11], X)}), uri, mode="append", manifest_store=store
    )


def _overwrite(uri: str, store: Any) -> None:
    data = pa.table({"x": pa.array([20], X)})
    ft.write_dataset(data, uri, mode="overwrite", manifest_store=store)


def _delete(uri: str, store: Any) -> None:
    ft.dataset(uri, manifest_store=store).delete("x = 1")  # one row of fragment 0


def _compaction(uri: str, store: Any) -> None:
    ft.dataset(uri, manifest_store=store).compact_files(target_rows_per_fragment=100)


def _schema_change(uri: str, store: Any) -> None:
    ft.dataset(uri, manifest_store=store).add_columns([pa.field("y", pa.string())])


def _restore(uri: str, store: Any) -> None:
    ft.dataset(uri, version=1, manifest_store=store).restore()


def _stats_rebuild(uri: str, store: Any) -> None:
    ft.dataset(uri, manifest_store=store).rebuild_stats()


def _merge_insert(uri: str, store: Any) -> None:  # updates x 1 (fragment 0), inserts x 50
    source = pa.table({"x": pa.array([1, 50], X)})
    ds = ft.dataset(uri, manifest_store=store)
    ds.merge_insert("x").when_matched_update_all().when_not_matched_insert_all().execute(source)


def _update(uri: str, store: Any) -> None:
    ft.dataset(uri, manifest_store=store).update("x = 1", set={"x": "x + 40"})


def _replace_where(uri: str, store: Any) -> None:
    data = pa.table({"x": pa.array([2, 2], X)})
    ft.write_dataset(data, uri, mode="overwrite", replace_where="x = 2", manifest_store=store)


def _add_columns(uri: str, store: Any) -> None:
    ft.dataset(uri, manifest_store=store).add_columns({"g": "x * 2"})


def _add_columns_joined(uri: str, store: Any) -> None:  # x 0-7 joined, x 3 lacks a value
    values = pa.table({"x": pa.array([0, 1, 2, 4, 5, 6, 7], X), "g": [1.5] * 7})
    ft.dataset(uri, manifest_store=store).add_columns(values, on="x")


def _create_index(uri: str, store: Any) -> None:
    ft.dataset(uri, manifest_store=store).create_index("x", "BTREE")


OPERATIONS: dict[str, Callable[[str, Any], None]] = {
    "append": _append,
    "overwrite": _overwrite,
    "delete": _delete,
    "compaction": _compaction,
    "schema_change": _schema_change,
    "restore": _restore,
    "stats_rebuild": _stats_rebuild,
    "merge_insert": _merge_insert,
    "update": _update,
    "replace_where": _replace_where,
    "add_columns": _add_columns,
    "add_columns_joined": _add_columns_joined,
    "create_index": _create_index,
}
WRITES_DATA = {"append", "overwrite", "compaction", "add_columns", "add_columns_joined"}
WRITES_BOTH = {"merge_insert", "update", "replace_where"}  # data and deletion files

# (point, match, committed): where the writer dies, and whether the version is committed then
COMMON = [
    ("partial_write", "_transactions/", False),  # a torn transaction file
    ("after_txn_write", "", False),
    ("before_manifest_put", "", False),
    ("before_link", "_versions/", False),  # put-if-absent: temp written, not linked
    ("after_manifest_put", "", True),
    ("after_manifest_staged", "", False),  # external store: staged, not inserted
    ("after_store_insert", "", True),  # external store: inserted, not copied
    ("after_manifest_copy", "", True),  # external store: copied, entry not final
]
DATA = [("partial_write", "data/", False), ("after_data_write", "", False)]
DELETION = [("partial_write", "_deletions/", False)]
INDEX = [("partial_write", "_indices/", False)]  # a torn index file


def _points(operation: str) -> list[tuple[str, str, bool]]:
    if operation in WRITES_BOTH:
        return DATA + DELETION + COMMON
    extra = DATA if operation in WRITES_DATA else DELETION if operation == "delete" else []
    extra = INDEX if operation == "create_index" else extra
    return extra + COMMON


CASES = [(op, *point) for op in OPERATIONS for point in _points(op)]


def _store(root: Path, point: str) -> SQLiteManifestStore | None:
    return SQLiteManifestStore(str(root / "m.db")) if point in failpoints.EXTERNAL_POINTS else None


def _make_table(uri: str, store: Any) -> None:
    """Version 1: x 0-5 in three fragments; version 2: x 6-7 appended."""
    ft.write_dataset(pa.table({"x": pa.array(range(6), X)}), uri, max_rows_per_file=2,
                     manifest_store=store)  # fmt: skip
    ft.write_dataset(pa.table({"x": pa.array([6, 7], X)}), uri, mode="append", manifest_store=store)


def _state(ds: ft.Dataset) -> tuple[Any, ...]:
    """Columns, rows, number of fragments and index names: what each operation changes."""
    table = ds.to_table()
    rows = sorted(zip(*(table[n].to_pylist() for n in table.column_names), strict=True))
    indices = sorted(i.name for i in ds.manifest.indices)
    return tuple(table.column_names), rows, len(ds.fragments), indices


def _files(uri: str) -> set[str]:
    return {str(p.relative_to(uri)) for p in Path(uri).rglob("*") if p.is_file()}


def _referenced(uri: str, store: Any) -> set[str]:
    ds = ft.dataset(uri, manifest_store=store)
    found = set()
    for version in ds.storage.versions():
        manifest = ft.dataset(uri, version=version, manifest_store=store).manifest
        found.add(f"_versions/{version}.manifest")
        found.add(f"_transactions/{manifest.transaction_file}")
        for fragment in manifest.fragments:
            found.update(f.path for f in fragment.files)
            if fragment.HasField("deletion_file"):
                found.add(deletion_path(fragment.id, fragment.deletion_file))
        for index in manifest.indices:
            found.update(index.files)
    return found


def _killed_child(operation: str, uri: str, point: str, match: str, db: str | None) -> None:
    failpoints.arm(point, "kill", match=match)
    store = SQLiteManifestStore(db) if db else None
    OPERATIONS[operation](uri, store)


@pytest.mark.parametrize(
    ("operation", "point", "match", "committed"),
    CASES,
    ids=[f"{op}-{point}-{match.strip('/') or 'any'}" for op, point, match, _ in CASES],
)
def test_kill_point(
    tmp_path: Path, operation: str, point: str, match: str, committed: bool
) -> None:
    uri = str(tmp_path / "t")
    store = _store(tmp_path, point)
    _make_table(uri, store)
    old = _state(ft.dataset(uri, manifest_store=store))
    twin = str(tmp_path / "twin")  # the same operation, not killed: the state after it
    shutil.copytree(uri, twin)
    OPERATIONS[operation](twin, None)
    new = _state(ft.dataset(twin))
    assert new != old

    child = CTX.Process(
        target=_killed_child,
        args=(operation, uri, point, match, str(tmp_path / "m.db") if store else None),
    )
    child.start()
    child.join(timeout=240)
    assert child.exitcode == -9, f"the writer was not killed at {point} ({child.exitcode})"

    if store is not None:  # a reader without the store: at most one version behind
        assert ft.dataset(uri).version == (3 if point == "after_manifest_copy" else 2)
    ds = ft.dataset(uri, manifest_store=store)  # a store-aware reader repairs version 3
    assert ds.version == (3 if committed else 2)
    assert _state(ds) == (new if committed else old)
    if store is not None:
        assert ft.dataset(uri).version == (3 if committed else 2)
    after = _files(uri)
    leftovers = after - _referenced(uri, store)
    ds.cleanup_old_versions(timedelta(days=1))  # orphans younger than a day stay
    assert _files(uri) == after
    ds.cleanup_old_versions(timedelta(days=1), orphan_older_than=timedelta(0))
    remaining = _files(uri)
    assert remaining == after - leftovers
    assert not [f for f in remaining if is_temp_name(Path(f).name) or is_staging_path(f)]
    assert remaining <= _referenced(uri, store)
    assert _state(ft.dataset(uri, manifest_store=store)) == (new if committed else old)
    schema = ft.dataset(uri, manifest_store=store).schema  # and the table keeps working
    columns = {f.name: pa.array([30], X) if f.name == "x" else pa.nulls(1, f.type) for f in schema}
    ft.write_dataset(pa.table(columns), uri, mode="append", manifest_store=store)
    assert ft.dataset(uri, manifest_store=store).version == (4 if committed else 3)


def test_every_kill_point_is_used() -> None:
    assert {point for _, point, _, _ in CASES} == set(failpoints.POINTS)
    assert {op for op, *_ in CASES} == set(OPERATIONS)


def _racer(uri: str, value: int, kill: bool) -> int:
    if kill:
        failpoints.arm("before_link", "kill", match="_versions/")
    for attempt in range(40):
        try:
            ft.write_dataset(pa.table({"x": pa.array([value], X)}), uri, mode="append")
            return attempt
        except CommitConflictError:
            continue
    raise AssertionError("never committed")


def test_racing_writers_one_killed(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _make_table(uri, None)
    start = CTX.Event()
    victim = CTX.Process(target=_released, args=(start, uri, 999))
    victim.start()
    start.set()
    results = run_processes(_racer, [(uri, 100 + i, False) for i in range(4)])
    victim.join(timeout=240)
    assert victim.exitcode == -9
    assert [status for status, _ in results] == ["ok"] * 4
    ds = ft.dataset(uri)
    assert ds.storage.versions() == list(range(1, 7))  # contiguous: 2 + the 4 survivors
    assert sorted(ds.to_table()["x"].to_pylist()) == [*range(8), 100, 101, 102, 103]
    ds.cleanup_old_versions(timedelta(days=1), orphan_older_than=timedelta(0))
    assert not [f for f in _files(uri) if is_temp_name(Path(f).name)]
    assert _files(uri) <= _referenced(uri, None)
    assert ft.dataset(uri).count_rows() == 12


def _released(start: Any, uri: str, value: int) -> None:
    start.wait()
    _racer(uri, value, True)


def _hammer(uri: str, rounds: int, max_retries: int, barrier: Any) -> list[int]:
    """Append ``rounds`` times, all processes released together each round; returns the
    number of manifest puts of every commit that gave up."""
    puts = 0
    original = TableStorage.put_manifest

    def counting(self: TableStorage, version: int, data: bytes) -> None:  # the real put
        nonlocal puts
        puts += 1
        original(self, version, data)

    TableStorage.put_manifest = counting  # type: ignore[method-assign]
    exhausted = []
    for _ in range(rounds):
        frags = ft.write_fragments(pa.table({"x": pa.array([1], X)}), uri)
        read = TableStorage(uri).latest_version()
        barrier.wait()
        puts = 0
        try:
            ft.Dataset.commit(uri, ft.Append(frags), read_version=read, max_retries=max_retries)
        except CommitConflictError as exc:
            assert f"gave up after {max_retries} commit attempts" in str(exc)
            exhausted.append(puts)
    return exhausted


@pytest.mark.parametrize("max_retries", [1, 2])
def test_retry_exhaustion_under_real_contention(tmp_path: Path, max_retries: int) -> None:
    uri = str(tmp_path / "t")
    _make_table(uri, None)
    writers, rounds = 4, 6
    barrier = CTX.Barrier(writers)
    results = run_processes(_hammer, [(uri, rounds, max_retries, barrier)] * writers)
    assert all(status == "ok" for status, _ in results), results
    gave_up = [puts for _, exhausted in results for puts in exhausted]
    assert gave_up, "no commit ever exhausted its attempts: no contention"
    assert gave_up == [max_retries] * len(gave_up)  # exactly the configured attempts
    ds = ft.dataset(uri)
    committed = writers * rounds - len(gave_up)
    assert ds.storage.versions() == list(range(1, 3 + committed))
    assert ds.count_rows() == 8 + committed
