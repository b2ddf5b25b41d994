"""Writer and reader options: small frozen dataclasses, defaults in one place.

Example:
    >>> WriteOptions(page_size=64 << 10).page_size
    65536
    >>> ReadOptions().eager_load_threshold == EAGER_LOAD_THRESHOLD_DEFAULT
    True
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from fermion.errors import InvalidArgumentError

__all__ = [
    "COALESCE_GAP_DEFAULT",
    "EAGER_LOAD_THRESHOLD_DEFAULT",
    "BATCH_BLOCK_SIZE",
    "BLOCK_OVERHEAD_DEFAULT",
    "BLOCK_SIZE_DEFAULT",
    "DICTIONARY_BLOCK_SIZE_DEFAULT",
    "PAGE_SIZE_DEFAULT",
    "PREFETCH_BYTES_DEFAULT",
    "ReadOptions",
    "WriteOptions",
    "split_options",
]

PAGE_SIZE_DEFAULT = 512 << 10  # 512 KB pages
# zstd blocks inside a page: what a point read decompresses per wanted value. lineitem's
# l_comment: 8 KiB blocks are 18.7% larger than one frame per page (32 KiB: 6.3%), and a
# take of 1,000 rows decompresses ~900 of them in 9 ms instead of 32 ms (+5 MB of 135 MB)
BLOCK_SIZE_DEFAULT = 8 << 10
# batch mode: a lookup wants a batch's few values of each column (a BYTE_SPLIT float page:
# a few bytes of each plane), so blocks are smaller: 4,000 batches of 300 float32 columns,
# 50 read per lookup: 2 KiB blocks decompress 0.4 MB per lookup instead of 1.9 MB (8 KiB),
# for a file 1.9% larger
BATCH_BLOCK_SIZE = 2 << 10
BLOCK_OVERHEAD_DEFAULT = 0.25  # ratio blocks may give up against one frame per page
# blocks sharing a zstd dictionary trained on their page (format 1.7): lineitem's l_comment
# in 4 KiB blocks with an 8 KiB dictionary is 7% smaller than in 8 KiB blocks without one,
# and a block decompresses in about 10 us instead of 18 (2 KiB blocks: 5 us, but a full
# scan of the column took 13% longer than with 4 KiB ones; docs/FORMAT.md §5.2)
DICTIONARY_BLOCK_SIZE_DEFAULT = 4 << 10
STRIPE_ROWS_DEFAULT = 1 << 20
STRIPE_BYTES_DEFAULT = 128 << 20
FLUSH_BYTES_DEFAULT = 8 << 20  # write in 4-8 MB units, not per page
PREFETCH_BYTES_DEFAULT = 1 << 20  # aggressive footer prefetch (512 KB - 4 MB)
EAGER_LOAD_THRESHOLD_DEFAULT = 8 << 20  # CMB areas this small load in one read
CHECKSUM_BLOCK_SIZE_DEFAULT = 512  # a CRC32 per 512 bytes: 0.8% of the page, a point read
# fetches and verifies 512 bytes per value (docs/FORMAT.md §9)
COALESCE_GAP_DEFAULT = 1 << 20  # merge ranges closer than 1 MB
METADATA_COALESCE_GAP_DEFAULT = 4 << 10  # metadata entries are tiny: merge small holes only


def _threads_default() -> int:
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class WriteOptions:
    """How a file is written.

    Attributes:
        page_size: target bytes of one page before compression.
        max_stripe_rows: a stripe is cut after this many rows.
        max_stripe_bytes: ... or once this many bytes of Arrow data are buffered.
        compression: ``"zstd"`` or ``"none"``.
        compression_level: zstd level.
        compression_block_size: a zstd page larger than this is compressed as independent
            blocks of this many decoded bytes (format 1.2), so that ``take`` decompresses
            only the blocks holding its rows; 0: one zstd frame per page (format 1.1).
            In batch mode (``append_batch``) blocks are at most ``BATCH_BLOCK_SIZE``
            (2 KiB), as a lookup reads only a batch's few values.
        compression_block_overhead: blocks are kept only if they are at most this fraction
            larger than one zstd frame of the page (data whose redundancy spans more than
            a block, like long repeated text, then keeps its ratio); ``float("inf")``:
            always blocks.
        dictionary_block_size: a page that would be blocked is also tried as blocks of this
            many decoded bytes sharing a zstd dictionary trained on the page (format 1.7,
            compression ZSTD_DICT_BLOCKS), kept when no larger (see ``encode_page``);
            0: never (the file stays readable by 1.6 readers). Not used in batch mode.
        page_crc: write a CRC32 into every page header.
        checksum_block_size: an uncompressed page of a column that ``take`` reads value
            by value, larger than this, also carries a CRC32 per block of this many bytes
            (format 1.5, compression CRC_BLOCKS), so that a point read verifies the bytes
            it reads without reading the whole page; 0: never (needs ``page_crc``; columns
            written with ``encodings=False`` or ``column_encodings={name: "plain"}`` never
            get them, so that those files stay readable by older readers).
        statistics: compute per-page and per-chunk min/max/null counts.
        flush_bytes: the sink writes in units of at least this many bytes.
        threads: worker threads for encoding and compression.
        encodings: choose lightweight encodings per page (False: every page PLAIN; with
            ``compression_block_size=0`` as well, format 1.0 readers can read the file).
        column_encodings: per-column override, ``{"name": "plain" | "auto"}``.
        bloom_filter_columns: flat columns (integers, temporal, strings, binary) that get
            per-page bloom filters, for ``==``/``isin`` filters on high-cardinality keys.
    """

    page_size: int = PAGE_SIZE_DEFAULT
    max_stripe_rows: int = STRIPE_ROWS_DEFAULT
    max_stripe_bytes: int = STRIPE_BYTES_DEFAULT
    compression: Literal["zstd", "none"] = "zstd"
    compression_level: int = 3
    compression_block_size: int = BLOCK_SIZE_DEFAULT
    compression_block_overhead: float = BLOCK_OVERHEAD_DEFAULT
    dictionary_block_size: int = DICTIONARY_BLOCK_SIZE_DEFAULT
    page_crc: bool = True
    checksum_block_size: int = CHECKSUM_BLOCK_SIZE_DEFAULT
    statistics: bool = True
    flush_bytes: int = FLUSH_BYTES_DEFAULT
    threads: int = 0  # 0: one per core
    encodings: bool = True
    column_encodings: Mapping[str, Literal["auto", "plain"]] = field(default_factory=dict)
    bloom_filter_columns: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.bloom_filter_columns, str):
            raise InvalidArgumentError("bloom_filter_columns must be a list of column names")
        bad = {k: v for k, v in self.column_encodings.items() if v not in ("auto", "plain")}
        if bad:
            raise InvalidArgumentError(f"column_encodings values must be 'auto' or 'plain': {bad}")
        if self.page_size < 64 or self.page_size > (1 << 30):
            raise InvalidArgumentError(f"page_size must be in [64, 1 GiB], got {self.page_size}")
        if not 0 < self.max_stripe_rows <= 0xFFFFFFFF:
            raise InvalidArgumentError(f"max_stripe_rows out of range: {self.max_stripe_rows}")
        if self.max_stripe_bytes <= 0:
            raise InvalidArgumentError("max_stripe_bytes must be positive")
        if self.compression not in ("zstd", "none"):
            raise InvalidArgumentError(f"unknown compression {self.compression!r}")
        if self.compression_block_size != 0 and not 256 <= self.compression_block_size <= 1 << 30:
            raise InvalidArgumentError(
                f"compression_block_size must be 0 or in [256, 1 GiB], got "
                f"{self.compression_block_size}"
            )
        if self.dictionary_block_size != 0 and not 256 <= self.dictionary_block_size <= 1 << 30:
            raise InvalidArgumentError(
                f"dictionary_block_size must be 0 or in [256, 1 GiB], got "
                f"{self.dictionary_block_size}"
            )
        if self.checksum_block_size != 0 and not 256 <= self.checksum_block_size <= 1 << 30:
            raise InvalidArgumentError(
                f"checksum_block_size must be 0 or in [256, 1 GiB], got {self.checksum_block_size}"
            )
        if not self.compression_block_overhead >= 0:  # also refuses NaN
            raise InvalidArgumentError("compression_block_overhead must be >= 0")
        if not -7 <= self.compression_level <= 22:
            raise InvalidArgumentError("compression_level must be in [-7, 22]")
        if self.threads < 0:
            raise InvalidArgumentError("threads must be >= 0")

    @property
    def worker_threads(self) -> int:
        """Threads to use: ``threads``, or the default for this machine when it is 0."""
        return self.threads or _threads_default()

    def encodes(self, column: str) -> bool:
        """Whether pages of ``column`` may use encodings other than PLAIN."""
        return self.column_encodings.get(column, "auto" if self.encodings else "plain") == "auto"


@dataclass(frozen=True)
class ReadOptions:
    """How a file is read.

    Attributes:
        prefetch_bytes: size of the one speculative tail read at open.
        eager_load_threshold: CMB areas up to this size may be loaded in one read.
        coalesce_gap: data ranges closer than this are merged into one request.
        metadata_coalesce_gap: the same for metadata (CMB, schema entries).
        verify_checksums: verify page CRC32s (and, in point reads, the checksums of the
            blocks read: CRC_BLOCKS CRC32s, zstd block content checksums).
        point_reads: ``take`` (and ``read_batches`` of a few rows) decodes only the wanted
            values of a page: of a blocked page (ZSTD_BLOCKS, CRC_BLOCKS) only the blocks
            holding them, each verified by its own checksum; any other page it touches is
            verified by its page CRC32. From a source that is not memory-mapped only those
            blocks and the page headers are fetched (sub-page IO). False: ``take`` decodes
            every page it touches whole.
        threads: worker threads for page decompression and decoding.
        memory_map: read a local file through a read-only memory mapping (no copies, only
            the pages touched are faulted in); False: ``os.pread`` into fresh buffers. A
            mapped file must not be truncated while it is read (Fermion files are
            immutable once written).
        read_dictionary: names of top-level string or binary columns to return
            dictionary-encoded (``dictionary<int32, value type>``, like pyarrow.parquet's
            ``read_dictionary``): DICTIONARY pages are not expanded, their distinct values
            are merged per stripe; other pages of those columns are encoded on read.
    """

    prefetch_bytes: int = PREFETCH_BYTES_DEFAULT
    eager_load_threshold: int = EAGER_LOAD_THRESHOLD_DEFAULT
    coalesce_gap: int = COALESCE_GAP_DEFAULT
    metadata_coalesce_gap: int = METADATA_COALESCE_GAP_DEFAULT
    verify_checksums: bool = True
    point_reads: bool = True
    threads: int = 0
    memory_map: bool = True
    read_dictionary: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("prefetch_bytes", "eager_load_threshold", "coalesce_gap"):
            if getattr(self, name) < 0:
                raise InvalidArgumentError(f"{name} must be >= 0")
        if self.metadata_coalesce_gap < 0 or self.threads < 0:
            raise InvalidArgumentError("metadata_coalesce_gap and threads must be >= 0")
        names = self.read_dictionary
        if isinstance(names, str) or not all(isinstance(c, str) for c in names):
            raise InvalidArgumentError("read_dictionary must be a list of column names")
        object.__setattr__(self, "read_dictionary", tuple(names))  # a list is welcome too

    @property
    def worker_threads(self) -> int:
        """Threads to use: ``threads``, or the default for this machine when it is 0."""
        return self.threads or _threads_default()


def split_options(cls: type[Any], options: dict[str, Any]) -> Any:
    """Build ``cls`` from keyword options, rejecting unknown names with a typed error."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidArgumentError(f"unknown {cls.__name__} option(s): {', '.join(unknown)}")
    return cls(**options)
