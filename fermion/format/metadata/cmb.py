"""One Column Metadata Block (docs/FORMAT.md §6), built and parsed.

The writer keeps each column's chunk descriptors in a :class:`ColumnRecord` while it
writes the data and turns it into the column's block with :func:`build_cmb` on close.

A CMB is read with ``np.frombuffer`` only. Before anything points into the data area it is
checked: the CRC32, the stream directory against the layout implied by the column's type,
payload and page-meta positions inside the block, chunk ranges inside the data area, page
sizes adding up to chunk lengths and page value counts adding up to chunk value counts.
A corrupt block therefore raises a typed error here and never reaches a decoder.

Example:
    >>> import pyarrow as pa, tempfile, os
    >>> from fermion.format.read.metadata import MetadataReader
    >>> from fermion.format.options import ReadOptions
    >>> from fermion.format.write.writer import write_table
    >>> from fermion.io.source import open_source
    >>> path = os.path.join(tempfile.mkdtemp(), "c.fermion")
    >>> write_table(pa.table({"a": [1, None, 3]}), path)
    >>> meta = MetadataReader(open_source(path), ReadOptions())
    >>> (proj,) = meta.projections(["a"])
    >>> (raw,) = meta.fetch([(meta.cmb_offset, meta.schema_offset - meta.cmb_offset)])
    >>> cmb = parse_cmb(raw, proj.tree, num_stripes=1, num_rows=3, column_index=0,
    ...                 data_start=meta.data_start, data_end=meta.cmb_offset, column="a")
    >>> cmb.stripe_rows.tolist(), [DescType(s.desc_type).name for s in cmb.streams]
    ([3], ['SIMPLE', 'FULL'])
    >>> int(cmb.streams[1].full["null_count"][0])
    1
    >>> meta.source.close()
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from fermion.errors import ChecksumError, FermionError, InvalidFileError
from fermion.format import native
from fermion.format.checksum import crc32
from fermion.format.metadata.layout import FLAT_STREAMS, Kind, Node, StreamSpec
from fermion.format.metadata.structs import (
    CHUNK_ALL_NULL,
    CMB_HEADER_DTYPE,
    FULL_CHUNK_DESC_DTYPE,
    PAGE_META_DTYPE,
    SIMPLE_CHUNK_DESC_DTYPE,
    STREAM_META_DTYPE,
    STRIPE_META_DTYPE,
    DescType,
    StreamType,
)

__all__ = [
    "ChunkState",
    "ColumnMeta",
    "ColumnRecord",
    "PageLayout",
    "StreamDesc",
    "StreamRecord",
    "build_cmb",
    "parse_cmb",
]


class PageLayout(NamedTuple):
    """Where the pages of one FULL chunk are and which rows they hold (int64 arrays)."""

    counts: np.ndarray  # values per page
    starts: np.ndarray  # first value of each page within the chunk
    ends: np.ndarray  # one past its last value
    offsets: np.ndarray  # absolute file offset of each page
    sizes: np.ndarray  # bytes of each page on disk


class StreamDesc:
    """One stream's descriptors across all stripes.

    A lookup keeps one descriptor alive per column it opens, so a FULL descriptor holds
    no per-stripe Python objects: its chunk tuples are unpacked from the CMB bytes when
    asked for, and only stripes that do not have exactly one page keep a PageMeta array
    (a dict of numpy arrays, which the garbage collector does not track).
    """

    __slots__ = ("desc_type", "_simple", "_full", "_raw", "_pos", "_count", "_pages", "_layouts")

    def __init__(
        self,
        desc_type: DescType,
        raw: bytes | None = None,
        pos: int = 0,
        count: int = 0,
        pages: dict[int, np.ndarray] | None = None,
    ) -> None:
        self.desc_type = desc_type
        self._simple: np.ndarray | None = None  # SIMPLE_CHUNK_DESC_DTYPE[num_stripes]
        # the CMB bytes, and where in them the ``count`` SIMPLE or FULL descriptors are,
        # viewed on first use (a numpy view costs about a microsecond: many columns are
        # opened for a lookup that reads one stripe's few values)
        self._raw, self._pos, self._count = raw, pos, count
        self._full: np.ndarray | None = None
        # FULL: PAGE_META_DTYPE[num_pages] of each stripe whose chunk has several pages or
        # none; the row of a single page is the chunk's (synthesised when asked for)
        self._pages = pages
        self._layouts: dict[int, PageLayout] | None = None  # made on first use

    @property
    def simple(self) -> np.ndarray | None:
        """SIMPLE_CHUNK_DESC_DTYPE[num_stripes] of a SIMPLE stream (a view of the CMB, made
        on first use); None for other descriptor types."""
        if self._simple is None and self._raw is not None and self.desc_type is _SIMPLE:
            self._simple = np.frombuffer(
                self._raw, SIMPLE_CHUNK_DESC_DTYPE, count=self._count, offset=self._pos
            )
        return self._simple

    @property
    def full(self) -> np.ndarray | None:
        """FULL_CHUNK_DESC_DTYPE[num_stripes] (a view of the CMB, made on first use: a
        lookup reads the tuples of :meth:`chunk`)."""
        if self._full is None and self._raw is not None and self.desc_type is not _SIMPLE:
            self._full = np.frombuffer(
                self._raw, FULL_CHUNK_DESC_DTYPE, count=self._count, offset=self._pos
            )
        return self._full

    @property
    def chunks(self) -> list[tuple[int, ...]] | None:
        """FULL: every stripe's descriptor as a tuple (offset, length, num_values,
        chunk_min, chunk_max, null_count, num_pages, page_meta_offset, stats_flags);
        None for other descriptor types."""
        if self._raw is None or self.desc_type is _SIMPLE:
            return None
        end = self._pos + _FULL_CHUNK_DESC.size * self._count
        return list(_FULL_CHUNK_DESC.iter_unpack(self._raw[self._pos : end]))

    def chunk(self, stripe: int) -> tuple[int, ...]:
        """The FULL chunk descriptor of ``stripe`` as a tuple, in FULL_CHUNK_DESC_DTYPE order."""
        assert self._raw is not None and 0 <= stripe < self._count
        return _FULL_CHUNK_DESC.unpack_from(self._raw, self._pos + _FULL_CHUNK_DESC.size * stripe)

    def pages(self, stripe: int) -> np.ndarray:
        """PageMeta rows of ``stripe`` (synthesised for single-page chunks)."""
        assert self._pages is not None
        pages = self._pages.get(stripe)
        if pages is None:
            offset, length, values, cmin, cmax, nulls, _, _, flags = self.chunk(stripe)
            row = (length, values, cmin, cmax, nulls, flags)
            pages = self._pages[stripe] = np.array([row], PAGE_META_DTYPE)
        return pages

    def layout(self, stripe: int) -> PageLayout:
        """The chunk's :class:`PageLayout` in ``stripe`` (computed once per stripe)."""
        if self._layouts is None:
            self._layouts = {}
        lay = self._layouts.get(stripe)
        if lay is None:
            one = self.single_page(stripe)
            if one is not None:  # one page: the chunk
                offset, length, values = one
                counts = np.array([values], dtype=np.int64)
                lay = PageLayout(
                    counts,
                    np.zeros(1, dtype=np.int64),
                    counts,
                    np.array([offset], dtype=np.int64),
                    np.array([length], dtype=np.int64),
                )
                self._layouts[stripe] = lay
                return lay
            pages = self.pages(stripe)
            counts = pages["row_count"].astype(np.int64)
            sizes = pages["page_size"].astype(np.int64)
            ends = np.cumsum(counts)
            offsets = np.cumsum(sizes)
            offsets -= sizes - self.chunk(stripe)[0]
            lay = self._layouts[stripe] = PageLayout(counts, ends - counts, ends, offsets, sizes)
        return lay

    def single_page(self, stripe: int) -> tuple[int, int, int] | None:
        """(offset, size, values) of the chunk's only page; None when it has several or none."""
        offset, length, values, _, _, _, n_pages, _, _ = self.chunk(stripe)
        if n_pages != 1:
            return None
        return offset, length, values

    def page_offsets(self, stripe: int) -> np.ndarray:
        """Absolute file offset of every page of ``stripe``."""
        return self.layout(stripe).offsets


class ColumnMeta:
    """A parsed CMB (or the absence of one for an all-null column)."""

    __slots__ = ("present", "streams", "size", "_rows", "_stripe_rows")

    def __init__(
        self,
        present: bool,
        stripe_rows: bytes | None,
        streams: list[StreamDesc],
        size: int = 0,
    ) -> None:
        self.present = present
        self.streams = streams
        self.size = size
        self._rows = stripe_rows  # bytes: STRIPE_META_DTYPE rows (no Python object a stripe)
        self._stripe_rows: np.ndarray | None = None

    @property
    def stripe_rows(self) -> np.ndarray | None:
        """Rows per stripe (uint32), None without a CMB (made on first use)."""
        if self._stripe_rows is None and self._rows is not None:
            self._stripe_rows = np.frombuffer(self._rows, dtype="<u4").astype(np.uint32)
        return self._stripe_rows

    @staticmethod
    def all_null(num_streams: int) -> ColumnMeta:
        return ColumnMeta(False, None, [_NO_PAYLOAD[DescType.FORCE_NULL]] * num_streams)


def _records(
    raw: memoryview, offset: int, layout: struct.Struct, count: int, what: str
) -> list[tuple[int, ...]]:
    """``count`` records of ``layout`` at ``offset`` of the block, as tuples (struct, not
    numpy: a few records of many CMBs are read when a lookup opens a file)."""
    end = _end(raw, offset, layout.size * count, what)
    return list(layout.iter_unpack(raw[offset:end]))


def _view(
    raw: memoryview | bytes, offset: int, dtype: np.dtype, count: int, what: str
) -> np.ndarray:
    _end(raw, offset, dtype.itemsize * count, what)
    return np.frombuffer(raw, dtype=dtype, count=count, offset=offset)


def _end(raw: memoryview | bytes, offset: int, size: int, what: str) -> int:
    """The end of ``size`` bytes at ``offset`` of the block, checked to lie inside it."""
    end = offset + size
    if offset < 0 or end > len(raw):
        raise InvalidFileError(f"CMB {what} [{offset}, {end}) lies outside the block ({len(raw)})")
    return end


def parse_cmb(
    raw: memoryview,
    tree: Node,
    *,
    num_stripes: int,
    num_rows: int,
    column_index: int,
    data_start: int,
    data_end: int,
    column: str,
) -> ColumnMeta:
    """Parse and validate the CMB of one column (``raw`` is exactly its bytes).

    The small records (header, stream directory, one chunk descriptor per stripe) are
    checked as Python tuples (``tolist``): field by field access to numpy records costs
    about a microsecond each, which made this the largest cost of opening a few columns.
    """
    specs = tree.all_streams()
    kernels = native.KERNELS
    if kernels is not None:  # the checks below made in C; Python again where one fails
        checked = kernels.cmb_scan(
            raw,
            _specs_bytes(specs),
            num_stripes,
            num_rows,
            column_index,
            data_start,
            data_end,
        )
        if checked is not None:
            return _scanned(raw, checked, num_stripes)
    where = f"column {column!r}"
    hsize = CMB_HEADER_DTYPE.itemsize
    if len(raw) < hsize:
        raise InvalidFileError(f"{where}: CMB of {len(raw)} bytes is smaller than its header")
    streams_n, stripes_n, crc, col = _CMB_HEAD.unpack_from(raw)
    if zlib.crc32(raw[hsize:]) != crc:
        raise ChecksumError(f"{where}: column metadata block CRC32 mismatch")
    if col != column_index:
        raise InvalidFileError(f"{where}: the CIT points at the CMB of column {col}")
    if stripes_n != num_stripes:
        raise InvalidFileError(f"{where}: CMB has {stripes_n} stripes, footer says {num_stripes}")
    if streams_n != len(specs):
        raise InvalidFileError(
            f"{where}: CMB has {streams_n} streams, the column type needs {len(specs)}"
        )
    _end(raw, hsize, 4 * num_stripes, "stripes")  # STRIPE_META: a u32 per stripe
    if sum(struct.unpack_from(f"<{num_stripes}I", raw, hsize)) != num_rows:
        raise InvalidFileError(f"{where}: stripe row counts do not add up to {num_rows}")
    directory = _records(raw, hsize + 4 * num_stripes, _STREAM_META, len(specs), "streams")
    scanned: list[tuple[int, int, tuple[tuple[int, int, int], ...]]] = []
    for spec, (desc_code, stream_type, node, pos) in zip(specs, directory, strict=True):
        if stream_type != spec.stream_type or node != spec.node:
            raise InvalidFileError(f"{where}: stream directory does not match the column type")
        desc_type = _DESC_TYPES.get(desc_code)
        if desc_type is None:
            raise InvalidFileError(f"{where}: unknown desc type {desc_code}")
        other: list[tuple[int, int, int]] = []  # FULL chunks of other than one page
        if desc_type is _SIMPLE:
            simple = _records(raw, pos, _SIMPLE_CHUNK_DESC, num_stripes, "chunk descriptors")
            for offset, length, _ in simple:
                if 0 < length != CHUNK_ALL_NULL:
                    _check_range(offset, length, data_start, data_end, where)
        elif desc_type not in _NO_PAYLOAD:  # FULL
            chunks = _records(raw, pos, _FULL_CHUNK_DESC, num_stripes, "chunk descriptors")
            for stripe, d in enumerate(chunks):
                offset, length, values, _, _, _, n_pages, meta_offset, _ = d
                if (length == 0) != (n_pages == 0):
                    raise InvalidFileError(f"{where}: chunk of {length} bytes with {n_pages} pages")
                if length:
                    _check_range(offset, length, data_start, data_end, where)
                if n_pages > 1:
                    pages = _view(raw, meta_offset, PAGE_META_DTYPE, n_pages, "pages")
                    if (
                        int(pages["page_size"].sum(dtype=np.int64)) != length
                        or int(pages["row_count"].sum(dtype=np.int64)) != values
                    ):
                        raise InvalidFileError(
                            f"{where}: page sizes or counts disagree with the chunk"
                        )
                if n_pages != 1:  # (a single page: its meta is the chunk's, StreamDesc.pages)
                    other.append((stripe, meta_offset, n_pages))
        scanned.append((desc_code, pos, tuple(other)))
    return _scanned(raw, scanned, num_stripes)


def _scanned(
    raw: memoryview, scanned: list[tuple[int, int, tuple[tuple[int, int, int], ...]]], stripes: int
) -> ColumnMeta:
    """The :class:`ColumnMeta` of a checked CMB (by ``kernels.cmb_scan`` or
    :func:`parse_cmb`): per stream its descriptor type, position and the FULL chunks of
    other than one page (stripe, PageMeta offset, page count)."""
    # what the descriptors keep is a copy of the block: bytes, which the garbage collector
    # does not track (a memoryview is tracked, and holds a memory map open)
    data = bytes(raw)
    streams: list[StreamDesc] = []
    for code, pos, chunks in scanned:
        desc_type = _DESC_TYPES[code]
        shared = _NO_PAYLOAD.get(desc_type)
        if shared is not None:
            streams.append(shared)
        elif desc_type is _SIMPLE:
            streams.append(StreamDesc(desc_type, data, pos, stripes))
        else:
            pages = {
                s: _view(data, at, PAGE_META_DTYPE, n, "pages") if n else _NO_PAGES
                for s, at, n in chunks
            }
            streams.append(StreamDesc(desc_type, data, pos, stripes, pages))
    hsize = CMB_HEADER_DTYPE.itemsize
    return ColumnMeta(True, data[hsize : hsize + 4 * stripes], streams, size=len(raw))


def _specs_bytes(specs: list[StreamSpec]) -> bytes:
    """What ``kernels.cmb_scan`` checks the stream directory against: per stream its type
    (u8) and node (u16 LE); a flat column's (the usual one) made once."""
    if len(specs) == 2 and specs[0] is FLAT_STREAMS[0] and specs[1] is FLAT_STREAMS[1]:
        return _FLAT_SPECS
    return b"".join([_SPEC.pack(s.stream_type, s.node) for s in specs])


_SPEC = struct.Struct("<BH")
_FLAT_SPECS = b"".join([_SPEC.pack(s.stream_type, s.node) for s in FLAT_STREAMS])
_DESC_TYPES = {int(d): d for d in DescType}
_NO_PAYLOAD = {d: StreamDesc(d) for d in (DescType.USE_DEFAULT, DescType.FORCE_NULL)}
_SIMPLE = DescType.SIMPLE
_CMB_HEAD = struct.Struct("<IIII")  # CMB_HEADER_DTYPE, unpacked without numpy
_STREAM_META = struct.Struct("<BBHI")  # STREAM_META_DTYPE
_FULL_CHUNK_DESC = struct.Struct("<QIIqqIIII")  # FULL_CHUNK_DESC_DTYPE
_SIMPLE_CHUNK_DESC = struct.Struct("<QII")  # SIMPLE_CHUNK_DESC_DTYPE
_NO_PAGES = np.zeros(0, dtype=PAGE_META_DTYPE)
_NO_PAGES.flags.writeable = False


def _check_range(offset: int, length: int, start: int, end: int, where: str) -> None:
    if offset < start or offset + length > end:
        raise InvalidFileError(f"{where}: a chunk points outside the data area")


# -- building a CMB (the writer) -------------------------------------------------------


class ChunkState(enum.Enum):
    """What the writer stored of one stream in one stripe; it picks the stream's
    descriptor type in the CMB (docs/FORMAT.md §6)."""

    ALL_VALID = "all_valid"  # VALIDITY only: no bitmap stored
    ALL_NULL = "all_null"  # VALIDITY only
    EMPTY = "empty"  # OFFSETS/DATA: nothing stored (all values null, or no values)
    PAGES = "pages"


class StreamRecord:
    """Per-stripe chunk descriptors of one stream, kept by the writer until
    :func:`build_cmb` (a plain class: a writer of 1,000 columns makes 2,000 of them, and
    dataclass list factories cost)."""

    __slots__ = (
        "stream_type",
        "node",
        "states",
        "offsets",
        "lengths",
        "num_values",
        "null_counts",
        "mins",
        "maxs",
        "flags",
        "pages",
    )

    def __init__(self, stream_type: StreamType, node: int) -> None:
        self.stream_type = stream_type
        self.node = node
        self.states: list[ChunkState] = []
        self.offsets: list[int] = []
        self.lengths: list[int] = []
        self.num_values: list[int] = []
        self.null_counts: list[int] = []
        self.mins: list[int] = []
        self.maxs: list[int] = []
        self.flags: list[int] = []
        self.pages: list[np.ndarray | None] = []  # PageMeta rows per stripe


class ColumnRecord:
    """One column's :class:`StreamRecord` per stream of its node tree, in stream order."""

    def __init__(self, tree: Node) -> None:
        self.tree = tree
        self.streams = [StreamRecord(s.stream_type, s.node) for s in tree.all_streams()]
        # a dictionary's length is recorded by its values node's VALIDITY descriptors
        self.counted_nodes = (
            {n.children[0].index for n in tree.walk() if n.kind == Kind.DICTIONARY}
            if tree.children  # (a leaf has none: most columns skip the walk)
            else set()
        )


def build_cmb(index: int, col: ColumnRecord, stripe_rows: Sequence[int]) -> bytes:
    """The Column Metadata Block of column ``index`` (CIT position) of a file whose
    stripes hold ``stripe_rows`` rows; b"" when the column is all-null in every stripe
    (docs/FORMAT.md §6). Payload-relative offsets are relocated to CMB-relative ones.

    Raises:
        FermionError: the block would exceed 4 GiB.

    Example:
        >>> import pyarrow as pa
        >>> from fermion.format.metadata.layout import build_tree
        >>> col = ColumnRecord(build_tree(pa.field("x", pa.int64(), nullable=False)))
        >>> build_cmb(0, col, [])
        b''
    """
    num_stripes = len(stripe_rows)
    if num_stripes == 0:
        return b""
    top = col.streams[0] if col.streams else None  # node 0's VALIDITY, if any
    if top is None or all(s == ChunkState.ALL_NULL for s in top.states):
        dictionary_values = sum(
            sum(rec.num_values)
            for rec in col.streams
            if rec.stream_type == StreamType.VALIDITY and rec.node in col.counted_nodes
        )
        if not dictionary_values:
            return b""  # all-null in every stripe and nothing else to keep: no CMB
    metas = np.zeros(len(col.streams), dtype=STREAM_META_DTYPE)
    payload: list[bytes] = []
    payload_size = 0
    page_pool: list[np.ndarray] = []
    page_pool_size = 0
    full_descs: list[tuple[int, np.ndarray]] = []  # (payload position, descs)
    for k, rec in enumerate(col.streams):
        metas[k]["stream_type"] = rec.stream_type
        metas[k]["node"] = rec.node
        if rec.stream_type == StreamType.VALIDITY:
            counted = rec.node in col.counted_nodes
            if not counted and all(s == ChunkState.ALL_VALID for s in rec.states):
                metas[k]["desc_type"] = DescType.USE_DEFAULT
                continue
            if not counted and all(s == ChunkState.ALL_NULL for s in rec.states):
                metas[k]["desc_type"] = DescType.FORCE_NULL
                continue
            descs = np.zeros(num_stripes, dtype=SIMPLE_CHUNK_DESC_DTYPE)
            descs["offset"] = rec.offsets
            descs["length"] = [
                CHUNK_ALL_NULL if s == ChunkState.ALL_NULL else length
                for s, length in zip(rec.states, rec.lengths, strict=True)
            ]
            descs["num_values"] = rec.num_values
            metas[k]["desc_type"] = DescType.SIMPLE
            metas[k]["chunks_offset"] = payload_size  # relocated below
            payload.append(descs.tobytes())
            payload_size += descs.nbytes
            continue
        if all(s == ChunkState.EMPTY for s in rec.states):
            metas[k]["desc_type"] = DescType.USE_DEFAULT
            continue
        if rec.stream_type == StreamType.BLOOM:  # one page per stripe: SIMPLE
            descs = np.zeros(num_stripes, dtype=SIMPLE_CHUNK_DESC_DTYPE)
            descs["offset"] = rec.offsets
            descs["length"] = rec.lengths
            descs["num_values"] = rec.num_values
            metas[k]["desc_type"] = DescType.SIMPLE
            metas[k]["chunks_offset"] = payload_size
            payload.append(descs.tobytes())
            payload_size += descs.nbytes
            continue
        descs = np.zeros(num_stripes, dtype=FULL_CHUNK_DESC_DTYPE)
        descs["offset"] = rec.offsets
        descs["length"] = rec.lengths
        descs["num_values"] = rec.num_values
        descs["chunk_min"] = rec.mins
        descs["chunk_max"] = rec.maxs
        descs["null_count"] = rec.null_counts
        descs["stats_flags"] = rec.flags
        num_pages = np.array([len(p) if p is not None else 0 for p in rec.pages])
        descs["num_pages"] = num_pages
        for s, pages in enumerate(rec.pages):
            if pages is not None and len(pages) > 1:
                descs[s]["page_meta_offset"] = page_pool_size  # relocated below
                page_pool.append(pages)
                page_pool_size += pages.nbytes
        metas[k]["desc_type"] = DescType.FULL
        metas[k]["chunks_offset"] = payload_size
        full_descs.append((len(payload), descs))
        payload.append(b"")  # placeholder, filled after relocation
        payload_size += descs.nbytes
    meta_size = CMB_HEADER_DTYPE.itemsize + num_stripes * 4 + metas.nbytes
    # relocation (docs/FORMAT.md §6): payload-relative offsets become CMB-relative
    has_payload = metas["desc_type"] < DescType.USE_DEFAULT
    metas["chunks_offset"][has_payload] += meta_size
    for pos, descs in full_descs:
        multi = descs["num_pages"] > 1
        descs["page_meta_offset"][multi] += meta_size + payload_size
        payload[pos] = descs.tobytes()
    stripes = np.asarray(stripe_rows, dtype=STRIPE_META_DTYPE["row_count"])
    body = b"".join(
        [stripes.tobytes(), metas.tobytes(), *payload, *(p.tobytes() for p in page_pool)]
    )
    header = np.zeros(1, dtype=CMB_HEADER_DTYPE)
    header["num_streams"] = len(col.streams)
    header["num_stripes"] = num_stripes
    header["crc"] = crc32(body)
    header["column"] = index
    if meta_size + payload_size + page_pool_size > 0xFFFFFFFF:
        raise FermionError("a column metadata block exceeds 4 GiB; use larger stripes")
    return header.tobytes() + body
