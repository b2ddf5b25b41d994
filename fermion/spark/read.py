"""Reading a Fermion table in Spark: partitions, the ``filter`` option, batches of the schema.

The reader is made on the driver (in a Python worker Spark starts there). It fixes the
table version once, so every task reads the same snapshot. It takes no filter from Spark
(no ``pushFilters``): pyspark 4.1–4.3 keep the reader planned last on the table object that
every scan of one ``load()`` shares, so a reader holding one scan's filters would serve
another scan of the same frame (a reused DataFrame, a self-join, a subquery) with them
(docs/SPARK.md, "Why nothing is pushed implicitly"). Everything the reader prunes by comes
from the ``load()``'s own options, the same for every scan: ``columns`` and ``filter``
(a SQL condition, :func:`fermion.table.predicate.parse_predicate`). ``partitions()`` drops
the fragments whose manifest statistics rule that filter out and gives one slice per
remaining fragment, or several for a fragment larger than ``rows_per_partition`` (ranges
of its stripes); small slices are packed into one partition as Spark packs small files
(:mod:`fermion.spark.packing`). Each task reads its slices (fragments or stripe ranges) through
:func:`fermion.table.scan.read_fragment`, which prunes stripes, pages and bloom filters,
applies the fragment's deletions and the filter exactly, and yields batches cast to the
declared schema.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> from fermion.spark.session import session
    >>> uri = tempfile.mkdtemp()
    >>> _ = ft.write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), uri)
    >>> spark = session("doc")
    >>> frame = spark.read.format("fermion").option("filter", "id >= 2").load(uri)
    >>> frame.select("v").collect()
    [Row(v='b'), Row(v='c')]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from fermion.deprecation import deprecated_alias
from fermion.errors import ColumnNotFoundError
from fermion.format.read.pruning import referenced_fields
from fermion.spark.options import ReadOptions
from fermion.spark.packing import pack, slice_bytes
from fermion.spark.types import arrow_schema, conform, fits_long, spark_schema, unscaled
from fermion.table import Dataset, dataset
from fermion.table.codec import fragment_from_proto, fragment_to_proto
from fermion.table.domain import Fragment
from fermion.table.predicate import parse_predicate
from fermion.table.row_ids import ROW_ID, add_row_id_column, row_id_request
from fermion.table.scan import ROW_OFFSET, ScanStats, fragment_stripe_rows, read_fragment
from fermion.table.schema import TableSchema

__all__ = [
    "FermionReader",
    "FragmentSlice",
    "FragmentSlices",
    "check_columns",
    "open_dataset",
    "table_schema",
]

#: ``_rowid`` in a Spark frame: a LongType (ids stay below 2**63).
SPARK_ROW_ID = pa.field(ROW_ID, pa.int64(), nullable=False)


@dataclass(frozen=True)
class FragmentSlice(InputPartition):
    """One task's share: a fragment, or a range of its stripes.

    Attributes:
        fragment: The committed fragment (a picklable
            :class:`~fermion.table.domain.Fragment`).
        stripes: ``(start, stop)`` stripes of its data file, or ``None`` for all of it.
    """

    fragment: Fragment
    stripes: tuple[int, int] | None = None


@dataclass(frozen=True)
class FragmentSlices(InputPartition):
    """One task's share made of several small slices, read one after the other
    (:mod:`fermion.spark.packing`)."""

    slices: tuple[FragmentSlice, ...]


def open_dataset(options: ReadOptions) -> Dataset:
    """The ``Dataset`` of the table version the options name (``open_table`` before).

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> uri = tempfile.mkdtemp()
        >>> _ = ft.write_dataset(pa.table({"x": [1]}), uri)
        >>> open_dataset(ReadOptions(uri)).version
        1
    """
    return dataset(options.ref, options.version, tag=options.tag)


#: Deprecated name of :func:`open_dataset`.
open_table = deprecated_alias(
    open_dataset, "fermion.spark.read.open_table", "fermion.spark.read.open_dataset"
)


def table_schema(options: ReadOptions) -> StructType:
    """The Spark schema of the table, or of the columns the options name.

    Raises:
        ColumnNotFoundError: A name of the ``columns`` option is not a column.
    """
    table = open_dataset(options)
    arrow = table.schema
    if options.columns is not None:
        row_ids = False  # (the manifest is copied only when _rowid is asked for)
        if ROW_ID in options.columns:
            _, row_ids = row_id_request(table.manifest, arrow.names, options.columns)
        check_columns([c for c in options.columns if not (row_ids and c == ROW_ID)], arrow)
        arrow = pa.schema(
            [SPARK_ROW_ID if row_ids and c == ROW_ID else arrow.field(c) for c in options.columns]
        )
    if options.unscaled_decimals:  # such decimals are read as their unscaled longs
        arrow = pa.schema([f.with_type(pa.int64()) if fits_long(f.type) else f for f in arrow])
    return spark_schema(arrow)


def check_columns(names: Sequence[str], arrow: pa.Schema) -> None:
    """Raise ColumnNotFoundError naming every one of ``names`` not in ``arrow``."""
    missing = [n for n in names if arrow.get_field_index(n) < 0]  # (names are unique)
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


def _read_schema(
    schema: TableSchema, columns: Sequence[str], filter: pc.Expression | None
) -> TableSchema:
    """``schema`` cut to the columns a task reads: ``columns`` and those ``filter`` names
    (the table's first column when that is none, as
    :func:`~fermion.table.scan.read_fragment` reads it then)."""
    used = referenced_fields(filter) if filter is not None else set()
    names = list(dict.fromkeys([*columns, *(n for n in used if n in schema.arrow.names)]))
    return schema.select_columns(names or schema.arrow.names[:1])


def _task_fragment(message: Any) -> Fragment:
    """A manifest fragment as a task gets it: without its column statistics, which only
    :meth:`FermionReader.partitions` prunes by (``read_fragment`` never looks at them;
    they were most of a partition's bytes on a wide table)."""
    light = type(message)()
    light.CopyFrom(message)
    light.ClearField("stats")
    return fragment_from_proto(light, committed=True)


class FermionReader(DataSourceReader):
    """Reads one version of a table as the declared Spark ``schema``.

    Holds plain values only (it is pickled to every task). Its rows depend on its options
    alone, never on the query that planned it, so Spark may reuse it for any scan of the
    same ``load()``.

    Raises:
        ColumnNotFoundError: A declared column, or one the ``filter`` option names, is
            not in the table.
        InvalidArgumentError: The ``filter`` option is not a condition Fermion understands.
    """

    def __init__(
        self, options: ReadOptions, schema: StructType, parallelism: int | None = None
    ) -> None:
        table = open_dataset(options)
        self.table = table.ref  # the tasks open the table through it: no environment variable
        self.uri = table.uri
        self.version = table.version
        self.schema = schema
        self.columns = list(schema.fieldNames())
        # "_rowid" among the columns (docs/TABLE_FORMAT.md, "Row ids"): read as a LongType
        self.row_ids = False
        if ROW_ID in self.columns:
            _, self.row_ids = row_id_request(table.manifest, table.schema.names, self.columns)
        self.read_columns = [c for c in self.columns if not (self.row_ids and c == ROW_ID)]
        check_columns(self.read_columns, table.schema)
        self.target = arrow_schema(schema)
        # decimals read as their unscaled longs (the unscaled_decimals option), where the
        # declared schema asks for a long
        self.unscaled = [
            c
            for c in self.read_columns
            if options.unscaled_decimals
            and fits_long(table.schema.field(c).type)
            and pa.types.is_int64(self.target.field(c).type)
        ]
        self.rows_per_partition = options.rows_per_partition
        self.max_partition_bytes = options.max_partition_bytes
        self.parallelism = options.min_partitions or parallelism
        self.filter: pc.Expression | None = None
        if options.filter is not None:
            self.filter = parse_predicate(options.filter, table.schema)
        # the tasks read through the schema of the columns they read, not the whole table's:
        # the reader is pickled into every task (10,000 columns were 390 KB of it)
        self.table_schema = _read_schema(table.table_schema, self.read_columns, self.filter)

    def partitions(self) -> list[FragmentSlice | FragmentSlices]:
        """The fragments left after manifest pruning (large ones split between stripes),
        small ones packed together (:mod:`fermion.spark.packing`)."""
        table = dataset(self.table, self.version)
        scanner = table.scanner(self.read_columns, self.filter)
        slices: list[FragmentSlice] = []
        sizes: list[int] = []
        columns = len(table.schema)
        for fragment in scanner.fragments():
            data = _task_fragment(fragment)
            rows = fragment.physical_rows
            file_bytes = sum(f.size_bytes for f in fragment.files)
            size = partial(slice_bytes, file_bytes, len(self.read_columns), columns, of_rows=rows)
            if fragment.physical_rows <= self.rows_per_partition or len(fragment.files) != 1:
                slices.append(FragmentSlice(data))
                sizes.append(size(rows))
                continue
            counts = fragment_stripe_rows(table.storage, fragment)
            groups = _stripe_groups(counts, self.rows_per_partition)
            if len(groups) == 1:
                slices.append(FragmentSlice(data))
                sizes.append(size(rows))
                continue
            for start, stop in groups:
                slices.append(FragmentSlice(data, (start, stop)))
                sizes.append(size(sum(counts[start:stop])))
        packed = pack(sizes, self.max_partition_bytes, self.parallelism)
        return [
            slices[group[0]] if len(group) == 1 else FragmentSlices(tuple(slices[i] for i in group))
            for group in packed
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one partition as batches of the declared schema."""
        if isinstance(partition, FragmentSlice):
            yield from self.read_slice(partition)
        elif isinstance(partition, FragmentSlices):
            for part in partition.slices:
                yield from self.read_slice(part)
        # else: Spark's stand-in InputPartition(None) when partitions() found no fragment

    def read_slice(
        self, part: FragmentSlice, stats: ScanStats | None = None
    ) -> Iterator[pa.RecordBatch]:
        """:meth:`read`, counting what it touched into ``stats``."""
        fragment = fragment_to_proto(part.fragment)
        stripes = None if part.stripes is None else range(*part.stripes)
        table = read_fragment(
            self.table.open(),
            self.table_schema,
            fragment,
            self.read_columns,
            self.filter,
            stats=stats,
            stripes=stripes,
            with_row_offsets=self.row_ids,
        )
        if self.row_ids:
            table = add_row_id_column(table, fragment, self.columns, ROW_OFFSET, keep_offsets=False)
        for name in self.unscaled:
            at = table.schema.get_field_index(name)
            long = table.schema.field(at).with_type(pa.int64())
            table = table.set_column(at, long, unscaled(table.column(at)))
        for batch in table.to_batches():
            yield conform(batch, self.target)
