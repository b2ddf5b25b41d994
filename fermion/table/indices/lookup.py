"""Scans through a scalar index: which rows of the covered fragments to read.

:func:`plan_indexed_scan` picks the first index of the version whose column a conjunct of
the filter constrains (:func:`~fermion.table.indices.match.key_filter`), reads from its
files only the pages whose key statistics may match, and returns, per covered fragment, the
physical offsets of the candidate rows. Covered fragments without a candidate are not
opened at all; :func:`read_rows` reads a fragment's candidates (only the data pages
holding them), drops deleted rows and applies the whole filter, so the scan returns
exactly what an unindexed one does. Fragments the index does not cover (appended or
rewritten since the build) are scanned as usual.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"k": [5, 3, 9]}), tempfile.mkdtemp())
    >>> ds.create_index("k", "BTREE")
    >>> scanner = ds.scanner(filter="k = 3")
    >>> scanner.to_table().to_pydict(), scanner.stats.fragments_indexed
    ({'k': [3]}, 1)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidFileError
from fermion.format import FileReader
from fermion.format.read.plan import filter_table
from fermion.format.read.pruning import referenced_fields
from fermion.table._datafile import open_data_file
from fermion.table.deletions import keep_mask, read_deletion_file
from fermion.table.indices.match import key_filter
from fermion.table.indices.model import BITMAP, KEY, ROW_ADDRESS, is_scalar_index, split_addresses
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.scan import ROW_OFFSET, ScanStats, read_fragment
from fermion.table.schema import TableSchema, project_file_table, top_level_field_ids
from fermion.table.storage import TableStorage

__all__ = [
    "INDEX_READ_OPTIONS",
    "index_column",
    "lookup_addresses",
    "plan_indexed_scan",
    "read_rows",
]

#: How index files are opened for a lookup: a small tail read (an index file's metadata is
#: a few KiB: two columns) and no merging of distant pages, so a lookup reads its pages.
INDEX_READ_OPTIONS = {"prefetch_bytes": 64 << 10, "coalesce_gap": 64 << 10}


def index_column(index: pb.IndexMetadata, schema: TableSchema) -> str | None:
    """The current name of a scalar index's column (None: not a top-level column now)."""
    if not is_scalar_index(index) or len(index.field_ids) != 1:
        return None
    top = schema.top_level_ids()
    if index.field_ids[0] not in top:
        return None
    return str(schema.arrow.names[top.index(index.field_ids[0])])


def lookup_addresses(
    storage: TableStorage,
    index: pb.IndexMetadata,
    expression: pc.Expression,
    key_type: pa.DataType,
    stats: ScanStats,
) -> np.ndarray | None:
    """Sorted distinct row addresses whose key ``expression`` (over ``key``) keeps; None
    when the files' key type is not ``key_type`` (the column was widened since the build).

    Raises:
        InvalidFileError: A file of the index is not an index file.
    """
    found: list[np.ndarray] = []
    for path in index.files:
        with FileReader(storage.target(path), **INDEX_READ_OPTIONS) as reader:
            if reader.schema.names[:2] != [KEY, ROW_ADDRESS]:
                raise InvalidFileError(f"{path}: not an index file ({reader.schema.names})")
            if not reader.schema.field(KEY).type.equals(key_type):
                return None
            table = reader.read(columns=[ROW_ADDRESS], filter=expression)
            stats.index_files_read += 1
            stats.index_bytes_read += reader.source.stats.bytes_read
        column = table.column(ROW_ADDRESS)
        if index.kind == BITMAP:
            column = pc.list_flatten(column)
        found.append(column.to_numpy())
    if not found:
        return np.empty(0, np.uint64)
    return np.unique(np.concatenate(found).astype(np.uint64, copy=False))


def plan_indexed_scan(
    storage: TableStorage,
    manifest: pb.Manifest,
    schema: TableSchema,
    filter: pc.Expression,
    fragments: Sequence[pb.Fragment],
    stats: ScanStats,
) -> tuple[list[pb.Fragment], dict[int, np.ndarray]]:
    """The fragments left to read and, for those an index answers, their candidate rows
    (sorted physical offsets). Without a usable index: ``fragments`` and ``{}``."""
    present = {f.id for f in fragments}
    for index in manifest.indices:
        column = index_column(index, schema)
        if column is None:
            continue
        covered = set(index.fragment_ids) & present
        expression = key_filter(filter, column) if covered else None
        if expression is None:
            continue
        addresses = lookup_addresses(
            storage, index, expression, schema.arrow.field(column).type, stats
        )
        if addresses is None:
            continue
        ids, offsets = split_addresses(addresses)
        hits: dict[int, np.ndarray] = {}
        for fragment_id in covered:
            lo, hi = np.searchsorted(ids, [fragment_id, fragment_id + 1])
            if hi > lo:
                hits[fragment_id] = offsets[lo:hi]
        stats.fragments_indexed += len(covered)
        kept = [f for f in fragments if f.id not in covered or f.id in hits]
        return kept, hits
    return list(fragments), {}


def read_rows(
    storage: TableStorage,
    schema: TableSchema,
    fragment: pb.Fragment,
    columns: Sequence[str],
    filter: pc.Expression,
    offsets: np.ndarray,
    *,
    with_row_offsets: bool = False,
    stats: ScanStats | None = None,
) -> pa.Table:
    """The live rows at physical ``offsets`` (sorted) of ``fragment`` that ``filter``
    keeps, projected to ``columns`` (and ``_rowoffset`` with ``with_row_offsets``), in
    physical order: the rows :func:`~fermion.table.scan.read_fragment` returns, when
    ``offsets`` hold every row it would keep."""
    stats = stats if stats is not None else ScanStats()
    used = referenced_fields(filter)
    needed = list(dict.fromkeys([*columns, *(n for n in schema.arrow.names if n in used)]))
    if fragment.HasField("deletion_file"):
        deleted = read_deletion_file(storage, fragment.id, fragment.deletion_file)
        stats.deletion_files_read += 1
        offsets = offsets[keep_mask(deleted, fragment.physical_rows)[offsets]]
    if len(fragment.files) != 1:  # columns in several files: read the fragment whole
        table = read_fragment(
            storage, schema, fragment, needed, filter, with_row_offsets=True, stats=stats
        )
        mask = np.isin(table.column(ROW_OFFSET).to_numpy(), offsets)
        table = table.filter(pa.array(mask))
        return table.select([*columns, ROW_OFFSET] if with_row_offsets else list(columns))
    path = fragment.files[0].path
    top_ids = schema.top_level_ids()
    with open_data_file(storage.target(path)) as reader:
        stats.files_opened += 1
        if reader.num_rows != fragment.physical_rows:
            raise InvalidFileError(
                f"{path}: {reader.num_rows} rows, the manifest says {fragment.physical_rows}"
            )
        file_ids = top_level_field_ids(reader.schema, reader.field_ids)
        wanted = {top_ids[schema.arrow.get_field_index(n)] for n in needed}
        got = [(reader.schema.field(i).name, f) for i, f in enumerate(file_ids) if f in wanted]
        names = [n for n, _ in got] or [reader.schema.field(0).name]
        read = reader.take(offsets.astype(np.int64), columns=names)
    table = project_file_table(read, [f for _, f in got], schema, needed) if got else None
    if table is None:  # every needed column is newer than the file: nulls
        table = project_file_table(read.select([]), [], schema, needed)
    if with_row_offsets:
        table = table.append_column(ROW_OFFSET, pa.array(offsets.astype(np.uint64)))
    table = filter_table(table, filter)
    out = table.select([*columns, ROW_OFFSET] if with_row_offsets else list(columns))
    stats.rows_returned += out.num_rows
    return out
