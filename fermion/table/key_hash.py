"""64-bit hashes of key rows, the same in every process and release (no pandas, no seed).

Merge-insert transactions record the hashes of their source keys so that two merges of the
same keys conflict (docs/TABLE_FORMAT.md, "MergeInsert"); the hash is therefore part of the
table format and must not change. Equal keys give equal hashes: ``-0.0`` is hashed as
``0.0``, every NaN alike, a null as its own constant.

- a fixed-width value: its 64-bit pattern (integers sign-extended, floats as float64,
  dates, times and timestamps as their integer count, decimals as their two 64-bit
  halves), mixed with the splitmix64 finaliser;
- a string or binary value: the sum over its bytes of ``byte * P**position`` (mod 2**64,
  ``P`` = 0x100000001B3), mixed with its length;
- any other type: SHA-256 of the value's ``repr`` (slow; keys are rarely nested);
- a row: the column hashes folded left to right (``h = mix(h * 31 + column_hash)``).

Example:
    >>> import pyarrow as pa
    >>> h = row_hashes(pa.table({"k": [1, 2, 1], "s": ["a", "b", "a"]}))
    >>> bool(h[0] == h[2]), bool(h[0] == h[1])
    (True, False)
    >>> int(row_hashes(pa.table({"k": [7]}))[0])
    13309476754707697221
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["KeyHashes", "row_hashes", "sorted_distinct"]

_NULL = np.uint64(0x6E756C6C5F6B6579)
_PRIME = np.uint64(0x100000001B3)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, element-wise on uint64."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _bits(array: pa.Array) -> np.ndarray | None:
    """The 64-bit pattern of each value of a fixed-width array (nulls: anything), or None."""
    t = array.type
    if pa.types.is_boolean(t):
        return array.fill_null(False).cast(pa.uint8()).to_numpy().astype(np.uint64)
    if pa.types.is_integer(t):
        values = array.fill_null(0).to_numpy()
        if pa.types.is_unsigned_integer(t):
            return values.astype(np.uint64)
        return values.astype(np.int64).view(np.uint64)
    if pa.types.is_floating(t):
        values = array.cast(pa.float64()).fill_null(0.0).to_numpy().copy()
        values[values == 0.0] = 0.0  # -0.0 as 0.0
        values[np.isnan(values)] = np.nan  # one NaN
        return values.view(np.uint64)
    if pa.types.is_temporal(t) and not pa.types.is_interval(t):
        width = t.bit_width
        integer = pa.int32() if width == 32 else pa.int64()
        return _bits(array.view(integer))
    if pa.types.is_decimal(t) and t.bit_width == 128:
        array = array.fill_null(pa.scalar(0, t)) if array.null_count else array
        words = np.frombuffer(array.buffers()[1], dtype="<u8")[2 * array.offset :]
        halves = words[: 2 * len(array)].reshape(-1, 2)
        with np.errstate(over="ignore"):
            return _mix(halves[:, 0]) ^ halves[:, 1]
    return None


def _bytes_hashes(array: pa.Array) -> np.ndarray:
    """Polynomial hashes of string/binary values (see the module docstring)."""
    if pa.types.is_string_view(array.type) or pa.types.is_binary_view(array.type):
        array = array.cast(pa.large_binary())
    elif pa.types.is_string(array.type):
        array = array.cast(pa.binary())
    elif pa.types.is_large_string(array.type):
        array = array.cast(pa.large_binary())
    width = 8 if pa.types.is_large_binary(array.type) else 4
    offsets = np.frombuffer(array.buffers()[1], dtype=f"<i{width}")[
        array.offset : array.offset + len(array) + 1
    ].astype(np.int64)
    data = array.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    starts, ends = offsets[:-1], offsets[1:]
    lengths = ends - starts
    total = int(lengths.sum())
    sums = np.zeros(len(array), dtype=np.uint64)
    if total:
        longest = int(lengths.max())
        with np.errstate(over="ignore"):
            powers = np.cumprod(np.full(longest, _PRIME, dtype=np.uint64))
            powers = np.concatenate([[np.uint64(1)], powers[:-1]])
            firsts_all = np.cumsum(lengths) - lengths  # each value's first byte in `terms`
            position = np.arange(total) - np.repeat(firsts_all, lengths)
            index = np.repeat(starts, lengths) + position
            terms = raw[index].astype(np.uint64) * powers[position]
            present = lengths > 0
            sums[present] = np.add.reduceat(terms, firsts_all[present])
    with np.errstate(over="ignore"):
        return _mix(sums ^ (lengths.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)))


def _column_hashes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    bits = _bits(array)
    if bits is not None:
        hashes = _mix(bits)
    elif (
        pa.types.is_string(array.type)
        or pa.types.is_binary(array.type)
        or (
            pa.types.is_large_string(array.type)
            or pa.types.is_large_binary(array.type)
            or pa.types.is_string_view(array.type)
            or pa.types.is_binary_view(array.type)
        )
    ):
        hashes = _bytes_hashes(array)
    else:
        digests = [hashlib.sha256(repr(v).encode()).digest()[:8] for v in array.to_pylist()]
        hashes = np.frombuffer(b"".join(digests), dtype="<u8").copy()
    if array.null_count:
        hashes = np.where(pc.is_null(array).to_numpy(zero_copy_only=False), _NULL, hashes)
    return hashes.astype(np.uint64, copy=False)


def row_hashes(keys: pa.Table) -> np.ndarray:
    """One uint64 hash per row of ``keys`` (columns in order; see the module docstring)."""
    hashes = np.zeros(keys.num_rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in keys.columns:
            hashes = _mix(hashes * np.uint64(31) + _column_hashes(column))
    return hashes


def sorted_distinct(hashes: np.ndarray) -> np.ndarray:
    """The distinct values of ``hashes``, sorted (``np.unique`` by a sort: numpy's hashing
    ``unique`` is many times slower on 64-bit integers).

    Example:
        >>> sorted_distinct(np.array([5, 1, 5, 3], dtype=np.uint64)).tolist()
        [1, 3, 5]
    """
    ordered = np.sort(np.asarray(hashes))
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


class KeyHashes(tuple[int, ...]):
    """Sorted distinct 64-bit hashes as a tuple of ints (what a merge-insert transaction
    records), holding the uint64 array they were made from (:attr:`array`): an operation
    given one neither converts nor sorts the hashes again, and conflict checks intersect
    the arrays.

    Example:
        >>> h = KeyHashes([5, 1, 5])
        >>> h, h == (1, 5), h.array.dtype
        ((1, 5), True, dtype('uint64'))
        >>> KeyHashes.of_sorted(h.array) is not h, KeyHashes.of(h) is h
        (True, True)
    """

    array: np.ndarray

    def __new__(cls, hashes: object = ()) -> KeyHashes:
        return cls.of_sorted(sorted_distinct(np.asarray(hashes, dtype=np.uint64)))

    @classmethod
    def of_sorted(cls, ordered: np.ndarray) -> KeyHashes:
        """The hashes of a uint64 array already sorted and distinct (not checked)."""
        made = super().__new__(cls, ordered.tolist())
        made.array = ordered
        return made

    @classmethod
    def of(cls, hashes: object) -> KeyHashes:
        """``hashes`` itself if it is a :class:`KeyHashes`, else sorted and deduplicated."""
        return hashes if isinstance(hashes, KeyHashes) else cls(hashes)

    def __getnewargs__(self) -> tuple[tuple[int, ...]]:  # (pickled as its ints)
        return (tuple(self),)
