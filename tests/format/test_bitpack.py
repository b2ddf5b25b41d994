"""Bit-packing kernels (``fermion.format.encoding.bitpack``): layout, round trips, gather,
bad inputs.

The layout is checked against a pure-Python reference (one big little-endian integer in
which value ``i`` is bits ``[i*w, (i+1)*w)``), for every valid width 1..56 and 64, lengths
0..2001 (multiples of 8 and not), at non-zero byte offsets inside larger buffers whose
neighbouring bytes are all ones.

Bad inputs tried here, each of which must raise ``fermion.InvalidFileError`` (a
``FermionError``) from ``unpack`` (and ``unpack_into``) and ``gather``: invalid widths
(-1, 0, 57, 63, 65, 255), a negative count, a buffer one byte too short for ``n`` values
(at offset 0 and inside a larger buffer), a negative byte offset, an offset at or past the
end of the buffer, a gather index whose bits end past the buffer (the first such index,
and a huge one) and a negative gather index. ``pack`` refuses the same invalid widths with
``fermion.InvalidArgumentError`` (a caller's mistake, not a bad file).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.format import native
from fermion.format.encoding import bitpack
from tests.support.budget import examples

WIDTHS = [*range(1, 57), 64]
BAD_WIDTHS = [-1, 0, 57, 63, 65, 255]
LENGTHS = [0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 1999, 2000, 2001]
FILL = 0xFF  # bytes around a stream: a kernel reading a neighbour would pick up ones


def random_values(w: int, n: int, seed: int) -> np.ndarray:
    """``n`` values below ``2**w``, with zeros and the all-ones value mixed in."""
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 2**w - 1, n, dtype=np.uint64, endpoint=True)
    v[::5] = 2**w - 1
    v[2::7] = 0
    return v


def reference_pack(values: np.ndarray, w: int) -> bytes:
    """The normative layout: bit ``k`` of the stream is bit ``k % 8`` of byte ``k // 8``."""
    acc = 0
    for v in reversed(values.tolist()):
        acc = (acc << w) | v
    return acc.to_bytes(bitpack.packed_size(len(values), w), "little")


def embed(stream: bytes, offset: int, tail: int) -> bytes:
    return bytes([FILL]) * offset + stream + bytes([FILL]) * tail


# -- layout and round trips ---------------------------------------------------------------


@pytest.mark.parametrize("w", WIDTHS)
def test_every_width_matches_the_reference_and_round_trips(w: int) -> None:
    for n in LENGTHS:
        values = random_values(w, n, seed=w * 10_000 + n)
        packed = bitpack.pack(values, w)
        assert len(packed) == bitpack.packed_size(n, w) == -(-n * w // 8)
        assert packed == reference_pack(values, w), (w, n)
        for offset, tail in [(0, 0), (3, 0), (5, 11), (8, 1)]:
            buf = embed(packed, offset, tail)
            out = bitpack.unpack(buf, offset, w, n)
            assert out.dtype == np.uint64 and len(out) == n
            np.testing.assert_array_equal(out, values)


@settings(max_examples=examples(300))
@given(
    w=st.sampled_from(WIDTHS),
    n=st.integers(0, 2000),
    offset=st.integers(0, 17),
    tail=st.integers(0, 9),
    seed=st.integers(0, 2**32),
)
def test_round_trip_inside_a_larger_buffer(w: int, n: int, offset: int, tail: int, seed: int):
    values = random_values(w, n, seed)
    packed = bitpack.pack(values, w)
    assert len(packed) == bitpack.packed_size(n, w)
    buf = embed(packed, offset, tail)
    for view in (buf, memoryview(buf), np.frombuffer(buf, dtype=np.uint8)):
        np.testing.assert_array_equal(bitpack.unpack(view, offset, w, n), values)
    if (n * w) % 8:  # the unused high bits of the last byte are zero
        assert packed[-1] >> ((n * w) % 8) == 0


@settings(max_examples=examples(300))
@given(
    w=st.sampled_from(WIDTHS),
    n=st.integers(0, 300),
    offset=st.integers(0, 17),
    tail=st.integers(0, 9),
    out_bytes=st.sampled_from([1, 2, 4, 8]),
    seed=st.integers(0, 2**32),
)
def test_unpack_into_any_unsigned_width_keeps_the_low_bits(
    w: int, n: int, offset: int, tail: int, out_bytes: int, seed: int
) -> None:
    """Into outputs narrower than the values (as a cast would) and wider; buffers ending
    right after the stream (tail 0) take the padded path for their last groups."""
    values = random_values(w, n, seed)
    buf = embed(bitpack.pack(values, w), offset, tail)
    out = np.full(n, 0xAB, dtype=f"<u{out_bytes}")
    bitpack.unpack_into(memoryview(buf), offset, w, out)
    np.testing.assert_array_equal(out, values.astype(out.dtype))


needs_kernels = pytest.mark.skipif(native.KERNELS is None, reason="kernels not built here")


@needs_kernels
@pytest.mark.parametrize("w", [w for w in WIDTHS if w not in (8, 16, 32, 64)])
def test_the_pack_kernel_writes_the_bytes_of_the_numpy_passes(w: int, monkeypatch) -> None:
    """``kernels.pack_bits`` (one loop) and the eight numpy passes give the same bytes,
    also on pages long enough for the kernel to release the GIL."""
    for n in [*LENGTHS, 16_383, 16_384, 100_003]:
        values = random_values(w, n, seed=w * 7 + n)
        with_kernels = bitpack.pack(values, w)
        monkeypatch.setattr(native, "KERNELS", None)
        assert bitpack.pack(values, w) == with_kernels, (w, n)
        monkeypatch.undo()
        if n <= 2001:
            assert with_kernels == reference_pack(values, w)


@needs_kernels
def test_the_pack_kernel_refuses_what_it_cannot_pack() -> None:
    """A value wider than ``w`` bits: False (``pack`` then makes the numpy passes, whose
    bytes are the same as before the kernel); a bad width or output size: ValueError."""
    kernels = native.KERNELS
    assert kernels is not None
    wide = np.array([1, 2, 9, 3], dtype=np.uint64)  # 9 needs 4 bits
    assert not kernels.pack_bits(wide, 3, bytearray(bitpack.packed_size(4, 3)))
    out = bytearray(bitpack.packed_size(4, 4))
    assert kernels.pack_bits(wide, 4, out) and bytes(out) == bitpack.pack(wide, 4)
    for w, size in [(0, 1), (57, 29), (3, 1), (3, 3)]:
        with pytest.raises(ValueError):
            kernels.pack_bits(wide, w, bytearray(size))
    with pytest.raises(ValueError):
        kernels.pack_bits(b"\x01\x02\x03", 3, bytearray(2))  # not whole uint64 values


def test_the_example_of_the_format_spec() -> None:
    """docs/FORMAT.md §5.1: 5, 0, 7, 3, 1 at 3 bits are the bytes C5 17."""
    packed = bitpack.pack(np.array([5, 0, 7, 3, 1], dtype=np.uint64), 3)
    assert packed == bytes.fromhex("c517")
    assert bitpack.unpack(packed, 0, 3, 5).tolist() == [5, 0, 7, 3, 1]


@pytest.mark.parametrize("w", [8, 16, 32, 64])
def test_byte_widths_are_plain_little_endian_integers(w: int) -> None:
    values = random_values(w, 1001, seed=w)
    assert bitpack.pack(values, w) == values.astype(f"<u{w // 8}").tobytes()


def test_pack_accepts_signed_input_within_range() -> None:
    values = np.array([0, 1, 6, 7, 3], dtype=np.int64)
    assert bitpack.pack(values, 3) == bitpack.pack(values.astype(np.uint64), 3)
    assert bitpack.unpack(bitpack.pack(values, 3), 0, 3, 5).tolist() == [0, 1, 6, 7, 3]


# -- gather -------------------------------------------------------------------------------


@settings(max_examples=examples(300))
@given(
    w=st.sampled_from(WIDTHS),
    n=st.integers(1, 2000),
    offset=st.integers(0, 17),
    k=st.integers(1, 64),
    seed=st.integers(0, 2**32),
)
def test_gather_equals_unpack_then_index(w: int, n: int, offset: int, k: int, seed: int) -> None:
    values = random_values(w, n, seed)
    buf = embed(bitpack.pack(values, w), offset, 8)
    idx = np.random.default_rng(seed).integers(0, n, k)  # unsorted, with repeats
    full = bitpack.unpack(buf, offset, w, n)
    got = bitpack.gather(buf, offset, w, idx)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, full[idx])
    np.testing.assert_array_equal(got, values[idx])
    # the buffer may end right after the last wanted value, and not one byte earlier
    end = offset + bitpack.packed_size(int(idx.max()) + 1, w)
    np.testing.assert_array_equal(bitpack.gather(buf[:end], offset, w, idx), values[idx])
    with pytest.raises(fermion.InvalidFileError):
        bitpack.gather(buf[: end - 1], offset, w, idx)


@pytest.mark.parametrize("w", WIDTHS)
def test_gather_the_last_value_of_an_exact_buffer(w: int) -> None:
    for n in (1, 7, 8, 9, 100):
        values = random_values(w, n, seed=w + n)
        buf = embed(bitpack.pack(values, w), 3, 0)  # nothing after the stream
        idx = np.array([n - 1, 0, n - 1])
        np.testing.assert_array_equal(bitpack.gather(buf, 3, w, idx), values[idx])


def test_gather_of_no_indices_is_empty() -> None:
    out = bitpack.gather(b"", 0, 5, np.array([], dtype=np.int64))
    assert out.dtype == np.uint64 and out.shape == (0,)


# -- sizes and widths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "n,w,size",
    [(0, 1, 0), (0, 64, 0), (1, 1, 1), (8, 1, 1), (9, 1, 2), (1, 3, 1), (3, 3, 2), (8, 3, 3)]
    + [(5, 8, 5), (1, 56, 7), (2, 56, 14), (3, 17, 7), (1000, 13, 1625), (1, 64, 8)],
)
def test_packed_size(n: int, w: int, size: int) -> None:
    assert bitpack.packed_size(n, w) == size


@given(n=st.integers(0, 10**9), w=st.sampled_from(WIDTHS))
def test_packed_size_is_ceil_of_bits_over_eight(n: int, w: int) -> None:
    size = bitpack.packed_size(n, w)
    assert 8 * size >= n * w > 8 * (size - 1)


@pytest.mark.parametrize(
    "span,bits",
    [(0, 1), (1, 1), (2, 2), (3, 2), (255, 8), (256, 9), (2**32 - 1, 32), (2**32, 33)]
    + [(2**55, 56), (2**56 - 1, 56), (2**56, 64), (2**63, 64), (2**64 - 1, 64)],
)
def test_bits_for(span: int, bits: int) -> None:
    assert bitpack.bits_for(span) == bits


@given(span=st.integers(0, 2**64 - 1))
def test_bits_for_is_the_smallest_valid_width(span: int) -> None:
    b = bitpack.bits_for(span)
    assert bitpack.valid_bits(b) and span < 2**b
    smaller = [w for w in WIDTHS if w < b]
    assert not smaller or span >= 2 ** max(smaller)


def test_valid_bits() -> None:
    assert [w for w in range(-2, 130) if bitpack.valid_bits(w)] == WIDTHS
    assert bitpack.MAX_BITS == 56


# -- bad inputs ---------------------------------------------------------------------------


def test_invalid_file_error_is_a_fermion_error() -> None:
    assert issubclass(fermion.InvalidFileError, fermion.FermionError)


@pytest.mark.parametrize("w", BAD_WIDTHS)
def test_invalid_widths_are_refused(w: int) -> None:
    buf = bytes(64)
    with pytest.raises(fermion.InvalidFileError, match="invalid bit width"):
        bitpack.unpack(buf, 0, w, 4)
    with pytest.raises(fermion.InvalidFileError, match="invalid bit width"):
        bitpack.unpack(buf, 0, w, 0)
    with pytest.raises(fermion.InvalidFileError, match="invalid bit width"):
        bitpack.gather(buf, 0, w, np.array([0]))
    with pytest.raises(fermion.InvalidArgumentError, match="invalid bit width"):
        bitpack.pack(np.zeros(4, dtype=np.uint64), w)


def test_negative_count_is_refused() -> None:
    with pytest.raises(fermion.InvalidFileError):
        bitpack.unpack(bytes(16), 0, 3, -1)


@pytest.mark.parametrize("w", [1, 3, 8, 13, 16, 32, 56, 64])
@pytest.mark.parametrize("n", [1, 5, 8, 100])
@pytest.mark.parametrize("offset", [0, 7])
def test_buffer_one_byte_too_short(w: int, n: int, offset: int) -> None:
    packed = bitpack.pack(random_values(w, n, seed=n), w)
    buf = embed(packed, offset, 0)
    assert len(bitpack.unpack(buf, offset, w, n)) == n
    with pytest.raises(fermion.InvalidFileError, match="past the payload"):
        bitpack.unpack(buf[:-1], offset, w, n)
    with pytest.raises(fermion.InvalidFileError, match="past the payload"):
        bitpack.unpack(buf, offset + 1, w, n)  # the same bytes, read one byte later
    with pytest.raises(fermion.InvalidFileError, match="past the payload"):
        bitpack.unpack_into(buf[:-1], offset, w, np.empty(n, dtype=np.uint32))
    with pytest.raises(fermion.InvalidFileError, match="past the payload"):
        bitpack.gather(buf[:-1], offset, w, np.array([n - 1]))


@pytest.mark.parametrize("w", [3, 8, 64])
def test_offsets_outside_the_buffer(w: int) -> None:
    buf = bytes(32)
    for offset in (-1, -8):
        with pytest.raises(fermion.InvalidFileError):
            bitpack.unpack(buf, offset, w, 1)
        with pytest.raises(fermion.InvalidFileError):
            bitpack.unpack(buf, offset, w, 0)
        with pytest.raises(fermion.InvalidFileError):
            bitpack.gather(buf, offset, w, np.array([0]))
    for offset in (33, 100):
        with pytest.raises(fermion.InvalidFileError):
            bitpack.unpack(buf, offset, w, 0)
        with pytest.raises(fermion.InvalidFileError):
            bitpack.gather(buf, offset, w, np.array([0]))
    with pytest.raises(fermion.InvalidFileError):
        bitpack.unpack(buf, 32, w, 1)
    assert bitpack.unpack(buf, 32, w, 0).shape == (0,)  # an empty stream at the very end


@pytest.mark.parametrize("w", [1, 3, 7, 8, 13, 56, 64])
def test_gather_index_past_the_buffer(w: int) -> None:
    buf = embed(bitpack.pack(random_values(w, 20, seed=w), w), 2, 0)
    # the first index whose bits end past the buffer (a partly filled last byte may hold
    # more values than were packed: their bits are zero)
    first_out = next(i for i in range(10_000) if 2 + bitpack.packed_size(i + 1, w) > len(buf))
    assert first_out >= 20
    assert bitpack.gather(buf, 2, w, np.array([first_out - 1])).shape == (1,)
    for bad in ([first_out], [0, first_out, 1], [2**40], [-1], [3, -1]):
        with pytest.raises(fermion.InvalidFileError):
            bitpack.gather(buf, 2, w, np.array(bad))
