"""The EncodingHeader: the 24 bytes in front of every lightweight-encoded payload, and
what the lightweight encodings share (bit widths, packed sections, zstd samples).

Every encoded page (the integer codec's, BYTE_SPLIT, DICTIONARY, FLOAT_DECIMAL...) starts
with one EncodingHeader (docs/FORMAT.md): :func:`encoding_header` builds it,
:func:`read_header` reads and validates it. The integer codec is
:mod:`fermion.format.encoding.int_codec`, the float transform
:mod:`fermion.format.encoding.byte_split`, the page dictionaries
:mod:`fermion.format.encoding.page_dictionary`.

Example:
    >>> head = encoding_header(
    ...     Encoding.FOR, count=3, out_width=8, base=5, width=2, flags=EncodingFlag.BITS
    ... )
    >>> h = read_header(head)
    >>> len(head) == HEADER_SIZE, h["count"], h["base"], packed_bits(h)
    (True, 3, 5, 2)
"""

from __future__ import annotations

import threading

import numpy as np
import zstandard

from fermion.errors import InvalidFileError
from fermion.format.encoding import bitpack
from fermion.format.metadata.structs import ENCODING_HEADER_DTYPE, Encoding, EncodingFlag

__all__ = [
    "HEADER_SIZE",
    "Header",
    "bits_for",
    "encoding_header",
    "has_checkpoints",
    "pack_ints",
    "packed_bits",
    "read_header",
    "sample_size",
    "unpack_ints",
]

HEADER_SIZE = ENCODING_HEADER_DTYPE.itemsize
_HEADER_FIELDS: tuple[str, ...] = ENCODING_HEADER_DTYPE.names or ()
#: An EncodingHeader read by :func:`read_header`: field name -> value.
Header = dict[str, int]
_local = threading.local()
_BYTE_WIDTHS = (0, 1, 2, 4, 8)  # format 1.1: widths in bytes
_BITS = int(EncodingFlag.BITS)  # plain ints: IntFlag operators cost microseconds each
_CHECKPOINTS = int(EncodingFlag.CHECKPOINTS)


def bits_for(span: int) -> int:
    """Bits needed for unsigned values in ``[0, span]``; 128 when they do not fit 64 bits.

    Example:
        >>> bits_for(0), bits_for(255), bits_for(1 << 64)
        (1, 8, 128)
    """
    return bitpack.bits_for(span) if span < (1 << 64) else 128


def encoding_header(
    enc: Encoding,
    *,
    count: int,
    out_width: int,
    base: int = 0,
    aux: int = 0,
    width: int = 0,
    aux_width: int = 0,
    flags: int = 0,
) -> bytes:
    """The 24 bytes of an EncodingHeader with the given fields (others 0)."""
    fields = (base, aux, count, width, aux_width, out_width, int(flags))
    return np.array([fields], dtype=ENCODING_HEADER_DTYPE).tobytes()  # one call, not seven


def read_header(payload: memoryview | bytes | np.ndarray, where: str = "page") -> Header:
    """The EncodingHeader at the start of an encoded payload (validated sizes), as a dict
    of Python ints (reading fields of a numpy record costs about a microsecond each, and
    a page's decoder reads a dozen)."""
    if len(payload) < HEADER_SIZE:
        raise InvalidFileError(f"{where}: encoded payload shorter than its header")
    record = np.frombuffer(payload, dtype=ENCODING_HEADER_DTYPE, count=1).item()
    h = dict(zip(_HEADER_FIELDS, record, strict=True))
    if h["flags"] & _BITS:
        ok = all(w == 0 or bitpack.valid_bits(w) for w in (h["width"], h["aux_width"]))
    else:
        ok = h["width"] in _BYTE_WIDTHS and h["aux_width"] in _BYTE_WIDTHS
    if h["out_width"] not in (1, 2, 4, 8, 16, 32) or not ok:
        raise InvalidFileError(f"{where}: invalid encoding widths")
    return h


def packed_bits(h: Header, field: str = "width") -> int:
    """Bits per packed integer of header field ``width`` or ``aux_width``."""
    w = int(h[field])
    return w if int(h["flags"]) & _BITS else 8 * w


def has_checkpoints(payload: bytes | memoryview) -> bool:
    """Whether an encoded payload's header sets CHECKPOINTS."""
    return len(payload) >= HEADER_SIZE and bool(
        payload[HEADER_SIZE - 1] & _CHECKPOINTS  # EncodingHeader.flags
    )


def unpack_ints(
    buf: memoryview | bytes, offset: int, bits: int, count: int, where: str
) -> np.ndarray:
    """``count`` integers packed at ``bits`` from byte ``offset``, as a fresh int64 array
    (an invalid width or count raises :class:`InvalidFileError`).

    Example:
        >>> unpack_ints(pack_ints(np.array([3, 1, 2]), 2), 0, 2, 3, "p").tolist()
        [3, 1, 2]
    """
    if count < 0 or bits == 0:
        raise InvalidFileError(f"{where}: packed integers with an invalid width or count")
    return bitpack.unpack(buf, offset, bits, count, where).view(np.int64)  # fresh array


def pack_ints(values: np.ndarray, bits: int) -> bytes:
    """Non-negative integers bit-packed at ``bits`` (see :func:`unpack_ints`); int64 and
    uint64 values are packed in place (no copy: the packing only reads them)."""
    if values.dtype in (np.int64, np.uint64):
        return bitpack.pack(values.view(np.uint64), bits)
    return bitpack.pack(values.astype(np.uint64), bits)


def sample_size(data: bytes | bytearray | memoryview) -> int:
    """zstd (level 1) size of a sample; compressor objects are per thread (not thread-safe)."""
    comp = getattr(_local, "sampler", None)
    if comp is None:
        comp = _local.sampler = zstandard.ZstdCompressor(level=1)
    return len(comp.compress(data))
