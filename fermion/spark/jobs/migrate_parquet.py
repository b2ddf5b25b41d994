"""The ``migrate_parquet`` job: a Parquet dataset → a Fermion table, verified; or back.

Forward: Spark reads the dataset (Hive-style ``key=value`` directories become columns),
tasks write it with ``execute_write``, then — before anything is committed — Spark reads
the written files back and compares the row count and a per-column hash sum with the same
aggregate over the source (:func:`~fermion.spark.jobs.distributed.column_checksums`); a
mismatch aborts the write. The commit records the source (its files' paths, sizes and
modification times) as a ``fermion.input.*`` table configuration key, so the job is
resumable: after a crash before the commit a re-run migrates afresh (the crashed run's
files are orphans that ``vacuum`` removes); after the commit a re-run finds the key and
does nothing.

Reverse (``reverse: true``): the table's latest version is written as Parquet to
``target`` (Spark overwrites the directory) and checked the same way.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fermion.errors import DatasetError, FermionError
from fermion.spark.jobs.config import MigrateParquetConfig
from fermion.spark.jobs.distributed import (
    arrow_schema_of,
    column_checksums,
    execute_write_tasks,
    fragments_frame,
    input_identity,
    write_or_abort,
)
from fermion.spark.jobs.file_tasks import execute_file_tasks, parquet_tasks
from fermion.spark.jobs.runner import JobContext, JobResult
from fermion.table.codec import fragment_from_proto
from fermion.table.commit import CommitConfig
from fermion.table.domain import Fragment
from fermion.table.operations import INPUT_KEY_PREFIX
from fermion.table.ref import TableRef
from fermion.table.tasks import (
    CommitSummary,
    WriteResult,
    commit_write,
    input_recorded,
    plan_write,
)
from fermion.table.versions import load_manifest, schema_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["VerificationError", "compare_checksums", "migrate_parquet"]


class VerificationError(FermionError):
    """The written data does not match its source (row count or a column's checksum)."""


def compare_checksums(source: dict[str, Any], written: dict[str, Any]) -> None:
    """Raise :class:`VerificationError` naming the first difference.

    Example:
        >>> compare_checksums({"rows": 2, "a": "7"}, {"rows": 2, "a": "8"})
        Traceback (most recent call last):
        ...
        fermion.spark.jobs.migrate_parquet.VerificationError: column 'a': checksum 8 != source 7
    """
    if source["rows"] != written["rows"]:
        raise VerificationError(f"rows: {written['rows']} written != {source['rows']} in source")
    for name, value in source.items():
        if name != "rows" and written.get(name) != value:
            raise VerificationError(
                f"column {name!r}: checksum {written.get(name)} != source {value}"
            )


def migrate_parquet(context: JobContext, config: MigrateParquetConfig) -> JobResult:
    """Run the migration (see the module docstring); it commits as its last step."""
    if config.reverse:
        return _export(context, config)
    spark = context.spark
    df = spark.read.parquet(config.source)
    digest, paths = input_identity(spark, df)
    key = INPUT_KEY_PREFIX + "migrate." + digest
    done = input_recorded(config.ref, key)
    if done is not None:
        context.log.info("%s was migrated at version <= %d: nothing to do", config.source,
                         done)  # fmt: skip
        return JobResult(
            read_version=done, files_in=len(paths),
            extra={"skipped": True, "reason": "source already migrated", "verified": None},
        )  # fmt: skip
    latest = config.ref.open().latest_version()
    if latest is not None and config.mode == "create":
        raise DatasetError(
            f"{config.table}: table exists (version {latest}) and holds another "
            f"migration; set mode: overwrite to replace it"
        )
    plan = plan_write(
        config.ref,
        arrow_schema_of(df),
        mode="append" if latest is None else "overwrite",
        max_rows_per_file=config.max_rows_per_file,
        write_properties=config.write_properties or None,
    )
    context.log.info(
        "migrate %s (%d files) into %s, write %s", config.source, len(paths), config.table,
        plan.write_id,
    )  # fmt: skip
    record = json.dumps({"source": config.source, "files": len(paths)}, sort_keys=True)
    files = parquet_tasks(
        df, config.file_reader, context.log, partitions=config.partitions, paths=paths
    )

    def work(results: list[WriteResult]) -> CommitSummary:
        if files is not None:
            # each task compares what it read back with the rows it wrote (file_tasks)
            results.extend(execute_file_tasks(spark, plan, files, verify=config.verify))
            return _commit(results)
        results.extend(execute_write_tasks(df, plan, partitions=config.partitions))
        if config.verify:
            fragments = [f for r in results for f in r.fragments]
            _verify(context, df, plan.table, plan.schema, fragments)
        return _commit(results)

    def _commit(results: list[WriteResult]) -> CommitSummary:
        return commit_write(
            plan,
            results,
            config=CommitConfig(max_retries=config.max_retries),
            table_config={key: record},
            properties={"fermion.job": "migrate_parquet", "fermion.source": config.source},
        )

    summary = write_or_abort(plan, work, context.log)
    context.log.info("committed version %d", summary.version)
    return JobResult(
        read_version=plan.read_version,
        committed_version=summary.version if summary.committed else None,
        rows_in=summary.rows_added,
        rows_out=summary.rows_added,
        files_in=len(paths),
        files_out=summary.fragments_added,
        retries=max(0, summary.attempts - 1),
        extra={
            "skipped": False,
            "verified": config.verify,
            "write_id": plan.write_id,
            "reader": "spark" if files is None else "pyarrow",
        },
    )


def _verify(
    context: JobContext,
    source: DataFrame,
    uri: TableRef,
    schema: Any,
    fragments: list[Fragment],
) -> dict[str, Any]:
    context.log.info("verifying %d written fragments against the source", len(fragments))
    expected = column_checksums(source)
    written = column_checksums(
        fragments_frame(context.spark, uri, schema, fragments, source.schema)
    )
    compare_checksums(expected, written)
    context.log.info("verified: %d rows, %d column checksums equal", expected["rows"],
                     len(expected) - 1)  # fmt: skip
    return expected


def _export(context: JobContext, config: MigrateParquetConfig) -> JobResult:
    ref = config.ref
    storage = ref.open()
    version = storage.latest_version()
    if version is None:
        raise DatasetError(f"{config.table}: not a Fermion table (no versions)")
    manifest = load_manifest(storage, version)
    schema = schema_of(manifest)
    fragments = [fragment_from_proto(f) for f in manifest.fragments]
    spark = context.spark
    from pyspark.sql.pandas.types import from_arrow_schema

    spark_schema = from_arrow_schema(schema.arrow)
    table = fragments_frame(spark, ref.bound(storage), schema, fragments, spark_schema)
    context.log.info("export %s version %d (%d fragments) to %s", config.table, version,
                     len(fragments), config.target)  # fmt: skip
    table.write.mode("overwrite").parquet(config.target)
    exported = spark.read.schema(spark_schema).parquet(config.target)
    if config.verify:
        compare_checksums(column_checksums(table), column_checksums(exported))
    rows = exported.count()
    return JobResult(
        read_version=version,
        rows_in=rows,
        rows_out=rows,
        files_in=len(fragments),
        files_out=len(exported.inputFiles()),
        extra={"skipped": False, "verified": config.verify, "target": config.target},
    )
