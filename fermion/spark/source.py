"""The ``fermion`` Spark data source and its registration.

Example:
    >>> import tempfile
    >>> from fermion.spark.session import session
    >>> spark = session("doc")
    >>> uri = tempfile.mkdtemp()
    >>> spark.range(3).write.format("fermion").mode("overwrite").save(uri)
    >>> spark.read.format("fermion").load(uri).count()
    3
"""

from __future__ import annotations

import functools

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from fermion.spark.options import ReadOptions, WriteOptions
from fermion.spark.read import FermionReader, table_schema
from fermion.spark.write import FermionWriter, plan_spark_write

__all__ = ["FORMAT_NAME", "FermionDataSource", "register"]

#: The name given to ``spark.read.format`` / ``df.write.format``.
FORMAT_NAME = "fermion"


class FermionDataSource(DataSource):
    """Reads and writes Fermion tables (options: docs/SPARK.md).

    Attributes:
        parallelism: The parallelism the reader packs small fragments for (None: no
            packing unless the ``min_partitions`` option gives one); :func:`register`
            registers a subclass holding the session's default parallelism.
    """

    parallelism: int | None = None

    @classmethod
    def name(cls) -> str:
        """``fermion``."""
        return FORMAT_NAME

    def schema(self) -> StructType:
        """The table's schema in Spark types (only the ``columns`` option's, if given)."""
        return table_schema(ReadOptions.parse(self.options))

    def reader(self, schema: StructType) -> FermionReader:
        """A reader of the version the options name, as ``schema``."""
        return FermionReader(ReadOptions.parse(self.options), schema, type(self).parallelism)

    def writer(self, schema: StructType, overwrite: bool) -> FermionWriter:
        """A writer with its plan made here, once, on the driver."""
        options = WriteOptions.parse(self.options)
        return FermionWriter(plan_spark_write(options, schema, overwrite), options.replace_where)


def register(spark: SparkSession) -> None:
    """Register the ``fermion`` format on ``spark``, packing small fragments for the
    session's default parallelism (:mod:`fermion.spark.packing`).

    The reader takes no filters from Spark (docs/SPARK.md), so it reads the same with
    ``spark.sql.python.filterPushdown.enabled`` on or off; registering leaves it as it is.

    Example:
        >>> import tempfile
        >>> from fermion.spark.session import session
        >>> spark = session("doc")
        >>> register(spark)
        >>> spark.range(2).write.format("fermion").mode("overwrite").save(tempfile.mkdtemp())
    """
    try:
        parallelism: int | None = spark.sparkContext.defaultParallelism
    except Exception:  # Spark Connect: no SparkContext, so no packing by default
        parallelism = None
    spark.dataSource.register(_source_for(parallelism))


@functools.cache
def _source_for(parallelism: int | None) -> type[FermionDataSource]:
    """The data source class packing for ``parallelism``: one class per value, made here so
    that Spark pickles it by value, with its attribute, when it ships it to the planner."""
    return type(
        FermionDataSource.__name__,
        (FermionDataSource,),
        {"parallelism": parallelism, "__module__": __name__, "__doc__": FermionDataSource.__doc__},
    )
