"""The ``merge`` job: upsert a source into a table on key columns, in one version, at most
once per input.

A table row whose keys equal a source row's is replaced by it; a source row whose keys
match no table row is inserted (``merge_insert(on).when_matched_update_all()
.when_not_matched_insert_all()``, the same result). With ``when_not_matched_by_source:
delete`` the table rows whose keys the source lacks (those matching ``delete_predicate``,
if set) are deleted in the same version (``.when_not_matched_by_source_delete(predicate)``;
every fragment is read). Steps:

1. driver: read the source (as ``ingest`` does), check its columns and types against the
   table, collect its key columns only and plan (:func:`~fermion.table.tasks.plan_upsert`:
   no null key, no key twice, fragments whose statistics allow a source key);
2. Spark tasks, one per group of fragments: match the fragments' keys with the source keys
   and write the new deletion files (:func:`~fermion.table.tasks.execute_upsert_match`);
3. Spark tasks over the source: write the new rows (the source rows; a key matching
   ``n`` table rows ``n`` times);
4. driver: one ``MergeInsert`` commit (:func:`~fermion.table.tasks.commit_upsert`), which
   also records the input in the table configuration (``fermion.input.merge.<digest>``).

A re-run of the same input finds the record and commits nothing; a concurrent run of it
conflicts on the common keys and, finding the record, commits nothing either. A commit
that a concurrent change of the same fragments or keys makes stale removes its files and
plans again, up to :data:`REPLAN_ROUNDS` times. Any failure before the commit removes
every file written (:func:`~fermion.table.tasks.abort_upsert`): nothing is committed.

Example:
    >>> merge_input_key("db.labels", "dt=2026-11-23").startswith("fermion.input.merge.")
    True
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from fermion.errors import (
    CommitConflictError,
    IncompatibleTransactionError,
    SchemaMismatchError,
)
from fermion.spark.jobs.config import MergeConfig
from fermion.spark.jobs.distributed import execute_write_tasks, input_identity
from fermion.spark.jobs.ingest import read_source
from fermion.spark.jobs.maintenance import REPLAN_ROUNDS, run_tasks
from fermion.spark.jobs.runner import JobContext, JobResult
from fermion.spark.types import conform, loose, spark_schema
from fermion.table.commit import CommitConfig
from fermion.table.operations import INPUT_KEY_PREFIX
from fermion.table.tasks import (
    UpsertMatch,
    UpsertPlan,
    WriteResult,
    abort_upsert,
    commit_upsert,
    execute_upsert_match,
    input_recorded,
    open_version,
    plan_upsert,
)
from fermion.table.tasks.upsert import upsert_counts
from fermion.table.versions import schema_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["REPLAN_ROUNDS", "merge", "merge_input_key"]

_COPY = "__fermion_copy"


def merge_input_key(source: str, input_key: str) -> str:
    """The table configuration key that records a merged input named by ``input_key``.

    Example:
        >>> merge_input_key("db.labels", "dt=2026-11-23")
        'fermion.input.merge.783479e48e9e4f032b11dd12e92741d9'
    """
    digest = hashlib.sha256(f"merge\0{source}\0{input_key}".encode()).hexdigest()
    return f"{INPUT_KEY_PREFIX}merge.{digest[:32]}"


def _input_record(
    context: JobContext, df: DataFrame, config: MergeConfig
) -> tuple[str, dict[str, Any]]:
    if config.input_key is not None:
        key = merge_input_key(config.source, config.input_key)
        return key, {
            "source": config.source,
            "input_key": config.input_key,
            "on": config.key_columns,
        }
    digest, paths = input_identity(context.spark, df)
    record = {"source": config.source, "files": len(paths), "on": config.key_columns}
    return f"{INPUT_KEY_PREFIX}merge.{digest}", record


def _source_columns(df: DataFrame, config: MergeConfig) -> DataFrame:
    """The source with the table's columns in the table's order, its types checked.

    Raises:
        SchemaMismatchError: A key or a column missing, a column the table lacks, or a
            Spark type other than the one the table's column reads as.
    """
    _, manifest = open_version(config.ref)
    table = schema_of(manifest).arrow
    theirs = {f.name: f.dataType for f in df.schema.fields}
    missing_keys = [k for k in config.key_columns if k not in theirs]
    if missing_keys:
        raise SchemaMismatchError(f"merge: the source lacks the key columns {missing_keys}")
    missing = [n for n in table.names if n not in theirs]
    if missing:
        raise SchemaMismatchError(f"merge: the source lacks the columns {missing}")
    extra = [n for n in theirs if n not in table.names]
    if extra:
        raise SchemaMismatchError(f"merge: the table has no columns {extra}")
    ours = spark_schema(table)
    for name in table.names:
        if loose(ours[name].dataType) != loose(theirs[name]):
            raise SchemaMismatchError(
                f"merge: source column {name!r} has type {theirs[name].simpleString()}, "
                f"the table has {ours[name].dataType.simpleString()}"
            )
    return df.select(*[f"`{n}`" for n in table.names])


def _source_keys(df: DataFrame, plan_schema: pa.Schema, on: list[str]) -> pa.Table:
    """The source's key columns on the driver, as the table's Arrow types."""
    keys = df.select(*[f"`{k}`" for k in on]).toArrow()
    target = pa.schema([plan_schema.field(k).with_nullable(True) for k in on])
    batches = [conform(b, target) for b in keys.to_batches()]
    return pa.Table.from_batches(batches, schema=target)


def _new_rows(df: DataFrame, plan: UpsertPlan, repeated: pa.Table) -> DataFrame:
    """The source rows, a key matching ``n`` table rows ``n`` times."""
    if not repeated.num_rows:
        return df
    from pyspark.sql import functions as F

    spark = df.sparkSession
    copies = spark.createDataFrame(repeated.rename_columns([*plan.on, _COPY]).to_pandas())
    extra = (
        df.join(F.broadcast(copies), list(plan.on), "inner")
        .withColumn(_COPY, F.explode(F.sequence(F.lit(2), F.col(_COPY).cast("int"))))
        .select(*[f"`{n}`" for n in df.columns])
    )
    return df.unionByName(extra)


def merge(context: JobContext, config: MergeConfig) -> JobResult:
    """Run the merge (see the module docstring); it commits as its last step.

    Raises:
        SchemaMismatchError: The source lacks a key or column, has other columns, or other
            types than the table.
        InvalidArgumentError: Null or duplicate keys in the source (named).
        DatasetError: No table to merge into.
        CommitConflictError: Concurrent commits outlasted the re-plans.
    """
    spark = context.spark
    source = read_source(spark, config)
    key, record = _input_record(context, source, config)
    done = input_recorded(config.ref, key)
    if done is not None:
        context.log.info("input already merged (%s at version %d): nothing to do", key, done)
        return JobResult(
            read_version=done,
            extra={"skipped": True, "reason": f"input already merged (version {done})",
                   "input": key},
        )  # fmt: skip
    df = _source_columns(source, config)
    commit = CommitConfig(max_retries=config.max_retries)
    first_read: int | None = None
    keys: pa.Table | None = None
    for round_number in range(1, REPLAN_ROUNDS + 2):
        _, manifest = open_version(config.ref)
        if keys is None:
            keys = _source_keys(df, schema_of(manifest).arrow, list(config.key_columns))
        plan = plan_upsert(
            config.ref, keys, config.key_columns, max_rows_per_file=config.max_rows_per_file,
            delete_unmatched=config.when_not_matched_by_source == "delete",
            delete_predicate=config.delete_predicate,
        )  # fmt: skip
        first_read = plan.read_version if first_read is None else first_read
        if not plan.keys.num_rows:
            context.log.info("the source has no rows: nothing committed")
            return JobResult(
                read_version=plan.read_version,
                extra={"skipped": True, "reason": "the source has no rows", "input": key},
            )
        context.log.info(
            "round %d: merge %d source rows on %s into %s at version %d: %d fragments may "
            "match, write %s",
            round_number, plan.keys.num_rows, list(plan.on), config.table, plan.read_version,
            sum(len(t.fragments) for t in plan.tasks), plan.write_id,
        )  # fmt: skip
        matches: list[UpsertMatch] = []
        writes: list[WriteResult] = []
        try:
            execute = functools.partial(execute_upsert_match, plan)
            matches = run_tasks(spark, plan.tasks, execute, config.partitions)
            updated, inserted, repeated = upsert_counts(plan, matches)
            rows = _new_rows(df, plan, repeated)
            if config.partitions:
                rows = rows.repartition(config.partitions)
            write_plan = plan.write_plan()
            writes = execute_write_tasks(rows, write_plan, target=write_plan.schema.arrow)
            summary = commit_upsert(
                plan, matches, writes, table_config={key: json.dumps(record, sort_keys=True)},
                config=commit, properties={"fermion.job": "merge", "fermion.source": config.source},
            )  # fmt: skip
        except (CommitConflictError, IncompatibleTransactionError) as error:
            removed = abort_upsert(plan, matches, writes)
            done = input_recorded(config.ref, key)
            if done is not None:
                context.log.info("input merged concurrently (version %d): nothing committed",
                                 done)  # fmt: skip
                return JobResult(
                    read_version=first_read,
                    extra={"skipped": True, "input": key,
                           "reason": f"input merged concurrently (version {done})"},
                )  # fmt: skip
            if isinstance(error, IncompatibleTransactionError) or round_number > REPLAN_ROUNDS:
                raise
            context.log.info("%s; removed %d files, planning again", error, removed)
            continue
        except BaseException:
            removed = abort_upsert(plan, matches, writes)
            context.log.error("merge failed: removed %d files", removed)
            raise
        deleted = sum(m.deleted_rows for m in matches)
        context.log.info(
            "committed version %d: %d rows updated, %d inserted, %d deleted",
            summary.version, updated, inserted, deleted,
        )  # fmt: skip
        return JobResult(
            read_version=first_read,
            committed_version=summary.version if summary.committed else None,
            rows_in=plan.keys.num_rows,
            rows_out=summary.rows_added,
            files_in=sum(len(t.fragments) for t in plan.tasks),
            files_out=summary.fragments_added,
            retries=max(0, summary.attempts - 1),
            extra={
                "skipped": not summary.committed,
                "input": key,
                "rows_updated": updated,
                "rows_inserted": inserted,
                "rows_deleted": deleted,
                "rounds": round_number,
                "write_id": plan.write_id,
            },
        )
    raise AssertionError("unreachable: the last round raises or returns")  # pragma: no cover
