"""``sql``: a Spark SQL query over Fermion tables that reads only the columns it names.

Spark gives a Python data source no column pruning (docs/SPARK.md): a view made with
``spark.read.format("fermion").load(uri)`` hands Spark every column of every row, whatever
the query uses. :func:`sql` registers each table the query reads as a view that reads
only the columns whose names appear in the query text (the ``columns`` option, fixed for
that view's ``load()``), then runs the query with Spark.

Why a name that appears anywhere is kept: Spark resolves a column to the innermost scope
that has it, so a view missing a column the query names could let Spark resolve that name
to another table's column of the same name, silently. Every column whose name (in any
case) is an identifier of the query is kept, so every reference Spark resolves to a table
finds the column there; the answer is the one the full views give. A ``*`` other than in
``count(*)`` keeps every column. Text sqlglot cannot parse keeps every column too (Spark
still runs it, or says why not).

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> from fermion.spark.session import session
    >>> uri = tempfile.mkdtemp()
    >>> _ = ft.write_dataset(pa.table({"id": [1, 2, 3], "v": [5, 6, 7], "w": ["a", "b", "c"]}), uri)
    >>> frame = sql(session("doc"), "SELECT sum(v) AS s FROM t WHERE id > 1", {"t": uri})
    >>> frame.collect()
    [Row(s=13)]
    >>> query_columns("SELECT sum(v) FROM t WHERE id > 1", ["id", "v", "w"])
    ['id', 'v']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa
import sqlglot
from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from sqlglot import expressions as exp

from fermion.errors import InvalidArgumentError
from fermion.spark.options import ReadOptions
from fermion.spark.read import open_dataset
from fermion.spark.source import register
from fermion.spark.sql_views import plan_views
from fermion.spark.types import fits_long

__all__ = ["query_columns", "sql"]


def _decimal_maker(spark: SparkSession) -> Callable[[DataFrame, str, pa.DataType], Column] | None:
    """A function giving a frame's column of unscaled longs as the decimal type it holds,
    by Spark's own ``MakeDecimal`` expression (the one Spark's optimiser uses to sum
    decimals as longs: the value is kept in a long, with no ``BigDecimal`` made), or None
    where the session offers no access to it (Spark Connect, another Spark)."""
    try:
        from pyspark.sql.classic.column import Column as ClassicColumn

        jvm = spark._jvm
        if jvm is None:
            return None
        to_expression = jvm.org.apache.spark.sql.classic.ExpressionUtils
        package = jvm.org.apache.spark.sql.catalyst.expressions
        companion = getattr(getattr(package, "MakeDecimal$"), "MODULE$")
    except Exception:  # noqa: BLE001 - any failure: no such access, plain views
        return None

    def make(frame: DataFrame, name: str, type_: pa.DataType) -> Column:
        child = to_expression.expression(frame[name]._jc)
        # nullOnOverflow false: the longs are a decimal's own digits, never out of range
        made = companion.apply(child, type_.precision, type_.scale, False)
        return ClassicColumn(to_expression.column(made)).alias(name)

    return make


#: Column names a view selects by name without quoting (Spark parses other names).
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _load_view(
    reader: DataFrameReader,
    uri: str,
    schema: pa.Schema,
    columns: Sequence[str],
    make_decimal: Callable[[DataFrame, str, pa.DataType], Column] | None,
) -> DataFrame:
    """``reader.load(uri)`` (which reads ``columns``), where the view reads decimals of at
    most 18 digits as their unscaled longs (the ``unscaled_decimals`` option) and turns
    them back into the same decimals in Spark (``make_decimal``): Spark then makes no
    Java ``BigDecimal`` per value, which the Arrow hand-over of a decimal costs
    (docs/SPARK.md). Without ``make_decimal``, or with a column name that is not a plain
    identifier, or if Spark refuses the expression, the decimals are read as decimals."""
    longs = {c for c in columns if fits_long(schema.field(c).type)}
    if not longs or make_decimal is None or not all(_PLAIN_NAME.fullmatch(c) for c in columns):
        return reader.load(uri)
    try:
        frame = reader.option("unscaled_decimals", "true").load(uri)
        return frame.select(
            *[make_decimal(frame, c, schema.field(c).type) if c in longs else frame[c]
              for c in frame.columns]
        )  # fmt: skip
    except Exception:  # noqa: BLE001 - Spark refused MakeDecimal: the decimals as decimals
        return reader.option("unscaled_decimals", "false").load(uri)


def query_columns(query: str, names: Sequence[str]) -> list[str]:
    """The columns of ``names`` a view must keep for ``query`` (in table order).

    Every name that is an identifier of the query (any case); all of ``names`` when the
    query has a ``*`` outside ``count(*)`` or does not parse; the first name when none
    appears (``SELECT count(*) FROM t`` still needs rows).

    Example:
        >>> query_columns("SELECT a.x FROM t a JOIN u ON a.`Y` = u.y", ["x", "y", "z"])
        ['x', 'y']
        >>> query_columns("SELECT * FROM t", ["x", "y"])
        ['x', 'y']
        >>> query_columns("SELECT count(*) FROM t", ["x", "y"])
        ['x']
    """
    try:
        tree = sqlglot.parse_one(query, read="spark")
    except sqlglot.errors.SqlglotError:
        return list(names)
    for star in tree.find_all(exp.Star):
        if not isinstance(star.parent, exp.Count):
            return list(names)
    mentioned = {ident.name.lower() for ident in tree.find_all(exp.Identifier)}
    kept = [n for n in names if n.lower() in mentioned]
    return kept or list(names[:1])


def sql(
    spark: SparkSession,
    query: str,
    tables: Mapping[str, str],
    *,
    versions: Mapping[str, int] | None = None,
    filters: bool = True,
) -> DataFrame:
    """Run ``query`` with each name of ``tables`` a view of that Fermion table's columns.

    Each view (``createOrReplaceTempView(name)``, replacing a view of that name) reads the
    columns :func:`query_columns` keeps, at the latest version or at ``versions[name]``,
    and skips the rows the ``WHERE`` conjuncts of its only reference rule out (``filters``).

    Args:
        spark: The session (the data source is registered on it).
        query: Spark SQL text.
        tables: View name → table URI, for every Fermion table the query reads.
        versions: View name → version to read (default: the latest).
        filters: Give a view the ``WHERE`` conjuncts that only its reference's rows
            decide, as its ``filter`` option (:func:`fermion.spark.sql_views.plan_views`:
            inner joins only, shapes Fermion evaluates as Spark does; a table read twice
            gets a view per reference). Spark still applies the whole query; ``False``
            reads every row of every view.

    Raises:
        InvalidArgumentError: ``versions`` names a view not in ``tables``, or a view name
            is empty.
        DatasetError: No table at a URI, or no such version.

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> from fermion.spark.session import session
        >>> uri = tempfile.mkdtemp()
        >>> _ = ft.write_dataset(pa.table({"k": [1, 1, 2]}), uri)
        >>> sql(session("doc"), "SELECT k, count(*) AS n FROM t GROUP BY k ORDER BY k",
        ...     {"t": uri}).collect()
        [Row(k=1, n=2), Row(k=2, n=1)]
    """
    versions = dict(versions or {})
    unknown = sorted(set(versions) - set(tables))
    if unknown:
        raise InvalidArgumentError(f"versions names {unknown}, which are not in tables")
    register(spark)
    schemas = {}
    for name, uri in tables.items():
        if not name.strip():
            raise InvalidArgumentError("a view name must not be empty")
        schemas[name] = open_dataset(ReadOptions(uri, versions.get(name))).schema
    plan = plan_views(query, schemas) if filters else None
    make_decimal = _decimal_maker(spark)
    views = plan.filters if plan is not None else dict.fromkeys(tables)
    for view, condition in views.items():
        name = plan.sources[view] if plan is not None else view
        version, schema = versions.get(name), schemas[name]
        columns = query_columns(query, schema.names)
        reader = spark.read.format("fermion")
        if version is not None:
            reader = reader.option("version", str(version))
        # the columns option is comma-separated and stripped: such names are read whole
        plain = all("," not in c and c == c.strip() for c in columns)
        read = list(schema.names)  # the columns the view reads
        if plain and len(columns) != len(schema.names):
            reader = reader.option("columns", ",".join(columns))
            read = columns
        if condition is not None:
            reader = reader.option("filter", condition)
        frame = _load_view(reader, tables[name], schema, read, make_decimal)
        frame.createOrReplaceTempView(view)
    return spark.sql(plan.query if plan is not None and plan.query else query)
