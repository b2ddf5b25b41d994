"""Compaction and deletion materialisation as plan → execute → commit.

``plan_compaction`` bin-packs runs of small fragments (and fragments with many deleted
rows) into groups of about ``target_rows_per_fragment`` live rows; ``plan_materialization``
picks fragments whose deleted fraction is above a threshold, one group each. Each group is a
:class:`RewriteTask` that any process runs with ``execute_rewrite``: it reads the group's
live rows and writes them to new files (in batch mode when the table has a batch-id
column, so batches stay whole). ``commit_rewrite`` commits every group as one ``Rewrite``.

A group whose fragments a concurrent commit changed (a delete added rows to its deletion
file, another rewrite removed it) is dropped from the commit and reported in
``CommitSummary.skipped_tasks``: committing it would bring deleted rows back. The other
groups still commit; the skipped ones can be planned again on the new version.
``abort_rewrite`` removes the files of a rewrite that failed (or whose results were refused)
and leaves every file a version references.

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table import write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"x": list(range(6))}), uri, max_rows_per_file=2)
    >>> plan = plan_compaction(uri, target_rows_per_fragment=10)
    >>> [len(t.fragments) for t in plan.tasks]
    [3]
    >>> summary = commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    >>> summary.fragments_removed, summary.fragments_added, summary.version
    (3, 1, 2)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pyarrow as pa

from fermion.errors import InvalidArgumentError, InvalidFileError
from fermion.table.codec import as_fragment, fragment_messages, has_deletion_file
from fermion.table.commit import CommitConfig, commit_operation, on_versions
from fermion.table.deletions import deletion_entry
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT, write_fragment_values
from fermion.table.manifest_store import ManifestStore
from fermion.table.operations import Rewrite, RewriteGroup
from fermion.table.ref import TableRef
from fermion.table.row_ids import ROW_ID, fragment_has_row_ids, fragment_row_ids, with_row_ids
from fermion.table.scan import ROW_OFFSET, read_fragment
from fermion.table.schema import TableSchema
from fermion.table.stats import int_bounds
from fermion.table.tasks.common import open_ref, remove_unreferenced, summarise
from fermion.table.tasks.merge import fragment_id_chunks, merge_batch_runs
from fermion.table.tasks.model import (
    FRAGMENTS,
    INTS,
    PROPERTIES,
    REF,
    SCHEMA,
    Codec,
    CommitSummary,
    JsonMixin,
    OnTable,
    tasks_codec,
)
from fermion.table.tasks.write import BATCH_ID_COLUMN_KEY
from fermion.table.versions import load_table_version, open_planned_version
from fermion.table.write_properties import WriteProperties, write_properties_of

__all__ = [
    "MATERIALIZE_THRESHOLD_DEFAULT",
    "RewriteKind",
    "RewritePlan",
    "RewriteResult",
    "RewriteTask",
    "abort_rewrite",
    "commit_rewrite",
    "execute_rewrite",
    "plan_compaction",
    "plan_materialization",
    "unit_fragments",
    "unit_live_rows",
]

#: A fragment whose deleted fraction is above this is rewritten without its deleted rows.
MATERIALIZE_THRESHOLD_DEFAULT = 0.1

RewriteKind = Literal["compaction", "materialization"]


@dataclass(frozen=True)
class RewriteTask(OnTable, JsonMixin):
    """One group of fragments to rewrite into new files (runs in any process).

    Attributes:
        batch_id_column: The table's batch-id column: the group is merged by batch id.
        unit: Tasks of one unit (a batch-mode merge split by id range) share fragments and
            commit together; ``None``: the task is its own unit.
        ids_from: With ``ids_below``, the batch ids ``[ids_from, ids_below)`` this task
            rewrites (``None``: unbounded on that side; both ``None``: every row).
        ids_below: See ``ids_from``.
        properties: The table's write properties (of the read version) the new files
            are written with.
    """

    task_id: str
    table: TableRef
    read_version: int
    write_id: str
    schema: TableSchema
    fragments: tuple[Fragment, ...]
    target_rows_per_file: int
    batch_id_column: str | None = None
    unit: str | None = None
    ids_from: int | None = None
    ids_below: int | None = None
    properties: WriteProperties = WriteProperties()

    _codecs: ClassVar[dict[str, Codec]] = {
        "table": REF,
        "schema": SCHEMA,
        "fragments": FRAGMENTS,
        "properties": PROPERTIES,
    }

    @property
    def live_rows(self) -> int:
        """Rows the group holds (and its new files must hold). A task of a unit split by
        batch-id range reads part of its fragments: its unit's rows are checked instead
        (:func:`unit_live_rows`)."""
        return sum(f.live_rows for f in self.fragments)

    @property
    def unit_id(self) -> str:
        """The tasks sharing this value commit together, as one ``RewriteGroup``."""
        return self.unit if self.unit is not None else self.task_id

    @property
    def by_range(self) -> bool:
        """Whether the task rewrites only the batch ids of ``[ids_from, ids_below)``."""
        return self.ids_from is not None or self.ids_below is not None


@dataclass(frozen=True)
class RewritePlan(OnTable, JsonMixin):
    """The groups of one compaction or materialisation, planned on ``read_version``."""

    table: TableRef
    kind: RewriteKind
    read_version: int
    write_id: str
    tasks: tuple[RewriteTask, ...]

    _codecs: ClassVar[dict[str, Codec]] = {
        "table": REF,
        "tasks": tasks_codec(RewriteTask),
    }

    def units(self) -> dict[str, list[RewriteTask]]:
        """The tasks by commit unit (tasks of one unit share fragments), in plan order."""
        out: dict[str, list[RewriteTask]] = {}
        for task in self.tasks:
            out.setdefault(task.unit_id, []).append(task)
        return out


def unit_fragments(tasks: Sequence[RewriteTask]) -> list[Fragment]:
    """The distinct fragments a unit of tasks replaces, in the order first met."""
    seen: dict[int | None, Fragment] = {}
    for task in tasks:
        for fragment in task.fragments:
            seen.setdefault(fragment.id, fragment)
    return list(seen.values())


def unit_live_rows(tasks: Sequence[RewriteTask]) -> int:
    """The live rows of the fragments a unit of tasks replaces (its new files hold these).

    Example:
        >>> unit_live_rows([])
        0
    """
    return sum(f.live_rows for f in unit_fragments(tasks))


@dataclass(frozen=True)
class RewriteResult(JsonMixin):
    """A rewritten group: the fragments it replaces and the new ones (not committed)."""

    task_id: str
    old_fragment_ids: tuple[int, ...]
    new_fragments: tuple[Fragment, ...]
    rows: int

    _codecs: ClassVar[dict[str, Codec]] = {"old_fragment_ids": INTS, "new_fragments": FRAGMENTS}


IdRange = tuple[int | None, int | None]


def _id_bounds(fragment: Fragment, field_id: int) -> tuple[int, int] | None:
    """The fragment's min/max batch id from its manifest statistics (``None``: unknown)."""
    return int_bounds(fragment, field_id)


def _overlaps(bounds: tuple[int, int] | None, ids: IdRange) -> bool:
    if bounds is None:
        return True
    lo, hi = bounds
    return (ids[0] is None or hi >= ids[0]) and (ids[1] is None or lo < ids[1])


def split_by_id(
    fragments: Sequence[Fragment], field_id: int, target_rows: int, max_tasks: int
) -> list[IdRange]:
    """Disjoint batch-id ranges ``[from, below)`` covering every id, one per task, that
    split the live rows of ``fragments`` into about equal shares of whole target-sized
    files (from the manifest alone: each fragment's rows are taken as spread evenly over
    its min/max batch id; fragments without statistics are left out of the estimate).
    Each range but the last aims up to 5% under its files' rows (as far as the last
    range's part-filled file has room), so an estimate a little off does not cost a small
    extra file per task.

    ``fragments`` are :class:`~fermion.table.domain.Fragment` values (manifest messages
    are still accepted).

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import dataset
        >>> from fermion.table.tasks import plan_write, execute_write, commit_write
        >>> uri = tempfile.mkdtemp()
        >>> data = pa.table({"b": list(range(200))})
        >>> plan = plan_write(uri, data.schema, batch_id_column="b", max_rows_per_file=100)
        >>> _ = commit_write(plan, [execute_write(plan, data)])
        >>> split_by_id(dataset(uri).fragments, 0, target_rows=50, max_tasks=2)
        [(None, 100), (100, None)]
    """
    fragments = [as_fragment(f) for f in fragments]
    known = [(b, f.live_rows) for f in fragments if (b := _id_bounds(f, field_id)) is not None]
    total = sum(f.live_rows for f in fragments)
    files = -(-total // target_rows)
    per_task = max(1, -(-files // max(1, max_tasks)))
    tasks = -(-files // per_task)
    if tasks < 2 or not known:
        return [(None, None)]
    lo = np.array([float(b[0]) for b, _ in known])
    width = np.array([float(b[1]) - float(b[0]) + 1.0 for b, _ in known])
    rows = np.array([float(n) for _, n in known])
    scale = sum(rows) / total if total else 1.0

    def below(x: int) -> float:  # estimated live rows with an id below x
        return float(np.sum(rows * np.clip((float(x) - lo) / width, 0.0, 1.0))) / scale

    first, stop = min(b[0] for b, _ in known), max(b[1] for b, _ in known) + 1
    cuts: list[int] = []
    # each task aims a little below its whole files (the estimate errs either way; a task
    # just over would write one more, small, file); the last takes what is left, so the
    # margin is at most the room its last file has
    last = total - (tasks - 1) * per_task * target_rows
    room = -(-last // target_rows) * target_rows - last
    share = per_task * target_rows - min(per_task * target_rows // 20, room // (tasks - 1))
    for k in range(1, tasks):
        wanted = k * share
        a, z = first, stop  # the smallest x with below(x) >= wanted, by bisection
        while a < z:
            mid = (a + z) // 2
            if below(mid) >= wanted:
                z = mid
            else:
                a = mid + 1
        if first < a < stop and (not cuts or a > cuts[-1]):
            cuts.append(a)
    edges: list[int | None] = [None, *cuts, None]
    return list(zip(edges[:-1], edges[1:], strict=True))


def _plan(
    ref: TableRef,
    version: TableVersion,
    kind: RewriteKind,
    groups: list[list[Fragment]],
    target_rows: int,
    split: list[list[IdRange]] | None = None,
) -> RewritePlan:
    """The plan: one task per group, or per id range of the group when ``split`` gives a
    group several ranges (its tasks then form one commit unit)."""
    write_id = uuid.uuid4().hex
    schema = version.schema
    batch_column = version.config.get(BATCH_ID_COLUMN_KEY) or None
    if batch_column is not None and batch_column not in schema.arrow.names:
        batch_column = None  # the column was dropped: rewrite in row mode
    field_id = (
        schema.top_level_ids()[schema.arrow.get_field_index(batch_column)]
        if batch_column is not None
        else -1
    )
    tasks: list[RewriteTask] = []
    for i, group in enumerate(groups):
        ranges = split[i] if split is not None and batch_column is not None else [(None, None)]
        for ids in ranges:
            members = [f for f in group if _overlaps(_id_bounds(f, field_id), ids)]
            tasks.append(
                RewriteTask(
                    task_id=str(len(tasks)),
                    table=ref,
                    read_version=version.version,
                    write_id=write_id,
                    schema=schema,
                    fragments=tuple(members),
                    target_rows_per_file=target_rows,
                    batch_id_column=batch_column,
                    unit=f"u{i}" if len(ranges) > 1 else None,
                    ids_from=ids[0],
                    ids_below=ids[1],
                    properties=write_properties_of(version.config),
                )
            )
    return RewritePlan(ref, kind, version.version, write_id, tuple(tasks))


def plan_compaction(
    uri: Any,
    *,
    target_rows_per_fragment: int = MAX_ROWS_PER_FILE_DEFAULT,
    materialize_deletions_threshold: float = MATERIALIZE_THRESHOLD_DEFAULT,
    max_tasks: int = 1,
    version: int | None = None,
    manifest_store: ManifestStore | None = None,
) -> RewritePlan:
    """Group small fragments (and heavily deleted ones) for rewriting.

    A fragment is rewritten when it has fewer than ``target_rows_per_fragment`` live rows
    or more than ``materialize_deletions_threshold`` of its rows deleted.

    - A plain table: neighbouring such fragments are packed into groups of at most
      ``target_rows_per_fragment`` live rows; a lone small fragment without deletions is
      left alone (nothing to gain).
    - A batch-mode table (``fermion.batch_id_column``): every such fragment is merged
      by batch id into one run of new fragments of about ``target_rows_per_fragment``
      rows with disjoint, increasing id ranges (:mod:`fermion.table.tasks.merge`). With
      ``max_tasks`` above 1 the work is split into up to that many tasks of disjoint id
      ranges, each writing whole target-sized files; they commit together.

    Raises:
        InvalidArgumentError: Out-of-range arguments.
        DatasetError: No table at ``uri``.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table.tasks import plan_write, execute_write, commit_write
        >>> uri = tempfile.mkdtemp()
        >>> data = pa.table({"b": list(range(12))})
        >>> plan = plan_write(uri, data.schema, batch_id_column="b")
        >>> parts = [data.filter(pa.array([i % 3 == k for i in range(12)])) for k in range(3)]
        >>> _ = commit_write(plan, [execute_write(plan, p, task_id=k)
        ...                         for k, p in enumerate(parts)])
        >>> rewrite = plan_compaction(uri, target_rows_per_fragment=6, max_tasks=2)
        >>> [(t.ids_from, t.ids_below, len(t.fragments)) for t in rewrite.tasks]
        [(None, 6, 3), (6, None, 3)]
        >>> summary = commit_rewrite(rewrite, [execute_rewrite(t) for t in rewrite.tasks])
        >>> summary.fragments_removed, summary.fragments_added
        (3, 2)
    """
    if target_rows_per_fragment < 1:
        raise InvalidArgumentError("target_rows_per_fragment must be >= 1")
    if not 0 <= materialize_deletions_threshold <= 1:
        raise InvalidArgumentError("materialize_deletions_threshold must be in [0, 1]")
    if max_tasks < 1:
        raise InvalidArgumentError(f"max_tasks must be >= 1, got {max_tasks}")
    ref, storage, read = open_planned_version(uri, version, manifest_store)
    target = target_rows_per_fragment

    def needs_rewrite(fragment: Fragment) -> bool:
        return (
            fragment.live_rows < target
            or fragment.deleted_rows > materialize_deletions_threshold * fragment.physical_rows
        )

    schema = read.schema
    batch_column = read.config.get(BATCH_ID_COLUMN_KEY) or None
    if batch_column is not None and batch_column in schema.arrow.names:
        chosen = [f for f in read.fragments if needs_rewrite(f)]
        if len(chosen) < 2 and not any(has_deletion_file(f) for f in chosen):
            return _plan(ref, read, "compaction", [], target)
        field_id = schema.top_level_ids()[schema.arrow.get_field_index(batch_column)]
        split = split_by_id(chosen, field_id, target, max_tasks)
        return _plan(ref, read, "compaction", [chosen], target, [split])

    groups: list[list[Fragment]] = []
    current: list[Fragment] = []
    rows = 0
    for fragment in read.fragments:
        if not needs_rewrite(fragment):
            if current:
                groups.append(current)
            current, rows = [], 0
            continue
        if current and rows + fragment.live_rows > target:
            groups.append(current)
            current, rows = [], 0
        current.append(fragment)
        rows += fragment.live_rows
    if current:
        groups.append(current)
    worth = [g for g in groups if len(g) > 1 or has_deletion_file(g[0])]
    return _plan(ref, read, "compaction", worth, target)


def plan_materialization(
    uri: Any,
    *,
    threshold: float = MATERIALIZE_THRESHOLD_DEFAULT,
    version: int | None = None,
    manifest_store: ManifestStore | None = None,
) -> RewritePlan:
    """One group per fragment whose deleted fraction is above ``threshold``.

    Raises:
        InvalidArgumentError: ``threshold`` outside [0, 1).
        DatasetError: No table at ``uri``.
    """
    if not 0 <= threshold < 1:
        raise InvalidArgumentError(f"threshold must be in [0, 1), got {threshold}")
    ref, storage, read = open_planned_version(uri, version, manifest_store)
    groups = [
        [f]
        for f in read.fragments
        if has_deletion_file(f) and f.deleted_rows > threshold * f.physical_rows
    ]
    target = max([g[0].live_rows for g in groups] + [1])
    return _plan(ref, read, "materialization", groups, target)


def execute_rewrite(task: RewriteTask) -> RewriteResult:
    """Read the group's live rows and write them as new files (commits nothing).

    A batch-mode task merges its fragments by batch id, streaming
    (:mod:`fermion.table.tasks.merge`): its new files hold disjoint, increasing id
    ranges, every batch whole. A task of a range-split unit rewrites only the ids of its
    range; its unit's row count is checked when the unit commits.

    Raises:
        InvalidFileError: The rows read differ from what the manifest promises.
    """
    storage = task.table.open()
    # a table with row ids: the rows move with their ids (docs/TABLE_FORMAT.md, "Row ids")
    carry = bool(task.fragments) and all(fragment_has_row_ids(f) for f in task.fragments)
    moved: list[np.ndarray] = []
    if task.batch_id_column is not None:
        column = task.batch_id_column
        streams = [
            fragment_id_chunks(
                storage,
                task.schema,
                f,
                column,
                ids_from=task.ids_from,
                ids_below=task.ids_below,
                with_row_ids=carry,
            )  # fmt: skip
            for f in task.fragments
        ]
        counted = [0]
        target = task.schema.arrow

        def merged() -> Iterator[pa.RecordBatch]:
            for table in merge_batch_runs(streams, column):
                counted[0] += table.num_rows
                if carry:
                    moved.append(table.column(ROW_ID).to_numpy().astype(np.int64))
                    table = table.drop_columns([ROW_ID])
                for batch in table.to_batches():
                    yield batch if batch.schema.equals(target) else batch.cast(target)

        new = write_fragment_values(
            pa.RecordBatchReader.from_batches(target, merged()),
            task.table,
            schema=task.schema,
            max_rows_per_file=task.target_rows_per_file,
            prefix=f"data/{task.write_id}",
            batch_id_column=column,
            properties=task.properties,
        )
        rows = counted[0]
    else:
        names = task.schema.arrow.names
        tables = []
        for fragment in task.fragments:
            table = read_fragment(storage, task.schema, fragment, names, with_row_offsets=carry)
            if carry:
                offsets = table.column(ROW_OFFSET).to_numpy().astype(np.int64)
                moved.append(fragment_row_ids(fragment)[offsets])  # type: ignore[index]
                table = table.drop_columns([ROW_OFFSET])
            tables.append(table)
        data = pa.concat_tables(tables) if tables else task.schema.arrow.empty_table()
        rows = data.num_rows
        new = (
            write_fragment_values(
                data,
                task.table,
                schema=task.schema,
                max_rows_per_file=task.target_rows_per_file,
                prefix=f"data/{task.write_id}",
                properties=task.properties,
            )
            if data.num_rows
            else []
        )
    if not task.by_range and rows != task.live_rows:
        raise InvalidFileError(
            f"rewrite task {task.task_id}: read {rows} live rows, "
            f"the manifest says {task.live_rows}"
        )
    if carry:
        new = with_row_ids(new, np.concatenate(moved) if moved else np.zeros(0, np.int64))
    old_ids = tuple(f.id for f in task.fragments if f.id is not None)
    return RewriteResult(task.task_id, old_ids, tuple(new), rows)


def _content(fragment: Fragment) -> tuple[bytes, tuple[str, ...]]:
    """What decides a fragment's live rows: its deletion file and its data files."""
    return deletion_entry(fragment), fragment.paths


def commit_rewrite(
    plan: RewritePlan,
    results: Sequence[RewriteResult],
    *,
    config: CommitConfig | None = None,
    properties: dict[str, str] | None = None,
    manifest_store: ManifestStore | None = None,
) -> CommitSummary:
    """Commit the rewritten groups as one ``Rewrite`` (driver side, with retries).

    Groups whose fragments changed since ``plan.read_version`` are skipped (listed in
    ``skipped_tasks``), never committed: their new files would lack rows deleted since.
    Results missing from ``results`` are not committed either (their files are orphans).
    """
    storage = open_ref(plan.table, manifest_store)[1]
    tasks = {t.task_id: t for t in plan.tasks}
    units = plan.units()
    by_task = {}
    for each in results:
        task = tasks.get(each.task_id)
        if task is None:
            raise InvalidArgumentError(f"result of unknown task {each.task_id!r}")
        if not task.by_range and each.rows != task.live_rows:
            raise InvalidArgumentError(
                f"task {each.task_id} wrote {each.rows} rows for {task.live_rows} live rows"
            )
        by_task[each.task_id] = each
    complete: list[str] = []  # units with a result for every task
    skipped: list[str] = []
    for unit, members in units.items():
        if all(t.task_id in by_task for t in members):
            wrote = sum(by_task[t.task_id].rows for t in members)
            if wrote != unit_live_rows(members):
                raise InvalidArgumentError(
                    f"rewrite unit {unit} wrote {wrote} rows for "
                    f"{unit_live_rows(members)} live rows"
                )
            complete.append(unit)
        elif any(t.task_id in by_task for t in members):  # part of a unit: commits nothing
            skipped.extend(t.task_id for t in members if t.task_id in by_task)
    planned = {unit: {f.id: _content(f) for f in unit_fragments(units[unit])} for unit in complete}

    def groups_still_valid(version: TableVersion | None) -> Rewrite | None:
        present = {} if version is None else {f.id: f for f in version.fragments}
        kept = []
        for unit in complete:
            members = units[unit]
            unchanged = all(
                i in present and _content(present[i]) == content
                for i, content in planned[unit].items()
            )
            if unchanged:
                old = tuple(f.id for f in unit_fragments(members) if f.id is not None)
                new = fragment_messages(
                    f for t in members for f in by_task[t.task_id].new_fragments
                )
                kept.append(RewriteGroup(old, new))
            else:
                skipped.extend(t.task_id for t in members if t.task_id not in skipped)
        return Rewrite(tuple(kept)) if kept else None

    op = groups_still_valid(load_table_version(storage, plan.read_version))
    if op is None:
        return CommitSummary(
            False, plan.read_version, plan.read_version, operation="rewrite",
            skipped_tasks=tuple(skipped),
        )  # fmt: skip
    result = commit_operation(
        storage,
        op,
        read_version=plan.read_version,
        config=config,
        planner=on_versions(groups_still_valid),
        properties={"rewrite": plan.kind, **(properties or {})},
    )
    return summarise(result, plan.read_version, committed=result.committed, skipped=skipped)


def abort_rewrite(
    plan: RewritePlan,
    results: Sequence[RewriteResult | None] = (),
    *,
    manifest_store: ManifestStore | None = None,
) -> int:
    """Remove every file of the rewrite that no version references; returns how many.

    The new files named in ``results`` and every file under ``data/{write_id}/`` of the plan
    (those of tasks that failed before reporting included) are removed unless a retained
    version references them, so a rewrite whose commit landed after all keeps its files.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> uri = tempfile.mkdtemp()
        >>> _ = write_dataset(pa.table({"x": list(range(4))}), uri, max_rows_per_file=1)
        >>> plan = plan_compaction(uri, target_rows_per_fragment=10)
        >>> abort_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
        1
    """
    storage = open_ref(plan.table, manifest_store)[1]
    paths = {d.path for r in results if r is not None for f in r.new_fragments for d in f.files}
    paths.update(storage.list_tree(f"data/{plan.write_id}"))
    return remove_unreferenced(storage, paths)
