"""Deferred syncs (docs/TABLE_FORMAT.md, "Durability"): inside ``deferred_syncs`` a thread's
file and directory fsyncs wait for its next manifest put, which runs them, in parallel,
before the manifest's link; other threads sync as usual; the block's end runs what is left.

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
from fermion.table.storage import TableStorage, deferred_syncs

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
    with deferred_syncs():
        data = _write(storage, "data/a.fermion")
        storage.sync_file("data/a.fermion")
        storage.sync_directories()
        assert ("fsync", data) not in events  # (recorded, not run)
        storage.put_manifest(1, b"m")
    link = events.index(("link", os.path.realpath(storage.path("_versions/1.manifest"))))
    synced = [path for kind, path in events[:link] if kind == "fsync"]
    assert data in synced and os.path.realpath(storage.path("data")) in synced


def test_other_threads_and_the_blocks_end(tmp_path: Path, events: list[tuple[str, str]]) -> None:
    storage = TableStorage(str(tmp_path / "t"))
    storage.ensure_directories()
    with deferred_syncs():
        mine = _write(storage, "data/mine.fermion")
        storage.sync_file("data/mine.fermion")
        theirs = _write(storage, "data/theirs.fermion")
        other = threading.Thread(target=storage.sync_file, args=("data/theirs.fermion",))
        other.start()
        other.join()
        assert ("fsync", theirs) in events and ("fsync", mine) not in events
    assert ("fsync", mine) in events  # the block's end ran what was left
    with pytest.raises(RuntimeError), deferred_syncs():
        dropped = _write(storage, "data/dropped.fermion")
        storage.sync_file("data/dropped.fermion")
        raise RuntimeError("no commit")
    assert ("fsync", dropped) not in events  # no manifest names it
    storage.sync_file("data/dropped.fermion")  # outside a block: at once
    assert ("fsync", dropped) in events


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
