"""Adding columns with values as plan (driver) → execute per fragment (any process) →
commit (driver): the distributed form of ``Dataset.add_columns({name: SQL})``.

``plan_add_columns_tasks`` reads the table once, checks the SQL expressions on no rows
(their types fix the new columns and their field ids) and cuts the fragments into tasks.
``execute_add_columns`` computes the new columns of each fragment of a task and writes
them as one column-only data file per fragment, row-aligned with it, under
``data/{write_id}/`` (:func:`fermion.table.column_values.write_column_file`, the writer
``Dataset.add_columns`` uses). ``commit_add_columns`` commits every result as one
:class:`~fermion.table.operations.AddColumns`; a concurrent commit that needs a re-plan
(an append, a merge, a compaction, a schema change) raises ``CommitConflictError``, and
``abort_add_columns`` removes the files (the caller plans again on the newer version).

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table import dataset, write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"f": [1.0, 2.0, 3.0]}), uri, max_rows_per_file=2)
    >>> plan = plan_add_columns_tasks(uri, {"g": "f * 10"})
    >>> len(plan.tasks)
    2
    >>> summary = commit_add_columns(plan, [execute_add_columns(plan, t) for t in plan.tasks])
    >>> summary.version, dataset(uri).to_table()["g"].to_pylist()
    (2, [10.0, 20.0, 30.0])
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from fermion.errors import InvalidArgumentError
from fermion.table.codec import fragment_to_proto, fragments_from_messages
from fermion.table.column_values import (
    compute_fragment_columns,
    expression_columns,
    new_columns_schema,
    write_column_file,
)
from fermion.table.commit import CommitConfig, commit_operation
from fermion.table.domain import Fragment
from fermion.table.manifest_store import ManifestStore
from fermion.table.operations import AddColumns
from fermion.table.ref import TableRef
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
    REF,
    SCHEMA,
    Codec,
    CommitSummary,
    JsonMixin,
    OnTable,
    tasks_codec,
)
from fermion.table.versions import schema_of

__all__ = [
    "AddColumnsPlan",
    "AddColumnsResult",
    "AddColumnsTask",
    "abort_add_columns",
    "commit_add_columns",
    "execute_add_columns",
    "plan_add_columns_tasks",
]


@dataclass(frozen=True)
class AddColumnsTask(JsonMixin):
    """Fragments whose new columns one worker computes and writes."""

    task_id: str
    fragments: tuple[Fragment, ...]

    _codecs: ClassVar[dict[str, Codec]] = {"fragments": FRAGMENTS}


@dataclass(frozen=True)
class AddColumnsPlan(OnTable, JsonMixin):
    """New columns fixed on the driver; hand it to every worker.

    Attributes:
        uri: The table location.
        write_id: Names the directory ``data/{write_id}/`` of the new files.
        read_version: The version planned on.
        schema: The table schema at ``read_version``.
        columns: ``{name: SQL expression over the existing columns}``.
        new_schema: The schema after the commit (the new columns' field ids included).
        tasks: One entry per worker task.
    """

    table: TableRef
    write_id: str
    read_version: int
    schema: TableSchema
    columns: dict[str, str]
    new_schema: TableSchema
    tasks: tuple[AddColumnsTask, ...]

    @property
    def prefix(self) -> str:
        """Where the new files go, relative to the table root."""
        return f"data/{self.write_id}"

    @property
    def part(self) -> TableSchema:
        """The new columns alone with their field ids (their files' schema)."""
        _, part = new_columns_schema(self.schema, self._new_arrow())
        return part

    def _new_arrow(self) -> Any:
        names = [n for n in self.new_schema.arrow.names if n not in self.schema.arrow.names]
        return self.new_schema.arrow.empty_table().select(names).schema

    _codecs: ClassVar[dict[str, Codec]] = {
        "table": REF,
        "schema": SCHEMA,
        "new_schema": SCHEMA,
        "tasks": tasks_codec(AddColumnsTask),
    }


@dataclass(frozen=True)
class AddColumnsResult(JsonMixin):
    """What one worker wrote: per fragment, its id and the new column file."""

    task_id: str
    write_id: str
    fragments: tuple[Fragment, ...] = ()

    @property
    def bytes_written(self) -> int:
        """Bytes of the new data files."""
        return sum(d.size_bytes for f in self.fragments for d in f.files)

    _codecs: ClassVar[dict[str, Codec]] = {"fragments": FRAGMENTS}


def plan_add_columns_tasks(
    uri: Any,
    columns: Mapping[str, str],
    *,
    fragments_per_task: int = 1,
    write_id: str | None = None,
    manifest_store: ManifestStore | None = None,
) -> AddColumnsPlan:
    """Plan new columns ``{name: SQL expression}`` for every fragment (driver side).

    Args:
        uri: Table location.
        columns: The new columns, each a SQL expression over the existing columns
            (:func:`fermion.table.predicate.parse_expression`).
        fragments_per_task: Fragments one task computes.
        write_id: Name of the write (default: a random one).
        manifest_store: The table's external manifest store, if it uses one.

    Raises:
        DatasetError: No table at ``uri``.
        InvalidArgumentError: An expression that does not parse or evaluate, an existing
            column name, no column, ``fragments_per_task`` below 1.
        ColumnNotFoundError: An expression names an unknown column.
    """
    if fragments_per_task < 1:
        raise InvalidArgumentError(f"fragments_per_task must be >= 1, got {fragments_per_task}")
    ref, storage, manifest = open_planned(uri, manifest_store=manifest_store)
    schema = schema_of(manifest)
    new = expression_columns(schema, columns)
    full, _ = new_columns_schema(schema, new)
    groups = fragment_groups(fragments_from_messages(manifest.fragments), fragments_per_task)
    return AddColumnsPlan(
        table=ref,
        write_id=write_id or uuid.uuid4().hex,
        read_version=manifest.version,
        schema=schema,
        columns=dict(columns),
        new_schema=full,
        tasks=tuple(AddColumnsTask(str(i), group) for i, group in enumerate(groups)),
    )


def execute_add_columns(plan: AddColumnsPlan, task: AddColumnsTask) -> AddColumnsResult:
    """Compute and write the new columns of the task's fragments (any process; commits
    nothing).

    Raises:
        InvalidArgumentError: An expression fails on the fragment's rows.
        SchemaMismatchError: The values do not have the planned types.
    """
    storage = plan.table.open()
    part = plan.part
    entries = []
    for info in task.fragments:
        values = compute_fragment_columns(storage, plan.schema, info, plan.columns)
        if not values.schema.equals(part.arrow):
            values = values.cast(part.arrow)
        entries.append(write_column_file(storage, part, info, values, prefix=plan.prefix))
    return AddColumnsResult(task.task_id, plan.write_id, tuple(entries))


def commit_add_columns(
    plan: AddColumnsPlan,
    results: Sequence[AddColumnsResult],
    *,
    config: CommitConfig | None = None,
    properties: Mapping[str, str] | None = None,
    manifest_store: ManifestStore | None = None,
) -> CommitSummary:
    """Commit every result of ``plan`` as one ``AddColumns`` version (driver side).

    Raises:
        InvalidArgumentError: A result of another write, or a planned fragment without
            a result (its new values would be missing).
        CommitConflictError: A concurrent commit needs a re-plan, or conflicts outlasted
            the attempts (abort, then plan again).
    """
    for each in results:
        if each.write_id != plan.write_id:
            raise InvalidArgumentError(
                f"result of task {each.task_id} belongs to write {each.write_id}, "
                f"not {plan.write_id}"
            )
    entries = [fragment_to_proto(f) for r in results for f in r.fragments]
    planned = {f.id for t in plan.tasks for f in t.fragments if f.id is not None}
    missing = sorted(planned - {e.id for e in entries})
    if missing:
        raise InvalidArgumentError(f"add_columns: no result for fragments {missing[:10]}")
    storage = open_ref(plan.table, manifest_store)[1]
    result = commit_operation(
        storage,
        AddColumns(plan.new_schema, tuple(entries)),
        read_version=plan.read_version,
        config=config,
        properties=properties,
    )
    return summarise(result, plan.read_version, committed=result.committed)


def abort_add_columns(
    plan: AddColumnsPlan,
    results: Sequence[AddColumnsResult | None] = (),
    *,
    manifest_store: ManifestStore | None = None,
) -> int:
    """Remove every file of the write that no version references; returns how many
    (those of workers that failed before reporting are found by the write id)."""
    storage = open_ref(plan.table, manifest_store)[1]
    paths = {d.path for r in results if r is not None for f in r.fragments for d in f.files}
    paths.update(storage.list_tree(plan.prefix))
    return remove_unreferenced(storage, paths)
