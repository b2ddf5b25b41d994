"""An upsert by key columns as plan (driver) → match per fragment and write rows (any
process) → commit (driver): the distributed form of
``Dataset.merge_insert(on).when_matched_update_all().when_not_matched_insert_all()``.

- :func:`plan_upsert` takes the source's key columns (the rows stay with the workers),
  checks them (no null key, no key twice: named in the error), hashes them for the
  commit's conflict check, and makes one :class:`UpsertTask` per group of fragments that
  may hold a source key (fragment statistics rule the others out).
- :func:`execute_upsert_match` (a worker) joins a task's fragments' keys with the source
  keys and writes each touched fragment's complete new deletion file.
- The new rows are the source rows (a source key that matches ``n > 1`` table rows is
  written ``n`` times, as ``merge_insert`` does); workers write them with
  :func:`~fermion.table.tasks.execute_write` under the plan's
  :meth:`UpsertPlan.write_plan`.
- :func:`commit_upsert` commits one :class:`~fermion.table.operations.MergeInsert`;
  ``table_config`` entries (the input an upsert loaded) are set by the same commit. A
  concurrent commit that needs a re-plan raises ``CommitConflictError``;
  :func:`abort_upsert` then removes every file (plan again on the newer version).

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table import dataset, write_dataset
    >>> from fermion.table.tasks import execute_write
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), uri)
    >>> source = pa.table({"id": [3, 4], "v": ["C", "d"]})
    >>> plan = plan_upsert(uri, source.select(["id"]), ["id"])
    >>> matches = [execute_upsert_match(plan, t) for t in plan.tasks]
    >>> rows = execute_write(plan.write_plan(), source)
    >>> summary = commit_upsert(plan, matches, [rows])
    >>> summary.version, sorted(dataset(uri).to_table()["v"].to_pylist())
    (2, ['C', 'a', 'b', 'd'])
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import ColumnNotFoundError, InvalidArgumentError, SchemaMismatchError
from fermion.table.codec import fragment_to_proto, fragments_from_messages
from fermion.table.commit import CommitConfig, commit_operation
from fermion.table.deletions import deletion_path
from fermion.table.domain import Fragment
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT
from fermion.table.manifest_store import ManifestStore
from fermion.table.merge_insert import DenseKeys, key_hashes
from fermion.table.operations import MergeInsert
from fermion.table.predicate import parse_predicate
from fermion.table.ref import TableRef
from fermion.table.row_edits import mark_deleted
from fermion.table.scan import ROW_OFFSET, Scanner, read_fragment
from fermion.table.schema import TableSchema
from fermion.table.tasks.common import (
    fragment_groups,
    open_planned,
    open_ref,
    remove_unreferenced,
    summarise,
)
from fermion.table.tasks.model import (
    FRAGMENTS,
    INTS,
    REF,
    SCHEMA,
    STRS,
    Codec,
    CommitSummary,
    JsonMixin,
    OnTable,
    tasks_codec,
)
from fermion.table.tasks.write import WritePlan, WriteResult, write_committed
from fermion.table.versions import schema_of

__all__ = [
    "UpsertMatch",
    "UpsertPlan",
    "UpsertTask",
    "abort_upsert",
    "commit_upsert",
    "execute_upsert_match",
    "plan_upsert",
    "repeated_keys",
    "upsert_counts",
]

#: How many offending keys an error message lists.
_KEYS_SHOWN = 5


def _table_to_text(table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode()


def _table_from_text(text: str) -> pa.Table:
    try:
        return pa.ipc.open_stream(base64.b64decode(text)).read_all()
    except (ValueError, pa.ArrowInvalid) as exc:
        raise InvalidArgumentError(f"not an encoded Arrow table: {exc}") from exc


#: An Arrow table as base64 Arrow IPC text.
TABLE: Codec = (_table_to_text, _table_from_text)


@dataclass(frozen=True)
class UpsertTask(JsonMixin):
    """Fragments whose keys one worker matches with the source keys."""

    task_id: str
    fragments: tuple[Fragment, ...]

    _codecs: ClassVar[dict[str, Codec]] = {"fragments": FRAGMENTS}


@dataclass(frozen=True)
class UpsertPlan(OnTable, JsonMixin):
    """An upsert fixed on the driver; hand it to every worker.

    Attributes:
        uri: The table location.
        write_id: Names the directory ``data/{write_id}/`` of the new rows' files.
        read_version: The version planned on.
        schema: The table schema at ``read_version`` (the new rows are written with it).
        on: The key columns.
        keys: The source's key columns (cast to the table's types).
        key_hashes: Sorted distinct hashes of the source keys (the commit records them).
        tasks: The fragments that may hold a source key, in groups (every fragment
            when unmatched rows are deleted).
        max_rows_per_file: Rows per data file of the new rows.
        delete_unmatched: Table rows whose keys the source lacks are deleted
            (``when_not_matched_by_source_delete``).
        delete_predicate: With ``delete_unmatched``, only the unmatched rows matching this
            SQL condition are deleted (``None``: all).
    """

    table: TableRef
    write_id: str
    read_version: int
    schema: TableSchema
    on: tuple[str, ...]
    keys: pa.Table
    key_hashes: tuple[int, ...]
    tasks: tuple[UpsertTask, ...]
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT
    delete_unmatched: bool = False
    delete_predicate: str | None = None

    def write_plan(self) -> WritePlan:
        """The plan the workers write the new rows with (the table's schema and field ids
        at ``read_version``; files under ``data/{write_id}/``)."""
        return WritePlan(
            table=self.table,
            mode="append",
            write_id=self.write_id,
            read_version=self.read_version,
            schema=self.schema,
            max_rows_per_file=self.max_rows_per_file,
        )

    _codecs: ClassVar[dict[str, Codec]] = {
        "table": REF,
        "schema": SCHEMA,
        "on": STRS,
        "keys": TABLE,
        "key_hashes": INTS,
        "tasks": tasks_codec(UpsertTask),
    }


@dataclass(frozen=True)
class UpsertMatch(JsonMixin):
    """What one worker matched: the touched fragments with their new deletion files, the
    fragments left without a live row, the keys of the matched table rows, and how many
    unmatched rows it deleted (``delete_unmatched``)."""

    task_id: str
    write_id: str
    updated: tuple[Fragment, ...]
    removed: tuple[int, ...]
    matched_keys: pa.Table
    deleted_rows: int = 0

    @property
    def matched_rows(self) -> int:
        """Table rows whose keys the source has."""
        return self.matched_keys.num_rows

    def deletion_files(self) -> list[str]:
        """The deletion files this worker wrote (relative paths)."""
        out = []
        for info in self.updated:
            fragment = fragment_to_proto(info)
            out.append(deletion_path(fragment.id, fragment.deletion_file))
        return out

    _codecs: ClassVar[dict[str, Codec]] = {
        "updated": FRAGMENTS,
        "removed": INTS,
        "matched_keys": TABLE,
    }


def _described(keys: pa.Table) -> str:
    rows = [tuple(r.values()) for r in keys.slice(0, _KEYS_SHOWN).to_pylist()]
    shown = ", ".join(repr(r[0]) if len(r) == 1 else repr(r) for r in rows)
    return shown + (", ..." if keys.num_rows > _KEYS_SHOWN else "")


_KINDS = (
    ("integer", pa.types.is_integer),
    ("floating", pa.types.is_floating),
    ("decimal", pa.types.is_decimal),
    ("string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)
     or pa.types.is_string_view(t)),
    ("binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t)
     or pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t)),
    ("timestamp", pa.types.is_timestamp),
    ("date", pa.types.is_date),
    ("boolean", pa.types.is_boolean),
)  # fmt: skip


def _kind(kind: pa.DataType) -> str:
    """The family of a key type (a key converts only within its family)."""
    return next((name for name, test in _KINDS if test(kind)), str(kind))


def _checked_keys(schema: TableSchema, keys: pa.Table, on: Sequence[str]) -> pa.Table:
    """``keys`` (the source's key columns) checked and cast to the table's key types."""
    arrow = schema.arrow
    for key in on:
        if arrow.get_field_index(key) < 0:
            raise ColumnNotFoundError(f"upsert key {key!r} is not a column of the table")
        kind = arrow.field(key).type
        if pa.types.is_nested(kind) or pa.types.is_dictionary(kind):
            raise InvalidArgumentError(f"upsert key {key!r} has type {kind}: not a scalar")
    missing = [k for k in on if k not in keys.column_names]
    if missing:
        raise SchemaMismatchError(f"upsert: the source lacks the key columns {missing}")
    keys = keys.select(list(on))
    arrays = []
    for key in on:
        column, kind = keys.column(key), arrow.field(key).type
        if _kind(column.type) != _kind(kind):
            raise SchemaMismatchError(
                f"upsert: source key {key!r} has type {column.type}, the table has {kind}"
            )
        try:
            arrays.append(column if column.type.equals(kind) else column.cast(kind, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaMismatchError(
                f"upsert: source key {key!r} has type {column.type}, the table has {kind}: {exc}"
            ) from None
    keys = pa.Table.from_arrays(arrays, names=list(on))
    nulls = sum(keys.column(k).null_count for k in on)
    if nulls:
        raise InvalidArgumentError(f"upsert: the source has {nulls} null keys")
    duplicated = repeated_keys(keys, on)
    if duplicated.num_rows:
        raise InvalidArgumentError(
            f"upsert: {duplicated.num_rows} keys occur more than once in the source: "
            f"{_described(duplicated.select(list(on)))}"
        )
    return keys


def repeated_keys(keys: pa.Table, on: Sequence[str], *, at_least: int = 2) -> pa.Table:
    """The distinct keys occurring ``at_least`` times in ``keys``, with their count
    (column ``count``).

    Example:
        >>> repeated_keys(pa.table({"k": [1, 2, 1]}), ["k"]).to_pylist()
        [{'k': 1, 'count': 2}]
    """
    counts = keys.select(list(on)).group_by(list(on)).aggregate([([], "count_all")])
    counts = counts.rename_columns([*on, "count"])
    return counts.filter(pc.field("count") >= at_least)


def plan_upsert(
    uri: Any,
    keys: pa.Table,
    on: Sequence[str],
    *,
    fragments_per_task: int = 1,
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
    write_id: str | None = None,
    manifest_store: ManifestStore | None = None,
    delete_unmatched: bool = False,
    delete_predicate: str | None = None,
) -> UpsertPlan:
    """Plan an upsert of a source whose key columns are ``keys`` (driver side).

    Args:
        uri: Table location (the table must exist).
        keys: The source's key columns, one row per source row.
        on: The key column names.
        fragments_per_task: Fragments one match task reads.
        max_rows_per_file: Rows per data file of the new rows.
        write_id: Name of the write (default: a random one).
        manifest_store: The table's external manifest store, if it uses one.
        delete_unmatched: Also delete the table rows whose keys the source lacks (every
            fragment is read).
        delete_predicate: With ``delete_unmatched``, a SQL condition: only unmatched rows
            matching it are deleted.

    Raises:
        DatasetError: No table at ``uri``.
        ColumnNotFoundError: A key the table does not have, or the predicate names a
            column it does not have.
        SchemaMismatchError: A key the source lacks, or of a type that does not convert
            to the table's exactly.
        InvalidArgumentError: No key, a null key, a key occurring twice in the source
            (named), a nested key type; a predicate that does not parse, or one without
            ``delete_unmatched``.
    """
    on = [on] if isinstance(on, str) else list(on)
    if delete_predicate is not None and not delete_unmatched:
        raise InvalidArgumentError("upsert: a delete_predicate needs delete_unmatched")
    if not on or len(set(on)) != len(on):
        raise InvalidArgumentError(f"upsert needs distinct key column names, got {on!r}")
    if fragments_per_task < 1:
        raise InvalidArgumentError(f"fragments_per_task must be >= 1, got {fragments_per_task}")
    ref, storage, manifest = open_planned(uri, manifest_store=manifest_store)
    schema = schema_of(manifest)
    keys = _checked_keys(schema, keys, on)
    if delete_predicate is not None:
        parse_predicate(delete_predicate, schema.arrow)  # fails here, not on the workers
    fragments: list[Any] = []
    if delete_unmatched:  # every fragment may hold rows to delete
        fragments = list(manifest.fragments)
    elif keys.num_rows:  # only fragments whose statistics allow a source key
        prune = pc.scalar(True)
        for key in on:
            prune = prune & pc.field(key).isin(keys.column(key).unique())
        fragments = list(Scanner(storage, manifest, schema, [], prune).fragments())
    groups = fragment_groups(fragments_from_messages(fragments), fragments_per_task)
    return UpsertPlan(
        table=ref,
        write_id=write_id or uuid.uuid4().hex,
        read_version=manifest.version,
        schema=schema,
        on=tuple(on),
        keys=keys,
        key_hashes=tuple(key_hashes(keys).tolist()),
        tasks=tuple(UpsertTask(str(i), group) for i, group in enumerate(groups)),
        max_rows_per_file=max_rows_per_file,
        delete_unmatched=delete_unmatched,
        delete_predicate=delete_predicate,
    )


def execute_upsert_match(plan: UpsertPlan, task: UpsertTask) -> UpsertMatch:
    """Find the table rows of the task's fragments whose keys the source has (and, with
    ``delete_unmatched``, those it lacks), and write each touched fragment's complete new
    deletion file (any process; commits nothing)."""
    storage = plan.table.open()
    on = list(plan.on)
    updated, removed, matched_keys = [], [], []
    deleted = 0
    predicate = None
    columns = on
    if plan.delete_predicate is not None:
        predicate = parse_predicate(plan.delete_predicate, plan.schema.arrow)
        columns = list(plan.schema.arrow.names)  # the predicate's columns among them
    # a single dense integer key: matched through a lookup array (see DenseKeys)
    dense = None
    if not plan.delete_unmatched:
        dense = DenseKeys.of(plan.keys, on, sum(f.physical_rows for f in task.fragments))
    for info in task.fragments:
        fragment = fragment_to_proto(info)
        # without deletions a row's position is its offset: no offset column is read
        positional = dense is not None and not fragment.HasField("deletion_file")
        target = read_fragment(
            storage, plan.schema, fragment, columns, with_row_offsets=not positional
        )
        hits = dense.match(target.column(on[0])) if dense is not None else None
        if hits is not None:
            at = hits[0]
            matched = target.select(on).take(at)
            if positional:
                gone = [at.astype(np.uint64)]
            else:
                gone = [target.column(ROW_OFFSET).take(at).to_numpy()]
        else:
            if positional:  # null keys: Arrow's join, which needs the offsets
                offset_column = pa.array(np.arange(target.num_rows, dtype=np.uint64))
                target = target.append_column(ROW_OFFSET, offset_column)
            matched = target.select([*on, ROW_OFFSET]).join(plan.keys, on, join_type="inner")
            gone = [matched.column(ROW_OFFSET).to_numpy()]
        if matched.num_rows:
            matched_keys.append(matched.select(on))
        if plan.delete_unmatched:
            unmatched = target.join(plan.keys, on, join_type="left anti")
            if predicate is not None:
                unmatched = unmatched.filter(predicate)
            gone.append(unmatched.column(ROW_OFFSET).to_numpy())
            deleted += unmatched.num_rows
        offsets = np.concatenate(gone)
        if not offsets.size:
            continue
        update, emptied = mark_deleted(storage, fragment, offsets, plan.read_version)
        if emptied:
            removed.append(fragment.id)
        elif update is not None:
            updated.append(update)
    keys = (
        pa.concat_tables(matched_keys) if matched_keys else plan.keys.schema.empty_table()
    ).combine_chunks()
    return UpsertMatch(
        task.task_id, plan.write_id, tuple(updated), tuple(removed), keys, deleted_rows=deleted
    )


def upsert_counts(plan: UpsertPlan, matches: Sequence[UpsertMatch]) -> tuple[int, int, pa.Table]:
    """(table rows updated, source rows inserted, keys matching several table rows with
    their ``count``): a key in the last table is written ``count`` times."""
    keys = [m.matched_keys for m in matches if m.matched_rows]
    if not keys:
        return 0, plan.keys.num_rows, repeated_keys(plan.keys.schema.empty_table(), plan.on)
    matched = pa.concat_tables(keys)
    distinct = key_hashes(matched)
    return matched.num_rows, plan.keys.num_rows - len(distinct), repeated_keys(matched, plan.on)


def commit_upsert(
    plan: UpsertPlan,
    matches: Sequence[UpsertMatch],
    writes: Sequence[WriteResult],
    *,
    table_config: Mapping[str, str] | None = None,
    config: CommitConfig | None = None,
    properties: Mapping[str, str] | None = None,
    manifest_store: ManifestStore | None = None,
) -> CommitSummary:
    """Commit the matches and the written rows of ``plan`` as one ``MergeInsert``.

    Args:
        plan: The plan.
        matches: Every match task's result.
        writes: Every write task's result (the new rows: the source, a key matching
            ``n`` table rows ``n`` times).
        table_config: Table configuration entries the commit sets (the loaded input).
        config: Commit attempts.
        properties: Informational entries of the new version's summary.
        manifest_store: The table's external manifest store, if it uses one.

    Raises:
        InvalidArgumentError: A result of another plan, a missing match result, or new
            rows whose count is not the one the matches call for.
        CommitConflictError: A concurrent commit needs a re-plan (abort, plan again).
        IncompatibleTransactionError: The commit cannot happen on the latest version.
    """
    results: list[UpsertMatch | WriteResult] = [*matches, *writes]
    for each in results:
        if each.write_id != plan.write_id:
            raise InvalidArgumentError(
                f"result of task {each.task_id} belongs to write {each.write_id}, "
                f"not {plan.write_id}"
            )
    if sorted(m.task_id for m in matches) != sorted(t.task_id for t in plan.tasks):
        raise InvalidArgumentError("upsert: a match result is missing or repeated")
    _, inserted, repeated = upsert_counts(plan, matches)
    extra = int(np.sum(repeated.column("count").to_numpy()) - repeated.num_rows)
    rows = sum(w.rows for w in writes)
    if rows != plan.keys.num_rows + extra:
        raise InvalidArgumentError(
            f"upsert: {rows} new rows written, the source has {plan.keys.num_rows} rows and "
            f"{extra} more copies are due"
        )
    storage = open_ref(plan.table, manifest_store)[1]
    new_fragments = tuple(fragment_to_proto(f) for w in writes for f in w.fragments)
    op = MergeInsert(
        updated_fragments=tuple(fragment_to_proto(f) for m in matches for f in m.updated),
        removed_fragment_ids=tuple(i for m in matches for i in m.removed),
        new_fragments=new_fragments, on=plan.on, key_hashes=plan.key_hashes,
        inserted_rows=inserted, config=dict(table_config or {}),
    )  # fmt: skip
    if not op.touched_fragment_ids() and not new_fragments:
        return CommitSummary(False, plan.read_version, plan.read_version, operation="merge_insert")
    result = commit_operation(
        storage, op, read_version=plan.read_version, config=config, properties=properties
    )
    return summarise(result, plan.read_version, committed=result.committed)


def abort_upsert(
    plan: UpsertPlan,
    matches: Sequence[UpsertMatch | None] = (),
    writes: Sequence[WriteResult | None] = (),
    *,
    manifest_store: ManifestStore | None = None,
) -> int:
    """Remove the files of an upsert that did not commit: the new rows' files (every file
    under ``data/{write_id}/`` no version references) and the deletion files the match
    tasks wrote (only when no version holds the new rows, i.e. the upsert did not
    commit). Returns how many files were removed."""
    storage = open_ref(plan.table, manifest_store)[1]
    write = plan.write_plan()
    committed = write_committed(write, manifest_store=manifest_store)
    paths = {d.path for w in writes if w is not None for f in w.fragments for d in f.files}
    paths.update(storage.list_tree(write.prefix))
    removed = remove_unreferenced(storage, paths)
    if not committed:
        for match in matches:
            if match is None:
                continue
            for path in match.deletion_files():
                try:
                    storage.remove(path)
                except FileNotFoundError:
                    continue
                removed += 1
    return removed
