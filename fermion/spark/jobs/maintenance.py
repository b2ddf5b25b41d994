"""The maintenance jobs: compact, materialize_deletions, rebuild_index, delete.

Each is plan (driver) → execute (one Spark task per table task: the task objects are
pickled to the executors, the results pickled back) → commit (driver, with retries),
through :mod:`fermion.table.tasks`. Nothing here decides what to rewrite or how to commit:
the task API does, and the same code runs in-process behind ``Dataset.compact_files``.

Rewrites that a concurrent commit made stale (a delete or another rewrite touched their
fragments) are never committed: the commit drops them and the job plans them again on the
newer version, up to :data:`REPLAN_ROUNDS` times, then reports what it still skipped.

Example:
    >>> from fermion.spark.jobs.maintenance import REPLAN_ROUNDS
    >>> REPLAN_ROUNDS
    3
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from fermion.quality import QualityCheckError, check_rows_conserved
from fermion.spark.jobs.config import (
    CompactConfig,
    DeleteConfig,
    MaterializeDeletionsConfig,
    RebuildIndexConfig,
)
from fermion.spark.jobs.runner import JobContext, JobResult
from fermion.table.commit import CommitConfig
from fermion.table.indices.tasks import (
    commit_index_build,
    execute_index_build,
    plan_index_build,
)
from fermion.table.tasks import (
    CommitSummary,
    RewritePlan,
    RewriteResult,
    abort_rewrite,
    commit_delete,
    commit_index,
    commit_rewrite,
    execute_delete,
    execute_index,
    execute_rewrite,
    plan_compaction,
    plan_delete,
    plan_index,
    plan_materialization,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "REPLAN_ROUNDS",
    "build_scalar_indices",
    "compact",
    "delete",
    "materialize_deletions",
    "rebuild_index",
    "run_tasks",
]

#: How many times a rewrite job plans again the groups a concurrent commit made stale.
REPLAN_ROUNDS = 3

T = TypeVar("T")
R = TypeVar("R")


def run_tasks(
    spark: SparkSession, tasks: Sequence[T], execute: Callable[[T], R], partitions: int = 0
) -> list[R]:
    """``execute`` every task on the executors (one Spark task each unless ``partitions``
    caps the count); the results come back to the driver in task order."""
    if not tasks:
        return []
    slices = min(len(tasks), partitions) if partitions else len(tasks)
    return spark.sparkContext.parallelize(list(tasks), slices).map(execute).collect()


def _commit_config(max_retries: int) -> CommitConfig:
    return CommitConfig(max_retries=max_retries)


def _rewrite_rounds(
    context: JobContext,
    plan_again: Callable[[], RewritePlan],
    partitions: int,
    max_retries: int,
    job: str,
) -> JobResult:
    """Plan, rewrite on the executors, commit; plan again while groups were skipped."""
    first_read: int | None = None
    committed: int | None = None
    totals = {"rows": 0, "in": 0, "out": 0, "retries": 0, "groups": 0}
    skipped: tuple[str, ...] = ()
    for round_number in range(1, REPLAN_ROUNDS + 2):
        plan = plan_again()
        first_read = plan.read_version if first_read is None else first_read
        if not plan.tasks:
            context.log.info("round %d: nothing to rewrite at version %d", round_number,
                             plan.read_version)  # fmt: skip
            skipped = ()
            break
        context.log.info(
            "round %d: %d groups of %d fragments to rewrite at version %d",
            round_number, len(plan.tasks), sum(len(t.fragments) for t in plan.tasks),
            plan.read_version,
        )  # fmt: skip
        summary = _rewrite_or_abort(context, plan, partitions, max_retries, job)
        totals["retries"] += max(0, summary.attempts - 1)
        if summary.committed:
            committed = summary.version
            totals["rows"] += summary.rows_added
            totals["in"] += summary.fragments_removed
            totals["out"] += summary.fragments_added
            totals["groups"] += len(plan.tasks) - len(summary.skipped_tasks)
            context.log.info("committed version %d", summary.version)
        skipped = summary.skipped_tasks
        if not skipped:
            break
        context.log.info(
            "%d groups changed concurrently and were not committed; planning again",
            len(skipped),
        )
    return JobResult(
        read_version=first_read,
        committed_version=committed,
        rows_in=totals["rows"],
        rows_out=totals["rows"],
        files_in=totals["in"],
        files_out=totals["out"],
        retries=totals["retries"],
        extra={"groups_committed": totals["groups"], "groups_skipped": len(skipped)},
    )


def _rewrite_or_abort(
    context: JobContext, plan: RewritePlan, partitions: int, max_retries: int, job: str
) -> CommitSummary:
    """Rewrite, check that the new fragments hold exactly the live rows they replace, and
    commit; on failure remove the files this rewrite wrote (:func:`abort_rewrite`: never a
    file a version references, so a failure after the commit landed leaves them)."""
    results = run_tasks(context.spark, plan.tasks, execute_rewrite, partitions)
    _check_rows_conserved(context, plan, results, job)
    try:
        return commit_rewrite(
            plan, results, config=_commit_config(max_retries), properties={"fermion.job": job}
        )
    except BaseException:
        removed = abort_rewrite(plan, results)
        context.log.error("commit failed: removed %d rewritten files", removed)
        raise


def _check_rows_conserved(
    context: JobContext, plan: RewritePlan, results: Sequence[RewriteResult], job: str
) -> None:
    """Before the commit: the new fragments hold exactly the live rows they replace; if
    not, every file of this rewrite (``data/{write_id}/``) is removed and the job fails."""
    conserved = check_rows_conserved(plan, results)
    if conserved.success:
        context.log.info("rows conserved: %d live rows rewritten", conserved.rows_in)
        return
    removed = abort_rewrite(plan, results)
    context.log.error("rows not conserved: removed the %d rewritten files", removed)
    raise QualityCheckError(
        f"{job}: rewritten fragments do not hold the live rows they replace: "
        f"{conserved.mismatched[:3]}"
    )


def compact(context: JobContext, config: CompactConfig) -> JobResult:
    """Bin-pack small fragments into ones of about ``target_rows_per_fragment`` rows.

    A batch-mode table's small fragments are merged by batch id; the work is split into
    tasks of disjoint id ranges (up to ``partitions`` of them, else Spark's default
    parallelism), so the new fragments hold disjoint, increasing id ranges, every batch
    whole (docs/SPARK.md).
    """
    tasks = config.partitions or context.spark.sparkContext.defaultParallelism
    return _rewrite_rounds(
        context,
        lambda: plan_compaction(
            config.ref,
            target_rows_per_fragment=config.target_rows_per_fragment,
            max_tasks=max(1, tasks),
        ),
        config.partitions,
        config.max_retries,
        "compact",
    )


def materialize_deletions(context: JobContext, config: MaterializeDeletionsConfig) -> JobResult:
    """Rewrite fragments whose deleted fraction is above ``threshold`` without those rows."""
    threshold = min(config.threshold, 0.999999)  # 1.0 would select nothing anyway
    return _rewrite_rounds(
        context,
        lambda: plan_materialization(config.ref, threshold=threshold),
        config.partitions,
        config.max_retries,
        "materialize_deletions",
    )


def rebuild_index(context: JobContext, config: RebuildIndexConfig) -> JobResult:
    """Recompute the statistics of fragments whose statistics are missing or stale, then
    build or refresh each declared scalar index (:func:`build_scalar_indices`)."""
    plan = plan_index(config.ref, columns=config.columns or None, only_stale=True)
    fragments = sum(len(t.fragments) for t in plan.tasks)
    context.log.info("%d fragments need statistics at version %d", fragments, plan.read_version)
    committed: int | None = None
    extra: dict[str, object] = {"fragments_rebuilt": 0, "fragments_gone": 0}
    retries = 0
    if plan.tasks:
        results = run_tasks(context.spark, plan.tasks, execute_index, config.partitions)
        summary = commit_index(plan, results, config=_commit_config(config.max_retries))
        if summary.committed:
            context.log.info("committed version %d", summary.version)
            committed = summary.version
        retries = max(0, summary.attempts - 1)
        extra["fragments_rebuilt"] = fragments - len(summary.skipped_tasks)
        extra["fragments_gone"] = len(summary.skipped_tasks)
    built, index_version, index_retries = build_scalar_indices(context, config)
    extra["indices"] = built
    return JobResult(
        read_version=plan.read_version,
        committed_version=index_version if index_version is not None else committed,
        files_in=fragments,
        retries=retries + index_retries,
        extra=extra,
    )


def build_scalar_indices(
    context: JobContext, config: RebuildIndexConfig
) -> tuple[list[dict[str, object]], int | None, int]:
    """Build or refresh each index of ``config.indices``: the executors index the fragments
    it does not cover (all of them with ``rebuild``) into sorted runs, the driver merges
    them and commits one ``CreateIndex`` per index. Returns what each index got, the last
    committed version and the retries."""
    built: list[dict[str, object]] = []
    version: int | None = None
    retries = 0
    for spec in config.indices:
        kind = spec.get("kind", "BTREE").upper()
        plan = plan_index_build(
            config.ref, spec["column"], kind, name=spec.get("name") or None,
            rebuild=config.rebuild,
        )  # fmt: skip
        entry: dict[str, object] = {"name": plan.name, "kind": kind, "column": plan.column}
        indexed = sum(len(t.fragments) for t in plan.tasks)
        entry["fragments_indexed"] = indexed
        if plan.tasks:
            results = run_tasks(context.spark, plan.tasks, execute_index_build, config.partitions)
            result = commit_index_build(plan, results, config=_commit_config(config.max_retries))
            version = result.manifest.version
            retries += result.attempts - 1
            index = next(i for i in result.manifest.indices if i.name == plan.name)
            entry.update(committed_version=version, fragments_covered=len(index.fragment_ids),
                         entries=index.num_entries, bytes=index.size_bytes)  # fmt: skip
            context.log.info("index %s: %d fragments indexed, version %d", plan.name,
                             indexed, version)  # fmt: skip
        built.append(entry)
    return built, version, retries


def delete(context: JobContext, config: DeleteConfig) -> JobResult:
    """Mark the rows matching the SQL ``predicate`` deleted (deletion files only)."""
    plan = plan_delete(config.ref, config.predicate)
    context.log.info(
        "delete where %s: %d fragments may match at version %d",
        config.predicate, len(plan.tasks), plan.read_version,
    )  # fmt: skip
    results = run_tasks(context.spark, plan.tasks, execute_delete)
    summary = commit_delete(plan, results, config=_commit_config(config.max_retries))
    if summary.committed:
        context.log.info("committed version %d: %d rows deleted", summary.version,
                         summary.rows_deleted)  # fmt: skip
    return JobResult(
        read_version=plan.read_version,
        committed_version=summary.version if summary.committed else None,
        files_in=len(plan.tasks),
        retries=max(0, summary.attempts - 1),
        extra={
            "rows_deleted": summary.rows_deleted,
            "fragments_removed": summary.fragments_removed,
            "replanned": summary.replanned,
        },
    )
