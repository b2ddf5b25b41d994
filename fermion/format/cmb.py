"""Reading one Column Metadata Block: zero-copy views, every offset bounds-checked.

A CMB is read with ``np.frombuffer`` only. Before anything points into the data area it is
checked: the CRC32, the stream directory against the layout implied by the column's type,
payload and page-meta positions inside the block, chunk ranges inside the data area, page
sizes adding up to chunk lengths and page value counts adding up to chunk value counts.
A corrupt block therefore raises a typed error here and never reaches a decoder.

Example:
    >>> # see tests/format/test_roundtrip.py; the writer is the only producer of CMBs
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from fermion.errors import ChecksumError, InvalidFileError
from fermion.format.layout import Node
from fermion.format.structs import (
    CHUNK_ALL_NULL,
    CMB_HEADER_DTYPE,
    FULL_CHUNK_DESC_DTYPE,
    PAGE_META_DTYPE,
    SIMPLE_CHUNK_DESC_DTYPE,
    STREAM_META_DTYPE,
    STRIPE_META_DTYPE,
    DescType,
)

__all__ = ["ColumnMeta", "StreamDesc", "parse_cmb"]


@dataclass
class StreamDesc:
    """One stream's descriptors across all stripes."""

    desc_type: DescType
    simple: np.ndarray | None = None  # SIMPLE_CHUNK_DESC_DTYPE[num_stripes]
    full: np.ndarray | None = None  # FULL_CHUNK_DESC_DTYPE[num_stripes]
    page_metas: list[np.ndarray] | None = None  # PAGE_META_DTYPE[num_pages] per stripe

    def pages(self, stripe: int) -> np.ndarray:
        """PageMeta rows of ``stripe`` (synthesised for single-page chunks)."""
        assert self.page_metas is not None
        return self.page_metas[stripe]

    def page_offsets(self, stripe: int) -> np.ndarray:
        """Absolute file offset of every page of ``stripe``."""
        assert self.full is not None
        sizes = self.pages(stripe)["page_size"].astype(np.int64)
        starts = np.empty(len(sizes), dtype=np.int64)
        if len(sizes):
            starts[0] = int(self.full[stripe]["offset"])
            np.cumsum(sizes[:-1], out=starts[1:])
            starts[1:] += starts[0]
        return starts


@dataclass
class ColumnMeta:
    """A parsed CMB (or the absence of one for an all-null column)."""

    present: bool
    stripe_rows: np.ndarray | None  # uint32 per stripe
    streams: list[StreamDesc]
    size: int = 0

    @staticmethod
    def all_null(num_streams: int) -> ColumnMeta:
        return ColumnMeta(False, None, [StreamDesc(DescType.FORCE_NULL)] * num_streams)


def _view(raw: memoryview, offset: int, dtype: np.dtype, count: int, what: str) -> np.ndarray:
    end = offset + dtype.itemsize * count
    if offset < 0 or end > len(raw):
        raise InvalidFileError(f"CMB {what} [{offset}, {end}) lies outside the block ({len(raw)})")
    return np.frombuffer(raw, dtype=dtype, count=count, offset=offset)


def parse_cmb(
    raw: memoryview,
    tree: Node,
    *,
    num_stripes: int,
    num_rows: int,
    column_index: int,
    data_start: int,
    data_end: int,
    column: str,
) -> ColumnMeta:
    """Parse and validate the CMB of one column (``raw`` is exactly its bytes)."""
    where = f"column {column!r}"
    specs = tree.all_streams()
    hsize = CMB_HEADER_DTYPE.itemsize
    if len(raw) < hsize:
        raise InvalidFileError(f"{where}: CMB of {len(raw)} bytes is smaller than its header")
    header = np.frombuffer(raw, dtype=CMB_HEADER_DTYPE, count=1)[0]
    if zlib.crc32(raw[hsize:]) != int(header["crc"]):
        raise ChecksumError(f"{where}: column metadata block CRC32 mismatch")
    if int(header["column"]) != column_index:
        raise InvalidFileError(
            f"{where}: the CIT points at the CMB of column {int(header['column'])}"
        )
    if int(header["num_stripes"]) != num_stripes:
        raise InvalidFileError(
            f"{where}: CMB has {int(header['num_stripes'])} stripes, footer says {num_stripes}"
        )
    if int(header["num_streams"]) != len(specs):
        raise InvalidFileError(
            f"{where}: CMB has {int(header['num_streams'])} streams, "
            f"the column type needs {len(specs)}"
        )
    stripe_rows = _view(raw, hsize, STRIPE_META_DTYPE, num_stripes, "stripes")["row_count"]
    if int(stripe_rows.sum(dtype=np.int64)) != num_rows:
        raise InvalidFileError(f"{where}: stripe row counts do not add up to {num_rows}")
    metas = _view(raw, hsize + 4 * num_stripes, STREAM_META_DTYPE, len(specs), "streams")
    streams: list[StreamDesc] = []
    for spec, meta in zip(specs, metas, strict=True):
        if int(meta["stream_type"]) != spec.stream_type or int(meta["node"]) != spec.node:
            raise InvalidFileError(f"{where}: stream directory does not match the column type")
        try:
            desc_type = DescType(int(meta["desc_type"]))
        except ValueError:
            raise InvalidFileError(f"{where}: unknown desc type {int(meta['desc_type'])}") from None
        pos = int(meta["chunks_offset"])
        if desc_type in (DescType.USE_DEFAULT, DescType.FORCE_NULL):
            streams.append(StreamDesc(desc_type))
            continue
        if desc_type == DescType.SIMPLE:
            simple = _view(raw, pos, SIMPLE_CHUNK_DESC_DTYPE, num_stripes, "chunk descriptors")
            lengths = simple["length"].astype(np.int64)
            stored = (lengths > 0) & (lengths != CHUNK_ALL_NULL)
            _check_ranges(simple["offset"][stored], lengths[stored], data_start, data_end, where)
            streams.append(StreamDesc(desc_type, simple=simple))
            continue
        full = _view(raw, pos, FULL_CHUNK_DESC_DTYPE, num_stripes, "chunk descriptors")
        lengths = full["length"].astype(np.int64)
        _check_ranges(
            full["offset"][lengths > 0], lengths[lengths > 0], data_start, data_end, where
        )
        page_metas: list[np.ndarray] = []
        for s in range(num_stripes):
            d = full[s]
            n_pages = int(d["num_pages"])
            length = int(d["length"])
            if (length == 0) != (n_pages == 0):
                raise InvalidFileError(f"{where}: chunk of {length} bytes with {n_pages} pages")
            if n_pages > 1:
                pages = _view(raw, int(d["page_meta_offset"]), PAGE_META_DTYPE, n_pages, "pages")
            else:
                pages = np.zeros(n_pages, dtype=PAGE_META_DTYPE)
                if n_pages:
                    pages["page_size"] = length
                    pages["row_count"] = d["num_values"]
                    pages["min_val"] = d["chunk_min"]
                    pages["max_val"] = d["chunk_max"]
                    pages["null_count"] = d["null_count"]
                    pages["stats_flags"] = d["stats_flags"]
            if n_pages and (
                int(pages["page_size"].sum(dtype=np.int64)) != length
                or int(pages["row_count"].sum(dtype=np.int64)) != int(d["num_values"])
            ):
                raise InvalidFileError(f"{where}: page sizes or counts disagree with the chunk")
            page_metas.append(pages)
        streams.append(StreamDesc(desc_type, full=full, page_metas=page_metas))
    return ColumnMeta(True, stripe_rows, streams, size=len(raw))


def _check_ranges(
    offsets: np.ndarray, lengths: np.ndarray, start: int, end: int, where: str
) -> None:
    if len(offsets) == 0:
        return
    offs = offsets.astype(np.int64)
    if int(offs.min()) < start or int((offs + lengths).max()) > end:
        raise InvalidFileError(f"{where}: a chunk points outside the data area")
