"""Writer side of the DCS model: one column's stripe -> encoded pages per stream.

``shred_column`` walks the node tree together with the Arrow array, takes each level's
buffers (zero-copy where the array is not sliced mid-byte), cuts them into pages and
encodes + compresses each page. It knows nothing about files: the writer places the
returned pages and records their offsets.

Page cutting rules (docs/FORMAT.md §Pages):
- VALIDITY: one page per stripe (a SIMPLE chunk).
- fixed-width DATA: ``page_size // width`` values per page; bool DATA in multiples of 8;
  encoded integer and decimal float chunks: by their estimated bit-packed width (up to 8x).
- BINARY: OFFSETS and DATA pages are cut at the *same* value boundaries, each holding
  whole values; an OFFSETS page for values ``[a, b)`` stores the ``b - a + 1`` offsets
  ``offsets[a..b]`` relative to the chunk.
- LIST/MAP OFFSETS: like BINARY OFFSETS, ``page_size // width`` values per page.
- A column that is not flat (readers read it stripe by stripe whole) uses ``4 * page_size``.

Example:
    >>> import pyarrow as pa
    >>> from fermion.format.metadata.layout import build_tree
    >>> from fermion.format.options import WriteOptions
    >>> tree = build_tree(pa.field("s", pa.string()))
    >>> chunks, used = shred_column(tree, pa.array(["a", None, "ccc"]), WriteOptions())
    >>> [(c.stream.stream_type.name, c.state.name, len(c.pages)) for c in chunks]
    [('VALIDITY', 'PAGES', 1), ('OFFSETS', 'PAGES', 1), ('DATA', 'PAGES', 1)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from fermion.format.encoding import bitpack, decimal_floats
from fermion.format.encoding.bitmaps import slice_bitmap
from fermion.format.encoding.bloom import build_blooms
from fermion.format.encoding.decimal_floats import encode_floats
from fermion.format.encoding.encoded import to_storage
from fermion.format.encoding.encodings import (
    dictionary_page,
    encode_ints,
    few_distinct,
    int_domain,
    ints_from_plain,
)
from fermion.format.encoding.pages import (
    BLOCKED,
    COMPRESS_RATIO,
    ENCODED_COMPRESS_RATIO,
    blocks_win_sample,
    encode_page,
    planes_pay_sample,
    tries_dictionary,
)
from fermion.format.encoding.registry import ENCODINGS
from fermion.format.encoding.stripe_dictionary import build_dictionary
from fermion.format.metadata.batch import aligned_cuts
from fermion.format.metadata.cmb import ChunkState
from fermion.format.metadata.layout import Kind, Node, StreamSpec, is_view, is_wrapped, view_storage
from fermion.format.metadata.stats import (
    Stats,
    StatsKind,
    compute_stats,
    int_stats,
    merge_stats,
    stats_kind,
)
from fermion.format.metadata.structs import (
    PAGE_META_DTYPE,
    Compression,
    Encoding,
    RequiredFeature,
    StreamType,
)
from fermion.format.options import BATCH_BLOCK_SIZE, WriteOptions

__all__ = ["CHOICE_STRIPES", "ColumnChoices", "EncodedPage", "StreamChunk", "shred_column"]


@dataclass
class EncodedPage:
    data: bytes  # header + body, ready to write
    num_values: int
    null_count: int = 0
    min_val: int = 0
    max_val: int = 0
    stats_flags: int = 0


@dataclass
class StreamChunk:
    """One stream's chunk in one stripe."""

    stream: StreamSpec
    state: ChunkState
    num_values: int
    null_count: int = 0
    pages: list[EncodedPage] = field(default_factory=list)
    min_val: int = 0
    max_val: int = 0
    stats_flags: int = 0


# a column's choices (ColumnChoices) are made again on every this many stripes' first pages
CHOICE_STRIPES = 4
_CHOICE_SAMPLE = 4  # blocks of a later stripe's first page sampled to check them


@dataclass
class ColumnChoices:
    """What a column's first pages decided (per encoding: whether blocks beat one frame,
    whether blocks sharing a dictionary won), kept by the writer from one stripe to the
    next so that the first page of each stripe does not compress its payload two or
    three ways again; made anew every :data:`CHOICE_STRIPES` stripes, and on a stripe
    whose first page of that encoding, sampled (a few blocks against one frame of them),
    no longer agrees on blocks vs one frame: the values changed kind.

    Example:
        >>> c = ColumnChoices()
        >>> c.next_stripe(), c.stripes
        (False, 1)
    """

    blocks_won: dict[Encoding, bool] = field(default_factory=dict)
    dictionary_won: dict[Encoding, bool] = field(default_factory=dict)
    stripes: int = 0  # stripes encoded since the choices were last made

    def next_stripe(self) -> bool:
        """Count a stripe; True (and the choices forgotten) when they are to be made again
        on this one."""
        again = self.stripes >= CHOICE_STRIPES
        if again:
            self.blocks_won.clear()
            self.dictionary_won.clear()
            self.stripes = 0
        self.stripes += 1
        return again


class _Encoder:
    def __init__(
        self,
        opts: WriteOptions,
        encode: bool,
        blocks: bool = False,
        page_size: int = 0,
        batch: bool = False,
        choices: ColumnChoices | None = None,
    ) -> None:
        self.opts = opts
        # batch mode: a lookup reads a batch's consecutive values, which lie in one or two
        # blocks whatever their width, so every point-read page may be blocked
        self.batch = batch
        self.page_size = page_size or opts.page_size
        self.encode = encode  # False: every page PLAIN (format 1.0 compatible)
        # zstd blocks pay only where point reads use them (a flat column's values);
        # elsewhere they would cost scans time and ratio for nothing
        self.block_size = opts.compression_block_size if blocks else 0
        if batch:  # a lookup reads a batch's few values: smaller blocks (see options)
            self.block_size = min(self.block_size, BATCH_BLOCK_SIZE)
        # blocks sharing a dictionary (1.7) are tried where blocks are (not in batch mode,
        # whose lookups read their blocks by their own fast path)
        self.dictionary_block_size = opts.dictionary_block_size
        if batch or not self.block_size:
            self.dictionary_block_size = 0
        self.checkpoints = blocks  # likewise running-sum checkpoints (DELTA, string lengths)
        # and CRC32s per block of uncompressed pages (1.5), so that point reads verify
        # what they read; a plain column (encode False) stays readable by older readers
        self.checksum_block_size = (
            opts.checksum_block_size if blocks and encode and opts.page_crc else 0
        )
        self.features = RequiredFeature(0)  # what the pages written so far require
        # BYTE_SPLIT pages sampled by planes_pay_sample, and what the last sample said: a
        # chunk's first such page and every _SPLIT_SAMPLE_EVERY-th after it are sampled,
        # the pages between follow the last sample (as the BYTE_SPLIT-or-PLAIN choice)
        self.plane_pages = 0
        self.planes_may_pay = True
        self.codec = Compression.ZSTD if opts.compression == "zstd" else Compression.NONE
        self.compressed = self.codec != Compression.NONE
        choices = choices if choices is not None else ColumnChoices()
        # per encoding: whether the column's first blockable page kept its blocks; the later
        # pages then skip the one-frame comparison (a second zstd pass over the page)
        self.blocks_won: dict[Encoding, bool] = choices.blocks_won
        # ... and whether they shared a dictionary: the later pages then try only that
        # (and, when it lost, never try it)
        self.dictionary_won: dict[Encoding, bool] = choices.dictionary_won
        # encodings whose choices an earlier stripe made: kept only if this stripe's first
        # blockable page of that encoding, sampled, still agrees on blocks vs one frame
        self.carried = set(choices.blocks_won)

    def page(
        self,
        payload: bytes | memoryview,
        num_values: int,
        encoding: Encoding = Encoding.PLAIN,
        blocks: bool = False,
        compress: bool = True,
    ) -> EncodedPage:
        # blocks pay when a block holds few values: a take then decompresses a block per
        # wanted value, not every block (bit-packed integers are one frame)
        block_size = self.block_size
        if not blocks or (len(payload) < _BLOCK_VALUE_BYTES * num_values and not self.batch):
            block_size = 0
        blockable = self.compressed and 0 < block_size < len(payload)
        kind = ENCODINGS[encoding]
        # bit-packed values that point reads gather: zstd only where it saves a quarter;
        # likewise BYTE_SPLIT planes (not in batch mode), where a point read decompresses
        # a block per plane (8 for a float64) instead of reading the value in place
        keep = COMPRESS_RATIO
        if self.checkpoints and (kind.bit_packed or (kind.undo is not None and not self.batch)):
            keep = ENCODED_COMPRESS_RATIO
        if kind.undo is not None and compress and blockable and keep < COMPRESS_RATIO:
            if self.plane_pages % _SPLIT_SAMPLE_EVERY == 0:
                level = self.opts.compression_level
                self.planes_may_pay = planes_pay_sample(payload, encoding, level, block_size, keep)
            self.plane_pages += 1
            if not self.planes_may_pay:
                # a sample of the planes says zstd will not save a quarter: the page is
                # PLAIN, as the whole pass would have decided, without that pass
                plain = kind.undo(payload)
                assert plain is not None  # no target given: a new buffer
                return self.page(plain, num_values, Encoding.PLAIN, blocks, compress=False)
        overhead = self.opts.compression_block_overhead
        if blockable and encoding in self.carried:
            self.carried.discard(encoding)
            level = self.opts.compression_level
            won = blocks_win_sample(payload, level, block_size, overhead, _CHOICE_SAMPLE)
            if won != self.blocks_won.get(encoding):  # the values changed: choose again
                self.blocks_won.pop(encoding, None)
                self.dictionary_won.pop(encoding, None)
        if blockable and self.blocks_won.get(encoding):
            overhead = float("inf")
        shared = self.dictionary_won.get(encoding)
        dictionary_block_size = self.dictionary_block_size if shared is not False else 0
        data = encode_page(
            payload,
            num_values=num_values,
            codec=self.codec if compress else Compression.NONE,
            level=self.opts.compression_level,
            crc=self.opts.page_crc,
            encoding=encoding,
            block_size=block_size,
            block_overhead=overhead,
            keep_ratio=keep,
            checksum_block_size=self.checksum_block_size if blocks else 0,
            block_sample=_BATCH_BLOCK_SAMPLE if self.batch else 0,
            dictionary_block_size=dictionary_block_size,
            dictionary_only=bool(shared),
        )
        if blockable and encoding not in self.blocks_won:
            self.blocks_won[encoding] = data[5] in BLOCKED
        # decided on the chunk's first page that tried a dictionary (not the first blockable
        # page: that one may have been too small to try)
        tried = blockable and compress and tries_dictionary(len(payload), dictionary_block_size)
        if tried and shared is None:
            self.dictionary_won[encoding] = data[5] == Compression.ZSTD_DICT_BLOCKS
        if kind.undo is not None and not _planes_pay(data):
            plain = kind.undo(payload)
            assert plain is not None  # no target given: a new buffer
            # the sample found the planes compress better than the plain values, and zstd
            # could not save 10% of the planes: no second zstd pass for the plain values
            return self.page(plain, num_values, Encoding.PLAIN, blocks, compress=False)
        self.features |= kind.features(payload)
        if data[5] == Compression.ZSTD_BLOCKS:  # PageHeader.compression
            self.features |= RequiredFeature.BLOCKS
        elif data[5] == Compression.ZSTD_DICT_BLOCKS:
            self.features |= RequiredFeature.DICT_BLOCKS
        elif data[5] == Compression.CRC_BLOCKS:
            self.features |= RequiredFeature.CRC_BLOCKS
        return EncodedPage(data, num_values)


def _planes_pay(page: bytes) -> bool:
    """Whether a BYTE_SPLIT page is worth keeping: the planes are only for zstd, so unless
    zstd kept them (1.2-1.3 writers kept them regardless), plain values are as small and
    are read in place, with no transpose on every read."""
    return bool(page[5] in (Compression.ZSTD, *BLOCKED))  # .compression


def _cuts_by_count(n: int, per_page: int) -> list[tuple[int, int]]:
    per_page = max(1, per_page)
    return [(a, min(n, a + per_page)) for a in range(0, n, per_page)] or [(0, 0)]


def _count_cuts(n: int, per_page: int, bounds: np.ndarray | None) -> list[tuple[int, int]]:
    """Fixed values per page; in batch mode closed early at batch boundaries."""
    if bounds is None:
        return _cuts_by_count(n, per_page)
    per_page = max(1, per_page)

    def natural(a: int, b: int) -> list[tuple[int, int]]:
        return [(a + x, a + y) for x, y in _cuts_by_count(b - a, per_page)]

    return aligned_cuts(bounds, lambda a: a + per_page, natural)


def _binary_cuts(
    offsets: np.ndarray, page_size: int, width: int, bounds: np.ndarray | None
) -> list[tuple[int, int]]:
    """BINARY value ranges; in batch mode closed early at batch boundaries."""
    if bounds is None:
        return _cuts_binary(offsets, page_size, width)
    max_values = max(1, page_size // width - 1)

    def reach(a: int) -> int:
        by_bytes = int(np.searchsorted(offsets, offsets[a] + page_size, side="right")) - 1
        return min(by_bytes, a + max_values)

    def natural(a: int, b: int) -> list[tuple[int, int]]:
        return [(a + x, a + y) for x, y in _cuts_binary(offsets[a : b + 1], page_size, width)]

    return aligned_cuts(bounds, reach, natural)


def _cuts_binary(offsets: np.ndarray, page_size: int, width: int) -> list[tuple[int, int]]:
    """Value ranges whose data bytes and offsets each fit a page (a value is never split)."""
    n = len(offsets) - 1
    if n <= 0:
        return [(0, 0)]
    max_values = max(1, page_size // width - 1)
    cuts: list[tuple[int, int]] = []
    a = 0
    while a < n:
        limit = offsets[a] + page_size
        b = int(np.searchsorted(offsets, limit, side="right")) - 1  # last b with off[b]<=limit
        b = min(max(b, a + 1), a + max_values, n)
        cuts.append((a, b))
        a = b
    return cuts


def shred_column(
    node: Node,
    array: pa.Array,
    opts: WriteOptions,
    *,
    encode: bool = True,
    batch_bounds: np.ndarray | None = None,
    choices: ColumnChoices | None = None,
) -> tuple[list[StreamChunk], RequiredFeature]:
    """Encode one column's values for one stripe into a chunk per stream (file order).

    Returns the chunks and the required feature flags their pages need (ENCODINGS and
    BIT_PACKING for encoded pages, DECIMAL_FLOATS for FLOAT_DECIMAL pages, BLOCKS for
    blocked zstd pages).
    ``batch_bounds`` (batch mode) are the row boundaries ``[0, ..., len(array)]`` of the
    stripe's batches: every page of every stream is then cut at batch boundaries, mapped
    to each nested level's values through the parent offsets.
    ``choices``: the column's choices so far (the writer's, for this column); None: made
    on this stripe's pages alone.
    """
    point_readable = node.kind in (Kind.FIXED, Kind.BINARY)  # see fermion.format.read.points
    # a column readers read stripe by stripe whole gains nothing from small pages
    page_size = opts.page_size * (1 if node.flat else _WHOLE_READ_PAGE_GROWTH)
    enc = _Encoder(
        opts,
        encode,
        # batch mode: a lookup reads nested columns value by value too (their offsets'
        # checkpoints, the blocks of their values)
        blocks=(point_readable or batch_bounds is not None) and not is_wrapped(node.type),
        page_size=page_size,
        batch=batch_bounds is not None,
        choices=choices,
    )
    out: list[StreamChunk] = []
    _shred(node, array, enc, out, batch_bounds)
    if encode and node.kind == Kind.BINARY and node.flat:
        _prefer_stripe_dictionary(node, array, enc, out, batch_bounds)
    if node.bloom is not None:
        out.append(_bloom_chunk(node, array, out, enc))
    return out, enc.features


def _chunks_size(chunks: list[StreamChunk]) -> int:
    """Bytes of the chunks' pages plus their PageMeta entries."""
    pages = [p for c in chunks for p in c.pages]
    return sum(len(p.data) for p in pages) + PAGE_META_DTYPE.itemsize * len(pages)


def _prefer_stripe_dictionary(
    node: Node, arr: pa.Array, enc: _Encoder, out: list[StreamChunk], bounds: np.ndarray | None
) -> None:
    """Replace a flat string column's OFFSETS and DATA chunks (``out[-2:]``, after its
    VALIDITY) by a stripe dictionary (format 1.4) when that is at least 10% smaller, pages,
    zstd and page metadata included; page-level encodings stay where they do as well (few
    distinct values: DICTIONARY pages; mostly unique values: PLAIN)."""
    offsets_chunk, data_chunk = out[-2], out[-1]
    off_spec, spec = node.stream(StreamType.OFFSETS), node.stream(StreamType.DATA)
    assert off_spec == offsets_chunk.stream and spec == data_chunk.stream
    if data_chunk.state != ChunkState.PAGES:
        return
    if is_view(arr.type):
        arr = arr.cast(view_storage(arr.type))
    found = build_dictionary(arr)
    if found is None:
        return
    alt = _Encoder(enc.opts, True, blocks=True, page_size=enc.page_size, batch=enc.batch)
    n = len(arr)
    # index pages are sized by their packed width, like integer pages (§4)
    cuts = _count_cuts(n, enc.page_size * 8 // found.index_bits, bounds)
    ranks = found.indices
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None

    def indices(a: int, b: int, values: pa.Array | None) -> PagePayload:
        return Encoding.DICTIONARY_INDICES, found.indices_payload(a, b)

    def bounds_of(a: int, b: int, values: pa.Array, kind: StatsKind) -> Stats | None:
        page = ranks[a:b] if valid is None else ranks[a:b][valid[a:b]]
        if len(page) == 0:
            return None
        extremes = found.values.take(pa.array([page.min(), page.max()]))  # sorted: bounds
        return compute_stats(extremes.cast(arr.type), kind)

    data = _data_chunk(spec, n, cuts, indices, arr, alt, page_stats=bounds_of)
    data.pages.insert(0, alt.page(found.dictionary_payload(), 0, Encoding.STRIPE_DICTIONARY))
    derived: Encode = lambda a, b, values: (Encoding.DERIVED, b"")  # noqa: E731
    offsets = _data_chunk(off_spec, n, [(0, 0), *cuts], derived, None, alt)
    if _chunks_size([offsets, data]) <= COMPRESS_RATIO * _chunks_size([offsets_chunk, data_chunk]):
        out[-2:] = [offsets, data]
        enc.features = alt.features  # the column's only other page so far is its PLAIN VALIDITY


def _bloom_chunk(
    node: Node, array: pa.Array, chunks: list[StreamChunk], enc: _Encoder
) -> StreamChunk:
    """One BLOOM page holding a filter per DATA page of this stripe."""
    assert node.bloom is not None
    data = next(c for c in chunks if c.stream.stream_type == StreamType.DATA)
    if data.state != ChunkState.PAGES:
        return StreamChunk(node.bloom, ChunkState.EMPTY, 0)
    array = to_storage(array)
    slices, start = [], 0
    for page in data.pages:
        slices.append(array.slice(start, page.num_values))
        start += page.num_values
    page = enc.page(build_blooms(slices), len(slices))
    return StreamChunk(node.bloom, ChunkState.PAGES, len(slices), pages=[page])


PagePayload = tuple[Encoding, bytes | memoryview]
Encode = Callable[[int, int, pa.Array | None], PagePayload]
# bounds of page [a, b) known without another pass over its values (None: compute them)
PageStats = Callable[[int, int, pa.Array, StatsKind], Stats | None]


def _int_page_stats(chunk_ints: np.ndarray, valid: np.ndarray | None) -> PageStats:
    """Integer-like pages: bounds from the int64 values the encoder already holds
    (``valid``: the chunk's validity as booleans, None when it has no nulls)."""

    def stats(a: int, b: int, values: pa.Array, kind: StatsKind) -> Stats | None:
        ints = chunk_ints[a:b]
        return int_stats(ints if valid is None else ints[valid[a:b]], kind)

    return stats


def _plain(payload_of: Callable[[int, int], bytes | memoryview]) -> Encode:
    return lambda a, b, values: (Encoding.PLAIN, payload_of(a, b))


_MAX_PAGE_GROWTH = 8  # a bit-packed page holds at most 8x the values of a plain one
# the stripe dictionary is always decoded whole, never gathered from in place
_DECIMAL_TRIES = 2  # float pages in a row not FLOAT_DECIMAL before a chunk stops trying
# float pages choose BYTE_SPLIT or PLAIN on a zstd sample of the chunk's first page and of
# every 8th page after it; the pages between follow the last sample (two sample passes a
# page cost batch-mode writes of small pages a third of their zstd time)
_SPLIT_SAMPLE_EVERY = 8
_BLOCK_VALUE_BYTES = 8  # pages of fewer payload bytes per value are never blocked
# batch mode blocks every point-read page, mostly pages of one or two per column chunk: the
# blocks-or-one-frame comparison is made on this many blocks spread over the page, not on a
# second zstd pass over all of it (pages.encode_page's block_sample)
_BATCH_BLOCK_SAMPLE = 4
# columns that are not flat (nested, dictionary, extension types) are read stripe by stripe
# whole: their pages are 4x page_size (fewer pages, less per-page work on every read)
_WHOLE_READ_PAGE_GROWTH = 4
_BLOCKED_PAGE_GROWTH = 8  # binary pages that point reads decode block by block


def _int_values_per_page(ints: np.ndarray | None, width: int, page_size: int) -> int:
    """Values per page so that a page holds about ``page_size`` bytes *encoded*.

    Like Parquet's page size (measured after encoding), the estimate is the chunk's
    bit-packed FOR width: narrow integers get proportionally more values per page, which
    keeps per-page costs (and a point read's page count) down.
    """
    plain = max(1, page_size // width)
    if ints is None or len(ints) == 0:
        return plain
    bits = bitpack.bits_for(int(ints.max()) - int(ints.min()))
    return int(min(max(plain, page_size * 8 // bits), plain * _MAX_PAGE_GROWTH))


def _float_values_per_page(values: pa.Array, plain: memoryview, width: int, page_size: int) -> int:
    """Values per page of a float chunk: when its values are decimals (FLOAT_DECIMAL
    pages), sized like integer pages by the estimated bit-packed width of their integers,
    so a page holds about ``page_size`` bytes *encoded* (up to 8x the plain values: fewer
    pages, less per-page work on every read and for each page a ``take`` touches)."""
    plain_values = max(1, page_size // width)
    if len(values) <= plain_values:
        return plain_values
    floats = np.frombuffer(plain, dtype="<f4" if width == 4 else "<f8")
    valid = values.is_valid().to_numpy(zero_copy_only=False) if values.null_count else None
    bits = decimal_floats.packed_bits_estimate(floats, valid, width)
    if bits is None:
        return plain_values
    return int(min(max(plain_values, page_size * 8 // bits), plain_values * _MAX_PAGE_GROWTH))


def _int_encoder(
    payload_of: Callable[[int, int], bytes | memoryview],
    chunk_ints: np.ndarray | None,
    valid: np.ndarray | None,
    width: int,
    signed: bool,
    compressed: bool,
    checkpoints: bool = False,
) -> Encode:
    """Fixed-width integer-like values through the integer codec (null slots filled).

    ``chunk_ints`` are the stripe's values as int64 (None: some value does not fit, or
    encodings are off: every page PLAIN); ``valid`` their validity as booleans (None:
    no nulls).
    """

    def encode(a: int, b: int, values: pa.Array | None) -> PagePayload:
        plain = payload_of(a, b)
        if chunk_ints is None:
            return Encoding.PLAIN, plain
        ints = chunk_ints[a:b]
        page_valid = None if valid is None else valid[a:b]
        if page_valid is not None and not page_valid.all():
            ints = ints.copy()
            if page_valid.any():  # null slots are free: keep ranges tight
                ints[~page_valid] = ints[page_valid].min()
        encoding, payload = encode_ints(
            ints, out_width=width, signed=signed, compressed=compressed, checkpoints=checkpoints
        )
        if ENCODINGS[encoding].plain or len(payload) >= len(plain):
            return Encoding.PLAIN, plain
        return encoding, payload

    return encode


def _float_encoder(
    payload_of: Callable[[int, int], bytes | memoryview], width: int, on: bool, compressed: bool
) -> Encode:
    """float32/float64 values: PLAIN, BYTE_SPLIT or FLOAT_DECIMAL (``encode_floats``).

    After two pages of a chunk in a row that could not be FLOAT_DECIMAL, the chunk's other
    pages skip the exponent search (a column's values rarely change kind within a stripe;
    the search costs most on small pages, e.g. batch mode's).
    """
    misses = [0]
    split: list[bool | None] = [None]  # BYTE_SPLIT or not, as the last sample said
    pages = [0]

    def encode(a: int, b: int, values: pa.Array | None) -> PagePayload:
        plain = payload_of(a, b)
        if not on:
            return Encoding.PLAIN, plain
        valid = None
        if values is not None and values.null_count:
            valid = values.is_valid().to_numpy(zero_copy_only=False)
        enc, payload = encode_floats(
            plain,
            width,
            valid,
            compressed=compressed,
            decimal=misses[0] < _DECIMAL_TRIES,
            split=None if pages[0] % _SPLIT_SAMPLE_EVERY == 0 else split[0],
        )
        pages[0] += 1
        kind = ENCODINGS[enc]
        misses[0] = 0 if kind.decimal else misses[0] + 1
        if not kind.decimal and b - a >= 64:
            split[0] = kind.undo is not None  # BYTE_SPLIT: planes for zstd
        return enc, payload

    return encode


def _lengths_encoder(
    rel: np.ndarray,
    width: int,
    on: bool,
    compressed: bool,
    derived: set[int],
    checkpoints: bool = False,
) -> Encode:
    """OFFSETS pages: value lengths through the integer codec (DERIVED for dictionary pages)."""
    rel_bytes = np.ascontiguousarray(rel).data.cast("B")

    def encode(a: int, b: int, values: pa.Array | None) -> PagePayload:
        if a in derived:
            return Encoding.DERIVED, b""
        plain = rel_bytes[a * width : (b + 1) * width]
        if not on or b == a:
            return Encoding.PLAIN, plain
        encoding, payload = encode_ints(
            np.diff(rel[a : b + 1]),
            out_width=width,
            lengths=True,
            compressed=compressed,
            checkpoints=checkpoints,
        )
        if ENCODINGS[encoding].plain or len(payload) >= len(plain):
            return Encoding.PLAIN, plain
        return encoding, payload

    return encode


def _offsets_of(arr: pa.Array, node: Node) -> np.ndarray:
    dtype = "<i4" if node.byte_width == 4 else "<i8"
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None:  # an empty array may come without an offsets buffer
        return np.zeros(n + 1, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype)[arr.offset : arr.offset + n + 1]


def _validity(node: Node, arr: pa.Array, enc: _Encoder, out: list[StreamChunk]) -> None:
    spec = node.stream(StreamType.VALIDITY)
    if spec is None:
        return
    n, nulls = len(arr), arr.null_count
    if nulls == 0:
        out.append(StreamChunk(spec, ChunkState.ALL_VALID, n))
    elif nulls == n:
        out.append(StreamChunk(spec, ChunkState.ALL_NULL, n, null_count=n))
    else:
        bitmap = slice_bitmap(arr.buffers()[0], arr.offset, n)
        out.append(StreamChunk(spec, ChunkState.PAGES, n, nulls, [enc.page(bitmap, n)]))


def _data_chunk(
    spec: StreamSpec,
    n: int,
    cuts: list[tuple[int, int]],
    encode: Encode,
    values: pa.Array | None,
    enc: _Encoder,
    *,
    stats: bool = True,
    page_stats: PageStats | None = None,
) -> StreamChunk:
    use_stats = stats and values is not None and enc.opts.statistics
    kind = stats_kind(values.type) if use_stats else None  # type: ignore[union-attr]
    kind = kind or StatsKind.NONE
    chunk = StreamChunk(spec, ChunkState.PAGES, n)
    nulls_total = 0
    for a, b in cuts:
        sl = values.slice(a, b - a) if values is not None else None
        nulls = sl.null_count if sl is not None else 0
        nulls_total += nulls
        encoding, payload = encode(a, b, sl)
        page = enc.page(payload, b - a, encoding, blocks=True)
        page.null_count = nulls
        if sl is not None and kind != StatsKind.NONE:
            known = page_stats(a, b, sl, kind) if page_stats is not None else None
            bounds = known if known is not None else compute_stats(sl, kind)
            page.min_val, page.max_val, page.stats_flags = bounds
        chunk.pages.append(page)
    chunk.null_count = nulls_total
    if len(chunk.pages) == 1:
        p = chunk.pages[0]
        chunk.min_val, chunk.max_val, chunk.stats_flags = p.min_val, p.max_val, p.stats_flags
    elif kind != StatsKind.NONE:  # from the pages' bounds: no second pass over the values
        chunk.min_val, chunk.max_val, chunk.stats_flags = merge_stats(
            [(p.min_val, p.max_val, p.stats_flags) for p in chunk.pages],
            [p.null_count == p.num_values for p in chunk.pages],
            kind,
        )
    return chunk


def _shred(
    node: Node,
    arr: pa.Array,
    enc: _Encoder,
    out: list[StreamChunk],
    bounds: np.ndarray | None = None,
) -> None:
    arr = to_storage(arr)
    if is_view(arr.type):
        arr = arr.cast(view_storage(arr.type))
    n = len(arr)
    kind = node.kind
    if kind == Kind.NULL:
        return
    _validity(node, arr, enc, out)
    page_size = enc.page_size
    all_null = n > 0 and arr.null_count == n
    if kind in (Kind.FIXED, Kind.BOOL, Kind.DICTIONARY):
        spec = node.stream(StreamType.DATA)
        assert spec is not None  # layout guarantees a DATA stream for these kinds
        if all_null or n == 0:
            out.append(StreamChunk(spec, ChunkState.EMPTY, n, arr.null_count))
            return_children = kind == Kind.DICTIONARY
            if return_children:
                _shred(node.children[0], arr.dictionary, enc, out)
            return
        if kind == Kind.BOOL:
            bits = slice_bitmap(arr.buffers()[1], arr.offset, n)
            cuts = _count_cuts(n, page_size * 8, bounds)
            # batch-aligned pages may start mid-byte: each page is re-based to bit 0
            bool_pages = _plain(lambda a, b: slice_bitmap(bits, a, b - a))
            out.append(_data_chunk(spec, n, cuts, bool_pages, arr, enc))
            return
        values = arr.indices if kind == Kind.DICTIONARY else arr
        width = node.byte_width
        raw = memoryview(values.buffers()[1]).cast("B")
        base = values.offset * width

        def fixed_bytes(a: int, b: int) -> memoryview:
            return raw[base + a * width : base + b * width]

        domain = int_domain(values.type)
        per_page = page_size // width
        known_stats: PageStats | None = None
        if domain is not None:
            ints = ints_from_plain(fixed_bytes(0, n), width, domain[1]) if enc.encode else None
            valid = values.is_valid().to_numpy(zero_copy_only=False) if values.null_count else None
            if ints is not None:
                if kind == Kind.FIXED:
                    known = ints if valid is None else ints[valid]
                    per_page = _int_values_per_page(known, width, page_size)
                known_stats = _int_page_stats(ints, valid)
            encoder = _int_encoder(
                fixed_bytes, ints, valid, width, domain[1], enc.compressed, enc.checkpoints
            )
        elif pat.is_float32(values.type) or pat.is_float64(values.type):
            encoder = _float_encoder(fixed_bytes, width, enc.encode, enc.compressed)
            if enc.encode and kind == Kind.FIXED:
                per_page = _float_values_per_page(values, fixed_bytes(0, n), width, page_size)
        else:
            encoder = _plain(fixed_bytes)
        cuts = _count_cuts(n, per_page, bounds)
        stats = kind != Kind.DICTIONARY
        out.append(
            _data_chunk(spec, n, cuts, encoder, values, enc, stats=stats, page_stats=known_stats)
        )
        if kind == Kind.DICTIONARY:
            _shred(node.children[0], arr.dictionary, enc, out)
        return
    if kind in (Kind.BINARY, Kind.LIST, Kind.MAP):
        off_spec = node.stream(StreamType.OFFSETS)
        assert off_spec is not None
        offsets = _offsets_of(arr, node)
        start, end = int(offsets[0]), int(offsets[-1])
        rel = offsets - offsets.dtype.type(start) if start else offsets
        width = node.byte_width
        if kind == Kind.BINARY:
            budget = page_size
            if enc.encode and n and few_distinct(arr):
                # its pages will be DICTIONARY pages of a few bits per value: like integer
                # pages, sized by that encoded width (up to 8x the plain bytes per page)
                budget = page_size * _MAX_PAGE_GROWTH
            elif enc.block_size and enc.compressed and enc.encode and node.bloom is None:
                # zstd blocks and length checkpoints let point reads decode a few blocks
                # and lengths of a page, whatever its size: fewer pages, less per-page work
                # (a column with a bloom filter keeps its pages, the unit filters skip)
                budget = page_size * _BLOCKED_PAGE_GROWTH
            cuts = _binary_cuts(rel, budget, width, bounds)
        else:
            cuts = _count_cuts(n, page_size // width - 1, bounds)
        empty = n == 0 or (all_null and end == start)
        dictionary_pages: dict[int, bytes] = {}
        distinct: dict[int, pa.Array] = {}  # a dictionary page's values: its bounds, cheaply
        if kind == Kind.BINARY and enc.encode and not empty and end > start:
            for a, b in cuts:
                found = dictionary_page(arr.slice(a, b - a))
                if found is not None:
                    dictionary_pages[a], distinct[a] = found
        if empty:
            out.append(StreamChunk(off_spec, ChunkState.EMPTY, n, arr.null_count))
        else:
            lengths = _lengths_encoder(
                rel, width, enc.encode, enc.compressed, set(dictionary_pages), enc.checkpoints
            )
            out.append(_data_chunk(off_spec, n, cuts, lengths, None, enc))
        if kind == Kind.BINARY:
            spec = node.stream(StreamType.DATA)
            assert spec is not None
            if empty or end == start:
                out.append(StreamChunk(spec, ChunkState.EMPTY, n, arr.null_count))
                return
            data = memoryview(arr.buffers()[2]).cast("B")

            def binary_pages(a: int, b: int, values: pa.Array | None) -> PagePayload:
                if a in dictionary_pages:
                    return Encoding.DICTIONARY, dictionary_pages[a]
                return Encoding.PLAIN, data[start + int(rel[a]) : start + int(rel[b])]

            def dictionary_stats(a: int, b: int, sl: pa.Array, k: StatsKind) -> Stats | None:
                return compute_stats(distinct[a], k) if a in distinct else None

            out.append(
                _data_chunk(spec, n, cuts, binary_pages, arr, enc, page_stats=dictionary_stats)
            )
            return
        child = arr.values.slice(start, end - start)
        child_bounds = None if bounds is None else rel[bounds].astype(np.int64)
        _shred(node.children[0], child, enc, out, child_bounds)
        return
    if kind == Kind.FIXED_LIST:
        size = node.list_size
        child = arr.values.slice(arr.offset * size, n * size)
        _shred(node.children[0], child, enc, out, None if bounds is None else bounds * size)
        return
    if kind == Kind.STRUCT:
        for i, child_node in enumerate(node.children):
            _shred(child_node, arr.field(i), enc, out, bounds)
        return
    raise AssertionError(f"unhandled kind {kind}")  # layout.build_tree rejects the rest
