"""Every table operation as plan (driver) → execute (any process) → commit (driver).

This is the seam through which Spark (or any other engine) distributes table work;
docs/ARCHITECTURE.md describes it. Plans, tasks and results are frozen dataclasses that
pickle and have a JSON form; fragments travel as :class:`~fermion.table.domain.Fragment`
(``FragmentInfo``, its older name, is a deprecated subclass with the old methods).

The package also owns the write and commit semantics: :func:`resolve_write_schema` (the
schema a write uses), :func:`write_committed` (did it commit?), :func:`abort_write` and
:func:`abort_rewrite` (remove what a failed one left, never a file a version references)
and :func:`input_recorded` (was an input loaded?).

Example:
    >>> import tempfile, pyarrow as pa
    >>> uri = tempfile.mkdtemp()
    >>> plan = plan_write(uri, pa.schema([("x", pa.int64())]))
    >>> result = execute_write(plan, pa.table({"x": [1, 2]}))
    >>> commit_write(plan, [result]).version
    1
"""

from __future__ import annotations

from fermion.table.tasks.columns import (
    AddColumnsPlan,
    AddColumnsResult,
    AddColumnsTask,
    abort_add_columns,
    commit_add_columns,
    execute_add_columns,
    plan_add_columns_tasks,
)
from fermion.table.tasks.common import open_table as open_table  # deprecated name
from fermion.table.tasks.common import open_version
from fermion.table.tasks.delete import (
    DeletePlan,
    DeleteResult,
    DeleteTask,
    commit_delete,
    delete_now,
    execute_delete,
    plan_delete,
)
from fermion.table.tasks.index import (
    STATS_INDEX_NAME,
    IndexPlan,
    IndexResult,
    IndexTask,
    commit_index,
    execute_index,
    plan_index,
)
from fermion.table.tasks.model import CommitSummary, DataFileInfo, FragmentInfo
from fermion.table.tasks.replace import check_replace_rows, commit_replace_where
from fermion.table.tasks.rewrite import (
    MATERIALIZE_THRESHOLD_DEFAULT,
    RewritePlan,
    RewriteResult,
    RewriteTask,
    abort_rewrite,
    commit_rewrite,
    execute_rewrite,
    plan_compaction,
    plan_materialization,
    unit_live_rows,
)
from fermion.table.tasks.upsert import (
    UpsertMatch,
    UpsertPlan,
    UpsertTask,
    abort_upsert,
    commit_upsert,
    execute_upsert_match,
    plan_upsert,
)
from fermion.table.tasks.write import (
    BATCH_ID_COLUMN_KEY,
    WritePlan,
    WriteResult,
    abort_write,
    commit_write,
    default_batch_column,
    execute_write,
    input_recorded,
    plan_properties,
    plan_write,
    resolve_write_schema,
    write_committed,
)

__all__ = [
    "AddColumnsPlan",
    "AddColumnsResult",
    "AddColumnsTask",
    "BATCH_ID_COLUMN_KEY",
    "MATERIALIZE_THRESHOLD_DEFAULT",
    "STATS_INDEX_NAME",
    "CommitSummary",
    "DataFileInfo",
    "DeletePlan",
    "DeleteResult",
    "DeleteTask",
    "FragmentInfo",
    "IndexPlan",
    "IndexResult",
    "IndexTask",
    "RewritePlan",
    "RewriteResult",
    "RewriteTask",
    "UpsertMatch",
    "UpsertPlan",
    "UpsertTask",
    "WritePlan",
    "WriteResult",
    "abort_add_columns",
    "abort_rewrite",
    "abort_upsert",
    "abort_write",
    "check_replace_rows",
    "commit_add_columns",
    "commit_delete",
    "commit_index",
    "commit_replace_where",
    "commit_rewrite",
    "commit_upsert",
    "commit_write",
    "default_batch_column",
    "delete_now",
    "execute_add_columns",
    "execute_delete",
    "execute_index",
    "execute_rewrite",
    "execute_upsert_match",
    "execute_write",
    "input_recorded",
    "open_version",
    "plan_add_columns_tasks",
    "plan_compaction",
    "plan_delete",
    "plan_index",
    "plan_materialization",
    "plan_properties",
    "plan_upsert",
    "plan_write",
    "resolve_write_schema",
    "unit_live_rows",
    "write_committed",
]
