"""``Dataset.merge_insert``: upsert a source into a table by key columns, in one version.

The builder collects the clauses; :meth:`MergeInsertBuilder.execute` validates the source,
joins it with the table's live rows on the keys (fragments whose statistics rule out every
source key are not read, unless unmatched rows are to be deleted), writes the deletion files
of the replaced rows and one set of new fragments for the updated and inserted rows, and
commits one :class:`~fermion.table.operations.MergeInsert`. After a conflicting commit
(another merge of common keys, a compaction of touched fragments, an update of the same
rows, ...) the whole merge is planned again on the newer version, so it never works on rows
it did not see.

Speed: a single integer key with dense values is matched through a lookup array
(:class:`DenseKeys`), other keys by Arrow's hash join; an upsert of whole rows
(``when_matched_update_all`` + ``when_not_matched_insert_all``) writes the source while the
fragments are joined and their deletion files written (see ``_plan``).

Semantics (as SQL ``MERGE``): a target row matches a source row when every key column is
equal (a null key matches nothing). Two source rows with the same key are an error, as is a
null key in the source. A source key matching several target rows updates each of them.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"id": [1, 2], "v": ["a", "b"]}), tempfile.mkdtemp())
    >>> result = (ds.merge_insert("id").when_matched_update_all()
    ...           .when_not_matched_insert_all()
    ...           .execute(pa.table({"id": [2, 3], "v": ["B", "c"]})))
    >>> result.num_updated_rows, result.num_inserted_rows, ds.version
    (1, 1, 2)
    >>> sorted(ds.to_table().to_pylist(), key=lambda r: r["id"])
    [{'id': 1, 'v': 'a'}, {'id': 2, 'v': 'B'}, {'id': 3, 'v': 'c'}]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from fermion.table.codec import as_table_version, fragment_messages, has_deletion_file
from fermion.table.commit import CommitConfig, CommitResult
from fermion.table.deletions import fragment_deletion_path
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragment_threads import FRAGMENT_THREADS_DEFAULT, map_fragments
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT, as_batches
from fermion.table.key_hash import KeyHashes, row_hashes, sorted_distinct
from fermion.table.operations import MergeInsert
from fermion.table.predicate import parse_predicate
from fermion.table.row_edits import (
    commit_planned,
    committed_id,
    kept_row_ids,
    mark_deleted,
    write_new_rows,
)
from fermion.table.row_ids import UNASSIGNED, row_ids_at
from fermion.table.scan import ROW_OFFSET, Scanner, read_fragment
from fermion.table.storage import TableStorage, carry_deferral
from fermion.table.write_properties import write_properties_of

__all__ = ["DenseKeys", "MergeInsertBuilder", "MergeInsertResult", "key_hashes"]

_SOURCE_ROW = "__fermion_source_row"
#: How many offending keys an error message lists.
_KEYS_SHOWN = 5


@dataclass(frozen=True)
class MergeInsertResult:
    """What a merge did.

    Attributes:
        num_updated_rows: Target rows replaced by updated rows.
        num_inserted_rows: Source rows whose keys matched nothing.
        num_deleted_rows: Target rows deleted because the source did not have their keys.
        version: The table version after the merge (unchanged if there was nothing to do).
        commit: The commit's details (``None`` if nothing was committed).
    """

    num_updated_rows: int
    num_inserted_rows: int
    num_deleted_rows: int
    version: int
    commit: CommitResult | None = field(default=None, repr=False)


def key_hashes(keys: pa.Table) -> np.ndarray:
    """Sorted distinct 64-bit hashes of the rows of ``keys`` (the same in every process).

    Example:
        >>> a = key_hashes(pa.table({"k": [1, 2]}))
        >>> b = key_hashes(pa.table({"k": [2, 5]}))
        >>> len(a), len(np.intersect1d(a, b))
        (2, 1)
    """
    return sorted_distinct(row_hashes(keys))


def _described(keys: pa.Table) -> str:
    rows = [tuple(r.values()) for r in keys.slice(0, _KEYS_SHOWN).to_pylist()]
    shown = ", ".join(repr(r[0]) if len(r) == 1 else repr(r) for r in rows)
    return shown + (", ..." if keys.num_rows > _KEYS_SHOWN else "")


class MergeInsertBuilder:
    """A merge of a source into the table on key columns (``Dataset.merge_insert(on)``).

    Chain the clauses, then :meth:`execute`. At least one clause is needed.

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"id": [1, 2], "n": [0, 0]}), tempfile.mkdtemp())
        >>> _ = (ds.merge_insert("id").when_not_matched_by_source_delete()
        ...      .execute(pa.table({"id": [2], "n": [9]})))
        >>> ds.to_table().to_pylist()
        [{'id': 2, 'n': 0}]
    """

    def __init__(
        self,
        storage: TableStorage,
        version: TableVersion | Any,
        on: str | Sequence[str],
        on_commit: Callable[[CommitResult], None] | None = None,
    ) -> None:
        keys = [on] if isinstance(on, str) else list(on)
        if not keys or not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
            raise InvalidArgumentError(f"merge_insert needs distinct key column names, got {on!r}")
        version = as_table_version(version)  # (its manifest message is still accepted)
        schema = version.schema
        for key in keys:
            if schema.arrow.get_field_index(key) < 0:
                raise ColumnNotFoundError(f"merge key {key!r} is not a column of the table")
            kind = schema.arrow.field(key).type
            if pa.types.is_nested(kind) or pa.types.is_dictionary(kind):
                raise InvalidArgumentError(f"merge key {key!r} has type {kind}: not a scalar")
        self._storage, self._version, self._on = storage, version, tuple(keys)
        self._on_commit = on_commit
        self._update: tuple[str, ...] | None = None  # columns set from the source
        self._insert = False
        self._delete_unmatched = False
        self._delete_filter: pc.Expression | str | None = None
        self._hashes: tuple[int, ...] = ()  # of the source being merged

    def when_matched_update_all(self) -> MergeInsertBuilder:
        """Replace every matched target row by its source row."""
        self._update = tuple(self._version.schema.arrow.names)
        return self

    def when_matched_update(self, columns: Sequence[str]) -> MergeInsertBuilder:
        """Set ``columns`` of every matched target row from its source row; the other
        columns keep the target's values.

        Raises:
            ColumnNotFoundError: A column the table does not have.
            InvalidArgumentError: No column, or a key column.
        """
        columns = [columns] if isinstance(columns, str) else list(columns)
        names = self._version.schema.arrow.names
        missing = [c for c in columns if c not in names]
        if missing:
            raise ColumnNotFoundError(f"when_matched_update: no columns {missing} in the table")
        if not columns or set(columns) & set(self._on):
            raise InvalidArgumentError(
                f"when_matched_update sets non-key columns, got {columns} (keys {self._on})"
            )
        self._update = tuple(columns)
        return self

    def when_not_matched_insert_all(self) -> MergeInsertBuilder:
        """Insert the source rows whose keys match no target row."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(
        self, predicate: pc.Expression | str | None = None
    ) -> MergeInsertBuilder:
        """Delete the target rows whose keys are not in the source (only those matching
        ``predicate``, a SQL text or an Arrow expression over the table, if given)."""
        if predicate is not None and not isinstance(predicate, str | pc.Expression):
            raise InvalidArgumentError(
                f"a predicate is SQL text or a pyarrow.compute.Expression, not {predicate!r}"
            )
        self._delete_unmatched = True
        self._delete_filter = predicate
        return self

    def execute(
        self,
        source: Any,
        *,
        max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
        commit_config: CommitConfig | None = None,
    ) -> MergeInsertResult:
        """Merge ``source`` (any input :func:`~fermion.table.write_dataset` takes) and
        commit one version.

        Raises:
            InvalidArgumentError: No clause; duplicate or null keys in the source (named).
            SchemaMismatchError: The source lacks a key or a needed column, or a column has
                another type than the table's.
            CommitConflictError: Conflicts outlasted the commit attempts.
        """
        table = self._source_table(source)
        result, stats = commit_planned(
            self._storage,
            self._version,
            lambda version: self._plan(version, table, max_rows_per_file),
            config=commit_config,
        )
        if result is not None and self._on_commit is not None:
            self._on_commit(result)
        version = (result.table_version if result is not None else self._version).version
        updated, inserted, deleted = stats
        return MergeInsertResult(updated, inserted, deleted, version, commit=result)

    def plan(
        self, source: Any, *, max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT
    ) -> MergeInsert | None:
        """The operation of merging ``source`` into the builder's version, its files
        written and nothing committed (``None``: nothing to change); for committing it
        yourself with :func:`~fermion.table.commit.commit_operation`.

        Raises:
            InvalidArgumentError, SchemaMismatchError: As :meth:`execute`.
        """
        op, _ = self._plan(self._version, self._source_table(source), max_rows_per_file)
        return op

    # -- validation ---------------------------------------------------------------------

    def _source_table(self, source: Any) -> pa.Table:
        if self._update is None and not self._insert and not self._delete_unmatched:
            raise InvalidArgumentError("merge_insert needs at least one when_... clause")
        source_schema, batches = as_batches(source)
        schema = self._version.schema.arrow
        needed = list(self._on)
        if self._insert or self._update == tuple(schema.names):
            needed = list(schema.names)
        elif self._update is not None:
            needed += list(self._update)
        missing = [n for n in needed if source_schema.get_field_index(n) < 0]
        if missing:
            raise SchemaMismatchError(f"merge_insert: the source lacks the columns {missing}")
        for name in needed:
            theirs, ours = source_schema.field(name).type, schema.field(name).type
            if not theirs.equals(ours):
                raise SchemaMismatchError(
                    f"merge_insert: source column {name!r} has type {theirs}, the table has {ours}"
                )
        extra = [n for n in source_schema.names if schema.get_field_index(n) < 0]
        if extra and (self._insert or self._update == tuple(schema.names)):
            raise SchemaMismatchError(f"merge_insert: the table has no columns {extra}")
        table = pa.Table.from_batches(list(batches), schema=source_schema)
        table = table.select(list(dict.fromkeys(needed)))
        keys = table.select(list(self._on))
        nulls = sum(keys.column(k).null_count for k in self._on)
        if nulls:
            raise InvalidArgumentError(f"merge_insert: the source has {nulls} null keys")
        hashes = key_hashes(keys)
        if len(hashes) < keys.num_rows:  # equal keys (or a hash collision): name them
            counts = keys.group_by(list(self._on)).aggregate([([], "count_all")])
            duplicated = counts.filter(pc.field("count_all") > 1).select(list(self._on))
            if duplicated.num_rows:
                raise InvalidArgumentError(
                    f"merge_insert: {duplicated.num_rows} keys occur more than once in the "
                    f"source: {_described(duplicated)}"
                )
        self._hashes = KeyHashes.of_sorted(hashes)  # (sorted and distinct already)
        return table.append_column(_SOURCE_ROW, pa.array(np.arange(table.num_rows)))

    # -- planning -----------------------------------------------------------------------

    def _plan(
        self, version: TableVersion, source: pa.Table, max_rows_per_file: int
    ) -> tuple[MergeInsert | None, tuple[int, int, int]]:
        """The operation (files written) on ``version`` and (updated, inserted, deleted)."""
        storage, on = self._storage, list(self._on)
        schema = version.schema
        keys = source.select([*on, _SOURCE_ROW])
        names = schema.arrow.names
        # the columns an update sets, on this version: a column added or dropped since the
        # builder's version (a re-plan) is kept from the target, or ignored
        set_columns = [n for n in names if n in source.column_names and n in (self._update or ())]
        partial = self._update is not None and set(set_columns) != set(names)
        delete_filter = None
        if self._delete_filter is not None:
            delete_filter = (
                parse_predicate(self._delete_filter, schema.arrow)
                if isinstance(self._delete_filter, str)
                else self._delete_filter
            )
        # a partial update keeps the target's other columns; a filter reads its columns
        columns = list(names) if partial or delete_filter is not None else on
        prune = None
        if not self._delete_unmatched:  # only fragments that may hold a source key
            prune = pc.scalar(True)
            for key in on:
                prune = prune & pc.field(key).isin(source.column(key).unique())

        chosen = Scanner(storage, version, schema, [], prune).fragment_values()
        dense = DenseKeys.of(keys, on, sum(f.physical_rows for f in chosen))

        properties = write_properties_of(version.config)
        # an upsert of whole rows writes every source row once, updated or inserted, unless
        # a key matches several table rows: so the source is written while the fragments
        # are joined, and kept when the joins find no key matched twice
        whole = self._update is not None and not partial and self._insert and source.num_rows > 0
        early: Future[list[Fragment]] | None = None
        pool = ThreadPoolExecutor(max_workers=1) if whole else None
        if pool is not None:
            written = [source.select(names)]
            early = pool.submit(
                carry_deferral(write_new_rows), storage, schema, written, max_rows_per_file,
                properties,
            )  # fmt: skip
            pool.shutdown(wait=False)
        marks = ThreadPoolExecutor(max_workers=FRAGMENT_THREADS_DEFAULT) if whole else None

        def join(fragment: Fragment) -> _FragmentMatch:
            # the statistics chose the fragment; the join, not a row filter, finds the keys.
            # Without deletions a row's position is its offset: a dense lookup's positions
            # are the offsets, and no offset column is read (it costs 3x a key column)
            positional = dense is not None and not self._delete_unmatched
            positional = positional and not has_deletion_file(fragment)
            target = read_fragment(
                storage, schema, fragment, columns, with_row_offsets=not positional
            )
            found = _FragmentMatch(fragment)
            hits = dense.match(target.column(on[0])) if dense is not None else None
            if hits is None:
                if positional:  # null keys: Arrow's join, which needs the offsets
                    offset_column = pa.array(np.arange(target.num_rows, dtype=np.uint64))
                    target = target.append_column(ROW_OFFSET, offset_column)
                matched = target.join(keys, on, join_type="inner")
                offsets = matched.column(ROW_OFFSET).to_numpy()
            else:
                at, rows = hits
                matched = target.take(at).append_column(_SOURCE_ROW, pa.array(rows))
                offsets = (
                    at.astype(np.uint64) if positional else matched.column(ROW_OFFSET).to_numpy()
                )
            found.source_rows = matched.column(_SOURCE_ROW).to_numpy()
            gone = []
            if self._update is not None and matched.num_rows:
                gone.append(offsets)
                if early is None:
                    found.rows = _updated_rows(matched, source, names, set_columns, partial)
                found.ids = row_ids_at(fragment, offsets)
                found.updated = matched.num_rows
            if self._delete_unmatched:
                if hits is None:
                    unmatched = target.join(keys.select(on), on, join_type="left anti")
                else:
                    lacking = np.ones(target.num_rows, dtype=bool)
                    lacking[hits[0]] = False
                    unmatched = target.filter(pa.array(lacking))
                if delete_filter is not None:
                    unmatched = unmatched.filter(delete_filter)
                gone.append(unmatched.column(ROW_OFFSET).to_numpy())
                found.deleted = unmatched.num_rows
            found.gone = np.concatenate(gone) if gone else np.zeros(0, np.uint64)
            if marks is not None and found.gone.size:  # its deletion file, while the
                found.marking = marks.submit(  # source's rows are still being written
                    carry_deferral(mark_deleted), storage, fragment, found.gone, version.version
                )  # (on threads of their own: the fsyncs overlap, not the joins' thread)
            return found

        def attempt(fragment: Fragment) -> _FragmentMatch | BaseException:
            try:
                return join(fragment)
            except Exception as exc:  # raised below, once every join has finished
                return exc

        threads = FRAGMENT_THREADS_DEFAULT
        if early is not None:  # a core is the early write's: joins on the others
            threads = max(1, min(threads, (os.cpu_count() or 1) - 1))
        try:
            joined = map_fragments(attempt, chosen, threads=threads)
        except BaseException:
            _discard(storage, early)
            raise
        finally:
            if marks is not None:
                marks.shutdown(wait=True)
        matches = [found for found in joined if isinstance(found, _FragmentMatch)]
        failures = [exc for exc in joined if not isinstance(exc, _FragmentMatch)]
        for found in matches:
            if found.marking is not None:
                try:
                    found.marked = found.marking.result()
                except Exception as exc:
                    failures.append(exc)
        if failures:  # nothing of this plan is kept
            _discard(storage, early)
            for found in matches:
                _discard_deletion(storage, found)
            raise failures[0]
        if early is not None and not _each_once(matches, source.num_rows):
            _discard(storage, early)  # a key matched several rows: written once per match
            early = None
            for found in matches:
                if found.updated:
                    found.rows = source.take(pa.array(found.source_rows)).select(names)
        matched_rows = np.zeros(source.num_rows, dtype=bool)
        new_tables: list[pa.Table] = []
        moved: list[np.ndarray | None] = []  # updated rows keep their ids, inserted get new
        for found in matches:
            matched_rows[found.source_rows] = True
            if found.rows is not None:
                new_tables.append(found.rows)
                moved.append(found.ids)
        updated = sum(found.updated for found in matches)
        deleted = sum(found.deleted for found in matches)
        inserted = 0
        if self._insert and early is not None:  # written already
            inserted = source.num_rows - int(np.count_nonzero(matched_rows))
        elif self._insert:
            fresh = source.filter(pa.array(~matched_rows)).drop_columns([_SOURCE_ROW])
            for name in names:  # a column added since the builder's version: nulls
                if name not in fresh.column_names:
                    kind = schema.arrow.field(name).type
                    fresh = fresh.append_column(name, pa.nulls(fresh.num_rows, kind))
            new_tables.append(fresh)
            moved.append(np.full(fresh.num_rows, UNASSIGNED, dtype=np.int64))
            inserted = fresh.num_rows
        stats = (updated, inserted, deleted)
        emptying = [m for m in matches if m.gone.size]
        if early is None and not emptying and not any(t.num_rows for t in new_tables):
            return None, stats

        # the deletion files and the new rows' files are written side by side
        def write(task: _FragmentMatch | None) -> Any:
            if task is None:
                return write_new_rows(storage, schema, new_tables, max_rows_per_file, properties)
            return mark_deleted(storage, task.fragment, task.gone, version.version)

        pending = [m for m in emptying if m.marked is None]  # (the joins wrote the others)
        tasks: list[_FragmentMatch | None] = [*pending]
        if early is None:
            tasks.append(None)
        try:
            results = map_fragments(write, tasks)
        except BaseException:
            _discard(storage, early)
            raise
        fragments = results.pop() if early is None else early.result()
        for m, result in zip(pending, results, strict=True):
            m.marked = result
        marked = [m.marked for m in emptying if m.marked is not None]
        if early is not None:  # the source's rows, in source order: their ids by source row
            moved = [_ids_by_source_row(matches, source.num_rows)]
        updates = [update for update, emptied in marked if not emptied and update is not None]
        removed = [
            committed_id(m.fragment)
            for m, (_, emptied) in zip(emptying, marked, strict=True)
            if emptied
        ]
        fragments = kept_row_ids(fragments, moved)
        op = MergeInsert(
            updated_fragments=fragment_messages(updates), removed_fragment_ids=tuple(removed),
            new_fragments=fragment_messages(fragments), on=self._on,
            key_hashes=self._hashes, inserted_rows=inserted,
        )  # fmt: skip
        return op, stats


def _discard(storage: TableStorage, written: Future[list[Fragment]] | None) -> None:
    """Remove the files of a write that will not be committed (once it has finished; a
    write that failed left none)."""
    if written is None:
        return
    try:
        fragments = written.result()
    except Exception:
        return
    for fragment in fragments:
        for file in fragment.files:
            storage.remove(file.path)


def _discard_deletion(storage: TableStorage, found: _FragmentMatch) -> None:
    """Remove the deletion file a join wrote for a plan that will not be committed."""
    update = found.marked[0] if found.marked is not None else None
    if update is not None:
        storage.remove(fragment_deletion_path(update))


def _each_once(matches: Sequence[_FragmentMatch], rows: int) -> bool:
    """Whether no source row (of ``rows``) matched more than one table row."""
    picked = [found.source_rows for found in matches if found.updated]
    if not picked:
        return True
    return int(np.bincount(np.concatenate(picked), minlength=rows).max()) <= 1


def _ids_by_source_row(matches: Sequence[_FragmentMatch], rows: int) -> np.ndarray | None:
    """The row id each source row keeps (that of the table row it updates), UNASSIGNED for
    inserted rows; None when an updated row had no id (see ``keep_row_ids``)."""
    ids = np.full(rows, UNASSIGNED, dtype=np.int64)
    for found in matches:
        if not found.updated:
            continue
        if found.ids is None:
            return None
        ids[found.source_rows] = found.ids
    return ids


class DenseKeys:
    """The rows of a table of single integer keys by value, in an array indexed by
    ``key - low``: matching a fragment's keys is then one gather per key, no hash table
    (about 5x faster than an Arrow hash join of a 500,000-row fragment with 40,000 keys).

    Used where the keys span at most :data:`DENSE_SPAN_PER_ROW` times the rows joined
    (keys and target), and at most :data:`DENSE_SPAN_MAX` values; other keys (several
    columns, other types, sparse values) are joined by Arrow. The keys must be distinct
    and not null (a merge's source keys are checked to be).

    Example:
        >>> lookup = DenseKeys.of(pa.table({"k": [7, 5, 9]}), ["k"], 4)
        >>> at, rows = lookup.match(pa.chunked_array([[5, 6, 9, 1]]))
        >>> at.tolist(), rows.tolist()
        ([0, 2], [1, 2])
    """

    def __init__(self, low: int, rows: np.ndarray) -> None:
        self.low, self.rows = low, rows  # rows[key - low]: the row of that key, -1: none

    @classmethod
    def of(cls, keys: pa.Table, on: Sequence[str], target_rows: int) -> DenseKeys | None:
        """The lookup of the rows of ``keys`` (holding the key column ``on[0]``) by key,
        or None where the keys are not one column of dense integers."""
        if len(on) != 1 or not keys.num_rows or not _dense_type(keys.schema.field(on[0]).type):
            return None
        values = keys.column(on[0]).to_numpy().astype(np.int64, copy=False)
        low, high = int(values.min()), int(values.max())
        span = high - low + 1
        if span > min(DENSE_SPAN_MAX, DENSE_SPAN_PER_ROW * (keys.num_rows + target_rows)):
            return None
        kind = np.int32 if keys.num_rows < 2**31 else np.int64
        rows = np.full(span + 1, -1, dtype=kind)  # the last entry: every key outside
        rows[values - low] = np.arange(keys.num_rows, dtype=kind)
        return cls(low, rows)

    def match(self, target: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray] | None:
        """(positions in ``target``, rows of the keys) of the target keys the lookup has,
        in target order; None when ``target`` has nulls (Arrow's join handles those)."""
        if target.null_count:
            return None
        # key - low as unsigned: keys below low wrap around above the span (exactly: the
        # highest key is at most the int64 maximum), so that one clip sends every key
        # outside to the last entry (-1); few temporary arrays, as each costs its page
        # faults on a fresh fragment
        where = np.subtract(target.to_numpy(), self.low, dtype=np.int64).view(np.uint64)
        np.minimum(where, len(self.rows) - 1, out=where)
        rows = self.rows[where.view(np.int64)]
        at = np.flatnonzero(rows >= 0)
        return at, rows[at].astype(np.int64)


#: Dense key lookups (:class:`DenseKeys`): the keys' span at most this many times the
#: rows joined, and at most this many values (64 MiB of int32).
DENSE_SPAN_PER_ROW = 4
DENSE_SPAN_MAX = 1 << 24


def _dense_type(kind: pa.DataType) -> bool:
    """Integer types whose values all fit an int64."""
    return pa.types.is_integer(kind) and not pa.types.is_uint64(kind)


@dataclass
class _FragmentMatch:
    """What joining the source with one fragment found."""

    fragment: Fragment
    source_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gone: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    rows: pa.Table | None = None  # the updated rows
    ids: np.ndarray | None = None  # their row ids
    updated: int = 0
    deleted: int = 0
    marked: tuple[Fragment | None, bool] | None = None  # mark_deleted's, when written
    marking: Future[tuple[Fragment | None, bool]] | None = None  # ... while it is


def _updated_rows(
    matched: pa.Table, source: pa.Table, names: list[str], update: list[str], partial: bool
) -> pa.Table:
    """The new values of matched rows: the ``update`` columns from the source, the others
    kept from the target."""
    rows = source.take(matched.column(_SOURCE_ROW))
    if not partial:
        return rows.select(names)
    arrays = [rows.column(n) if n in update else matched.column(n) for n in names]
    return pa.Table.from_arrays(arrays, names=names)
