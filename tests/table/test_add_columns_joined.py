"""``Dataset.add_columns(values, on=...)``: new columns from a table joined on key columns or
on ``_rowid``, one column-only data file per fragment (docs/TABLE_FORMAT.md, "Adding columns
with values"): equal to a join in memory, after deletes, through compaction and
``drop_columns``, old versions unaffected, bad inputs, real processes racing it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.errors import (
    ColumnNotFoundError,
    DatasetError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from tests.support.budget import examples
from tests.table.row_id_support import write_table_without_row_ids

Runner = Callable[..., list[tuple[str, Any]]]
I64 = pa.int64()


def _table(uri: str, n: int = 40, rows_per_file: int = 10) -> ft.Dataset:
    data = pa.table(
        {
            "n": pa.array(range(n), I64),
            "k": pa.array([i % 25 for i in range(n)], I64),  # repeated keys: both rows join
            "s": pa.array([f"s{i % 7}" for i in range(n)]),
        }
    )
    return ft.write_dataset(data, uri, max_rows_per_file=rows_per_file)


def _by_n(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["n"])


def _joined_in_memory(live: pa.Table, values: pa.Table, on: list[str]) -> list[dict[str, Any]]:
    return _by_n(live.join(values, on, join_type="left outer"))


@settings(max_examples=examples(40), deadline=None)
@given(
    rows=st.integers(1, 60),
    rows_per_file=st.integers(1, 25),
    deleted=st.sets(st.integers(0, 59), max_size=20),
    value_keys=st.sets(st.integers(-5, 40), max_size=40),
    two_keys=st.booleans(),
    data=st.data(),
)
def test_a_joined_add_equals_a_left_join_in_memory(
    tmp_path_factory: pytest.TempPathFactory,
    rows: int,
    rows_per_file: int,
    deleted: set[int],
    value_keys: set[int],
    two_keys: bool,
    data: st.DataObject,
) -> None:
    uri = str(tmp_path_factory.mktemp("t"))
    ds = _table(uri, rows, rows_per_file)
    if deleted:
        ds.delete(f"n IN ({', '.join(map(str, sorted(deleted)))})")
    live = ds.to_table()
    keys = sorted(value_keys)
    values = {
        "k": pa.array(keys, I64),
        "g": pa.array(data.draw(st.lists(st.floats(allow_nan=False) | st.none(),
                                          min_size=len(keys), max_size=len(keys))),
                      pa.float64()),
        "t": pa.array([f"v{k}" for k in keys], pa.string()),
    }  # fmt: skip
    on = ["k"]
    if two_keys:
        values["s"] = pa.array([f"s{k % 7}" if k % 3 else "other" for k in keys], pa.string())
        on = ["k", "s"]
    table = pa.table(values)
    order = data.draw(st.permutations(range(table.num_rows)))
    table = table.take(pa.array(order, I64))  # the values' order does not matter
    old_files = [[f.path for f in fragment.files] for fragment in ds.fragments]
    ds.add_columns(table, on=on if two_keys else "k")
    assert ds.manifest.summary.operation == "add_columns"
    got = ds.to_table()
    assert got.column_names == ["n", "k", "s", "g", "t"]
    assert _by_n(got) == _joined_in_memory(live, table, on)
    for old, fragment in zip(old_files, ds.fragments, strict=True):
        assert [f.path for f in fragment.files] == [*old, fragment.files[-1].path]
    assert ft.dataset(uri, version=ds.version - 1).to_table().equals(live)  # older version


@settings(max_examples=examples(30), deadline=None)
@given(
    rows=st.integers(1, 50),
    rows_per_file=st.integers(1, 20),
    deleted=st.sets(st.integers(0, 49), max_size=15),
    chosen=st.sets(st.integers(0, 60), max_size=50),
)
def test_a_row_id_join_equals_a_join_on_the_row_ids_in_memory(
    tmp_path_factory: pytest.TempPathFactory,
    rows: int,
    rows_per_file: int,
    deleted: set[int],
    chosen: set[int],
) -> None:
    uri = str(tmp_path_factory.mktemp("t"))
    ds = _table(uri, rows, rows_per_file)
    if deleted:
        ds.delete(f"n IN ({', '.join(map(str, sorted(deleted)))})")
    live = ds.to_table(columns=["n", "k", "s", "_rowid"])
    ids = sorted(chosen)  # some are ids of deleted rows, some no row ever had
    values = pa.table(
        {"_rowid": pa.array(ids, pa.uint64()), "w": pa.array([i * 0.5 for i in ids], pa.float64())}
    )
    ds.add_columns(values, on="_rowid")
    want = [
        {k: v for k, v in row.items() if k != "_rowid"}
        for row in _joined_in_memory(live, values, ["_rowid"])
    ]
    assert _by_n(ds.to_table()) == want


def test_deleted_and_unmatched_rows_read_nulls_and_the_values_are_not_reordered(
    tmp_path: Path,
) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    ds.delete("n >= 5 AND n < 15")
    values = pa.table({"k": pa.array([30, 2, 0], I64), "label": ["never", "two", "zero"]})
    ds.add_columns(values, on="k")
    table = ds.to_table()
    assert table.num_rows == 30
    for n, label in zip(table["n"].to_pylist(), table["label"].to_pylist(), strict=True):
        assert label == {0: "zero", 2: "two"}.get(n % 25), (n, label)


def test_unmatched_error_refuses_rows_without_values_and_names_them(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    ds.delete("k >= 20")  # every live row has a key below 20
    partial = pa.table({"k": pa.array(range(19), I64), "g": pa.array(range(19), I64)})
    with pytest.raises(InvalidArgumentError, match=r"keys the new values lack .*: 19"):
        ds.add_columns(partial, on="k", unmatched="error")
    assert ft.dataset(uri).version == 2
    full = pa.table({"k": pa.array(range(20), I64), "g": pa.array(range(20), I64)})
    ds.add_columns(full, on="k", unmatched="error")  # deleted rows need no value
    table = ds.to_table()
    assert table["g"].to_pylist() == table["k"].to_pylist()
    ids = ds.to_table(columns=["_rowid"])["_rowid"].to_pylist()
    with pytest.raises(InvalidArgumentError, match=rf"lack .*: {ids[-1]}"):
        ds.add_columns(
            pa.table({"_rowid": ids[:-1], "h": ids[:-1]}), on="_rowid", unmatched="error"
        )


def test_add_then_compaction_then_drop_columns_round_trips(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    ds.delete("n < 3")
    original = ds.to_table()
    values = pa.table({"k": pa.array(range(25), I64), "g": pa.array([k * 1.5 for k in range(25)])})
    ds.add_columns(values, on="k")
    assert all(len(f.files) == 2 for f in ds.fragments)
    ids_before = ds.to_table(columns=["_rowid", "g"])
    ds.compact_files(target_rows_per_fragment=1000)
    assert [len(f.files) for f in ds.fragments] == [1]  # folded into one file
    assert ds.to_table()["g"].to_pylist() == [k * 1.5 for k in original["k"].to_pylist()]
    assert ds.to_table(columns=["_rowid", "g"]).equals(ids_before)  # ids kept
    files = [[f.path for f in fragment.files] for fragment in ds.fragments]
    ds.drop_columns(["g"])
    assert [[f.path for f in fragment.files] for fragment in ds.fragments] == files
    assert ds.to_table().equals(original)
    ds.add_columns(ids_before.rename_columns(["_rowid", "g2"]), on="_rowid", unmatched="error")
    assert ds.to_table()["g2"].to_pylist() == ids_before["g"].to_pylist()


def test_readers_at_older_versions_are_unaffected(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    old = ft.dataset(uri)
    before = old.to_table()
    ds.add_columns(pa.table({"k": pa.array([1], I64), "g": [1.0]}), on="k")
    assert old.to_table().equals(before) and old.schema.names == ["n", "k", "s"]
    assert ft.dataset(uri, version=1).to_table().equals(before)
    assert ft.dataset(uri).schema.names == ["n", "k", "s", "g"]


def _no_row_ids(tmp_path: Path) -> ft.Dataset:
    data = pa.table({"n": pa.array([1, 2], I64), "k": pa.array([1, 2], I64)})
    return ft.dataset(write_table_without_row_ids(tmp_path / "old", data))


BAD: dict[str, tuple[Any, Any, type[Exception], str]] = {
    "duplicate keys": (
        pa.table({"k": pa.array([3, 1, 3, 1, 2], I64), "g": [1, 2, 3, 4, 5]}), "k",
        InvalidArgumentError, r"2 keys occur more than once in the new values: 1, 3",
    ),
    "duplicate key pairs": (
        pa.table({"k": pa.array([1, 1], I64), "s": ["a", "a"], "g": [1, 2]}), ["k", "s"],
        InvalidArgumentError, r"more than once .*\(1, 'a'\)",
    ),
    "key missing from the values": (
        pa.table({"g": [1.0]}), "k", SchemaMismatchError, r"lack the key columns \['k'\]",
    ),
    "key missing from the table": (
        pa.table({"nope": [1], "g": [1.0]}), "nope", ColumnNotFoundError, "'nope' is not a column",
    ),
    "key type mismatch": (
        pa.table({"k": pa.array([1], pa.int32()), "g": [1.0]}), "k",
        SchemaMismatchError, "has type int32, the table has int64",
    ),
    "null keys": (
        pa.table({"k": pa.array([1, None], I64), "g": [1.0, 2.0]}), "k",
        InvalidArgumentError, "1 null keys",
    ),
    "no new column": (pa.table({"k": pa.array([1], I64)}), "k", InvalidArgumentError, "no column"),
    "an existing column": (
        pa.table({"k": pa.array([1], I64), "s": ["x"]}), "k", InvalidArgumentError, "already exist",
    ),
    "a new column of no type": (
        pa.table({"k": pa.array([1], I64), "g": pa.nulls(1)}), "k", SchemaMismatchError, "no type",
    ),
    "row ids of another type": (
        pa.table({"_rowid": [0.5], "g": [1]}), "_rowid", SchemaMismatchError, "not an integer",
    ),
    "negative row ids": (
        pa.table({"_rowid": [-1], "g": [1]}), "_rowid", InvalidArgumentError, "negative",
    ),
    "duplicate row ids": (
        pa.table({"_rowid": [4, 2, 4], "g": [1, 2, 3]}), "_rowid",
        InvalidArgumentError, "1 keys occur more than once in the new values: 4",
    ),
    "row id with another key": (
        pa.table({"_rowid": [4], "k": pa.array([1], I64), "g": [1]}), ["_rowid", "k"],
        InvalidArgumentError, "key on its own",
    ),
    "repeated key names": (pa.table({"k": [1], "g": [1]}), ["k", "k"], InvalidArgumentError,
                           "distinct key"),
    "not a table": ({"g": "n * 2"}, "k", InvalidArgumentError, "expected a pyarrow Table"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
def test_bad_joins_are_typed_errors_and_commit_nothing(tmp_path: Path, case: str) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    values, on, error, message = BAD[case]
    files = set((tmp_path / "t").rglob("*"))
    with pytest.raises(error, match=message):
        ds.add_columns(values, on=on)
    assert ft.dataset(uri).version == 1 and ds.version == 1
    assert set((tmp_path / "t").rglob("*")) == files  # nothing written


def test_a_row_id_join_on_a_table_without_row_ids_is_refused(tmp_path: Path) -> None:
    ds = _no_row_ids(tmp_path)
    with pytest.raises(DatasetError, match="has no row ids"):
        ds.add_columns(pa.table({"_rowid": [0], "g": [1.0]}), on="_rowid")
    ds.add_columns(pa.table({"k": pa.array([2], I64), "g": [1.0]}), on="k")  # keys still work
    assert ds.to_table()["g"].to_pylist() == [None, 1.0]


def test_bad_unmatched_mode_is_refused(tmp_path: Path) -> None:
    ds = _table(str(tmp_path / "t"))
    with pytest.raises(InvalidArgumentError, match="'null' or 'error'"):
        ds.add_columns(pa.table({"k": pa.array([1], I64), "g": [1]}), on="k", unmatched="skip")  # type: ignore[arg-type]


# -- real processes ------------------------------------------------------------------------


def _race_job(uri: str, kind: str) -> str:
    ds = ft.dataset(uri)
    if kind == "join":
        xs = [*range(60), 1000, 1001]
        ds.add_columns(pa.table({"x": pa.array(xs, I64), "g": [2 * x for x in xs]}), on="x")
    elif kind == "rowid":
        ids = ds.to_table(columns=["_rowid"])["_rowid"]
        ds.add_columns(pa.table({"_rowid": ids, "h": ids}), on="_rowid")
    elif kind == "append":
        ds.append(pa.table({"x": pa.array([1000, 1001], I64)}))
    elif kind == "compact":
        ds.compact_files(target_rows_per_fragment=1000)
    else:
        ds.delete("x >= 10 AND x < 20")
    return kind


def test_joined_add_racing_appends_and_deletes(tmp_path: Path, processes: Runner) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": pa.array(range(60), I64)}), uri, max_rows_per_file=10)
    results = processes(_race_job, [(uri, "join"), (uri, "append"), (uri, "delete")])
    add, append, delete = results
    assert add == ("ok", "join") and delete == ("ok", "delete"), results
    appended = append == ("ok", "append")
    assert appended or append[1].startswith("SchemaMismatchError: columns differ: missing ['g']")
    table = ft.dataset(uri).to_table()
    xs = table["x"].to_pylist()
    assert sorted(xs) == [*range(10), *range(20, 60), *([1000, 1001] if appended else [])]
    for x, g in zip(xs, table["g"].to_pylist(), strict=True):
        # appended before the add committed: joined (re-planned); after: no value written
        assert g == 2 * x or (g is None and x >= 1000), (x, g)


def test_row_id_join_racing_a_compaction_and_a_delete(tmp_path: Path, processes: Runner) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": pa.array(range(60), I64)}), uri, max_rows_per_file=10)
    ids = ft.dataset(uri).to_table(columns=["x", "_rowid"])
    results = processes(_race_job, [(uri, "rowid"), (uri, "compact"), (uri, "delete")])
    assert [r[0] for r in results] == ["ok"] * 3, results
    ds = ft.dataset(uri)
    table = ds.to_table(columns=["x", "_rowid", "h"])
    assert sorted(table["x"].to_pylist()) == [*range(10), *range(20, 60)]
    want = dict(zip(ids["x"].to_pylist(), ids["_rowid"].to_pylist(), strict=True))
    for x, rowid, h in zip(*(table[c].to_pylist() for c in ["x", "_rowid", "h"]), strict=True):
        assert rowid == want[x] and h == rowid, (x, rowid, h)  # ids kept, values on them
