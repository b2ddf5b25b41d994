"""``Dataset.add_columns`` with values: SQL expressions or a per-batch function, computed
per fragment and written as one new data file per fragment holding only the new columns.

No existing data file is read beyond the columns the values need, and none is rewritten.
The new file of a fragment is row-aligned with it: its deleted rows hold nulls. The commit
is one :class:`~fermion.table.operations.AddColumns`; after a conflicting commit (an append,
a merge, an update, a compaction of its fragments, a schema change) it is planned again on
the newer version. ``compact_files`` later folds the files of a fragment into one, and
``drop_columns`` never rewrites data.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"f0": [1.0, 2.0], "f1": [3.0, 4.0]}), tempfile.mkdtemp())
    >>> ds.add_columns({"g": "f0 * 2 + f1"})
    >>> ds.to_table().to_pydict()
    {'f0': [1.0, 2.0], 'f1': [3.0, 4.0], 'g': [5.0, 8.0]}
    >>> [len(f.files) for f in ds.fragments]
    [2]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import expressions as exp

from fermion.errors import ColumnNotFoundError, InvalidArgumentError, SchemaMismatchError
from fermion.table.codec import (
    as_fragment,
    as_table_version,
    fragment_messages,
    has_deletion_file,
    with_fragment_id,
)
from fermion.table.commit import CommitConfig, CommitResult
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragment_threads import FRAGMENT_THREADS_DEFAULT, map_fragments
from fermion.table.fragments import as_batches, write_fragment_values
from fermion.table.operations import AddColumns
from fermion.table.predicate import parse_expression
from fermion.table.row_edits import commit_planned, committed_id, evaluate
from fermion.table.scan import ROW_OFFSET, read_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage
from fermion.table.write_properties import WriteProperties, write_properties_of

__all__ = [
    "BATCH_SIZE_DEFAULT",
    "ColumnValues",
    "add_column_values",
    "column_files_operation",
    "compute_fragment_columns",
    "expression_columns",
    "new_columns_schema",
    "plan_add_columns",
    "write_column_file",
]

#: Rows per batch handed to a column function.
BATCH_SIZE_DEFAULT = 65_536

#: New columns: ``{name: SQL expression}``, or a function of a record batch returning the
#: new columns for its rows (a RecordBatch, Table or pandas DataFrame).
ColumnValues = Union[Mapping[str, str], Callable[[pa.RecordBatch], Any]]  # noqa: UP007


def _referenced(texts: Sequence[str], names: Sequence[str]) -> list[str]:
    """Table columns the SQL texts name, in table order."""
    used = set()
    for text in texts:
        try:
            used |= {c.name for c in sqlglot.parse_one(text, read="spark").find_all(exp.Column)}
        except sqlglot.errors.SqlglotError:
            pass  # parse_expression reports it
    return [n for n in names if n in used]


class _Values:
    """Computes the new columns of a fragment's live rows, checking every output."""

    def __init__(
        self,
        schema: TableSchema,
        values: ColumnValues,
        read_columns: Sequence[str] | None,
        batch_size: int,
    ) -> None:
        names = schema.arrow.names
        self.udf: Callable[[pa.RecordBatch], Any] | None = None
        self.expressions: dict[str, pc.Expression] = {}
        if isinstance(values, Mapping):
            if not values:
                raise InvalidArgumentError("add_columns needs at least one column")
            for name, text in values.items():
                if not isinstance(text, str):
                    raise InvalidArgumentError(
                        f"add_columns: the value of {name!r} is SQL text, not {type(text).__name__}"
                    )
                self.expressions[name] = parse_expression(text, schema.arrow)
            default = _referenced(list(values.values()), names)
        elif callable(values):
            self.udf = values
            default = list(names)
        else:
            raise InvalidArgumentError(
                "add_columns takes fields, {name: SQL} or a function, not "
                f"{type(values).__name__}"
            )
        self.read_columns = list(read_columns) if read_columns is not None else default
        missing = [c for c in self.read_columns if c not in names]
        if missing:
            raise ColumnNotFoundError(f"add_columns: no columns {missing} in the table")
        if batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.table_schema = schema.arrow
        self.new_schema: pa.Schema | None = None
        if self.expressions:
            self.new_schema = self._checked(self._compute(schema.arrow.empty_table()), 0, None)

    def _compute(self, rows: pa.Table) -> pa.Table:
        if self.udf is None:
            if ROW_OFFSET in rows.column_names:  # not an operand; copied if unaligned
                rows = rows.drop_columns([ROW_OFFSET])
            try:
                return evaluate(rows, self.expressions)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise InvalidArgumentError(f"add_columns: evaluating failed: {exc}") from None
        batches = rows.select(self.read_columns).to_batches(max_chunksize=self.batch_size)
        if not batches:
            batches = [pa.RecordBatch.from_pylist([], schema=rows.select(self.read_columns).schema)]
        parts = []
        for batch in batches:
            out = self.udf(batch)
            try:
                out_schema, out_batches = as_batches(out)
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(f"add_columns: the function returned {exc}") from None
            table = pa.Table.from_batches(list(out_batches), schema=out_schema)
            if table.num_rows != batch.num_rows:
                raise InvalidArgumentError(
                    f"add_columns: the function returned {table.num_rows} rows for a batch of "
                    f"{batch.num_rows}"
                )
            parts.append(table)
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def _checked(self, table: pa.Table, fragment_id: int, expected: pa.Schema | None) -> pa.Schema:
        if table.num_columns == 0:
            raise InvalidArgumentError("add_columns: no new column")
        taken = [n for n in table.column_names if n in self.table_schema.names]
        if taken:
            raise InvalidArgumentError(f"add_columns: columns {taken} already exist")
        schema = pa.schema([f.with_nullable(True) for f in table.schema])
        if expected is not None and not schema.equals(expected):
            raise SchemaMismatchError(
                f"add_columns: fragment {fragment_id} got columns {schema}, an earlier "
                f"fragment {expected}"
            )
        if any(pa.types.is_null(f.type) for f in schema):
            raise SchemaMismatchError(f"add_columns: columns of no type (all nulls): {schema}")
        return schema

    def of_fragment(self, rows: pa.Table, fragment_id: int) -> pa.Table:
        """The new columns of the live ``rows`` of one fragment (read with row offsets)."""
        out = self._compute(rows)
        schema = self._checked(out, fragment_id, self.new_schema)
        self.new_schema = schema
        return out.cast(schema)


def expression_columns(schema: TableSchema, expressions: Mapping[str, str]) -> pa.Schema:
    """The Arrow schema of the columns ``{name: SQL expression}`` computes (checked on no
    rows: the expressions parse, evaluate and name no existing column).

    Raises:
        InvalidArgumentError: An expression that does not parse or evaluate, an existing
            column name, no column.
        ColumnNotFoundError: An expression names an unknown column.

    Example:
        >>> table = TableSchema.from_arrow(pa.schema([("f", pa.float32())]))
        >>> expression_columns(table, {"g": "f * 2"}).types
        [DataType(float)]
    """
    if not isinstance(expressions, Mapping):
        raise InvalidArgumentError(
            f"expected {{name: SQL expression}}, not {type(expressions).__name__}"
        )
    new = _Values(schema, expressions, None, BATCH_SIZE_DEFAULT).new_schema
    assert new is not None  # expressions: known from an empty table
    return new


def _aligned(values: pa.Table, offsets: np.ndarray, physical_rows: int) -> pa.Table:
    """``values`` of the live rows at ``offsets``, spread over every physical row (nulls at
    the deleted ones)."""
    if len(offsets) == physical_rows:
        return values
    index = np.full(physical_rows, -1, dtype=np.int64)
    index[offsets.astype(np.int64)] = np.arange(len(offsets))
    return values.take(pa.array(index, mask=index < 0))


def new_columns_schema(schema: TableSchema, new: pa.Schema) -> tuple[TableSchema, TableSchema]:
    """The table schema with the ``new`` columns added, and the new columns alone with
    their field ids (the schema their data files are written with).

    Example:
        >>> table = TableSchema.from_arrow(pa.schema([("a", pa.int64())]))
        >>> full, part = new_columns_schema(table, pa.schema([("g", pa.float64())]))
        >>> full.arrow.names, part.arrow.names, part.field_ids
        (['a', 'g'], ['g'], (1,))
    """
    full = schema.add_columns(list(new))
    new_ids = full.field_ids[len(schema.field_ids) :]
    return full, TableSchema(new, tuple(new_ids), full.max_field_id)


def compute_fragment_columns(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment | Any,
    values: ColumnValues,
    *,
    read_columns: Sequence[str] | None = None,
    batch_size: int = BATCH_SIZE_DEFAULT,
) -> pa.Table:
    """The new columns of one committed fragment (a manifest message is still accepted),
    row-aligned with it (nulls at deleted rows).

    Raises:
        As :func:`plan_add_columns`.
    """
    computer = _Values(schema, values, read_columns, batch_size)
    return _fragment_values(storage, schema, computer, as_fragment(fragment, committed=True))


def _fragment_values(
    storage: TableStorage, schema: TableSchema, computer: _Values, fragment: Fragment
) -> pa.Table:
    # without a deletion file every row is live: the values are aligned as computed
    deletions = has_deletion_file(fragment)
    rows = read_fragment(
        storage, schema, fragment, computer.read_columns, with_row_offsets=deletions
    )
    new = computer.of_fragment(rows, committed_id(fragment))
    if not deletions:
        return new
    offsets = rows.column(ROW_OFFSET).to_numpy()
    return _aligned(new, offsets, fragment.physical_rows)


def write_column_file(
    storage: TableStorage,
    part: TableSchema,
    fragment: Fragment | Any,
    values: pa.Table,
    *,
    prefix: str = "data",
    properties: WriteProperties | None = None,
) -> Fragment:
    """Write the new columns of a committed ``fragment`` (``values``, row-aligned with it;
    a manifest message is still accepted) as one data file under ``prefix``; returns the
    ``AddColumns`` entry of the fragment (its id, the new file, the new columns'
    statistics). ``properties``: the table's write properties (``None``: read from the
    table's latest version).

    Raises:
        InvalidArgumentError: ``values`` has another row count than the fragment.
    """
    fragment = as_fragment(fragment, committed=True)
    if values.num_rows != fragment.physical_rows:
        raise InvalidArgumentError(
            f"fragment {fragment.id}: {values.num_rows} new values for "
            f"{fragment.physical_rows} rows"
        )
    written = write_fragment_values(
        values.cast(part.arrow), storage.uri, schema=part,
        max_rows_per_file=max(1, fragment.physical_rows),
        manifest_store=storage.manifest_store, prefix=prefix, properties=properties,
    )  # fmt: skip
    if len(written) != 1:
        raise InvalidArgumentError(
            f"fragment {fragment.id}: new columns written as {len(written)} files"
        )
    return with_fragment_id(written[0], committed_id(fragment))


def plan_add_columns(
    storage: TableStorage,
    version: TableVersion | Any,
    values: ColumnValues,
    *,
    read_columns: Sequence[str] | None = None,
    batch_size: int = BATCH_SIZE_DEFAULT,
) -> tuple[AddColumns | None, int]:
    """Compute and write the new columns of every fragment of ``version`` (its manifest
    message is still accepted; nothing committed). Returns the operation and the number
    of files written.

    Raises:
        InvalidArgumentError: An expression that does not parse or evaluate, a function
            returning the wrong number of rows or an existing column name.
        SchemaMismatchError: Fragments given columns of different types.
        ColumnNotFoundError: An unknown column read.
    """
    version = as_table_version(version)
    schema = version.schema
    return _plan_add(storage, version, _Values(schema, values, read_columns, batch_size))


def _plan_add(
    storage: TableStorage, version: TableVersion, computer: _Values
) -> tuple[AddColumns | None, int]:
    """:func:`plan_add_columns` with the values' computer made on ``version``'s schema."""
    schema = version.schema
    fragments = list(version.fragments)

    def compute(fragment: Fragment) -> pa.Table:
        return _fragment_values(storage, schema, computer, fragment)

    if computer.udf is None and computer.new_schema is not None:
        # expressions know their types up front: each fragment is computed and written in
        # one task, so one fragment's file write and fsync overlap another's computing
        full, part = new_columns_schema(schema, computer.new_schema)
        properties = write_properties_of(version.config)

        def write(fragment: Fragment) -> Fragment:
            values = compute(fragment)
            return write_column_file(storage, part, fragment, values, properties=properties)

        entries = _all_or_nothing(storage, write, fragments)
        return AddColumns(full, fragment_messages(entries)), len(entries)

    # expressions know their types up front, so fragments compute side by side; a function
    # runs on one fragment after another (the first one's output fixes the types)
    threads = FRAGMENT_THREADS_DEFAULT if computer.udf is None else 1
    tables = map_fragments(compute, fragments, threads=threads)
    if computer.new_schema is None:  # no fragment and a function: nothing to learn from
        raise InvalidArgumentError("add_columns with a function needs a table with rows")
    return column_files_operation(storage, version, schema, computer.new_schema, fragments, tables)


def _all_or_nothing(
    storage: TableStorage,
    write: Callable[[Fragment], Fragment],
    fragments: Sequence[Fragment],
) -> list[Fragment]:
    """``write`` of every fragment on a few threads, in order; when one fails, the files
    the others wrote are removed and the first failure (in fragment order) is raised."""

    def attempt(fragment: Fragment) -> tuple[Fragment | None, Exception | None]:
        try:
            return write(fragment), None
        except Exception as exc:  # raised below, once every write has finished
            return None, exc

    results = map_fragments(attempt, fragments)
    failures = [exc for _, exc in results if exc is not None]
    if failures:
        for entry, _ in results:
            for file in entry.files if entry is not None else ():
                storage.remove(file.path)
        raise failures[0]
    return [entry for entry, _ in results if entry is not None]


def column_files_operation(
    storage: TableStorage,
    version: TableVersion | Any,
    schema: TableSchema,
    new: pa.Schema,
    fragments: Sequence[Fragment | Any],
    tables: Sequence[pa.Table],
) -> tuple[AddColumns, int]:
    """Write each fragment's new columns (``tables[i]``, row-aligned with
    ``fragments[i]``) as one column file, on a few threads, with the write properties of
    ``version`` (a manifest message is still accepted); returns the ``AddColumns``
    operation and the number of files written
    (nothing committed).

    Raises:
        InvalidArgumentError: A table's row count differs from its fragment's.
    """
    full, part = new_columns_schema(schema, new)
    properties = write_properties_of(as_table_version(version).config)

    def write(index: int) -> Fragment:
        return write_column_file(
            storage, part, fragments[index], tables[index], properties=properties
        )

    entries = map_fragments(write, range(len(fragments)))
    return AddColumns(full, fragment_messages(entries)), len(entries)


def add_column_values(
    storage: TableStorage,
    version: TableVersion | Any,
    values: ColumnValues,
    *,
    read_columns: Sequence[str] | None = None,
    batch_size: int = BATCH_SIZE_DEFAULT,
    config: CommitConfig | None = None,
) -> CommitResult | None:
    """Add columns with values in one version (re-planned after a conflicting commit),
    planned on ``version`` (its manifest message is still accepted).

    Raises:
        As :func:`plan_add_columns`; ``CommitConflictError`` when conflicts outlast the
        commit attempts.
    """
    version = as_table_version(version)
    first = _Values(version.schema, values, read_columns, batch_size)  # fail before any file

    def plan(latest: TableVersion) -> tuple[AddColumns | None, int]:
        if latest is version:  # (the expressions parsed once; a re-plan parses them again)
            return _plan_add(storage, latest, first)
        return plan_add_columns(
            storage, latest, values, read_columns=read_columns, batch_size=batch_size
        )

    result, _ = commit_planned(storage, version, plan, config=config)
    return result
