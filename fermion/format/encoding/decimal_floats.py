"""FLOAT_DECIMAL (format 1.3): float pages whose values are decimals in disguise.

Many float columns hold decimals (prices such as 12.34, measurements with three
decimals). For such a page there is an exponent ``e`` in 0..18 such that (nearly) every
value ``v`` has an integer ``k = round(v * 10**e)``, ``|k| < 2**53``, from which the
page's kernel gives ``v`` back bit for bit::

    kernel 0 (DIVIDE):   float64(k) / float64(10**e)     IEEE division, round to nearest even
    kernel 1 (MULTIPLY): float64(k) * float64(10**-e)    IEEE product of k and the binary64
                         nearest to 10**-e (format 1.6)
    then, for float32 columns, a cast to float32 (round to nearest even)

Kernel 1 is what many producers compute when they turn decimals into floats (pyarrow's
cast of a decimal128 to float64 multiplies by the reciprocal): about one such value in
seven differs in its last bit from kernel 0's, too many exceptions, so a writer tries
kernel 0 first and kernel 1 when it finds no exponent with it.

The integers go through the integer codec (:func:`~fermion.format.encoding.encodings.encode_ints`:
CONSTANT, FOR, DELTA, RLE or INT_DICTIONARY, bit-packed). The few values that do not
round-trip (NaN, infinities, -0.0, values with more digits) are *exceptions*, stored as
their positions and raw bit patterns (as ALP does); a writer accepts at most one in 32
values. The encoder checks every value with the decoder's kernel, so decoding is exact
by construction. Payload (docs/FORMAT.md §5.3)::

    EncodingHeader (24 B)      base = e, aux = x exceptions, count = n, out_width = 4 | 8
    FloatDecimalHeader (8 B)   int_encoding: the nested payload's Encoding
    u32 positions[x]           strictly increasing, each < n
    raw values[x]              out_width bytes each: the exceptions' bit patterns
    nested payload             the integer codec's payload of the n integers k (count n,
                               out_width 8, flags SIGNED | BITS), to the end

Example:
    >>> import numpy as np
    >>> v = np.round(np.linspace(-50, 50, 1000), 2)
    >>> v[7] = float("nan")
    >>> enc, payload = encode_floats(v.tobytes(), 8, None, compressed=False)
    >>> enc.name, read_layout(payload, len(payload), 1000, "p")[:2], len(payload) < v.nbytes
    ('FLOAT_DECIMAL', (2, 1), True)
    >>> bytes(decode_float_decimal(payload, 1000)) == v.tobytes()  # NaN too, bit for bit
    True
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fermion.errors import InvalidFileError
from fermion.format import native
from fermion.format.encoding import bitpack, byte_split, encodings
from fermion.format.encoding.byte_split import FLOAT_SAMPLE_BYTES
from fermion.format.encoding.header import HEADER_SIZE
from fermion.format.metadata.structs import FLOAT_DECIMAL_HEADER_DTYPE, Encoding, EncodingFlag

__all__ = [
    "INT_ENCODINGS",
    "K_LIMIT",
    "MAX_EXPONENT",
    "KERNEL_DIVIDE",
    "KERNEL_MULTIPLY",
    "NESTED_FLAGS",
    "PREFIX_SIZE",
    "FloatDecimalLayout",
    "check_ints",
    "check_nested_header",
    "decimal_kernel",
    "decode_float_decimal",
    "encode_float_decimal",
    "encode_floats",
    "exception_positions",
    "exception_values",
    "find_exponent",
    "packed_bits_estimate",
    "uses_multiply",
    "read_layout",
]

MAX_EXPONENT = 18
K_LIMIT = 1 << 53  # |k| < 2**53: float64(k) is exact
PREFIX_SIZE = HEADER_SIZE + FLOAT_DECIMAL_HEADER_DTYPE.itemsize  # the exceptions start here
INT_ENCODINGS = frozenset(
    {Encoding.CONSTANT, Encoding.FOR, Encoding.DELTA, Encoding.RLE, Encoding.INT_DICTIONARY}
)
NESTED_FLAGS = EncodingFlag.SIGNED | EncodingFlag.BITS  # the nested header's flags, exactly
KERNEL_DIVIDE = 0  # FloatDecimalHeader.kernel: k / 10**e (format 1.3)
KERNEL_MULTIPLY = 1  # k * float64(10**-e), the binary64 nearest to 10**-e (format 1.6)
_POW10 = np.array([float(10**e) for e in range(MAX_EXPONENT + 1)])  # each exact in float64
# correctly rounded: Python's float() of a decimal literal is the nearest binary64
_POW10_INV = np.array([float(f"1e-{e}") for e in range(MAX_EXPONENT + 1)])
# the sample's exponents below this are tried first, the others only when none of them
# is taken (every exponent at once costs 4-5x as much as a decimal with 2 places needs)
_FIRST_EXPONENTS = 4
_EXPONENT_SAMPLE = 1024  # values (strided over the page) the exponent is chosen on
# of those, a first pass that rejects random values cheaply: 16 values miss the few
# exceptions of random float32 in [0, 1) at 8 places (values below 0.1 need 9), and let 4
# pages in 10 on to the whole sample's search; 64 values let few pass, at about the same
# cost for the pages that are decimals
_QUICK_SAMPLE = 64
_MAX_EXCEPTIONS = 32  # a writer stores at most one exception per this many values
_MIN_SAVING = 0.9  # FLOAT_DECIMAL must save 10% over its rival (its decoding costs more)
_FLOAT: dict[int, np.dtype] = {4: np.dtype("<f4"), 8: np.dtype("<f8")}
_UINT: dict[int, np.dtype] = {4: np.dtype("<u4"), 8: np.dtype("<u8")}


def decimal_kernel(
    k: np.ndarray, e: int | np.ndarray, width: int, kernel: int = KERNEL_DIVIDE
) -> np.ndarray:
    """The decoding kernel: ``float64(k) / float64(10**e)`` (IEEE division, round to
    nearest even), or with ``kernel`` 1 ``float64(k) * float64(10**-e)`` (IEEE product),
    cast to float32 (round to nearest even) when ``width`` is 4. (``e`` may be an array of
    exponents broadcast against ``k``.)

    Example:
        >>> k = np.array([57], dtype=np.int64)
        >>> decimal_kernel(k, 2, 8)[0], decimal_kernel(k, 2, 8, KERNEL_MULTIPLY)[0]
        (np.float64(0.57), np.float64(0.5700000000000001))
    """
    if kernel == KERNEL_MULTIPLY:
        out = np.multiply(k, _POW10_INV[e], dtype=np.float64)
    else:
        out = np.divide(k, _POW10[e], dtype=np.float64)
    return out.astype(_FLOAT[width], copy=False)  # little-endian, as stored


def _to_decimal(
    values: np.ndarray, e: int | np.ndarray, width: int, kernel: int = KERNEL_DIVIDE
) -> tuple[np.ndarray, ...]:
    """(k, round-trips, fits) per value at exponent ``e``: ``k = rint(v * 10**e)`` where
    ``|k| < 2**53`` (fits; else 0); a value round-trips when the kernel returns its exact
    bit pattern (so NaN, infinities and -0.0 never do). With a column of exponents
    (e.g. ``np.arange(4)[:, None]``) the results have one row per exponent."""
    k, fits = _scaled(values, e)
    return k, _round_trips(values, k, fits, e, width, kernel), fits


def _scaled(values: np.ndarray, e: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, fits) of :func:`_to_decimal`: they do not depend on the kernel."""
    with np.errstate(all="ignore"):
        scaled = np.multiply(values, _POW10[e], dtype=np.float64)
        np.rint(scaled, out=scaled)
        fits = np.abs(scaled) < K_LIMIT  # False for NaN and infinities
        k = np.where(fits, scaled, 0.0).astype(np.int64)
    return k, fits


def _round_trips(
    values: np.ndarray,
    k: np.ndarray,
    fits: np.ndarray,
    e: int | np.ndarray,
    width: int,
    kernel: int,
) -> np.ndarray:
    """Whether each value round-trips through ``k`` at ``e`` (see :func:`_to_decimal`)."""
    with np.errstate(all="ignore"):
        back = decimal_kernel(k, e, width, kernel)
    return fits & (back.view(_UINT[width]) == values.view(_UINT[width]))


class _Trials:
    """A sample's trial results at each exponent: how many values do not fit, how many do
    not round-trip, and the span of the integers ``k`` of those that do (see
    :func:`_to_decimal`), computed for a group of exponents only when a search reaches it
    (a search stops at the first exponent every value round-trips with: decimals with 2
    places need the first group only). ``split``: the first exponent of the second group
    (the groups are ``[0, split)`` and ``[split, MAX_EXPONENT]``; a few values are tried
    at every exponent at once). The compiled kernel (:data:`native.KERNELS`) computes the
    counts without the arrays of ``k``; without it, numpy computes the same."""

    def __init__(self, values: np.ndarray, width: int, split: int) -> None:
        self.values, self.width = np.ascontiguousarray(values), width
        self.starts = [0, split] if 0 < split <= MAX_EXPONENT else [0]
        self._scaled: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._stats: dict[tuple[int, int], _Counts] = {}

    def group(self, lo: int, kernel: int) -> _Counts:
        """The counts for the group of exponents starting at ``lo`` (one of
        :attr:`starts`), one entry per exponent."""
        counts = self._stats.get((lo, kernel))
        if counts is None:
            at = self.starts.index(lo)
            hi = self.starts[at + 1] if at + 1 < len(self.starts) else MAX_EXPONENT + 1
            counts = self._stats[lo, kernel] = self._count(lo, hi, kernel)
        return counts

    def _count(self, lo: int, hi: int, kernel: int) -> _Counts:
        kernels = native.KERNELS
        if kernels is not None:
            out = np.empty((4, hi - lo), dtype=np.int64)
            kernels.decimal_trials(self.values, self.width, kernel, _POW10, _POW10_INV, lo, hi, out)
            return _Counts(*(row.tolist() for row in out))
        if lo not in self._scaled:
            e = np.arange(lo, hi)[:, None]
            self._scaled[lo] = (e, *_scaled(self.values, e))
        e, k, fits = self._scaled[lo]
        ok = _round_trips(self.values, k, fits, e, self.width, kernel)
        m = len(self.values)
        kmin = np.where(ok, k, np.iinfo(np.int64).max).min(axis=1, initial=np.iinfo(np.int64).max)
        kmax = np.where(ok, k, np.iinfo(np.int64).min).max(axis=1, initial=np.iinfo(np.int64).min)
        return _Counts(
            (m - np.count_nonzero(fits, axis=1)).tolist(),
            (m - np.count_nonzero(ok, axis=1)).tolist(),
            kmin.tolist(),
            kmax.tolist(),
        )


class _Counts(NamedTuple):
    """Per exponent of a group: values that do not fit, values that do not round-trip,
    and the smallest and largest ``k`` of those that do (int64 max and min when none
    does)."""

    unfit: list[int]
    misses: list[int]
    kmin: list[int]
    kmax: list[int]


def find_exponent(
    values: np.ndarray, valid: np.ndarray | None, width: int
) -> tuple[int, int] | None:
    """(exponent, kernel) for a page of floats, chosen on a strided sample of its non-null
    values (slots ``0, s, 2s, ...`` with ``s = max(1, n // 1024)``): kernel 0 (DIVIDE)
    when an exponent is found with it, else kernel 1 (MULTIPLY) when one is found with it.

    Exponents are tried from 0 up, stopping at the first one every sampled value
    round-trips with; among those with at most one exception in 32, the one with the
    smallest estimated size (k bit-packed at the sample's span, plus the exceptions) wins.
    None when there is none (e.g. random or high-precision values), or when even that one
    would not be 10% smaller than the plain values (e.g. random float32, whose values do
    round-trip at 8 or 9 decimals, as ~30-bit integers). A first pass over 64 of the
    sampled values rejects such pages cheaply.
    """
    step = max(1, len(values) // _EXPONENT_SAMPLE)
    picked = np.arange(0, len(values), step)
    if valid is not None:
        picked = picked[valid[picked]]
    sample = values[picked]
    quick = sample[:: max(1, len(sample) // _QUICK_SAMPLE)]
    quick_trials = _Trials(quick, width, split=0)  # a few values: every exponent at once
    trials = _Trials(sample, width, split=_FIRST_EXPONENTS)
    for kernel in (KERNEL_DIVIDE, KERNEL_MULTIPLY):
        # the quick pass allows 8x the exceptions: few values, periodic ones may cluster
        if len(quick) < len(sample) and _best_exponent(quick_trials, 8, kernel) is None:
            continue
        e = _best_exponent(trials, 1, kernel)
        if e is not None:
            return e, kernel
    return None


def packed_bits_estimate(values: np.ndarray, valid: np.ndarray | None, width: int) -> int | None:
    """Bits per value the integers k of FLOAT_DECIMAL pages of ``values`` would be packed
    at, estimated on the strided sample :func:`find_exponent` chooses the exponent on (the
    span of the sample's k that round-trip); None when the values are not decimals.

    A writer sizes such pages by this encoded width, as it does integer pages.

    Example:
        >>> v = np.round(np.linspace(0, 50, 10_000), 2)  # k in 0..5000: 13 bits
        >>> noise = np.random.default_rng(0).random(999)
        >>> packed_bits_estimate(v, None, 8), packed_bits_estimate(noise, None, 8)
        (13, None)
    """
    found = find_exponent(values, valid, width)
    if found is None:
        return None
    step = max(1, len(values) // _EXPONENT_SAMPLE)
    picked = np.arange(0, len(values), step)
    if valid is not None:
        picked = picked[valid[picked]]
    k, ok, _ = _to_decimal(values[picked], found[0], width, found[1])
    good = k[ok]
    return bitpack.bits_for(int(good.max()) - int(good.min())) if len(good) else 1


def _best_exponent(trials: _Trials, slack: int = 1, kernel: int = KERNEL_DIVIDE) -> int | None:
    m, width = len(trials.values), trials.width
    allowed = m * slack // _MAX_EXCEPTIONS
    best, best_cost = None, 0
    for lo in trials.starts:
        unfit, misses, kmin, kmax = trials.group(lo, kernel)
        stop = False
        for j in range(len(unfit)):
            if unfit[j] > allowed:
                stop = True  # |v * 10**e| grows with e: no larger exponent fits more values
                break
            if misses[j] > allowed:
                continue
            span = kmax[j] - kmin[j] if misses[j] < m else 0
            cost = m * bitpack.bits_for(span) + misses[j] * (32 + 8 * width)
            if best is None or cost < best_cost:
                best, best_cost = lo + j, cost
            if misses[j] == 0:
                stop = True
                break
        if stop:
            break
    if best is not None and best_cost > _MIN_SAVING * m * 8 * width:
        return None  # could not save 10% over the plain values
    return best


def encode_float_decimal(
    values: np.ndarray,
    valid: np.ndarray | None,
    e: int,
    width: int,
    *,
    compressed: bool,
    kernel: int = KERNEL_DIVIDE,
) -> bytes | None:
    """FLOAT_DECIMAL payload of ``values`` (float32 or float64) at exponent ``e``, decoded
    by ``kernel`` (1: MULTIPLY, format 1.6).

    None when more than one non-null value in 32 would be an exception or the integers
    only encode as PLAIN. Null and exception slots get the smallest k of the page (their
    decoded contents are unspecified or overwritten).
    """
    n = len(values)
    k, ok, _ = _to_decimal(values, e, width, kernel)
    keep = ok if valid is None else ok & valid
    missed = ~ok if valid is None else ~ok & valid
    positions = np.flatnonzero(missed)
    if len(positions) > n // _MAX_EXCEPTIONS:
        return None
    if not keep.all():
        k[~keep] = int(k[keep].min()) if keep.any() else 0
    int_encoding, nested = encodings.encode_ints(k, out_width=8, signed=True, compressed=compressed)
    if not nested:  # PLAIN: the integers do not encode smaller (encode_ints gives no payload)
        return None
    head = encodings.encoding_header(
        Encoding.FLOAT_DECIMAL, count=n, out_width=width, base=e, aux=len(positions)
    )
    sub = np.zeros(1, dtype=FLOAT_DECIMAL_HEADER_DTYPE)
    sub["int_encoding"] = int_encoding
    sub["kernel"] = kernel
    exceptions = values[positions].astype(_FLOAT[width])
    return b"".join(
        [head, sub.tobytes(), positions.astype("<u4").tobytes(), exceptions.tobytes(), nested]
    )


def encode_floats(
    data: memoryview | bytes,
    width: int,
    valid: np.ndarray | None,
    *,
    compressed: bool,
    decimal: bool = True,
    split: bool | None = None,
) -> tuple[Encoding, bytes | memoryview]:
    """Choose PLAIN, BYTE_SPLIT or FLOAT_DECIMAL for a page of float values.

    FLOAT_DECIMAL is tried only when :func:`find_exponent` finds an exponent on a small
    sample (a cheap test that fails quickly on random values). With ``compressed`` it must
    then be at least 10% smaller than both plain and BYTE_SPLIT after zstd on the page's
    first 16 KiB (the sample BYTE_SPLIT is chosen on), and in any case the whole page's
    payload must have at most one exception in 32 and be at least 10% smaller than the
    plain values; otherwise BYTE_SPLIT or PLAIN is chosen as before. ``valid``: the
    page's validity (None: no nulls). ``decimal=False`` skips FLOAT_DECIMAL. ``split``:
    BYTE_SPLIT or not as decided on an earlier page (None: sample this page). Without
    ``compressed`` BYTE_SPLIT is never chosen: its planes only help zstd.
    """
    n = len(data) // width
    if n < 64 or width not in (4, 8):
        return Encoding.PLAIN, data
    values = np.frombuffer(data, dtype=_FLOAT[width], count=n)
    found = find_exponent(values, valid, width) if decimal else None
    sizes = None  # zstd sizes of the sample, plain and BYTE_SPLIT, once computed
    if found is not None:
        if compressed:
            sizes = byte_split.byte_split_sizes(data, width)
        payload = _decimal_if_smaller(values, valid, found, width, sizes)
        if payload is not None:
            return Encoding.FLOAT_DECIMAL, payload
    if not compressed or split is False:
        return Encoding.PLAIN, data
    planes = byte_split.encode_byte_split(data, width, sizes, sampled=split is None)
    return (Encoding.BYTE_SPLIT, planes) if planes is not None else (Encoding.PLAIN, data)


def _decimal_if_smaller(
    values: np.ndarray,
    valid: np.ndarray | None,
    found: tuple[int, int],
    width: int,
    sizes: tuple[int, int] | None,
) -> bytes | None:
    """The FLOAT_DECIMAL payload at ``found`` (exponent, kernel) when it saves 10%: after
    zstd on the sample when ``sizes`` (the sample's zstd sizes plain and BYTE_SPLIT) are
    given, and raw."""
    e, kernel = found
    whole = None
    if sizes is not None:
        m = FLOAT_SAMPLE_BYTES // width
        head = values[:m]
        sample = encode_float_decimal(
            head, None if valid is None else valid[:m], e, width, compressed=True, kernel=kernel
        )
        if sample is None or encodings.sample_size(sample) > _MIN_SAVING * min(sizes):
            return None
        whole = sample if len(values) <= m else None  # the sample was the whole page
    payload = whole or encode_float_decimal(
        values, valid, e, width, compressed=sizes is not None, kernel=kernel
    )
    if payload is None or len(payload) > _MIN_SAVING * values.nbytes:
        return None
    return payload


# -- decoding ---------------------------------------------------------------------------


class FloatDecimalLayout(NamedTuple):
    """A FLOAT_DECIMAL payload's validated header fields and section offsets."""

    exponent: int
    exceptions: int  # x: exception positions and values
    width: int  # bytes per float (4 or 8)
    int_encoding: Encoding  # of the nested integer payload
    values_at: int  # the exceptions' raw values start here
    nested_at: int  # the nested integer payload starts here and runs to the end
    kernel: int = KERNEL_DIVIDE  # KERNEL_MULTIPLY: format 1.6


def read_layout(
    prefix: memoryview | bytes | np.ndarray, size: int, count: int, where: str
) -> FloatDecimalLayout:
    """The layout of a FLOAT_DECIMAL payload of ``size`` bytes holding ``count`` values,
    from its first 32 bytes (``prefix``; more is ignored)."""
    if len(prefix) < PREFIX_SIZE or size < PREFIX_SIZE:
        raise InvalidFileError(f"{where}: FLOAT_DECIMAL payload shorter than its headers")
    h = encodings.read_header(prefix, where)
    n, e, x, width = int(h["count"]), int(h["base"]), int(h["aux"]), int(h["out_width"])
    if n != count:
        raise InvalidFileError(f"{where}: encoded page holds {n} values")
    if width not in (4, 8) or int(h["width"]) or int(h["aux_width"]) or int(h["flags"]):
        raise InvalidFileError(f"{where}: invalid FLOAT_DECIMAL header")
    if not 0 <= e <= MAX_EXPONENT:
        raise InvalidFileError(f"{where}: FLOAT_DECIMAL exponent {e} outside 0..18")
    if not 0 <= x <= n:
        raise InvalidFileError(f"{where}: {x} FLOAT_DECIMAL exceptions for {n} values")
    sub = np.frombuffer(prefix, dtype=FLOAT_DECIMAL_HEADER_DTYPE, count=1, offset=HEADER_SIZE)[0]
    int_id = int(sub["int_encoding"])
    if int_id not in INT_ENCODINGS or int(sub["reserved2"] | sub["reserved4"]):
        raise InvalidFileError(f"{where}: invalid FLOAT_DECIMAL nested encoding {int_id}")
    kernel = int(sub["kernel"])
    if kernel not in (KERNEL_DIVIDE, KERNEL_MULTIPLY):
        raise InvalidFileError(f"{where}: unknown FLOAT_DECIMAL kernel {kernel}")
    values_at = PREFIX_SIZE + 4 * x
    nested_at = values_at + width * x
    if nested_at + HEADER_SIZE > size:
        raise InvalidFileError(f"{where}: FLOAT_DECIMAL exceptions run past the payload")
    return FloatDecimalLayout(e, x, width, Encoding(int_id), values_at, nested_at, kernel)


def uses_multiply(payload: bytes | memoryview) -> bool:
    """Whether a FLOAT_DECIMAL payload (as written) is decoded by the MULTIPLY kernel,
    which needs the required feature DECIMAL_MULTIPLY (format 1.6)."""
    return int(memoryview(payload)[HEADER_SIZE + 1]) == KERNEL_MULTIPLY


def check_nested_header(h: encodings.Header, count: int, where: str) -> None:
    """The nested integer payload holds ``count`` values of 8 bytes, flags SIGNED | BITS."""
    if int(h["count"]) != count or int(h["out_width"]) != 8 or int(h["flags"]) != NESTED_FLAGS:
        raise InvalidFileError(f"{where}: FLOAT_DECIMAL integers with an invalid header")


def check_ints(k: np.ndarray, where: str) -> None:
    """Every integer k of a FLOAT_DECIMAL page satisfies ``|k| < 2**53``."""
    if len(k) and (int(k.min()) <= -K_LIMIT or int(k.max()) >= K_LIMIT):
        raise InvalidFileError(f"{where}: FLOAT_DECIMAL integer beyond 2**53")


def exception_positions(
    buf: memoryview | bytes | np.ndarray, layout: FloatDecimalLayout, count: int, where: str
) -> np.ndarray:
    """The exceptions' positions (int64), checked: strictly increasing, each < ``count``."""
    pos = np.frombuffer(buf, dtype="<u4", count=layout.exceptions, offset=PREFIX_SIZE)
    pos = pos.astype(np.int64)
    if len(pos) and (int(pos[-1]) >= count or bool(np.any(pos[1:] <= pos[:-1]))):
        raise InvalidFileError(f"{where}: FLOAT_DECIMAL exception positions out of order")
    return pos


def exception_values(
    buf: memoryview | bytes | np.ndarray, layout: FloatDecimalLayout
) -> np.ndarray:
    """The exceptions' bit patterns (unsigned integers of the float width)."""
    dtype = _UINT[layout.width]
    return np.frombuffer(buf, dtype=dtype, count=layout.exceptions, offset=layout.values_at)


def decode_float_decimal(
    payload: memoryview | bytes, count: int, where: str = "page", into: np.ndarray | None = None
) -> memoryview | None:
    """Decode a FLOAT_DECIMAL payload of ``count`` values to their plain bytes (written into
    ``into``, a byte buffer of exactly that size, when given; then None is returned)."""
    layout = read_layout(payload, len(payload), count, where)
    nested = memoryview(payload)[layout.nested_at :]
    h = encodings.read_header(nested, where)
    check_nested_header(h, count, where)
    if into is not None and layout.width == 8 and len(into) == 8 * count:
        _decode_into(payload, nested, h, layout, count, where, into)
        return None
    k = encodings.decode_ints(nested, layout.int_encoding, where)
    check_ints(k, where)
    positions = exception_positions(payload, layout, count, where)
    out = decimal_kernel(k, layout.exponent, layout.width, layout.kernel)
    out.view(_UINT[layout.width])[positions] = exception_values(payload, layout)
    if into is not None:
        into[:] = out.view(np.uint8)
        return None
    return out.data.cast("B")


def _decode_into(
    payload: memoryview | bytes,
    nested: memoryview,
    h: encodings.Header,
    layout: FloatDecimalLayout,
    count: int,
    where: str,
    into: np.ndarray,
) -> None:
    """:func:`decode_float_decimal` of float64 values written into ``into`` (``8 * count``
    bytes) with no page-sized array in between: FOR integers are unpacked into ``into``
    itself (as int64), checked, and turned into floats in place by the kernel; other
    nested encodings are decoded to int64 first, and the kernel writes into ``into``."""
    out = into.view(np.float64)
    codec = encodings.INT_CODECS.get(layout.int_encoding)
    unpack = None if codec is None else codec.unpacks_into  # FOR: packed + base
    if unpack is not None and _decode_table_into(nested, h, layout, where, out):
        _set_exceptions(payload, layout, count, where, out)
        return
    if unpack is not None and encodings.packed_bits(h) > 0:
        k = into.view("<u8")
        unpack(nested, k, where)  # packed + base, wrapping as int64
        k = k.view(np.int64)
        if not _for_range_fits(h):
            check_ints(k, where)
    else:
        k = encodings.decode_ints(nested, layout.int_encoding, where)
        check_ints(k, where)
    # same memory in and out: an element-wise ufunc reads each integer before writing its float
    if layout.kernel == KERNEL_MULTIPLY:
        np.multiply(k, _POW10_INV[layout.exponent], out=out)
    else:
        np.divide(k, _POW10[layout.exponent], out=out)
    _set_exceptions(payload, layout, count, where, out)


def _set_exceptions(
    payload: memoryview | bytes,
    layout: FloatDecimalLayout,
    count: int,
    where: str,
    out: np.ndarray,
) -> None:
    """Write a page's exceptions (raw float64 bit patterns) over the kernel's values."""
    positions = exception_positions(payload, layout, count, where)
    out.view(np.uint64)[positions] = exception_values(payload, layout)


def _for_range_fits(h: encodings.Header) -> bool:
    """Whether every integer a FOR header can give, ``base + [0, 2**bits)``, satisfies
    ``|k| < 2**53`` (then :func:`check_ints` has nothing to find)."""
    base, bits = int(h["base"]), encodings.packed_bits(h)
    return -K_LIMIT < base and base + (1 << bits) - 1 < K_LIMIT


#: FOR integers of at most this many bits are decoded through a table of every float
#: their 2**bits values give (one gather per value instead of unpack, add, range check
#: and kernel passes)
TABLE_MAX_BITS = 12


def _decode_table_into(
    nested: memoryview,
    h: encodings.Header,
    layout: FloatDecimalLayout,
    where: str,
    out: np.ndarray,
) -> bool:
    """The kernel's float64 of each FOR integer of ``nested`` written into ``out``, looked
    up in a table of the kernel applied to ``base + j`` for every packed value ``j`` (the
    same IEEE operations, so the same bits); False (nothing written) unless the page is
    narrow enough for a table (:data:`TABLE_MAX_BITS`, and fewer table entries than values)
    and its whole range ``[base, base + 2**bits)`` lies within ``|k| < 2**53``, which then
    needs no check per value."""
    bits = encodings.packed_bits(h)
    if not 0 < bits <= TABLE_MAX_BITS or (1 << bits) > len(out):
        return False
    if int(h["flags"]) & EncodingFlag.CHECKPOINTS or not _for_range_fits(h):
        return False
    encodings.check_for_slots(nested, out, where)  # payload size and one slot per value
    k = np.arange(1 << bits, dtype=np.int64) + int(h["base"])
    table = decimal_kernel(k, layout.exponent, 8, layout.kernel)
    lut = bitpack.BYTE_TABLES.get(bits)
    if lut is not None:  # 1, 2 or 4 bits: a float pair, quad or octet per packed byte
        per = 8 // bits
        whole = len(out) // per
        packed = np.frombuffer(nested, dtype=np.uint8, offset=HEADER_SIZE)
        by_byte = table[lut]  # (256, per): the floats each byte holds, in order
        rows = out[: whole * per].reshape(whole, per)
        np.take(by_byte, packed[:whole], axis=0, out=rows, mode="clip")  # all in range
        if whole * per < len(out):
            out[whole * per :] = by_byte[packed[whole]][: len(out) - whole * per]
        return True
    slots: np.ndarray = np.empty(len(out), dtype=np.uint8 if bits <= 8 else np.uint16)
    bitpack.unpack_into(nested, HEADER_SIZE, bits, slots, where)
    np.take(table, slots, out=out, mode="clip")  # every packed value indexes the table
    return True
