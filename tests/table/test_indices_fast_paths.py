"""The fast paths of scalar index lookups and builds give the rows the unindexed scan gives.

- the index cache (fermion.table.indices.cache): a lookup repeated reads no index bytes and
  returns the same rows; blocks read once serve other keys;
- ``IN`` lists whose keys spread over many blocks of a BTREE, or many in one block (more
  than 127 in one block once dropped the block), keys absent, deleted rows, fragments
  appended after the build (not covered), and after a compaction and
  ``optimize_indices``;
- an exact answer fills the indexed column instead of reading it: with the literal of an
  equality, or with a BTREE's keys of the rows;
- the build's integer sort (numpy, ties by row address; keys packed with their positions)
  and its merge of sorted runs.

Every result is compared with ``use_indices=False``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.format import FileReader
from fermion.table.indices import build, lookup
from fermion.table.indices.build import merge_sorted, sorted_entries
from fermion.table.indices.cache import INDEX_CACHE, IndexCache
from tests.support.budget import examples


def _same(ds: ft.Dataset, filter: Any, columns: list[str] | None = None) -> tuple[pa.Table, Any]:
    """The indexed result and its scan stats, checked equal to the unindexed one."""
    scanner = ds.scanner(columns, filter)
    indexed = scanner.to_table()
    plain = ds.scanner(columns, filter, use_indices=False).to_table()
    assert indexed.equals(plain), f"{filter}: {indexed.num_rows} rows != {plain.num_rows}"
    return indexed, scanner.stats


def _keys_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = rng.integers(-(2**40), 2**40, n)
    return pa.table({
        "key": keys,
        "label": pa.array([f"l{v % 13:02d}" for v in keys]),
        "value": np.arange(n, dtype=np.float64),
        "seven": np.arange(n) % 7,
    })  # fmt: skip


def _in(keys: Any) -> str:
    return "key IN (" + ", ".join(str(int(k)) for k in keys) + ")"


def test_index_cache_keeps_the_most_recent_parts_within_its_budget() -> None:
    cache = IndexCache(100)
    cache.put("a", 1, 40)
    cache.put("b", 2, 40)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3, 40)  # over budget: b (least recent) goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    assert cache.bytes_held == 80
    cache.put("huge", 4, 101)  # larger than the whole budget: not kept
    assert cache.get("huge") is None and cache.bytes_held == 80
    cache.put("a", 5, 10)  # replaced, bytes recounted
    assert cache.get("a") == 5 and cache.bytes_held == 50
    cache.clear()
    assert cache.get("a") is None and cache.bytes_held == 0


def test_a_repeated_lookup_reads_no_index_bytes(tmp_path: Path) -> None:
    table = _keys_table(5000)
    ds = ft.write_dataset(table, str(tmp_path / "t"), max_rows_per_file=1000)
    ds.create_index("key", "BTREE")
    ds.create_index("label", "BITMAP")
    keys = table.column("key").to_numpy()
    for text in (f"key = {keys[17]}", _in(keys[::50]), "label = 'l03'"):
        first, cold = _same(ds, text)
        second, warm = _same(ds, text)
        assert first.equals(second) and first.num_rows >= 1
        assert cold.index_bytes_read > 0 and warm.index_bytes_read == 0, text
        assert warm.index_files_read == cold.index_files_read == 1


@pytest.mark.parametrize("capacity", [0, 1 << 30])
def test_in_lists_spread_over_blocks_with_absent_keys_deletions_and_appends(
    tmp_path: Path, capacity: int
) -> None:
    table = _keys_table(6000, seed=1)
    keys = table.column("key").to_numpy()
    ds = ft.write_dataset(table.slice(0, 4000), str(tmp_path / "t"), max_rows_per_file=1000)
    ds.create_index("key", "BTREE")  # 4000 entries: 16 blocks
    ds.delete(pc.field("seven") == 0)
    ds.append(table.slice(4000, 2000), max_rows_per_file=1000)  # not covered
    present = keys[::37]  # covered and uncovered fragments, every block
    absent = [int(keys.max()) + 1, int(keys.min()) - 1, 0]
    with mock.patch.object(lookup, "INDEX_CACHE", IndexCache(capacity)):
        for text in (
            _in([*present, *absent]),
            _in(absent),
            f"{_in(present)} AND value > 1000",
            f"{_in(present[:5])} OR key = {keys[3999]}",
            f"key = {keys[4500]}",  # only in an uncovered fragment
        ):
            for _ in range(2):  # (cold, then from the cache when it has room)
                indexed, stats = _same(ds, text)
                assert stats.index_files_read == 1 and stats.fragments_indexed >= 3
        ds.compact_files(target_rows_per_fragment=3000)
        ds.optimize_indices()
        assert ds.indices()[0].fragment_ids == tuple(f.id for f in ds.fragments)
        indexed, stats = _same(ds, _in([*present, *absent]))
        assert indexed.num_rows == sum(1 for i in range(0, 6000, 37) if i % 7 or i >= 4000)


def test_in_list_of_more_than_127_keys_in_one_block(tmp_path: Path) -> None:
    """Every key of the list starts its search in block 0 (a per-block count in int8
    overflowed at 128 and dropped the block: no rows)."""
    ds = ft.write_dataset(pa.table({"k": list(range(1000))}), str(tmp_path / "t"))
    ds.create_index("k", "BTREE")
    text = "k IN (" + ", ".join(str(i) for i in range(200)) + ")"
    indexed, _ = _same(ds, text)
    assert indexed.column("k").to_pylist() == list(range(200))


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP"])
def test_an_exact_answer_fills_its_column_from_the_index(tmp_path: Path, kind: str) -> None:
    table = pa.table({
        "s": pa.array([f"v{i % 5}" for i in range(300)]),
        "i": pa.array([i % 4 for i in range(300)], pa.int16()),
        "t": pa.array([(i % 3) * 10**6 for i in range(300)], pa.timestamp("us", "UTC")),
        "x": pa.array(range(300)),
        "nine": pa.array([i % 9 for i in range(300)]),
    })  # fmt: skip
    ds = ft.write_dataset(table, str(tmp_path / "t"), max_rows_per_file=100)
    for column in ("s", "i", "t"):
        ds.create_index(column, kind, name=f"{column}_{kind}")
    ds.delete("nine = 0")
    for text, columns in (
        ("s = 'v3'", None),
        ("s = 'v3'", ["x", "s"]),
        ("s = 'v3'", ["s"]),  # the only column: read, not filled
        ("s = 'v2x'", None),  # absent (within the statistics' bounds)
        ("i = 2", ["i", "x"]),
        ("i = 2.0", None),
        ("t = TIMESTAMP '1970-01-01 00:00:01'", None),
        ("s = 'v1' AND x > 100", None),  # not the whole filter: read and filtered
        ("s IN ('v1', 'v3', 'zz')", None),  # a BTREE fills the keys of its entries
        ("i IN (1, 3)", ["x", "i"]),
        ("t IN (TIMESTAMP '1970-01-01 00:00:00', TIMESTAMP '1970-01-01 00:00:02')", ["t"]),
        ("t IN (TIMESTAMP '1970-01-01 00:00:00', TIMESTAMP '1970-01-01 00:00:02')", None),
        ("i >= 2", ["i", "s", "x"]),
    ):
        indexed, stats = _same(ds, text, columns)
        assert stats.fragments_indexed >= 2, text


def _arrow_sorted(entries: pa.Table) -> pa.Table:
    keys = [("key", "ascending", "at_end"), ("_rowaddr", "ascending", "at_end")]
    return entries.take(pc.sort_indices(entries, sort_keys=keys))


@settings(max_examples=examples(50), deadline=None)
@given(
    keys=st.lists(st.integers(-3, 3), min_size=0, max_size=60),
    runs=st.integers(1, 3),
    data=st.data(),
)
def test_integer_sort_and_merge_equal_arrows_two_key_sort(
    keys: list[int], runs: int, data: Any
) -> None:
    n = len(keys)
    addresses = data.draw(st.permutations(list(range(n)))) if n else []
    entries = pa.table({"key": pa.array(keys, pa.int64()),
                        "_rowaddr": pa.array(addresses, pa.uint64())})  # fmt: skip
    assert sorted_entries(entries).equals(_arrow_sorted(entries))
    # sorted runs one after another (an index refresh): merged
    cuts = sorted(data.draw(st.lists(st.integers(0, n), min_size=runs - 1, max_size=runs - 1)))
    parts = [entries.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    merged = pa.concat_tables([_arrow_sorted(p) for p in parts])
    assert sorted_entries(merged).equals(_arrow_sorted(entries))
    for t in (pa.date32(), pa.timestamp("ms")):
        column = entries.column("key")
        column = column.cast(pa.int32()).cast(t) if t == pa.date32() else column.cast(t)
        typed = entries.set_column(0, "key", column)
        assert sorted_entries(typed).equals(_arrow_sorted(typed))


_SORT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint32", "uint64")


@settings(max_examples=examples(60), deadline=None)
@given(
    dtype=st.sampled_from(_SORT_DTYPES),
    clusters=st.lists(st.integers(-(2**63), 2**64 - 1), min_size=1, max_size=4),
    picks=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2**20)), min_size=0, max_size=300),
)
def test_packed_sort_order_equals_a_stable_argsort(
    dtype: str, clusters: list[int], picks: list[tuple[int, int]]
) -> None:
    """The build's sort of integer keys (packed with their positions) orders them as a
    stable argsort does: values near a few far-apart centres share their kept high bits
    (put in order afterwards, or sorted by argsort when many do), small spans fit whole."""
    info = np.iinfo(dtype)
    values = [
        min(max(clusters[c % len(clusters)] + offset, info.min), info.max) for c, offset in picks
    ]
    keys = np.array(values, dtype=dtype)
    assert build._sort_order(keys).tolist() == np.argsort(keys, kind="stable").tolist()
    wide = np.random.default_rng(len(values)).integers(info.min, info.max, 5000, dtype=dtype)
    assert build._sort_order(wide).tolist() == np.argsort(wide, kind="stable").tolist()


@settings(max_examples=examples(50), deadline=None)
@given(
    keys=st.lists(st.integers(-3, 3), min_size=0, max_size=60),
    data=st.data(),
)
def test_merge_sorted_equals_arrows_two_key_sort(keys: list[int], data: Any) -> None:
    """An index refresh merges the new entries into the old ones: the same rows as
    sorting them all, for integer keys (merged in linear time) and others (sorted)."""
    n = len(keys)
    addresses = data.draw(st.permutations(list(range(n)))) if n else []
    entries = pa.table({"key": pa.array(keys, pa.int64()),
                        "_rowaddr": pa.array(addresses, pa.uint64())})  # fmt: skip
    cut = data.draw(st.integers(0, n))
    for t in (pa.int64(), pa.uint8(), pa.date32(), pa.timestamp("ms"), pa.float64(), pa.string()):
        column = entries.column("key")
        if t == pa.uint8():
            column = pc.add(column, 3).cast(t)
        else:
            column = column.cast(pa.int32()).cast(t) if t == pa.date32() else column.cast(t)
        typed = entries.set_column(0, "key", column)
        old, new = _arrow_sorted(typed.slice(0, cut)), _arrow_sorted(typed.slice(cut))
        assert merge_sorted(old, new).equals(_arrow_sorted(typed)), t
        assert merge_sorted(new, old).equals(_arrow_sorted(typed)), t
    # unsorted parts are sorted, not merged
    old, new = entries.slice(0, cut), entries.slice(cut)
    assert merge_sorted(old, new).equals(_arrow_sorted(entries))


@pytest.mark.parametrize("fence_rows", [1, 3])
@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_lookups_with_many_small_blocks_equal_unindexed_scans(
    tmp_path_factory: pytest.TempPathFactory, fence_rows: int, data: Any
) -> None:
    """Fences every ``fence_rows`` entries: every lookup spans many blocks, some from the
    cache of an earlier lookup, through deletions, appends, compactions and refreshes."""
    value = st.integers(-20, 20)

    def table() -> pa.Table:
        keys = data.draw(st.lists(st.one_of(st.none(), value), min_size=1, max_size=40))
        return pa.table(
            {"k": pa.array(keys, pa.int64()), "o": pa.array([i % 3 for i in range(len(keys))])}
        )

    filters = data.draw(
        st.lists(
            st.one_of(
                st.lists(value, min_size=1, max_size=30).map(
                    lambda ks: "k IN (" + ", ".join(map(str, ks)) + ")"
                ),
                value.map(lambda k: f"k = {k}"),
                st.tuples(value, value).map(lambda r: f"k BETWEEN {min(r)} AND {max(r)}"),
            ),
            min_size=1,
            max_size=4,
        )
    )
    steps = data.draw(st.lists(st.sampled_from(["delete", "append", "compact", "optimize"])))
    with (
        mock.patch.object(build, "FENCE_ROWS", fence_rows),
        mock.patch.object(lookup, "INDEX_CACHE", IndexCache(1 << 20)),
    ):
        uri = str(tmp_path_factory.mktemp("t"))
        ds = ft.write_dataset(table(), uri, max_rows_per_file=data.draw(st.integers(3, 15)))
        ds.create_index("k", "BTREE")
        for step in [None, *steps[:4]]:
            if step == "delete" and ds.count_rows():
                ds.delete(pc.field("o") == data.draw(st.integers(0, 2)))
            elif step == "append":
                ds.append(table(), max_rows_per_file=7)
            elif step == "compact":
                ds.compact_files(target_rows_per_fragment=data.draw(st.integers(5, 40)))
            elif step == "optimize":
                ds.optimize_indices()
            for text in filters:
                _same(ds, text)


def test_refreshed_index_file_is_sorted(tmp_path: Path) -> None:
    table = _keys_table(3000, seed=2)
    # ties across the old and the new entries: every key twice
    table = pa.concat_tables([table, table])
    ds = ft.write_dataset(table.slice(0, 4000), str(tmp_path / "t"), max_rows_per_file=1000)
    ds.create_index("key", "BTREE")
    first = ds.indices()[0]
    probe = _in(table.column("key").to_numpy()[::97])

    def entries_files() -> list[pa.Table]:
        files = [p for p in ds.indices()[0].files if not p.endswith(".fences.fermion")]
        out = []
        for path in files:
            with FileReader(str(tmp_path / "t" / path)) as reader:
                out.append(reader.read())
        return out

    # a refresh adds a build of the appended fragment and keeps the first build's files
    ds.append(table.slice(4000, 1000))
    ds.optimize_indices()
    index = ds.indices()[0]
    assert index.files[:2] == first.files and len(index.files) == 4
    assert [t.num_rows for t in entries_files()] == [4000, 1000] == [4000, index.num_entries - 4000]
    assert all(t.equals(_arrow_sorted(t)) for t in entries_files())
    _same(ds, probe)
    # the next refresh would make a third entries file: every entry merged into one build
    ds.append(table.slice(5000, 1000))
    ds.optimize_indices()
    (entries,) = entries_files()
    assert entries.num_rows == 6000 == ds.indices()[0].num_entries
    assert entries.equals(_arrow_sorted(entries))
    _same(ds, probe)


def test_the_process_cache_is_bounded() -> None:
    assert INDEX_CACHE.bytes_held <= INDEX_CACHE.capacity


def test_expression_trees_kept_are_not_confused() -> None:
    """The tree of an expression is kept by expression object: expressions made and
    dropped one after another (whose ids Python reuses) each get their own tree, and an
    index matches each as its own filter."""
    from fermion.table.indices.expression_tree import expression_tree
    from fermion.table.indices.match import match_filter

    for i in range(40):
        expr = pc.field(f"c{i % 3}") == i
        tree = expression_tree(expr)
        assert tree[:2] == ("call", "equal") and tree[2][0] == ("field", f"c{i % 3}")
        assert tree[2][1][1].as_py() == i
        predicate, exact = match_filter(expr, f"c{i % 3}")
        assert predicate is not None and predicate[2].as_py() == i and exact
        assert match_filter(expr, f"c{(i + 1) % 3}") == (None, False)
        del expr, tree


@settings(max_examples=examples(100), deadline=None)
@given(
    fences=st.lists(st.integers(-50, 50), min_size=1, max_size=300),
    bounds=st.lists(
        st.tuples(st.none() | st.integers(-60, 60), st.none() | st.integers(-60, 60)),
        min_size=1,
        max_size=8,
    ),
)
def test_wanted_blocks_are_the_union_of_each_bounds_blocks(
    fences: list[int], bounds: list[tuple[int | None, int | None]]
) -> None:
    """Block ``i`` holds keys in ``[keys[i], keys[i + 1]]``: a bound wants the blocks from
    the one before the first fence not below its low end (a key equal to a fence may end
    the block before it) up to the last fence not above its high end; the blocks are the
    union of those ranges, in order."""
    keys = np.array(sorted(fences), dtype=np.int64)
    expected: set[int] = set()
    for lo, hi in bounds:
        first = max(int(np.searchsorted(keys, lo, "left")) - 1, 0) if lo is not None else 0
        last = int(np.searchsorted(keys, hi, "right")) if hi is not None else len(keys)
        expected.update(range(first, last))
    assert lookup._wanted_blocks(keys, bounds).tolist() == sorted(expected)
