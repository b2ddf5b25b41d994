"""Reading a Fermion table in Spark: partitions, pushed filters, batches of the declared schema.

The reader is made on the driver (in a Python worker Spark starts there). It fixes the
table version once, so every task reads the same snapshot, and turns Spark's pushed
filters into one expression (:mod:`fermion.spark.filters`). ``partitions()`` drops the
fragments whose manifest statistics rule the filter out and gives one partition per
remaining fragment, or several for a fragment larger than ``rows_per_partition`` (ranges
of its stripes). Each task reads its fragment (or stripe range) through
:func:`fermion.table.scan.read_fragment`, which prunes stripes, pages and bloom filters,
applies the fragment's deletions and the filter exactly, and yields batches cast to the
declared schema.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> from fermion.spark.session import session
    >>> uri = tempfile.mkdtemp()
    >>> _ = ft.write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), uri)
    >>> spark = session("doc")
    >>> read_table(spark, uri, columns=["v"], filter="id >= 2").collect()
    [Row(v='b'), Row(v='c')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from fermion.errors import ColumnNotFoundError
from fermion.spark.filters import translate
from fermion.spark.options import ReadOptions
from fermion.spark.types import arrow_schema, conform, loose, spark_schema
from fermion.table import Dataset, dataset
from fermion.table.scan import ScanStats, fragment_stripe_rows, read_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage
from fermion.table.tasks import FragmentInfo

__all__ = ["FermionReader", "FragmentSlice", "open_table", "read_table", "table_schema"]


@dataclass(frozen=True)
class FragmentSlice(InputPartition):
    """One task's share: a fragment, or a range of its stripes.

    Attributes:
        fragment: :meth:`FragmentInfo.to_bytes` of the committed fragment.
        stripes: ``(start, stop)`` stripes of its data file, or ``None`` for all of it.
    """

    fragment: bytes
    stripes: tuple[int, int] | None = None


def open_table(options: ReadOptions) -> Dataset:
    """The table version the options name."""
    return dataset(options.uri, options.version, tag=options.tag)


def table_schema(options: ReadOptions) -> StructType:
    """The Spark schema of the table, or of the columns the options name.

    Raises:
        ColumnNotFoundError: A name of the ``columns`` option is not a column.
    """
    arrow = open_table(options).schema
    if options.columns is not None:
        _check_columns(options.columns, arrow)
        arrow = pa.schema([arrow.field(c) for c in options.columns])
    return spark_schema(arrow)


def _check_columns(names: Sequence[str], arrow: pa.Schema) -> None:
    missing = [n for n in names if n not in arrow.names]
    if missing:
        raise ColumnNotFoundError(f"no such column(s) {missing}; the table has {arrow.names}")


def _stripe_groups(counts: Sequence[int], target: int) -> list[tuple[int, int]]:
    """Consecutive stripes grouped into ranges of at least ``target`` rows (the last less)."""
    groups: list[tuple[int, int]] = []
    start, rows = 0, 0
    for index, count in enumerate(counts):
        rows += count
        if rows >= target:
            groups.append((start, index + 1))
            start, rows = index + 1, 0
    if start < len(counts):
        groups.append((start, len(counts)))
    return groups


class FermionReader(DataSourceReader):
    """Reads one version of a table as the declared Spark ``schema``.

    Holds plain values only (it is pickled to every task).
    """

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        table = open_table(options)
        self.uri = table.uri
        self.version = table.version
        self.table_schema: TableSchema = table.table_schema
        self.schema = schema
        self.columns = list(schema.fieldNames())
        _check_columns(self.columns, table.schema)
        own = spark_schema(pa.schema([table.schema.field(c) for c in self.columns]))
        # a column declared with another type is cast on read: its filters stay with Spark
        self.pushable = {
            f.name
            for f, declared in zip(own, schema, strict=True)
            if loose(f.dataType) == loose(declared.dataType)
        }
        self.target = arrow_schema(schema)
        self.rows_per_partition = options.rows_per_partition
        self.filter: pc.Expression | None = None

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 (Spark's name)
        """Keep the filters that translate exactly; hand the others back to Spark."""
        pushed = translate(filters, self.table_schema.arrow, lambda name: name in self.pushable)
        self.filter = pushed.expression
        yield from pushed.rejected

    def partitions(self) -> list[FragmentSlice]:  # type: ignore[override]
        """One partition per fragment left after manifest pruning (large ones split)."""
        table = dataset(self.uri, self.version)
        scanner = table.scanner(self.columns, self.filter)
        out: list[FragmentSlice] = []
        for fragment in scanner.fragments():
            data = FragmentInfo.from_proto(fragment, committed=True).to_bytes()
            if fragment.physical_rows <= self.rows_per_partition or len(fragment.files) != 1:
                out.append(FragmentSlice(data))
                continue
            counts = fragment_stripe_rows(table.storage, fragment)
            groups = _stripe_groups(counts, self.rows_per_partition)
            if len(groups) == 1:
                out.append(FragmentSlice(data))
            else:
                out.extend(FragmentSlice(data, group) for group in groups)
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        """The rows of one partition as batches of the declared schema."""
        if isinstance(partition, FragmentSlice):
            yield from self.read_slice(partition)
        # else: Spark's stand-in InputPartition(None) when partitions() found no fragment

    def read_slice(
        self, part: FragmentSlice, stats: ScanStats | None = None
    ) -> Iterator[pa.RecordBatch]:
        """:meth:`read`, counting what it touched into ``stats``."""
        fragment = FragmentInfo.from_bytes(part.fragment).to_proto()
        stripes = None if part.stripes is None else range(*part.stripes)
        table = read_fragment(
            TableStorage(self.uri),
            self.table_schema,
            fragment,
            self.columns,
            self.filter,
            stats=stats,
            stripes=stripes,
        )
        for batch in table.to_batches():
            yield conform(batch, self.target)


_IDENTIFIER = re.compile(r"`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z0-9_]*)")


def _mentioned(text: str, names: Sequence[str]) -> list[str]:
    """Column names that appear as identifiers in ``text`` (a superset is harmless)."""
    tokens = set()
    for quoted, bare in _IDENTIFIER.findall(text):
        tokens.add((quoted.replace("``", "`") if quoted else bare).lower())
    return [n for n in names if n.lower() in tokens]


def read_table(
    spark: SparkSession,
    uri: str,
    columns: Sequence[str] | None = None,
    filter: str | Column | None = None,
    *,
    version: int | None = None,
    tag: str | None = None,
) -> DataFrame:
    """A DataFrame of a Fermion table that reads only ``columns``, filtered at the source.

    Python data sources get no column pruning from Spark (``select`` still reads every
    column), so the projection is given here; the filter is applied to the loaded
    DataFrame, which pushes it down to the reader (fragment, stripe, page and bloom
    pruning). Columns the filter mentions are read too and dropped after it.

    Args:
        spark: The session (the data source is registered on it).
        uri: Table location.
        columns: Columns to return (default: all).
        filter: A Spark SQL condition (``"id > 5 AND name LIKE 'a%'"``) or a Column.
        version: Read this version (default: the latest).
        tag: Read the version of this tag.

    Raises:
        ColumnNotFoundError: A name in ``columns`` is not a column of the table.
        DatasetError: No table at ``uri``, or no such version or tag.

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> from fermion.spark.session import session
        >>> uri = tempfile.mkdtemp()
        >>> _ = ft.write_dataset(pa.table({"a": [1, 2], "b": [3.0, 4.0]}), uri)
        >>> read_table(session("doc"), uri, ["b"], version=1).columns
        ['b']
    """
    from fermion.spark.source import register

    register(spark)
    options = ReadOptions(uri, version, tag)
    names = open_table(options).schema.names
    wanted = list(names) if columns is None else list(columns)
    _check_columns(wanted, pa.schema([(n, pa.null()) for n in names]))
    needed = list(wanted)
    if filter is not None:
        text = filter if isinstance(filter, str) else str(filter)
        needed += [n for n in _mentioned(text, names) if n not in needed]
    reader = spark.read.format("fermion")
    if version is not None:
        reader = reader.option("version", str(version))
    if tag is not None:
        reader = reader.option("tag", tag)
    if columns is not None or len(needed) != len(names):
        reader = reader.option("columns", ",".join(needed))
    frame = reader.load(uri)
    if filter is not None:
        frame = frame.filter(filter)
    if needed != wanted:
        frame = frame.select(*wanted)
    return frame
