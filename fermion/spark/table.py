"""``read_dataset``: a DataFrame of a Fermion table reading only the columns it needs.

(``read_table`` before: ``fermion.read_table`` reads one Fermion *file* into an Arrow table,
so the name now says that this reads a table — a dataset, as ``fermion.dataset`` opens.)

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> from fermion.spark.session import session
    >>> uri = tempfile.mkdtemp()
    >>> _ = ft.write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), uri)
    >>> read_dataset(session("doc"), uri, columns=["v"], filter="id >= 2").collect()
    [Row(v='b'), Row(v='c')]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession

from fermion.deprecation import deprecated_alias
from fermion.spark.filters import exact_conjuncts
from fermion.spark.options import ReadOptions, table_options
from fermion.spark.read import check_columns, open_dataset
from fermion.spark.source import register
from fermion.table.ref import TableRef

__all__ = ["read_dataset"]

_IDENTIFIER = re.compile(r"`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z0-9_]*)")


def _mentioned(text: str, names: Sequence[str]) -> list[str]:
    """Column names that appear as identifiers in ``text`` (a superset is harmless)."""
    tokens = set()
    for quoted, bare in _IDENTIFIER.findall(text):
        tokens.add((quoted.replace("``", "`") if quoted else bare).lower())
    return [n for n in names if n.lower() in tokens]


def read_dataset(
    spark: SparkSession,
    uri: str | TableRef,
    columns: Sequence[str] | None = None,
    filter: str | Column | None = None,
    version: int | None = None,
    *,
    tag: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    manifest_store: str | None = None,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A DataFrame of a Fermion table that reads only ``columns``, filtered at the source.

    Python data sources get no column pruning from Spark (``select`` still reads every
    column), so the projection is given here. A SQL ``filter`` is applied by Spark to the
    loaded DataFrame, so the rows are Spark's own answer; the part of it that Fermion
    evaluates exactly as Spark does (:func:`fermion.spark.filters.exact_conjuncts`:
    comparisons of integer, string, date and boolean columns with literals, ``IN``,
    ``IS NULL``, ``LIKE``…) is also given to the reader as its ``filter`` option, which
    prunes fragments, stripes, pages and bloom filters. A Column ``filter`` is applied by
    Spark only. Columns the filter mentions are read too and dropped after it.

    Args:
        spark: The session (the data source is registered on it).
        uri: Table location (path, URL or :class:`~fermion.table.ref.TableRef`).
        columns: Columns to return (default: all).
        filter: A Spark SQL condition (``"id > 5 AND name LIKE 'a%'"``) or a Column.
        version: Read this version (default: the latest).
        tag: Read the version of this tag.
        storage_options: Options of the table's fsspec filesystem (over the ref's).
        manifest_store: The table's external manifest store (over the ref's).
        options: Further read options of the data source (docs/SPARK.md), e.g.
            ``{"max_partition_bytes": "1"}`` for one partition per fragment.

    Raises:
        ColumnNotFoundError: A name in ``columns`` is not a column of the table.
        DatasetError: No table at ``uri``, or no such version or tag.

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> from fermion.spark.session import session
        >>> uri = tempfile.mkdtemp()
        >>> _ = ft.write_dataset(pa.table({"a": [1, 2], "b": [3.0, 4.0]}), uri)
        >>> read_dataset(session("doc"), uri, ["b"], version=1).columns
        ['b']
    """
    register(spark)
    ref = TableRef.of(uri, storage_options=storage_options, manifest_store=manifest_store)
    extra = table_options(ref)
    read = ReadOptions(
        ref.uri,
        version,
        tag,
        storage_options=ref.storage_options,
        manifest_store=extra.get("manifest_store"),
    )
    schema = open_dataset(read).schema
    names = schema.names
    wanted = list(names) if columns is None else list(columns)
    check_columns(wanted, schema)
    needed = list(wanted)
    if filter is not None:
        text = filter if isinstance(filter, str) else str(filter)
        needed += [n for n in _mentioned(text, names) if n not in needed]
    reader = spark.read.format("fermion").options(**extra).options(**dict(options or {}))
    if version is not None:
        reader = reader.option("version", str(version))
    if tag is not None:
        reader = reader.option("tag", tag)
    if columns is not None or len(needed) != len(names):
        reader = reader.option("columns", ",".join(needed))
    if isinstance(filter, str):
        exact = exact_conjuncts(filter, schema)
        if exact is not None:
            reader = reader.option("filter", exact)
    frame = reader.load(ref.uri)
    if filter is not None:
        frame = frame.filter(filter)
    if needed != wanted:
        frame = frame.select(*wanted)
    return frame


#: Deprecated name of :func:`read_dataset` (``fermion.read_table`` reads a file).
read_table = deprecated_alias(
    read_dataset, "fermion.spark.read_table", "fermion.spark.read_dataset"
)
