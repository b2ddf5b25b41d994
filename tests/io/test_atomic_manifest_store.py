"""The SQLite external manifest store: atomic claims across processes, reader-side repair."""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
from pathlib import Path

import pytest

from fermion.errors import DatasetError
from fermion.io.manifest_store import (
    SQLiteManifestStore,
    commit_external,
    is_staging_path,
    resolve_external,
)

VERSIONS = 30


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _claim(
    db: str, directory: str, worker: int, start: mp.synchronize.Event, out: mp.Queue
) -> None:
    store = SQLiteManifestStore(db)
    start.wait()
    won = []
    for v in range(1, VERSIONS + 1):
        final = os.path.join(directory, f"{v}.manifest")
        try:
            commit_external(
                store, directory, v, final, f"{worker}".encode(), _write, shutil.copyfile
            )
            won.append(v)
        except FileExistsError:
            pass
    out.put((worker, won))


def test_sqlite_store_has_one_winner_per_version_across_processes(tmp_path: Path) -> None:
    db = str(tmp_path / "store.db")
    table = tmp_path / "t"
    table.mkdir()
    SQLiteManifestStore(db)  # create the schema once before the race
    ctx = mp.get_context("forkserver")
    start = ctx.Event()
    out: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(db, str(table), w, start, out)) for w in range(8)]
    for p in procs:
        p.start()
    start.set()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    owner = {}
    for worker, versions in results.items():
        for v in versions:
            assert v not in owner
            owner[v] = worker
    assert sorted(owner) == list(range(1, VERSIONS + 1))
    store = SQLiteManifestStore(db)
    assert store.latest_version(str(table)) == VERSIONS
    for v, worker in owner.items():
        final = store.get(str(table), v)
        assert final == str(table / f"{v}.manifest")
        assert (table / f"{v}.manifest").read_bytes() == f"{worker}".encode()


def test_reader_repairs_a_commit_whose_writer_died_after_the_commit_point(tmp_path: Path) -> None:
    store = SQLiteManifestStore(str(tmp_path / "m.db"))
    staging = str(tmp_path / ("4.manifest-" + "b" * 32))
    _write(staging, b"manifest-4")
    store.put_if_absent("t", 4, staging)
    assert is_staging_path(store.get("t", 4) or "")
    final = resolve_external(store, "t", 4, shutil.copyfile)
    assert final == str(tmp_path / "4.manifest")
    assert (tmp_path / "4.manifest").read_bytes() == b"manifest-4"
    assert store.get("t", 4) == final
    assert resolve_external(store, "t", 5, shutil.copyfile) is None


def test_reader_refuses_to_load_when_repair_fails(tmp_path: Path) -> None:
    store = SQLiteManifestStore(str(tmp_path / "m.db"))
    store.put_if_absent("t", 1, str(tmp_path / ("1.manifest-" + "c" * 32)))  # staging lost
    with pytest.raises(DatasetError, match="could not be finalised"):
        resolve_external(store, "t", 1, shutil.copyfile)


def test_put_of_unknown_version_is_an_error(tmp_path: Path) -> None:
    store = SQLiteManifestStore(str(tmp_path / "m.db"))
    with pytest.raises(DatasetError):
        store.put("t", 9, "x")
    assert store.latest_version("t") is None
