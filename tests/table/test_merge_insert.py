"""``Dataset.merge_insert``: semantics against an in-memory model, bad inputs, older
readers, real processes racing merges with each other and with appends, deletes and
compactions (docs/TABLE_FORMAT.md, "Merge-insert, update, replace_where")."""

from __future__ import annotations

import tempfile
from collections import Counter
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
    FermionError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from tests.support.budget import examples

Runner = Callable[..., list[tuple[str, Any]]]
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    names = table.column_names
    return sorted(
        (tuple(r[n] for n in names) for r in table.to_pylist()),
        key=lambda r: tuple((x is None, x) for x in r),
    )


def _model(
    target: list[dict[str, Any]],
    source: list[dict[str, Any]],
    update: tuple[str, ...] | None,
    insert: bool,
    delete_unmatched: bool,
    delete_if: Callable[[dict[str, Any]], bool] | None,
) -> list[dict[str, Any]]:
    """The same upsert done on Python rows: what SQL MERGE says."""
    by_key = {r["k"]: r for r in source}
    out = []
    for row in target:
        match = by_key.get(row["k"]) if row["k"] is not None else None
        if match is not None:
            out.append({**row, **{c: match[c] for c in update}} if update else row)
        elif delete_unmatched and (delete_if is None or delete_if(row)):
            continue
        else:
            out.append(row)
    if insert:
        present = {r["k"] for r in target}
        out.extend(r for r in source if r["k"] not in present)
    return out


keys = st.integers(0, 25)
values = st.one_of(st.none(), st.integers(-50, 50))
strings = st.one_of(st.none(), st.text("abc", max_size=3))
target_rows = st.lists(st.tuples(st.one_of(st.none(), keys), values, strings), max_size=30)
source_rows = st.lists(st.tuples(keys, values, strings), max_size=15, unique_by=lambda r: r[0])


@settings(max_examples=examples(60), deadline=None)
@given(
    target=target_rows,
    source=source_rows,
    update=st.sampled_from([None, ("k", "v", "s"), ("v",), ("s",)]),
    insert=st.booleans(),
    delete_unmatched=st.sampled_from([False, True, "v > 0"]),
    rows_per_file=st.integers(1, 8),
    pre_delete=st.booleans(),
    offset=st.sampled_from([0, -(2**62), 2**62 - 100]),
    far=st.booleans(),
)
def test_merge_insert_equals_the_same_upsert_in_memory(
    target: list[tuple[Any, ...]],
    source: list[tuple[Any, ...]],
    update: tuple[str, ...] | None,
    insert: bool,
    delete_unmatched: bool | str,
    rows_per_file: int,
    pre_delete: bool,
    offset: int,
    far: bool,
) -> None:
    # keys shifted by ``offset`` (a lookup by key - lowest key must not wrap around); a
    # ``far`` source key spreads the keys too far for a lookup array (Arrow's hash join)
    if update is None and not insert and not delete_unmatched:
        insert = True  # at least one clause
    target = [(None if k is None else k + offset, *rest) for k, *rest in target]
    source = [(k + offset, *rest) for k, *rest in source]
    if far:
        source.append((offset + 10**12, 7, "far"))
    target_table = pa.Table.from_pylist([dict(zip("kvs", r, strict=True)) for r in target], SCHEMA)
    source_table = pa.Table.from_pylist([dict(zip("kvs", r, strict=True)) for r in source], SCHEMA)
    uri = tempfile.mkdtemp()
    ds = ft.write_dataset(target_table, uri, max_rows_per_file=rows_per_file)
    if pre_delete and target:
        ds.delete(f"k < {offset + 3}")  # fragments with deletion files already
    before = ds.to_table()
    builder = ds.merge_insert("k")
    if update == ("k", "v", "s"):
        builder.when_matched_update_all()
    elif update:
        builder.when_matched_update(list(update))
    if insert:
        builder.when_not_matched_insert_all()
    delete_if = None
    if delete_unmatched == "v > 0":
        builder.when_not_matched_by_source_delete("v > 0")
        delete_if = lambda r: r["v"] is not None and r["v"] > 0  # noqa: E731
    elif delete_unmatched:
        builder.when_not_matched_by_source_delete()
    version = ds.version
    result = builder.execute(source_table)
    want = _model(
        before.to_pylist(), source_table.to_pylist(), update, insert, bool(delete_unmatched),
        delete_if,
    )  # fmt: skip
    got = ds.to_table()
    assert _rows(got) == _rows(pa.Table.from_pylist(want, SCHEMA))
    changed = result.num_updated_rows + result.num_inserted_rows + result.num_deleted_rows
    assert ds.version == version + (1 if changed else 0)  # one version, or none
    assert result.version == ds.version
    assert ft.dataset(uri).to_table().num_rows == got.num_rows
    assert _rows(ft.dataset(uri, version=version).to_table()) == _rows(before)  # old readers


def _table(uri: str, n: int = 20, rows_per_file: int = 5) -> ft.Dataset:
    data = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "v": pa.array([0] * n, pa.int64()),
            "s": pa.array(["x"] * n),
        }
    )
    return ft.write_dataset(data, uri, max_rows_per_file=rows_per_file)


def test_one_version_with_deletion_vectors_and_new_fragments(tmp_path: Path) -> None:
    ds = _table(str(tmp_path / "t"))
    source = pa.table({"k": pa.array([3, 7, 100], pa.int64()), "v": [1, 1, 1], "s": ["a"] * 3})
    result = (
        ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    )
    assert (result.num_updated_rows, result.num_inserted_rows, result.num_deleted_rows) == (2, 1, 0)
    assert ds.version == 2
    summary = ds.manifest.summary
    assert summary.operation == "merge_insert"
    assert (summary.added_fragments, summary.added_rows, summary.deleted_rows) == (1, 3, 2)
    with_deletions = [f.id for f in ds.manifest.fragments if f.HasField("deletion_file")]
    assert with_deletions == [0, 1]  # rows 3 and 7: fragments 0 and 1, nothing rewritten
    assert ds.count_rows() == 21
    assert ds.to_table(filter="k = 7").to_pylist() == [{"k": 7, "v": 1, "s": "a"}]


def test_key_statistics_prune_fragments_the_source_cannot_touch(tmp_path: Path) -> None:
    ds = _table(str(tmp_path / "t"))
    source = pa.table({"k": pa.array([12], pa.int64()), "v": [5], "s": ["y"]})
    builder = ds.merge_insert("k").when_matched_update(["v"])
    op = builder.plan(source)
    assert op is not None and op.touched_fragment_ids() == {2}


def test_a_stream_source_and_multi_column_keys(tmp_path: Path) -> None:
    ds = ft.write_dataset(
        pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"], "v": [0, 0, 0]}), str(tmp_path / "t")
    )
    source = pa.table({"a": [1, 2], "b": ["y", "y"], "v": [9, 9]})
    reader = pa.RecordBatchReader.from_batches(source.schema, source.to_batches(max_chunksize=1))
    ds.merge_insert(["a", "b"]).when_matched_update_all().when_not_matched_insert_all().execute(
        reader
    )
    assert _rows(ds.to_table()) == [(1, "x", 0), (1, "y", 9), (2, "x", 0), (2, "y", 9)]


BAD_SOURCES: dict[str, tuple[pa.Table, type[FermionError], str]] = {
    "duplicate keys": (
        pa.table({"k": pa.array([4, 4, 9, 9, 1], pa.int64()), "v": [1] * 5, "s": ["a"] * 5}),
        InvalidArgumentError,
        "2 keys occur more than once in the source: 4, 9",
    ),
    "key missing from the source": (
        pa.table({"v": pa.array([1], pa.int64()), "s": ["a"]}),
        SchemaMismatchError,
        "lacks the columns ['k']",
    ),
    "key of another type": (
        pa.table({"k": pa.array([1], pa.int32()), "v": pa.array([1], pa.int64()), "s": ["a"]}),
        SchemaMismatchError,
        "source column 'k' has type int32, the table has int64",
    ),
    "value of another type": (
        pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([1.5]), "s": ["a"]}),
        SchemaMismatchError,
        "source column 'v' has type double",
    ),
    "null key": (
        pa.table(
            {
                "k": pa.array([1, None], pa.int64()),
                "v": pa.array([1, 2], pa.int64()),
                "s": ["a", "b"],
            }
        ),
        InvalidArgumentError,
        "1 null keys",
    ),  # fmt: skip
    "a column the table lacks": (
        pa.table(
            {
                "k": pa.array([1], pa.int64()),
                "v": pa.array([1], pa.int64()),
                "s": ["a"],
                "extra": [1],
            }
        ),
        SchemaMismatchError,
        "no columns ['extra']",
    ),  # fmt: skip
    "not Arrow data": ({"k": [1]}, InvalidArgumentError, "expected a pyarrow Table"),  # type: ignore[dict-item]
}


@pytest.mark.parametrize("case", list(BAD_SOURCES))
def test_bad_sources_are_typed_errors_and_commit_nothing(tmp_path: Path, case: str) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    source, error, message = BAD_SOURCES[case]
    files = sorted(p for p in (tmp_path / "t").rglob("*") if p.is_file())
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    assert ft.dataset(uri).version == 1
    assert sorted(p for p in (tmp_path / "t").rglob("*") if p.is_file()) == files  # no file


def test_bad_builders_are_typed_errors(tmp_path: Path) -> None:
    ds = _table(str(tmp_path / "t"))
    source = pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([1], pa.int64())})
    with pytest.raises(ColumnNotFoundError, match="merge key 'nope'"):
        ds.merge_insert("nope")
    with pytest.raises(InvalidArgumentError, match="distinct key column names"):
        ds.merge_insert(["k", "k"])
    with pytest.raises(InvalidArgumentError, match="at least one when_"):
        ds.merge_insert("k").execute(source)
    with pytest.raises(InvalidArgumentError, match="sets non-key columns"):
        ds.merge_insert("k").when_matched_update(["k"])
    with pytest.raises(ColumnNotFoundError, match="no columns"):
        ds.merge_insert("k").when_matched_update(["w"])
    # a partial update needs only the key and the columns it sets
    ds.merge_insert("k").when_matched_update(["v"]).execute(source)
    assert ds.to_table(filter="k = 1").to_pylist() == [{"k": 1, "v": 1, "s": "x"}]


def test_a_merge_planned_on_an_old_version_re_plans_after_a_conflicting_merge(
    tmp_path: Path,
) -> None:
    uri = str(tmp_path / "t")
    _table(uri)
    first, second = ft.dataset(uri), ft.dataset(uri)
    s1 = pa.table({"k": pa.array([1, 50], pa.int64()), "v": [1, 1], "s": ["a", "a"]})
    s2 = pa.table({"k": pa.array([1, 50], pa.int64()), "v": [2, 2], "s": ["b", "b"]})
    first.merge_insert("k").when_matched_update(["v"]).when_not_matched_insert_all().execute(s1)
    result = (
        second.merge_insert("k").when_matched_update(["s"]).when_not_matched_insert_all()
        .execute(s2)
    )  # fmt: skip
    assert result.commit is not None and result.commit.replanned == 1
    # the second merge saw the first one's rows: 50 updated (not inserted twice), v kept
    assert (result.num_updated_rows, result.num_inserted_rows) == (2, 0)
    got = ft.dataset(uri).to_table(filter="k IN (1, 50)")
    assert _rows(got) == [(1, 1, "b"), (50, 1, "b")]


# -- real processes ------------------------------------------------------------------------

COLUMNS = ["a", "b", "c", "d"]
NEW_KEYS = list(range(100, 105))


def _merge_one_column(uri: str, worker: int) -> int:
    """Set column ``COLUMNS[worker]`` of every key to worker + 1; insert NEW_KEYS."""
    ids = [*range(50), *NEW_KEYS]
    columns = {"k": pa.array(ids, pa.int64())}
    for name in COLUMNS:
        columns[name] = pa.array([worker + 1 if name == COLUMNS[worker] else 0] * len(ids))
    # every worker plans on version 1, so every merge but the first to commit must re-plan
    # however the processes happen to be scheduled (planning on the latest version let a
    # loaded machine run them one after another, and then none re-planned)
    ds = ft.dataset(uri, version=1)
    result = (
        ds.merge_insert("k").when_matched_update([COLUMNS[worker]]).when_not_matched_insert_all()
        .execute(pa.table(columns))
    )  # fmt: skip
    assert result.commit is not None
    return result.commit.replanned


def test_concurrent_merges_of_the_same_keys_lose_no_update_and_double_no_key(
    tmp_path: Path, processes: Runner
) -> None:
    uri = str(tmp_path / "t")
    data = {"k": pa.array(range(50), pa.int64()), **{c: pa.array([0] * 50) for c in COLUMNS}}
    ft.write_dataset(pa.table(data), uri, max_rows_per_file=10)
    results = processes(_merge_one_column, [(uri, w) for w in range(len(COLUMNS))])
    assert [s for s, _ in results] == ["ok"] * len(COLUMNS), results
    replanned = [r for _, r in results]
    assert sum(1 for r in replanned if r == 0) <= 1, results  # only the first did not re-plan
    got = ft.dataset(uri).to_table()
    keys = Counter(got["k"].to_pylist())
    assert sorted(keys) == [*range(50), *NEW_KEYS] and set(keys.values()) == {1}
    for n, name in enumerate(COLUMNS):  # every merge's column survived every other merge
        assert set(got[name].to_pylist()) == {n + 1}, name
    assert ft.dataset(uri).version == 1 + len(COLUMNS)


def _race_job(uri: str, kind: str, arg: Any) -> str:
    ds = ft.dataset(uri)
    if kind == "merge":
        ids = [*arg, *(i + 1000 for i in arg)]  # update arg, insert arg + 1000
        source = pa.table({"k": pa.array(ids, pa.int64()), "v": pa.array([1] * len(ids))})
        ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    elif kind == "append":
        ds.append(pa.table({"k": pa.array(arg, pa.int64()), "v": pa.array([2] * len(arg))}))
    elif kind == "delete":
        ds.delete(arg)
    else:
        ds.compact_files(target_rows_per_fragment=1000)
    return kind


def test_merges_racing_appends_deletes_and_compactions(tmp_path: Path, processes: Runner) -> None:
    uri = str(tmp_path / "t")
    n = 200
    ft.write_dataset(
        pa.table({"k": pa.array(range(n), pa.int64()), "v": pa.array([0] * n)}), uri,
        max_rows_per_file=20,
    )  # fmt: skip
    merges = [list(range(0, 40, 2)), list(range(1, 40, 2)), list(range(30, 50))]
    jobs = [
        *[(uri, "merge", m) for m in merges],
        (uri, "append", list(range(5000, 5010))),
        (uri, "delete", "k >= 100 AND k < 120"),
        (uri, "delete", "k >= 45 AND k < 48"),  # keys a merge also updates
        (uri, "compact", None),
    ]
    results = processes(_race_job, jobs)
    assert all(s == "ok" for s, _ in results), results
    got = ft.dataset(uri).to_table()
    count = Counter(got["k"].to_pylist())
    assert max(count.values()) == 1  # nothing doubled
    merged = {k for m in merges for k in m}
    inserted = {k + 1000 for m in merges for k in m}
    untouched = set(range(n)) - merged - set(range(100, 120))
    assert set(range(5000, 5010)) <= set(count)  # nothing lost
    assert inserted <= set(count)
    assert not set(range(100, 120)) & set(count)  # nothing resurrected
    value = dict(zip(got["k"].to_pylist(), got["v"].to_pylist(), strict=True))
    assert all(value[k] == 0 for k in untouched)
    assert all(value[k] == 1 for k in merged - set(range(45, 48)))
    # 45-47: deleted after the merge, or updated after the delete re-planned (then inserted)
    assert all(value.get(k, 1) == 1 for k in range(45, 48))


def _insert_keys(uri: str, worker: int) -> int:
    """Upsert keys 500-519 (every worker) and 600 + worker (its own)."""
    ids = [*range(500, 520), 600 + worker]
    source = pa.table({"k": pa.array(ids, pa.int64()), "v": pa.array([worker] * len(ids))})
    ds = ft.dataset(uri)
    result = (
        ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    )
    return result.num_inserted_rows


def test_concurrent_merges_inserting_the_same_new_keys_insert_each_once(
    tmp_path: Path, processes: Runner
) -> None:
    """No merge touches an existing row, so only the key hashes in the transactions can
    tell that they collide."""
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"k": pa.array([1], pa.int64()), "v": [0]}), uri)
    workers = 4
    results = processes(_insert_keys, [(uri, w) for w in range(workers)])
    assert [s for s, _ in results] == ["ok"] * workers, results
    inserted = sorted(r for _, r in results)
    assert inserted[-1] == 21 and sum(inserted) == 20 + workers  # 500-519 inserted once
    got = ft.dataset(uri).to_table()
    count = Counter(got["k"].to_pylist())
    assert sorted(count) == [1, *range(500, 520), *range(600, 600 + workers)]
    assert set(count.values()) == {1}


def test_a_merge_re_planned_after_add_columns_keeps_the_new_column(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _table(uri)
    merger = ft.dataset(uri)  # plans on version 1, before the column exists
    ft.dataset(uri).add_columns({"g": "v + 7"})
    source = pa.table({"k": pa.array([2, 77], pa.int64()), "v": [5, 5], "s": ["n", "n"]})
    result = merger.merge_insert("k").when_matched_update_all().when_not_matched_insert_all()
    result.execute(source)
    assert merger.version == 3 and merger.last_commit.replanned == 1  # type: ignore[union-attr]
    rows = {r["k"]: r for r in ft.dataset(uri).to_table().to_pylist()}
    assert rows[2] == {"k": 2, "v": 5, "s": "n", "g": 7}  # g kept from the target row
    assert rows[77] == {"k": 77, "v": 5, "s": "n", "g": None}
    assert rows[3]["g"] == 7 and len(rows) == 21


@pytest.mark.parametrize(
    ("kind", "offset", "far"),
    [
        (pa.int64(), 0, False),  # dense keys: the lookup array
        (pa.int64(), -(2**63) + 5, False),  # lowest key near the int64 minimum
        (pa.int32(), -20, False),
        (pa.uint64(), 2**63, False),  # beyond int64: Arrow's hash join
        (pa.int64(), 0, True),  # keys too far apart for a lookup array: the hash join
    ],
)
def test_integer_keys_match_alike_by_lookup_or_hash_join(
    tmp_path: Path, kind: pa.DataType, offset: int, far: bool
) -> None:
    keys = [offset + k for k in range(10)]
    table = pa.table({"k": pa.array(keys, kind), "v": pa.array([0] * 10, pa.int64())})
    ds = ft.write_dataset(table, str(tmp_path), max_rows_per_file=5)
    ds.delete(pc.field("k") == pa.scalar(offset + 4, kind))  # (SQL: no uint64 above int64)
    new = [offset + 3, offset + 0, offset + 4, offset + 12] + ([offset + 10**9] if far else [])
    source = pa.table({"k": pa.array(new, kind), "v": pa.array(range(1, len(new) + 1), pa.int64())})
    result = (
        ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    )
    assert (result.num_updated_rows, result.num_inserted_rows) == (2, 2 + far)
    got = {r["k"] - offset: r["v"] for r in ds.to_table().to_pylist()}
    want = {k: 0 for k in range(10) if k != 4} | {3: 1, 0: 2, 4: 3, 12: 4}
    assert got == want | ({10**9: 5} if far else {})
    assert sorted(ds.to_table()["k"].to_pylist()) == sorted(offset + k for k in want) + (
        [offset + 10**9] if far else []
    )


def _data_files(uri: Path) -> list[str]:
    return sorted(str(p.relative_to(uri)) for p in (uri / "data").rglob("*") if p.is_file())


@pytest.mark.parametrize("twice", [False, True])
def test_an_upsert_of_whole_rows_leaves_only_the_files_it_commits(
    tmp_path: Path, twice: bool
) -> None:
    # the source is written while the fragments are joined; when a key matches two table
    # rows (``twice``) that file is removed and the rows are written once per match
    keys = [1, 2, 3, 4] + ([2] if twice else [])
    table = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array([0] * len(keys), pa.int64())})
    ds = ft.write_dataset(table, str(tmp_path), max_rows_per_file=2)
    before = {r["_rowid"]: r["k"] for r in ds.to_table(columns=["_rowid", "k"]).to_pylist()}
    source = pa.table({"k": pa.array([2, 9], pa.int64()), "v": pa.array([5, 6], pa.int64())})
    result = (
        ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    )
    assert (result.num_updated_rows, result.num_inserted_rows) == (1 + twice, 1)
    rows = ds.to_table(columns=["_rowid", "k", "v"]).to_pylist()
    assert sorted((r["k"], r["v"]) for r in rows) == sorted(
        [(1, 0), (3, 0), (4, 0), (2, 5), (9, 6)] + ([(2, 5)] if twice else [])
    )
    kept = {r["_rowid"] for r in rows if r["k"] == 2}
    assert kept == {i for i, k in before.items() if k == 2}  # updated rows keep their ids
    versions = [ft.dataset(str(tmp_path), version=v) for v in (1, ds.version)]
    referenced = {f.path for v in versions for fragment in v.fragments for f in fragment.files}
    assert _data_files(tmp_path) == sorted(referenced)  # (an emptied fragment's file stays)


def test_a_join_failing_on_one_fragment_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the joins write deletion files and the source is written beside them: when one
    # fragment cannot be read, every file of the plan is removed and the error raised
    import fermion.table.merge_insert as merge_module

    table = pa.table({"k": pa.array(range(8), pa.int64()), "v": pa.array([0] * 8, pa.int64())})
    ds = ft.write_dataset(table, str(tmp_path), max_rows_per_file=2)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    read = merge_module.read_fragment

    def failing(storage: Any, schema: Any, fragment: Any, *args: Any, **kwargs: Any) -> Any:
        if fragment.id == ds.fragments[-1].id:
            raise OSError("unreadable fragment")
        return read(storage, schema, fragment, *args, **kwargs)

    monkeypatch.setattr(merge_module, "read_fragment", failing)
    source = pa.table({"k": pa.array([1, 3, 5, 7, 9], pa.int64()), "v": pa.array([1] * 5)})
    with pytest.raises(OSError, match="unreadable"):
        ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    after = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert after == before
