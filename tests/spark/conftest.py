"""One local Spark for the whole test run.

The ``spark`` fixture is session-scoped and built by :func:`fermion.spark.session`, which
gets the running session if there is one: the JVM starts once per test process whoever
asks first (these tests, another suite's tests, or a docstring example). Other suites
reuse it with ``from tests.spark.conftest import spark  # noqa: F401`` in their conftest.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import fermion.spark

#: Small and quiet: 2 cores in CI, no UI, few shuffle partitions.
TEST_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.python.worker.reuse": "true",
}


def spark_session() -> SparkSession:
    """The test session (``local[2]``; started on first use, then shared)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = fermion.spark.session("fermion-tests", master="local[2]", conf=TEST_CONF)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The shared local Spark session."""
    session = spark_session()
    yield session
    session.stop()


def data_files(uri: str | Path) -> set[str]:
    """Every file under the table's ``data/`` directory, relative to the table root."""
    root = Path(uri)
    return {str(p.relative_to(root)) for p in (root / "data").rglob("*") if p.is_file()}
