"""The task forms of upsert and add-columns (what the merge and backfill_columns jobs run
in Spark tasks), in-process: equal to ``merge_insert`` / ``add_columns``, one commit, and
errors raised before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.errors import (
    ColumnNotFoundError,
    CommitConflictError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from fermion.table.tasks import (
    AddColumnsPlan,
    UpsertPlan,
    abort_add_columns,
    abort_upsert,
    commit_add_columns,
    commit_upsert,
    execute_add_columns,
    execute_upsert_match,
    execute_write,
    plan_add_columns_tasks,
    plan_upsert,
)
from fermion.table.tasks.upsert import repeated_keys, upsert_counts
from tests.support.budget import examples


def _files(uri: Path) -> set[str]:
    return {str(p.relative_to(uri)) for p in uri.rglob("*") if p.is_file()}


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)  # (nulls too)


def _upsert(uri: Path, source: pa.Table, on: list[str], **delete: Any) -> None:
    """The merge job's steps, in-process (a key matching n rows written n times)."""
    plan = plan_upsert(uri, source.select(on), on, max_rows_per_file=3, **delete)
    plan = UpsertPlan.from_json(plan.to_json())  # what crosses to the workers
    matches = [execute_upsert_match(plan, t) for t in plan.tasks]
    _, _, repeated = upsert_counts(plan, matches)
    extra = []
    for row in repeated.to_pylist():
        mask = None
        for key in on:
            hit = pa.compute.equal(source[key], row[key])
            mask = hit if mask is None else pa.compute.and_(mask, hit)
        extra += [source.filter(mask)] * (row["count"] - 1)
    rows = pa.concat_tables([source, *extra])
    commit_upsert(plan, matches, [execute_write(plan.write_plan(), rows)])


@settings(max_examples=examples(50), deadline=None)
@given(
    table_keys=st.lists(st.none() | st.integers(0, 30), min_size=1, max_size=40),
    source_keys=st.lists(st.integers(0, 40), max_size=25, unique=True),
    pre_delete=st.booleans(),
    far=st.booleans(),
)
# a deleted row before a matched one: the fragment's live positions are not its offsets
@example(table_keys=list(range(12)), source_keys=[6, 9], pre_delete=True, far=False)
@example(table_keys=[None, 3, None, 7, 9], source_keys=[3, 9], pre_delete=False, far=False)
def test_upsert_tasks_equal_merge_insert(
    tmp_path_factory: pytest.TempPathFactory,
    table_keys: list[int | None],
    source_keys: list[int],
    pre_delete: bool,
    far: bool,
) -> None:
    # null table keys (they match nothing), fragments with deletion files already, and a
    # ``far`` source key that spreads the keys too far for a lookup array (a hash join)
    tmp = tmp_path_factory.mktemp("upsert")
    if far:
        source_keys = [*source_keys, 10**12]
    base = pa.table(
        {"k": pa.array(table_keys, pa.int64()), "v": [f"t{i}" for i in range(len(table_keys))]}
    )
    source = pa.table({"k": source_keys, "v": [f"s{k}" for k in source_keys]},
                      schema=base.schema)  # fmt: skip
    for uri in (tmp / "tasks", tmp / "memory"):
        ft.write_dataset(base, uri, max_rows_per_file=4)
        if pre_delete:
            ft.dataset(uri).delete("k < 5")
    if source_keys:
        _upsert(tmp / "tasks", source, ["k"])
        (
            ft.dataset(tmp / "memory").merge_insert("k").when_matched_update_all()
            .when_not_matched_insert_all().execute(source)
        )  # fmt: skip
    assert _rows(ft.dataset(tmp / "tasks").to_table()) == _rows(
        ft.dataset(tmp / "memory").to_table()
    )
    assert ft.dataset(tmp / "tasks").version == ft.dataset(tmp / "memory").version


@settings(max_examples=examples(40), deadline=None)
@given(
    table_keys=st.lists(st.integers(0, 30), min_size=1, max_size=40),
    source_keys=st.lists(st.integers(0, 40), min_size=1, max_size=25, unique=True),
    predicate=st.sampled_from([None, "k < 15", "v = 't3'"]),
)
def test_upsert_tasks_deleting_unmatched_rows_equal_merge_insert(
    tmp_path_factory: pytest.TempPathFactory,
    table_keys: list[int],
    source_keys: list[int],
    predicate: str | None,
) -> None:
    tmp = tmp_path_factory.mktemp("upsert")
    base = pa.table({"k": table_keys, "v": [f"t{i}" for i in range(len(table_keys))]})
    source = pa.table({"k": source_keys, "v": [f"s{k}" for k in source_keys]},
                      schema=base.schema)  # fmt: skip
    for uri in (tmp / "tasks", tmp / "memory"):
        ft.write_dataset(base, uri, max_rows_per_file=4)
    _upsert(tmp / "tasks", source, ["k"], delete_unmatched=True, delete_predicate=predicate)
    (
        ft.dataset(tmp / "memory").merge_insert("k").when_matched_update_all()
        .when_not_matched_insert_all().when_not_matched_by_source_delete(predicate)
        .execute(source)
    )  # fmt: skip
    assert _rows(ft.dataset(tmp / "tasks").to_table()) == _rows(
        ft.dataset(tmp / "memory").to_table()
    )


def test_upsert_plan_refuses_a_bad_delete_predicate(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    ft.write_dataset(pa.table({"k": [1, 2], "s": ["a", "b"]}), uri)
    keys = pa.table({"k": [1]})
    with pytest.raises(InvalidArgumentError, match="needs delete_unmatched"):
        plan_upsert(uri, keys, ["k"], delete_predicate="k > 1")
    with pytest.raises(ColumnNotFoundError):
        plan_upsert(uri, keys, ["k"], delete_unmatched=True, delete_predicate="nope > 1")
    with pytest.raises(InvalidArgumentError):
        plan_upsert(uri, keys, ["k"], delete_unmatched=True, delete_predicate="k >")


def test_upsert_plan_refuses_bad_keys_before_writing(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    ft.write_dataset(pa.table({"k": [1, 2], "s": ["a", "b"]}), uri)
    before = _files(uri)
    with pytest.raises(InvalidArgumentError, match=r"2 keys occur more than once .*: 1, 3"):
        plan_upsert(uri, pa.table({"k": [1, 1, 3, 3, 4]}), ["k"])
    with pytest.raises(InvalidArgumentError, match="1 null keys"):
        plan_upsert(uri, pa.table({"k": pa.array([1, None], pa.int64())}), ["k"])
    with pytest.raises(SchemaMismatchError, match=r"lacks the key columns \['k'\]"):
        plan_upsert(uri, pa.table({"x": [1]}), ["k"])
    with pytest.raises(SchemaMismatchError, match="source key 'k' has type string"):
        plan_upsert(uri, pa.table({"k": ["1"]}), ["k"])
    with pytest.raises(ColumnNotFoundError):
        plan_upsert(uri, pa.table({"z": [1]}), ["z"])
    with pytest.raises(InvalidArgumentError, match="distinct key column names"):
        plan_upsert(uri, pa.table({"k": [1]}), ["k", "k"])
    assert _files(uri) == before


def test_upsert_commit_checks_the_row_count_and_abort_removes_everything(
    tmp_path: Path,
) -> None:
    uri = tmp_path / "t"
    ft.write_dataset(pa.table({"k": [1, 2, 3], "s": ["a", "b", "c"]}), uri)
    before = _files(uri)
    source = pa.table({"k": [2, 9], "s": ["B", "z"]})
    plan = plan_upsert(uri, source.select(["k"]), ["k"])
    matches = [execute_upsert_match(plan, t) for t in plan.tasks]
    short = execute_write(plan.write_plan(), source.slice(0, 1))
    with pytest.raises(InvalidArgumentError, match="1 new rows written, the source has 2"):
        commit_upsert(plan, matches, [short])
    assert abort_upsert(plan, matches, [short]) == 2  # the new rows' file, a deletion file
    assert _files(uri) == before and ft.dataset(uri).version == 1


def test_a_concurrent_merge_of_the_same_keys_makes_the_commit_conflict(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    ft.write_dataset(pa.table({"k": [1, 2, 3], "s": ["a", "b", "c"]}), uri)
    source = pa.table({"k": [2], "s": ["B"]})
    plan = plan_upsert(uri, source.select(["k"]), ["k"])
    matches = [execute_upsert_match(plan, t) for t in plan.tasks]
    rows = execute_write(plan.write_plan(), source)
    ft.dataset(uri).merge_insert("k").when_matched_update_all().execute(
        pa.table({"k": [2], "s": ["other"]})
    )
    with pytest.raises(CommitConflictError):
        commit_upsert(plan, matches, [rows])
    abort_upsert(plan, matches, [rows])
    assert sorted(ft.dataset(uri).to_table()["s"].to_pylist()) == ["a", "c", "other"]


def test_repeated_keys_counts() -> None:
    keys = pa.table({"a": [1, 1, 2, 1], "b": ["x", "x", "x", "y"]})
    assert repeated_keys(keys, ["a", "b"]).to_pylist() == [{"a": 1, "b": "x", "count": 2}]


def test_add_columns_tasks_equal_add_columns(tmp_path: Path) -> None:
    rows = pa.table({"f0": [float(i) for i in range(10)], "n": pa.array(range(10), pa.int16())})
    for uri in (tmp_path / "tasks", tmp_path / "memory"):
        ds = ft.write_dataset(rows, uri, max_rows_per_file=3)
        ds.delete("n IN (1, 5)")
    columns = {"g": "f0 * 2 + n", "h": "n > 4"}
    plan = plan_add_columns_tasks(tmp_path / "tasks", columns, fragments_per_task=2)
    plan = AddColumnsPlan.from_json(plan.to_json())
    assert [len(t.fragments) for t in plan.tasks] == [2, 2]
    summary = commit_add_columns(plan, [execute_add_columns(plan, t) for t in plan.tasks])
    assert summary.committed and summary.version == 3
    ft.dataset(tmp_path / "memory").add_columns(dict(columns))
    ours, expected = ft.dataset(tmp_path / "tasks"), ft.dataset(tmp_path / "memory")
    assert ours.schema == expected.schema
    assert ours.to_table().equals(expected.to_table())


def test_add_columns_tasks_refuse_and_conflict(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    ft.write_dataset(pa.table({"f0": [1.0, 2.0]}), uri)
    with pytest.raises(ColumnNotFoundError):
        plan_add_columns_tasks(uri, {"g": "nope * 2"})
    with pytest.raises(InvalidArgumentError, match="already exist"):
        plan_add_columns_tasks(uri, {"f0": "f0 * 2"})
    with pytest.raises(InvalidArgumentError, match="fragments_per_task"):
        plan_add_columns_tasks(uri, {"g": "f0"}, fragments_per_task=0)
    plan = plan_add_columns_tasks(uri, {"g": "f0 * 2"})
    results = [execute_add_columns(plan, t) for t in plan.tasks]
    with pytest.raises(InvalidArgumentError, match="no result for fragments"):
        commit_add_columns(plan, results[:0])
    ft.write_dataset(pa.table({"f0": [3.0]}), uri, mode="append")  # rows without g
    with pytest.raises(CommitConflictError):
        commit_add_columns(plan, results)
    assert abort_add_columns(plan, results) == 1
    assert ft.dataset(uri).schema.names == ["f0"]
    assert not any(p.startswith(plan.prefix) for p in _files(uri))
