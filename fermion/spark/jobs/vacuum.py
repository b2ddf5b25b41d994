"""The ``vacuum`` job: remove old versions and orphan files (driver only, no Spark work).

Example:
    >>> import tempfile, pyarrow as pa, fermion
    >>> from fermion.spark.jobs.config import VacuumConfig
    >>> from fermion.spark.jobs.runner import JobContext
    >>> uri = tempfile.mkdtemp()
    >>> _ = fermion.write_dataset(pa.table({"x": [1]}), uri)
    >>> _ = fermion.write_dataset(pa.table({"x": [2]}), uri, mode="overwrite")
    >>> result = vacuum(JobContext("vacuum", {}), VacuumConfig(table=uri, retention_hours=0))
    >>> result.extra["versions_removed"], result.read_version
    (1, 2)
"""

from __future__ import annotations

from datetime import timedelta

from fermion.spark.jobs.config import VacuumConfig
from fermion.spark.jobs.runner import JobContext, JobResult
from fermion.table import dataset

__all__ = ["vacuum"]


def vacuum(context: JobContext, config: VacuumConfig) -> JobResult:
    """Delete versions older than ``retention_hours`` and orphans older than
    ``orphan_retention_hours``; the latest version (and tagged ones) always stay.

    The table's version does not change: ``committed_version`` is ``None``.
    """
    ds = dataset(config.ref)
    orphans = config.orphan_retention_hours
    context.log.info(
        "vacuum %s at version %d: versions older than %s h, orphans older than %s h",
        config.table, ds.version, config.retention_hours,
        config.retention_hours if orphans is None else orphans,
    )  # fmt: skip
    removed = ds.cleanup_old_versions(
        timedelta(hours=config.retention_hours),
        keep_tags=config.keep_tags,
        orphan_older_than=None if orphans is None else timedelta(hours=orphans),
    )
    context.log.info("removed %s", removed)
    return JobResult(
        read_version=ds.version,
        files_in=0,
        files_out=0,
        extra={**removed, "versions_kept": len(ds.storage.versions())},
    )
