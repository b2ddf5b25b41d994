"""``Dataset.take_rowids``: rows of a version read by their stable row ids.

Each id is located through the fragments' row-id sequences (:class:`RowIdLookup`), its
physical offset turned into a position among the fragment's live rows, and the rows are
read with :func:`~fermion.table.scan.take_fragment` (only the pages holding them, for a
fragment of one data file). An id that no live row of the version holds (never given,
given to a row since deleted, or beyond ``next_row_id``) is an error by default, or left
out with ``missing="skip"`` (docs/TABLE_FORMAT.md, "Row ids").

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"x": [10, 11, 12]}), tempfile.mkdtemp())
    >>> ds.take_rowids([2, 0]).to_pydict()
    {'x': [12, 10]}
    >>> ds.delete("x = 10")
    >>> ds.take_rowids([2, 0], missing="skip").to_pydict()
    {'x': [12]}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from fermion.errors import DatasetError, InvalidArgumentError, InvalidFileError
from fermion.format.encoding.arrow_ops import cast_table, take_table
from fermion.table.readers import ReaderCache
from fermion.table.row_ids import ROW_ID, VersionRowIds, with_row_id_column
from fermion.table.scan import take_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage

__all__ = ["MissingRowIds", "parse_row_ids", "take_rowids"]

MissingRowIds = Literal["error", "skip"]
_SHOWN = 5


def parse_row_ids(ids: Any) -> np.ndarray:
    """The ids as a one-dimensional int64 array.

    Raises:
        InvalidArgumentError: Not integers (floats, booleans, strings, nested lists), or a
            negative id.

    Example:
        >>> parse_row_ids([3, 1]).tolist()
        [3, 1]
        >>> parse_row_ids([1.5])
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidArgumentError: row ids must be integers, got float64
    """
    if isinstance(ids, pa.ChunkedArray | pa.Array):
        if ids.null_count:
            raise InvalidArgumentError("row ids must not be null")
        ids = ids.to_numpy(zero_copy_only=False)
    try:
        wanted = np.asarray(ids)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"row ids must be integers, got {ids!r}") from None
    if wanted.ndim != 1:
        raise InvalidArgumentError("row ids must be a one-dimensional list of integers")
    if wanted.size == 0:
        return np.zeros(0, dtype=np.int64)
    if wanted.dtype == np.bool_ or not np.issubdtype(wanted.dtype, np.integer):
        raise InvalidArgumentError(f"row ids must be integers, got {wanted.dtype}")
    if np.issubdtype(wanted.dtype, np.signedinteger) and int(wanted.min()) < 0:
        raise InvalidArgumentError(f"row ids are non-negative, got {int(wanted.min())}")
    if wanted.dtype == np.uint64 and int(wanted.max()) > np.iinfo(np.int64).max:
        raise InvalidArgumentError(f"row id {int(wanted.max())} is out of range")
    return wanted.astype(np.int64)


def take_rowids(
    storage: TableStorage,
    schema: TableSchema,
    version: VersionRowIds,
    ids: Any,
    columns: Sequence[str] | None = None,
    *,
    missing: MissingRowIds = "error",
    readers: ReaderCache | None = None,
) -> pa.Table:
    """The live rows with row ids ``ids`` (any order, repeats allowed), in the order asked.

    ``columns`` may name ``_rowid`` (uint64) like any column. ``version`` is the table
    version read (its manifest, read through :class:`~fermion.table.row_ids.VersionRowIds`).

    Raises:
        DatasetError: The version has no row ids (a table created before they existed).
        InvalidArgumentError: Ids that are not non-negative integers; with
            ``missing="error"``, ids that no live row holds (the first few are named).
    """
    if missing not in ("error", "skip"):
        raise InvalidArgumentError(f"missing must be 'error' or 'skip', got {missing!r}")
    if not version.has_row_ids:
        raise DatasetError(
            f"version {version.version} of this table has no row ids (it was created before "
            "they existed): use take() with positions"
        )
    wanted = parse_row_ids(ids)
    names = list(schema.arrow.names) if columns is None else list(columns)
    with_ids = ROW_ID in names and ROW_ID not in schema.arrow.names
    read_names = [n for n in names if n != ROW_ID] if with_ids else names
    query, owner_of, offset = version.lookup().candidates(wanted)
    live = np.full(query.size, -1, dtype=np.int64)
    for index in np.unique(owner_of):
        picked = np.flatnonzero(owner_of == index)
        live[picked] = version.live_positions(storage, int(index), offset[picked])
    alive = live >= 0
    query, owner_of, live = query[alive], owner_of[alive], live[alive]
    if np.unique(query).size != query.size:
        raise InvalidFileError(f"version {version.version}: a row id held by two live rows")
    owner = np.full(wanted.size, -1, dtype=np.int64)
    position = np.full(wanted.size, -1, dtype=np.int64)
    owner[query], position[query] = owner_of, live
    found = position >= 0
    if not bool(found.all()):
        if missing == "error":
            absent = np.unique(wanted[~found])
            shown = ", ".join(str(i) for i in absent[:_SHOWN].tolist())
            more = f" and {absent.size - _SHOWN} more" if absent.size > _SHOWN else ""
            raise InvalidArgumentError(
                f"no live row of version {version.version} has the row ids {shown}{more}"
            )
        wanted, owner, position = wanted[found], owner[found], position[found]
    if not read_names:  # only the ids themselves
        return pa.table({ROW_ID: pa.array(wanted.astype(np.uint64), type=pa.uint64())})
    pieces, order = [], []
    for index in np.unique(owner):
        picked = np.flatnonzero(owner == index)
        fragment = version.fragment(int(index))
        table = take_fragment(storage, schema, fragment, read_names, position[picked], readers)
        pieces.append(table)
        order.append(picked)
    if pieces:
        combined = pa.concat_tables([cast_table(p, pieces[0].schema) for p in pieces])
        inverse = np.empty(wanted.size, dtype=np.int64)
        inverse[np.concatenate(order)] = np.arange(wanted.size)
        result = take_table(combined, inverse)
    else:
        fields = [schema.arrow.field(n) for n in read_names]
        result = pa.schema(fields).empty_table()
    if not with_ids:
        return result
    return with_row_id_column(result, wanted).select(names)
