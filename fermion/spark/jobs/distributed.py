"""The Spark side of the table task API, shared by the jobs.

- :func:`execute_write_tasks`: every Spark task runs ``execute_write`` on its partition
  (``mapInArrow``) and hands back one row with its serialised ``WriteResult``.
- :func:`fragments_frame`: a DataFrame of the rows of given fragments (committed or just
  written), read on the executors.
- :func:`column_checksums`: row count and an order-independent hash sum per column,
  computed by Spark, so two DataFrames of the same schema can be compared.
- :func:`input_identity`: what identifies a file input (paths, sizes, modification times).
- :func:`write_or_abort`: the commit step that removes an uncommitted write's files when
  anything fails (whether it committed, and what an abort may remove, is decided by
  :func:`~fermion.table.tasks.write_committed` and :func:`~fermion.table.tasks.abort_write`).

Example:
    >>> checksum_expression_kind("map<string,int>")
    'to_json'
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from fermion.table.codec import fragment_from_bytes, fragment_to_bytes, fragment_to_proto
from fermion.table.domain import Fragment
from fermion.table.ref import TableRef
from fermion.table.scan import read_fragment
from fermion.table.tasks import (
    WritePlan,
    WriteResult,
    abort_write,
    execute_write,
    write_committed,
)

if TYPE_CHECKING:
    import logging

    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "arrow_schema_of",
    "checksum_expression_kind",
    "column_checksums",
    "execute_write_tasks",
    "fragments_frame",
    "input_identity",
    "write_or_abort",
]

_RESULT_COLUMN = "result"
_REFUSED_COLUMN = "refused"
T = TypeVar("T")


def arrow_schema_of(df: DataFrame) -> pa.Schema:
    """The Arrow schema of the batches Spark hands ``mapInArrow`` for ``df``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    conf = df.sparkSession.conf
    large = conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") == "true"
    return to_arrow_schema(
        df.schema,
        timezone=conf.get("spark.sql.session.timeZone"),
        prefers_large_types=large,
    )


def execute_write_tasks(
    df: DataFrame,
    plan: WritePlan,
    *,
    partitions: int = 0,
    check: Callable[[pa.RecordBatch], None] | None = None,
    target: pa.Schema | None = None,
) -> list[WriteResult]:
    """Write ``df`` with one ``execute_write`` per Spark task; the driver gets the results.

    With ``plan.batch_id_column`` the rows are range-partitioned by it (Spark samples the
    ids for the bounds) and sorted within each task: the rows of one batch arrive together
    in one task (one ``append_batch``), each task writes one increasing run of ids, and the
    fragments of the write hold disjoint id ranges (docs/SPARK.md). ``partitions`` (0:
    Spark's default) sets the number of tasks. Nothing is committed.

    ``target``: cast each batch to this schema (refusing lossy casts,
    :func:`fermion.spark.types.conform`) instead of the DataFrame's own Arrow schema.
    ``check`` sees every batch before it is written; a :class:`FermionError` it raises
    stops the task, which reports it instead of a result, and is raised again here, on
    the driver, once every task ran (the files written stay for the caller's abort).

    Raises:
        FermionError: What ``check`` raised in a task (the first task's, by partition).
    """
    from pyspark.sql import functions as F

    if plan.batch_id_column is not None:
        column = F.col(plan.batch_id_column)
        df = (
            df.repartitionByRange(partitions, column)
            if partitions
            else df.repartitionByRange(column)
        )
        df = df.sortWithinPartitions(column)
    elif partitions:
        df = df.repartition(partitions)
    schema = arrow_schema_of(df) if target is None else target

    def write_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from fermion.errors import FermionError
        from fermion.spark.types import conform

        task = TaskContext.get()
        task_id = "0" if task is None else f"{task.partitionId()}.{task.attemptNumber()}"

        def cast(batch: pa.RecordBatch) -> pa.RecordBatch:
            batch = batch.cast(schema) if target is None else conform(batch, schema)
            if check is not None:
                check(batch)
            return batch

        reader = pa.RecordBatchReader.from_batches(schema, (cast(b) for b in batches))
        try:
            result = execute_write(plan, reader, task_id=task_id)
        except FermionError as error:
            refused = pickle.dumps(error).hex()
            yield pa.RecordBatch.from_pydict({_RESULT_COLUMN: [None], _REFUSED_COLUMN: [refused]})
            return
        if result.fragments:
            yield pa.RecordBatch.from_pydict({_RESULT_COLUMN: [result.to_json()],
                                              _REFUSED_COLUMN: [None]})  # fmt: skip

    out = f"{_RESULT_COLUMN} string, {_REFUSED_COLUMN} string"
    rows = df.mapInArrow(write_partition, out).collect()
    for row in rows:
        if row[_REFUSED_COLUMN] is not None:
            raise pickle.loads(bytes.fromhex(row[_REFUSED_COLUMN]))
    return [WriteResult.from_json(row[_RESULT_COLUMN]) for row in rows]


def fragments_frame(
    spark: SparkSession,
    uri: str | TableRef,
    plan_schema: Any,
    fragments: Sequence[Fragment],
    spark_schema: Any,
) -> DataFrame:
    """The live rows of ``fragments`` as a DataFrame with ``spark_schema``, read by tasks.

    Args:
        spark: The session.
        uri: The table (a :class:`~fermion.table.ref.TableRef`, or a path or URL).
        plan_schema: The :class:`~fermion.table.schema.TableSchema` the fragments follow.
        fragments: Committed or freshly written fragments.
        spark_schema: The ``StructType`` of the result (columns by name, in its order).
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    target = to_arrow_schema(spark_schema, timezone=spark.conf.get("spark.sql.session.timeZone"))
    names = list(target.names)
    ref = TableRef.of(uri)  # made here: the tasks open it without the environment
    encoded = [(fragment_to_bytes(f),) for f in fragments]
    slices = max(1, min(len(encoded), spark.sparkContext.defaultParallelism * 4))

    def read_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        storage = ref.open()
        for batch in batches:
            for data in batch.column(0).to_pylist():
                fragment = fragment_to_proto(fragment_from_bytes(data))
                table = read_fragment(storage, plan_schema, fragment, names)
                yield from table.select(names).cast(target).to_batches()

    frame = spark.createDataFrame(encoded, "fragment binary").repartition(slices)
    return frame.mapInArrow(read_partition, spark_schema)


def checksum_expression_kind(simple_type: str) -> str:
    """How a column is hashed: ``to_json`` first for map types (Spark cannot hash maps)."""
    return "to_json" if "map<" in simple_type else "direct"


def column_checksums(df: DataFrame) -> dict[str, Any]:
    """``{"rows": n, column: hash sum, ...}``: order-independent, computed in one Spark job.

    Each column contributes the sum of the 64-bit xxhash of its values (as a decimal, so
    the sum cannot overflow); equal multisets of values give equal sums.
    """
    from pyspark.sql import functions as F

    aggregates = [F.count(F.lit(1)).alias("rows")]
    for i, field in enumerate(df.schema.fields):
        column = F.col(f"`{field.name}`")
        if checksum_expression_kind(field.dataType.simpleString()) == "to_json":
            column = F.to_json(F.struct(column))
        total = F.sum(F.xxhash64(column).cast("decimal(38,0)"))
        aggregates.append(F.coalesce(total, F.lit(0).cast("decimal(38,0)")).alias(f"c{i}"))
    row = df.agg(*aggregates).collect()[0]
    sums: dict[str, Any] = {"rows": int(row["rows"])}
    for i, field in enumerate(df.schema.fields):
        sums[field.name] = str(row[f"c{i}"])
    return sums


def input_identity(spark: SparkSession, df: DataFrame) -> tuple[str, list[str]]:
    """A digest of the files ``df`` reads (path, size, modification time), and the paths.

    Sizes and times come from the Hadoop file system of each path (local, HDFS, S3A, ...).
    """
    jvm = spark.sparkContext._jvm
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    assert jvm is not None
    entries = []
    paths = sorted(df.inputFiles())
    for path in paths:
        hpath = jvm.org.apache.hadoop.fs.Path(path)
        status = hpath.getFileSystem(hadoop_conf).getFileStatus(hpath)
        entries.append([path, int(status.getLen()), int(status.getModificationTime())])
    digest = hashlib.sha256(json.dumps(entries).encode()).hexdigest()[:32]
    return digest, paths


def write_or_abort(
    plan: WritePlan,
    work: Callable[[list[WriteResult]], T],
    log: logging.Logger,
) -> T:
    """Run ``work`` (it fills the result list, verifies, commits); on any failure remove
    every file of the write, unless the write is found committed after all.

    An abort never removes a file that a version references, so a write that committed
    and was then rewritten by a compaction keeps the files its own version reads.
    """
    results: list[WriteResult] = []
    try:
        return work(results)
    except BaseException:
        if write_committed(plan):
            log.error("the write %s committed before the failure", plan.write_id)
        else:
            removed = abort_write(plan, results)
            log.error("aborted write %s: removed %d files", plan.write_id, removed)
        raise
