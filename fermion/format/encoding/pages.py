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

This module assembles and takes apart whole pages; each body kind has its own module:
:mod:`~fermion.format.encoding.zstd_blocks` (ZSTD, ZSTD_BLOCKS, ZSTD_DICT_BLOCKS),
:mod:`~fermion.format.encoding.crc_blocks` (CRC_BLOCKS), and the header is read in
:mod:`~fermion.format.encoding.page_header`; the payload inside is decoded through the
encoding registry (:mod:`~fermion.format.encoding.registry`). Their public names are
re-exported here.

Example:
    >>> page = encode_page(b"hello" * 100, num_values=500, codec=Compression.ZSTD, level=3)
    >>> decode_page(memoryview(page), expected_values=500, expected_size=500, where="p")[:5]
    b'hello'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np

from fermion.errors import InvalidFileError
from fermion.format.checksum import crc32
from fermion.format.encoding import encodings, zstd_blocks
from fermion.format.encoding.crc_blocks import CrcBlockedBody, crc_blocks_body, units_of
from fermion.format.encoding.offsets import lengths_into, plain_into, sums_fit
from fermion.format.encoding.page_header import (
    HEADER_FLAG_CRC,
    PAGE_HEADER_SIZE,
    PageHead,
    check_page_crc,
    read_page_head,
)
from fermion.format.encoding.registry import (
    DERIVED,
    ENCODINGS,
    Decoded,
    DictionaryPage,
    decode_payload,
    kind_of,
)
from fermion.format.encoding.zstd_blocks import (
    BLOCKED,
    DICTIONARY_SIZE,
    BlockedBody,
    decompress_frames,
    tries_dictionary,
)
from fermion.format.metadata.structs import PAGE_HEADER_DTYPE, Compression, Encoding, EncodingFlag

__all__ = [
    "ENCODED_COMPRESS_RATIO",
    "CODECS",
    "DERIVED",
    "BLOCKED",
    "BlockedBody",
    "CrcBlockedBody",
    "blocks_win_sample",
    "planes_pay_sample",
    "PLANES_SAMPLE_MARGIN",
    "DICTIONARY_SIZE",
    "DICTIONARY_SKIP_RATIO",
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

COMPRESS_RATIO = 0.9  # keep zstd only if it saves at least 10% (else decode is pure cost)
# ZSTD_BLOCKS at most this many times one frame of the page: ZSTD_DICT_BLOCKS not tried.
# Measured on pages of random, normal and random-walk float64/float32 byte planes, random
# int64, hex text and lineitem's integer and price columns (blocks 0.90-1.043 times one
# frame): the dictionary blocks were 0.3-22% larger than the blocks every time, and trying
# them (training plus a zstd pass of 4 KiB frames) cost about 5 times the blocks' own pass.
# They won only where blocks lost 6% or more (text: lineitem's l_comment 18%, l_shipmode 9%)
DICTIONARY_SKIP_RATIO = 1.02
ENCODED_COMPRESS_RATIO = 0.75  # encoded pages of point-read columns: at least 25%
# a page whose sections (BYTE_SPLIT planes), sampled, compress to more than its keep ratio
# plus this is not compressed whole (planes_pay_sample): random float64 planes sample at
# 0.84-0.89 and are 0.85-0.89 compressed whole, where 0.75 must be reached
PLANES_SAMPLE_MARGIN = 0.05
_MAX_RATIO = 1 << 12  # a size hint beyond this many times the stored bytes is not trusted


@dataclass(frozen=True)
class Codec:
    """A general-purpose compression codec: pure functions over buffers."""

    compress: Callable[[bytes | memoryview, int], bytes]
    decompress: Callable[[memoryview, int], bytes]  # (body, exact decoded size)


def _none_compress(data: bytes | memoryview, level: int) -> bytes:
    return bytes(data)


def _none_decompress(body: memoryview, size: int) -> bytes:
    return body.tobytes()


CODECS: dict[Compression, Codec] = {
    Compression.NONE: Codec(_none_compress, _none_decompress),
    Compression.ZSTD: Codec(zstd_blocks.zstd_compress, zstd_blocks.zstd_decompress),
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
    first and keep them when a dictionary can be trained (the column's first page won).
    They are not tried when the ZSTD_BLOCKS body was compared with one frame and is at
    most :data:`DICTIONARY_SKIP_RATIO` times its size: a shared dictionary wins back what
    independent blocks lose against one frame (what they have in common), and such
    blocks lost almost nothing (random floats' byte planes, hashes, unsorted ids).

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
            compressed = zstd_blocks.compress_dict_blocks(payload, level, dictionary_block_size)
        if not compressed:
            compressed, chosen, one = _compress_choice(
                payload,
                codec,
                level,
                block_size if blocks else 0,
                block_overhead,
                block_sample,
                _sections(payload, encoding) if blocks else (),
            )
            # blocks that lost (almost) nothing to one frame: nothing for a dictionary to win
            near = chosen == Compression.ZSTD_BLOCKS and 0 < one
            near = near and len(compressed) <= one * DICTIONARY_SKIP_RATIO
            if shared and not dictionary_only and not near:
                tried = zstd_blocks.compress_dict_blocks(payload, level, dictionary_block_size)
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
    fields = (0, encoding, used, HEADER_FLAG_CRC if crc else 0, 0, len(payload), num_values)
    head = np.array([fields], dtype=PAGE_HEADER_DTYPE).tobytes()  # one call, not six
    if crc_blocks:
        body = crc_blocks_body(head[4:], payload, checksum_block_size)
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
) -> tuple[bytes, Compression, int]:
    """One frame or ZSTD_BLOCKS (``block_size`` > 0), as :func:`encode_page` decides
    (``sections``: see :func:`_adaptive_frames`), and the size of one frame of the whole
    payload when it was made (else 0).

    Example:
        >>> body, chosen, one = _compress_choice(b"ab" * 8192, Compression.ZSTD, 3, 4096,
        ...                                      0.25, 0)
        >>> chosen.name, one == len(body) < 100  # one frame: blocks would be 5 times larger
        ('ZSTD', True)
    """
    if block_size == 0:
        one = CODECS[codec].compress(payload, level)
        return one, codec, len(one)
    always = block_overhead == float("inf")
    if not always and len(payload) > block_sample * block_size > 0:
        # the sampled blocks are compressed first, the others only if blocks win
        data = memoryview(payload).cast("B")
        count = -(-len(data) // block_size)
        picked = _spread(count, block_sample)
        comp = zstd_blocks.zstd_compressor(level, checksum=True)
        parts = [data[k * block_size : (k + 1) * block_size] for k in picked]
        tried = dict(zip(picked, [comp.compress(part) for part in parts], strict=True))
        frame = CODECS[codec].compress(b"".join(parts), level)
        if sum(len(f) for f in tried.values()) > len(frame) * (1 + block_overhead):
            one = CODECS[codec].compress(payload, level)
            return one, codec, len(one)
        frames = zstd_blocks.block_frames(data, level, block_size, known=tried, sections=sections)
        return zstd_blocks.blocks_body(frames, block_size), Compression.ZSTD_BLOCKS, 0
    one = b"" if always else CODECS[codec].compress(payload, level)
    blocked = zstd_blocks.compress_blocks(payload, level, block_size, sections)
    if always or len(blocked) <= len(one) * (1 + block_overhead):
        return blocked, Compression.ZSTD_BLOCKS, len(one)
    return one, codec, len(one)


def planes_pay_sample(
    payload: bytes | memoryview,
    encoding: Encoding,
    level: int,
    block_size: int,
    keep_ratio: float,
) -> bool:
    """Whether a page of ``encoding`` (one whose payload has sections: BYTE_SPLIT planes)
    may save enough for :func:`encode_page` to keep it compressed at ``keep_ratio``: one
    block of ``block_size`` bytes from the middle of each section, each one zstd frame at
    ``level``, weighted by its section's length, compress to at most ``keep_ratio +``
    :data:`PLANES_SAMPLE_MARGIN` of the payload. A page too small for the sample to cost
    less than half a pass over it, or without sections, is not sampled (True: the caller
    compresses it and decides exactly).

    The sample measures blocks, not one frame of the page: a page whose redundancy spans
    more than a block (values repeating with a long period) may fail the sample although
    one frame would have been kept; it is then stored uncompressed.

    Example:
        >>> import numpy as np
        >>> from fermion.format.encoding.byte_split import encode_byte_split
        >>> rng = np.random.default_rng(0)
        >>> pages = [encode_byte_split(v.tobytes(), 8, sampled=False)
        ...          for v in (rng.random(65536), np.arange(65536) * 0.5)]
        >>> [planes_pay_sample(p, Encoding.BYTE_SPLIT, 3, 8192, 0.75) for p in pages]
        [False, True]
    """
    starts = _sections(payload, encoding)
    if not starts or len(payload) < 2 * (len(starts) + 1) * block_size:
        return True
    data = memoryview(payload).cast("B")
    comp = zstd_blocks.zstd_compressor(level, checksum=True)
    bounds = [0, *starts, len(data)]
    estimate = 0.0
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b <= a:
            continue
        low = max(a, (a + b - block_size) // 2)
        block = data[low : min(b, low + block_size)]
        estimate += len(comp.compress(block)) / len(block) * (b - a)
    return estimate <= (keep_ratio + PLANES_SAMPLE_MARGIN) * len(data)


def blocks_win_sample(
    payload: bytes | memoryview, level: int, block_size: int, block_overhead: float, sample: int
) -> bool:
    """Whether ``sample`` blocks of ``block_size`` bytes spread evenly over ``payload``,
    each one zstd frame (at ``level``), are at most ``1 + block_overhead`` times one frame
    of their bytes: the comparison :func:`encode_page` makes with a ``block_sample``.

    Example:
        >>> import random
        >>> rnd = random.Random(0)
        >>> words = b" ".join(b"%x" % rnd.getrandbits(40) for _ in range(20000))
        >>> [blocks_win_sample(p, 3, 4096, 0.25, 4) for p in (words, b"ab" * 9000)]
        [True, False]
    """
    data = memoryview(payload).cast("B")
    count = -(-len(data) // block_size)
    parts = [
        data[k * block_size : (k + 1) * block_size] for k in _spread(count, min(sample, count))
    ]
    comp = zstd_blocks.zstd_compressor(level, checksum=True)
    frames = sum(len(comp.compress(part)) for part in parts)
    one = CODECS[Compression.ZSTD].compress(b"".join(parts), level)
    return frames <= len(one) * (1 + block_overhead)


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
