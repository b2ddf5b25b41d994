"""The integer codec: one codec for every fixed-width integer, chosen per page.

Integers of any fixed width (ints, dates, times, timestamps, durations, decimals whose
values fit in int64, dictionary indices, string value lengths) go through
:func:`encode_ints`, which picks the smallest of CONSTANT, FOR, DELTA, RLE and
INT_DICTIONARY (or PLAIN when nothing is smaller); :func:`decode_ints` and the
``decode_*_into`` paths undo it. Each encoding's kernels are one :class:`IntCodec` in
:data:`INT_CODECS`, which :mod:`fermion.format.encoding.registry` hangs on its entry.
DELTA pages and FOR pages of lengths may carry running-sum checkpoints (format 1.3) that
point reads start from.

Example:
    >>> values = np.arange(1000, 2000, dtype=np.int64)
    >>> enc, payload = encode_ints(values, out_width=8)
    >>> enc.name, bool((decode_ints(payload, enc) == values).all())
    ('DELTA', True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from fermion.errors import InvalidFileError
from fermion.format.encoding import bitpack
from fermion.format.encoding.header import (
    HEADER_SIZE,
    Header,
    bits_for,
    encoding_header,
    pack_ints,
    packed_bits,
    read_header,
    sample_size,
    unpack_ints,
)
from fermion.format.metadata.structs import Encoding, EncodingFlag

__all__ = [
    "CHECKPOINT_INTERVAL",
    "INT_CODECS",
    "IntCodec",
    "check_for_slots",
    "checkpoint_layout",
    "decode_delta_into",
    "decode_for_into",
    "decode_int_dictionary_into",
    "decode_ints",
    "encode_ints",
    "int_bounds",
    "int_domain",
    "int_payload_size",
    "ints_from_plain",
    "ints_to_plain",
]

CHECKPOINT_INTERVAL = 256  # packed integers between two running-sum checkpoints (1.3)
_BITS = int(EncodingFlag.BITS)  # plain ints: IntFlag operators cost microseconds each
_LENGTHS = int(EncodingFlag.LENGTHS)
_CHECKPOINTS = int(EncodingFlag.CHECKPOINTS)


# -- the integer domain ------------------------------------------------------------------


def int_domain(t: pa.DataType) -> tuple[int, bool] | None:
    """(bytes per value, signed) when values of ``t`` can use the integer codec."""
    if pat.is_boolean(t) or isinstance(t, pa.BaseExtensionType):
        return None
    if pat.is_integer(t):
        return t.bit_width // 8, pat.is_signed_integer(t)
    if pat.is_date(t) or pat.is_time(t) or pat.is_timestamp(t) or pat.is_duration(t):
        return t.bit_width // 8, True
    if pat.is_decimal(t):
        return t.bit_width // 8, True
    return None


def ints_from_plain(buf: memoryview | bytes, width: int, signed: bool) -> np.ndarray | None:
    """Plain little-endian values as int64; None if a wide value (decimal) does not fit."""
    if width <= 8:
        kind = "i" if signed else "u"
        return np.frombuffer(buf, dtype=f"<{kind}{width}").astype(np.int64)
    words = np.frombuffer(buf, dtype="<i8").reshape(-1, width // 8)
    lo = words[:, 0]
    sign = lo >> 63
    if not (words[:, 1:] == sign[:, None]).all():
        return None
    return lo.copy()


def ints_to_plain(
    values: np.ndarray, width: int, signed: bool, out: np.ndarray | None = None
) -> np.ndarray:
    """int64 values as the plain little-endian buffer of ``width``-byte values (written
    into ``out``, a byte buffer of exactly that size, when given)."""
    if width <= 8:
        dtype = f"<{'i' if signed else 'u'}{width}"
        if out is None:
            return values.astype(dtype)
        out.view(dtype)[:] = values  # casting assignment: no temporary
        return out
    words = np.empty((len(values), width // 8), dtype="<i8") if out is None else out.view("<i8")
    words = words.reshape(len(values), width // 8)
    words[:, 0] = values
    words[:, 1:] = (values >> 63)[:, None]
    return words.reshape(-1)


_SAMPLE_VALUES = 4096
_BINCOUNT_SPAN = 1 << 20  # distinct counting by bincount up to this value span


def encode_ints(
    values: np.ndarray,
    *,
    out_width: int,
    signed: bool = True,
    lengths: bool = False,
    compressed: bool = True,
    checkpoints: bool = False,
) -> tuple[Encoding, bytes]:
    """Choose and apply the best integer encoding for ``values`` (int64).

    Candidates are CONSTANT, FOR, DELTA, RLE and INT_DICTIONARY, all bit-packed. With
    ``compressed`` the winner is the smallest after zstd on a sample (zstd may run on top
    of the page), else the smallest raw size; ties go to the cheaper decoder (FOR, DELTA,
    dictionary, RLE). Returns ``(Encoding.PLAIN, b"")`` when nothing beats the plain size.
    With ``checkpoints``, DELTA pages and FOR pages of ``lengths`` carry running sums
    every :data:`CHECKPOINT_INTERVAL` values, so that one value (or offset) can be read
    without summing everything before it (flag CHECKPOINTS, format 1.3); lengths are then
    CONSTANT or FOR only (the encodings whose offsets point reads compute).
    """
    n = len(values)
    flags = _BITS | (EncodingFlag.SIGNED if signed else 0)
    flags |= EncodingFlag.LENGTHS if lengths else 0
    flags |= EncodingFlag.CHECKPOINTS if checkpoints else 0
    plain_size = (n + 1 if lengths else n) * out_width
    out_bits = 8 * out_width
    if n == 0:
        return Encoding.PLAIN, b""
    mn, mx = int(values.min()), int(values.max())
    if mn == mx:
        if HEADER_SIZE >= plain_size:
            return Encoding.PLAIN, b""
        return Encoding.CONSTANT, _encode_constant(values, out_width, flags, mn, None)
    span_bits = bits_for(mx - mn)
    for_bits = _for_bits(mx - mn)
    deltas = np.diff(values)
    dmn, dmx = int(deltas.min()), int(deltas.max())
    delta_bits = bits_for(dmx - dmn)
    runs = 1 + int(np.count_nonzero(deltas))
    candidates: list[Encoding] = []
    if for_bits < out_bits:
        candidates.append(Encoding.FOR)
    if delta_bits < out_bits and delta_bits < for_bits:
        candidates.append(Encoding.DELTA)
    dictionary = None
    if mx - mn < _BINCOUNT_SPAN and span_bits > 1:
        present = np.bincount(values - mn, minlength=0) > 0
        entries = int(np.count_nonzero(present))
        index_bits = bits_for(entries - 1)
        if n * index_bits + entries * span_bits < n * for_bits:
            dictionary = (present, entries)
            candidates.append(Encoding.INT_DICTIONARY)
    run_bits = runs * (span_bits + bits_for(n))
    if runs * 4 <= n and span_bits < 64 and run_bits < n * for_bits:
        candidates.append(Encoding.RLE)
    if lengths and checkpoints:  # point reads sum FOR lengths from checkpoints (only)
        candidates = [e for e in candidates if INT_CODECS[e].sums_lengths]
    if not candidates:
        return Encoding.PLAIN, b""

    def build(enc: Encoding, v: np.ndarray) -> bytes:
        within = INT_CODECS[enc].encode_within if v is values else None
        if within is not None:  # the page: its bounds are known
            return within(v, out_width, flags, mn, dictionary, (mn, mx))
        return _encode_as(enc, v, out_width, flags, mn, dictionary)

    if len(candidates) == 1:
        best = candidates[0]
    elif compressed:
        sample = values[:_SAMPLE_VALUES]
        sizes = [sample_size(build(enc, sample)) for enc in candidates]
        best = candidates[int(np.argmin(sizes))]
    else:
        raw = {
            Encoding.FOR: n * for_bits,
            Encoding.DELTA: (n - 1) * delta_bits,
            Encoding.RLE: run_bits,
            Encoding.INT_DICTIONARY: n * bits_for((dictionary or (0, 1))[1] - 1),
        }
        best = min(candidates, key=lambda e: raw[e])
    payload = build(best, values)
    if len(payload) >= plain_size:
        return Encoding.PLAIN, b""
    return best, payload


def _for_bits(span: int) -> int:
    """FOR's packed width for values ``v - min`` up to ``span``: the smallest that holds
    them, except 15 and 29 to 31 bits, which are rounded up to 16 and 32 (at most an eighth
    more bits): byte-aligned values decode with one cast instead of eight shift passes and
    a mask, several times faster."""
    bits = bits_for(span)
    for aligned in (16, 32):
        if aligned - aligned // 8 < bits < aligned:
            return aligned
    return bits


_Distinct = tuple[np.ndarray, int] | None  # INT_DICTIONARY: (present, entries)


def _same(n: int) -> int:
    return n


def _one_less(n: int) -> int:  # DELTA packs the deltas between its values
    return max(n - 1, 0)


def _never(flags: int) -> bool:
    return False


def _always(flags: int) -> bool:  # DELTA deltas
    return True


def _lengths_flag(flags: int) -> bool:  # FOR: value lengths only
    return bool(flags & _LENGTHS)


def checkpoint_layout(enc: Encoding, h: Header) -> tuple[int, int, int]:
    """(checkpoints, bits per checkpoint, payload offset) of a page's checkpoint section.

    The section follows the packed integers of a DELTA page (its ``count - 1`` deltas) or
    of a FOR page of LENGTHS (its ``count`` lengths): checkpoint ``j`` (1-based) is the
    sum of the first ``j * CHECKPOINT_INTERVAL`` packed integers (before adding the
    minimum), modulo 2**64, bit-packed at the width that holds the largest possible sum.
    (0, 0, end of the packed integers) when the page has no checkpoint section.
    """
    n, bits = int(h["count"]), packed_bits(h)
    packed = INT_CODECS[enc].packed(n)
    end = HEADER_SIZE + bitpack.packed_size(packed, bits)
    if not int(h["flags"]) & _CHECKPOINTS:
        return 0, 0, end
    m = packed // CHECKPOINT_INTERVAL
    return m, bitpack.bits_for(m * CHECKPOINT_INTERVAL * ((1 << bits) - 1)), end


def _checkpoints(packed: np.ndarray, bits: int) -> bytes:
    """The checkpoint section of ``packed`` (unsigned) integers packed at ``bits``."""
    m = len(packed) // CHECKPOINT_INTERVAL
    groups = packed[: m * CHECKPOINT_INTERVAL].astype(np.uint64).reshape(m, CHECKPOINT_INTERVAL)
    sums = np.cumsum(groups.sum(axis=1, dtype=np.uint64), dtype=np.uint64)
    return bitpack.pack(sums, bitpack.bits_for(m * CHECKPOINT_INTERVAL * ((1 << bits) - 1)))


def _check_checkpoints(
    payload: memoryview | bytes, enc: Encoding, h: Header, packed: np.ndarray, where: str
) -> None:
    """Full decoding verifies a page's checkpoints against its packed integers (any integer
    dtype holding them whole; summed modulo 2**64)."""
    m, ck_bits, at = checkpoint_layout(enc, h)
    if m == 0:
        return
    stored = bitpack.unpack(payload, at, ck_bits, m, where)
    groups = packed[: m * CHECKPOINT_INTERVAL].reshape(m, CHECKPOINT_INTERVAL)
    if not np.array_equal(np.cumsum(groups.sum(axis=1, dtype=np.uint64)), stored):
        raise InvalidFileError(f"{where}: checkpoints do not match the packed values")


def _encode_as(
    enc: Encoding,
    values: np.ndarray,
    out_width: int,
    flags: int,
    mn: int,
    dictionary: tuple[np.ndarray, int] | None,
) -> bytes:
    codec = INT_CODECS.get(enc)
    if codec is None:
        raise ValueError(f"{enc.name} is not an integer encoding")
    return codec.encode(values, out_width, flags, mn, dictionary)


def _encode_constant(
    values: np.ndarray, out_width: int, flags: int, mn: int, dictionary: _Distinct
) -> bytes:
    return encoding_header(
        Encoding.CONSTANT,
        count=len(values),
        out_width=out_width,
        base=int(values.min()) if len(values) else mn,
        flags=flags & ~EncodingFlag.CHECKPOINTS,
    )


def _encode_for(
    values: np.ndarray,
    out_width: int,
    flags: int,
    mn: int,
    dictionary: _Distinct,
    bounds: tuple[int, int] | None = None,
) -> bytes:
    """FOR: ``values - min`` bit-packed; ``bounds``: the values' (min, max), when known."""
    n = len(values)
    sums = flags & EncodingFlag.CHECKPOINTS
    flags &= ~EncodingFlag.CHECKPOINTS
    # (a sample may have a higher minimum than the page: ``mn`` is not its minimum)
    vmin, vmax = bounds if bounds is not None else (int(values.min()), int(values.max()))
    bits = _for_bits(vmax - vmin)
    packed = values - vmin
    with_sums = sums and flags & EncodingFlag.LENGTHS and n >= CHECKPOINT_INTERVAL
    head = encoding_header(
        Encoding.FOR,
        count=n,
        out_width=out_width,
        base=vmin,
        width=bits,
        flags=flags | (EncodingFlag.CHECKPOINTS if with_sums else 0),
    )
    return head + pack_ints(packed, bits) + (_checkpoints(packed, bits) if with_sums else b"")


def _encode_delta(
    values: np.ndarray, out_width: int, flags: int, mn: int, dictionary: _Distinct
) -> bytes:
    n = len(values)
    sums = flags & EncodingFlag.CHECKPOINTS
    flags &= ~EncodingFlag.CHECKPOINTS
    deltas = np.diff(values)
    dmn = int(deltas.min()) if n > 1 else 0
    bits = bits_for(int(deltas.max()) - dmn) if n > 1 else 1
    packed = deltas - dmn
    with_sums = sums and n - 1 >= CHECKPOINT_INTERVAL
    head = encoding_header(
        Encoding.DELTA,
        count=n,
        out_width=out_width,
        base=int(values[0]),
        aux=dmn,
        width=bits,
        flags=flags | (EncodingFlag.CHECKPOINTS if with_sums else 0),
    )
    return head + pack_ints(packed, bits) + (_checkpoints(packed, bits) if with_sums else b"")


def _encode_int_dictionary(
    values: np.ndarray, out_width: int, flags: int, mn: int, dictionary: _Distinct
) -> bytes:
    if dictionary is None:
        raise ValueError("INT_DICTIONARY needs the distinct values")
    n = len(values)
    flags &= ~EncodingFlag.CHECKPOINTS
    present, entries = dictionary
    codes = np.cumsum(present) - 1  # value - mn -> index into the sorted distinct values
    distinct = np.flatnonzero(present)
    index_bits = bits_for(entries - 1)
    value_bits = bits_for(int(distinct[-1]))
    head = encoding_header(
        Encoding.INT_DICTIONARY,
        count=n,
        out_width=out_width,
        base=mn,
        aux=entries,
        width=index_bits,
        aux_width=value_bits,
        flags=flags,
    )
    return head + pack_ints(codes[values - mn], index_bits) + pack_ints(distinct, value_bits)


def _encode_rle(
    values: np.ndarray, out_width: int, flags: int, mn: int, dictionary: _Distinct
) -> bytes:
    n = len(values)
    flags &= ~EncodingFlag.CHECKPOINTS
    deltas = np.diff(values)
    starts = np.flatnonzero(np.concatenate(([True], deltas != 0)))
    run_values = values[starts]
    run_lengths = np.diff(np.append(starts, n))
    len_bits = bits_for(int(run_lengths.max()))
    vmin = int(run_values.min())
    bits = bits_for(int(run_values.max()) - vmin)
    head = encoding_header(
        Encoding.RLE,
        count=n,
        out_width=out_width,
        base=vmin,
        aux=len(starts),
        width=bits,
        aux_width=len_bits,
        flags=flags,
    )
    return head + pack_ints(run_values - vmin, bits) + pack_ints(run_lengths, len_bits)


def int_payload_size(enc: Encoding, h: Header) -> int:
    """Exact bytes of an integer-codec payload, from its header (-1: not such an encoding)."""
    codec = INT_CODECS.get(enc)
    if codec is None:
        return -1
    if int(h["flags"]) & _CHECKPOINTS:  # only after DELTA deltas, FOR lengths
        if not codec.checkpointed(int(h["flags"])):
            return -1
        m, ck_bits, at = checkpoint_layout(enc, h)
        return at + bitpack.packed_size(m, ck_bits)
    return codec.size(h)


def _size_constant(h: Header) -> int:
    return HEADER_SIZE


def _size_for(h: Header) -> int:
    return HEADER_SIZE + bitpack.packed_size(int(h["count"]), packed_bits(h))


def _size_delta(h: Header) -> int:
    return HEADER_SIZE + bitpack.packed_size(max(int(h["count"]) - 1, 0), packed_bits(h))


def _size_rle(h: Header) -> int:
    n, aux, bits = int(h["count"]), int(h["aux"]), packed_bits(h)
    if not 0 <= aux <= n:
        return -1
    second = bitpack.packed_size(aux, packed_bits(h, "aux_width"))
    return HEADER_SIZE + bitpack.packed_size(aux, bits) + second


def _size_int_dictionary(h: Header) -> int:
    n, aux, bits = int(h["count"]), int(h["aux"]), packed_bits(h)
    if not 0 <= aux <= n:
        return -1
    second = bitpack.packed_size(aux, packed_bits(h, "aux_width"))
    return HEADER_SIZE + bitpack.packed_size(n, bits) + second


def int_bounds(enc: Encoding, h: Header) -> tuple[int, int] | None:
    """(lowest, highest) value an integer-codec payload can decode to, from its header
    alone (CONSTANT, FOR; None for the others), as exact integers (no int64 wrapping)."""
    codec = INT_CODECS.get(enc)
    return None if codec is None or codec.bounds is None else codec.bounds(h)


def _bounds_constant(h: Header) -> tuple[int, int]:
    return int(h["base"]), int(h["base"])


def _bounds_for(h: Header) -> tuple[int, int]:
    base = int(h["base"])
    return base, base + (1 << packed_bits(h)) - 1


def decode_ints(payload: memoryview | bytes, enc: Encoding, where: str = "page") -> np.ndarray:
    """Decode an integer-codec payload (CONSTANT/FOR/DELTA/RLE/INT_DICTIONARY) to int64."""
    h = read_header(payload, where)
    if len(payload) != int_payload_size(enc, h):
        raise InvalidFileError(f"{where}: {enc.name} payload size does not match its header")
    codec = INT_CODECS.get(enc)
    if codec is None:
        raise InvalidFileError(f"{where}: {enc.name} is not an integer encoding")
    return codec.decode(payload, h, where)


def _decode_constant(payload: memoryview | bytes, h: Header, where: str) -> np.ndarray:
    return np.full(int(h["count"]), int(h["base"]), dtype=np.int64)


def _decode_for(payload: memoryview | bytes, h: Header, where: str) -> np.ndarray:
    values = unpack_ints(payload, HEADER_SIZE, packed_bits(h), int(h["count"]), where)
    _check_checkpoints(payload, Encoding.FOR, h, values, where)
    values += int(h["base"])  # in place: _unpack returns a fresh array
    return values


def _decode_delta(payload: memoryview | bytes, h: Header, where: str) -> np.ndarray:
    n = int(h["count"])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    deltas = unpack_ints(payload, HEADER_SIZE, packed_bits(h), n - 1, where)
    _check_checkpoints(payload, Encoding.DELTA, h, deltas, where)
    deltas += int(h["aux"])
    out = np.empty(n, dtype=np.int64)
    out[0] = int(h["base"])
    np.cumsum(deltas, out=out[1:])
    out[1:] += out[0]
    return out


def _decode_rle(payload: memoryview | bytes, h: Header, where: str) -> np.ndarray:
    n, bits = int(h["count"]), packed_bits(h)
    runs = int(h["aux"])
    if runs < 0 or runs > n:
        raise InvalidFileError(f"{where}: RLE with {runs} runs for {n} values")
    vals = unpack_ints(payload, HEADER_SIZE, bits, runs, where) + int(h["base"])
    start = HEADER_SIZE + bitpack.packed_size(runs, bits)
    lens = unpack_ints(payload, start, packed_bits(h, "aux_width"), runs, where)
    # a run holds 1..n - runs + 1 values: checked before the sum, which could overflow
    # (64-bit lengths adding up to n modulo 2**64 made np.repeat write out of bounds)
    if (lens <= 0).any() or (lens > n - runs + 1).any() or int(lens.sum()) != n:
        raise InvalidFileError(f"{where}: RLE run lengths do not add up to {n}")
    return np.repeat(vals, lens)


def _decode_int_dictionary(payload: memoryview | bytes, h: Header, where: str) -> np.ndarray:
    indices, distinct = _int_dictionary(payload, h, where)
    return np.take(distinct, indices)  # faster than fancy indexing (bounds checked)


def _int_dictionary(
    payload: memoryview | bytes, h: Header, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """(indices, distinct values + base as int64) of an INT_DICTIONARY payload whose size
    is checked, every index checked below the number of distinct values."""
    n, bits, entries = int(h["count"]), packed_bits(h), int(h["aux"])
    if entries <= 0 or entries > n:
        raise InvalidFileError(f"{where}: dictionary of {entries} values for {n} rows")
    indices = unpack_ints(payload, HEADER_SIZE, bits, n, where)
    start = HEADER_SIZE + bitpack.packed_size(n, bits)
    distinct = unpack_ints(payload, start, packed_bits(h, "aux_width"), entries, where)
    if n and (int(indices.min()) < 0 or int(indices.max()) >= entries):  # 64-bit indices
        raise InvalidFileError(f"{where}: dictionary index out of range")
    distinct += int(h["base"])
    return indices, distinct


def decode_int_dictionary_into(
    payload: memoryview | bytes, out: np.ndarray, where: str = "page"
) -> None:
    """An INT_DICTIONARY payload's values written into ``out`` (integers of 1 to 8 bytes,
    one per value): each distinct value is cast to ``out``'s type once (wrapping, as
    :func:`ints_to_plain` casts), then gathered straight into ``out``."""
    h = read_header(payload, where)
    if len(payload) != int_payload_size(Encoding.INT_DICTIONARY, h):
        raise InvalidFileError(f"{where}: INT_DICTIONARY payload size does not match its header")
    if len(out) != int(h["count"]):
        raise InvalidFileError(f"{where}: dictionary page of {int(h['count'])} values")
    indices, distinct = _int_dictionary(payload, h, where)
    # indices are checked: "wrap" spares numpy the buffered copy "raise" makes with out=
    np.take(distinct.astype(out.dtype), indices, out=out, mode="wrap")


def _header_for_slots(
    payload: memoryview | bytes, encoding: Encoding, out: np.ndarray, where: str
) -> Header:
    """The header of an ``encoding`` integer payload decoded into ``out``, checked: the
    payload's size matches it and ``out`` has one slot per value."""
    h = read_header(payload, where)
    n = int(h["count"])
    if len(payload) != int_payload_size(encoding, h):
        raise InvalidFileError(f"{where}: {encoding.name} payload size does not match its header")
    if len(out) != n:
        raise InvalidFileError(f"{where}: {encoding.name} page of {n} values for {len(out)} slots")
    return h


def check_for_slots(payload: memoryview | bytes, out: np.ndarray, where: str = "page") -> Header:
    """The header of a FOR payload whose values will be written into ``out`` (any array
    with one slot per value), checked as :func:`decode_for_into` checks it: the payload's
    size matches it and ``out`` has one slot per value.

    Example:
        >>> enc, payload = encode_ints(np.arange(100) % 7, out_width=8, compressed=False)
        >>> enc.name, int(check_for_slots(payload, np.empty(100))["count"])
        ('FOR', 100)
    """
    return _header_for_slots(payload, Encoding.FOR, out, where)


def decode_for_into(payload: memoryview | bytes, out: np.ndarray, where: str = "page") -> None:
    """A FOR payload's values written into ``out`` (unsigned integers of 1 to 8 bytes, one
    per value): ``packed + base`` modulo ``2**(8 * out.itemsize)``, which is the plain
    little-endian form of the i64 result :func:`decode_ints` gives, cut to that width.
    A page with checkpoints (lengths, 1.3) has them verified, which needs ``out`` to hold
    its packed integers whole (at least their bit width)."""
    h = _header_for_slots(payload, Encoding.FOR, out, where)
    bits = packed_bits(h)
    bitpack.unpack_into(payload, HEADER_SIZE, bits, out, where)
    if int(h["flags"]) & EncodingFlag.CHECKPOINTS:
        if bits > 8 * out.itemsize:
            raise ValueError("decode_for_into: checkpoints need the packed integers whole")
        _check_checkpoints(payload, Encoding.FOR, h, out, where)
    base = int(h["base"]) % (1 << (8 * out.itemsize))
    if base:
        out += out.dtype.type(base)  # wraps, as the i64 sum does


def decode_delta_into(payload: memoryview | bytes, out: np.ndarray, where: str = "page") -> None:
    """A DELTA payload's values written into ``out`` (int64, one per value), as
    :func:`decode_ints` gives them, with no array in between: the deltas are unpacked into
    ``out[1:]`` (their checkpoints verified there), then summed in place.

    Example:
        >>> values = 10**12 + np.cumsum(np.arange(100) % 5)  # sorted: DELTA
        >>> enc, payload = encode_ints(values, out_width=8, compressed=False)
        >>> out = np.zeros(100, dtype=np.int64)
        >>> decode_delta_into(payload, out)
        >>> enc.name, out[:4].tolist(), bool(np.array_equal(out, values))
        ('DELTA', [1000000000000, 1000000000001, 1000000000003, 1000000000006], True)
    """
    h = _header_for_slots(payload, Encoding.DELTA, out, where)
    if len(out) == 0:
        return
    bits = packed_bits(h)
    if bits == 0:  # as _unpack refuses it for decode_ints
        raise InvalidFileError(f"{where}: packed integers with an invalid width or count")
    deltas = out[1:].view(np.uint64)
    bitpack.unpack_into(payload, HEADER_SIZE, bits, deltas, where)
    _check_checkpoints(payload, Encoding.DELTA, h, deltas, where)
    with np.errstate(over="ignore"):
        out[1:] += int(h["aux"])  # in int64, wrapping as decode_ints' sums do
        out[0] = int(h["base"])
        np.cumsum(out, out=out)


@dataclass(frozen=True)
class IntCodec:
    """The kernels of one encoding of the integer codec (CONSTANT, FOR, DELTA, RLE,
    INT_DICTIONARY): what :func:`encode_ints`, :func:`decode_ints`,
    :func:`int_payload_size`, :func:`int_bounds` and :func:`checkpoint_layout` call for
    it. :mod:`fermion.format.encoding.registry` hangs each one on its encoding's entry.

    Example:
        >>> INT_CODECS[Encoding.DELTA].packed(10), INT_CODECS[Encoding.FOR].packed(10)
        (9, 10)
    """

    encoding: Encoding
    encode: Callable[[np.ndarray, int, int, int, _Distinct], bytes]
    decode: Callable[[memoryview | bytes, Header, str], np.ndarray]
    size: Callable[[Header], int]  # payload bytes without a checkpoint section (-1: bad)
    bounds: Callable[[Header], tuple[int, int]] | None = None  # from the header alone
    packed: Callable[[int], int] = _same  # packed integers (checkpointed) of n values
    checkpointed: Callable[[int], bool] = _never  # may flags (CHECKPOINTS set) say so
    # packed + base unpacked straight into unsigned slots (:func:`decode_for_into`)
    unpacks_into: Callable[[memoryview | bytes, np.ndarray, str], None] | None = None
    sums_lengths: bool = False  # point reads sum its value lengths from checkpoints
    # ``encode`` given the values' (min, max) as well (one pass fewer each)
    encode_within: (
        Callable[[np.ndarray, int, int, int, _Distinct, tuple[int, int]], bytes] | None
    ) = None


INT_CODECS: dict[Encoding, IntCodec] = {
    c.encoding: c
    for c in (
        IntCodec(
            Encoding.CONSTANT,
            _encode_constant,
            _decode_constant,
            _size_constant,
            bounds=_bounds_constant,
        ),
        IntCodec(
            Encoding.FOR,
            _encode_for,
            _decode_for,
            _size_for,
            bounds=_bounds_for,
            checkpointed=_lengths_flag,
            unpacks_into=decode_for_into,
            sums_lengths=True,
            encode_within=_encode_for,
        ),
        IntCodec(
            Encoding.DELTA,
            _encode_delta,
            _decode_delta,
            _size_delta,
            packed=_one_less,
            checkpointed=_always,
        ),
        IntCodec(Encoding.RLE, _encode_rle, _decode_rle, _size_rle),
        IntCodec(
            Encoding.INT_DICTIONARY,
            _encode_int_dictionary,
            _decode_int_dictionary,
            _size_int_dictionary,
        ),
    )
}
