"""Page-level bloom filters for equality and ``isin`` pruning on high-cardinality keys.

Min/max statistics cannot prune a key stored in random order; a bloom filter per page
answers "this page certainly does not hold value v". A column written with blooms has one
extra stream, BLOOM, whose chunk per stripe is a single page holding one filter per DATA
page of that stripe.

Hashing is vectorised numpy: integer-like values hash their int64 value with splitmix64;
strings and binaries hash their bytes with a position-weighted sum (one ``reduceat`` over
the data buffer) mixed with the length, then splitmix64. Each filter has ``m`` bits (a
power of two, about 10 bits per value for ~1% false positives) and sets k = 3 bits per
value by double hashing: bit_i = (h1 + i * h2) mod m with h1 = low 32 bits, h2 = high 32
bits | 1.

Payload of a BLOOM page: ``u32 num_filters``, then ``num_filters`` u32 byte sizes, then
the bitsets (LSB-first) one after another.

Example:
    >>> import pyarrow as pa
    >>> blob = build_blooms([pa.array([1, 5, 9]), pa.array([100, 200])])
    >>> may_contain(blob, hash_values(pa.array([5])), 2)
    [True, False]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fermion.errors import InvalidFileError
from fermion.format.encoding.encodings import int_domain, ints_from_plain

__all__ = ["bloom_supported", "build_blooms", "hash_values", "may_contain"]

_BITS_PER_VALUE = 10
_K = 3
_WEIGHTS = np.random.default_rng(0x5EED).integers(1, 2**63 - 1, 4096, dtype=np.int64).astype(
    np.uint64
) | np.uint64(1)


def bloom_supported(t: pa.DataType) -> bool:
    """Whether columns of type ``t`` can carry bloom filters."""
    import pyarrow.types as pat

    if isinstance(t, pa.BaseExtensionType):
        return False
    return int_domain(t) is not None or any(
        f(t)
        for f in (
            pat.is_string,
            pat.is_large_string,
            pat.is_binary,
            pat.is_large_binary,
            pat.is_string_view,
            pat.is_binary_view,
        )
    )


def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def hash_values(values: pa.Array) -> np.ndarray:
    """uint64 hashes of the non-null values of ``values`` (nulls are dropped)."""
    if values.null_count:
        values = values.drop_null()
    t = values.type
    domain = int_domain(t)
    if domain is not None:
        width, signed = domain
        if len(values) == 0:
            return np.zeros(0, dtype=np.uint64)
        arr = values if values.offset == 0 else pa.concat_arrays([values])
        raw = arr.buffers()[1]
        ints = ints_from_plain(memoryview(raw)[: width * len(arr)], width, signed)
        if ints is None:  # decimals beyond int64: hash the low word (still deterministic)
            words = np.frombuffer(raw, dtype="<i8", count=len(arr) * (width // 8))
            ints = words.reshape(-1, width // 8)[:, 0].copy()
        return _splitmix(ints.view(np.uint64))
    binary = values.cast(pa.large_binary())
    n = len(binary)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    offsets = np.frombuffer(binary.buffers()[1], dtype="<i8")[binary.offset : binary.offset + n + 1]
    data_buf = binary.buffers()[2]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    start, end = int(offsets[0]), int(offsets[-1])
    data = data[start:end].astype(np.uint64)
    rel = offsets - start
    lengths = np.diff(rel).astype(np.uint64)
    position = np.arange(end - start, dtype=np.int64) - np.repeat(rel[:-1], np.diff(rel))
    with np.errstate(over="ignore"):
        weighted = data * _WEIGHTS[position % len(_WEIGHTS)]
        sums = np.zeros(n, dtype=np.uint64)
        nonempty = lengths > 0
        if data.size:
            sums[nonempty] = np.add.reduceat(weighted, rel[:-1][nonempty])
        return _splitmix(sums ^ (lengths * np.uint64(0x9E3779B97F4A7C15)))


def _positions(hashes: np.ndarray, bits: int) -> np.ndarray:
    h1 = hashes & np.uint64(0xFFFFFFFF)
    h2 = (hashes >> np.uint64(32)) | np.uint64(1)
    mask = np.uint64(bits - 1)
    with np.errstate(over="ignore"):
        return np.stack([(h1 + np.uint64(i) * h2) & mask for i in range(_K)], axis=1)


def _bits_for(n: int) -> int:
    bits = 64
    while bits < n * _BITS_PER_VALUE:
        bits *= 2
    return bits


def build_blooms(pages: list[pa.Array]) -> bytes:
    """The BLOOM page payload for the values of each DATA page (in page order)."""
    sizes = []
    bitsets = []
    for values in pages:
        hashes = hash_values(values)
        bits = _bits_for(len(hashes))
        flags = np.zeros(bits, dtype=bool)
        if len(hashes):
            flags[_positions(hashes, bits).ravel().astype(np.int64)] = True
        packed = np.packbits(flags, bitorder="little").tobytes()
        sizes.append(len(packed))
        bitsets.append(packed)
    head = np.array([len(pages), *sizes], dtype="<u4").tobytes()
    return head + b"".join(bitsets)


def may_contain(payload: bytes | memoryview, hashes: np.ndarray, num_pages: int) -> list[bool]:
    """Per DATA page: may it hold any of the values whose hashes are given?"""
    raw = memoryview(payload)
    if len(raw) < 4:
        raise InvalidFileError("bloom page shorter than its directory")
    count = int(np.frombuffer(raw, dtype="<u4", count=1)[0])
    if count != num_pages or len(raw) < 4 * (1 + count):
        raise InvalidFileError(f"bloom page describes {count} pages, the chunk has {num_pages}")
    sizes = np.frombuffer(raw, dtype="<u4", count=count, offset=4).astype(np.int64)
    starts = 4 * (1 + count) + np.concatenate([[0], np.cumsum(sizes)[:-1]]) if count else sizes
    if count and int(starts[-1] + sizes[-1]) != len(raw):
        raise InvalidFileError("bloom page sizes do not add up")
    out = []
    for i in range(count):
        size = int(sizes[i])
        bits = size * 8
        if size == 0 or bits & (bits - 1):
            raise InvalidFileError("bloom filter size is not a power of two")
        if len(hashes) == 0:
            out.append(False)
            continue
        bitset = np.frombuffer(raw, dtype=np.uint8, count=size, offset=int(starts[i]))
        pos = _positions(hashes, bits).astype(np.int64)
        hit = (bitset[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1
        out.append(bool(hit.all(axis=1).any()))
    return out
