"""The benchmarks' tests share the suite's one local Spark (tests/spark/conftest.py)."""

from tests.spark.conftest import spark  # noqa: F401
