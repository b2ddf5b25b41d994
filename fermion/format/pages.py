"""Pages: the unit of encoding, compression and checksumming.

On disk a page is ``[PageHeader 16B][body]``. The body is the encoded values, compressed
with the codec named in the header. The header's CRC32 covers every byte after the CRC
field (rest of header + body), so a flipped bit anywhere in a page is caught before any
decoding. Codecs sit in a registry keyed by :class:`~fermion.format.structs.Compression`;
the writer chooses, the reader dispatches on the id stored in the file.

Example:
    >>> page = encode_page(b"hello" * 100, num_values=500, codec=Compression.ZSTD, level=3)
    >>> decode_page(memoryview(page), expected_values=500, expected_size=500, where="p")[:5]
    b'hello'
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import zstandard

from fermion.errors import ChecksumError, InvalidFileError, UnsupportedVersionError
from fermion.format.structs import PAGE_HEADER_DTYPE, Compression, Encoding

__all__ = ["PAGE_HEADER_SIZE", "Codec", "decode_page", "encode_page", "CODECS"]

PAGE_HEADER_SIZE = PAGE_HEADER_DTYPE.itemsize
_HEADER_FLAG_CRC = 1

_local = threading.local()


def _zstd_compressor(level: int) -> zstandard.ZstdCompressor:
    cache = getattr(_local, "compressors", None)
    if cache is None:
        cache = _local.compressors = {}
    comp = cache.get(level)
    if comp is None:
        comp = cache[level] = zstandard.ZstdCompressor(level=level, write_content_size=True)
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


def _zstd_decompress(body: memoryview, size: int) -> bytes:
    try:
        declared = zstandard.frame_content_size(body)
    except zstandard.ZstdError as exc:
        raise InvalidFileError(f"corrupt zstd frame header: {exc}") from None
    if declared != size:  # never let a corrupt frame header size our allocation
        raise InvalidFileError(f"zstd frame declares {declared} bytes, page header {size}")
    try:
        out = _zstd_decompressor().decompress(body, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise InvalidFileError(f"corrupt zstd page: {exc}") from None
    return out


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
) -> bytes:
    """Compress ``payload`` (already encoded values) and prepend a page header.

    A compressed body that is not smaller than the payload is stored uncompressed.
    """
    body: bytes | memoryview = payload
    used = Compression.NONE
    if codec != Compression.NONE and len(payload) > 0:
        compressed = CODECS[codec].compress(payload, level)
        if len(compressed) < len(payload):
            body, used = compressed, codec
    header = np.zeros(1, dtype=PAGE_HEADER_DTYPE)
    header["encoding"] = encoding
    header["compression"] = used
    header["flags"] = _HEADER_FLAG_CRC if crc else 0
    header["decoded_size"] = len(payload)
    header["num_values"] = num_values
    head = header.tobytes()
    if crc:
        checksum = zlib.crc32(body, zlib.crc32(head[4:]))
        head = np.uint32(checksum).astype("<u4").tobytes() + head[4:]
    return head + bytes(body)


def decode_page(
    page: memoryview,
    *,
    expected_values: int,
    expected_size: int | None,
    where: str,
    verify_crc: bool = True,
) -> bytes | memoryview:
    """Validate, checksum and decompress one page; returns the encoded payload.

    Args:
        page: the page bytes (header + body).
        expected_values: values the metadata says the page holds.
        expected_size: the exact decoded size implied by the metadata, if known; this bounds
            what a corrupt header can make us allocate.
        where: a description for error messages.
        verify_crc: check the CRC32 when the page carries one.
    """
    if len(page) < PAGE_HEADER_SIZE:
        raise InvalidFileError(f"{where}: page of {len(page)} bytes is shorter than its header")
    header = np.frombuffer(page, dtype=PAGE_HEADER_DTYPE, count=1)[0]
    body = page[PAGE_HEADER_SIZE:]
    if verify_crc and int(header["flags"]) & _HEADER_FLAG_CRC:
        actual = zlib.crc32(body, zlib.crc32(page[4:PAGE_HEADER_SIZE]))
        if actual != int(header["crc"]):
            raise ChecksumError(f"{where}: page CRC32 mismatch")
    if int(header["num_values"]) != expected_values:
        raise InvalidFileError(
            f"{where}: page holds {int(header['num_values'])} values, metadata says "
            f"{expected_values}"
        )
    size = int(header["decoded_size"])
    if expected_size is not None and size != expected_size:
        raise InvalidFileError(f"{where}: page decodes to {size} bytes, expected {expected_size}")
    try:
        compression = Compression(int(header["compression"]))
        Encoding(int(header["encoding"]))
    except ValueError:
        raise UnsupportedVersionError(
            f"{where}: unknown encoding {int(header['encoding'])} or compression "
            f"{int(header['compression'])}"
        ) from None
    if compression == Compression.NONE:
        if len(body) != size:
            raise InvalidFileError(f"{where}: stored page has {len(body)} bytes, header {size}")
        return body
    out = CODECS[compression].decompress(body, size)
    if len(out) != size:
        raise InvalidFileError(f"{where}: page decompressed to {len(out)} bytes, expected {size}")
    return out
