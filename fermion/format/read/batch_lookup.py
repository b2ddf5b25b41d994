"""Batch lookups of flat fixed-width columns: all projected columns planned and read together.

A batch lookup wants a few consecutive rows of one stripe from each of many columns. Read
through the general stripe reader, every column pays its own planning, its own page
objects and its own zstd call, so 50 columns cost 50 times a fixed Python overhead. Here
the columns a lookup can read this way (flat, fixed-width, no nulls stored, numeric or
temporal; see :func:`fast_columns`) are read in phases shared by all of them:

1. the row positions within each page are computed once per distinct page layout (in batch
   mode every column's pages break at batch boundaries, so most columns share one);
2. the first bytes of every page holding wanted rows (page header, block table) are
   fetched in one coalesced request;
3. of the ZSTD_BLOCKS pages, the frames of the blocks holding the wanted values are
   fetched in one coalesced request. A BYTE_SPLIT page's EncodingHeader (in block 0) is
   checked when block 0 holds wanted values, and not fetched for itself otherwise: the
   verified page header (encoding, decoded size, value count) fixes where every plane
   lies, so the values read do not depend on it, and each frame read carries its own
   checksum (one block fewer of about five per page of a 2 KiB-block float32 column). Pages
   alike (the same wanted rows, encoding, width and block count) need the same blocks:
   those are found once, and their block tables checked as one array.
   Phases 2 and 3 copy the bytes out even of a memory-mapped file
   (:meth:`~fermion.io.source.ByteSource.read_copies`): faulting a few bytes of many
   pages into a fresh mapping, then unmapping them on close, cost more than a ``pread``;
4. every zstd block of every column is decompressed (:func:`decompress_blocks`, a
   ``decompress`` call per frame: cheaper than one ``multi_decompress_to_buffer`` call for
   all); each frame must carry zstd's content checksum (checked in its header first), which
   zstd verifies, must fill its bytes exactly and must decompress to exactly its block's
   size (a truncated frame fails);
5. each column's values are gathered from its decoded blocks into one Arrow buffer; the
   positions of the values among a page's decoded blocks are computed once for all pages
   alike (the same rows, encoding, width and blocks), and their values gathered at once:
   byte by byte from the blocks when they are few (a lookup of scattered rows wants a byte
   of each plane of a BYTE_SPLIT block), else by one NumPy index of the blocks joined.

Other pages (CRC_BLOCKS, encoded integers, one zstd frame) are read value by value by
:func:`fermion.format.read.points.fixed_values`, from the mapping or, of another source, as a
:class:`~fermion.format.read.points.SparsePage`. Every byte used is verified as a point read
verifies it: zstd content checksums, CRC_BLOCKS head and block CRC32s, or the page CRC32.

Example:
    >>> import pyarrow as pa, tempfile, os
    >>> from fermion.format.write.writer import FileWriter
    >>> from fermion.format.read.reader import FileReader
    >>> path = os.path.join(tempfile.mkdtemp(), "bl.fermion")
    >>> schema = pa.schema([("x", pa.float64()), ("y", pa.int64())])
    >>> with FileWriter(path, schema) as w:
    ...     for i in range(3):
    ...         w.append_batch(i, pa.table({"x": [float(i)] * 2, "y": [i, -i]}, schema))
    >>> r = FileReader(path)
    >>> projs = r.file_meta.projections(["x", "y"])
    >>> metas = r.file_meta.column_metas(projs)
    >>> fast_columns(projs, metas)
    [0, 1]
    >>> arrays = read_points(r.source, projs, metas, 0, np.array([2, 3]), r.options)
    >>> [a.to_pylist() for a in arrays]
    [[1.0, 1.0], [1, -1]]
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import zstandard

from fermion.errors import ChecksumError, InvalidFileError, UnsupportedVersionError
from fermion.format.encoding import encodings
from fermion.format.encoding.pages import PAGE_HEADER_SIZE
from fermion.format.encoding.stripe_dictionary import is_dictionary_chunk
from fermion.format.metadata.cmb import ColumnMeta
from fermion.format.metadata.layout import Kind, Node
from fermion.format.metadata.structs import (
    ENCODING_HEADER_DTYPE,
    Compression,
    DescType,
    Encoding,
    EncodingFlag,
    StreamType,
)
from fermion.format.options import ReadOptions
from fermion.format.read.plan import Projection
from fermion.format.read.points import (
    PagePayload,
    SparsePage,
    binary_values,
    fixed_values,
    list_value_ranges,
)
from fermion.io.source import ByteSource

__all__ = [
    "binary_columns",
    "decompress_blocks",
    "fast_columns",
    "list_columns",
    "read_binary_points",
    "read_list_points",
    "read_points",
]

_HEAD = struct.Struct("<IBBBBII")  # PageHeader: crc, encoding, compression, flags, -, size, n
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHECKSUM_FLAG = 4  # Frame_Header_Descriptor: Content_Checksum_flag
_TABLE = struct.Struct("<II")  # BlockTable: block_size, num_blocks
_FRAME_ENDS_AT = PAGE_HEADER_SIZE + _TABLE.size  # then a u32 frame end per block
_H = encodings.HEADER_SIZE
_ZSTD_BLOCKS = int(Compression.ZSTD_BLOCKS)
_PLAIN = int(Encoding.PLAIN)
_BYTE_SPLIT = int(Encoding.BYTE_SPLIT)
_LENGTHS = int(EncodingFlag.LENGTHS)
_KNOWN_ENCODINGS = {int(e) for e in Encoding}
_KNOWN_COMPRESSIONS = {int(c) for c in Compression}
# the first bytes copied of each page of a mapped file: an OS page costs about what 512 B
# do, and holds the block table of a page of up to 1,000 blocks (a 428 KB page of 2 KiB
# batch-mode blocks has an 860 B table, which 512 B would leave for a second read)
_MAPPED_GRAIN = 4096


def _plain_fixed(node: Node, m: ColumnMeta) -> bool:
    """A fixed-width numeric or temporal node (no extension type) storing no nulls."""
    t = node.type
    if node.kind != Kind.FIXED or isinstance(t, pa.BaseExtensionType) or not _numeric(t):
        return False
    vspec = node.stream(StreamType.VALIDITY)
    return vspec is not None and m.streams[vspec.index].desc_type == DescType.USE_DEFAULT


def _numeric(t: pa.DataType) -> bool:
    """An integer, floating point or temporal type (decided once per type id: asked of
    every column a lookup opens)."""
    ok = _NUMERIC_IDS.get(t.id)
    if ok is None:
        ok = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
        _NUMERIC_IDS[t.id] = ok
    return ok


_NUMERIC_IDS: dict[int, bool] = {}


def _full(node: Node, m: ColumnMeta, stream: StreamType) -> bool:
    spec = node.stream(stream)
    return spec is not None and m.streams[spec.index].desc_type == DescType.FULL


def fast_columns(projs: Sequence[Projection], metas: Sequence[ColumnMeta]) -> list[int]:
    """Positions of the projections :func:`read_points` reads: whole flat fixed-width
    numeric or temporal columns (not extension types) whose validity stream stores no
    nulls in any stripe and whose values are FULL chunks."""
    return [
        j
        for j, (p, m) in enumerate(zip(projs, metas, strict=True))
        if m.present
        and p.flat
        and not p.dictionary
        and _plain_fixed(p.tree, m)
        and _full(p.tree, m, StreamType.DATA)
    ]


def list_columns(projs: Sequence[Projection], metas: Sequence[ColumnMeta]) -> list[int]:
    """Positions of the projections :func:`read_list_points` may read: whole list (or
    large list) columns of fixed-width numeric or temporal values, no nulls stored at
    either level, offsets and values in FULL chunks."""
    out = []
    for j, (p, m) in enumerate(zip(projs, metas, strict=True)):
        tree = p.tree
        if not m.present or tree.kind != Kind.LIST or p.selected is not None:
            continue
        if tree.type != tree.storage or len(tree.children) != 1:
            continue
        child = tree.children[0]
        vspec = tree.stream(StreamType.VALIDITY)
        if vspec is None or m.streams[vspec.index].desc_type != DescType.USE_DEFAULT:
            continue
        if (
            _plain_fixed(child, m)
            and _full(tree, m, StreamType.OFFSETS)
            and _full(child, m, StreamType.DATA)
        ):
            out.append(j)
    return out


_BINARY_TYPES = (pa.string(), pa.binary(), pa.large_string(), pa.large_binary())


def binary_columns(projs: Sequence[Projection], metas: Sequence[ColumnMeta]) -> list[int]:
    """Positions of the projections :func:`read_binary_points` may read: whole flat
    string or binary columns (not views, not extension types, not read as dictionaries)
    storing no nulls, offsets and values in FULL chunks."""
    out = []
    for j, (p, m) in enumerate(zip(projs, metas, strict=True)):
        tree = p.tree
        if not m.present or not p.flat or p.dictionary or p.selected is not None:
            continue
        if tree.kind != Kind.BINARY or tree.type != tree.storage or tree.type not in _BINARY_TYPES:
            continue
        vspec = tree.stream(StreamType.VALIDITY)
        if vspec is None or m.streams[vspec.index].desc_type != DescType.USE_DEFAULT:
            continue
        if _full(tree, m, StreamType.OFFSETS) and _full(tree, m, StreamType.DATA):
            out.append(j)
    return out


def read_binary_points(
    source: ByteSource,
    p: Projection,
    m: ColumnMeta,
    s: int,
    rows: np.ndarray,
    options: ReadOptions,
) -> pa.Array | None:
    """The values at ``rows`` (sorted, unique, within stripe ``s``) of a column listed by
    :func:`binary_columns`, each page pair (OFFSETS, DATA) holding rows read value by
    value by :func:`fermion.format.read.points.binary_values`, without the stripe reader's
    planning. None: the chunk has a stripe dictionary, or its OFFSETS and DATA pages are
    not pairs holding the same rows (a stripe of empty values has no DATA page); the
    caller reads it another way.

    Raises:
        InvalidFileError: the pages disagree with the metadata or with each other.
        ChecksumError: a checksum covering bytes used does not match.
    """
    rows = np.asarray(rows, dtype=np.int64)
    tree = p.tree
    ospec, dspec = tree.stream(StreamType.OFFSETS), tree.stream(StreamType.DATA)
    assert ospec is not None and dspec is not None
    odesc, ddesc = m.streams[ospec.index], m.streams[dspec.index]
    if not len(rows) or is_dictionary_chunk(ddesc.pages(s)["row_count"]):
        return None
    where = f"{source.name}: column {p.info.field.name!r}, stripe {s}"
    olay, dlay = odesc.layout(s), ddesc.layout(s)
    if not np.array_equal(olay.counts, dlay.counts):
        # not page pairs: e.g. a stripe of only empty values has no DATA page at all; the
        # stripe reader reads (and checks) such a chunk
        return None
    if int(rows[-1]) >= int(dlay.ends[-1]):
        raise InvalidFileError(f"{where}: pages hold {int(dlay.ends[-1])} rows")
    gap = options.coalesce_gap if source.mapped else min(options.coalesce_gap, SparsePage.MAX_GAP)

    def page(offset: int, size: int) -> memoryview | SparsePage:
        if source.mapped:
            return source.read(offset, size)
        return SparsePage(source, offset, size, source.read(offset, min(size, 512)), gap)

    lengths, parts = [], []
    width = tree.byte_width
    for k, r, _ in _split(rows, dlay.starts, dlay.ends):
        off = int(dlay.offsets[k])
        got, data = binary_values(
            page(int(olay.offsets[k]), int(olay.sizes[k])),
            page(off, int(dlay.sizes[k])),
            r,
            int(dlay.counts[k]),
            width,
            f"{where}, page at offset {off}",
            None,
            options.verify_checksums,
        )
        lengths.append(got)
        parts.append(data)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    dtype = np.dtype("<i4") if width == 4 else np.dtype("<i8")
    if int(offsets[-1]) > np.iinfo(dtype).max:
        raise InvalidFileError(f"{where}: selected values exceed the offset width")
    data = b"".join(parts)
    return pa.Array.from_buffers(
        tree.type, len(rows), [None, pa.py_buffer(offsets.astype(dtype)), pa.py_buffer(data)]
    )


class _Page:
    """One page of one column holding wanted rows, through the phases of a lookup."""

    __slots__ = (
        "col",
        "offset",
        "size",
        "values",
        "rows",
        "run",
        "label",
        "encoding",
        "decoded",
        "blocks",
        "block_size",
        "num_blocks",
        "slot",
    )

    def __init__(
        self,
        col: int,
        offset: int,
        size: int,
        values: int,
        rows: np.ndarray,
        run: tuple[int, int] | None,
        label: tuple[str, str, int],
    ) -> None:
        self.col = col
        self.offset = offset
        self.size = size
        self.values = values
        self.rows = rows  # wanted rows within the page: sorted, unique
        self.run = run  # (first, last) when the rows are consecutive
        self.label = label  # (file, column, stripe): error messages only
        self.encoding = 0
        self.decoded = 0
        self.blocks: list[int] | None = None  # zstd blocks to decompress, sorted
        self.block_size = 0  # a ZSTD_BLOCKS page read by block (else 0: value by value)
        self.num_blocks = 0
        self.slot = 0  # index of its first block among all blocks decompressed

    @property
    def where(self) -> str:
        """The page, for error messages (built only when one is raised)."""
        name, column, s = self.label
        return f"{name}: column {column!r}, stripe {s}, page at offset {self.offset}"


def read_points(
    source: ByteSource,
    projs: Sequence[Projection],
    metas: Sequence[ColumnMeta],
    s: int,
    rows: np.ndarray,
    options: ReadOptions,
) -> list[pa.Array]:
    """The values at ``rows`` (sorted, unique, within stripe ``s``) of each projection
    (every one listed by :func:`fast_columns`), as Arrow arrays.

    Raises:
        InvalidFileError: a page, block table or frame disagrees with the metadata.
        ChecksumError: a checksum covering bytes used does not match.
    """
    rows = np.asarray(rows, dtype=np.int64)
    verify = options.verify_checksums
    name = source.name
    pages: list[_Page] = []
    # per distinct page layout (a single page: its value count), the pages holding rows and
    # the rows within each; in batch mode most columns share one layout
    cached: dict[object, list[tuple[int, np.ndarray, tuple[int, int] | None]]] = {}
    data_stream = StreamType.DATA
    for j, (p, m) in enumerate(zip(projs, metas, strict=True)):
        dspec = p.tree.stream(data_stream)
        assert dspec is not None
        desc = m.streams[dspec.index]
        column = p.info.field.name
        one = desc.single_page(s)
        if one is not None:  # the usual case in batch mode: no PageLayout arrays needed
            offset, size, count = one
            split = cached.get(count)
            if split is None:
                if len(rows) and int(rows[-1]) >= count:
                    raise InvalidFileError(f"{name}: column {column!r}: pages hold {count} rows")
                split = cached[count] = _split_one(rows, count)
            for _, r, run in split:
                pages.append(_Page(j, offset, size, count, r, run, (name, column, s)))
            continue
        if desc.chunk(s)[6] == 0:  # num_pages
            if len(rows):
                raise InvalidFileError(f"{name}: column {column!r} has no pages")
            continue
        lay = desc.layout(s)
        key = lay.counts.tobytes()
        split = cached.get(key)
        if split is None:
            split = cached[key] = _split(rows, lay.starts, lay.ends)
            if len(rows) and int(rows[-1]) >= int(lay.ends[-1]):
                raise InvalidFileError(
                    f"{name}: column {column!r}: pages hold {int(lay.ends[-1])} rows"
                )
        for k, r, run in split:
            off = int(lay.offsets[k])
            pages.append(
                _Page(j, off, int(lay.sizes[k]), int(lay.counts[k]), r, run, (name, column, s))
            )
    mapped = source.mapped
    gap = min(options.coalesce_gap, SparsePage.MAX_GAP)
    # phase 2: page headers and block tables: the first bytes of every page, copied out
    # even of a mapped file (ByteSource.read_copies)
    grain = _MAPPED_GRAIN if mapped else SparsePage.GRAIN
    heads = list(
        source.read_copies([(pg.offset, min(pg.size, grain)) for pg in pages], max_gap=gap)
    )
    need = [_plan_page(pg, heads[i], projs[pg.col].tree.byte_width) for i, pg in enumerate(pages)]
    more = [i for i, n in enumerate(need) if n > len(heads[i])]
    if more:  # a block table past the first bytes read: read up to its end
        longer = source.read_copies([(pages[i].offset, need[i]) for i in more], max_gap=gap)
        for i, view in zip(more, longer, strict=True):
            heads[i] = view
            _plan_page(pages[i], view, projs[pages[i].col].tree.byte_width)
    # phase 3: the frames of the blocks the rows need, of every page at once; blocked pages
    # alike (the same wanted rows, encoding, width, value count and blocks: in batch mode
    # most columns) are planned together, their block tables checked as one array
    alike: dict[tuple[int, ...], list[int]] = {}
    for i, pg in enumerate(pages):
        if pg.block_size:
            width = projs[pg.col].tree.byte_width
            same = (id(pg.rows), pg.encoding, width, pg.values, pg.block_size, pg.num_blocks)
            alike.setdefault(same, []).append(i)
    # (value width, page indices, pages) of each group
    groups = [(k[2], members, [pages[i] for i in members]) for k, members in alike.items()]
    sizes: list[int] = []
    requests: list[tuple[int, int]] = []
    known: dict[int, bytes | memoryview] = {}  # frames in the bytes phase 2 read, by slot
    count = 0  # frames of all groups
    for width, members, group in groups:
        begins, ends = _plan_group(group, [heads[i] for i in members], width)
        per = begins.shape[1]
        for k, pg in enumerate(group):
            pg.slot = count + k * per
        lengths = (ends - begins).ravel()
        at = (begins + np.array([pg.offset for pg in group], dtype=np.int64)[:, None]).ravel()
        read = np.array([len(heads[i]) for i in members], dtype=np.int64)[:, None]
        inside = (ends <= read).ravel()  # (block 0 of a page, when wanted: in its head)
        if inside.any():
            for f in np.flatnonzero(inside).tolist():
                k, b = divmod(f, per)
                known[count + f] = heads[members[k]][int(begins[k, b]) : int(ends[k, b])]
            rest = np.flatnonzero(~inside)
            at, lengths = at[rest], lengths[rest]
        requests += zip(at.tolist(), lengths.tolist(), strict=True)
        count += begins.size
        first = group[0]
        bs, decoded = first.block_size, first.decoded
        assert first.blocks is not None
        sizes += [min(bs, decoded - k * bs) for k in first.blocks] * len(group)
    frames = source.read_copies(requests, max_gap=gap)
    if known:  # (rare: the usual frames are all in the read, in slot order)
        fetched = iter(frames)
        frames = [known[k] if k in known else next(fetched) for k in range(count)]
    bad = [
        k
        for k, frame in enumerate(frames)
        if len(frame) < 6 or frame[:4] != _ZSTD_MAGIC or not frame[4] & _CHECKSUM_FLAG
    ]
    if bad:
        k = bad[0]
        pg = max((p for p in pages if p.block_size and p.slot <= k), key=lambda p: p.slot)
        raise InvalidFileError(f"{pg.where}: zstd block frame carries no content checksum")
    # phase 4: every zstd block of every page
    where = f"{name}: stripe {s}"
    buf = _Decoded(decompress_blocks(frames, sizes, where), sizes)
    bases = buf.bases
    # phase 5: each page's values, then each column's array; the values of pages alike lie
    # at the same positions from their first decoded block: one gather serves them all
    values: list[bytes | memoryview | pa.Buffer] = [b""] * len(pages)
    for width, members, group in groups:
        first = group[0]
        starts = bases[[pg.slot for pg in group]]
        if first.encoding == _BYTE_SPLIT and first.blocks and first.blocks[0] == 0:
            _check_split_headers(group, buf, starts, width)  # read anyway: checked
        at = _value_bytes(first, width)
        got = buf.take(starts[:, None] + at[None, :])  # a row of value bytes per page
        # slices of one Arrow buffer: no memoryview a page (the GC tracks those)
        whole, n = pa.py_buffer(got), got.shape[1]
        for k, i in enumerate(members):
            values[i] = whole.slice(k * n, n)
    for i, pg in enumerate(pages):
        if pg.block_size:
            continue
        page: memoryview | SparsePage
        tree = projs[pg.col].tree
        if len(heads[i]) == pg.size:  # phase 2 read all of it
            page = memoryview(heads[i])
        elif mapped:  # a view of the mapping: touched where used
            page = source.read(pg.offset, pg.size)
        else:
            page = SparsePage(source, pg.offset, pg.size, heads[i], gap)
        domain = encodings.int_domain(tree.storage)
        width = tree.byte_width
        values[i] = fixed_values(page, pg.rows, pg.values, width, domain, pg.where, verify)
    by_col: list[list[bytes | memoryview | pa.Buffer]] = [[] for _ in projs]
    for i, pg in enumerate(pages):
        by_col[pg.col].append(values[i])
    out = []
    for j, p in enumerate(projs):
        data = by_col[j][0] if len(by_col[j]) == 1 else b"".join(by_col[j])
        if len(data) != len(rows) * p.tree.byte_width:
            raise InvalidFileError(f"{name}: column {p.info.field.name!r}: values missing")
        values_buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
        out.append(pa.Array.from_buffers(p.tree.type, len(rows), [None, values_buf]))
    return out


def _split(
    rows: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> list[tuple[int, np.ndarray, tuple[int, int] | None]]:
    """(page, rows within it, (first, last) if consecutive) for each page holding rows."""
    if not len(rows):
        return []
    if int(rows[-1]) - int(rows[0]) + 1 == len(rows):  # one run of consecutive rows
        first = int(ends.searchsorted(rows[0], side="right"))
        last = int(ends.searchsorted(rows[-1], side="right"))
        if first == last:
            a = int(rows[0]) - int(starts[first])
            return [(first, rows - int(starts[first]), (a, a + len(rows) - 1))]
    page_of = ends.searchsorted(rows, side="right")
    cut = np.flatnonzero(page_of[1:] != page_of[:-1]) + 1
    bounds = [0, *cut.tolist(), len(rows)]
    out = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        k = int(page_of[a])
        r = rows[a:b] - starts[k]
        run = (int(r[0]), int(r[-1])) if int(r[-1]) - int(r[0]) + 1 == len(r) else None
        out.append((k, r, run))
    return out


def _split_one(
    rows: np.ndarray, count: int
) -> list[tuple[int, np.ndarray, tuple[int, int] | None]]:
    """:func:`_split` for a chunk of one page of ``count`` values (rows checked below it)."""
    if not len(rows):
        return []
    first, last = int(rows[0]), int(rows[-1])
    return [(0, rows, (first, last) if last - first + 1 == len(rows) else None)]


def _plan_page(pg: _Page, head: bytes | memoryview, width: int) -> int:
    """Validate a page's header (and a blocked page's BlockTable header) from its first
    bytes; returns the bytes the header and tables need (more than ``head`` holds: call
    again with more). A ZSTD_BLOCKS page of PLAIN or BYTE_SPLIT values gets its
    ``block_size``; another is read value by value by
    :func:`fermion.format.read.points.fixed_values` (CRC_BLOCKS: by block)."""
    if pg.size < PAGE_HEADER_SIZE or len(head) < PAGE_HEADER_SIZE:
        raise InvalidFileError(f"{pg.where}: page of {pg.size} bytes is shorter than its header")
    _, enc, comp, _, _, size, n = _HEAD.unpack_from(head)
    if n != pg.values:
        raise InvalidFileError(f"{pg.where}: page holds {n} values, metadata says {pg.values}")
    if enc not in _KNOWN_ENCODINGS or comp not in _KNOWN_COMPRESSIONS:
        raise UnsupportedVersionError(f"{pg.where}: unknown encoding {enc} or compression {comp}")
    pg.encoding, pg.decoded = enc, size
    plain = pg.values * width
    if size > plain + _H:
        raise InvalidFileError(f"{pg.where}: page decodes to {size} bytes, expected {plain}")
    fast = (enc == _PLAIN and size == plain) or (enc == _BYTE_SPLIT and size == plain + _H)
    if comp != _ZSTD_BLOCKS or not fast:
        return PAGE_HEADER_SIZE
    if pg.size < _FRAME_ENDS_AT:
        raise InvalidFileError(f"{pg.where}: blocked page shorter than its block table")
    if len(head) < _FRAME_ENDS_AT:
        return _FRAME_ENDS_AT
    block_size, num_blocks = _TABLE.unpack_from(head, PAGE_HEADER_SIZE)
    if block_size == 0 or num_blocks != -(-size // block_size) or num_blocks == 0:
        raise InvalidFileError(
            f"{pg.where}: {num_blocks} blocks of {block_size} bytes cannot hold {size} bytes"
        )
    frames_at = _FRAME_ENDS_AT + 4 * num_blocks
    if frames_at > pg.size:
        raise InvalidFileError(f"{pg.where}: block table runs past the page")
    pg.block_size, pg.num_blocks = block_size, num_blocks
    return frames_at


def _plan_group(
    group: Sequence[_Page], heads: Sequence[bytes | memoryview], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """The page-relative ``[begins, ends)`` of the frames of the blocks each page of
    ``group`` needs (int64 arrays, a row per page, a column per block), pages alike (same
    wanted rows, encoding, width, value count, block size and block count: the same
    blocks). Sets each page's ``blocks``. Every block table is checked whole, as a full
    read checks it, not only the ends used: non-decreasing, the last one the end of the
    frames (each frame is then checked to fill its range exactly by zstd)."""
    first = group[0]
    nb = first.num_blocks
    frames_at = _FRAME_ENDS_AT + 4 * nb
    raw = b"".join([head[_FRAME_ENDS_AT:frames_at] for head in heads])
    table = np.frombuffer(raw, dtype="<u4").reshape(len(group), nb).astype(np.int64)
    room = np.array([pg.size - frames_at for pg in group], dtype=np.int64)
    bad = (table[:, -1] != room) | (table[:, 1:] < table[:, :-1]).any(axis=1)
    if bad.any():
        where = group[int(bad.argmax())].where
        raise InvalidFileError(f"{where}: block frame ends are inconsistent")
    blocks = _blocks_needed(first, width, first.block_size)
    for pg in group:
        pg.blocks = blocks
    wanted = np.asarray(blocks, dtype=np.int64)
    ends = table[:, wanted] + frames_at
    begins = np.where(wanted > 0, table[:, np.maximum(wanted - 1, 0)], 0) + frames_at
    return begins, ends


def _value_ranges(pg: _Page, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Payload byte ranges ``[begins, ends)`` holding the wanted values (a BYTE_SPLIT
    page: a byte per plane and value, value by value)."""
    rows = pg.rows
    if pg.encoding == _PLAIN:
        return rows * width, (rows + 1) * width
    planes = _H + np.arange(width, dtype=np.int64) * pg.values
    at = (planes[None, :] + rows[:, None]).ravel()
    return at, at + 1


def _blocks_needed(pg: _Page, width: int, bs: int) -> list[int]:
    """The blocks holding the wanted values, sorted (a BYTE_SPLIT page's header only if
    its block 0 holds some: see phase 3 of the module docstring)."""
    if pg.run is None:
        begins, ends = _value_ranges(pg, width)
        return np.unique(np.concatenate([begins // bs, (ends - 1) // bs])).tolist()
    r0, r1 = pg.run
    if pg.encoding == _PLAIN:
        ranges = [(r0 * width, (r1 + 1) * width)]
    else:
        v = pg.values
        ranges = [(_H + j * v + r0, _H + j * v + r1 + 1) for j in range(width)]
    return sorted({k for a, b in ranges for k in range(a // bs, (b - 1) // bs + 1)})


def _check_split_headers(
    group: Sequence[_Page], buf: _Decoded, bases: np.ndarray, width: int
) -> None:
    """Check the EncodingHeader of each blocked BYTE_SPLIT page of ``group`` (pages alike),
    in its block 0, decoded at ``bases`` of ``buf``."""
    raw = buf.take(bases[:, None] + np.arange(_H, dtype=np.int64)[None, :])
    head = raw.view(ENCODING_HEADER_DTYPE)[:, 0]  # (a fresh C-ordered array: viewable)
    count, out_width, flags = head["count"], head["out_width"], head["flags"]
    bad = (count != group[0].values) | (out_width != width) | (flags & _LENGTHS != 0)
    if bad.any():
        k = int(bad.argmax())
        if int(count[k]) != group[k].values:
            raise InvalidFileError(f"{group[k].where}: encoded page holds {int(count[k])} values")
        raise InvalidFileError(f"{group[k].where}: BYTE_SPLIT payload has the wrong size")


def decompress_blocks(
    frames: Sequence[bytes | memoryview], sizes: Sequence[int], where: str
) -> list[bytes]:
    """Each zstd frame decompressed on its own, to exactly its block's size.

    A frame must fill its bytes exactly (zstd refuses trailing bytes) and decode to
    ``sizes[k]`` bytes; zstd verifies the content checksum every frame carries (the caller
    checks the flag). One ``decompress`` call a frame costs less than one
    ``multi_decompress_to_buffer`` call for all of them, and no buffer of every decoded
    block is made: the few values wanted are gathered from the blocks (:class:`_Decoded`).

    Raises:
        ChecksumError: a frame's content checksum does not match.
        InvalidFileError: a frame is corrupt or decodes to another size.

    Example:
        >>> comp = zstandard.ZstdCompressor(write_checksum=True)
        >>> decompress_blocks([comp.compress(b"ab" * 8), comp.compress(b"c")], [16, 1], "p")
        [b'abababababababab', b'c']
    """
    decompress = _decompressor().decompress
    try:
        out = [
            decompress(frame, max_output_size=size, allow_extra_data=False)
            for frame, size in zip(frames, sizes, strict=True)
        ]
    except zstandard.ZstdError as exc:
        if "checksum" in str(exc).lower():
            raise ChecksumError(f"{where}: zstd content checksum mismatch") from None
        raise InvalidFileError(f"{where}: corrupt zstd block: {exc}") from None
    if any(len(block) != size for block, size in zip(out, sizes, strict=True)):
        raise InvalidFileError(f"{where}: a zstd block decompressed to the wrong size")
    return out


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's zstd decompressor (a decompression context is not shared by threads)."""
    found: zstandard.ZstdDecompressor | None = getattr(_LOCAL, "decompressor", None)
    if found is None:
        found = _LOCAL.decompressor = zstandard.ZstdDecompressor()
    return found


_LOCAL = threading.local()
#: Wanted bytes below 1 / this of the decoded bytes are picked block by block; more are
#: picked from one buffer of all the blocks (a copy of them all).
_SPARSE_PICK = 16


class _Decoded:
    """Decoded zstd blocks, addressed as if back to back (block ``k`` at ``bases[k]``)."""

    def __init__(self, blocks: list[bytes], sizes: Sequence[int]) -> None:
        self.blocks = blocks
        self.bases = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self._whole: np.ndarray | None = None

    def take(self, at: np.ndarray) -> np.ndarray:
        """The bytes at positions ``at`` (any shape, all within the blocks), as uint8."""
        total = int(self.bases[-1])
        if self._whole is None and at.size * _SPARSE_PICK < total:
            flat = at.ravel()
            block = self.bases.searchsorted(flat, side="right") - 1
            within = (flat - self.bases[block]).tolist()
            blocks = self.blocks
            picked = bytes([blocks[b][i] for b, i in zip(block.tolist(), within, strict=True)])
            return np.frombuffer(picked, dtype=np.uint8).reshape(at.shape)
        if self._whole is None:
            self._whole = np.frombuffer(b"".join(self.blocks), dtype=np.uint8)
        return self._whole[at]


def _value_bytes(pg: _Page, width: int) -> np.ndarray:
    """Where the bytes of the wanted values of a blocked page lie among its decoded
    blocks (back to back, all but the page's last one whole), value by value: positions
    from the first decoded block."""
    assert pg.blocks is not None
    bs = pg.block_size
    begins = _value_ranges(pg, width)[0]
    if pg.encoding == _BYTE_SPLIT:  # a byte per plane and value
        at = begins
    else:
        at = (begins[:, None] + np.arange(width, dtype=np.int64)[None, :]).ravel()
    blocks = np.asarray(pg.blocks, dtype=np.int64)
    return blocks.searchsorted(at // bs) * bs + at % bs


def read_list_points(
    source: ByteSource,
    p: Projection,
    m: ColumnMeta,
    s: int,
    rows: np.ndarray,
    options: ReadOptions,
) -> pa.Array | None:
    """The lists at ``rows`` (sorted, unique, within stripe ``s``) of a column listed by
    :func:`list_columns`, reading value by value: of the OFFSETS pages holding the rows,
    only the value lengths before and at each row (FOR-encoded lengths, with checkpoints
    when written), then of the child's DATA pages only the values those lists hold. None:
    the offsets are stored another way (the caller reads the column whole).

    Raises:
        InvalidFileError: the pages disagree with the metadata or with each other.
        ChecksumError: a checksum covering bytes used does not match.
    """
    rows = np.asarray(rows, dtype=np.int64)
    tree = p.tree
    child = tree.children[0]
    ospec, dspec = tree.stream(StreamType.OFFSETS), child.stream(StreamType.DATA)
    assert ospec is not None and dspec is not None
    odesc, ddesc = m.streams[ospec.index], m.streams[dspec.index]
    assert odesc.full is not None and ddesc.full is not None
    if not int(odesc.full["num_pages"][s]) or not len(rows):
        return None
    verify = options.verify_checksums
    gap = options.coalesce_gap if source.mapped else min(options.coalesce_gap, SparsePage.MAX_GAP)
    where = f"{source.name}: column {p.info.field.name!r}, stripe {s}"
    width = tree.byte_width

    def page(offset: int, size: int) -> memoryview | SparsePage:
        if source.mapped:
            return source.read(offset, size)
        return SparsePage(source, offset, size, source.read(offset, min(size, 512)), gap)

    olay = odesc.layout(s)
    if int(rows[-1]) >= int(olay.ends[-1]):
        raise InvalidFileError(f"{where}: offsets pages hold {int(olay.ends[-1])} rows")
    totals: dict[int, int] = {}  # child values under each OFFSETS page

    def lengths_of(k: int, at: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        off, values = int(olay.offsets[k]), int(olay.counts[k])
        payload = PagePayload(
            page(off, int(olay.sizes[k])),
            values,
            (values + 1) * width,
            f"{where}, page at offset {off}",
            verify,
        )
        return list_value_ranges(payload, at, values, width)

    begins, ends = [], []
    for k, r, _ in _split(rows, olay.starts, olay.ends):
        found = lengths_of(k, r)
        if found is None:
            return None
        base = 0
        for j in range(k):  # the values under the stripe's earlier OFFSETS pages
            if j not in totals:
                last = lengths_of(j, np.array([int(olay.counts[j]) - 1]))
                if last is None:
                    return None
                totals[j] = int(last[1][0])
            base += totals[j]
        begins.append(found[0] + base)
        ends.append(found[1] + base)
    b, e = np.concatenate(begins), np.concatenate(ends)
    lengths = e - b
    total = int(lengths.sum())
    # the child positions of the wanted lists' values, in order
    idx = np.arange(total, dtype=np.int64) + np.repeat(b - (np.cumsum(lengths) - lengths), lengths)
    dlay = ddesc.layout(s)
    if total and (int(idx[-1]) >= int(dlay.ends[-1]) or int(b.min()) < 0):
        raise InvalidFileError(f"{where}: list offsets point past the values")
    parts = []
    domain = encodings.int_domain(child.storage)
    for k, r, _ in _split(idx, dlay.starts, dlay.ends):
        off = int(dlay.offsets[k])
        parts.append(
            fixed_values(
                page(off, int(dlay.sizes[k])),
                r,
                int(dlay.counts[k]),
                child.byte_width,
                domain,
                f"{where}, page at offset {off}",
                verify,
            )
        )
    values = pa.Array.from_buffers(child.type, total, [None, pa.py_buffer(b"".join(parts))])
    offsets = np.zeros(len(rows) + 1, dtype=f"<i{width}")
    if total > np.iinfo(offsets.dtype).max:
        raise InvalidFileError(f"{where}: selected values exceed the offset width")
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(
        tree.type, len(rows), [None, pa.py_buffer(offsets)], children=[values]
    )
