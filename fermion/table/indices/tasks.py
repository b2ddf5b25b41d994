"""Scalar index builds as plan (driver) → execute (any process) → commit (driver).

``plan_index_build`` decides what a build of index ``name`` (``kind`` on ``column``) covers:
every fragment for a new index or with ``rebuild=True``, else only the fragments the index
does not cover yet (appended, or written by a compaction since its last build). Each task
reads its fragments' keys and writes one sorted run file under ``_indices/<build>/``;
``commit_index_build`` merges the runs (and, for a refresh, the old entries of the fragments
still covered) into the index files, commits one ``CreateIndex`` and removes the runs. A
concurrent compaction of covered fragments makes the commit re-plan: the coverage narrows
to the fragments still there (docs/TABLE_FORMAT.md, "Scalar indices").

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> uri = tempfile.mkdtemp()
    >>> _ = ft.write_dataset(pa.table({"k": [3, 1, 2, 1]}), uri, max_rows_per_file=2)
    >>> plan = plan_index_build(uri, "k", "BTREE")
    >>> result = commit_index_build(plan, [execute_index_build(t) for t in plan.tasks])
    >>> len(plan.tasks), result.committed, ft.dataset(uri).count_rows("k = 1")
    (2, True, 2)
    >>> plan_index_build(uri, "k", "BTREE").tasks
    ()
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from fermion.errors import ColumnNotFoundError, InvalidArgumentError
from fermion.format import write_table
from fermion.table.commit import CommitConfig, CommitResult, commit_operation, on_versions
from fermion.table.domain import Fragment
from fermion.table.indices.api import finish_build, narrowed
from fermion.table.indices.build import (
    INDEX_PAGE_SIZE,
    collect_entries,
    entry_schema,
    read_entries,
    sorted_entries,
)
from fermion.table.indices.model import (
    BTREE,
    check_key_type,
    index_entry_from_bytes,
    index_entry_to_bytes,
    indices_of,
    key_type_of,
)
from fermion.table.manifest_store import ManifestStore
from fermion.table.ref import TableRef
from fermion.table.schema import TableSchema
from fermion.table.tasks.model import OnTable
from fermion.table.versions import load_table_version

__all__ = [
    "IndexBuildPlan",
    "IndexBuildResult",
    "IndexBuildTask",
    "commit_index_build",
    "execute_index_build",
    "plan_index_build",
]


@dataclass(frozen=True)
class IndexBuildTask(OnTable):
    """Index some fragments: write their sorted entries as one run file."""

    task_id: str
    table: TableRef
    build: str
    column: str
    schema: TableSchema
    fragments: tuple[Fragment, ...]
    kind: str = BTREE


@dataclass(frozen=True)
class IndexBuildPlan(OnTable):
    """A build of index ``name`` planned on ``read_version``.

    ``previous`` (an index entry as :func:`~fermion.table.indices.model.index_entry_to_bytes`
    serialises it, empty for a full build) is the index being refreshed: its entries of
    the fragments it still covers are kept.
    """

    table: TableRef
    read_version: int
    name: str
    column: str
    kind: str
    build: str
    previous: bytes
    tasks: tuple[IndexBuildTask, ...]


@dataclass(frozen=True)
class IndexBuildResult:
    """The run file a task wrote (relative to the table root) and its entries."""

    task_id: str
    path: str
    entries: int


def plan_index_build(
    uri: Any,
    column: str,
    kind: str,
    *,
    name: str | None = None,
    rebuild: bool = False,
    fragments_per_task: int = 1,
    version: int | None = None,
    manifest_store: ManifestStore | None = None,
) -> IndexBuildPlan:
    """Plan a build of the ``kind`` index ``name`` (default ``{column}_idx``) on ``column``.

    Raises:
        ColumnNotFoundError: No such column.
        InvalidArgumentError: A kind or column type that cannot be indexed, an existing
            index of that name on another column or of another kind (rebuild it), or
            ``fragments_per_task`` < 1.
    """
    if fragments_per_task < 1:
        raise InvalidArgumentError("fragments_per_task must be >= 1")
    ref = TableRef.of(uri, manifest_store=manifest_store)
    storage = ref.open()
    ref = ref.bound(storage)
    read_version = version if version is not None else storage.latest_version()
    if not read_version:
        raise InvalidArgumentError(f"{storage.uri}: no table")
    table = load_table_version(storage, read_version)
    schema = table.schema
    if schema.arrow.get_field_index(column) < 0:
        raise ColumnNotFoundError(f"no column named {column!r}")
    kind = kind.upper()
    check_key_type(kind, column, schema.arrow.field(column).type)
    name = name or f"{column}_idx"
    previous = next((i for i in indices_of(table) if i.name == name), None)
    if previous is not None and not rebuild:
        same = previous.kind == kind and previous.field_ids == (schema.id_of(column),)
        if not same:
            raise InvalidArgumentError(
                f"index {name!r} is a {previous.kind} index of another column or kind; "
                "rebuild it to change it"
            )
    if rebuild:
        previous = None
    covered = set(previous.fragment_ids) if previous is not None else set()
    todo = [f for f in table.fragments if f.id not in covered]
    build = uuidlib.uuid4().hex
    tasks = tuple(
        IndexBuildTask(
            str(n),
            ref,
            build,
            column,
            schema,
            tuple(todo[start : start + fragments_per_task]),
            kind,
        )  # fmt: skip
        for n, start in enumerate(range(0, len(todo), fragments_per_task))
    )
    old = index_entry_to_bytes(previous) if previous is not None else b""
    return IndexBuildPlan(ref, table.version, name, column, kind, build, old, tasks)


def execute_index_build(task: IndexBuildTask) -> IndexBuildResult:
    """Write the sorted entries of the task's fragments as a run file."""
    storage = task.table.open()
    entries = collect_entries(storage, task.schema, task.fragments, task.column, kind=task.kind)
    entries = sorted_entries(entries)
    path = f"_indices/{task.build}/run-{task.task_id}.fermion"
    storage.ensure_directory(f"_indices/{task.build}")
    write_table(entries, storage.target(path), page_size=INDEX_PAGE_SIZE, compression="zstd")
    storage.sync_file(path)
    return IndexBuildResult(task.task_id, path, entries.num_rows)


def commit_index_build(
    plan: IndexBuildPlan,
    results: Sequence[IndexBuildResult],
    *,
    config: CommitConfig | None = None,
    manifest_store: ManifestStore | None = None,
) -> CommitResult:
    """Merge the runs into the index files and commit one ``CreateIndex`` (driver side,
    with retries); the run files are removed afterwards, committed or not."""
    storage = TableRef.of(plan.table, manifest_store=manifest_store).open()
    runs = [r.path for r in results]
    try:
        table = load_table_version(storage, plan.read_version)
        schema = table.schema
        key_type = key_type_of(plan.kind, schema.arrow.field(plan.column).type)
        parts = [read_entries(storage, runs, BTREE).cast(entry_schema(key_type))] if runs else []
        covered: set[int] = set()
        if plan.previous:
            previous = index_entry_from_bytes(plan.previous)
            present = {f.id for f in table.fragments}
            covered = set(previous.fragment_ids) & present
            old = (list(previous.files), previous.kind, covered)
            parts.append(collect_entries(storage, schema, [], plan.column, old, plan.kind))
        entries = pa.concat_tables(parts) if parts else entry_schema(key_type).empty_table()
        indexed = {f.id for t in plan.tasks for f in t.fragments if f.id is not None}
        op = finish_build(
            storage, table, plan.column, plan.kind, plan.name, plan.build, entries,
            covered | indexed,
        )  # fmt: skip
        return commit_operation(
            storage, op, read_version=plan.read_version, config=config,
            planner=on_versions(lambda latest: narrowed(op, latest)),
        )  # fmt: skip
    finally:
        for path in runs:
            if storage.exists(path):
                storage.remove(path)
