"""CRC_BLOCKS page bodies (format 1.5, docs/FORMAT.md §5): a payload stored uncompressed
with a CRC32 per block of ``block_size`` bytes, so that a point read verifies exactly the
blocks it reads; and :func:`units_of`, the blocks of a body that hold some byte ranges
(ZSTD blocks use it too).

Example:
    >>> body = crc_blocks_body(bytes(12), bytes(10000), 4096)
    >>> len(body) - 10000  # the CrcBlockTable (12 bytes) and three CRC32s
    24
"""

from __future__ import annotations

import numpy as np

from fermion.errors import ChecksumError, InvalidFileError
from fermion.format import native
from fermion.format.checksum import crc32
from fermion.format.encoding import bitpack
from fermion.format.metadata.structs import CRC_BLOCK_TABLE_DTYPE, PAGE_HEADER_DTYPE

__all__ = ["CrcBlockedBody", "crc_blocks_body", "units_of"]

_PAGE_HEADER_SIZE = PAGE_HEADER_DTYPE.itemsize


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


def crc_blocks_body(head: bytes, payload: bytes | memoryview, block_size: int) -> bytes:
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
        >>> from fermion.format.encoding.pages import encode_page
        >>> from fermion.format.metadata.structs import Compression
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
        body = page[_PAGE_HEADER_SIZE:]
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
        table = _PAGE_HEADER_SIZE + 8
        if crc32(self.page[_PAGE_HEADER_SIZE:table], crc32(self.page[4:16])) != (self.head_crc):
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
