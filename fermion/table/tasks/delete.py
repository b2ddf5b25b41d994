"""Delete by predicate as plan → execute → commit (deletion files; no data is rewritten).

``plan_delete`` keeps the fragments whose statistics say they may hold matching rows and
makes tasks of them. ``execute_delete`` finds the matching live rows of its fragments and
writes each fragment's complete new deletion file (old deletions plus the new rows); a
fragment left with no live row is removed instead. ``commit_delete`` commits one
``Delete``. Concurrent deletes of other rows of the same fragments are merged by the commit
loop (the bitmaps are OR-ed); if a concurrent commit deleted the same rows or rewrote a
fragment, the delete is planned and executed again on the newer version, in the driver.

Example:
    >>> import tempfile, pyarrow as pa, pyarrow.compute as pc
    >>> from fermion.table import dataset, write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"x": [1, 2, 3, 4]}), uri, max_rows_per_file=2)
    >>> plan = plan_delete(uri, pc.field("x") >= 3)
    >>> len(plan.tasks)  # the first fragment's statistics rule it out
    1
    >>> summary = commit_delete(plan, [execute_delete(t) for t in plan.tasks])
    >>> summary.rows_deleted, dataset(uri).to_table()["x"].to_pylist()
    (2, [1, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidArgumentError
from fermion.table.codec import as_table_version, fragment_messages, has_deletion_file
from fermion.table.commit import CommitConfig, commit_operation, on_versions
from fermion.table.deletions import (
    bitmap_from_offsets,
    keep_mask,
    read_fragment_deletions,
    with_deletions,
)
from fermion.table.domain import Fragment, TableVersion
from fermion.table.manifest_store import ManifestStore
from fermion.table.operations import Delete
from fermion.table.predicate import parse_predicate
from fermion.table.ref import TableRef
from fermion.table.scan import ROW_OFFSET, Scanner, read_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage
from fermion.table.tasks.common import fragment_groups, open_ref, summarise
from fermion.table.tasks.model import (
    EXPRESSION,
    FRAGMENTS,
    INTS,
    REF,
    SCHEMA,
    Codec,
    CommitSummary,
    JsonMixin,
    OnTable,
    tasks_codec,
)
from fermion.table.versions import open_planned_version

__all__ = [
    "DeletePlan",
    "DeleteResult",
    "DeleteTask",
    "commit_delete",
    "delete_now",
    "execute_delete",
    "plan_delete",
]


@dataclass(frozen=True)
class DeleteTask(OnTable, JsonMixin):
    """Mark the rows of some fragments that match ``predicate`` deleted."""

    task_id: str
    table: TableRef
    read_version: int
    schema: TableSchema
    fragments: tuple[Fragment, ...]
    predicate: pc.Expression

    _codecs: ClassVar[dict[str, Codec]] = {
        "table": REF,
        "schema": SCHEMA, "fragments": FRAGMENTS, "predicate": EXPRESSION,
    }  # fmt: skip


@dataclass(frozen=True)
class DeletePlan(OnTable, JsonMixin):
    """A delete planned on ``read_version``; ``predicate_text`` is kept for the log."""

    table: TableRef
    read_version: int
    predicate: pc.Expression
    predicate_text: str
    tasks: tuple[DeleteTask, ...]

    _codecs: ClassVar[dict[str, Codec]] = {
        "table": REF,
        "predicate": EXPRESSION,
        "tasks": tasks_codec(DeleteTask),
    }


@dataclass(frozen=True)
class DeleteResult(JsonMixin):
    """Fragments with their new deletion files, and fragments with no live row left."""

    task_id: str
    updated: tuple[Fragment, ...]
    removed_ids: tuple[int, ...]
    rows_deleted: int

    _codecs: ClassVar[dict[str, Codec]] = {"updated": FRAGMENTS, "removed_ids": INTS}


def _expression(filter: pc.Expression | str, schema: pa.Schema) -> tuple[pc.Expression, str]:
    if isinstance(filter, str):
        return parse_predicate(filter, schema), filter
    if isinstance(filter, pc.Expression):
        return filter, str(filter)
    raise InvalidArgumentError(
        f"a delete predicate is a SQL string or a pyarrow.compute.Expression, not "
        f"{type(filter).__name__}"
    )


def plan_delete(
    uri: Any,
    filter: pc.Expression | str,
    *,
    fragments_per_task: int = 1,
    version: int | None = None,
    manifest_store: ManifestStore | None = None,
) -> DeletePlan:
    """Plan deleting the rows matching ``filter`` (a SQL predicate or an Arrow expression).

    Fragments that statistics rule out get no task.

    Raises:
        InvalidArgumentError: A predicate that does not parse or names unknown columns.
        DatasetError: No table at ``uri``.
    """
    if fragments_per_task < 1:
        raise InvalidArgumentError("fragments_per_task must be >= 1")
    ref, storage, read = open_planned_version(uri, version, manifest_store)
    schema = read.schema
    expression, text = _expression(filter, schema.arrow)
    candidates = Scanner(storage, read, schema, [], expression).fragment_values()
    tasks = tuple(
        DeleteTask(str(n), ref, read.version, schema, group, expression)
        for n, group in enumerate(fragment_groups(candidates, fragments_per_task))
    )
    return DeletePlan(ref, read.version, expression, text, tasks)


def _delete_in(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment,
    predicate: pc.Expression,
    read_version: int,
) -> tuple[Fragment | None, bool, int]:
    """(updated fragment or None, removed?, newly deleted rows) for one fragment."""
    table = read_fragment(storage, schema, fragment, [], predicate, with_row_offsets=True)
    if table.num_rows == 0:
        return None, False, 0
    rows = bitmap_from_offsets(table.column(ROW_OFFSET).to_numpy())
    if has_deletion_file(fragment):
        rows |= read_fragment_deletions(storage, fragment)
    if len(rows) == fragment.physical_rows:
        return None, True, table.num_rows
    keep_mask(rows, fragment.physical_rows)  # validates the offsets
    return with_deletions(storage, fragment, read_version, rows), False, table.num_rows


def _committed_id(fragment: Fragment) -> int:
    if fragment.id is None:
        raise InvalidArgumentError("a delete names committed fragments only (this has no id)")
    return fragment.id


def execute_delete(task: DeleteTask) -> DeleteResult:
    """Write the new deletion files of the task's fragments (commits nothing)."""
    storage = task.table.open()
    updated: list[Fragment] = []
    removed: list[int] = []
    deleted = 0
    for fragment in task.fragments:
        update, gone, rows = _delete_in(
            storage, task.schema, fragment, task.predicate, task.read_version
        )
        deleted += rows
        if gone:
            removed.append(_committed_id(fragment))
        elif update is not None:
            updated.append(update)
    storage.sync_directories()  # the deletion files are durable before they are reported
    return DeleteResult(task.task_id, tuple(updated), tuple(removed), deleted)


def delete_now(
    storage: TableStorage, version: TableVersion, predicate: pc.Expression, text: str = ""
) -> Delete | None:
    """Plan and execute a delete in this process on ``version`` (``None``: no row matches;
    its manifest message is still accepted).

    The commit loop calls it to re-plan a delete on a newer version after a conflict.
    """
    version = as_table_version(version)
    schema = version.schema
    updated: list[Fragment] = []
    removed: list[int] = []
    for fragment in Scanner(storage, version, schema, [], predicate).fragment_values():
        update, gone, _ = _delete_in(storage, schema, fragment, predicate, version.version)
        if gone:
            removed.append(_committed_id(fragment))
        elif update is not None:
            updated.append(update)
    if not updated and not removed:
        return None
    return Delete(fragment_messages(updated), tuple(removed), predicate=text or str(predicate))


def commit_delete(
    plan: DeletePlan,
    results: Sequence[DeleteResult],
    *,
    config: CommitConfig | None = None,
    manifest_store: ManifestStore | None = None,
) -> CommitSummary:
    """Commit the deletion files of every result as one ``Delete`` (driver, with retries).

    Every task's result must be given: a missing one would leave its rows undeleted.

    Raises:
        InvalidArgumentError: Results missing or of unknown tasks.
    """
    expected = {t.task_id for t in plan.tasks}
    got = [r.task_id for r in results]
    if sorted(got) != sorted(expected):
        raise InvalidArgumentError(
            f"commit_delete needs one result per task: expected {sorted(expected)}, got {got}"
        )
    storage = open_ref(plan.table, manifest_store)[1]
    updated = fragment_messages(f for r in results for f in r.updated)
    removed = tuple(i for r in results for i in r.removed_ids)
    if not updated and not removed:
        return CommitSummary(False, plan.read_version, plan.read_version, operation="delete")

    def replan(version: TableVersion) -> Delete | None:
        return delete_now(storage, version, plan.predicate, plan.predicate_text)

    result = commit_operation(
        storage,
        Delete(updated, removed, predicate=plan.predicate_text),
        read_version=plan.read_version,
        config=config,
        planner=on_versions(replan),
    )
    return summarise(result, plan.read_version, committed=result.committed)
