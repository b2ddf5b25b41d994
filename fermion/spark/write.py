"""Writing a DataFrame to a Fermion table: plan on the driver, write in tasks, commit once.

``DataSource.writer`` runs once on the driver and makes the write plan
(:func:`fermion.table.tasks.plan_write`: write id, read version, schema with field ids).
Every task casts its Arrow batches to the plan's schema and writes data files under
``data/{write_id}/`` with :func:`~fermion.table.tasks.execute_write`; its
:class:`~fermion.table.tasks.WriteResult` travels back in the commit message. When every
task succeeded Spark calls ``commit``, which makes one Append or Overwrite
(:func:`~fermion.table.tasks.commit_write`, with retries); otherwise ``abort`` removes the
files of the tasks that reported and, by the write id, those of the tasks that failed
(:func:`~fermion.table.tasks.abort_write`, which leaves any file a version references).
Whether the write committed is :func:`~fermion.table.tasks.write_committed`'s answer.

With ``mode("overwrite")`` and the option ``replace_where`` the write replaces only the
rows matching that condition: the plan is an append plan (the DataFrame must fit the
table), every task checks that each of its rows matches the condition
(:func:`~fermion.table.tasks.check_replace_rows`; a row that does not fails the task, so
the write aborts and commits nothing), and ``commit`` makes one Update
(:func:`~fermion.table.tasks.commit_replace_where`).

Example:
    >>> import tempfile, fermion.table as ft
    >>> from fermion.spark.session import session
    >>> uri = tempfile.mkdtemp()
    >>> session("doc").range(5).write.format("fermion").mode("append").save(uri)
    >>> ft.dataset(uri).count_rows()
    5
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from fermion.errors import DatasetError, InvalidArgumentError, SchemaMismatchError
from fermion.spark.options import WriteOptions
from fermion.spark.types import arrow_schema, conform, loose, spark_schema
from fermion.table import dataset
from fermion.table.ref import TableRef
from fermion.table.tasks import (
    WritePlan,
    WriteResult,
    abort_write,
    check_replace_rows,
    commit_replace_where,
    commit_write,
    execute_write,
    plan_write,
    write_committed,
)

__all__ = ["FermionCommitMessage", "FermionWriter", "plan_spark_write"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FermionCommitMessage(WriterCommitMessage):
    """What one task wrote (fragments not committed yet)."""

    result: WriteResult


def _write_schema(ref: TableRef, schema: StructType, overwrite: bool) -> pa.Schema:
    """The Arrow schema the DataFrame's batches are written as (Spark → Arrow types).

    An existing table whose columns have the DataFrame's Spark types keeps its own Arrow
    types (``uint32`` stays ``uint32``, a ``list<item>`` stays one); an overwrite with other
    columns or nullability writes the DataFrame's schema. The table schema with its field
    ids is then resolved by :func:`~fermion.table.tasks.resolve_write_schema` inside
    :func:`~fermion.table.tasks.plan_write`, as for every other writer.
    """
    ours = arrow_schema(schema)
    try:
        existing = dataset(ref).schema
    except DatasetError:
        return ours  # no table yet: the first write creates it
    theirs = spark_schema(existing)
    same_names = set(theirs.fieldNames()) == set(schema.fieldNames())
    if same_names and all(
        loose(theirs[f.name].dataType) == loose(f.dataType) for f in schema.fields
    ):
        if not overwrite:
            return existing
        if all(theirs[f.name] == f for f in schema.fields):
            return existing
        return ours
    if overwrite:
        return ours
    raise SchemaMismatchError(
        f"cannot append to {ref.uri}: the DataFrame has {schema.simpleString()}, "
        f"the table has {theirs.simpleString()}"
    )


def plan_spark_write(options: WriteOptions, schema: StructType, overwrite: bool) -> WritePlan:
    """The write plan of a DataFrame of Spark ``schema`` (driver side).

    A ``replace_where`` write is planned as an append (the rows must fit the table) and
    its condition is parsed here, so a bad one fails before any task runs.

    Raises:
        SchemaMismatchError: An append (or replace_where) whose columns or types differ
            from the table's.
        InvalidArgumentError: ``replace_where`` without ``mode("overwrite")``, or a
            condition that does not parse.
        DatasetError: ``replace_where`` on a table that does not exist.
    """
    ref = options.ref
    if options.replace_where is not None:
        if not overwrite:
            raise InvalidArgumentError(
                "the option replace_where needs mode('overwrite') (it replaces the rows "
                "matching it)"
            )
        dataset(ref)  # DatasetError: there is no table whose rows to replace
        plan = plan_write(
            ref,
            _write_schema(ref, schema, False),
            mode="append",
            max_rows_per_file=options.max_rows_per_file,
        )
        check_replace_rows(plan, options.replace_where)
        return plan
    return plan_write(
        ref,
        _write_schema(ref, schema, overwrite),
        mode="overwrite" if overwrite else "append",
        max_rows_per_file=options.max_rows_per_file,
        write_properties=options.write_properties or None,
    )


def _checked(
    batches: Iterator[pa.RecordBatch], check: Callable[[pa.RecordBatch], None]
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        check(batch)
        yield batch


def _task_id() -> str:
    context = TaskContext.get()
    if context is None:
        return uuid.uuid4().hex
    return f"{context.partitionId()}.{context.attemptNumber()}"


class FermionWriter(DataSourceArrowWriter):
    """Writes a DataFrame as one new table version (holds only the plan and the
    ``replace_where`` condition: it is pickled)."""

    def __init__(self, plan: WritePlan, replace_where: str | None = None) -> None:
        self.plan = plan
        self.replace_where = replace_where

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FermionCommitMessage:
        """Write one task's batches under ``data/{write_id}/`` (commits nothing).

        Raises:
            InvalidArgumentError: With ``replace_where``, a row that does not match it.
        """
        target = self.plan.schema.arrow
        batches: Iterator[pa.RecordBatch] = (conform(b, target) for b in iterator)
        if self.replace_where is not None:
            batches = _checked(batches, check_replace_rows(self.plan, self.replace_where))
        stream = pa.RecordBatchReader.from_batches(target, batches)
        return FermionCommitMessage(execute_write(self.plan, stream, task_id=_task_id()))

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Commit every task's fragments as one version (with retries)."""
        results = [m.result for m in messages if isinstance(m, FermionCommitMessage)]
        if self.replace_where is not None:
            summary = commit_replace_where(self.plan, results, self.replace_where)
        else:
            summary = commit_write(self.plan, results)
        _log.info(
            "fermion: %s committed version %d (%d rows, %d attempts)",
            self.plan.uri, summary.version, summary.rows_added, summary.attempts,
        )  # fmt: skip

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Remove every file of this write, failed tasks' included (found by the write id).

        Spark also calls ``abort`` when ``commit`` raised; if the commit had landed all the
        same (its outcome was unknown to the raiser), the files stay.
        """
        if write_committed(self.plan):
            _log.warning("fermion: write %s was committed; abort leaves it", self.plan.write_id)
            return
        results = [m.result if isinstance(m, FermionCommitMessage) else None for m in messages]
        removed = abort_write(self.plan, results)
        _log.info("fermion: aborted write %s, removed %d files", self.plan.write_id, removed)
