"""Stripe dictionaries (format 1.4): one dictionary of distinct values per string chunk.

A flat BINARY column (string, binary, their large and view variants) of medium
cardinality repeats most of its distinct values on every page when each page carries its
own DICTIONARY. A *stripe dictionary* stores them once per stripe instead, as the first
page of the column's DATA chunk; every other DATA page is bit-packed indices into it
(docs/FORMAT.md §5.4):

- DATA page 0 (encoding STRIPE_DICTIONARY, 0 rows): the distinct values, their lengths
  packed at a few bits (frame of reference) followed by their bytes;
- DATA pages 1.. (encoding DICTIONARY_INDICES): the page's indices, bit-packed;
- OFFSETS pages: DERIVED, one per DATA page (the first of 0 values), so OFFSETS and DATA
  stay cut at the same boundaries.

This module holds the pure kernels: choosing and building a stripe's dictionary (writer)
and parsing, validating and looking up both page kinds (reader). Nothing here knows files.

Example:
    >>> import pyarrow as pa
    >>> values = pa.array([f"city {i % 3000}" for i in range(20_000)])
    >>> d = build_dictionary(values)
    >>> d.entries, d.index_bits
    (3000, 12)
    >>> page = parse_dictionary(d.dictionary_payload(), "p")
    >>> idx = parse_indices(d.indices_payload(0, 4), 4, "p")
    >>> page.typed(pa.string()).take(pa.array(idx.indices)).to_pylist()
    ['city 0', 'city 1', 'city 2', 'city 3']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from fermion.errors import InvalidFileError
from fermion.format.encoding import bitpack
from fermion.format.encoding.encodings import (
    HEADER_SIZE,
    Header,
    encoding_header,
    packed_bits,
    read_header,
)
from fermion.format.metadata.structs import Encoding, EncodingFlag

__all__ = [
    "MAX_ENTRIES",
    "MIN_VALUES",
    "IndexPage",
    "StripeDictionary",
    "StripeDictionaryPage",
    "build_dictionary",
    "check_entries",
    "check_header",
    "indices_layout",
    "is_dictionary_chunk",
    "parse_dictionary",
    "parse_indices",
]

MIN_VALUES = 1024  # chunks with fewer non-null values keep page-level encodings
MAX_ENTRIES = (1 << 31) - 1  # indices are int32 on read (dictionary<int32, ...>)
_SAMPLE = 16_384  # values the writer looks at before dictionary-encoding a whole chunk
_FEW = 64  # a sample with at most 1 distinct value in 64: page dictionaries do as well
_MAX_FRACTION = 2  # a stripe dictionary holds at most 1 distinct value in 2
_BITS = int(EncodingFlag.BITS)


def is_dictionary_chunk(row_counts: np.ndarray) -> bool:
    """Whether a BINARY DATA chunk with these PageMeta row counts starts with a stripe
    dictionary: it has at least two pages and its first page holds no rows (§5.4)."""
    return len(row_counts) >= 2 and int(row_counts[0]) == 0


# -- writer ------------------------------------------------------------------------------


@dataclass
class StripeDictionary:
    """A chunk's distinct non-null values (sorted by their bytes) and each row's index
    (null rows: 0)."""

    values: pa.Array  # large_binary, ascending, unique
    indices: np.ndarray  # int64, one per row, each below len(values)

    @property
    def entries(self) -> int:
        return len(self.values)

    @property
    def index_bits(self) -> int:
        return bitpack.bits_for(max(self.entries - 1, 0))

    def dictionary_payload(self) -> bytes:
        """The STRIPE_DICTIONARY payload: EncodingHeader (base = shortest length, aux =
        entries, width = bits of ``length - base``), the packed lengths, the bytes."""
        offsets = np.frombuffer(self.values.buffers()[1], dtype="<i8")[
            self.values.offset : self.values.offset + self.entries + 1
        ]
        lengths = np.diff(offsets)
        base = int(lengths.min())
        bits = bitpack.bits_for(int(lengths.max()) - base)
        head = encoding_header(
            Encoding.STRIPE_DICTIONARY,
            count=0,
            out_width=8,
            base=base,
            aux=self.entries,
            width=bits,
            flags=_BITS,
        )
        data = self.values.buffers()[2]
        raw = b"" if data is None else data.to_pybytes()[int(offsets[0]) : int(offsets[-1])]
        packed = bitpack.pack((lengths - base).astype(np.uint64), bits)
        return b"".join([head, packed, raw])

    def indices_payload(self, a: int, b: int) -> bytes:
        """The DICTIONARY_INDICES payload of rows ``[a, b)``."""
        bits = self.index_bits
        head = encoding_header(
            Encoding.DICTIONARY_INDICES,
            count=b - a,
            out_width=8,
            aux=self.entries,
            width=bits,
            flags=_BITS,
        )
        return head + bitpack.pack(self.indices[a:b].astype(np.uint64), bits)


def _few_or_unique(values: pa.Array) -> bool:
    """Whether a sample (the first values) says the chunk cannot gain from a stripe
    dictionary: few distinct values (page-level DICTIONARY pages are as small), or an
    estimated distinct count above half the chunk's values (mostly unique values). The
    estimate is Chao1 (bias-corrected), from the sample's distinct values ``d`` and its
    values seen once (``f1``) and twice (``f2``): ``d + f1 * (f1 - 1) / (2 * (f2 + 1))``;
    it is ``d`` itself when the sample is the whole chunk."""
    sample = values.slice(0, _SAMPLE)
    counts = pc.value_counts(sample.drop_null()).field("counts").to_numpy()
    m, d = int(counts.sum()), len(counts)
    valid = len(values) - values.null_count
    if d * _FEW <= m:
        return True
    estimate = float(d)
    if m < valid:
        f1, f2 = int(np.count_nonzero(counts == 1)), int(np.count_nonzero(counts == 2))
        estimate += f1 * (f1 - 1) / (2 * (f2 + 1))
    return estimate * _MAX_FRACTION > valid


def build_dictionary(values: pa.Array) -> StripeDictionary | None:
    """The stripe dictionary of a chunk's values (binary or string, offsets-based), or None
    when a sample says it cannot pay or the chunk has more than one distinct value in
    two. The distinct values are sorted by their bytes, so that a page's bounds are the
    values of its smallest and largest index, and the dictionary compresses better."""
    valid = len(values) - values.null_count
    if valid < MIN_VALUES or _few_or_unique(values):
        return None
    encoded = pc.dictionary_encode(values)
    distinct = encoded.dictionary
    if len(distinct) * _MAX_FRACTION > valid or len(distinct) > MAX_ENTRIES:
        return None
    order = pc.sort_indices(distinct).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    indices = rank[codes]  # null rows (-1) get the last rank here, then 0
    if values.null_count:
        indices[codes < 0] = 0
    sorted_values = distinct.take(pa.array(order)).cast(pa.large_binary())
    return StripeDictionary(sorted_values, indices)


# -- reader ------------------------------------------------------------------------------


class StripeDictionaryPage:
    """A decoded STRIPE_DICTIONARY page: ``entries`` values as int64 offsets (from 0) and
    bytes; :meth:`typed` builds (once per type) the Arrow array of the column's type."""

    def __init__(self, offsets: np.ndarray, data: memoryview | bytes) -> None:
        self.offsets = offsets
        self.data = data
        self.entries = len(offsets) - 1
        self._typed: dict[pa.DataType, pa.Array] = {}

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def typed(self, t: pa.DataType, where: str = "stripe dictionary") -> pa.Array:
        """The values as an array of ``t`` (string, binary or their large variants)."""
        got = self._typed.get(t)
        if got is not None:
            return got
        offsets = self.offsets
        if pat.is_string(t) or pat.is_binary(t):
            if int(offsets[-1]) > np.iinfo(np.int32).max:
                raise InvalidFileError(f"{where}: dictionary exceeds 32-bit offsets")
            offsets = offsets.astype("<i4")
        arr = pa.Array.from_buffers(
            t, self.entries, [None, pa.py_buffer(offsets), pa.py_buffer(self.data)]
        )
        self._typed[t] = arr
        return arr


class IndexPage:
    """A decoded DICTIONARY_INDICES page: int64 indices, each below ``entries`` (the
    dictionary size its header names, checked against the stripe's dictionary)."""

    def __init__(self, indices: np.ndarray, entries: int) -> None:
        self.indices = indices
        self.entries = entries


def _header(payload: memoryview | bytes, where: str) -> Header:
    return check_header(read_header(payload, where), where)


def check_header(h: Header, where: str) -> Header:
    """Flags and widths both stripe dictionary encodings must have (BITS, 8, 0, not 0)."""
    if int(h["flags"]) != _BITS or int(h["out_width"]) != 8 or int(h["aux_width"]) != 0:
        raise InvalidFileError(f"{where}: invalid stripe dictionary header flags or widths")
    if int(h["width"]) == 0:
        raise InvalidFileError(f"{where}: stripe dictionary integers of width 0")
    return h


def parse_dictionary(payload: memoryview | bytes, where: str) -> StripeDictionaryPage:
    """Validate a STRIPE_DICTIONARY payload and return its values (nothing is copied)."""
    h = _header(payload, where)
    entries, base, bits = int(h["aux"]), int(h["base"]), packed_bits(h)
    if int(h["count"]) != 0:
        raise InvalidFileError(f"{where}: a stripe dictionary page holds no rows")
    if not 1 <= entries <= MAX_ENTRIES:
        raise InvalidFileError(f"{where}: stripe dictionary of {entries} values")
    start = HEADER_SIZE + bitpack.packed_size(entries, bits)
    body = len(payload) - start
    if body < 0:
        raise InvalidFileError(f"{where}: stripe dictionary lengths run past the payload")
    if base < 0 or base > body:
        raise InvalidFileError(f"{where}: stripe dictionary lengths are negative or too long")
    packed = bitpack.unpack(payload, HEADER_SIZE, bits, entries, where)
    # each length at most the bytes there are: the sums below cannot wrap (entries < 2**31)
    if int(packed.max()) > body - base:
        raise InvalidFileError(f"{where}: stripe dictionary value longer than its bytes")
    offsets = np.zeros(entries + 1, dtype=np.int64)
    np.cumsum(packed.view(np.int64), out=offsets[1:])
    offsets[1:] += np.arange(1, entries + 1, dtype=np.int64) * base
    if int(offsets[-1]) != body:
        raise InvalidFileError(
            f"{where}: stripe dictionary lengths add up to {int(offsets[-1])} bytes, "
            f"the page has {body}"
        )
    return StripeDictionaryPage(offsets, memoryview(payload)[start:])


def indices_layout(h: Header, size: int, values: int, where: str) -> tuple[int, int]:
    """(entries, bits) of a DICTIONARY_INDICES page of ``values`` rows whose checked header
    is ``h`` and payload ``size`` bytes, after checking them against each other."""
    entries, bits = int(h["aux"]), packed_bits(h)
    if int(h["count"]) != values:
        raise InvalidFileError(f"{where}: encoded page holds {int(h['count'])} values")
    if not 1 <= entries <= MAX_ENTRIES:
        raise InvalidFileError(f"{where}: indices into a dictionary of {entries} values")
    if size != HEADER_SIZE + bitpack.packed_size(values, bits):
        raise InvalidFileError(f"{where}: DICTIONARY_INDICES payload size does not match")
    return entries, bits


def parse_indices(payload: memoryview | bytes, values: int, where: str) -> IndexPage:
    """Validate a DICTIONARY_INDICES payload of ``values`` rows and unpack its indices."""
    entries, bits = indices_layout(_header(payload, where), len(payload), values, where)
    indices = bitpack.unpack(payload, HEADER_SIZE, bits, values, where)
    if values and int(indices.max()) >= entries:  # unsigned: 64-bit indices too
        raise InvalidFileError(f"{where}: dictionary index out of range")
    return IndexPage(indices.view(np.int64), entries)


def check_entries(page: IndexPage | None, dictionary: object, where: str) -> None:
    """An index page and the stripe's dictionary page must agree on the entry count."""
    if not isinstance(dictionary, StripeDictionaryPage):
        raise InvalidFileError(f"{where}: dictionary indices without a stripe dictionary")
    if page is not None and page.entries != dictionary.entries:
        raise InvalidFileError(
            f"{where}: indices into {page.entries} values, the stripe dictionary has "
            f"{dictionary.entries}"
        )
