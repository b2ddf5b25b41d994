"""Typed min/max statistics packed into int64 ``min``/``max`` slots (docs/FORMAT.md §7).

Statistics are stored as ``int64``. Fermion v1 keeps that slot size and interprets it
by the column's *stats kind* (a pure function of the Arrow type, so nothing extra is stored):

=========  ==================================================  ==========================
kind       types                                               the 8 bytes hold
=========  ==================================================  ==========================
SIGNED     bool, int8-64, date, time, timestamp, duration      the value as int64
UNSIGNED   uint8-64                                            the value as uint64
FLOAT      float32, float64                                    float64 bits (NaN: no bounds)
DECIMAL    decimal128/256 whose unscaled bounds fit int64      the unscaled int64
BYTES      string, binary (+large), fixed_size_binary          an 8-byte bound, zero padded
=========  ==================================================  ==========================

For BYTES the minimum is a prefix (a valid lower bound) and the maximum is either exact
(at most 8 bytes, not ending in NUL) or a prefix whose last character is incremented (a
valid upper bound); ``MIN_INEXACT``/``MAX_INEXACT`` say which. Bounds always hold, so
pruning with them never drops a matching row.

Example:
    >>> import pyarrow as pa
    >>> lo, hi, flags = compute_stats(pa.array([3, None, -7]), StatsKind.SIGNED)
    >>> lo, hi, bool(flags & StatsFlag.HAS_MINMAX)
    (-7, 3, True)
"""

from __future__ import annotations

import decimal
import enum
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from fermion.format.metadata.structs import StatsFlag

__all__ = [
    "Stats",
    "StatsKind",
    "bound_scalars",
    "compute_stats",
    "int_stats",
    "merge_stats",
    "stats_kind",
]

Stats = tuple[int, int, int]  # (min slot, max slot, StatsFlag bits)

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class StatsKind(enum.Enum):
    NONE = 0
    SIGNED = 1
    UNSIGNED = 2
    FLOAT = 3
    DECIMAL = 4
    BYTES = 5


def stats_kind(t: pa.DataType) -> StatsKind:
    """The interpretation of the stats slots for values of type ``t``."""
    if isinstance(t, pa.BaseExtensionType) or pat.is_run_end_encoded(t):
        return StatsKind.NONE
    if pat.is_boolean(t) or pat.is_signed_integer(t):
        return StatsKind.SIGNED
    if pat.is_unsigned_integer(t):
        return StatsKind.UNSIGNED
    if pat.is_float32(t) or pat.is_float64(t):
        return StatsKind.FLOAT
    if pat.is_decimal(t):
        return StatsKind.DECIMAL
    if pat.is_date(t) or pat.is_time(t) or pat.is_timestamp(t) or pat.is_duration(t):
        return StatsKind.SIGNED
    if (
        pat.is_string(t)
        or pat.is_large_string(t)
        or pat.is_string_view(t)
        or pat.is_binary_view(t)
        or pat.is_binary(t)
        or pat.is_large_binary(t)
        or pat.is_fixed_size_binary(t)
    ):
        return StatsKind.BYTES
    return StatsKind.NONE


def _int_view(arr: pa.Array) -> pa.Array:
    t = arr.type
    if pat.is_boolean(t):
        return arr.cast(pa.int8())
    if pat.is_integer(t):
        return arr
    return arr.view(pa.int32() if t.bit_width == 32 else pa.int64())


def _pack_bytes(b: bytes) -> int:
    return int(np.frombuffer(b.ljust(8, b"\0"), dtype="<i8")[0])


def _unpack_bytes(v: int) -> bytes:
    return np.int64(v).astype("<i8").tobytes()


def _upper_bound_bytes(b: bytes) -> bytes | None:
    """The shortest bytes of length <= 8 that are > ``b`` (None if impossible)."""
    prefix = bytearray(b[:8])
    while prefix:
        if prefix[-1] < 0xFF:
            prefix[-1] += 1
            return bytes(prefix)
        prefix.pop()
    return None


def _upper_bound_text(s: str) -> bytes | None:
    """Like :func:`_upper_bound_bytes` but the result is valid UTF-8 (code point order)."""
    chars = list(s)
    while chars:
        while chars and len("".join(chars).encode()) > 8:
            chars.pop()
        if not chars:
            return None
        cp = ord(chars[-1]) + 1
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0xE000
        if cp <= 0x10FFFF:
            cand = "".join(chars[:-1]) + chr(cp)
            if len(cand.encode()) <= 8:
                return cand.encode()
        chars.pop()
    return None


def _lower_bound_text(s: str) -> bytes:
    out = b""
    for ch in s:
        enc = ch.encode()
        if len(out) + len(enc) > 8:
            break
        out += enc
    return out


def _float_bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def compute_stats(values: pa.Array, kind: StatsKind) -> tuple[int, int, int]:
    """Bounds of the non-null values of ``values`` as (min slot, max slot, StatsFlag bits)."""
    if kind == StatsKind.NONE or values.null_count == len(values) or len(values) == 0:
        return 0, 0, 0
    if kind == StatsKind.SIGNED:
        mm = pc.min_max(_int_view(values))
        return int(mm["min"].as_py()), int(mm["max"].as_py()), StatsFlag.HAS_MINMAX
    if kind == StatsKind.UNSIGNED:
        mm = pc.min_max(values)
        lo = int(np.uint64(mm["min"].as_py()).view(np.int64))
        hi = int(np.uint64(mm["max"].as_py()).view(np.int64))
        return lo, hi, StatsFlag.HAS_MINMAX
    if kind == StatsKind.FLOAT:
        if not values.null_count and values.type in (pa.float32(), pa.float64()):
            v = values.to_numpy(zero_copy_only=True)  # two numpy reductions, no Arrow calls
            lo_f, hi_f = float(v.min()), float(v.max())  # NaN if there is one
            if lo_f != lo_f or hi_f != hi_f:
                return 0, 0, StatsFlag.HAS_NAN
            return _float_bits(lo_f), _float_bits(hi_f), StatsFlag.HAS_MINMAX
        if pc.any(pc.is_nan(values)).as_py():
            return 0, 0, StatsFlag.HAS_NAN
        mm = pc.min_max(values)
        lo = int(np.float64(mm["min"].as_py()).view(np.int64))
        hi = int(np.float64(mm["max"].as_py()).view(np.int64))
        return lo, hi, StatsFlag.HAS_MINMAX
    if kind == StatsKind.DECIMAL:
        mm = pc.min_max(values)
        scale = values.type.scale
        lo_d, hi_d = mm["min"].as_py(), mm["max"].as_py()
        lo_i, hi_i = int(lo_d.scaleb(scale)), int(hi_d.scaleb(scale))
        if _INT64_MIN <= lo_i and hi_i <= _INT64_MAX:
            return lo_i, hi_i, StatsFlag.HAS_MINMAX
        return 0, 0, 0
    # BYTES
    try:
        mm = pc.min_max(values)
    except pa.ArrowNotImplementedError:
        return 0, 0, 0
    lo_v, hi_v = mm["min"].as_py(), mm["max"].as_py()
    text = isinstance(lo_v, str)
    lo_b = _lower_bound_text(lo_v) if text else bytes(lo_v[:8])
    hi_raw = hi_v.encode() if text else bytes(hi_v)
    flags = StatsFlag.HAS_MINMAX
    if len(lo_b) < len(lo_v.encode() if text else lo_v):
        flags |= StatsFlag.MIN_INEXACT
    if len(hi_raw) <= 8 and not hi_raw.endswith(b"\0"):
        hi_b: bytes | None = hi_raw
    else:
        hi_b = _upper_bound_text(hi_v) if text else _upper_bound_bytes(hi_raw)
        flags |= StatsFlag.MAX_INEXACT
    if hi_b is None:
        return 0, 0, 0
    return _pack_bytes(lo_b), _pack_bytes(hi_b), flags


def int_stats(ints: np.ndarray, kind: StatsKind) -> Stats | None:
    """Bounds of SIGNED or DECIMAL values already held as int64 (the non-null ones only),
    as :func:`compute_stats` would give them; None for other kinds."""
    if kind not in (StatsKind.SIGNED, StatsKind.DECIMAL):
        return None
    if len(ints) == 0:
        return 0, 0, 0
    return int(ints.min()), int(ints.max()), StatsFlag.HAS_MINMAX


def _bytes_bound(v: int) -> bytes:
    return _unpack_bytes(v).rstrip(b"\0")  # stored bounds never end in NUL


def merge_stats(pages: Sequence[Stats], null_pages: Sequence[bool], kind: StatsKind) -> Stats:
    """A chunk's bounds from its pages' bounds, without another pass over the values.

    ``null_pages[i]`` says page ``i`` has no non-null value (its bounds are ignored). For
    integers, decimals and floats the result equals :func:`compute_stats` of the whole
    chunk; for bytes the minimum of the pages' prefix lower bounds is the chunk's, and
    the maximum of their upper bounds is a valid upper bound.

    Example:
        >>> lo, hi, flags = merge_stats(
        ...     [(5, 9, 1), (0, 0, 0), (-2, 4, 1)], [False, True, False], StatsKind.SIGNED
        ... )
        >>> lo, hi, flags == StatsFlag.HAS_MINMAX
        (-2, 9, True)
    """
    live = [p for p, empty in zip(pages, null_pages, strict=True) if not empty]
    if kind == StatsKind.NONE or not live:
        return 0, 0, 0
    if kind == StatsKind.FLOAT and any(f & StatsFlag.HAS_NAN for _, _, f in live):
        return 0, 0, StatsFlag.HAS_NAN
    if not all(f & StatsFlag.HAS_MINMAX for _, _, f in live):
        return 0, 0, 0
    if kind in (StatsKind.SIGNED, StatsKind.DECIMAL):
        return min(lo for lo, _, _ in live), max(hi for _, hi, _ in live), StatsFlag.HAS_MINMAX
    if kind in (StatsKind.UNSIGNED, StatsKind.FLOAT):
        view = np.float64 if kind == StatsKind.FLOAT else np.uint64
        los = np.array([lo for lo, _, _ in live], dtype=np.int64).view(view)
        his = np.array([hi for _, hi, _ in live], dtype=np.int64).view(view)
        lo_i = int(np.array([los.min()], dtype=view).view(np.int64)[0])
        hi_i = int(np.array([his.max()], dtype=view).view(np.int64)[0])
        return lo_i, hi_i, StatsFlag.HAS_MINMAX
    lo_b = min(_bytes_bound(lo) for lo, _, _ in live)
    hi_b = max(_bytes_bound(hi) for _, hi, _ in live)
    flags = StatsFlag.HAS_MINMAX
    if all(f & StatsFlag.MIN_INEXACT for lo, _, f in live if _bytes_bound(lo) == lo_b):
        flags |= StatsFlag.MIN_INEXACT
    if all(f & StatsFlag.MAX_INEXACT for _, hi, f in live if _bytes_bound(hi) == hi_b):
        flags |= StatsFlag.MAX_INEXACT
    return _pack_bytes(lo_b), _pack_bytes(hi_b), flags


def bound_scalars(
    t: pa.DataType, kind: StatsKind, lo: int, hi: int, flags: int
) -> tuple[pa.Scalar, pa.Scalar] | None:
    """Arrow scalars of type ``t`` (or a comparable type) for stored bounds, or None."""
    if not flags & StatsFlag.HAS_MINMAX or flags & StatsFlag.HAS_NAN:
        return None
    if kind == StatsKind.SIGNED:
        if pat.is_boolean(t):
            return pa.scalar(bool(lo)), pa.scalar(bool(hi))
        if pat.is_integer(t):
            return pa.scalar(lo, type=t), pa.scalar(hi, type=t)
        phys = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.scalar(lo, type=phys).cast(t), pa.scalar(hi, type=phys).cast(t)
    if kind == StatsKind.UNSIGNED:
        lo_u = int(np.int64(lo).view(np.uint64))
        hi_u = int(np.int64(hi).view(np.uint64))
        return pa.scalar(lo_u, type=t), pa.scalar(hi_u, type=t)
    if kind == StatsKind.FLOAT:
        lo_f = float(np.int64(lo).view(np.float64))
        hi_f = float(np.int64(hi).view(np.float64))
        return pa.scalar(lo_f, type=t), pa.scalar(hi_f, type=t)
    if kind == StatsKind.DECIMAL:
        lo_d = decimal.Decimal(lo).scaleb(-t.scale)
        hi_d = decimal.Decimal(hi).scaleb(-t.scale)
        return pa.scalar(lo_d, type=t), pa.scalar(hi_d, type=t)
    if kind == StatsKind.BYTES:
        # stored bounds never end in NUL (see compute_stats), so the padding strips exactly
        lo_b = _unpack_bytes(lo).rstrip(b"\0")
        hi_b = _unpack_bytes(hi).rstrip(b"\0")
        if pat.is_string(t) or pat.is_large_string(t) or pat.is_string_view(t):
            try:
                return pa.scalar(lo_b.decode(), type=t), pa.scalar(hi_b.decode(), type=t)
            except UnicodeDecodeError:
                return None
        if pat.is_fixed_size_binary(t):
            return None  # bounds are shorter than the fixed width: compare as binary only
        return pa.scalar(lo_b, type=t), pa.scalar(hi_b, type=t)
    return None
