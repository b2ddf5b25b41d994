"""The compiled CRC_BLOCKS kernels (fermion/format/kernels.c, docs/FORMAT.md format 1.5)
against zlib and against the Python path they replace, and the bad arguments they refuse.

The kernels are optional: where they are not built, :data:`native.KERNELS` is None and
the readers and the writer use the Python path. Both paths run here: the Python one by
setting ``native.KERNELS`` to None.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
import sysconfig
import types
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.errors import ChecksumError, InvalidFileError
from fermion.format import native
from fermion.format.encoding import bitpack, encodings
from fermion.format.encoding.pages import CrcBlockedBody, encode_page
from fermion.format.metadata.structs import Compression
from tests.format.test_encodings import encodings_of
from tests.support.budget import examples

KERNELS = native.KERNELS
needs_kernels = pytest.mark.skipif(KERNELS is None, reason="compiled kernels not built here")


def test_the_functions_listed_are_the_kernels_functions() -> None:
    """native.FUNCTIONS (what a usable build must have) names every function of
    kernels.c's method table and nothing else."""
    source = Path(native.__file__).with_name("kernels.c").read_text()
    table = source[source.index("static PyMethodDef methods[]") :]
    defined = re.findall(r'\{"(\w+)", \w+, METH_', table)
    assert sorted(defined) == sorted(native.FUNCTIONS)
    if KERNELS is not None:
        assert all(callable(getattr(KERNELS, name)) for name in native.FUNCTIONS)


def test_a_build_older_than_its_source_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernels module without one of the functions (built from an older kernels.c and
    not rebuilt): native.KERNELS is None, and every caller takes its Python path."""
    stale = types.ModuleType("fermion.format.kernels")
    for name in native.FUNCTIONS[:-1]:
        setattr(stale, name, len)
    monkeypatch.setitem(sys.modules, "fermion.format.kernels", stale)
    monkeypatch.setattr(fermion.format, "kernels", stale, raising=False)
    fresh = importlib.reload(native)
    try:
        assert fresh.KERNELS is None
        setattr(stale, native.FUNCTIONS[-1], len)
        assert importlib.reload(native).KERNELS is stale
    finally:
        monkeypatch.undo()
        importlib.reload(native)
    assert native.KERNELS is KERNELS


def test_the_kernels_are_built_wherever_a_compiler_and_the_headers_are() -> None:
    headers = Path(sysconfig.get_paths()["include"], "Python.h").exists()
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if headers and compiler:
        assert KERNELS is not None, "setup.py should have built fermion.format.kernels"
    else:  # nothing to build them with: the Python path is the only one
        assert KERNELS is None


@needs_kernels
@settings(max_examples=examples(400))
@given(data=st.binary(min_size=0, max_size=3000), start=st.integers(0, 15))
def test_kernel_crc32_is_zlibs(data: bytes, start: int) -> None:
    """Every length from empty to a few KiB (the folding path from 64 bytes, the tables
    below and for the tail), at unaligned starts."""
    assert KERNELS is not None
    part = memoryview(data)[min(start, len(data)) :]
    assert KERNELS.crc32(part) == zlib.crc32(part)


@needs_kernels
def test_kernel_crc32_of_large_and_patterned_buffers() -> None:
    assert KERNELS is not None
    rng = np.random.default_rng(3)
    for data in (
        bytes(1 << 20),
        b"\xff" * 100_003,
        rng.integers(0, 256, (1 << 20) + 77, dtype=np.uint8).tobytes(),
    ):
        assert KERNELS.crc32(data) == zlib.crc32(data)


@needs_kernels
@pytest.mark.parametrize("size", [0, 1, 511, 512, 513, 5000])
@pytest.mark.parametrize("block", [1, 64, 100, 512])
def test_block_crcs_are_zlibs_per_block(size: int, block: int) -> None:
    assert KERNELS is not None
    data = np.random.default_rng(size + block).integers(0, 256, size, dtype=np.uint8).tobytes()
    expected = [zlib.crc32(data[k : k + block]) for k in range(0, size, block)]
    assert np.frombuffer(KERNELS.block_crcs(data, block), "<u4").tolist() == expected


def _body(payload: bytes, block: int) -> CrcBlockedBody:
    page = encode_page(
        payload, num_values=len(payload), codec=Compression.NONE, checksum_block_size=block
    )
    return CrcBlockedBody(memoryview(bytearray(page)), len(payload), "p")


def _outcome(body: CrcBlockedBody, begins, ends, kernels) -> tuple[str, list[bool]]:
    b, e = np.asarray(begins, np.int64), np.asarray(ends, np.int64)
    return _verdict(body, kernels, lambda done: body.verify_ranges(b, e, done))


def _verdict(
    body: CrcBlockedBody, kernels, check: Callable[[np.ndarray], None]
) -> tuple[str, list[bool]]:
    """What ``check(done)`` says of ``body`` with ``kernels`` (None: the Python path), and
    the blocks it marked done when it passes."""
    saved = native.KERNELS
    native.KERNELS = kernels
    done = np.zeros(body.num_blocks, dtype=bool)
    try:
        check(done)
    except ChecksumError:
        return "checksum", []
    except InvalidFileError:
        return "invalid", []
    finally:
        native.KERNELS = saved
    return "ok", done.tolist()


@needs_kernels
@settings(max_examples=examples(300))
@given(
    size=st.integers(1025, 6000),  # more than one block: stored as CRC_BLOCKS
    block=st.sampled_from([256, 300, 512, 1024]),
    ranges=st.lists(st.tuples(st.integers(0, 6000), st.integers(0, 700)), max_size=12),
    flip=st.one_of(st.none(), st.integers(0, 5999)),
    seed=st.integers(0, 2**16),
)
def test_verify_ranges_agrees_with_the_python_path(size, block, ranges, flip, seed) -> None:
    """The same verdict (and, when it passes, the same blocks marked) with and without
    the kernel: ranges anywhere, empty ones, ones past the payload, a flipped byte in a
    block read or not read."""
    rng = np.random.default_rng(seed)
    payload = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    body = _body(payload, block)
    if flip is not None and flip < size:
        body.payload[flip] ^= 0x01  # type: ignore[index]
    begins = [b for b, _ in ranges]
    ends = [b + n for b, n in ranges]
    expected = _outcome(body, begins, ends, None)
    got = _outcome(body, begins, ends, KERNELS)
    assert got == expected


@needs_kernels
def test_verify_ranges_reports_the_block_and_keeps_earlier_ones() -> None:
    body = _body(bytes(range(256)) * 8, 512)  # 4 blocks
    body.payload[1500] ^= 0x80  # type: ignore[index]  block 2
    done = np.zeros(4, dtype=bool)
    with pytest.raises(ChecksumError, match="block 2 CRC32 mismatch"):
        body.verify_ranges(np.array([0, 1024]), np.array([700, 2048]), done)
    assert done.tolist() == [True, True, False, False]
    done[2] = True  # a block already verified is not checked again
    body.verify_ranges(np.array([1400]), np.array([1600]), done)


@needs_kernels
def test_kernel_refuses_bad_arguments() -> None:
    """A range outside the payload (also through CrcBlockedBody: InvalidFileError), a CRC
    table or done flags of another length, begins and ends of different lengths or not
    int64-sized, and a block size of 0 or less: ValueError, nothing read."""
    assert KERNELS is not None
    payload = bytes(1000)
    crcs = KERNELS.block_crcs(payload, 512)
    done = np.zeros(2, dtype=np.uint8)
    one = np.array([0], dtype=np.int64)
    for begins, ends in ((np.array([-1]), np.array([5])), (np.array([900]), np.array([1001]))):
        with pytest.raises(ValueError, match="outside the payload"):
            KERNELS.verify_ranges(payload, 512, crcs, begins, ends, done)
    bad_calls = [
        (payload, 512, crcs[:4], one, one + 1, done),
        (payload, 512, crcs, one, one + 1, np.zeros(3, dtype=np.uint8)),
        (payload, 512, crcs, np.array([0, 1]), one + 1, done),
        (payload, 512, crcs, one.astype(np.int32), (one + 1).astype(np.int32)[:0], done),
        (payload, 0, crcs, one, one + 1, done),
        (payload, -512, crcs, one, one + 1, done),
    ]
    for args in bad_calls:
        with pytest.raises(ValueError):
            KERNELS.verify_ranges(*args)
    with pytest.raises(TypeError):  # done must be writable
        KERNELS.verify_ranges(payload, 512, crcs, one, one + 1, bytes(2))
    assert done.tolist() == [0, 0]
    body = _body(payload, 512)
    with pytest.raises(InvalidFileError, match="outside the payload"):
        body.verify_ranges(np.array([10]), np.array([1001]), np.zeros(2, dtype=bool))


def _packed_outcome(body: CrcBlockedBody, offset, bits, rows, kernels) -> tuple[str, list[bool]]:
    r = np.asarray(rows, np.int64)
    return _verdict(body, kernels, lambda done: body.verify_packed(offset, bits, r, done))


@needs_kernels
@settings(max_examples=examples(300))
@given(
    size=st.integers(1025, 6000),
    block=st.sampled_from([256, 300, 512, 1024]),
    offset=st.integers(0, 6100),
    bits=st.sampled_from([1, 3, 7, 8, 13, 17, 32, 33, 63, 64]),
    rows=st.lists(st.integers(-2, 6000), max_size=12),
    flip=st.one_of(st.none(), st.integers(0, 5999)),
    seed=st.integers(0, 2**16),
)
def test_verify_packed_agrees_with_the_python_path(
    size, block, offset, bits, rows, flip, seed
) -> None:
    """The fused kernel gives the verdict (and marks the blocks) that verify_ranges gives
    for the byte ranges of the packed values: rows anywhere (negative ones, ones past the
    payload), offsets past the payload, a flipped byte in a block read or not."""
    rng = np.random.default_rng(seed)
    body = _body(rng.integers(0, 256, size, dtype=np.uint8).tobytes(), block)
    if flip is not None and flip < size:
        body.payload[flip] ^= 0x10  # type: ignore[index]
    rows = sorted(rows)
    expected = _packed_outcome(body, offset, bits, rows, None)
    assert _packed_outcome(body, offset, bits, rows, KERNELS) == expected
    if rows and rows[0] < 0:  # no row of a page is negative
        assert expected == ("invalid", [])
        return
    begins = [offset + r * bits // 8 for r in rows]  # the ranges, written out once more
    ends = [offset + ((r + 1) * bits + 7) // 8 for r in rows]
    assert _outcome(body, begins, ends, None) == expected


@needs_kernels
def test_verify_packed_refuses_bad_arguments() -> None:
    """Widths 0 and 65, rows not int64-sized, a negative offset or one past the payload,
    a negative row, a row whose bits end past the payload, tables of the wrong size:
    ValueError, nothing marked."""
    assert KERNELS is not None
    payload = bytes(1000)
    crcs = KERNELS.block_crcs(payload, 512)
    done = np.zeros(2, dtype=np.uint8)
    rows = np.array([0, 5], dtype=np.int64)
    bad_calls = [
        (payload, 512, crcs, 0, 0, rows, done),
        (payload, 512, crcs, 0, 65, rows, done),
        (payload, 512, crcs, 0, 8, rows.astype(np.int32)[:1], done),
        (payload, 512, crcs, -1, 8, rows, done),
        (payload, 512, crcs, 1001, 8, rows, done),
        (payload, 512, crcs, 0, 8, np.array([-1], dtype=np.int64), done),
        (payload, 512, crcs, 0, 8, np.array([1000], dtype=np.int64), done),  # bytes 1000..1001
        (payload, 512, crcs, 999, 9, np.array([0], dtype=np.int64), done),  # 9 bits from 999
        (payload, 512, crcs[:4], 0, 8, rows, done),
        (payload, 0, crcs, 0, 8, rows, done),
        (payload, 512, crcs, 0, 8, rows, np.zeros(3, dtype=np.uint8)),
    ]
    for args in bad_calls:
        with pytest.raises(ValueError):
            KERNELS.verify_packed(*args)
    assert done.tolist() == [0, 0]
    assert KERNELS.verify_packed(payload, 512, crcs, 999, 8, np.array([0]), done) == -1
    assert done.tolist() == [0, 1]  # byte 999 is in block 1


@pytest.mark.parametrize("kernels", ["built", "python"])
def test_take_verifies_with_either_path(tmp_path: Path, monkeypatch, kernels: str) -> None:
    """A memory-mapped file with CRC_BLOCKS pages, a string column, a sorted (DELTA) and
    a few-valued (INT_DICTIONARY) column: take returns the same values with the kernels
    and in Python, and both raise ChecksumError for a flipped value byte."""
    if kernels == "built" and KERNELS is None:
        pytest.skip("compiled kernels not built here")
    if kernels == "python":
        monkeypatch.setattr(native, "KERNELS", None)
    rng = np.random.default_rng(5)
    words = [f"w{i}" + "z" * int(k) for i, k in enumerate(rng.integers(0, 40, 60_000))]
    table = pa.table(
        {
            "x": rng.random(60_000),
            "k": rng.integers(0, 2**40, 60_000),
            "s": pa.array(words),  # FOR lengths with checkpoints: the segment sums
            "d": np.cumsum(rng.integers(0, 1_000, 60_000)),  # DELTA, with checkpoints
            "q": rng.choice(rng.integers(0, 50_000, 40), 60_000),  # INT_DICTIONARY
        }
    )
    path = tmp_path / "c.fermion"
    fermion.write_table(table, path, compression="none")
    assert encodings_of(path)[("d", "DATA")] == {"DELTA"}
    assert encodings_of(path)[("q", "DATA")] == {"INT_DICTIONARY"}
    # the first and last rows, rows on and next to a checkpoint (every 256 values)
    idx = [0, 3, 255, 256, 257, 4_000, 31_337, 59_999]
    with fermion.FileReader(path) as r:
        assert r.take(idx).equals(table.take(idx))
    data = bytearray(path.read_bytes())
    at = data.find(np.float64(table.column("x")[31_337].as_py()).tobytes())
    assert at > 0
    data[at] ^= 0x01
    bad = tmp_path / "bad.fermion"
    bad.write_bytes(bytes(data))
    with fermion.FileReader(bad) as r, pytest.raises(ChecksumError):
        r.take(idx)


def _outcome_with(kernels: Any, fn: Callable[[], np.ndarray]) -> object:
    """``fn()`` as a list, or "invalid" where it raises InvalidFileError, with
    ``native.KERNELS`` set to ``kernels``."""
    saved, native.KERNELS = native.KERNELS, kernels
    try:
        return fn().tolist()
    except InvalidFileError:
        return "invalid"
    finally:
        native.KERNELS = saved


def _packed_stream(w: int, n: int, offset: int, cut: int, seed: int) -> tuple[np.ndarray, bytes]:
    """``n`` seeded values using all ``w`` bits, packed after ``offset`` stray bytes, the
    stream then cut short by ``cut`` bytes (not into the stray ones)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64, n, dtype=np.uint64) >> np.uint64(64 - w)
    stream = bytes(rng.integers(0, 256, offset, dtype=np.uint8)) + bitpack.pack(values, w)
    return values, stream[: max(offset, len(stream) - cut)]


def _gather_outcome(buf: bytes, offset: int, w: int, idx: np.ndarray, kernels) -> object:
    return _outcome_with(kernels, lambda: bitpack.gather(buf, offset, w, idx, "p"))


@needs_kernels
@pytest.mark.parametrize("w", [*range(1, 57), 64])
@settings(max_examples=examples(25))
@given(
    n=st.integers(1, 300),
    offset=st.integers(0, 9),
    cut=st.sampled_from([0, 0, 0, 1, 3, 7, 8, 12]),
    picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=40),
    stray=st.sampled_from([None, None, -1, -2, 0, 5]),
    seed=st.integers(0, 2**16),
)
def test_gather_agrees_with_the_python_path(w, n, offset, cut, picks, stray, seed) -> None:
    """The same values, or the same InvalidFileError, with and without the kernel: every
    width with values using all its bits, streams at an offset, cut short by up to 12
    bytes (values whose 8-byte word runs past the buffer, and values past it), a stray
    index (negative, or past the stream), repeats and any order."""
    values, buf = _packed_stream(w, n, offset, cut, seed)
    idx = np.array([p % n for p in picks], dtype=np.int64)
    if stray is not None:  # -1, -2: negative; 0, 5: that many past the last value
        idx = np.append(idx, stray if stray < 0 else n + stray)
    expected = _gather_outcome(buf, offset, w, idx, None)
    assert _gather_outcome(buf, offset, w, idx, KERNELS) == expected
    if cut == 0 and stray is None:
        assert expected == values[idx].tolist()


def _unpack_outcome(buf: bytes, offset: int, w: int, out: np.ndarray, kernels: Any) -> Any:
    def unpacked() -> np.ndarray:
        got = out.copy()
        bitpack.unpack_into(buf, offset, w, got, "p")
        return got

    return _outcome_with(kernels, unpacked)


@needs_kernels
@pytest.mark.parametrize("w", [*range(3, 57), 64])
@settings(max_examples=examples(20))
@given(
    n=st.integers(1, 400),
    offset=st.integers(0, 9),
    cut=st.sampled_from([0, 0, 0, 1, 3, 8]),
    dtype=st.sampled_from(["uint8", "uint16", "uint32", "uint64", "int64"]),
    seed=st.integers(0, 2**16),
)
def test_unpack_agrees_with_the_python_path(w, n, offset, cut, dtype, seed) -> None:
    """The same values, or the same InvalidFileError, with and without the kernel: every
    width it serves (1, 2 and 4 bits are a table gather either way) with values using all
    its bits, streams at an offset, buffers ending exactly at the last value (its word runs
    past the end) or cut short, outputs of every integer width (a wider value keeps its
    low bits)."""
    values, buf = _packed_stream(w, n, offset, cut, seed)
    out = np.zeros(n, dtype=dtype)
    expected = _unpack_outcome(buf, offset, w, out, None)
    assert _unpack_outcome(buf, offset, w, out, KERNELS) == expected
    if cut == 0:
        assert expected == values.astype(dtype).tolist()


@needs_kernels
def test_unpack_kernel_refuses_bad_arguments() -> None:
    assert KERNELS is not None
    buf, out = bytes(64), np.zeros(4, dtype=np.uint64)
    for w in (0, 57, 63, 65):
        with pytest.raises(ValueError, match="bit width"):
            KERNELS.unpack_bits(buf, 0, w, out, 8)
    for itemsize in (3, 16, 0):
        with pytest.raises(ValueError, match="whole integers"):
            KERNELS.unpack_bits(buf, 0, 5, out, itemsize)
    with pytest.raises(ValueError, match="whole integers"):
        KERNELS.unpack_bits(buf, 0, 5, np.zeros(3, dtype=np.uint8), 2)  # not whole uint16s
    with pytest.raises(TypeError):
        KERNELS.unpack_bits(buf, 0, 5, b"read-only", 1)
    assert KERNELS.unpack_bits(buf, 64, 5, out, 8) is False  # no room for the values
    assert KERNELS.unpack_bits(buf, -1, 5, out, 8) is False
    assert KERNELS.unpack_bits(bytes(3), 0, 5, out, 8) is True and out.tolist() == [0] * 4
    assert KERNELS.unpack_bits(bytes(2), 0, 5, out, 8) is False  # 20 bits need 3 bytes


def _materialized(parts: list[tuple[np.ndarray, pa.Array]], width: int, kernels: Any) -> Any:
    saved = native.KERNELS
    native.KERNELS = kernels
    try:
        offsets, data = encodings.materialize_dictionaries(parts, np.dtype(f"<i{width}"))
        return offsets.tolist(), data.to_pybytes()
    finally:
        native.KERNELS = saved


@needs_kernels
@settings(max_examples=examples(60))
@given(
    pages=st.lists(
        st.tuples(
            st.lists(st.binary(max_size=70), min_size=1, max_size=8),  # the dictionary
            st.lists(st.integers(0, 10**6), max_size=50),  # the picks, modulo its size
            st.integers(0, 2),  # where the dictionary starts in its array (a slice)
        ),
        min_size=1,
        max_size=4,
    ),
    width=st.sampled_from([4, 8]),
)
def test_take_binary_materializes_as_arrow_does(pages, width) -> None:
    """Pages of varying value lengths (empty values, empty dictionaries' bytes, values
    shorter and longer than the kernel's 32-byte copies, the last value of a dictionary
    among them), dictionaries that are slices of larger arrays, both offset widths: the
    kernel's column is the Arrow path's."""
    parts = []
    for values, picks, skip in pages:
        whole = pa.array([b"x" * skip] * skip + values, pa.large_binary())
        d = whole.slice(skip)
        parts.append((np.array([p % len(values) for p in picks], dtype=np.int64), d))
    lengths = {len(v) for values, _, _ in pages for v in values}
    expected = _materialized(parts, width, None)
    assert _materialized(parts, width, KERNELS) == expected
    if len(lengths) > 1:  # (one length: the NumPy path, the kernel is not asked)
        flat = [values[p % len(values)] for values, picks, _ in pages for p in picks]
        assert expected[1] == b"".join(flat)


@needs_kernels
def test_take_binary_declines_what_arrow_should_judge() -> None:
    assert KERNELS is not None
    offs = np.array([0, 2, 5], dtype="<i8")
    data = b"abcde"
    ok = KERNELS.take_binary([(offs, data, np.array([1, 0, 1], dtype=np.int64))], 4)
    assert ok is not None
    assert np.frombuffer(ok[0], "<i4").tolist() == [0, 3, 5, 8] and ok[1] == b"cdeabcde"
    for idx in ([2], [-1]):  # an index outside the dictionary
        assert KERNELS.take_binary([(offs, data, np.array(idx, dtype=np.int64))], 8) is None
    for bad in ([0, 3, 2], [0, 2, 9], [-1, 2, 5]):  # decreasing, past the bytes, negative
        got = KERNELS.take_binary(
            [(np.array(bad, dtype="<i8"), data, np.array([0, 1], dtype=np.int64))], 8
        )
        assert got is None
    empty = KERNELS.take_binary([(offs, data, np.zeros(0, dtype=np.int64))], 8)
    assert empty is not None and np.frombuffer(empty[0], "<i8").tolist() == [0]
    with pytest.raises(ValueError, match="offset_size"):
        KERNELS.take_binary([], 3)
    with pytest.raises(ValueError, match="int64"):
        KERNELS.take_binary([(b"\0" * 12, data, np.zeros(1, dtype=np.int64))], 4)
    with pytest.raises(TypeError):
        KERNELS.take_binary([(offs, data)], 4)  # a part of two
    with pytest.raises(TypeError):
        KERNELS.take_binary(5, 4)


@needs_kernels
def test_gather_kernel_refuses_bad_arguments() -> None:
    assert KERNELS is not None
    buf, idx = bytes(64), np.array([1, 2], dtype=np.int64)
    for w in (0, 65, -3):
        with pytest.raises(ValueError, match="bit width"):
            KERNELS.gather_bits(buf, 0, w, idx, np.zeros(2, dtype=np.uint64))
    with pytest.raises(ValueError, match="one length"):
        KERNELS.gather_bits(buf, 0, 3, idx, np.zeros(3, dtype=np.uint64))
    with pytest.raises(TypeError):  # out must be writable
        KERNELS.gather_bits(buf, 0, 3, idx, bytes(16))
    out = np.full(2, 7, dtype=np.uint64)
    assert KERNELS.gather_bits(buf, -1, 3, idx, out) is False  # a negative offset
    assert KERNELS.gather_bits(buf, 65, 3, idx, out) is False  # an offset past the buffer
    assert KERNELS.gather_bits(buf, 0, 8, np.array([64]), out[:1]) is False
    assert out.tolist() == [7, 7]  # nothing written


@needs_kernels
@pytest.mark.parametrize("w", [1, 3, 6, 8, 13, 31, 32, 47, 56, 64])
@settings(max_examples=examples(40))
@given(
    n=st.integers(1, 700),
    interval=st.sampled_from([8, 256, 1000]),
    cut=st.sampled_from([0, 0, 0, 1, 5, 9]),
    picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=30),
    stray=st.sampled_from([None, None, -1, 0, 3]),
    seed=st.integers(0, 2**16),
)
def test_segment_sums_are_the_running_sums(w, n, interval, cut, picks, stray, seed) -> None:
    """Each row's value and the sum (wrapping in int64) of the values since its segment
    began, against numpy; a stray row (negative or past the stream) or a stream cut
    short before a row's value ends: False. Values use all ``w`` bits."""
    assert KERNELS is not None
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64, n, dtype=np.uint64) >> np.uint64(64 - w)
    offset = int(rng.integers(0, 5))
    buf = bytes(offset) + bitpack.pack(values, w) + bytes(int(rng.integers(0, 9)))
    end = offset + bitpack.packed_size(n, w) - cut
    rows = np.array(sorted({p % n for p in picks}), dtype=np.int64)
    if stray is not None:
        rows = np.append(rows, stray if stray < 0 else n + stray)
    before = np.zeros(len(rows), dtype=np.int64)
    value = np.zeros(len(rows), dtype=np.int64)
    ok = KERNELS.segment_sums(buf, offset, end, w, interval, rows, before, value)
    fits = all(0 <= r and (int(r) + 1) * w <= 8 * (end - offset) for r in rows)
    assert ok is fits
    if fits:  # a row past n but inside the last byte reads padding: zeros
        signed = np.zeros(max(n, int(rows.max()) + 1), dtype=np.int64)
        signed[:n] = values.view(np.int64)
        with np.errstate(over="ignore"):
            sums = [int(signed[r - r % interval : r].sum()) for r in rows]
        assert before.tolist() == sums and value.tolist() == signed[rows].tolist()


@needs_kernels
def test_segment_sums_refuse_bad_arguments() -> None:
    assert KERNELS is not None
    buf, rows = bytes(64), np.array([1, 2], dtype=np.int64)
    out = [np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)]
    for w, interval in ((0, 8), (65, 8), (3, 0)):
        with pytest.raises(ValueError, match="bit width"):
            KERNELS.segment_sums(buf, 0, 64, w, interval, rows, *out)
    with pytest.raises(ValueError, match="one length"):
        KERNELS.segment_sums(buf, 0, 64, 3, 8, rows, out[0][:1], out[1])
    for offset, end in ((-1, 10), (10, 5), (0, 65)):  # outside the buffer, or reversed
        assert KERNELS.segment_sums(buf, offset, end, 3, 8, rows, *out) is False


def test_strided_arguments_take_a_path_that_reads_them() -> None:
    """Index and range arrays with strides (views a caller may pass) give the same results
    as contiguous ones: the kernels get contiguous copies."""
    body = _body(bytes(range(256)) * 8, 512)
    spread = np.array([[0, 99], [700, 99], [1500, 99]], dtype=np.int64)
    done = np.zeros(4, dtype=bool)
    body.verify_ranges(spread[:, 0], spread[:, 0] + 10, done)  # every other int64
    assert done.tolist() == [True, True, True, False]
    packed = bitpack.pack(np.arange(40, dtype=np.uint64), 7)
    assert bitpack.gather(memoryview(packed), 0, 7, np.arange(40)[::-3]).tolist() == list(
        range(39, -1, -3)
    )


@needs_kernels
@settings(max_examples=examples(300))
@given(
    width=st.sampled_from([1, 2, 3, 4, 8, 16, 32]),
    n=st.integers(0, 2000),
    start=st.integers(0, 7),
    seed=st.integers(0, 2**32 - 1),
)
def test_byte_planes_are_the_transpose_and_back(width: int, n: int, start: int, seed: int) -> None:
    """Every count around the 16-value steps of the width-8 kernel, from unaligned
    buffers: the planes are numpy's transpose, and joining them gives the values back."""
    assert KERNELS is not None
    raw = np.random.default_rng(seed).integers(0, 256, start + n * width, dtype=np.uint8)
    values = raw[start:]
    planes = np.empty(n * width, dtype=np.uint8)
    KERNELS.byte_planes(values, planes, width, False)
    assert planes.tobytes() == np.ascontiguousarray(values.reshape(n, width).T).tobytes()
    back = bytearray(n * width)
    KERNELS.byte_planes(planes, back, width, True)
    assert bytes(back) == values.tobytes()


@needs_kernels
def test_byte_planes_refuse_bad_arguments() -> None:
    assert KERNELS is not None
    for src, dst, width in [
        (bytes(8), bytearray(8), 0),  # no width
        (bytes(8), bytearray(8), 256),
        (bytes(8), bytearray(12), 4),  # sizes differ
        (bytes(10), bytearray(10), 4),  # not whole values
    ]:
        with pytest.raises(ValueError):
            KERNELS.byte_planes(src, dst, width, False)
    with pytest.raises(TypeError):  # a read-only destination
        KERNELS.byte_planes(bytes(8), bytes(8), 4, True)


def test_byte_split_pages_with_either_path(monkeypatch) -> None:
    """The writer's planes and the reader's values are the same bytes either way."""
    from fermion.format.encoding.encodings import decode_byte_split, encode_byte_split

    rng = np.random.default_rng(9)
    pages = {}
    for name in ("compiled", "python"):
        if name == "python":
            monkeypatch.setattr(native, "KERNELS", None)
        elif KERNELS is None:
            continue
        for width, n in ((4, 32_000), (8, 4_097), (8, 64)):
            plain = rng.standard_normal(n).astype(f"<f{width}").tobytes()
            payload = encode_byte_split(plain, width, sampled=False)
            assert payload is not None
            pages[name, width, n] = payload
            assert bytes(decode_byte_split(payload) or b"") == plain
            into = np.empty(len(plain), dtype=np.uint8)
            assert decode_byte_split(payload, into=into) is None and into.tobytes() == plain
        rng = np.random.default_rng(9)
    if KERNELS is not None:
        assert all(pages["compiled", *k[1:]] == pages["python", *k[1:]] for k in pages)


# -- FLOAT_DECIMAL exponent trials ------------------------------------------------------

_SPECIAL = [0.0, -0.0, 0.1, -0.3, 1e-300, 5e-324, 3.4e38, 1e300, 2.0**53, -(2.0**53) + 1, 0.5]


def _trial_counts(
    values: np.ndarray, width: int, kernel: int, lo: int, hi: int, kernels: Any
) -> tuple[list[int], ...]:
    """The counts of :class:`decimal_floats._Trials` by the kernels given (None: numpy)."""
    from fermion.format.encoding import decimal_floats

    saved, native.KERNELS = native.KERNELS, kernels
    try:
        trials = decimal_floats._Trials(values, width, split=0)
        return trials._count(lo, hi, kernel)
    finally:
        native.KERNELS = saved


@needs_kernels
@settings(max_examples=examples(300))
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    width=st.sampled_from([4, 8]),
    kernel=st.sampled_from([0, 1]),
    places=st.integers(0, 20),
    scale=st.sampled_from([1.0, 1e3, 1e9, 1e17, 1e-6]),
    special=st.booleans(),
)
def test_decimal_trials_agree_with_numpy(
    seed: int, n: int, width: int, kernel: int, places: int, scale: float, special: bool
) -> None:
    """The kernel's counts per exponent are numpy's, bit for bit: decimals with 0-20
    places (some beyond what a float holds), random values, values past 2**53 at some
    exponent, NaN, infinities, -0.0, subnormals, in float32 and float64, both kernels."""
    from fermion.format.encoding.decimal_floats import MAX_EXPONENT

    rng = np.random.default_rng(seed)
    values = np.round(rng.standard_normal(n) * scale, min(places, 15))
    if special and n:
        picks = _SPECIAL + [np.nan, np.inf, -np.inf]
        at = rng.integers(0, n, min(n, 12))
        values[at] = [picks[i % len(picks)] for i in range(len(at))]
    with np.errstate(over="ignore"):  # float32 overflows to infinity: one more case
        values = values.astype(np.float32 if width == 4 else np.float64)
    lo = int(rng.integers(0, MAX_EXPONENT + 1))
    hi = int(rng.integers(lo, MAX_EXPONENT + 2))
    built = _trial_counts(values, width, kernel, lo, hi, KERNELS)
    python = _trial_counts(values, width, kernel, lo, hi, None)
    assert built == python
    assert len(built.unfit) == hi - lo


def test_find_exponent_is_the_same_with_either_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decimals, random floats, prices as float32, integers, mixed signs, a few NaN."""
    from fermion.format.encoding.decimal_floats import find_exponent

    rng = np.random.default_rng(11)
    pages = [
        np.round(rng.random(5000) * 100, 2),
        rng.random(5000),
        np.round(rng.random(5000) * 1e4, 2).astype(np.float32),
        rng.random(5000).astype(np.float32),
        rng.integers(-1000, 1000, 5000).astype(np.float64),
        np.round(rng.standard_normal(5000), 3),
        np.where(rng.random(5000) < 0.01, np.nan, np.round(rng.random(5000), 4)),
        np.round(rng.random(5000) * 1e-5, 9),
    ]
    built = [find_exponent(v, None, v.dtype.itemsize) for v in pages]
    monkeypatch.setattr(native, "KERNELS", None)
    assert [find_exponent(v, None, v.dtype.itemsize) for v in pages] == built
    assert built[0] == (2, 0) and built[1] is None  # the search still decides
    assert built[3] is None and built[4] == (0, 0)


@needs_kernels
def test_decimal_trials_refuse_bad_arguments() -> None:
    """Widths other than 4 and 8, kernels other than 0 and 1, a partial float, pow10 and
    pow10_inv of different lengths, exponents outside pow10, an out of the wrong size:
    ValueError, out untouched."""
    from fermion.format.encoding.decimal_floats import _POW10, _POW10_INV

    assert KERNELS is not None
    values = np.arange(10, dtype=np.float64)
    good = (values, 8, 0, _POW10, _POW10_INV, 0, 3, np.zeros((4, 3), np.int64))
    KERNELS.decimal_trials(*good)
    for changes in [  # argument position -> bad value (with an out of the size asked)
        {1: 2},
        {2: 2},
        {0: values.tobytes()[:-1]},
        {4: _POW10_INV[:-1]},
        {5: -1, 7: np.full((4, 4), 7, np.int64)},  # lo -1 .. hi 3
        {6: 20, 7: np.full((4, 20), 7, np.int64)},  # 20 exponents of the 19 in pow10
        {7: np.zeros((4, 2), np.int64)},
    ]:
        args = list(good)
        for at, bad in changes.items():
            args[at] = bad
        out = args[7]
        before = np.array(out, copy=True)
        with pytest.raises(ValueError):
            KERNELS.decimal_trials(*args)
        assert np.array_equal(out, before)


_GATHER_TYPES = {
    pa.int8(): "c",
    pa.uint16(): "S",
    pa.int32(): "i",
    pa.uint64(): "L",
    pa.float32(): "f",
    pa.float64(): "g",
}


def _stream(batches: list[pa.RecordBatch], schema: pa.Schema | None = None) -> object:
    """The batches as the writer hands them to ``gather_stream``: one Arrow C stream."""
    reader = pa.RecordBatchReader.from_batches(schema or batches[0].schema, batches)
    return reader.__arrow_c_stream__()


@needs_kernels
@settings(max_examples=examples(150))
@given(
    t=st.sampled_from(sorted(_GATHER_TYPES, key=str)),
    columns=st.integers(1, 12),
    rows=st.integers(0, 40),
    cuts=st.lists(st.integers(0, 40), max_size=4),
    before=st.integers(0, 9),
    picked=st.lists(st.integers(0, 11), min_size=1, max_size=12),
    seed=st.integers(0, 2**16),
)
def test_gather_stream_copies_each_column_into_its_row(
    t: pa.DataType,
    columns: int,
    rows: int,
    cuts: list[int],
    before: int,
    picked: list[int],
    seed: int,
) -> None:
    """A stream of slices of a record batch (so that the columns start at an offset; empty
    slices too) copied into rows of a block from a row offset, as the writer's batch mode
    does: the picked columns, in any order and repeated, each into its row; the rest of the
    block untouched."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(t.to_pandas_dtype())
    raw = rng.integers(0, 256, (columns, rows * dtype.itemsize), dtype=np.uint8)
    values = [raw[c].view(dtype) for c in range(columns)]
    batch = pa.record_batch(
        [pa.array(v, t) for v in values], names=[f"c{c}" for c in range(columns)]
    )
    bounds = sorted({0, rows, *(min(c, rows) for c in cuts)})
    parts = [batch.slice(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)]
    chosen = [c % columns for c in picked]
    width = before + rows + 3
    block = np.full((len(chosen), width), 7, dtype=dtype)
    got = KERNELS.gather_stream(
        _stream(parts, batch.schema),
        _GATHER_TYPES[t],
        dtype.itemsize,
        np.asarray(chosen, dtype=np.int64),
        block,
        width,
        before,
    )
    assert got == rows
    want = np.full((len(chosen), width), 7, dtype=dtype)
    for j, c in enumerate(chosen):
        want[j, before : before + rows] = values[c]
    assert block.tobytes() == want.tobytes()


@needs_kernels
def test_gather_stream_declines_what_it_cannot_copy() -> None:
    """Nulls, another type, a block of the wrong size or too few rows: -1 (the writer then
    gathers another way), nothing copied from the batch it stopped at; a column index out
    of range declines too. A bad capsule, argument or stream raises."""
    good = pa.record_batch(
        {"a": pa.array([1.0, 2.0], pa.float32()), "b": pa.array([3.0, 4.0], pa.float32())}
    )
    block = np.zeros((2, 4), dtype=np.float32)
    both = np.array([0, 1], dtype=np.int64)

    def gather(
        batches: list[pa.RecordBatch],
        fmt: str = "f",
        out: np.ndarray = block,
        rows: int = 4,
        at: int = 0,
        cols: np.ndarray = both,
    ) -> int:
        return int(KERNELS.gather_stream(_stream(batches), fmt, 4, cols, out, rows, at))

    nulls = pa.record_batch(
        {"a": pa.array([1.0, None], pa.float32()), "b": pa.array([3.0, 4.0], pa.float32())}
    )
    mixed = pa.record_batch(
        {"a": pa.array([1.0, 2.0], pa.float32()), "b": pa.array([3, 4], pa.int32())}
    )
    assert gather([nulls]) == -1
    assert gather([mixed]) == -1
    assert gather([good], fmt="g") == -1
    assert gather([good], rows=1, out=np.zeros((2, 1), np.float32)) == -1  # rows do not fit
    assert gather([good], at=3) == -1
    assert gather([good, good], at=1) == -1  # the second batch would overflow the block
    assert gather([good], cols=np.array([0, 2], dtype=np.int64)) == -1  # no column 2
    assert gather([good], cols=np.array([0, -1], dtype=np.int64)) == -1
    assert block[:, 3:].tolist() == [[0], [0]]  # (the first batch of the overflow was copied)
    block[:] = 0
    assert gather([nulls], cols=np.array([1, 1], dtype=np.int64)) == 2  # only b is read
    assert block.tolist() == [[3, 4, 0, 0], [3, 4, 0, 0]]
    block[:] = 0
    assert gather([good, good.slice(1)], at=1) == 3
    assert block.tolist() == [[0, 1, 2, 2], [0, 3, 4, 4]]
    empty = pa.RecordBatchReader.from_batches(good.schema, []).__arrow_c_stream__()
    assert KERNELS.gather_stream(empty, "f", 4, both, block, 4, 0) == 0
    with pytest.raises(ValueError):  # not a stream capsule
        KERNELS.gather_stream(good.__arrow_c_array__()[1], "f", 4, both, block, 4, 0)
    with pytest.raises(TypeError):  # a read-only block
        KERNELS.gather_stream(_stream([good]), "f", 4, both, b"read only", 4, 0)
    with pytest.raises(ValueError):  # a block of another size
        KERNELS.gather_stream(_stream([good]), "f", 4, both, block, 3, 0)
    with pytest.raises(ValueError):  # a row offset past the block
        KERNELS.gather_stream(_stream([good]), "f", 4, both, block, 4, 5)

    def broken() -> object:
        yield good
        raise OSError("the source went away")

    failing = pa.RecordBatchReader.from_batches(good.schema, broken()).__arrow_c_stream__()
    with pytest.raises(RuntimeError, match="the source went away"):
        KERNELS.gather_stream(failing, "f", 4, both, np.zeros((2, 8), np.float32), 8, 0)


def test_batch_writes_are_the_same_with_either_gather(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's batch-mode gather with the kernel and with ``to_tensor`` writes the
    same bytes, batches given as record batches or as table slices."""
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 20, 60)
    n = int(sizes.sum())
    table = pa.table(
        {f"f{i}": rng.random(n).astype(np.float32) for i in range(24)}
        | {"s": [str(i) for i in range(n)]}
    )
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    outputs = []
    for kernels in (KERNELS, None):
        monkeypatch.setattr(native, "KERNELS", kernels)
        for kind in ("batch", "table"):
            path = tmp_path / f"{kernels is None}-{kind}.fermion"
            with fermion.FileWriter(path, table.schema, max_stripe_rows=300) as w:
                for k, (a, b) in enumerate(zip(starts, starts[1:], strict=False)):
                    part = table.slice(a, b - a)
                    w.append_batch(
                        k, part.combine_chunks().to_batches()[0] if kind == "batch" else part
                    )
            outputs.append(path.read_bytes())
    assert len(set(outputs)) == 1
    assert fermion.read_table(str(tmp_path / "True-table.fermion")).equals(table)
