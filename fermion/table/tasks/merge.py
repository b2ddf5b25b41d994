"""Merging batch-mode fragments by batch id: the rewrite half of compaction and
materialisation for a table written in batch mode.

Every input fragment is read as a stream of chunks whose batch ids never decrease: a
batch-mode data file stripe by stripe (its ids increase within the file,
docs/FORMAT.md §11), any other fragment whole, sorted by id (a stable sort: rows of one
batch keep their order). :func:`merge_batch_runs` merges those streams by batch id
holding about one chunk per input, so a rewrite never holds a whole fragment of a
batch-mode file in memory. The merged stream goes to the batch-mode writer, which cuts
files at whole batches: the new files hold disjoint, increasing id ranges
(docs/TABLE_FORMAT.md, "Batch-mode layout").

Rows of one batch stay in their order within each input; when several inputs hold the
same batch id (an id appended twice), its rows come input by input in the order the
inputs are given (the fragments' order in the manifest), and the batch stays whole.

Example:
    >>> import pyarrow as pa
    >>> a = iter([pa.table({"b": [1, 1, 4]}), pa.table({"b": [6]})])
    >>> b = iter([pa.table({"b": [2, 4, 7]})])
    >>> out = pa.concat_tables(merge_batch_runs([a, b], "b"))
    >>> out["b"].to_pylist()
    [1, 1, 2, 4, 4, 6, 7]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from fermion.errors import BatchModeError
from fermion.format.encoding.arrow_ops import take_table
from fermion.table._datafile import open_data_file
from fermion.table.codec import fragment_to_proto
from fermion.table.domain import Fragment
from fermion.table.row_ids import ROW_ID, add_row_id_column
from fermion.table.scan import ROW_OFFSET, read_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage

__all__ = ["fragment_id_chunks", "merge_batch_runs"]


def _ids(table: pa.Table, column: str) -> np.ndarray:
    """The batch ids of ``table`` as int64 (a null id is an error)."""
    values = table.column(column)
    if values.null_count:
        raise BatchModeError(f"batch id column {column!r} has nulls")
    return np.asarray(values.to_numpy(), dtype=np.int64)


def _in_range(
    table: pa.Table, column: str, ids_from: int | None, ids_below: int | None
) -> pa.Table:
    """The rows of ``table`` (sorted by ``column``) whose id is in ``[ids_from, ids_below)``."""
    if ids_from is None and ids_below is None:
        return table
    ids = _ids(table, column)
    start = 0 if ids_from is None else int(np.searchsorted(ids, ids_from, side="left"))
    stop = len(ids) if ids_below is None else int(np.searchsorted(ids, ids_below, side="left"))
    return table.slice(start, max(0, stop - start))


def _sorted(table: pa.Table, column: str) -> pa.Table:
    """``table`` stably sorted by ``column`` (unchanged when already in order)."""
    ids = _ids(table, column)
    if len(ids) < 2 or bool(np.all(ids[1:] >= ids[:-1])):
        return table
    return take_table(table, np.argsort(ids, kind="stable"))


def fragment_id_chunks(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment,
    column: str,
    *,
    ids_from: int | None = None,
    ids_below: int | None = None,
    with_row_ids: bool = False,
) -> Iterator[pa.Table]:
    """The live rows of ``fragment`` with a batch id in ``[ids_from, ids_below)`` (``None``:
    unbounded), every column of ``schema``, as chunks whose ids never decrease.
    ``with_row_ids`` adds the rows' ``_rowid`` column (a rewrite moves rows with their ids).

    A fragment of one batch-mode data file is read stripe by stripe, skipping the stripes
    whose id range (the file's batch index) lies outside the range; any other fragment is
    read whole and stably sorted by id.

    Raises:
        BatchModeError: A batch-mode file whose ids decrease, or a null batch id.

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"b": [3, 1, 2]}), tempfile.mkdtemp())
        >>> [t["b"].to_pylist() for t in fragment_id_chunks(
        ...     ds.storage, ds.table_schema, ds.fragments[0], "b", ids_from=2)]
        [[2, 3]]
    """
    message = fragment_to_proto(fragment)
    names = schema.arrow.names

    def read(stripes: range | None = None) -> pa.Table:
        table = read_fragment(
            storage, schema, message, names, stripes=stripes, with_row_offsets=with_row_ids
        )
        if with_row_ids:
            table = add_row_id_column(
                table, message, [*names, ROW_ID], ROW_OFFSET, keep_offsets=False
            )
        return table

    if len(fragment.files) == 1:
        with open_data_file(storage.target(fragment.files[0].path)) as reader:
            stripes: list[int] | None = None
            if reader.batch_mode:
                index = reader.batches()
                keep = index.batches_per_stripe > 0
                if ids_from is not None:
                    keep &= index.max_ids >= ids_from
                if ids_below is not None:
                    keep &= index.min_ids < ids_below
                stripes = np.flatnonzero(keep).tolist()
        if stripes is not None:
            last: int | None = None
            for s in stripes:
                chunk = read(range(s, s + 1))
                chunk = _in_range(chunk, column, ids_from, ids_below)
                if not chunk.num_rows:
                    continue
                ids = _ids(chunk, column)
                if bool(np.any(ids[1:] < ids[:-1])) or (last is not None and ids[0] < last):
                    raise BatchModeError(
                        f"{fragment.files[0].path}: batch ids decrease inside a batch-mode file"
                    )
                last = int(ids[-1])
                yield chunk
            return
    table = _sorted(read(), column)
    table = _in_range(table, column, ids_from, ids_below)
    if table.num_rows:
        yield table


def merge_batch_runs(inputs: Sequence[Iterator[pa.Table]], column: str) -> Iterator[pa.Table]:
    """Merge streams of tables whose ``column`` never decreases into one such stream.

    Holds one chunk per input (plus the rows of one id that spans chunks). Each round
    takes, from every input, the rows below the smallest last id of the inputs still being
    read (no later chunk can hold a smaller id), and emits them stably sorted by id: rows
    of one id come input by input, in the order of ``inputs``, each input's rows in their
    order; every row of an id is emitted in the same table. Then the inputs whose held
    rows end at that smallest id read their next chunk.

    Example:
        >>> import pyarrow as pa
        >>> a = iter([pa.table({"b": [1, 3], "x": ["a1", "a3"]})])
        >>> b = iter([pa.table({"b": [3], "x": ["b3"]}), pa.table({"b": [3], "x": ["b3'"]})])
        >>> pa.concat_tables(merge_batch_runs([a, b], "b"))["x"].to_pylist()
        ['a1', 'a3', 'b3', "b3'"]
    """
    streams = list(inputs)
    held: list[pa.Table | None] = [None] * len(streams)
    reading = [True] * len(streams)

    def pull(i: int) -> None:
        """Append the next non-empty chunk of input ``i`` to its held rows (or close it)."""
        for chunk in streams[i]:
            if chunk.num_rows:
                current = held[i]
                held[i] = chunk if current is None else pa.concat_tables([current, chunk])
                return
        reading[i] = False

    for i in range(len(streams)):
        pull(i)
    while True:
        lasts = {
            i: int(_ids(held_i.slice(held_i.num_rows - 1), column)[0])
            for i, held_i in enumerate(held)
            if reading[i] and held_i is not None and held_i.num_rows
        }
        bound = min(lasts.values()) if lasts else None
        parts: list[pa.Table] = []
        for i, held_i in enumerate(held):
            if held_i is None or not held_i.num_rows:
                continue
            if bound is None:
                parts.append(held_i)
                held[i] = None
                continue
            cut = int(np.searchsorted(_ids(held_i, column), bound, side="left"))
            if cut:
                parts.append(held_i.slice(0, cut))
                held[i] = held_i.slice(cut)
        if parts:
            merged = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
            yield _sorted(merged, column)
        if bound is None:
            return
        for i, last in lasts.items():
            if last == bound:
                pull(i)
