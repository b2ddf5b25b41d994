"""Byte sources: pread and memory-mapped local files, coalescing, bounds, IO counters.

Bad inputs tried: ranges past the end of the file, negative ranges, a directory, a
missing file, an empty file (no mapping possible) and a FIFO (not mapped: read with
pread); each gives a typed error or reads as pread would. ``read_copies`` (with and
without the compiled preads) gets ranges past the end, negative ranges, a closed source
and a file cut shorter after it was opened.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
import fermion.io.byte_source as source_module
from fermion.io.source import LocalSource, open_source
from tests.support.budget import examples


@pytest.fixture
def data_file(tmp_path: Path) -> tuple[Path, bytes]:
    data = bytes(np.random.default_rng(1).integers(0, 256, 100_000, dtype=np.uint8))
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    return path, data


@pytest.mark.parametrize("memory_map", [False, True])
def test_ranges_bounds_and_counters(data_file, memory_map: bool) -> None:
    path, data = data_file
    src = open_source(str(path), memory_map=memory_map)
    assert isinstance(src, LocalSource) and (src._view is not None) is memory_map
    ranges = [(0, 10), (50, 7), (99_990, 10), (40_000, 0), (5, 3)]
    got = src.read_ranges(ranges, max_gap=64)
    assert [bytes(g) for g in got] == [data[o : o + n] for o, n in ranges]
    # [0, 57) serves the first, second and last range; [99_990, 100_000) the third; the
    # empty range costs no request
    assert (src.stats.requests, src.stats.bytes_read) == (2, 57 + 10)
    with pytest.raises(fermion.TruncatedFileError):
        src.read(99_995, 10)
    with pytest.raises(fermion.TruncatedFileError):
        src.read(-1, 3)
    src.close()
    src.close()  # idempotent


def test_views_outlive_the_source(data_file) -> None:
    """A mapping is released with its last view, never under one."""
    path, data = data_file
    src = LocalSource(str(path), memory_map=True)
    view = src.read(1000, 500)
    src.close()
    del src
    gc.collect()
    assert bytes(view) == data[1000:1500]


def test_files_that_cannot_be_mapped(tmp_path: Path) -> None:
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    src = LocalSource(str(empty), memory_map=True)
    assert src.size == 0 and src._view is None
    assert bytes(src.read(0, 0)) == b""
    with pytest.raises(fermion.InvalidArgumentError):
        LocalSource(str(tmp_path), memory_map=True)
    with pytest.raises(fermion.SourceNotFoundError):
        LocalSource(str(tmp_path / "missing"), memory_map=True)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # keeps the open below from blocking
    try:
        src = LocalSource(str(fifo), memory_map=True)
        assert src._view is None  # not a regular file: pread
        src.close()
    finally:
        os.close(fd)


@pytest.mark.parametrize("memory_map", [False, True])
def test_tables_read_the_same_mapped_or_not(tmp_path: Path, memory_map: bool) -> None:
    table = pa.table({"x": np.arange(50_000), "s": [f"v{i % 97}" for i in range(50_000)]})
    path = tmp_path / "t.fermion"
    fermion.write_table(table, path, page_size=4096)
    with fermion.FileReader(path, memory_map=memory_map) as r:
        assert (r.source._view is not None) is memory_map  # type: ignore[attr-defined]
        got = r.read()
        taken = r.take([49_999, 0, 777])
    gc.collect()  # the reader is closed; arrays built on mapped pages stay valid
    assert got.equals(table)
    assert taken.equals(table.take([49_999, 0, 777]))


def _mappings(path: Path) -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if line.rstrip().endswith(str(path)))


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc (Linux)")
def test_close_unmaps_the_file_unless_a_returned_array_uses_it(tmp_path: Path) -> None:
    """A closed reader drops its views of the mapping at once (before, the reader's
    reference cycles kept them, and the whole mapped file, until the garbage collector
    ran: lineitem takes grew RSS by 130 MB each). Arrays it returned keep the mapping
    alive and valid; reads after close raise a typed error, cached facts stay."""
    table = pa.table({"x": np.arange(50_000), "y": np.arange(50_000) * 0.5})
    path = tmp_path / "t.fermion"
    # one PLAIN page per column: a read hands out views of the mapping
    fermion.write_table(table, path, page_size=1 << 20, encodings=False, compression="none")
    gc.disable()  # only reference counting frees anything below
    try:
        with fermion.FileReader(path) as r:
            schema = r.schema
            taken = r.take([5, 49_999])
        assert _mappings(path) == 0  # take copies: nothing refers to the mapping
        with fermion.FileReader(path) as r:
            whole = r.read()  # PLAIN pages: zero-copy views of the mapping
        assert _mappings(path) == 1
        assert whole.equals(table) and taken.equals(table.take([5, 49_999]))
        del whole
        assert _mappings(path) == 0
    finally:
        gc.enable()
    with pytest.raises(fermion.InvalidArgumentError, match="closed"):
        r.read()
    assert r.schema == schema


@settings(max_examples=examples(60))
@given(
    ranges=st.lists(
        st.tuples(st.integers(0, 99_999), st.integers(0, 3000)), min_size=0, max_size=40
    ),
    max_gap=st.sampled_from([0, 16, 256, 4096]),
)
def test_read_copies_agrees_with_read_ranges(ranges: list[tuple[int, int]], max_gap: int) -> None:
    """Mapped or not, with the compiled preads (fermion/io/preads.c) or without them,
    ``read_copies`` returns the bytes ``read_ranges`` returns, coalesced the same way (the
    same request and byte counts). With the compiled preads it returns ``bytes``, not
    views: a batch lookup asks for hundreds of ranges, and each memoryview is one more
    object for the garbage collector to track."""
    data = bytes(np.random.default_rng(1).integers(0, 256, 100_000, dtype=np.uint8))
    ranges = [(o, min(n, 100_000 - o)) for o, n in ranges]
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"copies-{os.getpid()}.bin"
    path.write_bytes(data)
    compiled = source_module._PREADS
    try:
        for memory_map, kernel in (
            (False, None),
            (False, compiled),
            (True, compiled),
            (True, None),
        ):
            source_module._PREADS = kernel
            a = LocalSource(str(path), memory_map=memory_map)
            b = LocalSource(str(path), memory_map=memory_map)
            got = a.read_copies(ranges, max_gap=max_gap)
            want = b.read_ranges(ranges, max_gap=max_gap)
            assert [bytes(g) for g in got] == [bytes(w) for w in want]
            assert [bytes(g) for g in got] == [data[o : o + n] for o, n in ranges]
            if kernel is not None:
                assert all(type(g) is bytes for g in got)
            assert (a.stats.requests, a.stats.bytes_read) == (
                b.stats.requests,
                b.stats.bytes_read,
            )
            a.close()
            b.close()
    finally:
        source_module._PREADS = compiled
        path.unlink()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc (Linux)")
def test_read_copies_of_a_mapped_file_hold_no_mapping(data_file) -> None:
    """What point reads fetch is copied out: it outlives the mapping, which the source's
    close releases (views from ``read`` would keep it)."""
    path, data = data_file
    src = LocalSource(str(path), memory_map=True)
    gc.disable()
    try:
        got = src.read_copies([(10, 100), (50_000, 3000), (99_000, 1000)], max_gap=256)
        assert _mappings(path) == 1
        src.close()
        del src
        assert _mappings(path) == 0
        assert bytes(got[1]) == data[50_000:53_000] and bytes(got[2]) == data[99_000:]
    finally:
        gc.enable()


def test_the_compiled_preads_are_built() -> None:
    """``make test`` builds them (setup.py); a fresh clone must not silently lose them."""
    assert source_module._PREADS is not None


@pytest.mark.parametrize(("memory_map", "compiled"), [(False, True), (True, True), (True, False)])
def test_read_copies_bad_ranges(
    data_file, memory_map: bool, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = data_file
    if not compiled:
        monkeypatch.setattr(source_module, "_PREADS", None)
    src = LocalSource(str(path), memory_map=memory_map)
    with pytest.raises(fermion.TruncatedFileError):
        src.read_copies([(0, 10), (99_995, 10)], max_gap=0)
    with pytest.raises(fermion.TruncatedFileError):
        src.read_copies([(-1, 3)], max_gap=0)
    assert src.read_copies([], max_gap=0) == []
    src.close()
    with pytest.raises(fermion.InvalidArgumentError, match="closed"):
        src.read_copies([(0, 10)], max_gap=0)


@pytest.mark.parametrize("compiled", [True, False])
def test_read_copies_of_a_file_cut_after_opening(
    tmp_path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file cut shorter under an open mapped source: the copies are preads (the mapping
    is not touched), and the short read is a TruncatedFileError, never a crash or a
    partial range."""
    if not compiled:
        monkeypatch.setattr(source_module, "_PREADS", None)
    path = tmp_path / "cut.bin"
    path.write_bytes(bytes(range(256)) * 100)
    src = LocalSource(str(path), memory_map=True)
    try:
        assert bytes(src.read_copies([(25_000, 10)], max_gap=0)[0]) == bytes(range(168, 178))
        os.truncate(path, 20_000)
        got = src.read_copies([(100, 4), (19_000, 100)], max_gap=0)  # still inside
        assert [bytes(g) for g in got] == [
            bytes(range(100, 104)),
            (bytes(range(256)) * 100)[19_000:19_100],
        ]
        with pytest.raises(fermion.TruncatedFileError, match="short read"):
            src.read_copies([(100, 4), (19_990, 100)], max_gap=0)
    finally:
        src.close()


@pytest.mark.parametrize("compiled", [True, False])
def test_read_ranges_of_an_unmapped_file(
    tmp_path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a mapping, ``read_ranges`` is the compiled coalesced preads (or, not built,
    the Python loop): the same bytes, requests and byte counts either way. Bad inputs tried:
    a range past the end, a file cut shorter after opening, a closed source."""
    if not compiled:
        monkeypatch.setattr(source_module, "_PREADS", None)
    data = bytes(range(256)) * 100
    path = tmp_path / "r.bin"
    path.write_bytes(data)
    src = LocalSource(str(path))
    ranges = [(500, 10), (0, 4), (505, 20), (10_000, 0), (25_590, 10)]
    got = src.read_ranges(ranges, max_gap=16)
    assert [bytes(g) for g in got] == [data[a : a + n] for a, n in ranges]
    # merged: [0, 4), [500, 525) and [25590, 25600); the empty range reads nothing
    assert (src.stats.requests, src.stats.bytes_read) == (3, 39)
    with pytest.raises(fermion.TruncatedFileError):
        src.read_ranges([(0, 10), (25_595, 10)], max_gap=0)
    os.truncate(path, 20_000)
    with pytest.raises(fermion.TruncatedFileError, match="short read"):
        src.read_ranges([(100, 4), (19_990, 100)], max_gap=0)
    src.close()
    with pytest.raises(fermion.InvalidArgumentError, match="closed"):
        src.read_ranges([(0, 10)], max_gap=0)
