"""Property: a scan through a scalar index returns exactly what the unindexed scan returns.

Random tables (integer, float and string keys with nulls, a few fragments), a BTREE or
BITMAP index, then a random history of deletions, appends, compactions and index
refreshes; after each step random filters (equality, IN, ranges, IS NULL, ORs, and
conjunctions with a column the index does not hold) give the same rows, in the same order,
with and without the index.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.table.indices import lookup
from tests.support.budget import examples

KEY_TYPES = {
    "int": (pa.int64(), st.integers(-5, 5)),
    "float": (pa.float64(), st.sampled_from([-1.5, 0.0, 0.5, 2.0, float("nan")])),
    "str": (pa.string(), st.sampled_from(["", "a", "ab", "b", "zz"])),
}


@st.composite
def _rows(draw: Any, value: Any, size: int) -> pa.Table:
    keys = draw(st.lists(st.one_of(st.none(), value), min_size=1, max_size=size))
    other = draw(st.lists(st.integers(0, 3), min_size=len(keys), max_size=len(keys)))
    return keys, other


@st.composite
def _filters(draw: Any, value: Any, t: pa.DataType) -> pc.Expression:
    k = pc.field("k")

    def scalar() -> pc.Expression:
        return pc.scalar(pa.scalar(draw(value), t))

    def atom() -> pc.Expression:
        kind = draw(st.sampled_from(["eq", "lt", "le", "gt", "ge", "in", "null"]))
        if kind == "eq":
            return k == scalar()
        if kind == "lt":
            return k < scalar()
        if kind == "le":
            return scalar() >= k
        if kind == "gt":
            return k > scalar()
        if kind == "ge":
            return k >= scalar()
        if kind == "in":
            values = draw(st.lists(value, min_size=1, max_size=4))
            return k.isin(pa.array(values, t))
        return k.is_null()

    expr = atom()
    shape = draw(st.sampled_from(["one", "or", "and", "other"]))
    if shape == "or":
        expr = expr | atom()
    elif shape == "and":
        expr = expr & atom()
    elif shape == "other":
        expr = expr & (pc.field("o") <= draw(st.integers(0, 3)))
    return expr


def _rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows in order, NaN as a string (NaN != NaN for Table.equals)."""
    columns = [
        ["NaN" if isinstance(v, float) and v != v else v for v in c.to_pylist()]
        for c in table.columns
    ]
    return list(zip(*columns, strict=True))


STEPS = st.lists(st.sampled_from(["delete", "append", "compact", "optimize"]), max_size=4)


@pytest.mark.parametrize("path", ["take", "read"])
@pytest.mark.parametrize("key_type", sorted(KEY_TYPES))
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(["BTREE", "BITMAP"]), steps=STEPS)
def test_indexed_scans_equal_unindexed_scans(
    tmp_path_factory: pytest.TempPathFactory,
    key_type: str,
    path: str,
    data: Any,
    kind: str,
    steps: list[str],
) -> None:
    # candidates read row by row (take), or picked from a read of the fragment's columns
    ratio = 0 if path == "take" else 1 << 40
    with mock.patch.object(lookup, "DENSE_READ_RATIO", ratio):
        _history(tmp_path_factory, key_type, data, kind, steps)


def _history(
    tmp_path_factory: pytest.TempPathFactory, key_type: str, data: Any, kind: str, steps: list[str]
) -> None:
    t, value = KEY_TYPES[key_type]

    def table() -> pa.Table:
        keys, other = data.draw(_rows(value, 30))
        return pa.table({"k": pa.array(keys, t), "o": pa.array(other, pa.int64())})

    uri = str(tmp_path_factory.mktemp("t"))
    rows = data.draw(st.integers(1, 12))
    ds = ft.write_dataset(table(), uri, max_rows_per_file=rows)
    ds.create_index("k", kind)
    filters = data.draw(st.lists(_filters(value, t), min_size=1, max_size=4))

    def check() -> None:
        for expr in filters:
            scanner = ds.scanner(None, expr)
            indexed = scanner.to_table()
            plain = ds.scanner(None, expr, use_indices=False).to_table()
            assert indexed.schema.equals(plain.schema)
            assert _rows_of(indexed) == _rows_of(plain), (str(expr), _rows_of(plain))
            assert ds.count_rows(expr) == plain.num_rows

    check()
    for step in steps:
        if step == "delete" and ds.count_rows():
            ds.delete(pc.field("o") == data.draw(st.integers(0, 3)))
        elif step == "append":
            ds.append(table(), max_rows_per_file=rows)
        elif step == "compact":
            ds.compact_files(target_rows_per_fragment=data.draw(st.integers(5, 40)))
        elif step == "optimize":
            ds.optimize_indices()
        check()
