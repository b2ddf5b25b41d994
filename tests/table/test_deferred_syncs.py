"""Deferred syncs (docs/TABLE_FORMAT.md, "Durability"): inside ``deferred_syncs`` a thread's
file fsyncs run in the background and its directory fsyncs wait for its next manifest put,
which waits for the files and syncs each directory once, before the manifest's link; other
threads sync as usual unless they carry the block; the block's end runs what is left.

Every ``os.fsync`` and ``os.link`` is recorded (with the path of the descriptor, read from
``/proc/self/fd``: Linux only) and still happens.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import fermion.table as ft
from fermion.errors import CommitError
from fermion.io.atomic import is_temp_name
from fermion.table.storage import TableStorage, carry_deferral, deferred_syncs

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads fd paths from /proc"
)


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    log: list[tuple[str, str]] = []
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd: int) -> None:
        log.append(("fsync", os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))))
        real_fsync(fd)

    def link(src: str, dst: str, *args: Any, **kwargs: Any) -> None:
        real_link(src, dst, *args, **kwargs)
        log.append(("link", os.path.realpath(dst)))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    return log


def _write(storage: TableStorage, relative: str) -> str:
    storage.ensure_directory(relative.rpartition("/")[0])
    path = storage.path(relative)
    Path(path).write_bytes(b"x")
    return os.path.realpath(path)


def test_deferred_syncs_run_before_the_manifest_link(
    tmp_path: Path, events: list[tuple[str, str]]
) -> None:
    storage = TableStorage(str(tmp_path / "t"))
    storage.ensure_directories()
    directory = os.path.realpath(storage.path("data"))
    with deferred_syncs():
        data = _write(storage, "data/a.fermion")
        storage.sync_file("data/a.fermion")  # (started in the background)
        storage.sync_directories()
        assert ("fsync", directory) not in events  # (recorded, not run)
        storage.put_manifest(1, b"m")
    link = events.index(("link", os.path.realpath(storage.path("_versions/1.manifest"))))
    synced = [path for kind, path in events[:link] if kind == "fsync"]
    assert data in synced and directory in synced
    assert synced.index(directory) > synced.index(data)  # the entry after the file


def test_write_bytes_in_a_block_is_synced_before_the_link(
    tmp_path: Path, events: list[tuple[str, str]]
) -> None:
    storage = TableStorage(str(tmp_path / "t"))
    storage.ensure_directories()
    txn = os.path.realpath(storage.path("_transactions/a.txn"))
    with deferred_syncs():
        storage.write_bytes("_transactions/a.txn", b"txn")
        storage.put_manifest(1, b"m")
    link = events.index(("link", os.path.realpath(storage.path("_versions/1.manifest"))))
    synced = [path for kind, path in events[:link] if kind == "fsync"]
    directory = os.path.dirname(txn)
    assert txn in synced and directory in synced
    assert synced.index(directory) > synced.index(txn)
    assert Path(txn).read_bytes() == b"txn"
    versions = os.path.realpath(storage.path("_versions"))
    staged = [p for p in synced if is_temp_name(os.path.basename(p))]  # the manifest's
    assert [os.path.dirname(p) for p in staged] == [versions]  # ... synced before its link
    assert ("fsync", versions) in events[link:]  # and its entry after it
    assert os.listdir(versions) == ["1.manifest"]  # (the temp file is gone)
    assert Path(versions, "1.manifest").read_bytes() == b"m"


def test_a_failed_file_sync_fails_every_later_put(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = TableStorage(str(tmp_path / "t"))
    storage.ensure_directories()
    real_sync = type(storage.store).sync

    def sync(store: Any, path: str) -> None:
        if path.endswith("bad.fermion"):
            raise OSError(5, "EIO")
        real_sync(store, path)

    monkeypatch.setattr(type(storage.store), "sync", sync)
    with pytest.raises(CommitError, match="bad.fermion"), deferred_syncs():
        _write(storage, "data/bad.fermion")
        storage.sync_file("data/bad.fermion")
        for version in (1, 2):  # a commit loop retrying the put: refused each time
            with pytest.raises(CommitError, match="bad.fermion"):
                storage.put_manifest(version, b"m")
        assert storage.latest_version() is None
        storage.put_manifest(3, b"m")
    assert storage.latest_version() is None  # no manifest names a file that is not durable


def test_a_removed_file_is_not_synced(tmp_path: Path, events: list[tuple[str, str]]) -> None:
    storage = TableStorage(str(tmp_path / "t"))
    storage.ensure_directories()
    with deferred_syncs():
        _write(storage, "data/gone.fermion")
        storage.sync_file("data/gone.fermion")
        storage.remove("data/gone.fermion")  # (a discarded plan's file)
        storage.put_manifest(1, b"m")  # no error for the missing file
    assert storage.latest_version() == 1


def test_other_threads_and_the_blocks_end(tmp_path: Path, events: list[tuple[str, str]]) -> None:
    storage = TableStorage(str(tmp_path / "t"))
    storage.ensure_directories()
    other_dir = TableStorage(str(tmp_path / "t"))
    data_dir = os.path.realpath(storage.path("data"))
    with deferred_syncs():
        _write(storage, "data/mine.fermion")
        storage.sync_file("data/mine.fermion")
        storage.sync_directories()
        _write(other_dir, "data/theirs.fermion")
        other_dir.sync_file("data/theirs.fermion")
        other = threading.Thread(target=other_dir.sync_directories)  # not carried: at once
        other.start()
        other.join()
        assert ("fsync", data_dir) in events
    del events[:]
    with deferred_syncs():
        _write(storage, "data/carried.fermion")
        carried = TableStorage(str(tmp_path / "t"))
        carried._unsynced_dirs.add("data")
        thread = threading.Thread(target=carry_deferral(carried.sync_directories))
        thread.start()
        thread.join()
        assert ("fsync", data_dir) not in events  # the carried thread deferred it ...
    assert events.count(("fsync", data_dir)) == 1  # ... to the block's end, once
    del events[:]
    with pytest.raises(RuntimeError), deferred_syncs():
        _write(storage, "data/dropped.fermion")
        storage.sync_file("data/dropped.fermion")
        storage.sync_directories()
        raise RuntimeError("no commit")
    assert ("fsync", data_dir) not in events  # no manifest names it
    storage.sync_file("data/dropped.fermion")  # outside a block: at once
    assert ("fsync", os.path.realpath(storage.path("data/dropped.fermion"))) in events


def test_one_directory_sync_per_commit_whichever_storage_asked(
    tmp_path: Path, events: list[tuple[str, str]]
) -> None:
    uri = str(tmp_path / "t")
    storages = [TableStorage(uri) for _ in range(3)]
    storages[0].ensure_directories()
    with deferred_syncs():
        for i, storage in enumerate(storages):
            _write(storage, f"data/{i}.fermion")
            storage.sync_file(f"data/{i}.fermion")
            storage.sync_directories()
        storages[0].put_manifest(1, b"m")
    assert events.count(("fsync", os.path.realpath(storages[0].path("data")))) == 1


def test_an_append_syncs_its_files_before_its_manifest(
    tmp_path: Path, events: list[tuple[str, str]]
) -> None:
    ds = ft.write_dataset(pa.table({"x": [1, 2]}), str(tmp_path / "t"))
    del events[:]
    ds.append(pa.table({"x": [3]}))
    link = events.index(("link", os.path.realpath(ds.storage.path("_versions/2.manifest"))))
    new = {os.path.realpath(ds.storage.path(p)) for f in ds.fragments[1:] for p in f.paths}
    synced = {path for kind, path in events[:link] if kind == "fsync"}
    assert new <= synced
    assert {os.path.realpath(ds.storage.path(d)) for d in ("data", "_transactions")} <= synced
    assert ds.to_table().column("x").to_pylist() == [1, 2, 3]
