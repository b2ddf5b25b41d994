"""The session settings and registration (the session itself is the shared fixture)."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

import fermion.table as ft
from fermion.spark.session import LOCAL_MASTER_DEFAULT, session_conf, workers_python
from fermion.spark.source import register


def test_settings_defaults_and_precedence() -> None:
    settings = session_conf()
    assert settings["spark.master"] == LOCAL_MASTER_DEFAULT == "local[2]"
    assert settings["spark.pyspark.python"] == sys.executable
    assert "spark.sql.python.filterPushdown.enabled" not in settings  # the reader needs none
    assert settings["spark.sql.execution.arrow.pyspark.enabled"] == "true"
    assert settings["spark.sql.execution.arrow.maxRecordsPerBatch"] == "262144"
    assert settings["spark.sql.execution.arrow.maxBytesPerBatch"] == str(64 << 20)
    assert settings["spark.sql.shuffle.partitions"] == "4"  # a local master
    ours = session_conf("local[1]", {"spark.sql.shuffle.partitions": "8"})
    assert ours["spark.master"] == "local[1]" and ours["spark.sql.shuffle.partitions"] == "8"
    assert session_conf(conf={"spark.master": "local[3]"})["spark.master"] == "local[3]"
    cluster = session_conf("yarn")
    assert "spark.sql.shuffle.partitions" not in cluster
    submitted = session_conf("local[1]", {"spark.master": "local[3]"}, submitted=True)
    assert "spark.master" not in submitted  # spark-submit's --master is kept


def test_the_workers_interpreter_configured_wins_over_the_environment() -> None:
    # PySpark reads it from PYSPARK_PYTHON only, so session() exports this value there;
    # tests/jobs/test_standalone_cluster.py checks that executors then run it
    node = "/opt/fermion/venv/bin/python"
    submitted = {"PYSPARK_PYTHON": "/usr/bin/python3"}  # e.g. spark-submit --conf, Airflow
    assert workers_python({"spark.pyspark.python": node}, submitted) == node
    assert workers_python({"spark.pyspark.python": node}, {}) == node
    assert workers_python({}, submitted) == "/usr/bin/python3"
    assert workers_python(None, {"PYSPARK_PYTHON": ""}) == sys.executable
    assert workers_python({"spark.pyspark.python": ""}, {}) == sys.executable


def test_the_shared_session_runs_workers_with_this_interpreter(spark: SparkSession) -> None:
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.pyspark.python") == sys.executable
    executables = spark.sparkContext.parallelize([0, 1], 2).map(lambda _: sys.executable)
    assert set(executables.collect()) == {sys.executable}


def test_the_source_reads_with_python_pushdown_on_and_off(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The reader defines no pushFilters, which Spark refuses while pushdown is off."""
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1, 2, 3]}), uri)
    before = spark.conf.get("spark.sql.python.filterPushdown.enabled")
    try:
        for setting in ("false", "true"):
            spark.conf.set("spark.sql.python.filterPushdown.enabled", setting)
            register(spark)
            assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == setting
            frame = spark.read.format("fermion").load(uri)
            assert frame.filter("x >= 2").count() == 2 and frame.count() == 3
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", before)
