"""Writing DataFrames as Fermion table versions: append, overwrite, abort, modes, errors."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

import fermion.table as ft
from fermion.errors import SchemaMismatchError
from fermion.spark import WriteOptions
from fermion.spark.write import FermionWriter, plan_spark_write
from fermion.table.tasks import write_committed
from tests.spark.conftest import data_files


def _referenced(uri: str) -> set[str]:
    return {f.path for fragment in ft.dataset(uri).fragments for f in fragment.files}


def test_append_creates_then_appends_and_overwrite_replaces(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "t")
    frame = spark.range(0, 1000, numPartitions=2).withColumn("half", F.col("id") / 2)
    frame.write.format("fermion").mode("append").save(uri)
    first = ft.dataset(uri)
    assert (first.version, first.count_rows(), len(first.fragments)) == (1, 1000, 2)
    assert first.schema == pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("half", pa.float64())]
    )
    frame.write.format("fermion").mode("append").option("max_rows_per_file", 300).save(uri)
    second = ft.dataset(uri)
    assert (second.version, second.count_rows(), len(second.fragments)) == (2, 2000, 6)
    assert second.versions()[-1].operation == "append"
    spark.range(7).withColumn("half", F.lit(0.5)).write.format("fermion").mode("overwrite").save(
        uri
    )
    third = ft.dataset(uri)
    assert (third.version, third.count_rows()) == (3, 7)
    assert sorted(third.to_table()["id"].to_pylist()) == list(range(7))
    assert ft.dataset(uri, version=2).count_rows() == 2000  # old versions stay readable
    assert data_files(uri) >= _referenced(uri)


def test_overwrite_with_other_columns_changes_the_schema(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "t")
    spark.range(3).write.format("fermion").mode("append").save(uri)
    spark.range(2).select(F.col("id").cast("string").alias("name")).write.format("fermion").mode(
        "overwrite"
    ).save(uri)
    table = ft.dataset(uri)
    assert table.schema.names == ["name"] and table.count_rows() == 2


def test_append_of_other_types_fails_before_writing(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    spark.range(3).write.format("fermion").mode("append").save(uri)
    before = data_files(uri)
    other = spark.range(3).select(F.col("id").cast("string").alias("id"))
    with pytest.raises(PySparkException, match="SchemaMismatchError: cannot append"):
        other.write.format("fermion").mode("append").save(uri)
    assert data_files(uri) == before and ft.dataset(uri).version == 1


def test_append_keeps_the_table_arrow_types(spark: SparkSession, tmp_path: Path) -> None:
    """A table written outside Spark (uint32, list<item>) takes Spark's equivalents."""
    uri = str(tmp_path / "t")
    schema = pa.schema([("n", pa.uint32()), ("xs", pa.list_(pa.int16()))])
    ft.write_dataset(pa.table({"n": [1], "xs": [[1, 2]]}, schema=schema), uri)
    frame = spark.read.format("fermion").load(uri)
    assert frame.schema["n"].dataType == LongType()
    frame.write.format("fermion").mode("append").save(uri)
    table = ft.dataset(uri)
    assert table.schema == schema
    assert table.to_table().to_pydict() == {"n": [1, 1], "xs": [[1, 2], [1, 2]]}
    too_big = frame.select((F.lit(2) ** 40).cast("long").alias("n"), "xs")
    with pytest.raises(PySparkException, match="cannot convert int64 to uint32"):
        too_big.write.format("fermion").mode("append").save(uri)
    assert ft.dataset(uri).version == 2


def _wait_for_tasks_of(spark: SparkSession, group: str) -> None:
    """Wait until no task of the job group runs (a failed job's other tasks are killed
    asynchronously: Spark reports the failure, and calls ``abort``, before they stop)."""
    tracker = spark.sparkContext.statusTracker()
    jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(group)]
    stages = [stage for info in jobs if info is not None for stage in info.stageIds]
    for _ in range(600):
        infos = [tracker.getStageInfo(s) for s in stages]
        if all(i is None or i.numActiveTasks == 0 for i in infos):
            return
        time.sleep(0.1)


def test_a_failed_job_commits_nothing_and_its_files_go(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    spark.range(10).write.format("fermion").mode("append").save(uri)
    committed = data_files(uri)

    @F.udf("long", useArrow=False)
    def explode_on_777(value: int) -> int:
        if value == 777:
            raise ValueError("row 777 is poisoned")
        return value

    poisoned = spark.range(0, 1000, numPartitions=4).select(explode_on_777("id").alias("id"))
    spark.sparkContext.setJobGroup("poisoned-write", "a write that fails")
    try:
        with pytest.raises(PySparkException, match="row 777 is poisoned"):
            poisoned.write.format("fermion").mode("append").save(uri)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    _wait_for_tasks_of(spark, "poisoned-write")
    table = ft.dataset(uri)
    assert (table.version, table.count_rows()) == (1, 10)
    # abort removed the files of the tasks that reported and of the failed task; a task
    # still running when Spark called abort (at most one more on local[2]) may have
    # finished a file after it: an orphan under data/{write_id}/ that vacuum removes
    leftover = data_files(uri) - committed
    assert len(leftover) <= 1
    assert all(Path(p).parent.parent.name == "data" for p in leftover)
    removed = table.cleanup_old_versions(timedelta(0), orphan_older_than=timedelta(0))
    assert removed["files_removed"] == len(leftover)
    assert data_files(uri) == committed


def test_unsupported_modes_and_partitioning_fail_clearly(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "t")
    spark.range(3).write.format("fermion").mode("append").save(uri)
    for mode in ("error", "errorifexists", "ignore"):
        with pytest.raises(PySparkException, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            spark.range(3).write.format("fermion").mode(mode).save(uri)
    with pytest.raises(PySparkException, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        spark.range(3).write.format("fermion").save(uri)  # Spark's default mode is error
    with pytest.raises(Exception, match="partitioning or clustering columns"):
        spark.range(3).write.format("fermion").partitionBy("id").mode("append").save(uri)
    with pytest.raises(PySparkException, match=r"unknown write option\(s\) \['compression'\]"):
        spark.range(3).write.format("fermion").option("compression", "zstd").mode("append").save(
            uri
        )
    assert ft.dataset(uri).version == 1


def test_plan_is_made_once_on_the_driver(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"id": [1]}), uri)
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField("id", LongType())])
    plan = plan_spark_write(WriteOptions(uri), schema, overwrite=False)
    assert (plan.mode, plan.read_version, plan.schema.arrow) == (
        "append",
        1,
        ft.dataset(uri).schema,
    )
    wrong = StructType([StructField("id", StringType())])
    with pytest.raises(SchemaMismatchError, match="cannot append"):
        plan_spark_write(WriteOptions(uri), wrong, overwrite=False)
    assert plan_spark_write(WriteOptions(uri), wrong, overwrite=True).mode == "overwrite"


def test_abort_after_a_commit_that_landed_keeps_the_files(tmp_path: Path) -> None:
    """Spark calls abort when commit raised; a commit that landed anyway must survive it."""
    from pyspark.sql.types import StructField, StructType

    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"id": [0]}), uri)
    schema = StructType([StructField("id", LongType())])
    writer = FermionWriter(plan_spark_write(WriteOptions(uri), schema, overwrite=False))
    batches = [pa.record_batch({"id": pa.array([1, 2], pa.int64())})]
    messages = [writer.write(iter(batches)), None]
    assert not write_committed(writer.plan)
    writer.commit(messages)
    assert write_committed(writer.plan)
    files = data_files(uri)
    writer.abort(messages)
    assert data_files(uri) == files and ft.dataset(uri).count_rows() == 3
    other = FermionWriter(plan_spark_write(WriteOptions(uri), schema, overwrite=False))
    other_messages = [other.write(iter(batches))]
    assert data_files(uri) > files
    other.abort(other_messages)
    assert data_files(uri) == files and ft.dataset(uri).version == 2
