"""Spark's pushed filters as one ``pyarrow.compute`` expression, exact under SQL's nulls.

Spark hands a Python data source a list of filters (an AND) and keeps the rows for which
the whole predicate is TRUE. Each translated filter becomes an expression that is TRUE
exactly where Spark's filter is TRUE (and FALSE or null elsewhere: a filter drops both),
so the rows Fermion returns are the rows Spark would keep and Spark need not check them
again. ``Not`` is translated as "the child is FALSE", which is not the Arrow negation of
the child when nulls are involved (``NOT (a IN (1, NULL))`` is never TRUE).

What is not translated goes back to Spark: filters on nested fields, on columns whose
declared type differs from the table's, comparisons on floating point columns (Spark
orders NaN above every number and equal to itself, Arrow follows IEEE), and values that
do not fit the column's type.

Example:
    >>> import pyarrow as pa
    >>> from pyspark.sql.datasource import EqualTo, In, IsNull, Not
    >>> schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    >>> pushed = translate([Not(In(("a",), (1, 2))), IsNull(("s",))], schema)
    >>> pushed.accepted, pushed.rejected
    (2, [])
    >>> table = pa.table({"a": [1, 3, None, 4], "s": [None, None, None, "x"]})
    >>> table.filter(pushed.expression).to_pydict()
    {'a': [3], 's': [None]}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

__all__ = ["Pushed", "translate"]

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)


@dataclass
class Pushed:
    """The outcome of :func:`translate`.

    Attributes:
        expression: The AND of the translated filters (``None``: nothing translated).
        accepted: How many filters the expression applies exactly.
        rejected: The filters left for Spark (the very objects it passed).
    """

    expression: pc.Expression | None = None
    accepted: int = 0
    rejected: list[Filter] = field(default_factory=list)


class _Untranslatable(Exception):
    """This filter goes back to Spark."""


def _comparable(arrow_type: pa.DataType) -> bool:
    """Types whose Arrow comparisons order and equate values as Spark does."""
    return (
        pat.is_integer(arrow_type)
        or pat.is_decimal(arrow_type)
        or pat.is_boolean(arrow_type)
        or pat.is_string(arrow_type)
        or pat.is_large_string(arrow_type)
        or pat.is_binary(arrow_type)
        or pat.is_large_binary(arrow_type)
        or pat.is_date(arrow_type)
        or pat.is_timestamp(arrow_type)
    )


def _scalar(value: Any, arrow_type: pa.DataType) -> pa.Scalar:
    if value is None:
        raise _Untranslatable
    if isinstance(value, bytearray):
        value = bytes(value)
    try:
        return pa.scalar(value, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
        raise _Untranslatable from None


def _successor(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix``."""
    code = ord(prefix[-1]) + 1
    if _SURROGATES[0] <= code <= _SURROGATES[1]:
        code = _SURROGATES[1] + 1
    if code > _MAX_CODE_POINT:
        return None
    return prefix[:-1] + chr(code)


class _Translator:
    """Translates one filter into (TRUE where it holds, TRUE where it fails)."""

    def __init__(self, schema: pa.Schema, pushable: Callable[[str], bool]) -> None:
        self._schema = schema
        self._pushable = pushable

    def _column(self, attribute: tuple[str, ...]) -> tuple[pc.Expression, pa.DataType]:
        if len(attribute) != 1 or attribute[0] not in self._schema.names:
            raise _Untranslatable
        name = attribute[0]
        if not self._pushable(name):
            raise _Untranslatable
        return pc.field(name), self._schema.field(name).type

    def _valued(self, attribute: tuple[str, ...]) -> tuple[pc.Expression, pa.DataType]:
        column, arrow_type = self._column(attribute)
        if not _comparable(arrow_type):
            raise _Untranslatable
        return column, arrow_type

    def holds(self, f: Filter) -> tuple[pc.Expression, pc.Expression]:
        """``(true, false)``: expressions TRUE exactly where ``f`` is TRUE / FALSE."""
        if isinstance(f, Not):
            true, false = self.holds(f.child)
            return false, true
        if isinstance(f, IsNull | IsNotNull):
            column, _ = self._column(f.attribute)
            null, valid = column.is_null(), column.is_valid()
            return (null, valid) if isinstance(f, IsNull) else (valid, null)
        if isinstance(f, EqualNullSafe):
            if f.value is None:
                return self.holds(IsNull(f.attribute))
            column, arrow_type = self._valued(f.attribute)
            value = _scalar(f.value, arrow_type)
            return column.is_valid() & (column == value), column.is_null() | (column != value)
        if isinstance(f, In):
            return self._in(f)
        if isinstance(f, StringStartsWith | StringEndsWith | StringContains):
            return self._string(f)
        column, arrow_type = self._valued(f.attribute)
        value = _scalar(f.value, arrow_type)
        if isinstance(f, EqualTo):
            return column == value, column != value
        if isinstance(f, GreaterThan):
            return column > value, column <= value
        if isinstance(f, GreaterThanOrEqual):
            return column >= value, column < value
        if isinstance(f, LessThan):
            return column < value, column >= value
        if isinstance(f, LessThanOrEqual):
            return column <= value, column > value
        raise _Untranslatable

    def _in(self, f: In) -> tuple[pc.Expression, pc.Expression]:
        column, arrow_type = self._valued(f.attribute)
        values = list(f.value)
        known = [_scalar(v, arrow_type).as_py() for v in values if v is not None]
        member = column.isin(pa.array(known, type=arrow_type))  # FALSE (not null) on nulls
        true = column.is_valid() & member
        if len(known) < len(values):  # a NULL in the list: NOT IN is never TRUE
            return true, pc.scalar(False)
        return true, column.is_valid() & ~member

    def _string(
        self, f: StringStartsWith | StringEndsWith | StringContains
    ) -> tuple[pc.Expression, pc.Expression]:
        column, arrow_type = self._column(f.attribute)
        if not (pat.is_string(arrow_type) or pat.is_large_string(arrow_type)):
            raise _Untranslatable
        if not isinstance(f.value, str):
            raise _Untranslatable
        if isinstance(f, StringStartsWith):
            test = pc.starts_with(column, pattern=f.value)
            true = test
            if f.value:  # a range on the column lets statistics prune
                true = (column >= pa.scalar(f.value, arrow_type)) & test
                upper = _successor(f.value)
                if upper is not None:
                    true = true & (column < pa.scalar(upper, arrow_type))
        elif isinstance(f, StringEndsWith):
            test = pc.ends_with(column, pattern=f.value)
            true = test
        else:
            test = pc.match_substring(column, pattern=f.value)
            true = test
        return true, ~test


def translate(
    filters: Sequence[Filter],
    schema: pa.Schema,
    pushable: Callable[[str], bool] = lambda name: True,
) -> Pushed:
    """Translate Spark's pushed filters against the table's Arrow ``schema``.

    Args:
        filters: What ``DataSourceReader.pushFilters`` received (an AND).
        schema: The table's Arrow schema (values are made scalars of its column types).
        pushable: Whether filters on a column may be applied here (e.g. its declared Spark
            type is the table's own).
    """
    translator = _Translator(schema, pushable)
    pushed = Pushed()
    for f in filters:
        try:
            true, _ = translator.holds(f)
        except _Untranslatable:
            pushed.rejected.append(f)
            continue
        pushed.expression = true if pushed.expression is None else pushed.expression & true
        pushed.accepted += 1
    return pushed
