"""Maintenance of a :class:`~fermion.table.dataset.Dataset` run in this process: compaction
(:func:`compact_files`) and the statistics rebuild (:func:`rebuild_stats`), each through
the plan -> execute -> commit tasks of :mod:`fermion.table.tasks`
(:meth:`Dataset.compact_files` and :meth:`Dataset.rebuild_stats` delegate here; version
cleanup is :mod:`fermion.table.maintenance`, scalar indices :mod:`fermion.table.indices`).

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table.dataset import write_dataset
    >>> ds = write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp(), max_rows_per_file=1)
    >>> summary = rebuild_stats(ds.storage, None, {"version": ds.version}, {})
    >>> summary.committed, summary.version
    (True, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fermion.table.storage import TableStorage
from fermion.table.tasks import (
    CommitSummary,
    abort_rewrite,
    commit_index,
    commit_rewrite,
    execute_index,
    execute_rewrite,
    plan_compaction,
    plan_index,
)

__all__ = ["compact_files", "rebuild_stats"]


def compact_files(
    storage: TableStorage,
    *,
    target_rows_per_fragment: int,
    materialize_deletions_threshold: float,
    at_version: Callable[[], dict[str, Any]],
    options: dict[str, Any],
    follow: Callable[[CommitSummary], None],
    follow_latest: Callable[[], None],
) -> dict[str, int]:
    """:meth:`Dataset.compact_files`: plan, execute and commit compaction rounds, each on
    the version ``at_version()`` names (``follow`` moves the dataset to what a round
    committed, ``follow_latest`` to the latest version before a round re-plans groups a
    concurrent commit made stale); ``options`` are the commit options.

    Returns:
        ``fragments_removed``, ``fragments_added``, ``rows_rewritten``.
    """
    totals = {"fragments_removed": 0, "fragments_added": 0, "rows_rewritten": 0}
    rounds = options["config"].max_retries
    for _ in range(rounds):
        plan = plan_compaction(
            storage.uri,
            target_rows_per_fragment=target_rows_per_fragment,
            materialize_deletions_threshold=materialize_deletions_threshold,
            **at_version(),
        )
        if not plan.tasks:
            break
        try:
            results = [execute_rewrite(t) for t in plan.tasks]
            summary = commit_rewrite(plan, results, **options)
        except BaseException:
            abort_rewrite(plan, manifest_store=storage.manifest_store)
            raise
        follow(summary)
        if summary.committed:
            totals["fragments_removed"] += summary.fragments_removed
            totals["fragments_added"] += summary.fragments_added
            totals["rows_rewritten"] += summary.rows_added
        if not summary.skipped_tasks:
            break
        follow_latest()
    return totals


def rebuild_stats(
    storage: TableStorage,
    columns: Sequence[str] | None,
    at_version: dict[str, Any],
    options: dict[str, Any],
) -> CommitSummary:
    """:meth:`Dataset.rebuild_stats`: plan the statistics rebuild on the version
    ``at_version`` names, execute it here and commit it with ``options``."""
    plan = plan_index(storage.uri, columns=columns, only_stale=False, **at_version)
    return commit_index(plan, [execute_index(t) for t in plan.tasks], **options)
