"""SQL predicates (Spark SQL syntax) as pyarrow compute expressions.

The delete job, the CLI and Python callers give row predicates as SQL text, e.g.
``day = DATE '2024-05-01' AND user_id IN (3, 7)``. This module parses the text with
sqlglot (Spark dialect: backquoted names, ``\\'`` in strings) and builds the
``pyarrow.compute.Expression`` that tables and files filter and prune with. Literals
compared with a column are cast to the column's type, so ``day = '2024-05-01'`` works on a
date column.

Supported: ``= == != <> < <= > >=``, ``AND OR NOT``, ``IN (...)``, ``NOT IN``,
``IS [NOT] NULL``, ``BETWEEN``, ``LIKE`` (``%`` and ``_``), ``array_contains(list column,
literal)`` (lists of integers or strings; :mod:`fermion.table.list_predicates`), ``+ - * /``,
parentheses,
number / string / boolean / ``NULL`` / ``DATE '...'`` / ``TIMESTAMP '...'`` literals. Anything
else is an :class:`~fermion.errors.InvalidArgumentError` naming what was not understood.

Example:
    >>> import pyarrow as pa
    >>> schema = pa.schema([("id", pa.int64()), ("day", pa.date32())])
    >>> expr = parse_predicate("id IN (1, 2) AND day >= '2024-05-01'", schema)
    >>> table = pa.table({"id": [1, 2, 3], "day": pa.array([19844, 19843, 19844], pa.date32())})
    >>> table.filter(expr)["id"].to_pylist()
    [1]
"""

from __future__ import annotations

import datetime
import decimal
import functools
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import expressions as exp

from fermion.errors import ColumnNotFoundError, InvalidArgumentError
from fermion.table.list_predicates import array_contains

__all__ = ["parse_expression", "parse_predicate"]

_COMPARISONS: dict[type, Callable[[Any, Any], pc.Expression]] = {
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
    exp.LT: lambda a, b: a < b,
    exp.LTE: lambda a, b: a <= b,
    exp.GT: lambda a, b: a > b,
    exp.GTE: lambda a, b: a >= b,
}
_ARITHMETIC: dict[type, Callable[[Any, Any], pc.Expression]] = {
    exp.Add: pc.add_checked,
    exp.Sub: pc.subtract_checked,
    exp.Mul: pc.multiply_checked,
    exp.Div: pc.divide,
}


#: ``x IN (...)`` with at most this many values becomes ``x = a OR x = b ...``.
_IN_AS_EQUALITIES = 32


class _Literal:
    """A literal before its type is known (cast to the column it is compared with)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def parse_predicate(text: str, schema: pa.Schema) -> pc.Expression:
    """Parse a SQL boolean expression over the columns of ``schema``.

    Raises:
        InvalidArgumentError: Not a boolean SQL expression this module understands.
        ColumnNotFoundError: It names a column ``schema`` lacks.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("a predicate must be non-empty SQL text")
    return _parsed_predicate(text, schema)


@functools.lru_cache(maxsize=256)
def _parsed_predicate(text: str, schema: pa.Schema) -> pc.Expression:
    """:func:`parse_predicate`, kept for the next scans with the same text on an equal
    schema (expressions are immutable; a lookup repeated in a loop parses once)."""
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError as exc:
        first = str(exc).splitlines()[0]
        raise InvalidArgumentError(f"cannot parse predicate {text!r}: {first}") from None
    result = _Builder(schema, text).build(tree)
    if not isinstance(result, pc.Expression):
        raise InvalidArgumentError(f"predicate {text!r} is a constant, not a row condition")
    return result


def parse_expression(text: str, schema: pa.Schema) -> pc.Expression:
    """Parse a SQL value expression (``f0 * 2 + f1``, ``'x'``, ``NULL``, a predicate...)
    over the columns of ``schema``; a constant becomes a scalar expression.

    Raises:
        InvalidArgumentError: Not an expression this module understands.
        ColumnNotFoundError: It names a column ``schema`` lacks.

    Example:
        >>> schema = pa.schema([("f", pa.int64())])
        >>> str(parse_expression("f * 2 + 1", schema))
        'add_checked(multiply_checked(f, 2), 1)'
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("an expression must be non-empty SQL text")
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError as exc:
        first = str(exc).splitlines()[0]
        raise InvalidArgumentError(f"cannot parse expression {text!r}: {first}") from None
    result = _Builder(schema, text).build(tree)
    return pc.scalar(result.value) if isinstance(result, _Literal) else result


class _Builder:
    def __init__(self, schema: pa.Schema, text: str) -> None:
        self.schema, self.text = schema, text

    def fail(self, node: Any) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"predicate {self.text!r}: {node.key.upper()} ({node.sql(dialect='spark')}) "
            "is not supported"
        )

    def build(self, node: Any) -> Any:
        if isinstance(node, exp.Paren):
            return self.build(node.this)
        if isinstance(node, exp.Column):
            return self.column(node)
        if isinstance(node, exp.And | exp.Or):
            left, right = self.boolean(node.this), self.boolean(node.expression)
            return left & right if isinstance(node, exp.And) else left | right
        if isinstance(node, exp.Not):
            return ~self.boolean(node.this)
        if type(node) in _COMPARISONS:
            left, right = self.pair(node.this, node.expression)
            return _COMPARISONS[type(node)](left, right)
        if type(node) in _ARITHMETIC:
            left, right = self.pair(node.this, node.expression)
            return _ARITHMETIC[type(node)](left, right)
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self.fail(node)
            null = self.field(node.this).is_null()
            return ~null if node.args.get("negate") else null
        if isinstance(node, exp.In):
            column = self.field(node.this)
            if node.args.get("query") is not None or not node.expressions:
                raise self.fail(node)
            kind = self.type_of(node.this)
            values = [self.value(v, kind) for v in node.expressions]
            if len(values) <= _IN_AS_EQUALITIES:  # SQL's null semantics, and prunable
                out = column == pc.scalar(pa.scalar(values[0], kind))
                for value in values[1:]:
                    out = out | (column == pc.scalar(pa.scalar(value, kind)))
                return out
            # is_in says false for a null input; SQL says unknown (matters under NOT)
            unknown = pc.scalar(pa.scalar(None, pa.bool_()))
            return pc.if_else(column.is_null(), unknown, column.isin(pa.array(values, kind)))
        if isinstance(node, exp.Between):
            column = self.field(node.this)
            kind = self.type_of(node.this)
            return (column >= self.value(node.args["low"], kind)) & (
                column <= self.value(node.args["high"], kind)
            )
        if isinstance(node, exp.Like):
            pattern = self.build(node.expression)
            if not isinstance(pattern, _Literal) or not isinstance(pattern.value, str):
                raise self.fail(node)
            matched = pc.match_like(self.field(node.this), pattern.value)
            # sqlglot keeps ``s NOT LIKE p`` as one LIKE node marked negated
            return ~matched if node.args.get("negate") else matched
        if isinstance(node, exp.ArrayContains):
            value = self.build(node.expression)
            if not isinstance(value, _Literal):
                raise self.fail(node)
            self.field(node.this)  # (a column of the schema)
            return array_contains(node.this.name, self.type_of(node.this), value.value)
        if isinstance(node, exp.Literal | exp.Boolean | exp.Null | exp.Neg | exp.Cast):
            return _Literal(self.constant(node))
        raise self.fail(node)

    def column(self, node: exp.Column) -> pc.Expression:
        if node.table:
            raise self.fail(node)
        if self.schema.get_field_index(node.name) < 0:
            raise ColumnNotFoundError(f"predicate {self.text!r}: no column named {node.name!r}")
        return pc.field(node.name)

    def boolean(self, node: Any) -> pc.Expression:
        value = self.build(node)
        if isinstance(value, _Literal):
            if isinstance(value.value, bool):
                return pc.scalar(value.value)
            raise self.fail(node)
        return value

    def field(self, node: Any) -> pc.Expression:
        if not isinstance(node, exp.Column):
            raise self.fail(node)
        return self.column(node)

    def type_of(self, node: Any) -> pa.DataType:
        return self.schema.field(node.name).type

    def pair(self, left: Any, right: Any) -> tuple[Any, Any]:
        """Both sides of a binary operator; a literal takes the type of a column opposite."""
        a, b = self.build(left), self.build(right)
        if isinstance(a, _Literal) and isinstance(b, _Literal):
            raise self.fail(left.parent or left)
        if isinstance(a, _Literal):
            a = self.cast(a, right)
        if isinstance(b, _Literal):
            b = self.cast(b, left)
        return a, b

    def cast(self, literal: _Literal, opposite: Any) -> pc.Expression:
        if isinstance(opposite, exp.Column):
            return pc.scalar(self.convert(literal.value, self.type_of(opposite)))
        try:
            return pc.scalar(literal.value)
        except OverflowError:  # an integer beyond int64 and uint64 beside an expression
            raise InvalidArgumentError(
                f"predicate {self.text!r}: {literal.value!r} does not fit a 64-bit integer"
            ) from None

    def value(self, node: Any, kind: pa.DataType) -> Any:
        literal = self.build(node)
        if not isinstance(literal, _Literal):
            raise self.fail(node)
        return self.convert(literal.value, kind).as_py()

    def convert(self, value: Any, kind: pa.DataType) -> pa.Scalar:
        if pa.types.is_decimal(kind) and isinstance(value, int) and not isinstance(value, bool):
            value = decimal.Decimal(value)  # an int64 scalar does not fit decimal(p<21, s)
        try:
            try:
                scalar = pa.scalar(value)
            except OverflowError:  # an integer beyond int64: built as the column's type
                if pa.types.is_floating(kind):
                    return pa.scalar(float(value), type=kind)
                return pa.scalar(value, type=kind)
            return scalar.cast(kind)
        except (
            pa.ArrowInvalid,
            pa.ArrowNotImplementedError,
            pa.ArrowTypeError,
            OverflowError,
        ) as exc:
            raise InvalidArgumentError(
                f"predicate {self.text!r}: {value!r} is not a {kind} value ({exc})"
            ) from None

    def constant(self, node: Any) -> Any:
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Neg):
            inner = self.constant(node.this)
            if isinstance(inner, int | float) and not isinstance(inner, bool):
                return -inner
            raise self.fail(node)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return str(node.this)
            text = str(node.this)
            try:
                return int(text)
            except ValueError:
                return float(text)
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
            target = node.to.this
            raw = str(node.this.this)
            try:
                if target == exp.DataType.Type.DATE:
                    return datetime.date.fromisoformat(raw)
                if target in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ):
                    return datetime.datetime.fromisoformat(raw)
            except ValueError as exc:
                raise InvalidArgumentError(f"predicate {self.text!r}: {exc}") from None
        raise self.fail(node)
