"""``Dataset.update`` and ``write_dataset(..., replace_where=...)``: semantics, bad inputs,
older readers, and real processes racing updates (docs/TABLE_FORMAT.md, "Merge-insert,
update, replace_where")."""

from __future__ import annotations

import datetime
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.errors import (
    ColumnNotFoundError,
    DatasetError,
    FermionError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from tests.support.budget import examples

Runner = Callable[..., list[tuple[str, Any]]]


def _table(uri: str, n: int = 20) -> ft.Dataset:
    data = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "v": pa.array([10 * i for i in range(n)], pa.int64()),
            "f": pa.array([i / 2 for i in range(n)]),
            "ds": pa.array([datetime.date(2026, 11, 19 + i % 3) for i in range(n)]),
        }
    )
    return ft.write_dataset(data, uri, max_rows_per_file=5)


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["k"])


@settings(max_examples=examples(40), deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.integers(-1000, 1000)), min_size=1, max_size=30),
    threshold=st.integers(-1000, 1000),
    scale=st.integers(-5, 5),
    shift=st.integers(-5, 5),
)
def test_update_equals_the_expression_computed_by_arrow(
    values: list[int | None], threshold: int, scale: int, shift: int
) -> None:
    keys = pa.array(range(len(values)), pa.int64())
    data = pa.table({"k": keys, "v": pa.array(values, pa.int64())})
    ds = ft.write_dataset(data, tempfile.mkdtemp(), max_rows_per_file=4)
    matches = pc.fill_null(pc.greater(data["v"], threshold), False)
    new = pc.add(pc.multiply(data["v"], scale), shift)
    want = data.set_column(1, "v", pc.if_else(matches, new, data["v"]))
    rows = ds.update(f"v > {threshold}", set={"v": f"v * {scale} + {shift}"})
    assert rows == pc.sum(matches.cast(pa.int64())).as_py()
    assert _sorted(ds.to_table()) == _sorted(want)
    assert ds.version == (2 if rows else 1)


def test_update_is_one_version_and_old_readers_keep_their_rows(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    before = ds.to_table()
    assert ds.update("ds = DATE '2026-11-20'", set={"f": "f * 2", "v": "k"}) == 7
    assert ds.version == 2 and ds.manifest.summary.operation == "update"
    summary = ds.manifest.summary
    assert (summary.added_rows, summary.deleted_rows) == (7, 7)
    got = {r["k"]: r for r in ds.to_table().to_pylist()}
    for row in before.to_pylist():
        hit = row["ds"] == datetime.date(2026, 11, 20)
        assert got[row["k"]]["v"] == (row["k"] if hit else row["v"])
        assert got[row["k"]]["f"] == (row["f"] * 2 if hit else row["f"])
    assert _sorted(ft.dataset(uri, version=1).to_table()) == _sorted(before)


def test_update_every_row_and_set_a_literal_or_null(tmp_path: Path) -> None:
    ds = _table(str(tmp_path / "t"), n=6)
    assert ds.update(set={"v": "NULL", "ds": "'2027-01-01'"}) == 6
    table = ds.to_table()
    assert table["v"].null_count == 6
    assert set(table["ds"].to_pylist()) == {datetime.date(2027, 1, 1)}
    assert ds.update("k = 999", set={"v": "1"}) == 0 and ds.version == 2  # nothing to do


BAD_UPDATES: dict[str, tuple[Any, dict[str, Any], type[FermionError], str]] = {
    "unknown target column": ("k > 1", {"w": "1"}, ColumnNotFoundError, "no column 'w'"),
    "unknown column in the value": ("k > 1", {"v": "w + 1"}, ColumnNotFoundError, "'w'"),
    "unknown column in where": ("w > 1", {"v": "1"}, ColumnNotFoundError, "'w'"),
    "not SQL": ("k > 1", {"v": "v +"}, InvalidArgumentError, "cannot parse"),
    "string into an integer": (
        "k > 1", {"v": "'abc'"}, SchemaMismatchError, "do not fit column 'v'",
    ),
    "fraction into an integer": ("k > 1", {"v": "f"}, SchemaMismatchError, "do not fit"),
    "overflow": ("k > 1", {"v": "v * 9223372036854775807"}, InvalidArgumentError, "overflow"),
    "no assignment": ("k > 1", {}, InvalidArgumentError, "needs set="),
    "not an expression": ("k > 1", {"v": 3}, InvalidArgumentError, "SQL text"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_UPDATES))
def test_bad_updates_are_typed_errors_and_commit_nothing(tmp_path: Path, case: str) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    where, assignments, error, message = BAD_UPDATES[case]
    with pytest.raises(error, match=message):
        ds.update(where, set=assignments)
    assert ft.dataset(uri).version == 1 and ds.version == 1


def test_replace_where_replaces_exactly_the_matching_rows_in_one_version(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    before = _table(uri).to_table()
    day = datetime.date(2026, 11, 20)
    new = pa.table(
        {
            "k": pa.array([100, 101], pa.int64()),
            "v": pa.array([1, 2], pa.int64()),
            "f": [0.0, 0.0],
            "ds": [day, day],
        }
    )
    ds = ft.write_dataset(new, uri, mode="overwrite", replace_where="ds = '2026-11-20'")
    assert ds.version == 2 and ds.manifest.summary.operation == "update"
    kept = [r for r in before.to_pylist() if r["ds"] != day]
    assert _sorted(ds.to_table()) == _sorted(pa.Table.from_pylist(kept + new.to_pylist()))
    assert _sorted(ft.dataset(uri, version=1).to_table()) == _sorted(before)
    empty = new.slice(0, 0)  # no new rows: the matching rows are deleted
    ds = ft.write_dataset(empty, uri, mode="overwrite", replace_where="ds = '2026-11-20'")
    assert ds.version == 3 and ds.count_rows() == len(kept)


def test_replace_where_refuses_rows_outside_the_predicate(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _table(uri)
    day = datetime.date(2026, 11, 20)
    rows = {
        "k": pa.array([1, 2, 3], pa.int64()),
        "v": pa.array([1, 2, 3], pa.int64()),
        "f": [0.0, 0.0, 0.0],
    }
    for days, bad in (([day, day, datetime.date(2026, 11, 21)], 1), ([day, None, None], 2)):
        data = pa.table({**rows, "ds": pa.array(days, pa.date32())})
        with pytest.raises(InvalidArgumentError, match=f"{bad} new rows do not match"):
            ft.write_dataset(data, uri, mode="overwrite", replace_where="ds = '2026-11-20'")
        assert ft.dataset(uri).version == 1
    good = pa.table({**rows, "ds": pa.array([day] * 3, pa.date32())})
    with pytest.raises(DatasetError, match="needs mode='overwrite'"):
        ft.write_dataset(good, uri, mode="append", replace_where="ds = '2026-11-20'")
    with pytest.raises(DatasetError, match="needs mode='overwrite'"):
        ft.write_dataset(good, str(tmp_path / "none"), mode="overwrite", replace_where="k = 1")
    with pytest.raises(SchemaMismatchError, match="missing"):
        ft.write_dataset(good.drop_columns(["f"]), uri, mode="overwrite", replace_where="k = 1")
    with pytest.raises(ColumnNotFoundError, match="'w'"):
        ft.write_dataset(good, uri, mode="overwrite", replace_where="w = 1")
    assert ft.dataset(uri).version == 1


# -- real processes ------------------------------------------------------------------------


def _increment(uri: str, rounds: int) -> int:
    replanned = 0
    for _ in range(rounds):
        ds = ft.dataset(uri)
        ds.update("k < 10", set={"v": "v + 1"})
        assert ds.last_commit is not None
        replanned += ds.last_commit.replanned  # type: ignore[union-attr]
    return replanned


def test_concurrent_increments_lose_no_update(tmp_path: Path, processes: Runner) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(
        pa.table({"k": pa.array(range(30), pa.int64()), "v": pa.array([0] * 30, pa.int64())}),
        uri, max_rows_per_file=4,
    )  # fmt: skip
    workers, rounds = 4, 3
    results = processes(_increment, [(uri, rounds)] * workers)
    assert [s for s, _ in results] == ["ok"] * workers, results
    assert sum(r for _, r in results) >= 1  # they did conflict and re-plan
    got = dict(zip(*ft.dataset(uri).to_table(["k", "v"]).to_pydict().values(), strict=True))
    assert sorted(got) == list(range(30))  # nothing doubled or lost
    assert all(got[k] == (workers * rounds if k < 10 else 0) for k in got)
    assert ft.dataset(uri).version == 1 + workers * rounds
