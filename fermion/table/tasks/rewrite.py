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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pyarrow as pa

from fermion.errors import InvalidArgumentError, InvalidFileError
from fermion.table.commit import CommitConfig, commit_operation
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT, write_fragments
from fermion.table.manifest_store import ManifestStore
from fermion.table.operations import Rewrite, RewriteGroup
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.scan import read_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage
from fermion.table.tasks.common import open_table, remove_unreferenced, summarise
from fermion.table.tasks.model import (
    FRAGMENTS,
    INTS,
    SCHEMA,
    Codec,
    CommitSummary,
    FragmentInfo,
    JsonMixin,
    tasks_codec,
)
from fermion.table.tasks.write import BATCH_ID_COLUMN_KEY
from fermion.table.transition import live_rows
from fermion.table.versions import load_manifest, schema_of

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
]

#: A fragment whose deleted fraction is above this is rewritten without its deleted rows.
MATERIALIZE_THRESHOLD_DEFAULT = 0.1

RewriteKind = Literal["compaction", "materialization"]


@dataclass(frozen=True)
class RewriteTask(JsonMixin):
    """One group of fragments to rewrite into new files (runs in any process)."""

    task_id: str
    uri: str
    read_version: int
    write_id: str
    schema: TableSchema
    fragments: tuple[FragmentInfo, ...]
    target_rows_per_file: int
    batch_id_column: str | None = None

    _codecs: ClassVar[dict[str, Codec]] = {"schema": SCHEMA, "fragments": FRAGMENTS}

    @property
    def live_rows(self) -> int:
        """Rows the group holds (and its new files must hold)."""
        return sum(f.live_rows for f in self.fragments)


@dataclass(frozen=True)
class RewritePlan(JsonMixin):
    """The groups of one compaction or materialisation, planned on ``read_version``."""

    uri: str
    kind: RewriteKind
    read_version: int
    write_id: str
    tasks: tuple[RewriteTask, ...]

    _codecs: ClassVar[dict[str, Codec]] = {
        "tasks": tasks_codec(RewriteTask),
    }


@dataclass(frozen=True)
class RewriteResult(JsonMixin):
    """A rewritten group: the fragments it replaces and the new ones (not committed)."""

    task_id: str
    old_fragment_ids: tuple[int, ...]
    new_fragments: tuple[FragmentInfo, ...]
    rows: int

    _codecs: ClassVar[dict[str, Codec]] = {"old_fragment_ids": INTS, "new_fragments": FRAGMENTS}


def _plan(
    storage: TableStorage,
    manifest: pb.Manifest,
    kind: RewriteKind,
    groups: list[list[pb.Fragment]],
    target_rows: int,
) -> RewritePlan:
    write_id = uuid.uuid4().hex
    schema = schema_of(manifest)
    batch_column = manifest.config.get(BATCH_ID_COLUMN_KEY) or None
    if batch_column is not None and batch_column not in schema.arrow.names:
        batch_column = None  # the column was dropped: rewrite in row mode
    tasks = tuple(
        RewriteTask(
            task_id=str(i),
            uri=storage.uri,
            read_version=manifest.version,
            write_id=write_id,
            schema=schema,
            fragments=tuple(FragmentInfo.from_proto(f, committed=True) for f in group),
            target_rows_per_file=target_rows,
            batch_id_column=batch_column,
        )
        for i, group in enumerate(groups)
    )
    return RewritePlan(storage.uri, kind, manifest.version, write_id, tasks)


def plan_compaction(
    uri: Any,
    *,
    target_rows_per_fragment: int = MAX_ROWS_PER_FILE_DEFAULT,
    materialize_deletions_threshold: float = MATERIALIZE_THRESHOLD_DEFAULT,
    version: int | None = None,
    manifest_store: ManifestStore | None = None,
) -> RewritePlan:
    """Group runs of neighbouring small fragments (and heavily deleted ones) for rewriting.

    A fragment is rewritten when it has fewer than ``target_rows_per_fragment`` live rows
    or more than ``materialize_deletions_threshold`` of its rows deleted. Neighbouring such
    fragments are packed into groups of at most ``target_rows_per_fragment`` live rows; a
    lone small fragment without deletions is left alone (nothing to gain).

    Raises:
        InvalidArgumentError: Out-of-range arguments.
        DatasetError: No table at ``uri``.
    """
    if target_rows_per_fragment < 1:
        raise InvalidArgumentError("target_rows_per_fragment must be >= 1")
    if not 0 <= materialize_deletions_threshold <= 1:
        raise InvalidArgumentError("materialize_deletions_threshold must be in [0, 1]")
    storage, manifest = open_table(uri, version, manifest_store)
    target = target_rows_per_fragment

    def needs_rewrite(fragment: pb.Fragment) -> bool:
        deleted = fragment.physical_rows - live_rows(fragment)
        return (
            live_rows(fragment) < target
            or deleted > materialize_deletions_threshold * fragment.physical_rows
        )

    groups: list[list[pb.Fragment]] = []
    current: list[pb.Fragment] = []
    rows = 0
    for fragment in manifest.fragments:
        if not needs_rewrite(fragment):
            if current:
                groups.append(current)
            current, rows = [], 0
            continue
        if current and rows + live_rows(fragment) > target:
            groups.append(current)
            current, rows = [], 0
        current.append(fragment)
        rows += live_rows(fragment)
    if current:
        groups.append(current)
    worth = [g for g in groups if len(g) > 1 or g[0].HasField("deletion_file")]
    return _plan(storage, manifest, "compaction", worth, target)


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
    storage, manifest = open_table(uri, version, manifest_store)
    groups = [
        [f]
        for f in manifest.fragments
        if f.HasField("deletion_file")
        and f.physical_rows - live_rows(f) > threshold * f.physical_rows
    ]
    target = max([live_rows(g[0]) for g in groups] + [1])
    return _plan(storage, manifest, "materialization", groups, target)


def execute_rewrite(task: RewriteTask) -> RewriteResult:
    """Read the group's live rows and write them as new files (commits nothing).

    Raises:
        InvalidFileError: The rows read differ from what the manifest promises.
    """
    storage = TableStorage(task.uri)
    names = task.schema.arrow.names
    tables = [read_fragment(storage, task.schema, f.to_proto(), names) for f in task.fragments]
    data = pa.concat_tables(tables) if tables else task.schema.arrow.empty_table()
    if data.num_rows != task.live_rows:
        raise InvalidFileError(
            f"rewrite task {task.task_id}: read {data.num_rows} live rows, "
            f"the manifest says {task.live_rows}"
        )
    new = (
        write_fragments(
            data,
            task.uri,
            schema=task.schema,
            max_rows_per_file=task.target_rows_per_file,
            prefix=f"data/{task.write_id}",
            batch_id_column=task.batch_id_column,
        )
        if data.num_rows
        else []
    )
    old_ids = tuple(f.id for f in task.fragments if f.id is not None)
    infos = tuple(FragmentInfo.from_proto(f, committed=False) for f in new)
    return RewriteResult(task.task_id, old_ids, infos, data.num_rows)


def _content(fragment: pb.Fragment) -> tuple[bytes, tuple[str, ...]]:
    """What decides a fragment's live rows: its deletion file and its data files."""
    deletion = (
        fragment.deletion_file.SerializeToString(deterministic=True)
        if fragment.HasField("deletion_file")
        else b""
    )
    return deletion, tuple(d.path for d in fragment.files)


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
    storage = TableStorage(plan.uri, manifest_store=manifest_store)
    tasks = {t.task_id: t for t in plan.tasks}
    for each in results:
        task = tasks.get(each.task_id)
        if task is None:
            raise InvalidArgumentError(f"result of unknown task {each.task_id!r}")
        if each.rows != task.live_rows:
            raise InvalidArgumentError(
                f"task {each.task_id} wrote {each.rows} rows for {task.live_rows} live rows"
            )
    planned = {t.task_id: {f.id: _content(f.to_proto()) for f in t.fragments} for t in plan.tasks}
    skipped: list[str] = []

    def groups_still_valid(manifest: pb.Manifest | None) -> Rewrite | None:
        present = {} if manifest is None else {f.id: f for f in manifest.fragments}
        kept = []
        for each in results:
            unchanged = all(
                i in present and _content(present[i]) == content
                for i, content in planned[each.task_id].items()
            )
            if unchanged:
                new = tuple(f.to_proto() for f in each.new_fragments)
                kept.append(RewriteGroup(each.old_fragment_ids, new))
            elif each.task_id not in skipped:
                skipped.append(each.task_id)
        return Rewrite(tuple(kept)) if kept else None

    op = groups_still_valid(load_manifest(storage, plan.read_version))
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
        planner=groups_still_valid,
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
    storage = TableStorage(plan.uri, manifest_store=manifest_store)
    paths = {d.path for r in results if r is not None for f in r.new_fragments for d in f.files}
    paths.update(storage.list_tree(f"data/{plan.write_id}"))
    return remove_unreferenced(storage, paths)
