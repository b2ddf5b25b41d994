"""The encoding registry: one :class:`EncodingKind` per PageHeader.encoding id.

As the compression codecs sit in :data:`~fermion.format.encoding.pages.CODECS`, every
encoding sits here, in :data:`ENCODINGS`, with what the rest of the format asks of it:

- **encode**: the integer codec's kernels (:class:`~fermion.format.encoding.encodings.IntCodec`:
  CONSTANT, FOR, DELTA, RLE, INT_DICTIONARY), which floats (FLOAT_DECIMAL) and value
  lengths nest; the writer's per-page questions: the features a page needs
  (:meth:`EncodingKind.features`), whether zstd must save a quarter of it (bit-packed
  values that point reads gather), which transform it undoes when zstd does not pay;
- **decode**: a decompressed payload to plain bytes or to its decoded form
  (:func:`decode_payload`), optionally straight into a buffer;
- **point values**: the values at some rows, reading only the bytes that hold them
  (:attr:`EncodingKind.fixed_at`, :attr:`EncodingKind.ints_at`), over any
  :class:`PayloadReader`;
- **size**: the payload bytes an integer-codec header announces;
- **native hook**: the compiled kernels (:mod:`fermion.format.native`) its fast paths use.

Modules do not compare encoding ids: they look the id up here and ask its entry
(``tests/test_architecture.py`` holds them to it).

Example:
    >>> import numpy as np
    >>> from fermion.format.encoding import encodings
    >>> enc, payload = encodings.encode_ints(np.arange(1000, 2000), out_width=8)
    >>> kind = ENCODINGS[enc]
    >>> kind.encoding.name, kind.plain, kind.ints is not None
    ('DELTA', False, True)
    >>> plain = decode_payload(enc, payload, 1000, 8000, "p")
    >>> np.frombuffer(plain, dtype="<i8")[:3].tolist()
    [1000, 1001, 1002]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa

from fermion.errors import InvalidFileError
from fermion.format import native
from fermion.format.encoding import bitpack, decimal_floats, encodings
from fermion.format.encoding.encodings import INT_CODECS, Header, IntCodec
from fermion.format.encoding.offsets import lengths_into
from fermion.format.encoding.stripe_dictionary import (
    IndexPage,
    StripeDictionaryPage,
    parse_dictionary,
    parse_indices,
)
from fermion.format.metadata.structs import Encoding, EncodingFlag, RequiredFeature

__all__ = [
    "DERIVED",
    "ENCODINGS",
    "Decoded",
    "DictionaryPage",
    "EncodingKind",
    "PayloadReader",
    "check_plain_size",
    "decode_payload",
    "gather_ranges",
    "ints_at",
    "kind_of",
]

_H = encodings.HEADER_SIZE
_LENGTHS = int(EncodingFlag.LENGTHS)  # plain ints: IntFlag operators cost microseconds
_SIGNED = int(EncodingFlag.SIGNED)


class DictionaryPage:
    """A decoded DICTIONARY page of a BINARY node: its indices and distinct values, and,
    materialised on first use, the values' offsets (int64, from 0) and bytes."""

    def __init__(self, indices: np.ndarray, dictionary: pa.Array) -> None:
        self.indices = indices  # int64, each below len(dictionary)
        self.dictionary = dictionary  # large_binary
        self._plain: tuple[np.ndarray, pa.Buffer] | None = None

    def _materialized(self) -> tuple[np.ndarray, pa.Buffer]:
        if self._plain is None:
            self._plain = encodings.materialize_dictionary(self.indices, self.dictionary)
        return self._plain

    @property
    def offsets(self) -> np.ndarray:
        return self._materialized()[0]

    @property
    def data(self) -> pa.Buffer:
        return self._materialized()[1]


class _Derived:
    """Marker for a decoded DERIVED offsets page (its offsets live in the DATA page)."""

    def __repr__(self) -> str:
        return "DERIVED"


DERIVED = _Derived()
Decoded = bytes | memoryview | DictionaryPage | _Derived | StripeDictionaryPage | IndexPage


class PayloadReader(Protocol):
    """A page payload read in pieces (``fermion.format.read.points.PagePayload``): the
    bytes asked for with :meth:`need` / :meth:`need_range` are then valid in ``buf``."""

    buf: np.ndarray
    size: int  # decoded payload bytes
    values: int  # values in the page
    where: str

    def header(self, at: int = 0) -> Header: ...

    def need(self, begins: np.ndarray, ends: np.ndarray) -> None: ...

    def need_range(self, begin: int, end: int) -> None: ...

    def packed(self, offset: int, bits: int, rows: np.ndarray) -> np.ndarray: ...

    def prefix_sums(self, h: Header, rows: np.ndarray, at: int = 0) -> np.ndarray: ...


# (payload, values, expected plain size, where, into) -> decoded form, None: into ``into``
DecodeHook = Callable[
    [bytes | memoryview, int, int | None, str, np.ndarray | None], "Decoded | None"
]
# (reader, rows, values, width) -> plain bytes of the rows; None: no random access
FixedAt = Callable[[PayloadReader, np.ndarray, int, int], bytes | None]
# (reader, payload byte where the integer payload starts, its header, rows) -> int64 values
IntsAt = Callable[[PayloadReader, int, Header, np.ndarray], np.ndarray]
# (payload, byte buffer of the plain size, out width, signed, where) -> written or not
IntoHook = Callable[[bytes | memoryview, np.ndarray, int, bool, str], bool]


@dataclass(frozen=True)
class EncodingKind:
    """What the format asks of one encoding (one entry of :data:`ENCODINGS`).

    Example:
        >>> ENCODINGS[Encoding.FOR].ints.bounds is not None, ENCODINGS[Encoding.RLE].ints_at
        (True, None)
    """

    encoding: Encoding
    decode: DecodeHook
    ints: IntCodec | None = None  # a member of the integer codec (value lengths may use it)
    ints_at: IntsAt | None = None  # integer values at rows without decoding the page
    ints_into: IntoHook | None = None  # integer values straight into a plain buffer
    fixed_at: FixedAt | None = None  # fixed-width values at rows (other than ints_at's)
    sections: Callable[[bytes | memoryview], tuple[int, ...]] | None = None  # byte kinds
    undo: Callable[[bytes | memoryview], memoryview | None] | None = None  # zstd transform
    feature: RequiredFeature = RequiredFeature(0)  # needed beyond ENCODINGS, BIT_PACKING
    plain: bool = False  # the payload is the plain values
    derived: bool = False  # no payload: the offsets come from the DATA page
    bit_packed: bool = True  # values point reads gather: zstd only where it saves a quarter
    decimal: bool = False  # floats as scaled integers
    page_dictionary: bool = False  # BINARY DATA: indices + the page's distinct values
    stripe_dictionary: bool = False  # BINARY DATA page 0: the stripe's distinct values
    stripe_indices: bool = False  # BINARY DATA: indices into the stripe dictionary
    native: tuple[str, ...] = ()  # compiled kernels its fast paths use

    def features(self, payload: bytes | memoryview) -> RequiredFeature:
        """The features a file needs to hold a page of this encoding with ``payload``.

        Example:
            >>> ENCODINGS[Encoding.PLAIN].features(b"abc")
            <RequiredFeature: 0>
        """
        if self.plain:
            return RequiredFeature(0)
        # every encoded page of a 1.2 writer is bit-packed
        need = RequiredFeature.ENCODINGS | RequiredFeature.BIT_PACKING | self.feature
        if not self.derived and encodings.has_checkpoints(payload):
            need |= RequiredFeature.CHECKPOINTS
        if self.decimal and decimal_floats.uses_multiply(payload):
            need |= RequiredFeature.DECIMAL_MULTIPLY
        return need

    def accelerated(self) -> bool:
        """Whether the compiled kernels this encoding's fast paths use are loaded.

        Example:
            >>> ENCODINGS[Encoding.PLAIN].accelerated()
            True
        """
        kernels = native.KERNELS
        return not self.native or (
            kernels is not None and all(hasattr(kernels, name) for name in self.native)
        )


def kind_of(encoding: int) -> EncodingKind | None:
    """The registry entry of a raw PageHeader.encoding value (None: no such encoding).

    Example:
        >>> kind_of(7).derived, kind_of(99)
        (True, None)
    """
    return _BY_ID.get(encoding)


def decode_payload(
    encoding: Encoding,
    payload: bytes | memoryview,
    values: int,
    expected_size: int | None,
    where: str,
    into: np.ndarray | None = None,
) -> Decoded | None:
    """Decode a decompressed payload; plain results are checked against ``expected_size``
    (encoded payloads before they are decoded, from their header).

    With ``into`` (a byte buffer of exactly ``expected_size``), integer-encoded and
    FLOAT_DECIMAL values are written there directly and None is returned; other payloads
    are returned as usual.

    Example:
        >>> bytes(decode_payload(Encoding.PLAIN, b"abcd", 4, 4, "p"))
        b'abcd'
    """
    return ENCODINGS[encoding].decode(payload, values, expected_size, where, into)


def gather_ranges(buf: np.ndarray, begins: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes ``buf[begins[i] : begins[i] + lengths[i]]``, concatenated.

    Example:
        >>> gather_ranges(np.arange(10, dtype=np.uint8), np.array([1, 6]), np.array([2, 3]))
        array([1, 2, 6, 7, 8], dtype=uint8)
    """
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.uint8)
    firsts = np.cumsum(lengths) - lengths
    idx = np.arange(total, dtype=np.int64) + np.repeat(begins - firsts, lengths)
    return buf[idx]


def check_plain_size(p: PayloadReader, h: Header, width: int) -> None:
    """As the full decoder: the header must decode to the page's values at ``width`` bytes."""
    lengths = bool(int(h["flags"]) & _LENGTHS)
    plain = (p.values + 1 if lengths else p.values) * int(h["out_width"])
    if plain != p.values * width:
        raise InvalidFileError(f"{p.where}: encoded values decode to {plain} bytes")


def ints_at(
    p: PayloadReader, at: int, h: Header, enc: Encoding, rows: np.ndarray
) -> np.ndarray | None:
    """The int64 values at ``rows`` of the integer-codec payload (header ``h``, encoding
    ``enc``) that fills page payload bytes ``[at, size)``; None: no random access (RLE)."""
    if p.size - at != encodings.int_payload_size(enc, h):
        raise InvalidFileError(f"{p.where}: {enc.name} payload size does not match")
    hook = ENCODINGS[enc].ints_at
    return None if hook is None else hook(p, at, h, rows)


# -- decode hooks ------------------------------------------------------------------------


def _decode_plain(
    payload: bytes | memoryview,
    values: int,
    expected_size: int | None,
    where: str,
    into: np.ndarray | None,
) -> Decoded | None:
    if expected_size is not None and len(payload) != expected_size:
        raise InvalidFileError(
            f"{where}: page decodes to {len(payload)} bytes, expected {expected_size}"
        )
    return payload


def _decode_derived(
    payload: bytes | memoryview,
    values: int,
    expected_size: int | None,
    where: str,
    into: np.ndarray | None,
) -> Decoded | None:
    if len(payload):
        raise InvalidFileError(f"{where}: a DERIVED page carries a payload")
    return DERIVED


def _header(payload: bytes | memoryview, values: int, where: str) -> Header:
    h = encodings.read_header(payload, where)
    if int(h["count"]) != values:
        raise InvalidFileError(f"{where}: encoded page holds {int(h['count'])} values")
    return h


def _parsed(parse: Callable[[bytes | memoryview, int, str], Decoded]) -> DecodeHook:
    """The decode hook of a page parsed whole once its header's count is checked
    (``parse(payload, values, where)``: DICTIONARY and the stripe dictionary's pages)."""

    def decode(
        payload: bytes | memoryview,
        values: int,
        expected_size: int | None,
        where: str,
        into: np.ndarray | None,
    ) -> Decoded | None:
        _header(payload, values, where)
        return parse(payload, values, where)

    return decode


def _page_dictionary(payload: bytes | memoryview, values: int, where: str) -> Decoded:
    return DictionaryPage(*encodings.dictionary_parts(payload, where))


def _stripe_dictionary(payload: bytes | memoryview, values: int, where: str) -> Decoded:
    return parse_dictionary(payload, where)


def _plain_size(h: Header, values: int, expected_size: int | None, where: str) -> int:
    """The plain bytes an encoded payload's header announces, checked."""
    lengths = bool(int(h["flags"]) & _LENGTHS)
    plain_size = (values + 1 if lengths else values) * int(h["out_width"])
    if expected_size is not None and plain_size != expected_size:
        raise InvalidFileError(f"{where}: encoded values decode to {plain_size} bytes")
    return plain_size


def _to_plain(
    decode_into: Callable[[bytes | memoryview, int, str, np.ndarray | None], memoryview | None],
) -> DecodeHook:
    """The decode hook of floats decoded to their plain bytes (BYTE_SPLIT, FLOAT_DECIMAL):
    ``decode_into(payload, values, where, target)`` writes them into ``into`` when it has
    exactly their size (None returned), else into a new buffer."""

    def decode(
        payload: bytes | memoryview,
        values: int,
        expected_size: int | None,
        where: str,
        into: np.ndarray | None,
    ) -> Decoded | None:
        plain_size = _plain_size(_header(payload, values, where), values, expected_size, where)
        target = into if into is not None and len(into) == plain_size else None
        return decode_into(payload, values, where, target)

    return decode


def _byte_split_into(
    payload: bytes | memoryview, values: int, where: str, target: np.ndarray | None
) -> memoryview | None:
    return encodings.decode_byte_split(payload, where, target)


def _int_decoder(encoding: Encoding, into_hook: IntoHook | None) -> DecodeHook:
    """The decode hook of an integer-codec encoding (``into_hook``: its direct path)."""

    def decode(
        payload: bytes | memoryview,
        values: int,
        expected_size: int | None,
        where: str,
        into: np.ndarray | None,
    ) -> Decoded | None:
        h = _header(payload, values, where)
        plain_size = _plain_size(h, values, expected_size, where)
        out_width = int(h["out_width"])
        lengths = bool(int(h["flags"]) & _LENGTHS)
        signed = bool(int(h["flags"]) & _SIGNED)
        if into is not None and len(into) == plain_size and not lengths:
            if into_hook is None or not into_hook(payload, into, out_width, signed, where):
                encodings.ints_to_plain(
                    encodings.decode_ints(payload, encoding, where), out_width, signed, out=into
                )
            return None
        ints = encodings.decode_ints(payload, encoding, where)
        if lengths:
            if out_width not in (4, 8):
                raise InvalidFileError(
                    f"{where}: value lengths decoding to {out_width}-byte offsets"
                )
            offsets = np.zeros(values + 1, dtype=f"<i{out_width}")
            lengths_into(ints, offsets[1:], where, encodings.int_bounds(encoding, h))
            return offsets.data.cast("B")
        return encodings.ints_to_plain(ints, out_width, signed).data.cast("B")

    return decode


def _into(
    decode_into: Callable[[bytes | memoryview, np.ndarray, str], None],
    widths: tuple[int, ...],
    kind: str,
) -> IntoHook:
    """The direct path of an integer-codec encoding: ``decode_into(payload, slots, where)``
    writes the values into the plain buffer viewed as integers of the out width, when it is
    one of ``widths`` (else the hook returns False and the caller decodes to int64 first).
    ``kind``: the view's sign, ``"u"`` or ``"i"``, or ``""`` for the values' own."""

    def hook(
        payload: bytes | memoryview, into: np.ndarray, out_width: int, signed: bool, where: str
    ) -> bool:
        if out_width not in widths:
            return False
        sign = kind or ("i" if signed else "u")
        decode_into(payload, into.view(f"<{sign}{out_width}"), where)
        return True

    return hook


_INT_WIDTHS = (1, 2, 4, 8)
# FOR: packed + base, wrapping, with no int64 between; DELTA: summed in place in int64
_for_into = _into(encodings.decode_for_into, _INT_WIDTHS, "u")
_delta_into = _into(encodings.decode_delta_into, (8,), "i")
_int_dictionary_into = _into(encodings.decode_int_dictionary_into, _INT_WIDTHS, "")


# -- point hooks -------------------------------------------------------------------------


def _constant_at(p: PayloadReader, at: int, h: Header, rows: np.ndarray) -> np.ndarray:
    return np.full(len(rows), int(h["base"]), dtype=np.int64)


def _for_at(p: PayloadReader, at: int, h: Header, rows: np.ndarray) -> np.ndarray:
    bits = encodings.packed_bits(h)
    return p.packed(at + _H, bits, rows).astype(np.int64) + int(h["base"])


def _int_dictionary_at(p: PayloadReader, at: int, h: Header, rows: np.ndarray) -> np.ndarray:
    bits = encodings.packed_bits(h)
    entries = int(h["aux"])
    indices = p.packed(at + _H, bits, rows).astype(np.int64)
    start = at + _H + bitpack.packed_size(p.values, bits)
    p.need_range(start, p.size)
    if entries <= 0 or (
        len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= entries)
    ):  # 64-bit indices above 2**63 - 1 are negative here
        raise InvalidFileError(f"{p.where}: dictionary index out of range")
    # only the entries the rows use, not the whole dictionary (the size of the
    # section holding all of them was checked above, with the payload's)
    aux_bits = encodings.packed_bits(h, "aux_width")
    used = bitpack.gather(p.buf, start, aux_bits, indices, p.where)
    return used.view(np.int64) + int(h["base"])


def _delta_at(p: PayloadReader, at: int, h: Header, rows: np.ndarray) -> np.ndarray:
    return p.prefix_sums(h, rows, at)


def _plain_fixed_at(p: PayloadReader, rows: np.ndarray, values: int, width: int) -> bytes:
    if p.size != values * width:
        raise InvalidFileError(f"{p.where}: page decodes to {p.size} bytes")
    begins = rows * width
    p.need(begins, begins + width)
    return gather_ranges(p.buf, begins, np.full(len(rows), width)).tobytes()


def _byte_split_fixed_at(p: PayloadReader, rows: np.ndarray, values: int, width: int) -> bytes:
    h = p.header()
    check_plain_size(p, h, width)
    if int(h["out_width"]) != width or p.size != _H + values * width:
        raise InvalidFileError(f"{p.where}: BYTE_SPLIT payload has the wrong size")
    planes = _H + np.arange(width, dtype=np.int64) * values
    at = (planes[None, :] + rows[:, None]).ravel()  # value-major: plane bytes in order
    p.need(at, at + 1)
    return p.buf[at].tobytes()


def _float_decimal_fixed_at(
    p: PayloadReader, rows: np.ndarray, values: int, width: int
) -> bytes | None:
    """Plain bytes of ``rows`` from a FLOAT_DECIMAL page: only their integers k are read
    (gathered, or DELTA prefix sums), then the exceptions among the rows are patched in;
    None: the nested encoding has no random access (RLE)."""
    # read_layout validates the page's EncodingHeader (widths, count) as p.header() does
    p.need_range(0, min(decimal_floats.PREFIX_SIZE, p.size))
    prefix = p.buf[: decimal_floats.PREFIX_SIZE]
    layout = decimal_floats.read_layout(prefix, p.size, p.values, p.where)
    if layout.width != width:
        raise InvalidFileError(f"{p.where}: encoded values decode to {layout.width}-byte values")
    nested = p.header(layout.nested_at)
    decimal_floats.check_nested_header(nested, p.values, p.where)
    k = ints_at(p, layout.nested_at, nested, layout.int_encoding, rows)
    if k is None:
        return None
    decimal_floats.check_ints(k, p.where)
    out = decimal_floats.decimal_kernel(k, layout.exponent, width, layout.kernel)
    if layout.exceptions and len(rows):
        p.need_range(decimal_floats.PREFIX_SIZE, layout.nested_at)
        positions = decimal_floats.exception_positions(p.buf, layout, p.values, p.where)
        at = np.minimum(np.searchsorted(positions, rows), len(positions) - 1)
        hit = positions[at] == rows
        patch = decimal_floats.exception_values(p.buf, layout)[at[hit]]
        out.view(patch.dtype)[hit] = patch
    return out.tobytes()


def _byte_split_sections(payload: bytes | memoryview) -> tuple[int, ...]:
    """Offsets in a BYTE_SPLIT payload where its bytes change kind: the start of every
    plane after the first.

    Example:
        >>> planes = encodings.encode_byte_split(bytes(800), 8, sampled=False)
        >>> _byte_split_sections(planes)[:3]
        (124, 224, 324)
    """
    if len(payload) < _H:
        return ()
    h = encodings.read_header(payload)
    n, width = int(h["count"]), int(h["out_width"])
    return tuple(_H + j * n for j in range(1, width))


def _undo_byte_split(payload: bytes | memoryview) -> memoryview | None:
    return encodings.decode_byte_split(payload)  # no target given: a new buffer


def _int_kind(
    encoding: Encoding,
    at: IntsAt | None,
    into: IntoHook | None = None,
    native_kernels: tuple[str, ...] = ("unpack_bits", "gather_bits"),
) -> EncodingKind:
    return EncodingKind(
        encoding,
        decode=_int_decoder(encoding, into),
        ints=INT_CODECS[encoding],
        ints_at=at,
        ints_into=into,
        native=native_kernels,
    )


ENCODINGS: dict[Encoding, EncodingKind] = {
    kind.encoding: kind
    for kind in (
        EncodingKind(
            Encoding.PLAIN,
            decode=_decode_plain,
            fixed_at=_plain_fixed_at,
            plain=True,
            bit_packed=False,
        ),
        _int_kind(Encoding.CONSTANT, _constant_at, native_kernels=()),
        _int_kind(Encoding.FOR, _for_at, _for_into),
        _int_kind(
            Encoding.DELTA,
            _delta_at,
            _delta_into,
            native_kernels=("unpack_bits", "gather_bits", "segment_sums"),
        ),
        _int_kind(Encoding.RLE, None),
        EncodingKind(
            Encoding.DICTIONARY,
            decode=_parsed(_page_dictionary),
            page_dictionary=True,
            native=("unpack_bits", "take_binary"),
        ),
        EncodingKind(
            Encoding.BYTE_SPLIT,
            decode=_to_plain(_byte_split_into),
            fixed_at=_byte_split_fixed_at,
            sections=_byte_split_sections,
            undo=_undo_byte_split,
            bit_packed=False,
            native=("byte_planes",),
        ),
        EncodingKind(Encoding.DERIVED, decode=_decode_derived, derived=True, bit_packed=False),
        _int_kind(Encoding.INT_DICTIONARY, _int_dictionary_at, _int_dictionary_into),
        EncodingKind(
            Encoding.FLOAT_DECIMAL,
            decode=_to_plain(decimal_floats.decode_float_decimal),
            fixed_at=_float_decimal_fixed_at,
            feature=RequiredFeature.DECIMAL_FLOATS,
            decimal=True,
            native=("decimal_trials", "unpack_bits", "gather_bits"),
        ),
        EncodingKind(
            Encoding.STRIPE_DICTIONARY,
            decode=_parsed(_stripe_dictionary),
            feature=RequiredFeature.STRIPE_DICTIONARY,
            stripe_dictionary=True,
            bit_packed=False,
        ),
        EncodingKind(
            Encoding.DICTIONARY_INDICES,
            decode=_parsed(parse_indices),
            stripe_indices=True,
            native=("unpack_bits", "gather_bits"),
        ),
    )
}
_BY_ID: dict[int, EncodingKind] = {int(e): kind for e, kind in ENCODINGS.items()}
