"""DICTIONARY pages: a BINARY page with few distinct values as bit-packed indices and
those values (docs/FORMAT.md); its OFFSETS page is then DERIVED (no payload).

Layout: EncodingHeader, indices bit-packed at ``width`` bits, then the ``aux`` distinct
values as ``aux + 1`` int64 offsets and their bytes. (The stripe-wide dictionary is
:mod:`fermion.format.encoding.stripe_dictionary`.)

Example:
    >>> values = pa.array([b"a", b"bb"] * 50)
    >>> offsets, data = decode_dictionary(encode_dictionary(values))
    >>> offsets[:3].tolist(), data.to_pybytes()[:5]
    ([0, 1, 3], b'abbab')
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fermion.errors import InvalidFileError
from fermion.format import native
from fermion.format.encoding import bitpack
from fermion.format.encoding.header import (
    HEADER_SIZE,
    bits_for,
    encoding_header,
    pack_ints,
    packed_bits,
    read_header,
    unpack_ints,
)
from fermion.format.metadata.structs import Encoding, EncodingFlag

__all__ = [
    "decode_dictionary",
    "dictionary_page",
    "dictionary_parts",
    "encode_dictionary",
    "few_distinct",
    "materialize_dictionaries",
    "materialize_dictionary",
]

_BITS = int(EncodingFlag.BITS)  # plain ints: IntFlag operators cost microseconds each
_DICT_SAMPLE = 1024


def few_distinct(values: pa.Array) -> bool:
    """Whether a sample of ``values`` (the first 1,024) has at most one distinct value in
    eight: the test a BINARY page must pass to be tried as a DICTIONARY page."""
    sample = values.slice(0, _DICT_SAMPLE)
    return len(sample.unique()) <= len(sample) // 8


def encode_dictionary(values: pa.Array) -> bytes | None:
    """DICTIONARY payload for a BINARY page with few distinct values, else None."""
    found = dictionary_page(values)
    return None if found is None else found[0]


def dictionary_page(values: pa.Array) -> tuple[bytes, pa.Array] | None:
    """(DICTIONARY payload, the page's distinct non-null values) for a BINARY page with
    few distinct values, else None.

    Layout: EncodingHeader, indices bit-packed at ``width`` bits, then the distinct values
    as ``aux + 1`` int64 offsets and their bytes.
    """
    n = len(values)
    if n < 64 or not few_distinct(values):
        return None
    found = _short_codes_dictionary(values)
    if found is None:
        encoded = values.dictionary_encode()
        distinct = encoded.dictionary
        dictionary = distinct.cast(pa.large_binary())
        entries = len(dictionary)
        if entries > n // 4:
            return None
        indices = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = np.frombuffer(dictionary.buffers()[1], dtype="<i8")[
            dictionary.offset : dictionary.offset + entries + 1
        ]
        base = int(offsets[0])
        data_buf = dictionary.buffers()[2]
        data = b"" if data_buf is None else data_buf.to_pybytes()[base : int(offsets[-1])]
        offsets = offsets - base
    else:
        indices, offsets, data, distinct = found
        entries = len(distinct)
        if entries > n // 4:
            return None
    bits = bits_for(max(entries - 1, 0))
    head = encoding_header(
        Encoding.DICTIONARY, count=n, out_width=8, aux=entries, width=bits, flags=_BITS
    )
    payload = b"".join([head, pack_ints(indices, bits), offsets.tobytes(), data])
    return payload, distinct


_SHORT_CODES_MAX_ENTRIES = 16  # distinct values found by one comparison pass each


def _short_codes_dictionary(
    values: pa.Array,
) -> tuple[np.ndarray, np.ndarray, bytes, pa.Array] | None:
    """What ``dictionary_encode`` gives a page of short codes (flags, status letters):
    when every value is 1 or 2 bytes long, none is null and at most
    :data:`_SHORT_CODES_MAX_ENTRIES` are distinct, (int64 indices in order of first
    appearance, the distinct values' int64 offsets from 0, their bytes, the distinct values
    as an array of ``values.type``), counted with NumPy on the values as integers (about
    3x faster than hashing them); else None.

    Example:
        >>> got = _short_codes_dictionary(pa.array(["N", "A", "N", "R", "A"]))
        >>> got[0].tolist(), got[1].tolist(), got[2], got[3].to_pylist()
        ([0, 1, 0, 2, 1], [0, 1, 2, 3], b'NAR', ['N', 'A', 'R'])
    """
    n = len(values)
    if values.null_count or n == 0:
        return None
    t = values.type
    wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not (wide or pa.types.is_string(t) or pa.types.is_binary(t)):
        return None
    buffers = values.buffers()
    size = 8 if wide else 4
    offsets = np.frombuffer(buffers[1], dtype=f"<i{size}", count=n + 1, offset=values.offset * size)
    start, end = int(offsets[0]), int(offsets[-1])
    width = (end - start) // n
    if width not in (1, 2) or end - start != width * n or buffers[2] is None:
        return None
    if not bool((np.diff(offsets) == width).all()):
        return None
    codes = np.frombuffer(buffers[2], dtype=f"<u{width}", count=n, offset=start)
    present = np.flatnonzero(np.bincount(codes, minlength=1 << (8 * width)))
    if len(present) > _SHORT_CODES_MAX_ENTRIES:
        return None
    firsts = [int(np.argmax(codes == v)) for v in present.tolist()]
    order = present[np.argsort(firsts)]
    lookup = np.zeros(1 << (8 * width), dtype=np.int64)
    lookup[order] = np.arange(len(order))
    data = order.astype(f"<u{width}").tobytes()
    dict_offsets = np.arange(len(order) + 1, dtype=np.int64) * width
    distinct = pa.Array.from_buffers(
        t,
        len(order),
        [None, pa.py_buffer(dict_offsets.astype(f"<i{size}").tobytes()), pa.py_buffer(data)],
    )
    return lookup[codes], dict_offsets, data, distinct


def dictionary_parts(
    payload: memoryview | bytes, where: str = "page"
) -> tuple[np.ndarray, pa.Array]:
    """A DICTIONARY page as (int64 indices, its distinct values as a large_binary array),
    validated, without materialising the values."""
    h = read_header(payload, where)
    n, entries, bits = int(h["count"]), int(h["aux"]), packed_bits(h)
    if entries < 0 or entries > n:
        raise InvalidFileError(f"{where}: dictionary of {entries} values for {n} rows")
    indices = unpack_ints(payload, HEADER_SIZE, bits, n, where)
    off_start = HEADER_SIZE + bitpack.packed_size(n, bits)
    off_end = off_start + 8 * (entries + 1)
    if off_end > len(payload):
        raise InvalidFileError(f"{where}: dictionary offsets run past the payload")
    dict_offsets = np.frombuffer(payload, dtype="<i8", count=entries + 1, offset=off_start)
    body = memoryview(payload)[off_end:]
    if (
        entries == 0
        or dict_offsets[0] != 0
        or int(dict_offsets[-1]) != len(body)
        or (np.diff(dict_offsets) < 0).any()
        or (indices < 0).any()  # 64-bit indices above 2**63 - 1
        or (indices >= entries).any()
    ):
        raise InvalidFileError(f"{where}: corrupt dictionary page")
    dictionary = pa.Array.from_buffers(
        pa.large_binary(), entries, [None, pa.py_buffer(dict_offsets), pa.py_buffer(body)]
    )
    return indices, dictionary


def materialize_dictionary(
    indices: np.ndarray, dictionary: pa.Array
) -> tuple[np.ndarray, pa.Buffer]:
    """(int64 offsets starting at 0, the values' bytes) of a DICTIONARY page's values."""
    offsets = np.zeros(len(indices) + 1, dtype=np.int64)
    dict_offsets = np.frombuffer(dictionary.buffers()[1], dtype="<i8", count=len(dictionary) + 1)
    np.cumsum(np.diff(dict_offsets)[indices], out=offsets[1:])
    taken = dictionary.take(pa.array(indices))
    return offsets, taken.buffers()[2] or pa.py_buffer(b"")


def materialize_dictionaries(
    parts: list[tuple[np.ndarray, pa.Array]], offset_dtype: np.dtype
) -> tuple[np.ndarray, pa.Buffer]:
    """The values of consecutive DICTIONARY pages, ``(indices, dictionary)`` each, as one
    column: (offsets from 0 in ``offset_dtype``, the values' bytes).

    The result equals the pages' :func:`materialize_dictionary` results joined (offsets
    rebased), built without per-page buffers: when every dictionary value of every page
    has the same length ``L`` (flags, codes), the bytes are a NumPy row gather of ``L``
    bytes per value; otherwise one pass of the compiled kernels (``take_binary``) or,
    without them, the pages' dictionaries concatenated and Arrow takes every value in one
    call. A column too large for 32-bit offsets raises :class:`InvalidFileError`.

    Example:
        >>> d = pa.array([b"ab", b"cd"], pa.large_binary())
        >>> offs, data = materialize_dictionaries(
        ...     [(np.array([1, 0]), d), (np.array([1]), d)], np.dtype("<i4"))
        >>> offs.tolist(), data.to_pybytes()
        ([0, 2, 4, 6], b'cdabcd')
    """
    n = sum(len(indices) for indices, _ in parts)
    dict_offsets = [
        np.frombuffer(d.buffers()[1], dtype="<i8", count=len(d) + 1, offset=8 * d.offset)
        for _, d in parts
    ]
    lengths = np.concatenate([np.diff(o) for o in dict_offsets])
    width = int(lengths[0]) if len(lengths) else 0
    limit = np.iinfo(offset_dtype).max
    if len(lengths) and (lengths == width).all():
        if n * width > limit:
            raise InvalidFileError(f"{n * width} bytes of values exceed {offset_dtype} offsets")
        # a value of 1, 2, 4 or 8 bytes is one NumPy item: a flat take (several times
        # faster than a take of rows)
        item = np.dtype(f"<u{width}") if width in (1, 2, 4, 8) else None
        out = np.empty((n, width), dtype=np.uint8)
        flat_out = out.reshape(-1).view(item) if item is not None else None
        at = 0
        for (indices, d), o in zip(parts, dict_offsets, strict=True):
            buf = d.buffers()[2]
            flat = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.empty(0, np.uint8)
            rows, end = flat[int(o[0]) : int(o[-1])], at + len(indices)
            if item is not None and flat_out is not None:
                np.take(rows.view(item), indices, out=flat_out[at:end])
            else:
                np.take(rows.reshape(len(d), width), indices, axis=0, out=out[at:end])
            at = end
        offsets = np.arange(n + 1, dtype=offset_dtype)
        offsets *= offset_dtype.type(width)
        return offsets, pa.py_buffer(out)
    kernels = native.KERNELS
    if kernels is not None:  # one C pass per page (Arrow's take below makes the same)
        got = kernels.take_binary(
            [
                (o, d.buffers()[2] or b"", np.ascontiguousarray(indices, dtype=np.int64))
                for (indices, d), o in zip(parts, dict_offsets, strict=True)
            ],
            offset_dtype.itemsize,
        )
        if got is not None:  # (None: something is off or too large; Arrow says what)
            return np.frombuffer(got[0], dtype=offset_dtype, count=n + 1), pa.py_buffer(got[1])
    merged = pa.concat_arrays([d for _, d in parts]) if len(parts) > 1 else parts[0][1]
    index_type = np.int32 if len(merged) <= np.iinfo(np.int32).max else np.int64
    indices = np.empty(n, dtype=index_type)
    at = base = 0
    for part, d in parts:
        np.add(part, base, out=indices[at : at + len(part)], casting="unsafe")
        at, base = at + len(part), base + len(d)
    small = offset_dtype.itemsize == 4
    try:
        taken = merged.cast(pa.binary() if small else pa.large_binary()).take(pa.array(indices))
    except (pa.ArrowException, MemoryError) as exc:  # more than 32-bit offsets can hold
        raise InvalidFileError(f"cannot materialise dictionary values: {exc}") from None
    offsets = np.frombuffer(taken.buffers()[1], dtype=offset_dtype, count=n + 1)
    return offsets, taken.buffers()[2] or pa.py_buffer(b"")


def decode_dictionary(
    payload: memoryview | bytes, where: str = "page"
) -> tuple[np.ndarray, pa.Buffer]:
    """Decode a DICTIONARY page to (int64 offsets starting at 0, the values' bytes)."""
    return materialize_dictionary(*dictionary_parts(payload, where))
