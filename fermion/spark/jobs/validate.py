"""The ``validate`` job: check one version of a table against a quality suite.

Reads the version (latest unless ``version`` is given) through the Fermion Spark data
source, runs the suite's expectations with great_expectations and the table's batch
integrity check (:mod:`fermion.quality`), and keeps the results as JSON and data docs under
``quality_dir``. It commits nothing. With ``fail_on_error`` a failed check fails the job
(exit 1) with a ``QualityCheckError`` naming the failed checks and where the results are.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fermion.quality import load_suite, validate_dataframe
from fermion.spark.jobs.config import ValidateConfig
from fermion.spark.jobs.runner import JobContext, JobResult
from fermion.table import dataset

__all__ = ["run_name", "validate"]


def run_name(suite: str, what: str) -> str:
    """Names a quality run in file names and data docs: suite, what was checked, when.

    Example:
        >>> run_name("conf/quality/features.yaml", "v3").startswith("features-v3-")
        True
    """
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{Path(suite).stem}-{what}-{stamp}"


def validate(context: JobContext, config: ValidateConfig) -> JobResult:
    """Run the suite on the table (see the module docstring)."""
    from fermion.spark import read_dataset

    table = dataset(config.ref, config.version)  # pins "latest" once
    context.log.info("validate %s version %d with %s", config.table, table.version, config.suite)
    columns = load_suite(config.suite).columns or None  # the data source reads only these
    report = validate_dataframe(
        read_dataset(context.spark, config.ref, columns=columns, version=table.version),
        config.suite,
        table_uri=config.table,
        table_version=table.version,
        batch_id_column=config.batch_id_column,
        output_dir=config.quality_dir,
        run_name=run_name(config.suite, f"v{table.version}"),
    )
    context.log.info(
        "%d checks, %d failed; results %s, data docs %s",
        len(report.results), len(report.failed), report.json_path, report.docs_path,
    )  # fmt: skip
    if config.fail_on_error:
        report.raise_for_failure()
    return JobResult(read_version=table.version, rows_in=table.count_rows(), extra=report.summary())
