"""A distributed ``replace_where``: workers write and check the new rows, the driver commits.

``plan_write(..., mode="append")`` fixes the write (the new rows must have the table's
columns and types). Each worker checks its rows with :func:`check_replace_rows` (every
new row must match the predicate, or the worker fails and nothing is committed) and writes
them with ``execute_write``. :func:`commit_replace_where` then commits one
:class:`~fermion.table.operations.Update` on the driver: the rows matching the predicate
get deletion files and the written fragments are added, re-planned on the newer version
after a conflicting commit (:func:`fermion.table.update.plan_rows`).

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table import dataset, write_dataset
    >>> from fermion.table.tasks import execute_write, plan_write
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"ds": ["a", "b"], "v": [1, 2]}), uri)
    >>> new = pa.table({"ds": ["b", "b"], "v": [20, 21]})
    >>> plan = plan_write(uri, new.schema, mode="append")
    >>> check_replace_rows(plan, "ds = 'b'")(new)
    >>> summary = commit_replace_where(plan, [execute_write(plan, new)], "ds = 'b'")
    >>> summary.version, sorted(dataset(uri).to_table()["v"].to_pylist())
    (2, [1, 20, 21])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.table.commit import CommitConfig
from fermion.table.predicate import parse_predicate
from fermion.table.row_edits import commit_planned
from fermion.table.storage import TableStorage
from fermion.table.tasks.common import summarise
from fermion.table.tasks.model import CommitSummary
from fermion.table.tasks.write import WritePlan, WriteResult
from fermion.table.update import check_rows_match, plan_rows
from fermion.table.versions import load_table_version

__all__ = ["check_replace_rows", "commit_replace_where"]


def _checked_plan(plan: WritePlan, where: str) -> None:
    if plan.mode != "append" or plan.read_version == 0:
        raise DatasetError(
            f"{plan.uri}: a replace_where write is planned with mode='append' on an existing "
            f"table (got mode {plan.mode!r} at version {plan.read_version})"
        )
    if not isinstance(where, str) or not where.strip():
        raise InvalidArgumentError("replace_where needs a SQL condition")


def check_replace_rows(plan: WritePlan, where: str) -> Callable[[pa.RecordBatch | pa.Table], None]:
    """A check that refuses new rows not matching ``where`` (parsed once, here).

    Raises:
        DatasetError: ``plan`` is not an append to an existing table.
        InvalidArgumentError: The condition does not parse (here), or a row does not
            match it (when the check is called).
        ColumnNotFoundError: The condition names a column the table does not have.
    """
    _checked_plan(plan, where)
    predicate = parse_predicate(where, plan.schema.arrow)

    def check(rows: pa.RecordBatch | pa.Table) -> None:
        check_rows_match(rows, predicate, where)

    return check


def commit_replace_where(
    plan: WritePlan,
    results: Sequence[WriteResult],
    where: str,
    *,
    config: CommitConfig | None = None,
    properties: Mapping[str, str] | None = None,
) -> CommitSummary:
    """Replace the rows matching ``where`` by the fragments of ``results``, as one version.

    Args:
        plan: The append plan the results were written for.
        results: Every worker's result (each one checked with :func:`check_replace_rows`).
        where: The condition, SQL text.
        config: Commit attempts.
        properties: Informational entries of the new version's summary.

    Raises:
        InvalidArgumentError: A result of another write, or a bad condition.
        CommitConflictError: Conflicts outlasted the commit attempts.
    """
    _checked_plan(plan, where)
    for each in results:
        if each.write_id != plan.write_id:
            raise InvalidArgumentError(
                f"result of task {each.task_id} belongs to write {each.write_id}, "
                f"not {plan.write_id}"
            )
    storage = TableStorage(plan.uri)
    read = load_table_version(storage, plan.read_version)
    fragments = tuple(f for r in results for f in r.fragments)
    result, _ = commit_planned(
        storage,
        read,
        lambda v: plan_rows(storage, v, where, None, fragments, plan.max_rows_per_file),
        config=config,
        properties=properties,
    )
    if result is None:
        return CommitSummary(False, plan.read_version, plan.read_version, operation="update")
    return summarise(result, plan.read_version, committed=result.committed)
