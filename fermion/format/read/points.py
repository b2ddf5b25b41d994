"""Point reads: the values at a few rows of a page, without decoding the whole page.

``take`` of a thousand rows from a large file touches almost every page, so decoding those
pages whole costs as much as a scan. Instead, for a flat fixed-width or binary column:

- an uncompressed page is read at value level: PLAIN values by offset, bit-packed FOR and
  INT_DICTIONARY values by :func:`fermion.format.encoding.bitpack.gather`, BYTE_SPLIT values plane
  by plane, CONSTANT from its header; FLOAT_DECIMAL values from their integers (read as
  those of an integer page) and the page's exceptions;
- of a ZSTD_BLOCKS page only the blocks holding the wanted bytes are decompressed (each
  checked by its zstd content checksum); a single-frame ZSTD page is decompressed whole;
- DELTA pages (and FOR-encoded string lengths) decode only up to the last wanted row;
  RLE pages are decoded whole, then selected.

Binary columns decode their OFFSETS page whole (offsets need prefix sums) and read only
the wanted values' bytes of the DATA page. Every byte used is verified (with
``verify_checksums``): of a CRC_BLOCKS page (format 1.5) the header CRC and the CRC32 of
each block read from, of a ZSTD_BLOCKS page each decompressed block's zstd content
checksum, of any other page the whole page's CRC32; every header, size and index is
validated as well.

Example:
    >>> import numpy as np
    >>> from fermion.format.encoding.pages import encode_page
    >>> from fermion.format.encoding.encodings import encode_ints
    >>> values = np.arange(1000, dtype=np.int64) * 7
    >>> enc, payload = encode_ints(values, out_width=8, compressed=False)
    >>> page = memoryview(encode_page(payload, num_values=1000, codec=0, encoding=enc))
    >>> got = fixed_values(page, np.array([3, 999]), 1000, 8, (8, True), "p")
    >>> np.frombuffer(got, dtype="<i8").tolist()
    [21, 6993]
"""

from __future__ import annotations

import numpy as np

from fermion.errors import InvalidFileError
from fermion.format import native
from fermion.format.encoding import bitpack, encodings
from fermion.format.encoding.pages import (
    BLOCKED,
    PAGE_HEADER_SIZE,
    BlockedBody,
    CrcBlockedBody,
    check_page_crc,
    decode_payload,
    decompress_body,
    is_derived,
    read_page_head,
    units_of,
)
from fermion.format.encoding.registry import (
    ENCODINGS,
    check_plain_size,
    gather_ranges,
    ints_at,
)
from fermion.format.encoding.stripe_dictionary import (
    IndexPage,
    StripeDictionaryPage,
    check_entries,
    check_header,
    indices_layout,
)
from fermion.format.metadata.structs import (
    BLOCK_TABLE_DTYPE,
    DICT_BLOCK_TABLE_DTYPE,
    Compression,
    Encoding,
    EncodingFlag,
)
from fermion.io.source import ByteSource

__all__ = [
    "PagePayload",
    "SparsePage",
    "binary_values",
    "fixed_values",
    "gather_ranges",
    "list_value_ranges",
]

_H = encodings.HEADER_SIZE
_LENGTHS = int(EncodingFlag.LENGTHS)  # plain ints: IntFlag operators cost microseconds
_CHECKPOINTS = int(EncodingFlag.CHECKPOINTS)


class SparsePage:
    """A page of a source that is not memory-mapped (pread, fsspec), fetched in pieces as
    a point read needs them: its header and block tables first, then only the blocks or
    byte ranges of the wanted values (docs/FORMAT.md §9, sub-page IO).

    ``head`` holds the page's first bytes, already read (:attr:`GRAIN` bytes: a page's
    header and block table start). Bytes are fetched in units of :attr:`UNIT` bytes, the
    ranges of one call coalesced into few requests.

    Example:
        >>> from fermion.io.source import open_source
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "p.bin")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(bytes(range(256)) * 16)
        >>> src = open_source(path)
        >>> page = SparsePage(src, 0, 4096, src.read(0, 16), max_gap=0)
        >>> page.fetch(np.array([1000]), np.array([1004]))
        >>> page.view[1000:1004].tolist(), src.stats.bytes_read
        ([232, 233, 234, 235], 32)
    """

    GRAIN = 512  # the first bytes read of each page, with the other pages' (one request)
    UNIT = 16  # then: ranges are widened to whole units (bookkeeping of what is present)
    MAX_GAP = 256  # ranges closer than this are read in one request (a round trip costs
    # more than a few KiB; the holes between wanted values are not read beyond that)
    FEW_RUNS = 16  # runs of units fetched at once copied one by one; more in one assignment

    def __init__(
        self, source: ByteSource, offset: int, size: int, head: bytes | memoryview, max_gap: int
    ) -> None:
        self.source = source
        self.offset = offset
        self.size = size
        self.max_gap = max_gap
        self._buf = np.empty(size, dtype=np.uint8)
        self._have = np.zeros(-(-size // self.UNIT), dtype=bool)
        got = min(len(head), size)
        self._buf[:got] = np.frombuffer(head, dtype=np.uint8, count=got)
        self._have[: got // self.UNIT] = True
        if got == size:
            self._have[:] = True
        self.view = memoryview(self._buf.data)
        if got < min(size, 16):
            self.fetch_range(0, 16)

    def fetch_range(self, begin: int, end: int) -> None:
        """:meth:`fetch` for one range of page bytes ``[begin, end)``."""
        self.fetch(np.array([begin]), np.array([end]))

    def fetch(self, begins: np.ndarray, ends: np.ndarray) -> None:
        """Make page bytes ``[begins[i], ends[i])`` present (clipped to the page)."""
        size = self.size
        begins = np.minimum(np.maximum(np.asarray(begins, dtype=np.int64), 0), size)
        ends = np.minimum(np.maximum(np.asarray(ends, dtype=np.int64), 0), size)
        keep = ends > begins
        if not bool(keep.any()):
            return
        begins, ends = begins[keep], ends[keep]
        if len(begins) == 1:  # one range (a whole page, a block table): what it lacks
            a, b = int(begins[0]) // self.UNIT, (int(ends[0]) - 1) // self.UNIT
            grains = np.flatnonzero(~self._have[a : b + 1]) + a
        else:
            grains = units_of(begins, ends, self.UNIT)
            grains = grains[~self._have[grains]]
        if not len(grains):
            return
        # runs of consecutive grains (sorted, distinct), each one range read
        if int(grains[-1]) - int(grains[0]) + 1 == len(grains):
            cut = np.zeros(0, dtype=np.int64)  # one run (a whole page, usually)
        else:
            cut = np.flatnonzero(np.diff(grains) != 1) + 1
        at = grains[np.concatenate(([0], cut))] * self.UNIT
        lengths = (
            np.minimum((grains[np.concatenate((cut - 1, [len(grains) - 1]))] + 1) * self.UNIT, size)
            - at
        )
        ranges = [(self.offset + a, n) for a, n in zip(at.tolist(), lengths.tolist(), strict=True)]
        got = self.source.read_ranges(ranges, max_gap=self.max_gap)
        if len(got) <= self.FEW_RUNS:
            for (start, n), data in zip(ranges, got, strict=True):
                start -= self.offset
                self._buf[start : start + n] = np.frombuffer(data, dtype=np.uint8)
        else:  # all the runs' bytes at once: position of each byte in the page
            moved = np.repeat(at - (np.cumsum(lengths) - lengths), lengths)
            self._buf[np.arange(int(lengths.sum())) + moved] = np.frombuffer(
                b"".join(got), dtype=np.uint8
            )
        self._have[grains] = True


Page = memoryview | SparsePage  # a page's bytes, whole or fetched as needed


class PagePayload:
    """A page's decoded payload, materialised only where asked.

    For a ZSTD_BLOCKS page the payload buffer is filled block by block as byte ranges are
    requested; other pages are available whole from the start.
    """

    def __init__(
        self,
        page: Page,
        values: int,
        expected_size: int | None,
        where: str,
        verify: bool = True,
        defer: bool = False,
    ):
        """``defer``: of a memory-mapped CRC_BLOCKS page, verify the blocks read only when
        :meth:`finish` is called (once for all ranges read: per-range bookkeeping costs
        more than the CRC32s); the caller must call it before it returns any value."""
        self.where = where
        self.values = values
        self.expected_size = expected_size
        self._sparse = page if isinstance(page, SparsePage) else None
        if isinstance(page, SparsePage):
            page = self._fetch_tables(page)
        self.head = read_page_head(
            page,
            expected_values=values,
            expected_size=expected_size,
            where=where,
            verify_crc=False,
        )
        self.encoding = self.head.encoding
        self.size = self.head.size
        self._blocked: BlockedBody | None = None
        self._crc: CrcBlockedBody | None = None
        self._verify = verify
        self._pending: list[tuple[np.ndarray, np.ndarray]] | None = None
        if self.head.compression in BLOCKED:
            # every block frame carries a content checksum, verified as it is decompressed
            self._blocked = BlockedBody.of(self.head, where)
            # filled block by block by need(); nothing is read before it is written there
            self.buf = np.empty(self.size, dtype=np.uint8)
            self._done = np.zeros(self._blocked.num_blocks, dtype=bool)
            return
        if self.head.crc_blocks and (verify or self._sparse is not None):
            # format 1.5: verified (and, sparse, fetched) block by block by need()
            self._crc = self.head.crc_body or CrcBlockedBody(page, self.size, where)
            if verify:
                self._crc.verify_head()
            self._done = np.zeros(self._crc.num_blocks, dtype=bool)
            if defer and verify and self._sparse is None:
                self._pending = []
        elif self._sparse is not None:  # read whole: a single zstd frame, or NONE
            self._sparse.fetch_range(0, self._sparse.size)
        if not self.head.crc_blocks and verify:  # bytes used anywhere: the page CRC32
            check_page_crc(page, where)
        self.buf = np.frombuffer(decompress_body(self.head, where), dtype=np.uint8)

    @staticmethod
    def _fetch_tables(page: SparsePage) -> memoryview:
        """Fetch a sparse page's header and block table (and the frame ends of a
        ZSTD_BLOCKS page, and the dictionary of a ZSTD_DICT_BLOCKS one; a CRC_BLOCKS page's
        CRC32s are fetched with their blocks)."""
        head = PAGE_HEADER_SIZE
        page.fetch_range(0, head + DICT_BLOCK_TABLE_DTYPE.itemsize)  # the longest table
        compression = int(page.view[5]) if page.size > 5 else -1
        if compression in BLOCKED:
            shared = compression == Compression.ZSTD_DICT_BLOCKS
            table = (DICT_BLOCK_TABLE_DTYPE if shared else BLOCK_TABLE_DTYPE).itemsize
            if page.size >= head + table:
                fields = np.frombuffer(page.view, "<u4", count=table // 4, offset=head).tolist()
                dict_size = fields[2] if shared else 0  # DictBlockTable.dict_size
                page.fetch_range(0, head + table + 4 * fields[1] + dict_size)
        return page.view

    @property
    def blocked(self) -> bool:
        """Whether payload bytes must be prepared by :meth:`need` before they are read
        (decompressed or verified block by block)."""
        return self._blocked is not None or self._crc is not None

    def _prepare(self, blocks: np.ndarray) -> None:
        todo = blocks[~self._done[blocks]]
        if not len(todo):
            return
        if self._sparse is not None:
            self._fetch_blocks(todo)
        if self._blocked is not None:
            self._blocked.decompress_into(self.buf, todo)
        elif self._crc is not None and self._verify:
            self._crc.verify(todo)
        self._done[todo] = True

    def _fetch_blocks(self, todo: np.ndarray) -> None:
        """Fetch the stored bytes of blocks ``todo`` of a sparse page: their zstd frames,
        or their payload bytes (CRC_BLOCKS)."""
        assert self._sparse is not None
        if self._blocked is not None:
            at = PAGE_HEADER_SIZE + self._blocked.frames_at
            begins, ends = self._blocked.starts[todo] + at, self._blocked.ends[todo] + at
        else:
            assert self._crc is not None
            at = PAGE_HEADER_SIZE + 12 + 4 * self._crc.num_blocks
            begins = todo * self._crc.block_size + at
            ends = np.minimum(begins + self._crc.block_size, at + self.size)
            if self._verify:  # and the blocks' CRC32s, not the whole table
                crcs = PAGE_HEADER_SIZE + 12 + 4 * todo
                begins, ends = np.concatenate([crcs, begins]), np.concatenate([crcs + 4, ends])
        self._sparse.fetch(begins, ends)

    def need(self, begins: np.ndarray, ends: np.ndarray) -> None:
        """Make decoded bytes ``[begins[i], ends[i])`` available in :attr:`buf`."""
        begins = np.asarray(begins, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        if len(begins) and (
            int(begins.min()) < 0
            or int(ends.max()) > self.size
            or bool((ends < begins).any())  # e.g. value lengths whose sums wrapped in int64
        ):
            raise InvalidFileError(f"{self.where}: values lie outside the page payload")
        body = self._blocked if self._blocked is not None else self._crc
        if body is None:
            return
        if self._pending is not None:
            self._pending.append((begins, ends))
            return
        if self._crc is not None and self._sparse is None:  # verified, nothing to fetch
            self._crc.verify_ranges(begins, ends, self._done)
            return
        keep = ends > begins
        self._prepare(body.blocks_for(begins[keep], ends[keep]))

    def need_packed(self, offset: int, bits: int, rows: np.ndarray) -> None:
        """:meth:`need` for the bytes of the values ``rows`` (sorted) bit-packed at ``bits``
        from payload byte ``offset``. Of a CRC_BLOCKS page read whole (memory-mapped), the
        blocks are verified at once by one kernel call (:meth:`CrcBlockedBody.verify_packed`)
        rather than deferred as ranges to :meth:`finish`."""
        crc = self._crc
        if crc is None or self._sparse is not None or not 0 < bits <= 64:
            self.need(*bitpack.byte_ranges(offset, bits, rows))
            return
        crc.verify_packed(offset, bits, rows, self._done)  # out-of-range rows: InvalidFileError

    def need_range(self, begin: int, end: int) -> None:
        """:meth:`need` for one range ``[begin, end)``."""
        if begin < 0 or end > self.size or end < begin:
            raise InvalidFileError(f"{self.where}: values lie outside the page payload")
        body = self._blocked if self._blocked is not None else self._crc
        if self._pending is not None:
            self._pending.append((np.array([begin]), np.array([end])))
            return
        if body is not None and end > begin:
            size = body.block_size
            self._prepare(np.arange(begin // size, (end - 1) // size + 1))

    def finish(self) -> None:
        """Verify the blocks of every range read since the page was opened (``defer``)."""
        if not self._pending:
            return
        assert self._crc is not None
        pending, self._pending = self._pending, []
        if len(pending) == 1:
            begins, ends = pending[0]
        else:
            begins = np.concatenate([b for b, _ in pending])
            ends = np.concatenate([e for _, e in pending])
        self._crc.verify_ranges(begins, ends, self._done)

    def need_all(self) -> np.ndarray:
        self.need_range(0, self.size)
        return self.buf

    def header(self, at: int = 0) -> encodings.Header:
        """The EncodingHeader at payload byte ``at`` (0: the page's; FLOAT_DECIMAL pages
        have a nested one), checked against the page's value count."""
        if at >= self.size:
            raise InvalidFileError(f"{self.where}: encoded payload shorter than its header")
        self.need_range(at, min(at + _H, self.size))
        h = encodings.read_header(self.buf[at : at + _H].tobytes(), self.where)
        if int(h["count"]) != self.values:
            raise InvalidFileError(f"{self.where}: encoded page holds {int(h['count'])} values")
        return h

    def packed(self, offset: int, bits: int, rows: np.ndarray) -> np.ndarray:
        """Bit-packed integers ``rows`` of a section starting at payload byte ``offset``."""
        return _packed(self, offset, bits, rows)

    def prefix_sums(self, h: encodings.Header, rows: np.ndarray, at: int = 0) -> np.ndarray:
        """DELTA values at ``rows`` of the DELTA payload at payload byte ``at``."""
        return _prefix_sums(self, h, rows, at)

    def decode_whole(self) -> object:
        return decode_payload(
            self.encoding, self.need_all().data, self.values, self.expected_size, self.where
        )


def _packed(p: PagePayload, offset: int, bits: int, rows: np.ndarray) -> np.ndarray:
    """Bit-packed integers ``rows`` of a section starting at payload byte ``offset``."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.uint64)
    if p.blocked:  # gather checks its own bounds: only the blocks need preparing
        p.need_packed(offset, bits, rows)
    return bitpack.gather(p.buf, offset, bits, rows, p.where)


def _int_values(p: PagePayload, rows: np.ndarray, width: int, signed: bool) -> np.ndarray | None:
    """Plain bytes of ``rows`` from an integer-encoded page; None: no random access."""
    h = p.header()
    check_plain_size(p, h, width)
    ints = ints_at(p, 0, h, p.encoding, rows)
    return None if ints is None else encodings.ints_to_plain(ints, width, signed)


def _sums_before(packed: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``packed[:r].sum()`` for each of the sorted, unique ``rows`` (all <= len(packed)),
    from segment sums between consecutive rows: no running-sum array is built."""
    out = np.zeros(len(rows), dtype=np.int64)
    later = rows > 0
    r = rows[later]
    if len(r):
        starts = np.concatenate([[0], r[:-1]])  # strictly increasing, all below r[-1]
        out[later] = np.cumsum(np.add.reduceat(packed[: int(r[-1])], starts))
    return out


def _sums(
    p: PagePayload, h: encodings.Header, enc: Encoding, rows: np.ndarray, at: int = 0
) -> np.ndarray:
    """``packed[:r].sum()`` (wrapping in int64) for the sorted, unique ``rows`` of the
    deltas of a DELTA payload or the lengths of a FOR payload (header ``h``) at payload
    byte ``at``, without decoding the whole payload.

    With CHECKPOINTS (format 1.3) each sum is the checkpoint before ``r`` plus fewer than
    :data:`~fermion.format.encoding.encodings.CHECKPOINT_INTERVAL` packed integers; without, every
    packed integer up to the last wanted row is decoded.
    """
    bits = encodings.packed_bits(h)
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    start = at + _H  # the packed integers
    m, ck_bits, ck_at = encodings.checkpoint_layout(enc, h)
    ck_at += at
    if not int(h["flags"]) & _CHECKPOINTS:
        last = int(rows[-1])
        p.need_range(start, start + bitpack.packed_size(last, bits))
        packed = bitpack.unpack(p.buf, start, bits, last, p.where).view(np.int64)
        return _sums_before(packed, rows)
    interval = encodings.CHECKPOINT_INTERVAL
    segment = rows // interval  # <= m: rows never exceed the packed integers' count
    out = np.zeros(len(rows), dtype=np.int64)
    later = segment > 0
    if bool(later.any()):
        out[later] = _packed(p, ck_at, ck_bits, segment[later] - 1).view(np.int64)
    # each wanted row's whole segment: a segment is interval * bits / 8 whole bytes
    # (interval is a multiple of 8); the last segment of the page may be short
    seg_bytes = interval * bits // 8
    kernels = native.KERNELS
    if kernels is not None:  # the integers before each row in its segment, summed in C:
        # for row r, those before r - 1 and r - 1's own (r itself may be one past the last
        # packed integer: a DELTA page packs a delta less than its values)
        within = rows % interval > 0
        inner = rows[within] - 1
        if not len(inner):
            return out
        segments = np.unique(inner // interval)
        begins = start + segments * seg_bytes
        p.need(begins, np.minimum(begins + seg_bytes, ck_at))
        before = np.empty(len(inner), dtype=np.int64)
        value = np.empty(len(inner), dtype=np.int64)
        if not kernels.segment_sums(p.buf, start, ck_at, bits, interval, inner, before, value):
            raise InvalidFileError(f"{p.where}: packed integers run past the payload")
        with np.errstate(over="ignore"):
            out[within] += before + value
        return out
    # without the kernels the segments' bytes, concatenated, are one bit stream, unpacked
    # at once (the page's short last segment zero-padded here)
    segments, slot = np.unique(segment, return_inverse=True)
    begins = start + segments * seg_bytes
    ends = np.minimum(begins + seg_bytes, ck_at)
    p.need(begins, ends)
    stream = np.zeros(len(segments) * seg_bytes + 8, dtype=np.uint8)
    stream[: int((ends - begins).sum())] = gather_ranges(p.buf, begins, ends - begins)
    short = ends - begins < seg_bytes  # only the page's last segment can be short
    if bool(short[:-1].any()):
        raise InvalidFileError(f"{p.where}: packed integers run past the payload")
    packed = bitpack.unpack(stream, 0, bits, len(segments) * interval, p.where)
    running = np.cumsum(packed.view(np.int64).reshape(len(segments), interval), axis=1)
    within = rows - segment * interval  # integers of the segment before the row
    with np.errstate(over="ignore"):
        has = within > 0
        out[has] += running[slot[has], within[has] - 1]
    return out


def _prefix_sums(p: PagePayload, h: encodings.Header, rows: np.ndarray, at: int = 0) -> np.ndarray:
    """DELTA values at ``rows`` of the DELTA payload at payload byte ``at``:
    ``v[r] = base + r * aux + sum(packed[:r])``, in int64 arithmetic that wraps exactly as
    the full decoder's running sum does."""
    sums = _sums(p, h, Encoding.DELTA, rows, at)
    with np.errstate(over="ignore"):
        return sums + rows * int(h["aux"]) + int(h["base"])


def _lengths_prefix(
    p: PagePayload, rows: np.ndarray, values: int, offset_width: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(begin, end) data offsets of the values at ``rows`` from a FOR-encoded lengths page,
    summing only the lengths before each wanted row; None for other encodings."""
    codec = ENCODINGS[p.encoding].ints
    if codec is None or not codec.sums_lengths:
        return None
    h = p.header()
    if (
        not int(h["flags"]) & _LENGTHS
        or int(h["out_width"]) != offset_width
        or p.size != encodings.int_payload_size(p.encoding, h)
    ):
        return None  # decoded (and rejected) whole
    bits = encodings.packed_bits(h)
    base = int(h["base"])
    if int(h["flags"]) & _CHECKPOINTS and len(rows):
        return _checkpointed_ranges(p, h, rows, bits, base)
    lengths = _packed(p, _H, bits, rows).view(np.int64) + base
    if len(rows) and int(lengths.min()) < 0:
        raise InvalidFileError(f"{p.where}: negative value lengths")
    with np.errstate(over="ignore"):
        begins = _sums(p, h, Encoding.FOR, rows) + rows * base
        return begins, begins + lengths


def _checkpointed_ranges(
    p: PagePayload, h: encodings.Header, rows: np.ndarray, bits: int, base: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_lengths_prefix` of a FOR lengths page with CHECKPOINTS, for sorted, unique,
    non-empty ``rows``: the checkpoints before the wanted rows' segments and those whole
    segments are made available by one :meth:`PagePayload.need`, and each row's length is
    read from its unpacked segment (the same bytes that give the sum before it), so the
    page is visited once rather than once for the lengths and twice for the sums."""
    interval = encodings.CHECKPOINT_INTERVAL
    _, ck_bits, ck_at = encodings.checkpoint_layout(Encoding.FOR, h)
    segment = rows // interval  # rows never exceed the packed integers' count
    first = np.empty(len(rows), dtype=bool)  # rows are sorted: segments start where they change
    first[0] = True
    np.not_equal(segment[1:], segment[:-1], out=first[1:])
    segments = segment[first]
    slot = np.cumsum(first) - 1
    seg_bytes = interval * bits // 8  # a multiple of 8 integers: whole bytes
    begins = _H + segments * seg_bytes
    ends = np.minimum(begins + seg_bytes, ck_at)
    short = ends - begins < seg_bytes  # only the page's last segment can be short
    if bool(short[:-1].any()):
        raise InvalidFileError(f"{p.where}: packed integers run past the payload")
    later = segments > 0
    ck_rows = segments[later] - 1
    if p.blocked:  # gather checks its own bounds: only the blocks need preparing
        ck_begins = ck_at + (ck_rows * ck_bits) // 8
        ck_ends = ck_at + ((ck_rows + 1) * ck_bits + 7) // 8
        p.need(np.concatenate([begins, ck_begins]), np.concatenate([ends, ck_ends]))
    else:
        p.need(begins, ends)
    sums = np.zeros(len(segments), dtype=np.int64)
    if len(ck_rows):
        sums[later] = bitpack.gather(p.buf, ck_at, ck_bits, ck_rows, p.where).view(np.int64)
    kernels = native.KERNELS
    if kernels is not None:  # each row's length and the lengths before it in its segment
        before = np.empty(len(rows), dtype=np.int64)
        value = np.empty(len(rows), dtype=np.int64)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        if not kernels.segment_sums(p.buf, _H, ck_at, bits, interval, rows, before, value):
            raise InvalidFileError(f"{p.where}: packed integers run past the payload")
        with np.errstate(over="ignore"):
            lengths = value + base
            if int(lengths.min()) < 0:
                raise InvalidFileError(f"{p.where}: negative value lengths")
            starts = sums[slot] + before + rows * base
            return starts, starts + lengths
    stream = np.zeros(len(segments) * seg_bytes + 8, dtype=np.uint8)
    stream[: int((ends - begins).sum())] = gather_ranges(p.buf, begins, ends - begins)
    packed = bitpack.unpack(stream, 0, bits, len(segments) * interval, p.where).view(np.int64)
    grid = packed.reshape(len(segments), interval)
    within = rows - segment * interval
    with np.errstate(over="ignore"):
        lengths = grid[slot, within] + base
        if int(lengths.min()) < 0:
            raise InvalidFileError(f"{p.where}: negative value lengths")
        running = np.cumsum(grid, axis=1)  # inclusive: through the row itself
        starts = sums[slot] + running[slot, within] - grid[slot, within] + rows * base
        return starts, starts + lengths


def list_value_ranges(
    p: PagePayload, rows: np.ndarray, values: int, offset_width: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(begin, end) positions, relative to the page's first value, of the values of the
    lists (or strings) at ``rows`` (sorted, unique) of an OFFSETS page stored as
    FOR-encoded lengths, from the lengths before each row only (with checkpoints: fewer
    than 256 of them per row); None for offsets stored another way."""
    return _lengths_prefix(p, rows, values, offset_width)


def fixed_values(
    page: Page,
    rows: np.ndarray,
    values: int,
    width: int,
    int_domain: tuple[int, bool] | None,
    where: str,
    verify: bool = True,
) -> bytes:
    """Plain bytes of the fixed-width values at ``rows`` (sorted, unique) of a DATA page
    (``verify``: check the checksums covering the bytes read, see :class:`PagePayload`)."""
    rows = np.asarray(rows, dtype=np.int64)
    p = PagePayload(page, values, values * width, where, verify, defer=True)
    if len(rows) and (int(rows[0]) < 0 or int(rows[-1]) >= values):
        raise InvalidFileError(f"{where}: rows outside the page")
    out = _fixed_values(p, rows, values, width, int_domain, where)
    p.finish()  # the checksums of every block read, before any value is returned
    return out


def _fixed_values(
    p: PagePayload,
    rows: np.ndarray,
    values: int,
    width: int,
    int_domain: tuple[int, bool] | None,
    where: str,
) -> bytes:
    kind = ENCODINGS[p.encoding]
    if kind.fixed_at is not None:
        found = kind.fixed_at(p, rows, values, width)
        if found is not None:
            return found
    if int_domain is not None and kind.ints_at is not None:
        out = _int_values(p, rows, width, int_domain[1])
        if out is not None:
            return out.tobytes()
    plain = p.decode_whole()
    if not isinstance(plain, bytes | memoryview):
        raise InvalidFileError(f"{where}: a {type(plain).__name__} page in a fixed-width column")
    whole = np.frombuffer(plain, dtype=np.uint8)
    return gather_ranges(whole, rows * width, np.full(len(rows), width)).tobytes()


def binary_values(
    offsets_page: Page,
    data_page: Page,
    rows: np.ndarray,
    values: int,
    offset_width: int,
    where: str,
    dictionary: StripeDictionaryPage | None = None,
    verify: bool = True,
) -> tuple[np.ndarray, bytes]:
    """(lengths, concatenated bytes) of the values at ``rows`` of a BINARY page pair
    (``dictionary``: the stripe dictionary, when the chunk has one, format 1.4)."""
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) and (int(rows[0]) < 0 or int(rows[-1]) >= values):
        raise InvalidFileError(f"{where}: rows outside the page")
    data = PagePayload(data_page, values, None, where, verify, defer=True)
    lengths, out = _binary_values(
        data, offsets_page, rows, values, offset_width, where, dictionary, verify
    )
    data.finish()  # the checksums of every block read, before any value is returned
    return lengths, out


def _binary_values(
    data: PagePayload,
    offsets_page: Page,
    rows: np.ndarray,
    values: int,
    offset_width: int,
    where: str,
    dictionary: StripeDictionaryPage | None,
    verify: bool,
) -> tuple[np.ndarray, bytes]:
    kind = ENCODINGS[data.encoding]
    if dictionary is not None or kind.stripe_indices:
        head = offsets_page.view if isinstance(offsets_page, SparsePage) else offsets_page
        if not is_derived(head):
            raise InvalidFileError(
                f"{where}: a stripe-dictionary chunk's OFFSETS page is not DERIVED"
            )
        return _stripe_dictionary_values(data, rows, dictionary)
    if kind.page_dictionary:
        return _dictionary_values(data, rows)
    if not kind.plain:
        raise InvalidFileError(f"{where}: {data.encoding.name} is not a binary DATA encoding")
    offs_payload = PagePayload(
        offsets_page, values, (values + 1) * offset_width, where, verify, defer=True
    )
    found = _lengths_prefix(offs_payload, rows, values, offset_width)
    if found is not None:
        begins, ends = found
    else:  # PLAIN, DELTA, ... offsets: decode the page whole
        decoded = offs_payload.decode_whole()
        if not isinstance(decoded, bytes | memoryview):
            raise InvalidFileError(f"{where}: offsets page without plain offsets")
        dtype = "<i4" if offset_width == 4 else "<i8"
        offs = np.frombuffer(decoded, dtype=dtype).astype(np.int64)
        offs = offs - offs[0]
        if int(offs[-1]) != data.size or bool(np.any(offs[1:] < offs[:-1])):
            raise InvalidFileError(f"{where}: offsets do not describe the data page")
        begins, ends = offs[rows], offs[rows + 1]
    offs_payload.finish()
    lengths = ends - begins
    data.need(begins, ends)  # checks the ranges against the data page
    return lengths, gather_ranges(data.buf, begins, lengths).tobytes()


def _stripe_dictionary_values(
    p: PagePayload, rows: np.ndarray, dictionary: StripeDictionaryPage | None
) -> tuple[np.ndarray, bytes]:
    """The values at ``rows`` of a DICTIONARY_INDICES page: only their indices are read
    from the page, then looked up in the (decoded) stripe dictionary."""
    if not ENCODINGS[p.encoding].stripe_indices:
        raise InvalidFileError(f"{p.where}: not DICTIONARY_INDICES in a stripe-dictionary chunk")
    h = check_header(p.header(), p.where)
    entries, bits = indices_layout(h, p.size, p.values, p.where)
    check_entries(IndexPage(np.zeros(0, np.int64), entries), dictionary, p.where)
    assert dictionary is not None
    indices = _packed(p, _H, bits, rows)
    if len(indices) and int(indices.max()) >= entries:  # unsigned: 64-bit indices too
        raise InvalidFileError(f"{p.where}: dictionary index out of range")
    at = indices.astype(np.int64)
    begins = dictionary.offsets[at]
    lengths = dictionary.offsets[at + 1] - begins
    body = np.frombuffer(dictionary.data, dtype=np.uint8)
    return lengths, gather_ranges(body, begins, lengths).tobytes()


def _dictionary_values(p: PagePayload, rows: np.ndarray) -> tuple[np.ndarray, bytes]:
    h = p.header()
    entries, bits = int(h["aux"]), encodings.packed_bits(h)
    if entries <= 0 or entries > p.values:
        raise InvalidFileError(f"{p.where}: dictionary of {entries} values")
    start = _H + bitpack.packed_size(p.values, bits)
    body = start + 8 * (entries + 1)
    if body > p.size:
        raise InvalidFileError(f"{p.where}: dictionary offsets run past the payload")
    indices = _packed(p, _H, bits, rows).astype(np.int64)
    p.need_range(start, p.size)
    dict_offsets = np.frombuffer(p.buf.data, dtype="<i8", count=entries + 1, offset=start)
    if (
        dict_offsets[0] != 0
        or int(dict_offsets[-1]) != p.size - body
        or bool(np.any(np.diff(dict_offsets) < 0))
        or (len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= entries))
    ):  # 64-bit indices above 2**63 - 1 are negative here
        raise InvalidFileError(f"{p.where}: corrupt dictionary page")
    begins = body + dict_offsets[indices]
    lengths = dict_offsets[indices + 1] - dict_offsets[indices]
    return lengths, gather_ranges(p.buf, begins, lengths).tobytes()
