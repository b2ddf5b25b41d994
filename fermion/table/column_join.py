"""``Dataset.add_columns(values, on=keys)``: new columns from a table of values joined on
key columns or on the stable row id ``_rowid``.

The values table holds the key columns and the new columns. Every fragment gets one new
data file holding only the new columns, row-aligned with it (the writer
``add_columns`` with expressions uses, :func:`fermion.table.column_values.write_column_file`);
no existing data file is rewritten and only the key columns are read (a ``_rowid`` join
reads no data file at all, only the fragments' row ids and deletion files).

Semantics (a SQL ``LEFT JOIN`` of the table with the values):

- a live row whose key no values row has reads nulls in the new columns, or, with
  ``unmatched="error"``, the whole add is refused (naming some of those keys), so a
  feature backfill that missed rows cannot go unnoticed;
- a values row whose key no live row has is ignored;
- a null key in the table matches nothing; a null key in the values is an error, as are
  duplicate keys (named), key columns the values lack or the table lacks, and key columns
  of another type than the table's (no implicit cast: ``int32`` keys do not join ``int64``);
- ``on="_rowid"`` joins on the row ids of docs/TABLE_FORMAT.md ("Row ids"): the values'
  ``_rowid`` column is of an integer type, and a table created before row ids existed
  cannot be joined on them.

The commit is one :class:`~fermion.table.operations.AddColumns`. A concurrent delete is
harmless (the new file of a fragment covers its deleted rows too); after an append, a
merge, an update, a compaction or a schema change the join is planned again on the newer
version (rewrites keep row ids, so a ``_rowid`` join finds its rows again).

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"id": [1, 2, 3]}), tempfile.mkdtemp())
    >>> ds.add_columns(pa.table({"id": [3, 1], "label": ["c", "a"]}), on="id")
    >>> ds.to_table().to_pydict()
    {'id': [1, 2, 3], 'label': ['a', None, 'c']}
    >>> ds.add_columns(pa.table({"_rowid": [1], "w": [0.5]}), on="_rowid")
    >>> ds.to_table()["w"].to_pylist()
    [None, 0.5, None]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import (
    ColumnNotFoundError,
    DatasetError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from fermion.table.codec import as_fragment, as_table_version, has_deletion_file
from fermion.table.column_values import column_files_operation
from fermion.table.commit import CommitConfig, CommitResult
from fermion.table.deletions import keep_mask, read_fragment_deletions
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragment_threads import map_fragments
from fermion.table.fragments import as_batches
from fermion.table.operations import AddColumns
from fermion.table.row_edits import commit_planned
from fermion.table.row_ids import ROW_ID, fragment_row_ids, has_row_ids
from fermion.table.scan import ROW_OFFSET, read_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage

__all__ = [
    "JoinUnmatched",
    "JoinedValues",
    "add_joined_columns",
    "joined_fragment_columns",
    "plan_joined_columns",
]

#: What a live row whose key the values lack gets: nulls, or the add is refused.
JoinUnmatched = Literal["null", "error"]

_VALUES_ROW = "__fermion_values_row"
#: How many offending keys an error message lists.
_KEYS_SHOWN = 5


def _described(keys: pa.Table) -> str:
    rows = [tuple(r.values()) for r in keys.slice(0, _KEYS_SHOWN).to_pylist()]
    shown = ", ".join(repr(r[0]) if len(r) == 1 else repr(r) for r in rows)
    return shown + (", ..." if keys.num_rows > _KEYS_SHOWN else "")


def _key_names(on: str | Sequence[str]) -> tuple[str, ...]:
    keys = (on,) if isinstance(on, str) else tuple(on)
    if not keys or len(set(keys)) != len(keys) or not all(isinstance(k, str) for k in keys):
        raise InvalidArgumentError(f"add_columns needs distinct key column names, got {on!r}")
    if ROW_ID in keys and len(keys) > 1:
        raise InvalidArgumentError(f"{ROW_ID!r} is a key on its own, not with {keys!r}")
    return keys


class JoinedValues:
    """A validated table of new values and its keys, ready to join with fragments.

    Raises (from the constructor):
        InvalidArgumentError: Bad key names, no new column, a new column the table has,
            null, negative (``_rowid``) or duplicate keys (named), ``unmatched`` unknown.
        SchemaMismatchError: Key columns the values lack, keys of another type than the
            table's, a new column of no type (all nulls).
        ColumnNotFoundError: A key column the table lacks.
        DatasetError: A ``_rowid`` join on a table version without row ids.
    """

    def __init__(
        self,
        version: TableVersion | Any,
        values: Any,
        on: str | Sequence[str],
        unmatched: JoinUnmatched = "null",
    ) -> None:
        if unmatched not in ("null", "error"):
            raise InvalidArgumentError(f"unmatched is 'null' or 'error', not {unmatched!r}")
        self.on = _key_names(on)
        self.unmatched = unmatched
        values_schema, batches = as_batches(values)
        missing = [k for k in self.on if values_schema.get_field_index(k) < 0]
        if missing:
            raise SchemaMismatchError(f"add_columns: the new values lack the key columns {missing}")
        table = pa.Table.from_batches(list(batches), schema=values_schema)
        new_names = [n for n in table.column_names if n not in self.on]
        if not new_names:
            raise InvalidArgumentError("add_columns: the new values hold no column but the keys")
        self.new = table.select(new_names)
        self.new = self.new.cast(pa.schema([f.with_nullable(True) for f in self.new.schema]))
        untyped = [f.name for f in self.new.schema if pa.types.is_null(f.type)]
        if untyped:
            raise SchemaMismatchError(f"add_columns: columns of no type (all nulls): {untyped}")
        keys = table.select(list(self.on))
        nulls = sum(keys.column(k).null_count for k in self.on)
        if nulls:
            raise InvalidArgumentError(f"add_columns: the new values have {nulls} null keys")
        self._key_types = {k: keys.schema.field(k).type for k in self.on}
        version = as_table_version(version)
        self.by_row_id = self.on == (ROW_ID,) and ROW_ID not in version.schema.arrow.names
        self.check(version)
        if self.by_row_id:
            self._sorted_ids, self._order = self._row_id_keys(keys.column(0))
            self.keys = keys
        else:
            self.keys = keys.append_column(_VALUES_ROW, pa.array(np.arange(keys.num_rows)))
            counts = keys.group_by(list(self.on)).aggregate([([], "count_all")])
            duplicated = counts.filter(pc.field("count_all") > 1).select(list(self.on))
            duplicated = duplicated.sort_by([(k, "ascending") for k in self.on])
            if duplicated.num_rows:
                raise InvalidArgumentError(
                    f"add_columns: {duplicated.num_rows} keys occur more than once in the new "
                    f"values: {_described(duplicated)}"
                )

    @property
    def new_schema(self) -> pa.Schema:
        """The new columns (nullable)."""
        return self.new.schema

    def check(self, version: TableVersion | Any) -> TableSchema:
        """The schema of ``version`` (its manifest message is still accepted), checked
        against the keys and new columns (again on every re-plan: a concurrent schema
        change may have added or retyped columns).

        Raises:
            As the constructor.
        """
        version = as_table_version(version)
        schema = version.schema
        arrow = schema.arrow
        taken = [n for n in self.new.column_names if n in arrow.names]
        if taken:
            raise InvalidArgumentError(f"add_columns: columns {taken} already exist")
        if self.by_row_id:
            if ROW_ID in arrow.names:
                raise InvalidArgumentError(
                    f"add_columns: a column {ROW_ID!r} was added since the join was planned"
                )
            if not has_row_ids(version):
                raise DatasetError(
                    f"add_columns on {ROW_ID!r}: version {version.version} of this table has no "
                    "row ids (it was created before they existed); join on key columns instead"
                )
            return schema
        for key in self.on:
            if arrow.get_field_index(key) < 0:
                raise ColumnNotFoundError(f"add_columns: key {key!r} is not a column of the table")
            ours = arrow.field(key).type
            if pa.types.is_nested(ours) or pa.types.is_dictionary(ours):
                raise InvalidArgumentError(
                    f"add_columns: key {key!r} has type {ours}: not a scalar"
                )
            theirs = self._key_types[key]
            if not theirs.equals(ours):
                raise SchemaMismatchError(
                    f"add_columns: key {key!r} of the new values has type {theirs}, the table "
                    f"has {ours}"
                )
        return schema

    def _row_id_keys(self, ids: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
        if not pa.types.is_integer(ids.type):
            raise SchemaMismatchError(
                f"add_columns: the values' {ROW_ID!r} column has type {ids.type}, not an integer"
            )
        values = ids.to_numpy()
        if values.size and pa.types.is_signed_integer(ids.type) and int(values.min()) < 0:
            raise InvalidArgumentError(f"add_columns: negative {ROW_ID!r} values")
        values = values.astype(np.uint64)
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if repeated.size:
            shown = np.unique(repeated)
            raise InvalidArgumentError(
                f"add_columns: {shown.size} keys occur more than once in the new values: "
                f"{_described(pa.table({ROW_ID: shown}))}"
            )
        return ordered, order

    def rows_of(
        self, storage: TableStorage, schema: TableSchema, fragment: Fragment | Any
    ) -> np.ndarray:
        """Per physical row of a committed ``fragment`` (a manifest message is still
        accepted), the values row joined to it (-1: none, or a deleted row).

        Raises:
            InvalidArgumentError: With ``unmatched="error"``, live rows without values.
        """
        fragment = as_fragment(fragment, committed=True)
        if self.by_row_id:
            return self._rows_by_id(storage, fragment)
        on = list(self.on)
        target = read_fragment(storage, schema, fragment, on, with_row_offsets=True)
        matched = target.join(self.keys, on, join_type="inner")
        index = np.full(fragment.physical_rows, -1, dtype=np.int64)
        offsets = matched.column(ROW_OFFSET).to_numpy().astype(np.int64)
        index[offsets] = matched.column(_VALUES_ROW).to_numpy()
        if self.unmatched == "error" and matched.num_rows < target.num_rows:
            hit = np.zeros(fragment.physical_rows, dtype=bool)
            hit[offsets] = True
            live = target.column(ROW_OFFSET).to_numpy().astype(np.int64)
            lacking = target.filter(pa.array(~hit[live])).select(on)
            self._refuse(fragment, lacking)
        return index

    def _rows_by_id(self, storage: TableStorage, fragment: Fragment) -> np.ndarray:
        ids = fragment_row_ids(fragment)
        if ids is None:
            raise DatasetError(f"fragment {fragment.id} of a table with row ids has none")
        live = np.ones(fragment.physical_rows, dtype=bool)
        if has_deletion_file(fragment):
            deleted = read_fragment_deletions(storage, fragment)
            live = keep_mask(deleted, fragment.physical_rows)
        ids = ids.astype(np.uint64)
        if not self._sorted_ids.size:
            if self.unmatched == "error" and live.any():
                self._refuse(fragment, pa.table({ROW_ID: ids[live]}))
            return np.full(fragment.physical_rows, -1, dtype=np.int64)
        found = np.searchsorted(self._sorted_ids, ids)
        clipped = np.minimum(found, self._sorted_ids.size - 1)
        hit = live & (self._sorted_ids[clipped] == ids)
        if self.unmatched == "error" and not hit[live].all():
            self._refuse(fragment, pa.table({ROW_ID: ids[live & ~hit]}))
        return np.where(hit, self._order[clipped], -1)

    def _refuse(self, fragment: Fragment, lacking: pa.Table) -> None:
        raise InvalidArgumentError(
            f"add_columns: {lacking.num_rows} rows of fragment {fragment.id} have keys the new "
            f"values lack (unmatched='error'): {_described(lacking)}"
        )


def joined_fragment_columns(
    storage: TableStorage, schema: TableSchema, fragment: Fragment | Any, values: JoinedValues
) -> pa.Table:
    """The new columns of one committed fragment (a manifest message is still accepted),
    row-aligned with it (nulls at deleted rows and
    rows without values).

    Raises:
        As :meth:`JoinedValues.rows_of`.
    """
    index = values.rows_of(storage, schema, fragment)
    if index.size and int(index.min()) >= 0 and np.array_equal(index, np.arange(index.size)):
        return values.new.slice(0, index.size)
    return values.new.take(pa.array(index, mask=index < 0))


def plan_joined_columns(
    storage: TableStorage, version: TableVersion | Any, values: JoinedValues
) -> tuple[AddColumns, int]:
    """Join ``values`` with every fragment of ``version`` (its manifest message is still
    accepted) and write the new column files
    (nothing committed). Returns the operation and the number of files written.

    Raises:
        As :class:`JoinedValues`.
    """
    version = as_table_version(version)
    schema = values.check(version)
    fragments = list(version.fragments)
    tables = map_fragments(  # every join before any file: a refused row writes nothing
        lambda fragment: joined_fragment_columns(storage, schema, fragment, values), fragments
    )
    return column_files_operation(storage, version, schema, values.new_schema, fragments, tables)


def add_joined_columns(
    storage: TableStorage,
    version: TableVersion | Any,
    values: Any,
    *,
    on: str | Sequence[str],
    unmatched: JoinUnmatched = "null",
    config: CommitConfig | None = None,
) -> CommitResult | None:
    """Add the columns of ``values`` joined on ``on`` in one version (re-planned after a
    conflicting commit), planned on ``version`` (its manifest message is still accepted).

    Raises:
        As :class:`JoinedValues`; ``CommitConflictError`` when conflicts outlast the
        commit attempts.
    """
    version = as_table_version(version)
    joined = JoinedValues(version, values, on, unmatched)
    result, _ = commit_planned(
        storage, version, lambda latest: plan_joined_columns(storage, latest, joined),
        config=config,
    )  # fmt: skip
    return result
