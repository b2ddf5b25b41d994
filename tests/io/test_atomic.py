"""put-if-absent per backend: exactly one winner per name under real concurrency."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.local import LocalFileSystem

from fermion.errors import InvalidArgumentError
from fermion.io.atomic import is_temp_name, put_if_absent, supports_put_if_absent

SLOTS = 40


def _race_local(directory: str, worker: int, start: mp.synchronize.Event, out: mp.Queue) -> None:
    start.wait()
    won = []
    for slot in range(SLOTS):
        try:
            put_if_absent(None, os.path.join(directory, f"{slot}.manifest"), f"{worker}".encode())
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
    put_if_absent(None, str(target), b"one")
    with pytest.raises(FileExistsError):
        put_if_absent(None, str(target), b"two")
    with pytest.raises(FileExistsError):  # the fsspec local filesystem takes the same path
        put_if_absent(LocalFileSystem(), str(target), b"three")
    assert target.read_bytes() == b"one"
    assert os.listdir(tmp_path) == ["v.manifest"]


def test_local_put_if_absent_missing_directory_raises_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        put_if_absent(None, str(tmp_path / "nope" / "1.manifest"), b"x")
    assert os.listdir(tmp_path) == []


def test_memory_put_if_absent_has_one_winner_per_name_across_threads() -> None:
    # The memory filesystem lives inside one process, so threads are its concurrency.
    mem = fsspec.filesystem("memory")
    root = "/atomic-race"
    barrier = threading.Barrier(8)
    wins: list[list[int]] = [[] for _ in range(8)]

    def race(worker: int) -> None:
        barrier.wait()
        for slot in range(SLOTS):
            try:
                put_if_absent(mem, f"{root}/{slot}", f"{worker}".encode())
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

    fs = NoAtomic()
    assert not supports_put_if_absent(fs)
    with pytest.raises(InvalidArgumentError, match="external manifest store"):
        put_if_absent(fs, "/x", b"")


def test_temp_names_are_recognised() -> None:
    assert is_temp_name(".7.manifest.0123abcd.tmp")
    assert not is_temp_name("7.manifest")
    assert not is_temp_name(".hidden")
