"""The ``ingest`` job: append a source to a table, batch-aligned, at most once per input.

plan (driver) → ``execute_write`` per Spark task (rows of one batch id in one task, sorted,
so each batch is one ``append_batch``) → ``commit_write`` (driver, retries). The input is
recorded in the commit as the table configuration key ``fermion.input.<digest>``: a re-run
of the same input finds the key (:func:`~fermion.table.tasks.input_recorded`) and commits
nothing, and two concurrent runs of it cannot both commit (the second is told it was
ingested concurrently).

Replace mode (``replace_where``, a corrected day): the input replaces the rows matching
the condition in one version (:func:`~fermion.table.tasks.commit_replace_where`). Spark's
reader feeds the tasks, each task checks that every row matches the condition before it
is written (:func:`~fermion.table.tasks.check_replace_rows`), and a row that does not is
an ``InvalidArgumentError`` with nothing committed. A replace is not recorded as an input:
running it again replaces the same rows by the same data.

Example:
    >>> input_key_record("db.events", "dt=2026-11-23").startswith(INPUT_KEY_PREFIX)
    True
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from fermion.errors import IncompatibleTransactionError
from fermion.quality import validate_dataframe
from fermion.spark.jobs.config import IngestConfig, MergeConfig
from fermion.spark.jobs.distributed import (
    arrow_schema_of,
    execute_write_tasks,
    input_identity,
    write_or_abort,
)
from fermion.spark.jobs.file_tasks import execute_file_tasks, parquet_tasks
from fermion.spark.jobs.runner import JobContext, JobResult
from fermion.spark.jobs.validate import run_name
from fermion.table.commit import CommitConfig
from fermion.table.operations import INPUT_KEY_PREFIX
from fermion.table.tasks import (
    CommitSummary,
    WriteResult,
    check_replace_rows,
    commit_replace_where,
    commit_write,
    input_recorded,
    plan_write,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ingest", "input_key_record", "read_source"]


def read_source(spark: SparkSession, config: IngestConfig | MergeConfig) -> DataFrame:
    """The source as a DataFrame (a path in ``source_format``, or a catalog table)."""
    if config.source_format == "table":
        return spark.table(config.source)
    reader = spark.read.options(**config.source_options)
    return reader.format(config.source_format).load(config.source)


def input_key_record(source: str, input_key: str) -> str:
    """The table configuration key that records an input named by ``input_key``.

    Example:
        >>> input_key_record("db.events", "dt=2026-11-23")
        'fermion.input.515a61853548238848d5c6973cb615b5'
    """
    digest = hashlib.sha256(f"{source}\0{input_key}".encode()).hexdigest()
    return INPUT_KEY_PREFIX + digest[:32]


def _input_record(
    spark: SparkSession, df: DataFrame, config: IngestConfig
) -> tuple[str, dict[str, object]]:
    """The table configuration key recording this input, and what it records."""
    if config.input_key is not None:
        key = input_key_record(config.source, config.input_key)
        return key, {"source": config.source, "input_key": config.input_key}
    digest, paths = input_identity(spark, df)
    return INPUT_KEY_PREFIX + digest, {"source": config.source, "files": len(paths)}


def _check_input(context: JobContext, df: DataFrame, config: IngestConfig) -> dict[str, object]:
    """Run ``config.suite`` on the input; a failed check raises before anything is written."""
    if config.suite is None:
        return {}
    report = validate_dataframe(
        df,
        config.suite,
        output_dir=config.quality_dir,
        run_name=run_name(config.suite, "ingest"),
    )
    context.log.info(
        "input quality: %d checks, %d failed; results %s, data docs %s",
        len(report.results), len(report.failed), report.json_path, report.docs_path,
    )  # fmt: skip
    report.raise_for_failure()
    return {"quality": report.summary()}


def ingest(context: JobContext, config: IngestConfig) -> JobResult:
    """Run the ingest (see the module docstring); it commits as its last step."""
    spark = context.spark
    df = read_source(spark, config)
    if config.replace_where is not None:
        return _replace(context, df, config)
    key, record = _input_record(spark, df, config)
    files_in = int(record.get("files", 0))  # type: ignore[call-overload]
    done = input_recorded(config.ref, key)
    if done is not None:
        context.log.info("input already ingested (%s at version %d): nothing to do", key, done)
        return JobResult(
            read_version=done, files_in=files_in,
            extra={"skipped": True, "reason": f"input already ingested (version {done})",
                   "input": key},
        )  # fmt: skip
    quality = _check_input(context, df, config)
    plan = plan_write(
        config.ref,
        arrow_schema_of(df),
        mode="append",
        max_rows_per_file=config.max_rows_per_file,
        batch_id_column=config.batch_id_column,
        write_properties=config.write_properties or None,
    )
    files = None
    if config.source_format == "parquet":
        files = parquet_tasks(
            df, config.file_reader, context.log, options=config.source_options,
            batch_column=config.batch_id_column, partitions=config.partitions,
        )  # fmt: skip
    context.log.info(
        "ingest %s (%s) into %s at version %d, write %s",
        config.source, config.source_format, config.table, plan.read_version, plan.write_id,
    )  # fmt: skip

    def work(results: list[WriteResult]) -> CommitSummary | None:
        if files is not None:
            results.extend(execute_file_tasks(spark, plan, files))
        else:
            results.extend(execute_write_tasks(df, plan, partitions=config.partitions))
        rows = sum(r.rows for r in results)
        context.log.info("%d tasks wrote %d rows", len(results), rows)
        if not results:
            return None
        return commit_write(
            plan,
            results,
            config=CommitConfig(max_retries=config.max_retries),
            table_config={key: json.dumps(record, sort_keys=True)},
            properties={"fermion.job": "ingest", "fermion.source": config.source},
        )

    try:
        summary = write_or_abort(plan, work, context.log)
    except IncompatibleTransactionError:
        done = input_recorded(config.ref, key)
        if done is None:
            raise
        context.log.info("input ingested concurrently (version %d): nothing committed", done)
        return JobResult(
            read_version=plan.read_version, files_in=files_in,
            extra={"skipped": True, "reason": f"input ingested concurrently (version {done})",
                   "input": key},
        )  # fmt: skip
    if summary is None:
        context.log.info("the source has no rows: nothing committed")
        return JobResult(
            read_version=plan.read_version, files_in=files_in,
            extra={"skipped": True, "reason": "the source has no rows", "input": key},
        )  # fmt: skip
    context.log.info("committed version %d", summary.version)
    return JobResult(
        read_version=plan.read_version,
        committed_version=summary.version if summary.committed else None,
        rows_in=summary.rows_added,
        rows_out=summary.rows_added,
        files_in=files_in,
        files_out=summary.fragments_added,
        retries=max(0, summary.attempts - 1),
        extra={
            "skipped": False,
            "input": key,
            "write_id": plan.write_id,
            "reader": "spark" if files is None else "pyarrow",
            **quality,
        },
    )


def _replace(context: JobContext, df: DataFrame, config: IngestConfig) -> JobResult:
    """Replace mode: the input replaces the rows matching ``config.replace_where``."""
    assert config.replace_where is not None
    where = config.replace_where
    quality = _check_input(context, df, config)
    plan = plan_write(
        config.ref, arrow_schema_of(df), mode="append",
        max_rows_per_file=config.max_rows_per_file, batch_id_column=config.batch_id_column,
    )  # fmt: skip
    check = check_replace_rows(plan, where)  # parses the condition before any task runs
    context.log.info(
        "replace the rows of %s where %s by %s (%s) at version %d, write %s",
        config.table, where, config.source, config.source_format, plan.read_version,
        plan.write_id,
    )  # fmt: skip

    def work(results: list[WriteResult]) -> CommitSummary:
        results.extend(
            execute_write_tasks(
                df, plan, partitions=config.partitions, check=check, target=plan.schema.arrow
            )
        )
        context.log.info("%d tasks wrote %d rows", len(results), sum(r.rows for r in results))
        return commit_replace_where(
            plan, results, where,
            config=CommitConfig(max_retries=config.max_retries),
            properties={"fermion.job": "ingest", "fermion.source": config.source,
                        "fermion.replace_where": where},
        )  # fmt: skip

    summary = write_or_abort(plan, work, context.log)
    if not summary.committed:
        context.log.info("no row matched and the input is empty: nothing committed")
    else:
        context.log.info("committed version %d", summary.version)
    return JobResult(
        read_version=plan.read_version,
        committed_version=summary.version if summary.committed else None,
        rows_in=summary.rows_added,
        rows_out=summary.rows_added,
        files_out=summary.fragments_added,
        retries=max(0, summary.attempts - 1),
        extra={
            "skipped": not summary.committed,
            "replace_where": where,
            "rows_replaced": summary.rows_deleted + summary.rows_removed,
            "write_id": plan.write_id,
            **quality,
        },
    )
