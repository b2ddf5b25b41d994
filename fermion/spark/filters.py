"""The conjuncts of a Spark SQL condition that Fermion evaluates exactly as Spark does.

:func:`fermion.spark.read_dataset` applies its ``filter`` with Spark, so the rows are Spark's
own answer. To read less, it also hands the reader the part of the condition whose answer
at the source cannot differ from Spark's (the ``filter`` option, fixed for that ``load()``,
which prunes fragments, stripes, pages and bloom filters). This module picks that part: the
top-level ``AND`` conjuncts built only from the shapes below, over columns whose types
compare the same way in Spark and in Arrow.

- ``col op literal`` (``= != <> < <= > >=``, either order), ``col [NOT] IN (literals)``,
  ``col [NOT] BETWEEN a AND b``: on an integer column with integer literals, a string
  column with string literals, a date column with ``DATE '…'`` or ``'YYYY-MM-DD'``
  literals, a boolean column with ``true``/``false``;
- ``col IS [NOT] NULL`` on any top-level column, and a boolean column alone;
- ``col [NOT] LIKE 'pattern'`` on a string column, without ``\\`` or ``ESCAPE``;
- ``NOT``, ``AND``, ``OR`` and parentheses of the above.

- on a decimal column, number literals without an exponent that the column's type holds
  exactly (no more fraction digits than its scale, at most 15 significant digits):
  ``price < 24``, ``discount BETWEEN 0.05 AND 0.07``.

Everything else stays with Spark alone: floating point (Spark orders NaN above every number
and equal to itself, IEEE does not), other decimal literals (Spark compares them exactly, a
cast to the column's scale may round: ``d > 0.055`` is not ``d > 0.06``), timestamps
(Spark reads their literals in the session time zone), arithmetic, functions, a literal
of another kind than its column (Spark casts the column, e.g. ``s = 3`` compares strings
as numbers), and names in another case than the table's. A conjunct kept here is then
checked by :func:`fermion.table.predicate.parse_predicate` and dropped if that refuses it
(a literal that does not fit the column, for example).

Example:
    >>> import pyarrow as pa
    >>> schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("f", pa.float64())])
    >>> exact_conjuncts("id > 5 AND f < 1.0 AND (s = 'a' OR s IS NULL) AND id / 2 = 3", schema)
    "id > 5 AND (s = 'a' OR s IS NULL)"
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.types as pat
import sqlglot
from sqlglot import expressions as exp

from fermion.errors import FermionError
from fermion.table.predicate import parse_predicate

__all__ = ["conjuncts", "exact_conjuncts"]

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def exact_conjuncts(text: str, schema: pa.Schema) -> str | None:
    """The conjuncts of ``text`` that Fermion can apply with Spark's answer, as SQL.

    Args:
        text: A Spark SQL boolean condition.
        schema: The table's Arrow schema.

    Returns:
        The kept conjuncts joined by ``AND`` (Spark SQL text that
        :func:`fermion.table.predicate.parse_predicate` accepts), or ``None`` when no
        conjunct can be applied at the source (or ``text`` does not parse).

    Example:
        >>> import pyarrow as pa
        >>> exact_conjuncts("d >= '2024-05-01'", pa.schema([("d", pa.date32())]))
        "d >= '2024-05-01'"
        >>> exact_conjuncts("upper(s) = 'A'", pa.schema([("s", pa.string())])) is None
        True
    """
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError:
        return None
    kept: list[str] = []
    exact = _Exact(schema)
    for conjunct in conjuncts(tree):
        if not exact.check(conjunct):
            continue
        sql = conjunct.sql(dialect="spark")
        try:
            parse_predicate(sql, schema)
        except FermionError:
            continue
        kept.append(f"({sql})" if isinstance(conjunct, exp.Or) else sql)
    return " AND ".join(kept) if kept else None


def conjuncts(node: Any) -> list[Any]:
    """The top-level ``AND`` operands of the sqlglot ``node`` (parentheses looked through)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


class _Exact:
    """Whether a condition is built only of shapes Arrow evaluates as Spark does."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def check(self, node: Any) -> bool:
        if isinstance(node, exp.Paren):
            return self.check(node.this)
        if isinstance(node, exp.And | exp.Or):
            return self.check(node.this) and self.check(node.expression)
        if isinstance(node, exp.Not):
            return self.check(node.this)
        if isinstance(node, exp.Is):
            return isinstance(node.expression, exp.Null) and self.kind(node.this) is not None
        if isinstance(node, exp.Column):  # a boolean column used as a condition
            kind = self.kind(node)
            return kind is not None and pat.is_boolean(kind)
        if isinstance(node, _COMPARISONS):
            left, right = node.this, node.expression
            if isinstance(right, exp.Column):
                left, right = right, left
            return self.comparable(left, right)
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or not node.expressions:
                return False
            return all(self.comparable(node.this, v) for v in node.expressions)
        if isinstance(node, exp.Between):
            return self.comparable(node.this, node.args["low"]) and self.comparable(
                node.this, node.args["high"]
            )
        if isinstance(node, exp.Like):
            kind = self.kind(node.this)
            pattern = node.expression
            return (
                kind is not None
                and _is_string(kind)
                and isinstance(pattern, exp.Literal)
                and pattern.is_string
                and "\\" not in str(pattern.this)
                and node.args.get("escape") is None
            )
        return False

    def kind(self, node: Any) -> pa.DataType | None:
        """The type of a top-level column named exactly as in the table, else None."""
        if not isinstance(node, exp.Column) or node.table:
            return None
        index = self.schema.get_field_index(node.name)
        return None if index < 0 else self.schema.field(index).type

    def comparable(self, column: Any, literal: Any) -> bool:
        """``column`` compared with ``literal`` means the same in Spark and in Arrow."""
        kind = self.kind(column)
        if kind is None:
            return False
        if isinstance(literal, exp.Neg):
            literal = literal.this
            if not (pat.is_integer(kind) or pat.is_decimal(kind)):
                return False
        if pat.is_integer(kind):
            return isinstance(literal, exp.Literal) and literal.is_int
        if _is_string(kind):
            return isinstance(literal, exp.Literal) and literal.is_string
        if pat.is_date32(kind):
            if isinstance(literal, exp.Cast) and literal.to.this == exp.DataType.Type.DATE:
                literal = literal.this
            return (
                isinstance(literal, exp.Literal)
                and literal.is_string
                and _ISO_DATE.fullmatch(str(literal.this)) is not None
            )
        if pat.is_boolean(kind):
            return isinstance(literal, exp.Boolean)
        if pat.is_decimal(kind):
            return (
                isinstance(literal, exp.Literal)
                and not literal.is_string
                and _exact_decimal(str(literal.this), kind)
            )
        return False


_PLAIN_NUMBER = re.compile(r"(\d+)(?:\.(\d*))?")
#: Digits a double holds exactly: the predicate reads ``0.05`` as a float, then casts it.
_DOUBLE_DIGITS = 15


def _exact_decimal(text: str, kind: pa.DataType) -> bool:
    """A literal that becomes the same decimal in Spark and in Fermion's predicate.

    Spark reads ``24`` and ``0.05`` as exact decimals; the predicate reads them as an
    integer or a float and casts to the column's type. That is exact when the literal has no
    exponent, no more fraction digits than the column's scale, fits the column's integer
    digits, and has at most 15 significant digits (a double rounds back to it).

    Example:
        >>> kind = pa.decimal128(15, 2)
        >>> [_exact_decimal(t, kind) for t in ("24", "0.05", "0.055", "1e3", "1" * 14)]
        [True, True, False, False, False]
    """
    match = _PLAIN_NUMBER.fullmatch(text)
    if match is None:
        return False
    whole, fraction = match.group(1).lstrip("0"), (match.group(2) or "").rstrip("0")
    scale, precision = kind.scale, kind.precision
    return (
        len(fraction) <= scale
        and len(whole) <= precision - scale
        and len(whole) + len(fraction) <= _DOUBLE_DIGITS
    )


def _is_string(kind: pa.DataType) -> bool:
    return bool(pat.is_string(kind) or pat.is_large_string(kind))
