"""Every table operation as plan (driver) → execute (any process) → commit (driver).

This is the seam through which Spark (or any other engine) distributes table work;
docs/ARCHITECTURE.md describes it. Plans, tasks and results are frozen dataclasses that
pickle and have a JSON form; fragments travel as :class:`FragmentInfo`.

Example:
    >>> import tempfile, pyarrow as pa
    >>> uri = tempfile.mkdtemp()
    >>> plan = plan_write(uri, pa.schema([("x", pa.int64())]))
    >>> result = execute_write(plan, pa.table({"x": [1, 2]}))
    >>> commit_write(plan, [result]).version
    1
"""

from __future__ import annotations

from fermion.table.tasks.model import CommitSummary, DataFileInfo, FragmentInfo
from fermion.table.tasks.write import (
    BATCH_ID_COLUMN_KEY,
    WritePlan,
    WriteResult,
    abort_write,
    commit_write,
    execute_write,
    plan_write,
)

__all__ = [
    "BATCH_ID_COLUMN_KEY",
    "CommitSummary",
    "DataFileInfo",
    "FragmentInfo",
    "WritePlan",
    "WriteResult",
    "abort_write",
    "commit_write",
    "execute_write",
    "plan_write",
]
