"""LABEL_LIST indices: ``array_contains(list column, value)`` answered from an index of the
list elements (fermion.table.indices), and the ``array_contains`` predicate itself
(fermion.table.list_predicates, fermion.table.predicate).

Every indexed query is checked against the unindexed scan (``use_indices=False``); a
property test runs random lists, filters, deletions, appends and index refreshes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.cli.app import main as cli_main
from fermion.errors import InvalidArgumentError
from fermion.table.indices.build import read_entries
from fermion.table.indices.tasks import (
    commit_index_build,
    execute_index_build,
    plan_index_build,
)
from fermion.table.list_predicates import array_contains, contains_mask
from fermion.table.predicate import parse_predicate
from tests.support.budget import examples


def _both(ds: ft.Dataset, filter: Any) -> tuple[pa.Table, Any]:
    scanner = ds.scanner(None, filter)
    indexed = scanner.to_table()
    plain = ds.scanner(None, filter, use_indices=False).to_table()
    assert indexed.equals(plain), f"{filter}: {indexed.to_pydict()} != {plain.to_pydict()}"
    return indexed, scanner.stats


def _tags_table() -> pa.Table:
    return pa.table({
        "id": list(range(8)),
        "tags": pa.array([["a", "b"], ["c"], None, ["c", None, "c"], [], ["b"], ["a"], ["d"]]),
        "n": pa.array(
            [[1, 2], [3], [None], None, [2], [2, 2], [], [7]], pa.list_(pa.int16())
        ),
    })  # fmt: skip


@pytest.fixture
def ds(tmp_path: Path) -> ft.Dataset:
    return ft.write_dataset(_tags_table(), str(tmp_path / "t"), max_rows_per_file=3)


def test_array_contains_follows_spark_sql() -> None:
    lists = pa.array([["a"], ["b", None], None, [], ["b", "a"]])
    assert contains_mask(lists, "a").to_pylist() == [True, None, None, False, True]
    assert contains_mask(lists, None).to_pylist() == [None] * 5
    schema = pa.schema([("tags", lists.type), ("k", pa.int64())])
    table = pa.table({"tags": lists, "k": list(range(5))})
    expected = {
        "array_contains(tags, 'a')": [0, 4],
        "NOT array_contains(tags, 'a')": [3],
        "array_contains(tags, 'b') OR k = 3": [1, 3, 4],
        "array_contains(tags, NULL)": [],
    }
    for text, ids in expected.items():
        assert table.filter(parse_predicate(text, schema))["k"].to_pylist() == ids, text
    for bad in ["array_contains(k, 1)", "array_contains(tags, k)"]:
        with pytest.raises(InvalidArgumentError):
            parse_predicate(bad, schema)
    with pytest.raises(InvalidArgumentError, match="list of integers or strings"):
        array_contains("f", pa.list_(pa.float64()), 1.0)


def test_label_list_index_answers_array_contains(ds: ft.Dataset) -> None:
    ds.create_index("tags", "LABEL_LIST")
    ds.create_index("n", "label_list")
    assert [(i.name, i.kind, i.columns) for i in ds.indices()] == [
        ("tags_idx", "LABEL_LIST", ("tags",)), ("n_idx", "LABEL_LIST", ("n",)),
    ]  # fmt: skip
    assert ds.indices()[0].files[0].endswith("/label_list.fermion")
    expected = {
        "array_contains(tags, 'c')": [1, 3],
        "array_contains(tags, 'zz')": [],
        "array_contains(n, 2)": [0, 4, 5],
        "array_contains(n, 2) OR array_contains(n, 7)": [0, 4, 5, 7],
        "array_contains(tags, 'a') AND id > 2": [6],
    }
    for text, ids in expected.items():
        table, stats = _both(ds, text)
        assert table["id"].to_pylist() == ids, text
        assert stats.fragments_indexed >= 2, text
        assert stats.index_files_read == 1, text
    # a label absent from the index opens no data file
    _, stats = _both(ds, "array_contains(tags, 'zz')")
    assert stats.files_opened == 0
    # not answered by the index: negations, null literals
    for text in ["NOT array_contains(tags, 'c')", "array_contains(tags, NULL)"]:
        _, stats = _both(ds, text)
        assert stats.fragments_indexed == 0, text
    # each row appears once per label, null elements and null lists are not indexed
    entries = read_entries(ds.storage, ds.indices()[0].files, "LABEL_LIST")
    assert sorted(entries["key"].to_pylist()) == ["a", "a", "b", "b", "c", "c", "d"]


def test_deletions_appends_and_optimize(ds: ft.Dataset) -> None:
    ds.create_index("tags", "LABEL_LIST")
    ds.delete("id = 3")
    table, _ = _both(ds, "array_contains(tags, 'c')")
    assert table["id"].to_pylist() == [1]
    n = pa.array([[1], []], pa.list_(pa.int16()))
    ds.append(pa.table({"id": [8, 9], "tags": pa.array([["c"], ["x"]]), "n": n}))
    table, stats = _both(ds, "array_contains(tags, 'c')")
    assert table["id"].to_pylist() == [1, 8] and stats.fragments_indexed == 3
    ds.optimize_indices()
    table, stats = _both(ds, "array_contains(tags, 'c')")
    assert table["id"].to_pylist() == [1, 8] and stats.fragments_indexed == 4


def test_build_tasks_and_show(ds: ft.Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_index_build(ds.uri, "tags", "LABEL_LIST", fragments_per_task=2)
    assert [t.kind for t in plan.tasks] == ["LABEL_LIST", "LABEL_LIST"]
    commit_index_build(plan, [execute_index_build(t) for t in plan.tasks])
    latest = ft.dataset(ds.uri)
    (index,) = latest.indices()
    assert index.kind == "LABEL_LIST" and len(index.fragment_ids) == 3
    table, stats = _both(latest, "array_contains(tags, 'b')")
    assert table["id"].to_pylist() == [0, 5] and stats.fragments_indexed == 3
    assert cli_main(["show", ds.uri, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["indices"]
    assert [(i["name"], i["kind"], i["columns"]) for i in shown] == [
        ("tags_idx", "LABEL_LIST", ["tags"])
    ]
    with pytest.raises(InvalidArgumentError, match="LABEL_LIST index keys a list"):
        ds.create_index("id", "LABEL_LIST")
    with pytest.raises(InvalidArgumentError, match="cannot key"):
        ds.create_index("tags", "BTREE")


# -- property ------------------------------------------------------------------------------

ELEMENTS = {
    "str": (pa.string(), st.sampled_from(["", "a", "b", "zz"])),
    "int": (pa.int32(), st.integers(-2, 2)),
}


@st.composite
def _lists(draw: Any, value: Any, size: int) -> tuple[list[Any], list[int]]:
    one = st.one_of(st.none(), st.lists(st.one_of(st.none(), value), max_size=4))
    rows = draw(st.lists(one, min_size=1, max_size=size))
    other = draw(st.lists(st.integers(0, 3), min_size=len(rows), max_size=len(rows)))
    return rows, other


@st.composite
def _filters(draw: Any, column_type: pa.DataType, value: Any) -> pc.Expression:
    def atom() -> pc.Expression:
        return array_contains("tags", column_type, draw(value))

    shape = draw(st.sampled_from(["one", "or", "and", "other", "not"]))
    expr = atom()
    if shape == "or":
        expr = expr | atom()
    elif shape == "and":
        expr = expr & atom()
    elif shape == "other":
        expr = expr & (pc.field("o") <= draw(st.integers(0, 3)))
    elif shape == "not":
        expr = ~expr
    return expr


STEPS = st.lists(st.sampled_from(["delete", "append", "optimize"]), max_size=4)


@pytest.mark.parametrize("element", sorted(ELEMENTS))
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), steps=STEPS)
def test_indexed_array_contains_equals_unindexed(
    tmp_path_factory: pytest.TempPathFactory, element: str, data: Any, steps: list[str]
) -> None:
    item, value = ELEMENTS[element]
    column_type = pa.list_(item)

    def table() -> pa.Table:
        rows, other = data.draw(_lists(value, 20))
        return pa.table({"tags": pa.array(rows, column_type), "o": pa.array(other, pa.int64())})

    uri = str(tmp_path_factory.mktemp("t"))
    rows = data.draw(st.integers(1, 8))
    ds = ft.write_dataset(table(), uri, max_rows_per_file=rows)
    ds.create_index("tags", "LABEL_LIST")
    filters = data.draw(st.lists(_filters(column_type, value), min_size=1, max_size=3))

    def check() -> None:
        for expr in filters:
            indexed = ds.scanner(None, expr).to_table()
            plain = ds.scanner(None, expr, use_indices=False).to_table()
            assert indexed.equals(plain), (str(expr), plain.to_pydict())
            assert ds.count_rows(expr) == plain.num_rows

    check()
    for step in steps:
        if step == "delete" and ds.count_rows():
            ds.delete(pc.field("o") == data.draw(st.integers(0, 3)))
        elif step == "append":
            ds.append(table(), max_rows_per_file=rows)
        elif step == "optimize":
            ds.optimize_indices()
        check()
