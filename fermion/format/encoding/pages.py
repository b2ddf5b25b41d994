"""Pages: the unit of encoding, compression and checksumming.

On disk a page is ``[PageHeader 16B][body]``. The body is the encoded values, compressed
with the codec named in the header: one zstd frame (ZSTD), or since format 1.2 a frame
table and independent zstd frames of ``block_size`` decoded bytes each (ZSTD_BLOCKS), so
that a reader wanting a few values decompresses only the blocks holding them
(:class:`BlockedBody`); since format 1.7 the frames may share a zstd dictionary stored in
the page (ZSTD_DICT_BLOCKS), so that small blocks keep the ratio of large ones. The
header's CRC32 covers every byte after the CRC field (rest of header + body), so a flipped
bit anywhere in a page is caught before any decoding. Codecs sit in a registry keyed by
:class:`~fermion.format.metadata.structs.Compression`; the writer chooses, the reader dispatches on
the id stored in the file.

Example:
    >>> page = encode_page(b"hello" * 100, num_values=500, codec=Compression.ZSTD, level=3)
    >>> decode_page(memoryview(page), expected_values=500, expected_size=500, where="p")[:5]
    b'hello'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np
import zstandard

from fermion.errors import ChecksumError, InvalidFileError, UnsupportedVersionError
from fermion.format import native
from fermion.format.checksum import crc32
from fermion.format.encoding import bitpack, encodings
from fermion.format.encoding.offsets import lengths_into, plain_into, sums_fit
from fermion.format.encoding.registry import (
    DERIVED,
    ENCODINGS,
    Decoded,
    DictionaryPage,
    decode_payload,
    kind_of,
)
from fermion.format.metadata.structs import (
    BLOCK_TABLE_DTYPE,
    CRC_BLOCK_TABLE_DTYPE,
    DICT_BLOCK_TABLE_DTYPE,
    PAGE_HEADER_DTYPE,
    Compression,
    Encoding,
    EncodingFlag,
)

__all__ = [
    "ENCODED_COMPRESS_RATIO",
    "CODECS",
    "DERIVED",
    "BLOCKED",
    "BlockedBody",
    "CrcBlockedBody",
    "DICTIONARY_SIZE",
    "tries_dictionary",
    "check_page_crc",
    "PAGE_HEADER_SIZE",
    "Codec",
    "DictionaryPage",
    "PageHead",
    "decode_page",
    "decompress_frames",
    "decode_offsets_into",
    "decode_page_into",
    "decode_payload",
    "decompress_body",
    "encode_page",
    "is_derived",
    "plain_size_hint",
    "read_page_head",
    "units_of",
]

PAGE_HEADER_SIZE = PAGE_HEADER_DTYPE.itemsize
COMPRESS_RATIO = 0.9  # keep zstd only if it saves at least 10% (else decode is pure cost)
ENCODED_COMPRESS_RATIO = 0.75  # encoded pages of point-read columns: at least 25%
_MAX_RATIO = 1 << 12  # a size hint beyond this many times the stored bytes is not trusted


_HEADER_FLAG_CRC = 1
_ZSTD_MAGIC = 0xFD2FB528  # the first four bytes of a zstd frame, little-endian

_local = threading.local()

BLOCKED = (Compression.ZSTD_BLOCKS, Compression.ZSTD_DICT_BLOCKS)  # read by BlockedBody
DICTIONARY_SIZE = 8 << 10  # bytes of the zstd dictionary of a ZSTD_DICT_BLOCKS page
# a dictionary is tried only on payloads of at least this many blocks: below, its own
# bytes cost more than it saves
_DICTIONARY_MIN_BLOCKS = 32
_DICTIONARY_SAMPLES = 64  # the dictionary is trained on this many pieces of the payload
_DICTIONARY_SAMPLE_BYTES = 1 << 10  # ... of this many bytes each, spread evenly over it


def _zstd_compressor(level: int, checksum: bool = False) -> zstandard.ZstdCompressor:
    """A compressor per thread and setting (they are not thread-safe). Blocks carry zstd's
    content checksum, so that a reader decoding one block can verify it."""
    cache = getattr(_local, "compressors", None)
    if cache is None:
        cache = _local.compressors = {}
    comp = cache.get((level, checksum))
    if comp is None:
        comp = cache[(level, checksum)] = zstandard.ZstdCompressor(
            level=level, write_content_size=True, write_checksum=checksum
        )
    return comp


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_local, "decompressor", None)
    if d is None:
        d = _local.decompressor = zstandard.ZstdDecompressor()
    return d


@dataclass(frozen=True)
class Codec:
    """A general-purpose compression codec: pure functions over buffers."""

    compress: Callable[[bytes | memoryview, int], bytes]
    decompress: Callable[[memoryview, int], bytes]  # (body, exact decoded size)


def _zstd_compress(data: bytes | memoryview, level: int) -> bytes:
    return _zstd_compressor(level).compress(data)


def _zstd_decompress(
    body: memoryview,
    size: int,
    checksum: bool = False,
    decompressor: zstandard.ZstdDecompressor | None = None,
) -> bytes:
    """Exactly one zstd frame of ``size`` decoded bytes (with ``checksum``: one that carries
    zstd's content checksum, which the decompressor then verifies); ``decompressor``: one
    holding the frame's dictionary."""
    try:
        declared = zstandard.frame_content_size(body)
        if checksum and not zstandard.get_frame_parameters(body).has_checksum:
            raise InvalidFileError("zstd block frame carries no content checksum")
    except zstandard.ZstdError as exc:
        raise InvalidFileError(f"corrupt zstd frame header: {exc}") from None
    if declared != size:  # never let a corrupt frame header size our allocation
        raise InvalidFileError(f"zstd frame declares {declared} bytes, page header {size}")
    try:
        # allow_extra_data=False: bytes after the frame are corruption, not ignored
        out = (decompressor or _zstd_decompressor()).decompress(
            body, max_output_size=size, allow_extra_data=False
        )
    except zstandard.ZstdError as exc:
        raise _zstd_error("corrupt zstd page", exc) from None
    if len(out) != size:
        raise InvalidFileError(f"zstd frame decompressed to {len(out)} bytes, expected {size}")
    return out


def _zstd_error(what: str, exc: Exception) -> InvalidFileError:
    """A zstd failure as a typed error: a content checksum mismatch is a ChecksumError."""
    if "checksum" in str(exc).lower():
        return ChecksumError(f"{what}: zstd content checksum mismatch")
    return InvalidFileError(f"{what}: {exc}")


def _frame_size(frame: memoryview) -> int:
    """Bytes of the zstd frame at the start of ``frame``, from its header and block headers
    (zstd format: 3-byte block headers, last-block bit, RLE blocks of one byte), plus its
    4-byte content checksum; -1 when the blocks run past ``frame`` or use the reserved
    block type."""
    pos = zstandard.frame_header_size(frame)
    end = len(frame)
    while pos + 3 <= end:
        head = frame[pos] | frame[pos + 1] << 8 | frame[pos + 2] << 16
        kind = (head >> 1) & 3
        if kind == 3:
            return -1
        pos += 3 + (1 if kind == 1 else head >> 3)
        if head & 1:
            return pos + 4  # the content checksum (every block frame has one)
    return -1


#: zstd frame header descriptor → (header bytes after the magic number's 4, bytes of the
#: frame content size field): window descriptor unless single-segment, dictionary id
#: field of 0/1/2/4 bytes, content size field of 0 (or 1 when single-segment)/2/4/8 bytes
_FRAME_HEADER_LAYOUT = [
    (
        1 + (0 if fhd & 0x20 else 1) + (0, 1, 2, 4)[fhd & 3] + fcs,
        fcs,
    )
    for fhd in range(256)
    for fcs in [(1 if fhd & 0x20 else 0, 2, 4, 8)[fhd >> 6]]
]


def _check_frame(frame: memoryview, size: int, where: str) -> None:
    """The checks :func:`_zstd_decompress` makes before decompressing a block's frame: its
    header declares ``size`` bytes and a content checksum, and the frame fills ``frame``
    exactly (no bytes after it).

    A frame of one zstd block (the writer's blocks of at most 128 KiB) is measured from
    its header and block header here, field by field (zstd frame format); others are
    walked block by block by :func:`_frame_size`.
    """
    n = len(frame)
    if n < 6 or int.from_bytes(frame[:4], "little") != _ZSTD_MAGIC:
        _check_frame_slow(frame, size, where)  # its error names what is wrong
        return
    fhd = frame[4]
    if fhd & 0x08:  # the reserved bit: zstd's parser refuses the header
        _check_frame_slow(frame, size, where)
        return
    if not fhd & 4:
        raise InvalidFileError(f"{where}: zstd block frame carries no content checksum")
    head, fcs = _FRAME_HEADER_LAYOUT[fhd]
    at = 4 + head
    declared = int.from_bytes(frame[at - fcs : at], "little") if fcs else -1
    if fcs == 2:
        declared += 256
    if declared != size:
        raise InvalidFileError(f"{where}: zstd frame declares {declared} bytes, block {size}")
    if at + 3 > n:
        raise InvalidFileError(f"{where}: zstd block frame does not fill its range exactly")
    block = int.from_bytes(frame[at : at + 3], "little")
    kind = (block >> 1) & 3
    if not block & 1 or kind == 3:  # several blocks, or the reserved type: walk them
        _check_frame_slow(frame, size, where)
        return
    if at + 3 + (1 if kind == 1 else block >> 3) + 4 != n:
        raise InvalidFileError(f"{where}: zstd block frame does not fill its range exactly")


def _check_frames(
    view: memoryview, begins: np.ndarray, ends: np.ndarray, sizes: np.ndarray, where: str
) -> None:
    """:func:`_check_frame` for the frames ``view[begins[i]:ends[i]]`` (int64 arrays):
    the fast path's checks of all of them in one call of the compiled kernel when it is
    built (:data:`native.KERNELS`), and :func:`_check_frame` for any frame they do not
    pass (it raises, or walks a frame of several zstd blocks); else one by one."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    kernels = native.KERNELS
    if kernels is not None and view.c_contiguous:
        begins = np.ascontiguousarray(begins, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        i = kernels.frames_fit(view, begins, ends, sizes, 0)
        while i >= 0:
            _check_frame(view[int(begins[i]) : int(ends[i])], int(sizes[i]), where)
            i = kernels.frames_fit(view, begins, ends, sizes, i + 1)
        return
    for b, e, n in zip(begins.tolist(), ends.tolist(), sizes.tolist(), strict=True):
        _check_frame(view[b:e], n, where)


def _check_frame_slow(frame: memoryview, size: int, where: str) -> None:
    """:func:`_check_frame` through zstd's own header parser and :func:`_frame_size`."""
    try:
        params = zstandard.get_frame_parameters(frame)
        declared = params.content_size
        exact = params.has_checksum and _frame_size(frame) == len(frame)
    except zstandard.ZstdError as exc:
        raise InvalidFileError(f"{where}: corrupt zstd frame header: {exc}") from None
    if not params.has_checksum:
        raise InvalidFileError(f"{where}: zstd block frame carries no content checksum")
    if declared != size:
        raise InvalidFileError(f"{where}: zstd frame declares {declared} bytes, block {size}")
    if not exact:
        raise InvalidFileError(f"{where}: zstd block frame does not fill its range exactly")


def _compress_blocks(
    payload: bytes | memoryview, level: int, block_size: int, sections: tuple[int, ...] = ()
) -> bytes:
    """A ZSTD_BLOCKS body: BlockTable, frame ends (u32), then one frame per block
    (``sections``: see :func:`_adaptive_frames`)."""
    return _blocks_body(_block_frames(payload, level, block_size, sections=sections), block_size)


def _block_frames(
    payload: bytes | memoryview,
    level: int,
    block_size: int,
    comp: zstandard.ZstdCompressor | None = None,
    known: dict[int, bytes] | None = None,
    sections: tuple[int, ...] = (),
) -> list[bytes]:
    """One zstd frame (with content checksum) per ``block_size`` bytes of ``payload``, by
    ``comp`` (one holding a dictionary) or, as :func:`_adaptive_frames` chooses, the
    thread's compressor for ``level``; ``known``: frames already made at ``level``, by
    block number."""
    data = memoryview(payload).cast("B")
    if comp is not None:
        return [comp.compress(data[k : k + block_size]) for k in range(0, len(data), block_size)]
    return _adaptive_frames(data, level, block_size, known or {}, sections)


# Blocks that zstd cannot shrink (the low bytes of float planes, hashes, random ids) cost
# as much to compress at level 3 as any other. After a block at the page's level saved less
# than _STORE_SAVING, the next blocks go through zstd's fast mode (_STORE_LEVEL: a few
# hash probes and no entropy coding of literals, about a third of the time on such bytes),
# until a block shows a saving again: a fast frame that saves, or a block compressed at the
# page's level again every _REPROBE blocks (savings that only entropy coding finds), and at
# the first block of each section of the payload (a BYTE_SPLIT plane: the first plane whose
# bytes compress may do so by entropy coding only); a fast frame that saves is made again
# at the page's level. Every frame is an ordinary zstd frame: readers are unchanged
# (docs/FORMAT.md §5.2).
_STORE_LEVEL = -5
_STORE_SAVING = 0.02
_REPROBE = 4


def _adaptive_frames(
    data: memoryview,
    level: int,
    block_size: int,
    known: dict[int, bytes],
    sections: tuple[int, ...] = (),
) -> list[bytes]:
    """The frames of :func:`_block_frames` without a dictionary; ``sections``: the
    payload offsets where its bytes may change kind (see :func:`_sections`).

    Example:
        >>> import os
        >>> data = memoryview(os.urandom(8192) + bytes(8192))
        >>> frames = _adaptive_frames(data, 3, 2048, {})
        >>> [len(f) > 2048 for f in frames]  # random bytes stay as they are; zeros shrink
        [True, True, True, True, False, False, False, False]
    """
    comp = _zstd_compressor(level, checksum=True)
    fast = _zstd_compressor(_STORE_LEVEL, checksum=True)
    frames: list[bytes] = []
    firsts = {-(-start // block_size) for start in sections}  # each section's first block
    run = -1  # blocks since the last one at ``level`` that saved too little; -1: none
    for k, at in enumerate(range(0, len(data), block_size)):
        block = data[at : at + block_size]
        frame = known.get(k)
        probe = frame is not None or run < 0 or run % _REPROBE == _REPROBE - 1 or k in firsts
        if frame is None:
            frame = (comp if probe else fast).compress(block)
        saved = len(frame) < len(block) * (1 - _STORE_SAVING)
        if saved and not probe:  # where the bytes start to compress again: at the level
            frame = comp.compress(block)
        if saved:
            run = -1
        elif probe:
            run = 0
        else:
            run += 1
        frames.append(frame)
    return frames


def _blocks_body(frames: list[bytes], block_size: int, dictionary: bytes = b"") -> bytes:
    """The ZSTD_BLOCKS body of ``frames``: BlockTable, frame ends (u32), the frames; with
    a ``dictionary``, the ZSTD_DICT_BLOCKS body (1.7): DictBlockTable, frame ends, the
    dictionary, the frames."""
    table = np.zeros(1, dtype=DICT_BLOCK_TABLE_DTYPE if dictionary else BLOCK_TABLE_DTYPE)
    table["block_size"], table["num_blocks"] = block_size, len(frames)
    if dictionary:
        table["dict_size"] = len(dictionary)
    ends = np.cumsum([len(f) for f in frames], dtype=np.int64).astype("<u4")
    return b"".join([table.tobytes(), ends.tobytes(), dictionary, *frames])


def tries_dictionary(size: int, dictionary_block_size: int) -> bool:
    """Whether :func:`encode_page` tries a blockable payload of ``size`` bytes as
    ZSTD_DICT_BLOCKS of ``dictionary_block_size`` (0: never).

    Example:
        >>> tries_dictionary(64 << 10, 2048), tries_dictionary(60 << 10, 2048)
        (True, False)
    """
    return 0 < dictionary_block_size and size >= _DICTIONARY_MIN_BLOCKS * dictionary_block_size


def _train_dictionary(data: memoryview, level: int) -> zstandard.ZstdCompressionDict | None:
    """A zstd dictionary of :data:`DICTIONARY_SIZE` bytes trained on pieces spread evenly
    over ``data`` (zstd's fastcover trainer with fixed parameters: about a millisecond),
    or None when zstd cannot train one (too little or too uniform data)."""
    piece = _DICTIONARY_SAMPLE_BYTES
    step = max(piece, len(data) // _DICTIONARY_SAMPLES)
    samples: list[bytes | bytearray | memoryview] = [
        bytes(data[at : at + piece]) for at in range(0, len(data) - piece + 1, step)
    ]
    try:
        return zstandard.train_dictionary(
            DICTIONARY_SIZE, samples[:_DICTIONARY_SAMPLES], k=50, d=6, f=16, accel=4, level=level
        )
    except zstandard.ZstdError:
        return None


def _compress_dict_blocks(payload: bytes | memoryview, level: int, block_size: int) -> bytes:
    """A ZSTD_DICT_BLOCKS body (format 1.7) of ``payload``, or b"" when no dictionary could
    be trained: DictBlockTable, frame ends (u32), the dictionary, then one zstd frame per
    block, compressed with the dictionary (content checksum, no dictionary id)."""
    trained = _train_dictionary(memoryview(payload).cast("B"), level)
    if trained is None:
        return b""
    comp = zstandard.ZstdCompressor(
        level=level, dict_data=trained, write_checksum=True, write_dict_id=False
    )
    frames = _block_frames(payload, level, block_size, comp)
    return _blocks_body(frames, block_size, trained.as_bytes())


def _unique(blocks: np.ndarray) -> np.ndarray:
    """The sorted distinct values of ``blocks``: kept in place when they are already
    non-decreasing (a point read's ranges usually are), else ``np.unique``."""
    if bool((blocks[1:] >= blocks[:-1]).all()):
        return blocks[np.concatenate(([True], blocks[1:] != blocks[:-1]))]
    return np.unique(blocks)


def units_of(begins: np.ndarray, ends: np.ndarray, unit: int) -> np.ndarray:
    """The sorted distinct units of ``unit`` bytes (unit ``k``: bytes ``[k * unit, (k + 1)
    * unit)``) holding the byte ranges ``[begins[i], ends[i])`` (each non-empty): a page's
    blocks, or the units a sparse page fetches.

    Example:
        >>> units_of(np.array([5000, 0, 100]), np.array([9000, 10, 200]), 4096).tolist()
        [0, 1, 2]
    """
    first = np.asarray(begins, dtype=np.int64) // unit
    last = (np.asarray(ends, dtype=np.int64) - 1) // unit
    if len(first) == 0:
        return np.zeros(0, dtype=np.int64)
    if bool((first == last).all()):
        return _unique(first)
    spans = last - first + 1
    steps = np.arange(int(spans.sum())) - np.repeat(np.cumsum(spans) - spans, spans)
    return _unique(np.repeat(first, spans) + steps)


class BlockedBody:
    """A validated ZSTD_BLOCKS page body: decompress all of it, or only some blocks.

    Example:
        >>> body = _compress_blocks(bytes(range(256)) * 40, 3, 4096)
        >>> b = BlockedBody(memoryview(body), 10240, "p")
        >>> b.num_blocks, b.blocks_for(np.array([5000]), np.array([5100])).tolist()
        (3, [1])
        >>> b.decompress_all()[5000:5002] == (bytes(range(256)) * 40)[5000:5002]
        True
    """

    def __init__(self, body: memoryview, size: int, where: str, dictionary: bool = False) -> None:
        """``dictionary``: a ZSTD_DICT_BLOCKS body (format 1.7), whose frames share the zstd
        dictionary stored after the frame ends."""
        self.where = where
        self.size = size
        table_dtype = DICT_BLOCK_TABLE_DTYPE if dictionary else BLOCK_TABLE_DTYPE
        head = table_dtype.itemsize
        if len(body) < head:
            raise InvalidFileError(f"{where}: blocked page shorter than its block table")
        table = np.frombuffer(body, dtype=table_dtype, count=1)[0]
        self.block_size = int(table["block_size"])
        self.num_blocks = int(table["num_blocks"])
        if self.block_size == 0 or self.num_blocks != -(-size // self.block_size):
            raise InvalidFileError(
                f"{where}: {self.num_blocks} blocks of {self.block_size} bytes cannot hold "
                f"{size} bytes"
            )
        start = head + 4 * self.num_blocks
        if start > len(body):
            raise InvalidFileError(f"{where}: block table runs past the page")
        ends = np.frombuffer(body, dtype="<u4", count=self.num_blocks, offset=head)
        self.ends = ends.astype(np.int64)
        self.dictionary: memoryview | None = None
        self._dctx: zstandard.ZstdDecompressor | None = None
        if dictionary:
            dict_size = int(table["dict_size"])
            if dict_size == 0 or int(table["reserved"]) != 0 or start + dict_size > len(body):
                raise InvalidFileError(f"{where}: bad zstd dictionary size {dict_size}")
            self.dictionary = body[start : start + dict_size]
            start += dict_size
        self.frames_at = start  # body offset of the first frame
        self.frames = body[start:]
        starts = np.concatenate([[0], self.ends[:-1]]) if self.num_blocks else self.ends
        last = int(self.ends[-1]) if self.num_blocks else 0  # no blocks: no frame bytes
        if last != len(self.frames) or bool((self.ends < starts).any()):
            raise InvalidFileError(f"{where}: block frame ends are inconsistent")
        self.starts = starts

    @classmethod
    def of(cls, head: PageHead, where: str) -> BlockedBody:
        """The blocked body of a page whose compression is one of :data:`BLOCKED`."""
        dictionary = head.compression == Compression.ZSTD_DICT_BLOCKS
        return cls(head.body, head.size, where, dictionary)

    def _decompressor(self) -> zstandard.ZstdDecompressor:
        """A decompressor holding the page's dictionary (built once per body), or the
        thread's plain one. A corrupt dictionary fails when a frame is decompressed, and
        a wrong one decodes to bytes that fail the frame's content checksum."""
        if self.dictionary is None:
            return _zstd_decompressor()
        if self._dctx is None:
            loaded = zstandard.ZstdCompressionDict(
                bytes(self.dictionary), dict_type=zstandard.DICT_TYPE_FULLDICT
            )
            self._dctx = zstandard.ZstdDecompressor(dict_data=loaded)
        return self._dctx

    def block_bytes(self, k: int) -> int:
        """Decoded bytes of block ``k``."""
        return min(self.block_size, self.size - k * self.block_size)

    def blocks_for(self, begins: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The blocks holding decoded byte ranges ``[begins[i], ends[i])`` (non-empty)."""
        return units_of(begins, ends, self.block_size)

    def decompress(self, k: int) -> bytes:
        """Block ``k``, checked against its declared size and zstd content checksum."""
        frame = self.frames[int(self.starts[k]) : int(self.ends[k])]
        return _zstd_decompress(frame, self.block_bytes(k), True, self._decompressor())

    def decompress_many(self, blocks: Sequence[int]) -> list[Any]:
        """The decoded bytes of each of ``blocks``, in order.

        Several blocks are decompressed by one call that releases the GIL once (not once
        per block), after the same checks as :meth:`decompress` (:meth:`check_frames`):
        each frame's header declares its block's size and a content checksum (verified
        while decompressing), and the frame fills its range exactly.
        """
        if len(blocks) < 2:
            return [self.decompress(k) for k in blocks]
        ks = np.asarray(blocks, dtype=np.int64)
        sizes = np.minimum(self.block_size, self.size - ks * self.block_size)
        self.check_frames(ks, sizes)
        view = self.frames
        spans = zip(self.starts[ks].tolist(), self.ends[ks].tolist(), strict=True)
        frames: list[bytes | bytearray | memoryview] = [view[b:e] for b, e in spans]
        try:
            got = self._decompressor().multi_decompress_to_buffer(
                frames, decompressed_sizes=sizes.astype("=u8").tobytes()
            )
        except zstandard.ZstdError as exc:
            raise _zstd_error(f"{self.where}: corrupt zstd block", exc) from None
        if len(got) != len(ks) or got.size() != int(sizes.sum()):
            raise InvalidFileError(f"{self.where}: a zstd block has the wrong size")
        return [got[i] for i in range(len(ks))]

    def check_frames(self, ks: np.ndarray, sizes: np.ndarray) -> None:
        """:func:`_check_frame` for the frames of blocks ``ks`` (decoding to ``sizes``
        bytes each)."""
        _check_frames(self.frames, self.starts[ks], self.ends[ks], sizes, self.where)

    def decompress_into(self, out: np.ndarray, blocks: np.ndarray) -> None:
        """Write the given blocks at their decoded offsets into ``out`` (size bytes)."""
        ks = np.asarray(blocks, dtype=np.int64).tolist()
        dest = memoryview(out)  # type: ignore[arg-type]
        bs, size = self.block_size, self.size
        try:
            for k, part in zip(ks, self.decompress_many(ks), strict=True):
                at = k * bs
                dest[at : min(at + bs, size)] = part
        except ValueError:  # a part of another size than its block
            raise InvalidFileError(f"{self.where}: a zstd block has the wrong size") from None

    def _check_frame_starts(self) -> None:
        """Every block's range starts a zstd frame (magic number) that carries a content
        checksum (frame header descriptor bit 2), checked for all blocks at once."""
        frames = np.frombuffer(self.frames, dtype=np.uint8)
        starts = self.starts[self.ends - self.starts >= 6]  # magic and descriptor present
        if len(starts) != self.num_blocks:
            raise InvalidFileError(f"{self.where}: a zstd block frame is too short")
        magic = sum(frames[starts + i].astype(np.uint32) << np.uint32(8 * i) for i in range(4))
        if bool(np.any(magic != _ZSTD_MAGIC)):
            raise InvalidFileError(f"{self.where}: a zstd block does not start a frame")
        if bool(np.any(frames[starts + 4] & 4 == 0)):
            raise InvalidFileError(f"{self.where}: zstd block frame carries no content checksum")

    def decompress_all(self) -> memoryview:
        """Every block, back to back (:meth:`decompress_whole_into`)."""
        out = bytearray(self.size)
        self.decompress_whole_into(np.frombuffer(out, dtype=np.uint8))
        return memoryview(out)

    def decompress_whole_into(self, out: np.ndarray) -> None:
        """Every block into ``out`` (exactly ``size`` bytes) by one streaming pass over
        the frames: no per-block Python work and no per-block buffers. Each frame's content
        checksum is verified as it is read (a page read whole also has its page CRC); the
        frames must decode to exactly ``size`` bytes with nothing after them.
        """
        if len(out) != self.size:
            raise InvalidFileError(
                f"{self.where}: page decodes to {self.size} bytes, not {len(out)}"
            )
        if self.num_blocks == 0:
            return
        self._check_frame_starts()
        try:
            reader = self._decompressor().stream_reader(
                self.frames, read_size=len(self.frames), read_across_frames=True
            )
            got = reader.readinto(out)
            while got < self.size:  # readinto may stop early; a short stream ends in 0
                more = reader.readinto(out[got:])
                if more == 0:
                    break
                got += more
            extra = reader.read(1) if got == self.size else b""
        except zstandard.ZstdError as exc:
            raise _zstd_error(f"{self.where}: corrupt zstd block", exc) from None
        if got != self.size or extra:
            raise InvalidFileError(f"{self.where}: zstd blocks do not decode to {self.size} bytes")


def decompress_frames(
    frames: Sequence[bytes | bytearray | memoryview], sizes: Sequence[int], where: str
) -> bytes:
    """Zstd frames of exactly ``sizes`` decoded bytes each, decompressed by one call that
    releases the GIL once, back to back. zstd verifies each frame's content checksum when
    it carries one (callers check that it does) and refuses a frame that decodes to
    another size; a mismatch is a ChecksumError, any other failure an InvalidFileError.

    Example:
        >>> comp = _zstd_compressor(3, checksum=True)
        >>> decompress_frames([comp.compress(b"ab" * 8), comp.compress(b"c")], [16, 1], "p")
        b'ababababababababc'
    """
    if not frames:
        return b""
    try:
        got = _zstd_decompressor().multi_decompress_to_buffer(
            list(frames), decompressed_sizes=np.asarray(sizes, dtype="=u8").tobytes()
        )
    except zstandard.ZstdError as exc:
        raise _zstd_error(f"{where}: corrupt zstd block", exc) from None
    # zstd refused any frame not decoding to exactly its size; the count is checked anyway
    out = b"".join(got)  # type: ignore[arg-type]  # a sequence of buffer segments
    if len(got) != len(frames) or len(out) != sum(sizes):
        raise InvalidFileError(f"{where}: a zstd block decompressed to the wrong size")
    return out


def _crc_blocks_body(head: bytes, payload: bytes | memoryview, block_size: int) -> bytes:
    """A CRC_BLOCKS body (format 1.5) for the page header bytes ``head`` ([4, 16), with
    compression CRC_BLOCKS): the CrcBlockTable, a CRC32 per block, then the payload."""
    data = memoryview(payload).cast("B")
    if native.KERNELS is not None:
        crcs = np.frombuffer(native.KERNELS.block_crcs(data, block_size), dtype="<u4")
    else:
        crcs = np.array(
            [crc32(data[k : k + block_size]) for k in range(0, len(data), block_size)],
            dtype="<u4",
        )
    table = np.zeros(1, dtype=CRC_BLOCK_TABLE_DTYPE)
    table["block_size"], table["num_blocks"] = block_size, len(crcs)
    table["head_crc"] = crc32(table.tobytes()[:8], crc32(head))
    return b"".join([table.tobytes(), crcs.tobytes(), data])


class CrcBlockedBody:
    """A validated CRC_BLOCKS page body (format 1.5): the payload stored uncompressed with
    a CRC32 per block, so that a point read verifies exactly the blocks it reads.

    Example:
        >>> payload = bytes(range(256)) * 40
        >>> page = memoryview(encode_page(payload, num_values=10240, codec=Compression.NONE,
        ...                               checksum_block_size=4096))
        >>> b = CrcBlockedBody(page, 10240, "p")
        >>> b.num_blocks, b.verify_head(), b.verify(np.array([1, 2]))
        (3, None, None)
        >>> bytes(b.payload[5000:5002]) == payload[5000:5002]
        True
    """

    def __init__(self, page: memoryview, size: int, where: str) -> None:
        self.where = where
        self.size = size
        self.page = page
        body = page[PAGE_HEADER_SIZE:]
        head = CRC_BLOCK_TABLE_DTYPE.itemsize
        if len(body) < head:
            raise InvalidFileError(f"{where}: checksummed page shorter than its block table")
        table = np.frombuffer(body, dtype=CRC_BLOCK_TABLE_DTYPE, count=1)[0]
        self.block_size = int(table["block_size"])
        self.num_blocks = int(table["num_blocks"])
        self.head_crc = int(table["head_crc"])
        if self.block_size == 0 or self.num_blocks != -(-size // self.block_size):
            raise InvalidFileError(
                f"{where}: {self.num_blocks} blocks of {self.block_size} bytes cannot hold "
                f"{size} bytes"
            )
        start = head + 4 * self.num_blocks
        if len(body) != start + size:
            raise InvalidFileError(f"{where}: checksummed page has {len(body)} bytes")
        self.crcs = np.frombuffer(body, dtype="<u4", count=self.num_blocks, offset=head)
        self.payload = body[start:]

    def verify_head(self) -> None:
        """Check the page header and the block table against ``head_crc``."""
        table = PAGE_HEADER_SIZE + 8
        if crc32(self.page[PAGE_HEADER_SIZE:table], crc32(self.page[4:16])) != (self.head_crc):
            raise ChecksumError(f"{self.where}: page header CRC32 mismatch")

    def blocks_for(self, begins: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The blocks holding payload byte ranges ``[begins[i], ends[i])`` (non-empty)."""
        return units_of(begins, ends, self.block_size)

    def verify_ranges(self, begins: np.ndarray, ends: np.ndarray, done: np.ndarray) -> None:
        """Check the CRC32 of every block holding part of a payload byte range
        ``[begins[i], ends[i])`` (int64; empty ones hold none) that ``done`` (a bool per
        block) does not mark yet, and mark it: ChecksumError on a mismatch. One call of the
        compiled kernel when it is built (:data:`native.KERNELS`), else :meth:`verify`.
        """
        kernels = native.KERNELS
        if kernels is not None and self.payload.c_contiguous:
            begins = np.ascontiguousarray(begins, dtype=np.int64)  # (no copy when they are)
            ends = np.ascontiguousarray(ends, dtype=np.int64)
            try:
                bad = kernels.verify_ranges(
                    self.payload, self.block_size, self.crcs, begins, ends, done.view(np.uint8)
                )
            except ValueError as exc:  # a range outside the payload
                raise InvalidFileError(f"{self.where}: {exc}") from None
            if bad >= 0:
                raise ChecksumError(f"{self.where}: block {bad} CRC32 mismatch")
            return
        keep = ends > begins
        begins, ends = begins[keep], ends[keep]
        if len(begins) and (int(begins.min()) < 0 or int(ends.max()) > self.size):
            raise InvalidFileError(f"{self.where}: a range lies outside the payload")
        blocks = self.blocks_for(begins, ends)
        todo = blocks[~done[blocks]]
        if len(todo):
            self.verify(todo)
            done[todo] = True

    def verify_packed(self, offset: int, bits: int, rows: np.ndarray, done: np.ndarray) -> None:
        """:meth:`verify_ranges` for the bytes of the values ``rows`` (int64) bit-packed at
        ``bits`` (1..64) from payload byte ``offset``: the ranges are computed and checked in
        the one kernel call, not built as arrays first (Python: through verify_ranges)."""
        kernels = native.KERNELS
        if kernels is None or not self.payload.c_contiguous:
            if len(rows) and int(rows.min()) < 0:
                raise InvalidFileError(f"{self.where}: a range lies outside the payload")
            self.verify_ranges(*bitpack.byte_ranges(offset, bits, rows), done)
            return
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        try:
            bad = kernels.verify_packed(
                self.payload, self.block_size, self.crcs, offset, bits, rows, done.view(np.uint8)
            )
        except ValueError as exc:  # a range outside the payload
            raise InvalidFileError(f"{self.where}: {exc}") from None
        if bad >= 0:
            raise ChecksumError(f"{self.where}: block {bad} CRC32 mismatch")

    def verify(self, blocks: np.ndarray) -> None:
        """Check the CRC32 of each of ``blocks`` (ChecksumError on a mismatch)."""
        size, data = self.block_size, self.payload
        # one comprehension, compared as lists: a NumPy scalar or a loop body per block
        # costs more than the CRC of a 512-byte block
        got = [crc32(data[at : at + size]) for at in (blocks * size).tolist()]
        expected = self.crcs[blocks].tolist()
        if got != expected:
            k = next(int(k) for k, a, b in zip(blocks, got, expected, strict=True) if a != b)
            raise ChecksumError(f"{self.where}: block {k} CRC32 mismatch")


def check_page_crc(page: memoryview, where: str) -> None:
    """Verify a page's CRC32 (when its header says it carries one): ChecksumError."""
    header = np.frombuffer(page, dtype=PAGE_HEADER_DTYPE, count=1)[0]
    if int(header["flags"]) & _HEADER_FLAG_CRC:
        actual = crc32(page[PAGE_HEADER_SIZE:], crc32(page[4:PAGE_HEADER_SIZE]))
        if actual != int(header["crc"]):
            raise ChecksumError(f"{where}: page CRC32 mismatch")


def _none_compress(data: bytes | memoryview, level: int) -> bytes:
    return bytes(data)


def _none_decompress(body: memoryview, size: int) -> bytes:
    return body.tobytes()


CODECS: dict[Compression, Codec] = {
    Compression.NONE: Codec(_none_compress, _none_decompress),
    Compression.ZSTD: Codec(_zstd_compress, _zstd_decompress),
}


def encode_page(
    payload: bytes | memoryview,
    *,
    num_values: int,
    codec: Compression,
    level: int = 3,
    crc: bool = True,
    encoding: Encoding = Encoding.PLAIN,
    block_size: int = 0,
    block_overhead: float = 0.1,
    keep_ratio: float = COMPRESS_RATIO,
    checksum_block_size: int = 0,
    block_sample: int = 0,
    dictionary_block_size: int = 0,
    dictionary_only: bool = False,
) -> bytes:
    """Compress ``payload`` (already encoded values) and prepend a page header.

    With zstd and a ``block_size``, a payload larger than one block is compressed as
    independent blocks (ZSTD_BLOCKS) when they are at most ``block_overhead`` (a fraction)
    larger than one zstd frame of the page, else as one frame: data whose redundancy spans
    more than a block (long repeated text) keeps its ratio. A compressed body larger than
    ``keep_ratio`` times the payload (default 0.9: it must save at least 10%) is not kept:
    the page is stored uncompressed, and with a ``checksum_block_size`` (and ``crc``) a
    payload larger than one such block as CRC_BLOCKS (format 1.5): a CRC32 per block.

    With a ``block_sample`` ``s`` > 0, blocks vs one frame is decided on ``s`` blocks
    spread evenly over the page (their frames against one frame of those blocks' bytes):
    a page of at most ``s`` blocks is decided exactly as without it, a larger one costs a
    zstd pass over ``s`` blocks instead of the whole page (the page is compressed as one
    frame only when its blocks lose).

    With a ``dictionary_block_size`` as well, a payload of at least 32 such blocks is also
    tried as ZSTD_DICT_BLOCKS (format 1.7): blocks of that size sharing a zstd dictionary
    trained on the page. They are kept when no larger than the ZSTD_BLOCKS body, or, when
    one frame won, than one frame plus ``block_overhead``: a point read then decompresses
    a smaller block per value for the same bytes on disk. ``dictionary_only``: try them
    first and keep them when a dictionary can be trained (the chunk's first page won).

    Example:
        >>> import random
        >>> rnd = random.Random(0)
        >>> words = [b"%x" % rnd.getrandbits(24) for _ in range(300)]
        >>> text = b" ".join(rnd.choice(words) for _ in range(40000))
        >>> page = encode_page(text, num_values=1, codec=Compression.ZSTD, block_size=8192,
        ...                    block_overhead=0.25, dictionary_block_size=2048)
        >>> Compression(page[5]).name
        'ZSTD_DICT_BLOCKS'
    """
    body: bytes | memoryview = payload
    used = Compression.NONE
    if codec != Compression.NONE and len(payload) > 0:
        blocks = codec == Compression.ZSTD and 0 < block_size < len(payload)
        shared = blocks and tries_dictionary(len(payload), dictionary_block_size)
        compressed, chosen = b"", Compression.ZSTD_DICT_BLOCKS
        if shared and dictionary_only:  # b"": no dictionary could be trained
            compressed = _compress_dict_blocks(payload, level, dictionary_block_size)
        if not compressed:
            compressed, chosen = _compress_choice(
                payload,
                codec,
                level,
                block_size if blocks else 0,
                block_overhead,
                block_sample,
                _sections(payload, encoding) if blocks else (),
            )
            if shared and not dictionary_only:
                tried = _compress_dict_blocks(payload, level, dictionary_block_size)
                limit = len(compressed) * (1 + block_overhead)
                if chosen == Compression.ZSTD_BLOCKS:
                    limit = len(compressed)
                if tried and len(tried) <= limit:
                    compressed, chosen = tried, Compression.ZSTD_DICT_BLOCKS
        if len(compressed) <= len(payload) * keep_ratio:
            body, used = compressed, chosen
    crc_blocks = used == Compression.NONE and crc and 0 < checksum_block_size < len(payload)
    if crc_blocks:
        used = Compression.CRC_BLOCKS
    fields = (0, encoding, used, _HEADER_FLAG_CRC if crc else 0, 0, len(payload), num_values)
    head = np.array([fields], dtype=PAGE_HEADER_DTYPE).tobytes()  # one call, not six
    if crc_blocks:
        body = _crc_blocks_body(head[4:], payload, checksum_block_size)
    if crc:
        checksum = crc32(body, crc32(head[4:]))
        head = np.uint32(checksum).astype("<u4").tobytes() + head[4:]
    return head + bytes(body)


def _sections(payload: bytes | memoryview, encoding: Encoding) -> tuple[int, ...]:
    """Offsets in ``payload`` where its bytes change kind (the encoding's
    :attr:`~fermion.format.encoding.registry.EncodingKind.sections`), else none."""
    sections = ENCODINGS[encoding].sections
    return () if sections is None else sections(payload)


def _spread(count: int, n: int) -> list[int]:
    """``n`` of ``range(count)`` spread evenly, first and last included: the rounded
    ``numpy.linspace(0, count - 1, n)`` (the same float steps, ties to even), without its
    microseconds of overhead per page.

    Example:
        >>> _spread(63, 4), _spread(10, 1)
        ([0, 21, 41, 62], [0])
    """
    if n == 1:
        return [0]
    step = (count - 1) / (n - 1)
    return [round(i * step) for i in range(n - 1)] + [count - 1]


def _compress_choice(
    payload: bytes | memoryview,
    codec: Compression,
    level: int,
    block_size: int,
    block_overhead: float,
    block_sample: int,
    sections: tuple[int, ...] = (),
) -> tuple[bytes, Compression]:
    """One frame or ZSTD_BLOCKS (``block_size`` > 0), as :func:`encode_page` decides
    (``sections``: see :func:`_adaptive_frames`)."""
    if block_size == 0:
        return CODECS[codec].compress(payload, level), codec
    always = block_overhead == float("inf")
    if not always and len(payload) > block_sample * block_size > 0:
        # the sampled blocks are compressed first, the others only if blocks win
        data = memoryview(payload).cast("B")
        count = -(-len(data) // block_size)
        picked = _spread(count, block_sample)
        comp = _zstd_compressor(level, checksum=True)
        parts = [data[k * block_size : (k + 1) * block_size] for k in picked]
        tried = dict(zip(picked, [comp.compress(part) for part in parts], strict=True))
        frame = CODECS[codec].compress(b"".join(parts), level)
        if sum(len(f) for f in tried.values()) > len(frame) * (1 + block_overhead):
            return CODECS[codec].compress(payload, level), codec
        frames = _block_frames(data, level, block_size, known=tried, sections=sections)
        return _blocks_body(frames, block_size), Compression.ZSTD_BLOCKS
    one = b"" if always else CODECS[codec].compress(payload, level)
    blocked = _compress_blocks(payload, level, block_size, sections)
    if always or len(blocked) <= len(one) * (1 + block_overhead):
        return blocked, Compression.ZSTD_BLOCKS
    return one, codec


class PageHead(NamedTuple):
    """A page's validated header fields and its stored body."""

    encoding: Encoding
    compression: Compression
    size: int  # decoded payload bytes
    body: memoryview  # of a CRC_BLOCKS page: the payload (compression is then NONE)
    crc_blocks: bool = False  # the page is stored as CRC_BLOCKS (format 1.5)
    crc_body: CrcBlockedBody | None = None  # of a CRC_BLOCKS page: its validated body


_ENCODINGS = {int(e): e for e in Encoding}  # (IntEnum construction costs a microsecond)
_COMPRESSIONS = {int(c): c for c in Compression}


def read_page_head(
    page: memoryview,
    *,
    expected_values: int,
    expected_size: int | None,
    where: str,
    verify_crc: bool = True,
) -> PageHead:
    """Validate a page's header (and CRC32) against the metadata; nothing is decoded."""
    if len(page) < PAGE_HEADER_SIZE:
        raise InvalidFileError(f"{where}: page of {len(page)} bytes is shorter than its header")
    # the fields as Python ints, read at once (a numpy record field costs a microsecond)
    crc, enc_id, comp_id, flags, _, size, num_values = np.frombuffer(
        page, dtype=PAGE_HEADER_DTYPE, count=1
    ).item()
    body = page[PAGE_HEADER_SIZE:]
    if verify_crc and flags & _HEADER_FLAG_CRC:
        actual = crc32(body, crc32(page[4:PAGE_HEADER_SIZE]))
        if actual != crc:
            raise ChecksumError(f"{where}: page CRC32 mismatch")
    if num_values != expected_values:
        raise InvalidFileError(
            f"{where}: page holds {num_values} values, metadata says {expected_values}"
        )
    compression = _COMPRESSIONS.get(comp_id)
    encoding = _ENCODINGS.get(enc_id)
    if compression is None or encoding is None:
        raise UnsupportedVersionError(
            f"{where}: unknown encoding {enc_id} or compression {comp_id}"
        )
    # an encoded payload is never larger than the plain values plus its EncodingHeader
    if expected_size is not None and size > expected_size + encodings.HEADER_SIZE:
        raise InvalidFileError(f"{where}: page decodes to {size} bytes, expected {expected_size}")
    if compression == Compression.NONE and len(body) != size:
        raise InvalidFileError(f"{where}: stored page has {len(body)} bytes, header {size}")
    if compression == Compression.CRC_BLOCKS:  # the payload itself, checked: its size
        crc_body = CrcBlockedBody(page, size, where)
        return PageHead(encoding, Compression.NONE, size, crc_body.payload, True, crc_body)
    return PageHead(encoding, compression, size, body)


def decompress_body(head: PageHead, where: str) -> bytes | memoryview:
    """The whole decoded payload of a page."""
    if head.compression == Compression.NONE:
        return head.body
    if head.compression in BLOCKED:
        return BlockedBody.of(head, where).decompress_all()
    return CODECS[head.compression].decompress(head.body, head.size)


def decode_page(
    page: memoryview,
    *,
    expected_values: int,
    expected_size: int | None,
    where: str,
    verify_crc: bool = True,
) -> Decoded:
    """Validate, checksum, decompress and decode one page to its plain stream contents.

    Args:
        page: the page bytes (header + body).
        expected_values: values the metadata says the page holds.
        expected_size: the exact plain size implied by the metadata, if known; it also
            bounds what a corrupt header can make us allocate.
        where: a description for error messages.
        verify_crc: check the CRC32 when the page carries one.

    Returns:
        The plain payload; a :class:`DictionaryPage` for DICTIONARY pages,
        :data:`DERIVED` for DERIVED offsets pages and, for stripe dictionaries (1.4), a
        :class:`StripeDictionaryPage` or :class:`IndexPage`.
    """
    head = read_page_head(
        page,
        expected_values=expected_values,
        expected_size=expected_size,
        where=where,
        verify_crc=verify_crc,
    )
    payload = decompress_body(head, where)
    decoded = decode_payload(head.encoding, payload, expected_values, expected_size, where)
    return cast(Decoded, decoded)  # None only when decoding ``into`` a buffer


def is_derived(page: memoryview) -> bool:
    """Whether the page header (not yet checked) names the DERIVED encoding."""
    if len(page) < PAGE_HEADER_SIZE:
        return False
    header = np.frombuffer(page, dtype=PAGE_HEADER_DTYPE, count=1)[0]
    kind = kind_of(int(header["encoding"]))
    return kind is not None and kind.derived


def plain_size_hint(page: memoryview) -> int | None:
    """Decoded bytes of a PLAIN page from its header, before any check (None: not PLAIN or
    implausible); callers size buffers with it and :func:`decode_page_into` verifies it."""
    if len(page) < PAGE_HEADER_SIZE:
        return None
    header = np.frombuffer(page, dtype=PAGE_HEADER_DTYPE, count=1)[0]
    size = int(header["decoded_size"])
    stored = len(page) - PAGE_HEADER_SIZE
    kind = kind_of(int(header["encoding"]))
    if kind is None or not kind.plain or size > _MAX_RATIO * max(stored, 1):
        return None
    return size


def decode_page_into(
    page: memoryview,
    out: np.ndarray,
    *,
    expected_values: int,
    expected_size: int | None,
    where: str,
    verify_crc: bool = True,
) -> None:
    """:func:`decode_page` writing the plain payload into ``out`` (exactly its size); a
    PLAIN blocked page is decompressed block by block straight into ``out``."""
    head = read_page_head(
        page,
        expected_values=expected_values,
        expected_size=expected_size,
        where=where,
        verify_crc=verify_crc,
    )
    plain = ENCODINGS[head.encoding].plain
    if plain and head.size != len(out):
        raise InvalidFileError(f"{where}: page decodes to {head.size} bytes, expected {len(out)}")
    if plain and head.compression in BLOCKED:
        BlockedBody.of(head, where).decompress_whole_into(out)
        return
    payload = decode_payload(
        head.encoding, decompress_body(head, where), expected_values, expected_size, where, out
    )
    if payload is None:  # decoded straight into out
        return
    if not isinstance(payload, bytes | memoryview) or len(payload) != len(out):
        raise InvalidFileError(f"{where}: page does not decode to {len(out)} plain bytes")
    out[:] = np.frombuffer(payload, dtype=np.uint8)


def decode_offsets_into(
    page: memoryview,
    out: np.ndarray,
    *,
    expected_values: int,
    where: str,
    verify_crc: bool = True,
) -> None:
    """An OFFSETS page of ``expected_values`` values (plain offsets, or value lengths
    through the integer codec) into ``out`` (its int32 or int64 entries, one per value),
    relative to the page's first offset and checked as :mod:`fermion.format.encoding.offsets`
    describes. A DERIVED page has no offsets of its own: it never gets a target."""
    width = out.itemsize
    size = (expected_values + 1) * width
    head = read_page_head(
        page,
        expected_values=expected_values,
        expected_size=size,
        where=where,
        verify_crc=verify_crc,
    )
    payload = decompress_body(head, where)
    kind = ENCODINGS[head.encoding]
    if kind.plain:
        if len(payload) != size:
            raise InvalidFileError(
                f"{where}: page decodes to {len(payload)} bytes, expected {size}"
            )
        plain_into(np.frombuffer(payload, dtype=out.dtype), out, where)
        return
    if kind.ints is None:  # value lengths go through the integer codec only
        raise InvalidFileError(f"{where}: a {head.encoding.name} page in an offsets run")
    h = encodings.read_header(payload, where)
    if int(h["count"]) != expected_values:
        raise InvalidFileError(f"{where}: encoded page holds {int(h['count'])} values")
    if not int(h["flags"]) & EncodingFlag.LENGTHS or int(h["out_width"]) != width:
        raise InvalidFileError(f"{where}: encoded values decode to {width}-byte offsets")
    bounds = encodings.int_bounds(head.encoding, h)
    unpack = kind.ints.unpacks_into  # packed + base: lengths summed in place
    if unpack is not None and sums_fit(bounds, expected_values, out.dtype):
        unpack(payload, out.view(f"<u{width}"), where)
        np.cumsum(out, out=out)  # no sum can wrap: see sums_fit
        return
    ints = encodings.decode_ints(payload, head.encoding, where)
    lengths_into(ints, out, where, bounds)
