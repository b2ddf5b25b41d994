"""The external manifest stores (SQLite and PostgreSQL, each test on both): atomic claims across
processes, reader-side repair."""

from __future__ import annotations

import multiprocessing as mp
import os
import uuid
from pathlib import Path

import fsspec
import pytest

from fermion.errors import DatasetError
from fermion.io.store import FsspecStore, LocalStore, MemoryStore
from fermion.table.manifest_store import (
    ManifestStore,
    commit_external,
    finalise,
    is_staging_path,
    open_manifest_store,
    resolve_external,
)

VERSIONS = 30
LOCAL = LocalStore()


def _write(path: str, data: bytes) -> None:
    LOCAL.write(path, data)


def _open(spec: str) -> ManifestStore:
    store = open_manifest_store(spec)
    assert store is not None
    return store


def _claim(
    spec: str, directory: str, worker: int, start: mp.synchronize.Event, out: mp.Queue
) -> None:
    store = _open(spec)
    start.wait()
    won = []
    for v in range(1, VERSIONS + 1):
        final = os.path.join(directory, f"{v}.manifest")
        try:
            commit_external(store, LOCAL, directory, v, final, f"{worker}".encode())
            won.append(v)
        except FileExistsError:
            pass
    out.put((worker, won))


def test_store_has_one_winner_per_version_across_processes(tmp_path: Path, store_spec: str) -> None:
    table = tmp_path / "t"
    table.mkdir()
    ctx = mp.get_context("forkserver")
    start = ctx.Event()
    out: mp.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=_claim, args=(store_spec, str(table), w, start, out)) for w in range(8)
    ]
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
    store = _open(store_spec)
    assert store.latest_version(str(table)) == VERSIONS
    for v, worker in owner.items():
        final = store.get(str(table), v)
        assert final == str(table / f"{v}.manifest")
        assert (table / f"{v}.manifest").read_bytes() == f"{worker}".encode()


def test_reader_repairs_a_commit_whose_writer_died_after_the_commit_point(
    tmp_path: Path, store_spec: str
) -> None:
    store = _open(store_spec)
    staging = str(tmp_path / ("4.manifest-" + "b" * 32))
    _write(staging, b"manifest-4")
    store.put_if_absent("t", 4, staging)
    assert is_staging_path(store.get("t", 4) or "")
    final = resolve_external(store, LOCAL, "t", 4)
    assert final == str(tmp_path / "4.manifest")
    assert (tmp_path / "4.manifest").read_bytes() == b"manifest-4"
    assert store.get("t", 4) == final
    assert resolve_external(store, LOCAL, "t", 5) is None


def test_reader_refuses_to_load_when_repair_fails(tmp_path: Path, store_spec: str) -> None:
    store = _open(store_spec)
    store.put_if_absent("t", 1, str(tmp_path / ("1.manifest-" + "c" * 32)))  # staging lost
    with pytest.raises(DatasetError, match="could not be finalised"):
        resolve_external(store, LOCAL, "t", 1)


def test_put_of_unknown_version_is_an_error(store_spec: str) -> None:
    store = _open(store_spec)
    with pytest.raises(DatasetError):
        store.put("t", 9, "x")
    assert store.latest_version("t") is None


@pytest.mark.parametrize("kind", ["memory", "fsspec"])
def test_commit_and_repair_on_object_stores(store_spec: str, kind: str) -> None:
    """The staged protocol on the in-memory store (atomic finalise) and on a store without
    put-if-absent (plain copy)."""
    mem = fsspec.filesystem("memory")
    files = MemoryStore(mem) if kind == "memory" else FsspecStore(mem)
    base = f"/ms-{uuid.uuid4().hex}"
    store = _open(store_spec)
    commit_external(store, files, base, 1, f"{base}/1.manifest", b"one")
    assert (store.get(base, 1), files.read(f"{base}/1.manifest")) == (f"{base}/1.manifest", b"one")
    with pytest.raises(FileExistsError):
        commit_external(store, files, base, 1, f"{base}/1.manifest", b"other")
    staging = f"{base}/2.manifest-" + "d" * 32
    files.write(staging, b"two")
    store.put_if_absent(base, 2, staging)
    assert resolve_external(store, files, base, 2) == f"{base}/2.manifest"
    assert files.read(f"{base}/2.manifest") == b"two"
    finalise(files, staging, f"{base}/2.manifest")  # a second finaliser: same bytes, no error
    assert files.read(f"{base}/2.manifest") == b"two"
    names = files.listdir(base)
    assert sorted(n for n in names if not is_staging_path(n)) == ["1.manifest", "2.manifest"]
    assert sum(map(is_staging_path, names)) == 3  # two claims of version 1, one of version 2
    mem.rm(base, recursive=True)
