"""Writer side of the DCS model: one column's stripe -> encoded pages per stream.

``shred_column`` walks the node tree together with the Arrow array, takes each level's
buffers (zero-copy where the array is not sliced mid-byte), cuts them into pages and
encodes + compresses each page. It knows nothing about files: the writer places the
returned pages and records their offsets.

Page cutting rules (docs/FORMAT.md §Pages):
- VALIDITY: one page per stripe (a SIMPLE chunk).
- fixed-width DATA: ``page_size // width`` values per page; bool DATA in multiples of 8.
- BINARY: OFFSETS and DATA pages are cut at the *same* value boundaries, each holding
  whole values; an OFFSETS page for values ``[a, b)`` stores the ``b - a + 1`` offsets
  ``offsets[a..b]`` relative to the chunk.
- LIST/MAP OFFSETS: like BINARY OFFSETS, ``page_size // width`` values per page.

Example:
    >>> import pyarrow as pa
    >>> from fermion.format.layout import build_tree
    >>> from fermion.format.options import WriteOptions
    >>> f = pa.field("s", pa.string())
    >>> chunks = shred_column(build_tree(f), pa.array(["a", None, "ccc"]), WriteOptions())
    >>> [(c.stream.stream_type.name, c.state.name, len(c.pages)) for c in chunks]
    [('VALIDITY', 'PAGES', 1), ('OFFSETS', 'PAGES', 1), ('DATA', 'PAGES', 1)]
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from fermion.format.bitmaps import slice_bitmap
from fermion.format.layout import Kind, Node, StreamSpec
from fermion.format.options import WriteOptions
from fermion.format.pages import encode_page
from fermion.format.stats import StatsKind, compute_stats, stats_kind
from fermion.format.structs import Compression, StreamType

__all__ = ["ChunkState", "EncodedPage", "StreamChunk", "shred_column"]


class ChunkState(enum.Enum):
    ALL_VALID = "all_valid"  # VALIDITY only: no bitmap stored
    ALL_NULL = "all_null"  # VALIDITY only
    EMPTY = "empty"  # OFFSETS/DATA: nothing stored (all values null, or no values)
    PAGES = "pages"


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


class _Encoder:
    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.codec = Compression.ZSTD if opts.compression == "zstd" else Compression.NONE

    def page(self, payload: bytes | memoryview, num_values: int) -> EncodedPage:
        data = encode_page(
            payload,
            num_values=num_values,
            codec=self.codec,
            level=self.opts.compression_level,
            crc=self.opts.page_crc,
        )
        return EncodedPage(data, num_values)


def _cuts_by_count(n: int, per_page: int) -> list[tuple[int, int]]:
    per_page = max(1, per_page)
    return [(a, min(n, a + per_page)) for a in range(0, n, per_page)] or [(0, 0)]


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


def _with_stats(
    page: EncodedPage, values: pa.Array | None, kind: StatsKind, nulls: int
) -> EncodedPage:
    page.null_count = nulls
    if values is not None and kind != StatsKind.NONE:
        page.min_val, page.max_val, page.stats_flags = compute_stats(values, kind)
    return page


def shred_column(node: Node, array: pa.Array, opts: WriteOptions) -> list[StreamChunk]:
    """Encode one column's values for one stripe into a chunk per stream (file order)."""
    enc = _Encoder(opts)
    out: list[StreamChunk] = []
    _shred(node, array, enc, out, top=True)
    return out


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
    payload_of: Callable[[int, int], bytes | memoryview],
    values: pa.Array | None,
    enc: _Encoder,
) -> StreamChunk:
    kind = stats_kind(values.type) if (values is not None and enc.opts.statistics) else None
    kind = kind or StatsKind.NONE
    chunk = StreamChunk(spec, ChunkState.PAGES, n)
    nulls_total = 0
    for a, b in cuts:
        sl = values.slice(a, b - a) if values is not None else None
        nulls = sl.null_count if sl is not None else 0
        nulls_total += nulls
        chunk.pages.append(_with_stats(enc.page(payload_of(a, b), b - a), sl, kind, nulls))
    chunk.null_count = nulls_total
    if len(chunk.pages) == 1:
        p = chunk.pages[0]
        chunk.min_val, chunk.max_val, chunk.stats_flags = p.min_val, p.max_val, p.stats_flags
    elif values is not None and kind != StatsKind.NONE:
        chunk.min_val, chunk.max_val, chunk.stats_flags = compute_stats(values, kind)
    return chunk


def _shred(node: Node, arr: pa.Array, enc: _Encoder, out: list[StreamChunk], top: bool) -> None:
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    n = len(arr)
    kind = node.kind
    if kind == Kind.NULL:
        return
    _validity(node, arr, enc, out)
    page_size = enc.opts.page_size
    all_null = n > 0 and arr.null_count == n
    if kind in (Kind.FIXED, Kind.BOOL, Kind.DICTIONARY):
        spec = node.stream(StreamType.DATA)
        assert spec is not None  # layout guarantees a DATA stream for these kinds
        if all_null or n == 0:
            out.append(StreamChunk(spec, ChunkState.EMPTY, n, arr.null_count))
            return_children = kind == Kind.DICTIONARY
            if return_children:
                _shred(node.children[0], arr.dictionary, enc, out, top=False)
            return
        if kind == Kind.BOOL:
            bits = slice_bitmap(arr.buffers()[1], arr.offset, n)
            cuts = _cuts_by_count(n, page_size * 8)
            out.append(
                _data_chunk(spec, n, cuts, lambda a, b: bits[a // 8 : (b + 7) // 8], arr, enc)
            )
            return
        values = arr.indices if kind == Kind.DICTIONARY else arr
        width = node.byte_width
        raw = memoryview(values.buffers()[1]).cast("B")
        base = values.offset * width
        cuts = _cuts_by_count(n, page_size // width)
        stats_values = None if kind == Kind.DICTIONARY else arr
        out.append(
            _data_chunk(
                spec,
                n,
                cuts,
                lambda a, b: raw[base + a * width : base + b * width],
                stats_values,
                enc,
            )
        )
        if kind == Kind.DICTIONARY:
            _shred(node.children[0], arr.dictionary, enc, out, top=False)
        return
    if kind in (Kind.BINARY, Kind.LIST, Kind.MAP):
        off_spec = node.stream(StreamType.OFFSETS)
        assert off_spec is not None
        offsets = _offsets_of(arr, node)
        start, end = int(offsets[0]), int(offsets[-1])
        rel = offsets - offsets.dtype.type(start) if start else offsets
        width = node.byte_width
        if kind == Kind.BINARY:
            cuts = _cuts_binary(rel, page_size, width)
        else:
            cuts = _cuts_by_count(n, page_size // width - 1)
        empty = n == 0 or (all_null and end == start)
        if empty:
            out.append(StreamChunk(off_spec, ChunkState.EMPTY, n, arr.null_count))
        else:
            rel_bytes = np.ascontiguousarray(rel).data.cast("B")
            out.append(
                _data_chunk(
                    off_spec,
                    n,
                    cuts,
                    lambda a, b: rel_bytes[a * width : (b + 1) * width],
                    None,
                    enc,
                )
            )
        if kind == Kind.BINARY:
            spec = node.stream(StreamType.DATA)
            assert spec is not None
            if empty or end == start:
                out.append(StreamChunk(spec, ChunkState.EMPTY, n, arr.null_count))
                return
            data = memoryview(arr.buffers()[2]).cast("B")
            out.append(
                _data_chunk(
                    spec,
                    n,
                    cuts,
                    lambda a, b: data[start + int(rel[a]) : start + int(rel[b])],
                    arr,
                    enc,
                )
            )
            return
        child = arr.values.slice(start, end - start)
        _shred(node.children[0], child, enc, out, top=False)
        return
    if kind == Kind.FIXED_LIST:
        size = node.list_size
        child = arr.values.slice(arr.offset * size, n * size)
        _shred(node.children[0], child, enc, out, top=False)
        return
    if kind == Kind.STRUCT:
        for i, child_node in enumerate(node.children):
            _shred(child_node, arr.field(i), enc, out, top=False)
        return
    raise AssertionError(f"unhandled kind {kind}")  # layout.build_tree rejects the rest
