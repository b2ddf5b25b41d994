"""The search of a BTREE's blocks (fermion.table.indices.lookup) and its key intervals.

- a lookup finds the entries of its blocks by binary search within the key intervals
  (``_in_bounds``), and evaluates the predicate on them only when the intervals are not
  exactly what it keeps (strict bounds, ``AND`` with an ``IS NULL``);
- a literal of the key's type gives its interval without a cast (``intervals``), the same
  interval the cast gives; null and NaN literals give none;
- an index with two entries files (``optimize_indices`` after appends and a compaction)
  answers integer, float (``-0.0 = 0.0``), string, date and timestamp keys as the
  unindexed scan does, with deleted candidates; and a file that is not an index file is
  refused at every lookup, not only the first.

Every result is compared with ``use_indices=False``.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.errors import InvalidFileError
from fermion.table.indices import lookup
from fermion.table.indices.match import intervals
from tests.support.budget import examples


def _same(ds: ft.Dataset, filter: Any) -> Any:
    """The indexed scan's stats, its rows checked equal to the unindexed scan's."""
    scanner = ds.scanner(None, filter)
    indexed = scanner.to_table()
    plain = ds.scanner(None, filter, use_indices=False).to_table()
    assert indexed.equals(plain), f"{filter}: {indexed.num_rows} rows != {plain.num_rows}"
    return scanner.stats


@settings(max_examples=examples(100), deadline=None)
@given(
    keys=st.lists(st.integers(-20, 20), min_size=0, max_size=80),
    bounds=st.lists(
        st.tuples(st.none() | st.integers(-25, 25), st.none() | st.integers(-25, 25)),
        min_size=1,
        max_size=6,
    ),
)
def test_positions_in_bounds_are_those_of_keys_in_any_interval(
    keys: list[int], bounds: list[tuple[int | None, int | None]]
) -> None:
    ordered = np.array(sorted(keys), dtype=np.int64)
    expected = [
        i
        for i, k in enumerate(ordered.tolist())
        if any((lo is None or lo <= k) and (hi is None or k <= hi) for lo, hi in bounds)
    ]
    assert lookup._in_bounds(ordered, bounds).tolist() == expected


def test_positions_in_bounds_of_string_keys() -> None:
    ordered = np.array(["", "a", "ab", "ab", "b", "é"], dtype=object)
    assert lookup._in_bounds(ordered, [("ab", "ab")]).tolist() == [2, 3]
    assert lookup._in_bounds(ordered, [("a", "ab"), ("é", None)]).tolist() == [1, 2, 3, 5]
    assert lookup._in_bounds(ordered, [("c", "d")]).tolist() == []


def test_predicates_exactly_their_intervals() -> None:
    five = pa.scalar(5)
    assert lookup._interval_exact(("cmp", "equal", five))
    assert lookup._interval_exact(("in", pa.array([1, 2])))
    assert lookup._interval_exact(("or", [("cmp", "equal", five), ("in", pa.array([1]))]))
    for op in ("less", "less_equal", "greater", "greater_equal"):
        # (a closed interval holds the bound itself: ``<`` and ``>`` keep less)
        assert not lookup._interval_exact(("cmp", op, five))
    assert not lookup._interval_exact(("and", [("cmp", "equal", five), ("null", False)]))
    assert not lookup._interval_exact(("null", False))


@pytest.mark.parametrize(
    ("literal", "other", "key_type"),
    [
        (pa.scalar(7), pa.scalar(7, pa.int32()), pa.int64()),
        (pa.scalar(-3, pa.int8()), pa.scalar(-3), pa.int8()),
        (pa.scalar(2**40, pa.uint64()), pa.scalar(2**40), pa.uint64()),
        (pa.scalar(1.5), pa.scalar(1.5, pa.float32()), pa.float64()),
        (pa.scalar(-0.0, pa.float32()), pa.scalar(-0.0), pa.float32()),
        (pa.scalar("ab"), pa.scalar("ab", pa.large_string()), pa.string()),
        (pa.scalar("ab", pa.large_string()), pa.scalar("ab"), pa.large_string()),
    ],
)
@pytest.mark.parametrize("op", ["equal", "less", "less_equal", "greater", "greater_equal"])
def test_a_literal_of_the_key_type_gives_the_interval_of_the_cast(
    literal: pa.Scalar, other: pa.Scalar, key_type: pa.DataType, op: str
) -> None:
    """``other`` (of another type) takes the general way: cast to the key type."""
    assert literal.type.equals(key_type) and not other.type.equals(key_type)
    fast = intervals(("cmp", op, literal), key_type)
    general = intervals(("cmp", op, other), key_type)
    assert fast is not None and general is not None and len(fast) == len(general) == 1
    for got, expected in zip(fast[0], general[0], strict=True):
        assert type(got) is type(expected) and got == expected


def test_null_and_nan_literals_give_no_interval() -> None:
    assert intervals(("cmp", "equal", pa.scalar(None, pa.int64())), pa.int64()) is None
    assert intervals(("cmp", "less", pa.scalar(float("nan"))), pa.float64()) is None


def _maintained(path: Path, values: pa.Array, deletions: Any = None) -> ft.Dataset:
    """A table of ``k`` = ``values`` (and ``n`` = row number) as the benchmark's: 5/8 of
    it written in fragments of a quarter (the last smaller) and indexed, the rest appended
    in four commits, compacted (the smaller indexed fragment with the appended ones), rows
    deleted, the index refreshed: two entries files, the first with entries of the
    fragment the compaction removed."""
    n = len(values)
    table = pa.table({"k": values, "n": pa.array(range(n), pa.int64())})
    base, quarter = n * 5 // 8, n // 4
    ds = ft.write_dataset(table.slice(0, base), str(path), max_rows_per_file=quarter)
    ds.create_index("k", "BTREE")
    step = -(-(n - base) // 4)
    for start in range(base, n, step):
        ds.append(table.slice(start, step))
    ds.compact_files(target_rows_per_fragment=quarter)
    if deletions is not None:
        ds.delete(deletions)
    ds.optimize_indices()
    ds = ft.dataset(str(path))
    (index,) = ds.indices()
    assert len([f for f in index.files if not f.endswith(".fences.fermion")]) == 2
    assert set(index.fragment_ids) == {f.id for f in ds.fragments}
    assert index.num_entries > sum(f.physical_rows for f in ds.fragments)
    return ds


def test_two_entries_files_answer_as_the_unindexed_scan(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 4000
    ints = rng.integers(-300, 300, n)
    cases: dict[str, tuple[pa.Array, list[str]]] = {
        "int": (pa.array(ints), ["k = 17", "k IN (-5, 17, 299, 1000)", "k > 17 AND k < 40",
                                 "k >= 290", "k = 17 OR k = -3", "k = 5 AND k IS NULL"]),
        "float": (pa.array(np.where(ints == 0, -0.0, ints / 4.0)),
                  ["k = 0.0", "k = -0.0", "k = 2.25", "k IN (0.25, 0.5, 99.0)", "k < -74.5"]),
        "str": (pa.array([f"s{v:+04d}" for v in ints]),
                ["k = 's+017'", "k IN ('s-005', 's+017', 'zz')", "k > 's+290'", "k < 's-'"]),
        "date": (pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(v))
                           for v in ints]),
                 ["k = DATE '2020-01-18'", "k BETWEEN DATE '2020-01-01' AND DATE '2020-01-03'"]),
        "ts": (pc.cast(pa.array(ints * 1_000_000), pa.timestamp("us", "UTC")),
               ["k = TIMESTAMP '1970-01-01 00:00:17'", "k > TIMESTAMP '1970-01-01 00:04:50'"]),
    }  # fmt: skip
    for name, (values, filters) in cases.items():
        ds = _maintained(tmp_path / name, values, pc.field("n").isin(list(range(0, n, 5))))
        for text in filters:
            stats = _same(ds, text)
            assert stats.index_files_read == 2, (name, text)
            assert stats.fragments_indexed == len(ds.fragments), (name, text)


def test_a_candidate_whose_row_was_deleted_is_not_returned(tmp_path: Path) -> None:
    values = pa.array(list(range(400)), pa.int64())
    ds = _maintained(tmp_path / "t", values)
    for text in ("k = 321", "k >= 321 AND k <= 321", "k IN (321, 10)", "k BETWEEN 320 AND 322"):
        assert _same(ds, text).index_files_read == 2
    ds.delete("n = 321 OR n = 10")
    for text in ("k = 321", "k >= 321 AND k <= 321", "k IN (321, 10)", "k BETWEEN 320 AND 322"):
        _same(ds, text)
    assert ds.to_table(filter="k = 321").num_rows == 0


def test_a_file_that_is_not_an_index_file_is_refused_at_every_lookup(tmp_path: Path) -> None:
    ds = ft.write_dataset(pa.table({"k": [3, 1, 2]}), str(tmp_path / "t"))
    ds.create_index("k", "BTREE")
    (index,) = ds.indices()
    entries = next(f for f in index.files if not f.endswith(".fences.fermion"))
    other = ft.write_dataset(pa.table({"a": [1], "b": [2]}), str(tmp_path / "other"))
    data = other.fragments[0].files[0].path
    (tmp_path / "t" / entries).write_bytes((tmp_path / "other" / data).read_bytes())
    for _ in range(2):
        with pytest.raises(InvalidFileError, match="not an index file"):
            ft.dataset(str(tmp_path / "t")).to_table(filter="k = 2")
