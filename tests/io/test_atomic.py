"""The storage backends: put-if-absent has exactly one winner per name under real
concurrency (local: processes; in-memory: threads), and every store implements the same
primitives the same way."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.local import LocalFileSystem

from fermion.errors import InvalidArgumentError
from fermion.io.atomic import is_temp_name, put_if_absent_local
from fermion.io.source import open_source
from fermion.io.store import FsspecStore, LocalStore, MemoryStore, Store, open_store

SLOTS = 40


def _race_local(directory: str, worker: int, start: mp.synchronize.Event, out: mp.Queue) -> None:
    store = LocalStore()
    start.wait()
    won = []
    for slot in range(SLOTS):
        try:
            store.put_if_absent(os.path.join(directory, f"{slot}.manifest"), f"{worker}".encode())
            won.append(slot)
        except FileExistsError:
            pass
    out.put((worker, won))


def test_local_put_if_absent_has_one_winner_per_name_across_processes(tmp_path: Path) -> None:
    ctx = mp.get_context("forkserver")
    start = ctx.Event()
    out: mp.Queue = ctx.Queue()
    workers = [
        ctx.Process(target=_race_local, args=(str(tmp_path), w, start, out)) for w in range(8)
    ]
    for p in workers:
        p.start()
    start.set()
    results = dict(out.get(timeout=120) for _ in workers)
    for p in workers:
        p.join(timeout=120)
        assert p.exitcode == 0
    winners: dict[int, int] = {}
    for worker, slots in results.items():
        for slot in slots:
            assert slot not in winners, f"slot {slot} won twice"
            winners[slot] = worker
    assert sorted(winners) == list(range(SLOTS))
    for slot, worker in winners.items():  # the file holds exactly the winner's bytes
        assert (tmp_path / f"{slot}.manifest").read_bytes() == f"{worker}".encode()
    assert sorted(os.listdir(tmp_path)) == sorted(f"{s}.manifest" for s in range(SLOTS))


def test_local_put_if_absent_keeps_existing_content_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "v.manifest"
    put_if_absent_local(str(target), b"one")
    with pytest.raises(FileExistsError):
        put_if_absent_local(str(target), b"two")
    store, _ = open_store((LocalFileSystem(), str(tmp_path)))  # fsspec's local fs: same path
    assert isinstance(store, LocalStore)
    with pytest.raises(FileExistsError):
        store.put_if_absent(str(target), b"three")
    assert target.read_bytes() == b"one"
    assert os.listdir(tmp_path) == ["v.manifest"]


def test_local_put_if_absent_missing_directory_raises_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        LocalStore().put_if_absent(str(tmp_path / "nope" / "1.manifest"), b"x")
    assert os.listdir(tmp_path) == []


def test_memory_put_if_absent_has_one_winner_per_name_across_threads() -> None:
    # The memory filesystem lives inside one process, so threads are its concurrency.
    mem = fsspec.filesystem("memory")
    store = MemoryStore(mem)
    root = "/atomic-race"
    barrier = threading.Barrier(8)
    wins: list[list[int]] = [[] for _ in range(8)]

    def race(worker: int) -> None:
        barrier.wait()
        for slot in range(SLOTS):
            try:
                store.put_if_absent(f"{root}/{slot}", f"{worker}".encode())
                wins[worker].append(slot)
            except FileExistsError:
                pass

    threads = [threading.Thread(target=race, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_wins = sorted(s for w in wins for s in w)
    assert all_wins == list(range(SLOTS))
    for worker, slots in enumerate(wins):
        for slot in slots:
            assert mem.cat_file(f"{root}/{slot}") == f"{worker}".encode()
    mem.rm(root, recursive=True)


def test_backends_without_conditional_put_are_refused() -> None:
    class NoAtomic(fsspec.AbstractFileSystem):
        protocol = "noatomic"

    store, root = open_store((NoAtomic(), "/t/"))
    assert type(store) is FsspecStore and root == "/t"
    assert not store.supports_put_if_absent
    with pytest.raises(InvalidArgumentError, match="external manifest store"):
        store.put_if_absent("/x", b"")


def test_temp_names_are_recognised() -> None:
    assert is_temp_name(".7.manifest.0123abcd.tmp")
    assert not is_temp_name("7.manifest")
    assert not is_temp_name(".hidden")


# -- every store, the same primitives --------------------------------------------------------


@pytest.fixture(params=["local", "memory", "fsspec"])
def store_root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, str]]:
    """A local store, the in-memory store, and the generic fsspec store (on fsspec's memory
    filesystem, so it runs without a network)."""
    if request.param == "local":
        yield open_store(str(tmp_path))
        return
    mem = fsspec.filesystem("memory")
    root = f"/store-{uuid.uuid4().hex}"
    yield (MemoryStore(mem) if request.param == "memory" else FsspecStore(mem)), root
    if mem.exists(root):
        mem.rm(root, recursive=True)


def test_store_primitives(store_root: tuple[Store, str]) -> None:
    store, root = store_root
    a, b = store.join(root, "d/a.bin"), store.join(root, "d/sub/b.bin")
    store.makedirs(store.join(root, "d/sub"))
    assert store.listdir(store.join(root, "missing")) == []
    assert store.walk(store.join(root, "missing")) == []
    before = time.time()
    store.write(a, b"alpha")
    store.write(b, b"beta")
    assert (store.read(a), store.exists(a), store.size(b)) == (b"alpha", True, 4)
    assert store.modified(a) >= before - 2  # file systems round their clocks
    assert sorted(store.listdir(store.join(root, "d"))) == ["a.bin", "sub"]
    walked = sorted(store.relative(root, p) for p in store.walk(store.join(root, "d")))
    assert walked == ["d/a.bin", "d/sub/b.bin"]
    store.copy(a, store.join(root, "d/c.bin"))
    assert store.read(store.join(root, "d/c.bin")) == b"alpha"
    source = open_source(store.target(a))  # the format layer reads the same bytes
    try:
        assert bytes(source.read(0, 5)) == b"alpha"
    finally:
        source.close()
    store.delete(a)
    store.delete(a)  # a missing file is not an error
    assert not store.exists(a)
    with pytest.raises(FileNotFoundError):
        store.read(a)
    if store.supports_put_if_absent:
        store.put_if_absent(a, b"once")
        with pytest.raises(FileExistsError):
            store.put_if_absent(a, b"twice")
        assert store.read(a) == b"once"


def test_open_store_picks_the_backend(tmp_path: Path) -> None:
    local, root = open_store(tmp_path / "t")
    assert type(local) is LocalStore and root == str(tmp_path / "t")
    assert local.uri(root) == root
    memory, mroot = open_store("memory://tables/t/")
    assert type(memory) is MemoryStore and memory.uri(mroot) == "memory:///tables/t"
