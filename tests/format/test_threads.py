"""The shared worker pool survives fork (a child of a process that already decoded pages)."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np
import pyarrow as pa

import fermion


def _read_in_child(path: str, queue: mp.Queue) -> None:
    queue.put(fermion.read_table(path).num_rows)


def test_forked_child_can_decode_after_parent_did(tmp_path: Path) -> None:
    path = tmp_path / "f.fermion"
    rng = np.random.default_rng(0)  # incompressible: big enough to decode on the pool
    table = pa.table({f"c{i}": rng.random(300_000) for i in range(4)})
    fermion.write_table(table, path, page_size=16 << 10)
    assert fermion.read_table(path).num_rows == 300_000  # the parent's pool is now running
    ctx = mp.get_context("fork")
    queue: mp.Queue = ctx.Queue()
    child = ctx.Process(target=_read_in_child, args=(str(path), queue))
    child.start()
    child.join(timeout=30)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive, "the forked child hung on the inherited pool"
    assert queue.get(timeout=5) == 300_000
