"""Hypothesis strategies for pruning tests: nullable columns with NaN, ±inf, -0.0 and empty
strings, segments (fragments, stripes, pages) that are all-null, null-free or mixed, and
filters over them that mix comparisons, ``is_null``/``is_valid``/``is_nan``, ``isin``,
``coalesce`` and ``NOT``/``AND``/``OR`` (SQL's three-valued logic decides every row).

A pruned read must return exactly what Arrow's own filter returns on all the rows.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import strategies as st

__all__ = ["COLUMNS", "SCHEMA", "filters", "same_rows", "segment", "segments"]

COLUMNS: dict[str, pa.DataType] = {"i": pa.int64(), "f": pa.float64(), "s": pa.string()}
SCHEMA = pa.schema([pa.field(name, kind) for name, kind in COLUMNS.items()])

_FLOATS = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -2.5]),
    st.integers(-40, 40).map(float),
)
_STRINGS = st.one_of(
    st.sampled_from(
        ["", "a", "ab", "b", "abcdefgh", "abcdefghi", "abcdefghz", "é", "zz\U0001f600"]
    ),
    st.text(alphabet="abz", max_size=10),
)
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "i": st.one_of(st.integers(-40, 40), st.sampled_from([-(2**63), 2**63 - 1])),
    "f": _FLOATS,
    "s": _STRINGS,
}


@st.composite
def _column(draw: st.DrawFn, name: str, rows: int) -> pa.Array:
    """One column of a segment: all null, no nulls, or some nulls; sorted or not (sorted
    columns give segments disjoint ranges, the case pruning is for)."""
    mode = draw(st.sampled_from(["all_null", "no_nulls", "some_nulls", "some_nulls"]))
    if mode == "all_null":
        return pa.nulls(rows, COLUMNS[name])
    values = draw(st.lists(_VALUES[name], min_size=rows, max_size=rows))
    if draw(st.booleans()):
        values.sort(key=lambda v: (isinstance(v, float) and math.isnan(v), v))
    if mode == "some_nulls":
        nulls = draw(st.lists(st.booleans(), min_size=rows, max_size=rows))
        if not any(nulls):
            nulls[0] = True
        values = [None if n else v for v, n in zip(values, nulls, strict=True)]
    return pa.array(values, COLUMNS[name])


@st.composite
def segment(draw: st.DrawFn, max_rows: int = 12) -> pa.Table:
    """One fragment's (or stripe's) rows."""
    rows = draw(st.integers(1, max_rows))
    return pa.table({name: draw(_column(name, rows)) for name in COLUMNS}, schema=SCHEMA)


def segments(max_segments: int = 4, max_rows: int = 12) -> st.SearchStrategy[list[pa.Table]]:
    """Several segments."""
    return st.lists(segment(max_rows), min_size=1, max_size=max_segments)


def _literal(name: str, value: Any) -> pc.Expression:
    return pc.scalar(pa.scalar(value, COLUMNS[name]))


# literals: the special floats often (Arrow's simplifier orders NaN above every bound)
_LITERALS: dict[str, st.SearchStrategy[Any]] = {
    **_VALUES,
    "f": st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, -0.0]), _FLOATS),
}


@st.composite
def _leaf(draw: st.DrawFn) -> pc.Expression:
    name = draw(st.sampled_from(sorted(COLUMNS)))
    field = pc.field(name)
    value = draw(_LITERALS[name])
    shape = draw(
        st.sampled_from(
            ["==", "!=", "<", "<=", ">", ">=", "is_null", "is_valid", "isin", "coalesce"]
            + (["is_nan"] if name == "f" else [])
        )
    )
    if shape in ("==", "!=", "<", "<=", ">", ">="):
        literal = _literal(name, value)
        compare = {
            "==": pc.equal,
            "!=": pc.not_equal,
            "<": pc.less,
            "<=": pc.less_equal,
            ">": pc.greater,
            ">=": pc.greater_equal,
        }[shape]
        # either side: Arrow's simplifier canonicalises ``literal < x`` to ``x > literal``
        return compare(literal, field) if draw(st.booleans()) else compare(field, literal)
    if shape == "is_null":
        return field.is_null()
    if shape == "is_valid":
        return field.is_valid()
    if shape == "is_nan":
        return field.is_nan()
    if shape == "isin":
        more = draw(st.lists(_VALUES[name], min_size=0, max_size=3))
        return field.isin(pa.array([value, *more], COLUMNS[name]))
    fill = draw(_VALUES[name])
    return pc.coalesce(field, _literal(name, fill)) > _literal(name, value)


def filters() -> st.SearchStrategy[pc.Expression]:
    """Boolean expressions over :data:`COLUMNS`, up to a few levels deep."""
    return st.recursive(
        _leaf(),
        lambda inner: st.one_of(
            inner.map(lambda e: ~e),
            st.tuples(inner, inner).map(lambda p: p[0] & p[1]),
            st.tuples(inner, inner).map(lambda p: p[0] | p[1]),
            inner.map(lambda e: e.is_null()),  # true where the inner expression is unknown
        ),
        max_leaves=4,
    )


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """Rows as tuples, NaN spelt out (NaN != NaN) and -0.0 told from 0.0."""

    def norm(v: Any) -> Any:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else (v, math.copysign(1.0, v))
        return v

    columns = [table.column(n).to_pylist() for n in table.column_names]
    return [tuple(norm(v) for v in row) for row in zip(*columns, strict=True)]


def same_rows(got: pa.Table, want: pa.Table) -> bool:
    """Whether two tables hold the same rows in the same order (NaN-aware, bit-exact zeros)."""
    return got.column_names == want.column_names and _rows(got) == _rows(want)
