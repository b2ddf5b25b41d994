"""Every on-disk struct of the Fermion file format, declared once.

All metadata is POD: the bytes on disk are little-endian C structs, read with
``np.frombuffer`` and never parsed field by field. Nobody else in the code base uses
``struct.unpack`` or magic offsets; docs/FORMAT.md is the normative description of the
same layouts.

File layout::

    [FileHeader 8B] [Data area: stripes -> stream chunks -> pages]
    [CMB area: one Column Metadata Block per column that is not all-null]
    [Schema area] [CIT: (num_columns + 1) x int64] [Footer 64B]

Example:
    >>> FOOTER_DTYPE.itemsize, CMB_HEADER_DTYPE.itemsize, STREAM_META_DTYPE.itemsize
    (64, 16, 8)
"""

from __future__ import annotations

import enum

import numpy as np

__all__ = [
    "BASE_VERSION_MINOR",
    "BLOCK_TABLE_DTYPE",
    "CRC_BLOCK_TABLE_DTYPE",
    "DICT_BLOCK_TABLE_DTYPE",
    "CHUNK_ALL_NULL",
    "CMB_HEADER_DTYPE",
    "COLUMN_ENTRY_DTYPE",
    "FILE_HEADER_DTYPE",
    "FOOTER_DTYPE",
    "FULL_CHUNK_DESC_DTYPE",
    "FORMAT_VERSION_MAJOR",
    "FORMAT_VERSION_MINOR",
    "Compression",
    "DescType",
    "ENCODING_HEADER_DTYPE",
    "Encoding",
    "FLOAT_DECIMAL_HEADER_DTYPE",
    "EncodingFlag",
    "HASH_SLOT_DTYPE",
    "MAGIC",
    "OptionalFeature",
    "PAGE_HEADER_DTYPE",
    "PAGE_META_DTYPE",
    "PrimitiveCode",
    "RequiredFeature",
    "SCHEMA_HEADER_DTYPE",
    "SIMPLE_CHUNK_DESC_DTYPE",
    "STRIPE_META_DTYPE",
    "STREAM_META_DTYPE",
    "StatsFlag",
    "StreamType",
    "CIT_DTYPE",
    "minor_version",
]

MAGIC = b"FRMN"
FORMAT_VERSION_MAJOR = 1
FORMAT_VERSION_MINOR = 7  # the newest minor version this code reads and writes
# the minor version of files without a 1.4 feature, and of every file header: the header
# is written before the data, so it cannot know (it is informative; see minor_version)
BASE_VERSION_MINOR = 3

# SimpleChunkDesc.length value meaning "this stripe's validity is all null" (docs/FORMAT.md §6:
# "全部无效 (length = max)"); length 0 means "all valid" / "no data".
CHUNK_ALL_NULL = 0xFFFFFFFF


class DescType(enum.IntEnum):
    """StreamMeta.descType_: what the payload of a stream holds (docs/FORMAT.md §6)."""

    SIMPLE = 0  # payload: SimpleChunkDesc[numStripes]
    FULL = 1  # payload: FullChunkDesc[numStripes] (+ PageMeta pool)
    USE_DEFAULT = 2  # no payload: validity all valid / data and offsets empty
    FORCE_NULL = 3  # no payload: validity all null


class StreamType(enum.IntEnum):
    """StreamMeta.streamType_ (docs/FORMAT.md §3, BATCH_META: §11.2)."""

    VALIDITY = 0
    OFFSETS = 1
    DATA = 2
    BATCH_META = 3
    BLOOM = 4  # per-page bloom filters of a column's DATA pages (format 1.1)


class Encoding(enum.IntEnum):
    """PageHeader.encoding: the lightweight encoding of a page's values (before zstd).

    Every encoding other than PLAIN starts its payload with an EncodingHeader (24 B).
    """

    PLAIN = 0
    CONSTANT = 1  # one value repeated
    FOR = 2  # frame of reference: value - base, bit-packed (1.1: 1/2/4/8 bytes)
    DELTA = 3  # first value + (delta - min delta), bit-packed
    RLE = 4  # run values (FOR, bit-packed) + run lengths (bit-packed)
    DICTIONARY = 5  # BINARY DATA pages: bit-packed indices + the page's distinct values
    BYTE_SPLIT = 6  # floats: byte k of every value, then byte k+1, ...
    DERIVED = 7  # BINARY OFFSETS page with no payload: offsets come from the DATA page
    INT_DICTIONARY = 8  # integers: bit-packed indices + the distinct values (FOR, bit-packed)
    FLOAT_DECIMAL = 9  # floats: integers k with v == k / 10**e (integer codec) + exceptions
    STRIPE_DICTIONARY = 10  # BINARY DATA page 0 of no rows: the stripe's distinct values (1.4)
    DICTIONARY_INDICES = 11  # BINARY DATA: bit-packed indices into the stripe dictionary (1.4)


class EncodingFlag(enum.IntFlag):
    """EncodingHeader.flags."""

    SIGNED = 1 << 0  # integers are sign-extended to out_width (else zero-extended)
    LENGTHS = 1 << 1  # OFFSETS pages: the integers are value lengths, not offsets
    BITS = 1 << 2  # width / aux_width count bits (bit-packed, format 1.2), not bytes
    CHECKPOINTS = 1 << 3  # DELTA and FOR length pages: running sums every 256 values (1.3)


class Compression(enum.IntEnum):
    """PageHeader.compression: the general-purpose codec applied after the encoding."""

    NONE = 0
    ZSTD = 1
    ZSTD_BLOCKS = 2  # independent zstd frames of block_size decoded bytes + a frame table
    CRC_BLOCKS = 3  # uncompressed payload with a CRC32 per block of block_size bytes (1.5)
    ZSTD_DICT_BLOCKS = 4  # ZSTD_BLOCKS whose frames share a zstd dictionary in the page (1.7)


class RequiredFeature(enum.IntFlag):
    """Footer.required_features: a reader that does not know a set bit must refuse the file."""

    BATCH_MODE = 1 << 0  # a BATCH_META system column exists (docs/FORMAT.md §11)
    ENCODINGS = 1 << 1  # pages use encodings other than PLAIN (format 1.1)
    BIT_PACKING = 1 << 2  # encoded pages pack integers at bit widths (format 1.2)
    BLOCKS = 1 << 3  # pages compressed as independent zstd blocks (format 1.2)
    DECIMAL_FLOATS = 1 << 4  # float pages encoded FLOAT_DECIMAL (format 1.3)
    CHECKPOINTS = 1 << 5  # encoded pages carry running-sum checkpoints (format 1.3)
    STRIPE_DICTIONARY = 1 << 6  # string chunks with one dictionary per stripe (format 1.4)
    CRC_BLOCKS = 1 << 7  # uncompressed pages with a CRC32 per block (format 1.5)
    DECIMAL_MULTIPLY = 1 << 8  # FLOAT_DECIMAL pages decoded as k * float64(10**-e) (1.6)
    DICT_BLOCKS = 1 << 9  # pages compressed as zstd blocks sharing a dictionary (1.7)


def minor_version(required: int) -> int:
    """The minor version of a file with these required features: 7 when it uses the 1.7
    feature, 6 when it uses the 1.6 one, 5 when it uses the 1.5 one, 4 when it uses a 1.4
    one, else 3, so that a file without one is exactly what the writer of that version
    wrote."""
    if required & RequiredFeature.DICT_BLOCKS:
        return FORMAT_VERSION_MINOR
    if required & RequiredFeature.DECIMAL_MULTIPLY:
        return 6
    if required & RequiredFeature.CRC_BLOCKS:
        return 5
    return 4 if required & RequiredFeature.STRIPE_DICTIONARY else BASE_VERSION_MINOR


class OptionalFeature(enum.IntFlag):
    """Footer.optional_features: informative; unknown bits are ignored by readers."""

    PAGE_CRC = 1 << 0  # every page header carries a CRC32 that readers verify


class StatsFlag(enum.IntFlag):
    """Flags in FullChunkDesc.statsFlags / PageMeta.statsFlags."""

    HAS_MINMAX = 1 << 0  # minVal/maxVal are valid bounds of the non-null values
    MIN_INEXACT = 1 << 1  # minVal is a lower bound (e.g. a truncated string prefix)
    MAX_INEXACT = 1 << 2  # maxVal is an upper bound (e.g. an incremented prefix)
    HAS_NAN = 1 << 3  # floating point NaN present: bounds exclude NaN, no range pruning


class PrimitiveCode(enum.IntEnum):
    """ColumnEntry.primitive_code: fast path for flat columns without metadata.

    ``IPC`` (0) means: the column's Arrow field is stored as an Arrow IPC schema blob.
    """

    IPC = 0
    BOOL = 1
    INT8 = 2
    INT16 = 3
    INT32 = 4
    INT64 = 5
    UINT8 = 6
    UINT16 = 7
    UINT32 = 8
    UINT64 = 9
    FLOAT16 = 10
    FLOAT32 = 11
    FLOAT64 = 12
    STRING = 13
    BINARY = 14
    LARGE_STRING = 15
    LARGE_BINARY = 16
    DATE32 = 17


def _dtype(fields: list[tuple[str, str]], size: int) -> np.dtype:
    dt = np.dtype(fields)
    if dt.itemsize != size:  # an explicit, typed check: a wrong layout is a programming error
        raise RuntimeError(f"on-disk struct has size {dt.itemsize}, expected {size}")
    return dt


FILE_HEADER_DTYPE = _dtype(
    [("magic", "S4"), ("version_major", "<u2"), ("version_minor", "<u2")],
    8,
)

FOOTER_DTYPE = _dtype(
    [
        ("cmb_offset", "<u8"),  # start of the CMB area
        ("schema_offset", "<u8"),  # start of the schema area (== end of the CMB area)
        ("cit_offset", "<u8"),  # start of the CIT
        ("num_rows", "<u8"),
        ("num_columns", "<u4"),
        ("num_stripes", "<u4"),
        ("schema_size", "<u4"),  # bytes of the schema area
        ("required_features", "<u4"),
        ("optional_features", "<u4"),
        ("footer_crc", "<u4"),  # CRC32 of the 40 bytes before this field
        ("version_major", "<u2"),
        ("version_minor", "<u2"),
        ("magic", "S4"),
    ],
    64,
)

# Column Index Table: num_columns + 1 entries; entry i is the absolute offset of column i's
# CMB, entry num_columns is the end of the CMB area. CMB size = cit[i + 1] - cit[i]; a size
# of 0 means the column is all-null in every stripe and has no CMB (docs/FORMAT.md §2).
CIT_DTYPE = np.dtype("<i8")

CMB_HEADER_DTYPE = _dtype(
    [
        ("num_streams", "<u4"),
        ("num_stripes", "<u4"),
        ("crc", "<u4"),  # CRC32 of the CMB bytes after this header
        ("column", "<u4"),  # index of the column this block describes (checked on read)
    ],
    16,
)

STRIPE_META_DTYPE = _dtype([("row_count", "<u4")], 4)

STREAM_META_DTYPE = _dtype(
    [
        ("desc_type", "u1"),  # DescType
        ("stream_type", "u1"),  # StreamType
        ("node", "<u2"),  # stream identity: pre-order index of the field node in the column
        ("chunks_offset", "<u4"),  # relative to the CMB start; 0: no payload
    ],
    8,
)

SIMPLE_CHUNK_DESC_DTYPE = _dtype(
    [
        ("offset", "<u8"),  # absolute file offset of the chunk's single page
        ("length", "<u4"),  # 0: empty chunk / all valid; CHUNK_ALL_NULL: validity all null
        ("num_values", "<u4"),  # values this chunk describes in this stripe
    ],
    16,
)

FULL_CHUNK_DESC_DTYPE = _dtype(
    [
        ("offset", "<u8"),  # absolute file offset of the first page
        ("length", "<u4"),  # bytes of all pages; 0 means empty chunk
        ("num_values", "<u4"),
        ("chunk_min", "<i8"),
        ("chunk_max", "<i8"),
        ("null_count", "<u4"),
        ("num_pages", "<u4"),
        ("page_meta_offset", "<u4"),  # relative to the CMB start; ignored if num_pages <= 1
        ("stats_flags", "<u4"),  # StatsFlag
    ],
    48,
)

PAGE_META_DTYPE = _dtype(
    [
        ("page_size", "<u4"),  # bytes on disk, header included
        ("row_count", "<u4"),  # values in the page
        ("min_val", "<i8"),
        ("max_val", "<i8"),
        ("null_count", "<u4"),
        ("stats_flags", "<u4"),
    ],
    32,
)

PAGE_HEADER_DTYPE = _dtype(
    [
        ("crc", "<u4"),  # CRC32 of the page bytes after this field (0 if CRC is off)
        ("encoding", "u1"),  # Encoding
        ("compression", "u1"),  # Compression
        ("flags", "u1"),
        ("reserved", "u1"),
        ("decoded_size", "<u4"),  # bytes after decompression (the encoded page)
        ("num_values", "<u4"),
    ],
    16,
)

SCHEMA_HEADER_DTYPE = _dtype(
    [
        ("num_columns", "<u4"),
        ("hash_capacity", "<u4"),  # slots of the open-addressing name index (power of 2)
        ("num_nodes", "<u4"),  # field nodes of all columns, pre-order
        ("full_schema_crc", "<u4"),  # CRC32 of the full schema message
        # offsets relative to the schema area start, sizes in bytes
        ("full_schema_offset", "<u4"),
        ("full_schema_size", "<u4"),
        ("heap_offset", "<u4"),
        ("heap_size", "<u4"),
        ("node_ids_offset", "<u4"),
        ("columns_offset", "<u4"),
        ("hash_offset", "<u4"),
        ("crc", "<u4"),  # CRC32 of this header's first 44 bytes
    ],
    48,
)

COLUMN_ENTRY_DTYPE = _dtype(
    [
        ("name_hash", "<u8"),  # name_hash() of the UTF-8 name
        ("name_offset", "<u4"),  # into the heap
        ("name_size", "<u4"),
        ("blob_offset", "<u4"),  # Arrow IPC schema of the one field (PrimitiveCode.IPC only)
        ("blob_size", "<u4"),
        ("first_node", "<u4"),  # into the node field-id array
        ("num_nodes", "<u2"),
        ("primitive_code", "u1"),  # PrimitiveCode
        ("flags", "u1"),  # bit 0: nullable
        ("crc", "<u4"),  # CRC32 of this entry (crc zeroed) + name + blob + node ids
        ("num_streams", "<u4"),
    ],
    40,
)

ENCODING_HEADER_DTYPE = _dtype(
    [
        ("base", "<i8"),  # CONSTANT: the value; FOR/RLE: the minimum; DELTA: the first value;
        #                   FLOAT_DECIMAL: the exponent
        ("aux", "<i8"),  # DELTA: the minimum delta; RLE: the number of runs;
        #                  DICTIONARY, INT_DICTIONARY: the number of distinct values;
        #                  FLOAT_DECIMAL: the number of exceptions
        ("count", "<u4"),  # values in the page
        ("width", "u1"),  # bits (flag BITS) or bytes per packed integer (values, indices)
        ("aux_width", "u1"),  # RLE: run lengths; INT_DICTIONARY: distinct values (ditto)
        ("out_width", "u1"),  # bytes per decoded value (1, 2, 4, 8, 16, 32)
        ("flags", "u1"),  # EncodingFlag
    ],
    24,
)

# FLOAT_DECIMAL payload: EncodingHeader (base = exponent, aux = exceptions), this header,
# the exceptions' u32 positions and raw values, then the nested integer-codec payload of k.
FLOAT_DECIMAL_HEADER_DTYPE = _dtype(
    [
        ("int_encoding", "u1"),  # Encoding of the nested payload: CONSTANT/FOR/DELTA/RLE/INT_DICT
        ("kernel", "u1"),  # 0: k / 10**e; 1: k * float64(10**-e) (format 1.6)
        ("reserved2", "<u2"),  # 0
        ("reserved4", "<u4"),  # 0
    ],
    8,
)

# ZSTD_BLOCKS page body: this table, then num_blocks u32 frame ends (relative to the first
# frame), then the frames; block k holds decoded bytes [k * block_size, (k+1) * block_size).
BLOCK_TABLE_DTYPE = _dtype([("block_size", "<u4"), ("num_blocks", "<u4")], 8)

# ZSTD_DICT_BLOCKS page body (format 1.7): this table, then num_blocks u32 frame ends
# (relative to the first frame), then dict_size bytes of zstd dictionary, then the frames,
# each compressed with that dictionary (their headers carry no dictionary id).
DICT_BLOCK_TABLE_DTYPE = _dtype(
    [("block_size", "<u4"), ("num_blocks", "<u4"), ("dict_size", "<u4"), ("reserved", "<u4")],
    16,
)

# CRC_BLOCKS page body (format 1.5): this table, then num_blocks u32 block CRC32s, then the
# payload itself; head_crc is the CRC32 of page bytes [4, 16) followed by the table's first
# 8 bytes, so that a point read checks the page header without reading the whole page.
CRC_BLOCK_TABLE_DTYPE = _dtype(
    [("block_size", "<u4"), ("num_blocks", "<u4"), ("head_crc", "<u4")], 12
)

HASH_SLOT_DTYPE = _dtype(
    [
        ("tag", "<u4"),  # high 32 bits of the name hash
        ("column_plus_one", "<u4"),  # 0: empty slot
    ],
    8,
)
