"""Bit-packing: unsigned integers of ``w`` bits each in one little-endian bit stream.

Value ``i`` occupies bits ``[i*w, (i+1)*w)`` of the stream, least significant bit first
(bit ``k`` of the stream is bit ``k % 8`` of byte ``k // 8``), so a byte width of 8, 16,
32 or 64 bits is the same bytes as plain little-endian integers. A stream of ``n`` values
takes exactly ``ceil(n * w / 8)`` bytes. Widths are 1..56 or 64: every value then lies in
one unaligned 8-byte word, which is what makes the kernels a handful of vectorised numpy
operations (eight strided passes, one per position in a group of eight values) and lets
:func:`gather` read single values without touching their neighbours.

Example:
    >>> import numpy as np
    >>> v = np.array([5, 0, 7, 3, 1], dtype=np.uint64)
    >>> packed = pack(v, 3)
    >>> len(packed), unpack(packed, 0, 3, 5).tolist()
    (2, [5, 0, 7, 3, 1])
    >>> gather(packed, 0, 3, np.array([4, 2])).tolist()
    [1, 7]
"""

from __future__ import annotations

import numpy as np

from fermion.errors import InvalidArgumentError, InvalidFileError
from fermion.format import native

__all__ = [
    "BYTE_TABLES",
    "MAX_BITS",
    "bits_for",
    "byte_ranges",
    "gather",
    "pack",
    "packed_size",
    "unpack",
    "unpack_into",
    "valid_bits",
]

MAX_BITS = 56  # widths above this are stored as 64 (a value must fit one unaligned word)
_ALIGNED = (8, 16, 32, 64)
#: widths that divide a byte: byte value -> its 8 // w values, least significant first
#: (a table gather is 3-5x faster than the eight strided passes for these widths)
BYTE_TABLES = {
    w: np.array(
        [[(x >> s) & ((1 << w) - 1) for s in range(0, 8, w)] for x in range(256)],
        dtype=np.uint8,
    )
    for w in (1, 2, 4)
}


def bits_for(span: int) -> int:
    """Bits needed for unsigned values in ``[0, span]`` (at least 1; 57..63 round to 64)."""
    bits = max(1, int(span).bit_length())
    return bits if bits <= MAX_BITS else 64


def valid_bits(w: int) -> bool:
    """Whether ``w`` is a width a bit-packed stream may use."""
    return 1 <= w <= MAX_BITS or w == 64


def packed_size(n: int, w: int) -> int:
    """Bytes of ``n`` values packed at ``w`` bits."""
    return (n * w + 7) // 8


def byte_ranges(offset: int, w: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(begins, ends)``: the bytes holding values ``rows`` of a stream packed at ``w``
    bits from byte ``offset`` (value i at bits ``[i*w, (i+1)*w)``).

    Example:
        >>> [x.tolist() for x in byte_ranges(10, 3, np.array([0, 2, 5]))]
        [[10, 10, 11], [11, 12, 13]]
    """
    return offset + (rows * w) // 8, offset + ((rows + 1) * w + 7) // 8


def pack(values: np.ndarray, w: int) -> bytes:
    """Pack unsigned ``values`` (each below ``2**w``) at ``w`` bits each.

    With the compiled kernels, one loop (``kernels.pack_bits``, 3-8x faster on a page of a
    million values); without them, or for values that do not fit ``w`` bits: eight
    strided numpy passes over 64-bit words. The bytes are the same either way.
    """
    if not valid_bits(w):  # 57..63 would not fit the unaligned word every reader uses
        raise InvalidArgumentError(f"invalid bit width {w}")
    n = len(values)
    if w in _ALIGNED:
        return np.asarray(values).astype(f"<u{w // 8}").tobytes()
    kernels = native.KERNELS
    if kernels is not None and n:
        out = bytearray(packed_size(n, w))
        words = np.ascontiguousarray(values, dtype=np.uint64)
        if kernels.pack_bits(words, w, out):
            return bytes(out)
    groups = (n + 7) // 8
    flat = np.zeros(groups * 8, dtype=np.uint64)
    flat[:n] = values
    v = flat.reshape(groups, 8)
    words_per_group = (w + 7) // 8  # a group of 8 values is exactly w bytes
    words = np.zeros((groups, words_per_group), dtype=np.uint64)
    for j in range(8):
        bit = j * w
        k, s = bit >> 6, bit & 63
        words[:, k] |= v[:, j] << np.uint64(s)
        if s + w > 64:
            words[:, k + 1] |= v[:, j] >> np.uint64(64 - s)
    as_bytes = words.view(np.uint8).reshape(groups, 8 * words_per_group)[:, :w]
    return as_bytes.tobytes()[: packed_size(n, w)]


Bytes = memoryview | bytes | np.ndarray


def _nbytes(buf: Bytes) -> int:
    return buf.nbytes if isinstance(buf, np.ndarray | memoryview) else len(buf)


def _padded(buf: Bytes, offset: int, nbytes: int, room: int) -> np.ndarray:
    out = np.zeros(room + 8, dtype=np.uint8)
    out[:nbytes] = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=offset)
    return out


def unpack(buf: Bytes, offset: int, w: int, n: int, where: str = "page") -> np.ndarray:
    """The ``n`` values packed at ``w`` bits from byte ``offset`` of ``buf``, as uint64
    (always a fresh array: callers may modify it)."""
    if n < 0:
        raise InvalidFileError(f"{where}: invalid bit width {w} or count {n}")
    out = np.empty(n, dtype=np.uint64)
    unpack_into(buf, offset, w, out, where)
    return out


def unpack_into(buf: Bytes, offset: int, w: int, out: np.ndarray, where: str = "page") -> None:
    """The ``len(out)`` values packed at ``w`` bits from byte ``offset`` of ``buf``, written
    into ``out`` (unsigned integers of 1 to 8 bytes; a value wider than them keeps its low
    bits, as a cast would).

    Widths of 1, 2 or 4 bits: a table gather. Others, with the compiled kernels: one loop
    (``kernels.unpack_bits``); without them: groups of eight values lying wholly before the
    last 8 bytes of ``buf`` are read in place, as unaligned 8-byte words; only the few
    values after them (fewer than 24 + 64 / w) are gathered from a padded copy.
    """
    n = len(out)
    if not valid_bits(w):
        raise InvalidFileError(f"{where}: invalid bit width {w} or count {n}")
    nbytes = packed_size(n, w)
    size = _nbytes(buf)
    if offset < 0 or offset + nbytes > size:
        raise InvalidFileError(f"{where}: packed integers run past the payload")
    if w in _ALIGNED:
        out[:] = np.frombuffer(buf, dtype=f"<u{w // 8}", count=n, offset=offset)
        return
    if n == 0:
        return
    lut = BYTE_TABLES.get(w)
    if lut is not None:  # 1, 2 or 4 bits: each byte's values from a table, in one gather
        packed = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=offset)
        out[:] = np.take(lut, packed, axis=0).reshape(-1)[:n]
        return
    kernels = native.KERNELS
    if kernels is not None and out.flags.c_contiguous and _contiguous(buf):  # one C loop
        if not kernels.unpack_bits(buf, offset, w, out, out.itemsize):  # (checked above)
            raise InvalidFileError(f"{where}: packed integers run past the payload")
        return
    # group g's words are read at bytes [offset + g*w + (j*w >> 3), ... + 8) for j < 8
    direct = min(n // 8, max(0, (size - offset - 8 - (7 * w >> 3)) // w + 1))
    if direct:
        _unpack_groups(buf, offset, w, out[: direct * 8])
    rest = n - direct * 8
    if rest:  # the last few values: one gather from a padded copy
        start = offset + direct * w
        nbytes = packed_size(rest, w)
        every = np.ndarray(
            (nbytes + 1,), dtype="<u8", buffer=_padded(buf, start, nbytes, nbytes), strides=(1,)
        )
        bits = np.arange(0, rest * w, w, dtype=np.uint64)
        words = every[bits >> np.uint64(3)] >> (bits & np.uint64(7))
        np.bitwise_and(words, np.uint64((1 << w) - 1), out=out[direct * 8 :], casting="unsafe")


def _unpack_groups(buf: Bytes, offset: int, w: int, out: np.ndarray) -> None:
    """Unpack ``len(out) // 8`` whole groups (eight values in ``w`` bytes) into ``out``:
    per position ``j`` in a group, one strided pass shifting each group's word into
    ``out[j::8]`` (cast to its width), then one pass masking all of them to ``w`` bits."""
    groups = len(out) // 8
    for j in range(8):
        bit = j * w
        words = np.ndarray(
            (groups,), dtype="<u8", buffer=buf, offset=offset + (bit >> 3), strides=(w,)
        )
        np.right_shift(words, np.uint64(bit & 7), out=out[j::8], casting="unsafe")
    if w < 8 * out.itemsize:
        out &= out.dtype.type((1 << w) - 1)


def _contiguous(buf: Bytes) -> bool:
    """Whether ``buf`` is one C-contiguous block of bytes (what the compiled kernels read)."""
    if isinstance(buf, np.ndarray):
        return bool(buf.flags.c_contiguous)
    if isinstance(buf, memoryview):
        return buf.c_contiguous
    return True


def gather(
    buf: Bytes,
    offset: int,
    w: int,
    indices: np.ndarray,
    where: str = "page",
) -> np.ndarray:
    """Values ``indices`` of a stream packed at ``w`` bits from byte ``offset``, as uint64.

    ``buf`` must hold the stream's bytes up to the last wanted value (not necessarily all
    of it); nothing else is read.
    """
    idx = np.asarray(indices, dtype=np.int64)
    if not valid_bits(w):
        raise InvalidFileError(f"{where}: invalid bit width {w}")
    if len(idx) == 0:
        return np.zeros(0, dtype=np.uint64)
    kernels = native.KERNELS
    if kernels is not None and _contiguous(buf):
        out = np.empty(len(idx), dtype=np.uint64)  # one call; same bounds and values
        if not kernels.gather_bits(buf, offset, w, np.ascontiguousarray(idx), out):
            raise InvalidFileError(f"{where}: packed integers run past the payload")
        return out
    size = _nbytes(buf)
    bits = idx * w
    last = offset + packed_size(int(idx.max()) + 1, w)
    if int(idx.min()) < 0 or offset < 0 or last > size:
        raise InvalidFileError(f"{where}: packed integers run past the payload")
    if last + 8 <= size:  # every value's word lies inside buf: read it there, no copy
        data, start = np.frombuffer(buf, dtype=np.uint8), offset
    else:
        data, start = _padded(buf, offset, last - offset, last - offset), 0
    every = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    words = every[start + (bits >> 3)]
    if w == 64:
        return words
    return (words >> (bits & 7).astype(np.uint64)) & np.uint64((1 << w) - 1)
