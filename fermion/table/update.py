"""``Dataset.update`` and ``write_dataset(..., replace_where=...)``: rows replaced by predicate.

Both commit one :class:`~fermion.table.operations.Update`: the rows matching the predicate
get deletion files, and the new rows are new fragments.

- **update**: the new rows are the matching rows with some columns set to SQL expressions
  over the row (:func:`fermion.table.predicate.parse_expression`: columns, literals,
  ``+ - * /``, comparisons, ...), evaluated by Arrow's own engine (``pyarrow.acero``
  projection) and cast to the column's type (a value that does not fit is an error, never
  truncated).
- **replace_where**: the new rows are the data given. Every one of them must match the
  predicate, or the write is refused and nothing is committed.

After a conflicting commit the plan runs again on the newer version (the expressions are
evaluated on the rows as they are then), so an update never loses another's change.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> uri = tempfile.mkdtemp()
    >>> ds = ft.write_dataset(pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}), uri)
    >>> ds.update("id >= 2", set={"v": "v * 2 + 1"})
    2
    >>> sorted(ds.to_table()["v"].to_pylist())
    [10, 41, 61]
    >>> ds = ft.write_dataset(pa.table({"id": [2], "v": [0]}), uri, mode="overwrite",
    ...                       replace_where="id = 2")
    >>> sorted(ds.to_table()["v"].to_pylist()), ds.version
    ([0, 10, 61], 3)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import ColumnNotFoundError, InvalidArgumentError, SchemaMismatchError
from fermion.table.codec import as_fragment, as_table_version, fragment_messages
from fermion.table.commit import CommitConfig, CommitResult
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragments import as_batches, write_fragment_values
from fermion.table.operations import Update
from fermion.table.predicate import parse_expression, parse_predicate
from fermion.table.row_edits import (
    commit_planned,
    committed_id,
    evaluate,
    kept_row_ids,
    mark_deleted,
    write_new_rows,
)
from fermion.table.row_ids import row_ids_at
from fermion.table.scan import ROW_OFFSET, Scanner, read_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage, deferred_syncs
from fermion.table.write_properties import write_properties_of

__all__ = ["check_rows_match", "plan_rows", "replace_where", "update_rows"]


def _predicate(where: pc.Expression | str | None, schema: pa.Schema) -> tuple[Any, str]:
    if where is None:
        return None, ""
    if isinstance(where, str):
        return parse_predicate(where, schema), where
    if isinstance(where, pc.Expression):
        return where, str(where)
    raise InvalidArgumentError(
        f"a predicate is SQL text or a pyarrow.compute.Expression, not {type(where).__name__}"
    )


def _compiled(
    assignments: Mapping[str, str | pc.Expression], schema: TableSchema
) -> dict[str, pc.Expression]:
    """The SET expressions, checked on an empty table: known columns, castable types."""
    if not isinstance(assignments, Mapping) or not assignments:
        raise InvalidArgumentError("update needs set={column: SQL expression, ...}")
    arrow = schema.arrow
    compiled = {}
    for column, text in assignments.items():
        if arrow.get_field_index(column) < 0:
            raise ColumnNotFoundError(f"update: the table has no column {column!r}")
        if isinstance(text, pc.Expression):
            compiled[column] = text
        elif isinstance(text, str):
            compiled[column] = parse_expression(text, arrow)
        else:
            raise InvalidArgumentError(
                f"update: the value of {column!r} is SQL text or an Arrow expression, "
                f"not {type(text).__name__}"
            )
    try:
        empty = evaluate(arrow.empty_table(), compiled)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidArgumentError(f"update: cannot evaluate {dict(assignments)}: {exc}") from None
    for column in compiled:
        _cast(empty.column(column), arrow.field(column).type, column)
    return compiled


def _cast(values: pa.ChunkedArray, kind: pa.DataType, column: str) -> pa.ChunkedArray:
    if values.type.equals(kind):
        return values
    if pa.types.is_null(values.type):
        return pa.chunked_array([pa.nulls(len(values), kind)])
    try:
        return values.cast(kind, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaMismatchError(
            f"update: values of type {values.type} do not fit column {column!r} ({kind}): {exc}"
        ) from None


def _updated(rows: pa.Table, compiled: Mapping[str, pc.Expression], schema: TableSchema) -> Any:
    try:
        values = evaluate(rows, compiled)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidArgumentError(f"update: evaluating the new values failed: {exc}") from None
    arrays = [
        _cast(values.column(f.name), f.type, f.name) if f.name in compiled else rows.column(f.name)
        for f in schema.arrow
    ]
    return pa.Table.from_arrays(arrays, schema=schema.arrow)


def plan_rows(
    storage: TableStorage,
    version: TableVersion | Any,
    where: pc.Expression | str | None,
    assignments: Mapping[str, str | pc.Expression] | None,
    new_fragments: tuple[Fragment | Any, ...],
    max_rows_per_file: int,
) -> tuple[Update | None, int]:
    """Plan an ``Update`` on ``version`` (its manifest message is still accepted;
    deletion files and new data files written, nothing committed): the rows matching
    ``where`` deleted, new rows from ``assignments`` (an update) or ``new_fragments`` (a
    replace_where, when ``assignments`` is ``None``).

    Returns:
        The operation (``None``: nothing to change) and the number of rows matched.
    """
    version = as_table_version(version)
    schema = version.schema
    predicate, text = _predicate(where, schema.arrow)
    compiled = _compiled(assignments, schema) if assignments is not None else None
    columns = list(schema.arrow.names) if compiled is not None else []
    updates, removed, new_tables, matched = [], [], [], 0
    moved: list[np.ndarray | None] = []  # the updated rows' ids (an update keeps them)
    for fragment in Scanner(storage, version, schema, [], predicate).fragment_values():
        rows = read_fragment(storage, schema, fragment, columns, predicate, with_row_offsets=True)
        if not rows.num_rows:
            continue
        matched += rows.num_rows
        offsets = rows.column(ROW_OFFSET).to_numpy()
        if compiled is not None:
            new_tables.append(_updated(rows, compiled, schema))
            moved.append(row_ids_at(fragment, offsets))
        update, emptied = mark_deleted(storage, fragment, offsets, version.version)
        if emptied:
            removed.append(committed_id(fragment))
        elif update is not None:
            updates.append(update)
    if compiled is not None:
        properties = write_properties_of(version.config)
        written = write_new_rows(storage, schema, new_tables, max_rows_per_file, properties)
        new_fragments = tuple(kept_row_ids(written, moved))
    else:
        new_fragments = tuple(as_fragment(f) for f in new_fragments)
    if not updates and not removed and not new_fragments:
        return None, matched
    op = Update(
        updated_fragments=fragment_messages(updates), removed_fragment_ids=tuple(removed),
        new_fragments=fragment_messages(new_fragments), predicate=text,
        columns=tuple(compiled) if compiled is not None else (),
        replace_where=compiled is None,
    )  # fmt: skip
    return op, matched


def update_rows(
    storage: TableStorage,
    version: TableVersion | Any,
    where: pc.Expression | str | None,
    assignments: Mapping[str, str | pc.Expression],
    *,
    max_rows_per_file: int,
    config: CommitConfig | None = None,
) -> tuple[CommitResult | None, int]:
    """Set columns of the rows matching ``where`` (``None``: every row) in one version,
    planned on ``version`` (its manifest message is still accepted).

    Returns:
        The commit (``None``: no row matched) and the number of rows updated.

    Raises:
        ColumnNotFoundError: An unknown column in ``where`` or ``assignments``.
        InvalidArgumentError: An expression that does not parse or evaluate.
        SchemaMismatchError: New values that do not fit their column's type.
    """
    version = as_table_version(version)
    _compiled(assignments, version.schema)  # fail before any file is written
    return commit_planned(
        storage,
        version,
        lambda m: plan_rows(storage, m, where, assignments, (), max_rows_per_file),
        config=config,
    )


def check_rows_match(batch: pa.RecordBatch | pa.Table, predicate: pc.Expression, text: str) -> None:
    """Refuse new rows of a replace_where that do not match its predicate.

    Args:
        batch: New rows.
        predicate: The parsed predicate.
        text: Its SQL text (for the message).

    Raises:
        InvalidArgumentError: A row does not match (a null result counts as not matching).

    Example:
        >>> try:
        ...     check_rows_match(pa.table({"d": [1, 2]}), pc.field("d") == 1, "d = 1")
        ... except InvalidArgumentError as error:
        ...     print(str(error).split(";")[0])
        replace_where 'd = 1': 1 new rows do not match the predicate, e.g. {'d': 2}
    """
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    mask = _matches(table, predicate)
    outside = table.filter(pc.invert(mask))
    if outside.num_rows:
        raise InvalidArgumentError(
            f"replace_where {text!r}: {outside.num_rows} new rows do not match the "
            f"predicate, e.g. {outside.slice(0, 1).to_pylist()[0]}; nothing was committed"
        )


def _checked(
    batches: Iterator[pa.RecordBatch], predicate: pc.Expression, text: str
) -> Iterator[pa.RecordBatch]:
    """The batches, each checked to match ``predicate`` in every row."""
    for batch in batches:
        check_rows_match(batch, predicate, text)
        yield batch


def _matches(table: pa.Table, predicate: pc.Expression) -> pa.ChunkedArray:
    """True where the row matches (null counts as not matching)."""
    values = evaluate(table, {"m": predicate}).column("m")
    return pc.fill_null(values, False)


@deferred_syncs()  # (the new rows' fsyncs run in the background until the manifest put)
def replace_where(
    storage: TableStorage,
    version: TableVersion | Any,
    data: Any,
    where: str | pc.Expression,
    *,
    max_rows_per_file: int,
    config: CommitConfig | None = None,
) -> CommitResult | None:
    """Replace the rows matching ``where`` by ``data`` in one version, planned on
    ``version`` (its manifest message is still accepted).

    Returns:
        The commit (``None``: no row matched and ``data`` is empty).

    Raises:
        InvalidArgumentError: A row of ``data`` does not match ``where`` (nothing is
            committed), or the predicate does not parse.
        SchemaMismatchError: ``data`` has other columns or types than the table.
    """
    version = as_table_version(version)
    schema = version.schema
    predicate, text = _predicate(where, schema.arrow)
    if predicate is None:
        raise InvalidArgumentError("replace_where needs a predicate")
    data_schema, batches = as_batches(data)
    schema.check_data(data_schema)
    stream = pa.RecordBatchReader.from_batches(data_schema, _checked(batches, predicate, text))
    fragments = tuple(
        write_fragment_values(
            stream, storage.uri, schema=schema, max_rows_per_file=max_rows_per_file,
            manifest_store=storage.manifest_store,
            properties=write_properties_of(version.config),
        )
    )  # fmt: skip
    result, _ = commit_planned(
        storage,
        version,
        lambda v: plan_rows(storage, v, where, None, fragments, max_rows_per_file),
        config=config,
    )
    return result
