"""The ``backfill_columns`` job: add columns computed from the existing ones, per fragment.

plan (driver: :func:`~fermion.table.tasks.plan_add_columns_tasks` checks the SQL
expressions and fixes the new columns' types and field ids) → one Spark task per group of
fragments (:func:`~fermion.table.tasks.execute_add_columns` reads only the columns the
expressions name and writes one column-only data file per fragment, row-aligned with it)
→ one ``AddColumns`` commit on the driver. No existing data file is rewritten.

A concurrent commit that adds rows the new columns were not computed for (an append, a
merge, a compaction) makes the commit fail with ``CommitConflictError``: the job removes
its files and plans again on the newer version, up to :data:`REPLAN_ROUNDS` times. A
re-run after a success finds every column present and commits nothing; a table that has
some of the columns already is an error.

Example:
    >>> from fermion.spark.jobs.backfill_columns import REPLAN_ROUNDS
    >>> REPLAN_ROUNDS
    3
"""

from __future__ import annotations

import functools

from fermion.errors import CommitConflictError, InvalidArgumentError
from fermion.spark.jobs.config import BackfillColumnsConfig
from fermion.spark.jobs.maintenance import REPLAN_ROUNDS, run_tasks
from fermion.spark.jobs.runner import JobContext, JobResult
from fermion.table.commit import CommitConfig
from fermion.table.tasks import (
    AddColumnsResult,
    abort_add_columns,
    commit_add_columns,
    execute_add_columns,
    open_version,
    plan_add_columns_tasks,
)
from fermion.table.versions import schema_of

__all__ = ["REPLAN_ROUNDS", "backfill_columns"]


def _present(config: BackfillColumnsConfig) -> tuple[list[str], int]:
    """The configured columns the table has already, and its latest version."""
    _, manifest = open_version(config.ref)
    names = set(schema_of(manifest).arrow.names)
    return [c for c in config.columns if c in names], manifest.version


def backfill_columns(context: JobContext, config: BackfillColumnsConfig) -> JobResult:
    """Run the backfill (see the module docstring); it commits as its last step.

    Raises:
        InvalidArgumentError: Some (not all) of the columns exist already, or an
            expression does not parse or evaluate.
        ColumnNotFoundError: An expression names an unknown column.
        CommitConflictError: Concurrent commits outlasted the re-plans.
    """
    present, version = _present(config)
    if present and len(present) == len(config.columns):
        context.log.info("the table has the columns %s already: nothing to do", present)
        return JobResult(
            read_version=version,
            extra={"skipped": True, "reason": f"columns {present} exist already"},
        )
    if present:
        raise InvalidArgumentError(
            f"backfill_columns: the table has some of the columns already: {present}"
        )
    commit = CommitConfig(max_retries=config.max_retries)
    first_read: int | None = None
    for round_number in range(1, REPLAN_ROUNDS + 2):
        plan = plan_add_columns_tasks(
            config.ref, config.columns, fragments_per_task=config.fragments_per_task
        )
        first_read = plan.read_version if first_read is None else first_read
        fragments = sum(len(t.fragments) for t in plan.tasks)
        context.log.info(
            "round %d: columns %s for %d fragments in %d tasks at version %d, write %s",
            round_number, sorted(config.columns), fragments, len(plan.tasks),
            plan.read_version, plan.write_id,
        )  # fmt: skip
        results: list[AddColumnsResult] = []
        try:
            execute = functools.partial(execute_add_columns, plan)
            results = run_tasks(context.spark, plan.tasks, execute, config.partitions)
            summary = commit_add_columns(
                plan, results, config=commit,
                properties={"fermion.job": "backfill_columns"},
            )  # fmt: skip
        except CommitConflictError as error:
            removed = abort_add_columns(plan, results)
            if round_number > REPLAN_ROUNDS:
                raise
            context.log.info("%s; removed %d files, planning again", error, removed)
            continue
        except BaseException:
            removed = abort_add_columns(plan, results)
            context.log.error("backfill failed: removed %d files", removed)
            raise
        context.log.info("committed version %d", summary.version)
        rows = sum(f.physical_rows for r in results for f in r.fragments)
        return JobResult(
            read_version=first_read,
            committed_version=summary.version,
            rows_in=rows,
            rows_out=rows,
            files_in=fragments,
            files_out=sum(len(f.files) for r in results for f in r.fragments),
            retries=max(0, summary.attempts - 1),
            extra={
                "skipped": False,
                "columns": sorted(config.columns),
                "bytes_written": sum(r.bytes_written for r in results),
                "rounds": round_number,
                "write_id": plan.write_id,
            },
        )
    raise AssertionError("unreachable: the last round raises or returns")  # pragma: no cover
