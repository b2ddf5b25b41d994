"""Statistics rebuild as plan → execute → commit (a ``CreateIndex`` named ``fermion.stats``).

``plan_index`` makes one task per fragment whose statistics are missing or stale for the
wanted columns (or every fragment with ``only_stale=False``). ``execute_index`` reads the
fragment's live rows and computes fresh min/max/null counts; ``commit_index`` registers
them as one ``CreateIndex`` covering the rebuilt fragments. If a concurrent compaction
removed some of them, the commit is re-planned without those fragments, so the index never
names a fragment that is gone.

Stale means: the fragment has no statistics for a wanted field it stores, or the last
``fermion.stats`` index does not cover it (its statistics were computed from the physical
rows at write time, not from the live rows).

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table import write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"x": [3, 1, 2]}), uri)
    >>> plan = plan_index(uri)
    >>> summary = commit_index(plan, [execute_index(t) for t in plan.tasks])
    >>> summary.operation, summary.version, len(plan_index(uri).tasks)
    ('create_index', 2, 0)
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from fermion.errors import InvalidArgumentError
from fermion.table.commit import CommitConfig, commit_operation, on_versions
from fermion.table.domain import Fragment, TableVersion
from fermion.table.indices.model import IndexEntry, create_index_op, indices_of
from fermion.table.manifest_store import ManifestStore
from fermion.table.operations import CreateIndex
from fermion.table.ref import TableRef
from fermion.table.scan import read_fragment
from fermion.table.schema import TableSchema
from fermion.table.stats import refreshed_stats, stats_field_ids
from fermion.table.tasks.common import fragment_groups, open_ref, summarise
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
from fermion.table.versions import load_table_version, open_planned_version

__all__ = [
    "STATS_INDEX_NAME",
    "IndexPlan",
    "IndexResult",
    "IndexTask",
    "commit_index",
    "execute_index",
    "plan_index",
]

STATS_INDEX_NAME = "fermion.stats"


@dataclass(frozen=True)
class IndexTask(OnTable, JsonMixin):
    """Recompute the statistics of one fragment."""

    task_id: str
    table: TableRef
    read_version: int
    schema: TableSchema
    fragments: tuple[Fragment, ...]
    columns: tuple[str, ...]

    _codecs: ClassVar[dict[str, Codec]] = {
        "table": REF,
        "schema": SCHEMA, "fragments": FRAGMENTS, "columns": STRS,
    }  # fmt: skip


@dataclass(frozen=True)
class IndexPlan(OnTable, JsonMixin):
    """The fragments to rebuild, planned on ``read_version``."""

    table: TableRef
    read_version: int
    columns: tuple[str, ...]
    field_ids: tuple[int, ...]
    tasks: tuple[IndexTask, ...]

    _codecs: ClassVar[dict[str, Codec]] = {
        "table": REF,
        "columns": STRS,
        "field_ids": INTS,
        "tasks": tasks_codec(IndexTask),
    }


@dataclass(frozen=True)
class IndexResult(JsonMixin):
    """Fresh statistics of some fragments: one ``Fragment`` (id + stats) each."""

    task_id: str
    fragment_stats: tuple[Fragment, ...]

    _codecs: ClassVar[dict[str, Codec]] = {"fragment_stats": FRAGMENTS}


def _covered(version: TableVersion) -> set[int]:
    return {i for x in indices_of(version) if x.name == STATS_INDEX_NAME for i in x.fragment_ids}


def plan_index(
    uri: Any,
    *,
    columns: Sequence[str] | None = None,
    only_stale: bool = True,
    fragments_per_task: int = 1,
    version: int | None = None,
    manifest_store: ManifestStore | None = None,
) -> IndexPlan:
    """Plan a statistics rebuild of ``columns`` (default: every column).

    Raises:
        InvalidArgumentError: Unknown columns, ``fragments_per_task`` < 1, or no table.
    """
    if fragments_per_task < 1:
        raise InvalidArgumentError("fragments_per_task must be >= 1")
    ref, _, table = open_planned_version(uri, version, manifest_store)
    schema = table.schema
    names = tuple(schema.arrow.names) if columns is None else tuple(columns)
    unknown = [n for n in names if n not in schema.arrow.names]
    if unknown:
        raise InvalidArgumentError(f"no such columns: {unknown}")
    ids = tuple(schema.id_of(n) for n in names)
    covered = _covered(table)

    def stale(fragment: Fragment) -> bool:
        stored = {i for d in fragment.files for i in d.field_ids}
        have = stats_field_ids(fragment)
        return fragment.id not in covered or any(i in stored and i not in have for i in ids)

    todo = [f for f in table.fragments if not only_stale or stale(f)]
    tasks = tuple(
        IndexTask(str(n), ref, table.version, schema, group, names)
        for n, group in enumerate(fragment_groups(todo, fragments_per_task))
    )
    return IndexPlan(ref, table.version, names, ids, tasks)


def execute_index(task: IndexTask) -> IndexResult:
    """Compute the statistics of the task's fragments from their live rows."""
    storage = task.table.open()
    ids = [task.schema.id_of(n) for n in task.columns]
    out = []
    for fragment in task.fragments:
        table = read_fragment(storage, task.schema, fragment, list(task.columns))
        out.append(refreshed_stats(fragment, table, ids))
    return IndexResult(task.task_id, tuple(out))


def commit_index(
    plan: IndexPlan,
    results: Sequence[IndexResult],
    *,
    config: CommitConfig | None = None,
    manifest_store: ManifestStore | None = None,
) -> CommitSummary:
    """Commit fresh statistics as a ``CreateIndex`` (driver side, with retries).

    The index covers the fragments already covered by the previous ``fermion.stats``
    index that are still present, plus the rebuilt ones.
    """
    storage = open_ref(plan.table, manifest_store)[1]
    updates = [f for r in results for f in r.fragment_stats]
    gone: list[str] = []

    def build(version: TableVersion) -> CreateIndex | None:
        present = {f.id for f in version.fragments}
        kept = [u for u in updates if u.id in present]
        gone.extend(str(u.id) for u in updates if u.id not in present and str(u.id) not in gone)
        if not kept:
            return None
        covered = sorted((_covered(version) & present) | {u.id for u in kept if u.id is not None})
        index = IndexEntry(
            uuid=uuid.uuid4().hex, name=STATS_INDEX_NAME, kind="zonemap",
            field_ids=tuple(plan.field_ids), fragment_ids=tuple(covered),
            dataset_version=version.version,
        )  # fmt: skip
        return create_index_op(index, kept)

    op = build(load_table_version(storage, plan.read_version))
    if op is None:
        return CommitSummary(False, plan.read_version, plan.read_version, operation="create_index")
    result = commit_operation(
        storage, op, read_version=plan.read_version, config=config, planner=on_versions(build)
    )
    return summarise(result, plan.read_version, committed=result.committed, skipped=gone)
