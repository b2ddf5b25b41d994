"""Page headers (docs/FORMAT.md §5): ``[PageHeader 16B][body]``, the header naming the
page's encoding, compression and decoded size, its CRC32 covering every byte after the
CRC field (rest of header + body). :func:`read_page_head` validates a header against the
metadata before anything is decoded.

Example:
    >>> from fermion.format.encoding.pages import encode_page
    >>> from fermion.format.metadata.structs import Compression
    >>> page = memoryview(encode_page(b"abc" * 10, num_values=30, codec=Compression.NONE))
    >>> head = read_page_head(page, expected_values=30, expected_size=30, where="p")
    >>> head.encoding.name, head.compression.name, head.size
    ('PLAIN', 'NONE', 30)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fermion.errors import ChecksumError, InvalidFileError, UnsupportedVersionError
from fermion.format.checksum import crc32
from fermion.format.encoding import encodings
from fermion.format.encoding.crc_blocks import CrcBlockedBody
from fermion.format.metadata.structs import PAGE_HEADER_DTYPE, Compression, Encoding

__all__ = ["HEADER_FLAG_CRC", "PAGE_HEADER_SIZE", "PageHead", "check_page_crc", "read_page_head"]

PAGE_HEADER_SIZE = PAGE_HEADER_DTYPE.itemsize
HEADER_FLAG_CRC = 1  # PageHeader.flags: the page carries a CRC32


def check_page_crc(page: memoryview, where: str) -> None:
    """Verify a page's CRC32 (when its header says it carries one): ChecksumError."""
    header = np.frombuffer(page, dtype=PAGE_HEADER_DTYPE, count=1)[0]
    if int(header["flags"]) & HEADER_FLAG_CRC:
        actual = crc32(page[PAGE_HEADER_SIZE:], crc32(page[4:PAGE_HEADER_SIZE]))
        if actual != int(header["crc"]):
            raise ChecksumError(f"{where}: page CRC32 mismatch")


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
    if verify_crc and flags & HEADER_FLAG_CRC:
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
