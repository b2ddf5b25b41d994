"""zstd page bodies (docs/FORMAT.md §5.2): one frame (ZSTD), or a frame table and
independent frames of ``block_size`` decoded bytes each (ZSTD_BLOCKS, format 1.2), so that
a reader wanting a few values decompresses only the blocks holding them
(:class:`BlockedBody`); since format 1.7 the frames may share a zstd dictionary stored in
the page (ZSTD_DICT_BLOCKS), so that small blocks keep the ratio of large ones.

Example:
    >>> payload = b"fermion " * 4096
    >>> body = BlockedBody(memoryview(compress_blocks(payload, 3, 8192)), len(payload), "p")
    >>> body.num_blocks, body.decompress(1)[:8]
    (4, b'fermion ')
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import zstandard

from fermion.errors import ChecksumError, InvalidFileError
from fermion.format import native
from fermion.format.encoding.crc_blocks import units_of
from fermion.format.encoding.page_header import PageHead
from fermion.format.metadata.structs import (
    BLOCK_TABLE_DTYPE,
    DICT_BLOCK_TABLE_DTYPE,
    Compression,
)

__all__ = [
    "BLOCKED",
    "DICTIONARY_SIZE",
    "BlockedBody",
    "block_frames",
    "blocks_body",
    "compress_blocks",
    "compress_dict_blocks",
    "decompress_frames",
    "tries_dictionary",
    "zstd_compress",
    "zstd_compressor",
    "zstd_decompress",
]

_ZSTD_MAGIC = 0xFD2FB528  # the first four bytes of a zstd frame, little-endian

_local = threading.local()

BLOCKED = (Compression.ZSTD_BLOCKS, Compression.ZSTD_DICT_BLOCKS)  # read by BlockedBody
DICTIONARY_SIZE = 8 << 10  # bytes of the zstd dictionary of a ZSTD_DICT_BLOCKS page
# a dictionary is tried only on payloads of at least this many blocks: below, its own
# bytes cost more than it saves
_DICTIONARY_MIN_BLOCKS = 32
_DICTIONARY_SAMPLES = 64  # the dictionary is trained on this many pieces of the payload
_DICTIONARY_SAMPLE_BYTES = 1 << 10  # ... of this many bytes each, spread evenly over it


def zstd_compressor(level: int, checksum: bool = False) -> zstandard.ZstdCompressor:
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


def zstd_compress(data: bytes | memoryview, level: int) -> bytes:
    return zstd_compressor(level).compress(data)


def zstd_decompress(
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
    """The checks :func:`zstd_decompress` makes before decompressing a block's frame: its
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


def compress_blocks(
    payload: bytes | memoryview, level: int, block_size: int, sections: tuple[int, ...] = ()
) -> bytes:
    """A ZSTD_BLOCKS body: BlockTable, frame ends (u32), then one frame per block
    (``sections``: see :func:`_adaptive_frames`)."""
    return blocks_body(block_frames(payload, level, block_size, sections=sections), block_size)


def block_frames(
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
    """The frames of :func:`block_frames` without a dictionary; ``sections``: the
    payload offsets where its bytes may change kind (see :func:`_sections`).

    Example:
        >>> import os
        >>> data = memoryview(os.urandom(8192) + bytes(8192))
        >>> frames = _adaptive_frames(data, 3, 2048, {})
        >>> [len(f) > 2048 for f in frames]  # random bytes stay as they are; zeros shrink
        [True, True, True, True, False, False, False, False]
    """
    comp = zstd_compressor(level, checksum=True)
    fast = zstd_compressor(_STORE_LEVEL, checksum=True)
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


def blocks_body(frames: list[bytes], block_size: int, dictionary: bytes = b"") -> bytes:
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


def compress_dict_blocks(payload: bytes | memoryview, level: int, block_size: int) -> bytes:
    """A ZSTD_DICT_BLOCKS body (format 1.7) of ``payload``, or b"" when no dictionary could
    be trained: DictBlockTable, frame ends (u32), the dictionary, then one zstd frame per
    block, compressed with the dictionary (content checksum, no dictionary id)."""
    trained = _train_dictionary(memoryview(payload).cast("B"), level)
    if trained is None:
        return b""
    comp = zstandard.ZstdCompressor(
        level=level, dict_data=trained, write_checksum=True, write_dict_id=False
    )
    frames = block_frames(payload, level, block_size, comp)
    return blocks_body(frames, block_size, trained.as_bytes())


class BlockedBody:
    """A validated ZSTD_BLOCKS page body: decompress all of it, or only some blocks.

    Example:
        >>> body = compress_blocks(bytes(range(256)) * 40, 3, 4096)
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
        return zstd_decompress(frame, self.block_bytes(k), True, self._decompressor())

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
        >>> comp = zstd_compressor(3, checksum=True)
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
