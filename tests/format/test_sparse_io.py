"""Sub-page IO (docs/FORMAT.md §9): through pread or fsspec, a point read fetches page
headers and block tables, then only the blocks and byte ranges of the values it needs.

Byte counts come from the sources' own counters (``ByteSource.stats``), on a real fsspec
filesystem (``memory://``) and a real file read with ``os.pread``.
"""

from __future__ import annotations

from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fermion
from tests.format.test_byte_flips import MemorySource
from tests.support.budget import examples


def point_table(n: int) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table(
        {
            "price": pa.array(np.round(rng.uniform(1, 10**5, n), 2)),  # FLOAT_DECIMAL
            "noise": pa.array(rng.random(n)),  # PLAIN or BYTE_SPLIT
            "key": pa.array(np.cumsum(rng.integers(1, 5, n))),  # DELTA, checkpoints
            "comment": pa.array(
                [f"a comment about {int(k)} things" for k in rng.integers(0, 10**9, n)]
            ),
        }
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, pa.Table]:
    table = point_table(600_000)
    path = tmp_path_factory.mktemp("sparse") / "t.fermion"
    fermion.write_table(table, path, compression="none")
    return path, table


def _opened(where: str, path: Path) -> fermion.FileReader:
    if where == "fsspec":
        fs = fsspec.filesystem("memory")
        fs.pipe(f"/sparse/{path.name}", path.read_bytes())
        return fermion.FileReader((fs, f"/sparse/{path.name}"))
    return fermion.FileReader(path, memory_map=False)  # os.pread


@pytest.mark.parametrize("where", ["fsspec", "pread"])
def test_take_reads_a_small_fraction_of_the_file(written, where: str) -> None:
    path, table = written
    idx = np.sort(np.random.default_rng(4).choice(table.num_rows, 40, replace=False))
    with _opened(where, path) as r:
        opened = r.source.stats.bytes_read  # footer, schema, metadata
        got = r.take(idx)
        read = r.source.stats.bytes_read - opened
        size = r.source.size
    assert got.equals(table.take(idx))
    assert read < 0.05 * size, (read, size)
    # the same take with whole pages (point reads off) reads nearly every page it touches
    with _opened(where, path) as r:
        opened = r.source.stats.bytes_read
        assert r.take(idx).equals(table.take(idx))
        whole = r.source.stats.bytes_read - opened
    with fermion.FileReader(path, memory_map=False, point_reads=False) as r:
        opened = r.source.stats.bytes_read
        r.take(idx)
        assert r.source.stats.bytes_read - opened > 10 * read
    assert whole == read


def test_sparse_take_matches_for_every_column_and_checks_checksums(written) -> None:
    path, table = written
    idx = np.array([0, 1, 4_095, 4_096, 299_999, 300_000, table.num_rows - 1])
    data = bytearray(path.read_bytes())
    for name in table.column_names:
        with fermion.FileReader(MemorySource(bytearray(data))) as r:
            assert r.take(idx, columns=[name]).equals(table.select([name]).take(idx)), name
    # a flipped byte inside a value the sparse read fetches is caught by its block's CRC
    value = np.float64(table.column("noise")[300_000].as_py()).tobytes()
    at = data.find(value)
    if at < 0:
        pytest.skip("noise stored byte-split: covered by the byte-flip sweep")
    data[at] ^= 0x10
    with fermion.FileReader(MemorySource(data)) as r, pytest.raises(fermion.ChecksumError):
        r.take(idx, columns=["noise"])


def test_batch_lookup_through_fsspec_reads_only_the_batch(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 65, 3_000)
    n = int(sizes.sum())
    table = pa.table({f"f{i}": pa.array(rng.random(n).astype(np.float32)) for i in range(8)})
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    path = tmp_path / "b.fermion"
    with fermion.FileWriter(path, table.schema) as w:
        for k, size in enumerate(sizes.tolist()):
            w.append_batch(k, table.slice(starts[k], size))
    fs = fsspec.filesystem("memory")
    fs.pipe("/sparse/b.fermion", path.read_bytes())
    with fermion.FileReader((fs, "/sparse/b.fermion")) as r:
        r.batches().stripe(0)  # the batch index: metadata, read once
        opened = r.source.stats.bytes_read
        got = r.read_batches([1_500], columns=["f1", "f6"])
        read = r.source.stats.bytes_read - opened
        size = r.source.size
    want = table.select(["f1", "f6"]).slice(starts[1_500], int(sizes[1_500]))
    assert got.equals(want)
    assert read < 0.05 * size, (read, size)  # a few zstd blocks per column


@pytest.mark.parametrize("verify", [True, False])
def test_one_value_costs_its_checksum_block_not_the_block_table(tmp_path: Path, verify) -> None:
    # one uncompressed page of bit-packed integers, 1 MB: 2,048 checksum blocks, so its
    # CRC32 table alone is 8 KiB; a point read fetches the page's first bytes, the block
    # holding the EncodingHeader, then the value's block and (verifying) its CRC32 only
    from fermion.format.read.points import SparsePage

    rng = np.random.default_rng(6)
    table = pa.table({"k": pa.array(rng.integers(0, 2**40, 200_000))})
    path = tmp_path / "k.fermion"
    fermion.write_table(table, path, page_size=4 << 20)
    block = fermion.WriteOptions().checksum_block_size
    fs = fsspec.filesystem("memory")
    fs.pipe("/sparse/k.fermion", path.read_bytes())
    with fermion.FileReader((fs, "/sparse/k.fermion"), verify_checksums=verify) as r:
        opened = r.source.stats.bytes_read
        assert r.take([150_000]).equals(table.take([150_000]))
        read = r.source.stats.bytes_read - opened
    unit = SparsePage.UNIT
    one_block = block + 2 * unit  # a block is not aligned to units
    budget = SparsePage.GRAIN + 2 * one_block + (unit if verify else 0)
    assert read <= budget, (read, budget)
    assert read >= SparsePage.GRAIN + block  # the value's whole block: it is verified


def test_a_sparse_take_reads_under_a_tenth_of_the_file(tmp_path: Path) -> None:
    # the density of the lineitem bench's take (1,000 random rows of 6 million), smaller:
    # 250 of 1.5 million; point-read columns fetch a checksum block or zstd block per value
    rng = np.random.default_rng(7)
    n = 1_500_000
    table = pa.table(
        {
            "partkey": pa.array(rng.integers(1, 200_000, n)),
            "price": pa.array(np.round(rng.uniform(900, 105_000, n), 2)),
            "quantity": pa.array(rng.integers(1, 51, n).astype(np.float64)),
            "day": pa.array(rng.integers(8_000, 10_600, n).astype(np.int32), pa.date32()),
            "comment": pa.array([f"ship {int(k):x} fluffily" for k in rng.integers(0, 2**40, n)]),
        }
    )
    path = tmp_path / "l.fermion"
    fermion.write_table(table, path)
    fs = fsspec.filesystem("memory")
    fs.pipe("/sparse/l.fermion", path.read_bytes())
    idx = np.sort(rng.choice(n, 250, replace=False))
    with fermion.FileReader((fs, "/sparse/l.fermion")) as r:
        opened = r.source.stats.bytes_read
        assert r.take(idx).equals(table.take(idx))
        read = r.source.stats.bytes_read - opened
        size = r.source.size
    assert read <= 0.10 * size, (read, size)


@settings(max_examples=examples(60))
@example(calls=[[(k, 5) for k in range(100, 4_000, 100)]], head=0, pread=True)  # 39 runs
@example(calls=[[(k, 5) for k in range(3_900, 0, -100)], [(0, 5_000)]], head=20, pread=False)
@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(-40, 5_100), st.one_of(st.integers(0, 40), st.integers(0, 700))),
            max_size=60,
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 600),
    st.booleans(),
)
def test_a_sparse_page_holds_every_range_fetched(
    tmp_path_factory, calls: list[list[tuple[int, int]]], head: int, pread: bool
) -> None:
    """``SparsePage.fetch``, called several times with ranges in any order (overlapping,
    empty, past either end: clipped to the page), makes exactly the bytes asked present,
    reading exactly the 16-byte units not yet present: one range, ranges in order, out of
    order, few and many runs (copied one by one, or at once)."""
    from fermion.format.read.points import SparsePage
    from fermion.io.source import open_source

    data = np.random.default_rng(len(calls)).integers(0, 256, 9_000, dtype=np.uint8).tobytes()
    path = tmp_path_factory.mktemp("fetch") / "p.bin"
    path.write_bytes(data)
    src = open_source(str(path), memory_map=not pread)
    offset, size = 1_000, 5_000  # the page: bytes [1000, 6000) of the file
    # max_gap 0: no bytes between runs are read, so the bytes read are exactly the units
    page = SparsePage(src, offset, size, memoryview(data[offset : offset + head]), max_gap=0)
    present = np.zeros(size, dtype=bool)
    present[: max(head, 16)] = True  # (a page's first 16 bytes are always fetched)
    for ranges in calls:
        begins = np.array([a for a, _ in ranges], dtype=np.int64)
        ends = begins + np.array([n for _, n in ranges], dtype=np.int64)
        before = src.stats.bytes_read
        page.fetch(begins, ends)
        units = np.zeros(-(-size // SparsePage.UNIT), dtype=bool)
        for a, b in zip(np.clip(begins, 0, size), np.clip(ends, 0, size), strict=True):
            if b > a:
                units[a // SparsePage.UNIT : (b - 1) // SparsePage.UNIT + 1] = True
        new = np.flatnonzero(units & ~page_units(present, size))
        unit = SparsePage.UNIT
        assert src.stats.bytes_read - before == int(np.minimum(unit, size - new * unit).sum())
        present |= np.repeat(units, unit)[:size]  # whole units are read
        got = np.frombuffer(page.view, dtype=np.uint8)
        want = np.frombuffer(data[offset : offset + size], dtype=np.uint8)
        assert np.array_equal(got[present], want[present])


def page_units(present: np.ndarray, size: int) -> np.ndarray:
    """The 16-byte units of a page wholly present (what SparsePage counts as read)."""
    from fermion.format.read.points import SparsePage

    units = -(-size // SparsePage.UNIT)
    padded = np.ones(units * SparsePage.UNIT, dtype=bool)
    padded[:size] = present
    return padded.reshape(units, SparsePage.UNIT).all(axis=1)
