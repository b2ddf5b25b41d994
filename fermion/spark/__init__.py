"""Fermion tables in Spark: the ``fermion`` data source, a configured session, helpers.

Usage and options: ``docs/SPARK.md``. This is the only package under ``fermion`` that
imports pyspark.

Example:
    >>> import tempfile
    >>> import fermion.spark
    >>> spark = fermion.spark.session("doc")
    >>> uri = tempfile.mkdtemp()
    >>> spark.range(4).write.format("fermion").mode("append").save(uri)
    >>> fermion.spark.read_dataset(spark, uri, filter="id > 1").count()
    2
"""

# ruff: noqa: E402 - pyspark is checked for before the submodules import it

from __future__ import annotations

from fermion.extras import require

require("pyspark", "spark")  # a one-line install hint, not a ModuleNotFoundError

from fermion.spark.options import ReadOptions, WriteOptions
from fermion.spark.read import FermionReader, FragmentSlice, FragmentSlices
from fermion.spark.session import session
from fermion.spark.source import FORMAT_NAME, FermionDataSource, register
from fermion.spark.sql import sql
from fermion.spark.table import read_dataset
from fermion.spark.table import read_table as read_table  # deprecated name
from fermion.spark.types import arrow_schema, spark_schema
from fermion.spark.write import FermionCommitMessage, FermionWriter

__all__ = [
    "FORMAT_NAME",
    "FermionCommitMessage",
    "FermionDataSource",
    "FermionReader",
    "FermionWriter",
    "FragmentSlice",
    "FragmentSlices",
    "ReadOptions",
    "WriteOptions",
    "arrow_schema",
    "read_dataset",
    "register",
    "session",
    "spark_schema",
    "sql",
]
