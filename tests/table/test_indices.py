"""Scalar indices (fermion.table.indices): built, used by scans, kept right through every
change of the table.

Every query is checked against the unindexed scan (``use_indices=False``), and the scan
statistics show the index was used (covered fragments answered from it, the bytes of the
index read, the data files opened).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
import fermion.table as ft
from fermion.cli.app import main as cli_main
from fermion.errors import ColumnNotFoundError, DatasetError, InvalidArgumentError
from fermion.table.indices.api import create_index, drop_index
from fermion.table.indices.tasks import (
    commit_index_build,
    execute_index_build,
    plan_index_build,
)
from fermion.table.versions import load_manifest


def _both(ds: ft.Dataset, filter: Any, columns: list[str] | None = None) -> tuple[pa.Table, Any]:
    """The indexed result (with its scan stats), checked equal to the unindexed one."""
    scanner = ds.scanner(columns, filter)
    indexed = scanner.to_table()
    plain = ds.scanner(columns, filter, use_indices=False).to_table()
    assert indexed.equals(plain), f"{filter}: {indexed.to_pydict()} != {plain.to_pydict()}"
    return indexed, scanner.stats


def _table(n: int = 1000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, n // 2, n)
    valid = rng.random(n) > 0.05
    return pa.table({
        "k": pa.array(keys, pa.int64(), mask=~valid),
        "s": pa.array([f"s{v % 37}" for v in keys]),
        "f": pa.array(keys / 7.0),
        "d": pa.array(keys.astype("int32"), pa.int32()).cast(pa.date32()),
        "t": pa.array(keys * 1_000_000, pa.timestamp("us")),
        "c": pa.array([None if v % 11 == 0 else ["de", "fr", "us"][v % 3] for v in keys]),
        "v": pa.array(np.arange(n)),
    })  # fmt: skip


@pytest.fixture
def ds(tmp_path: Path) -> ft.Dataset:
    return ft.write_dataset(_table(), str(tmp_path / "t"), max_rows_per_file=250)


@pytest.mark.parametrize(
    ("column", "kind", "filters"),
    [
        ("k", "BTREE", ["k = 7", "k IN (1, 2, 300)", "k > 480", "k BETWEEN 10 AND 20",
                        "k IS NULL", "k = 7 AND v > 100", "k = 3 OR k = 9", "k < -1"]),
        ("s", "BTREE", ["s = 's3'", "s IN ('s1', 's36')", "s >= 's35'"]),
        ("f", "BTREE", ["f = 1.0", "f < 0.5", "f > 70.0"]),
        ("d", "BTREE", ["d = DATE '1970-01-08'", "d >= DATE '1970-12-01'"]),
        ("t", "BTREE", ["t = TIMESTAMP '1970-01-01 00:00:07'"]),
        ("c", "BITMAP", ["c = 'fr'", "c IN ('de', 'us')", "c IS NULL", "c = 'xx'"]),
        ("k", "BITMAP", ["k = 7", "k IS NULL", "k IN (" + ", ".join(map(str, range(40))) + ")"]),
    ],
)  # fmt: skip
def test_index_answers_equal_the_scan(
    ds: ft.Dataset, column: str, kind: str, filters: list[str]
) -> None:
    ds.create_index(column, kind)
    for text in filters:
        _, stats = _both(ds, text)
        survivors = len(
            ds.scanner(None, text, use_indices=False).fragments()
        )  # after pruning by statistics
        # the index is consulted first, for every fragment it covers; no data file is
        # opened that statistics would have pruned
        assert stats.fragments_indexed == len(ds.fragments), text
        assert stats.index_files_read == 1, text
        assert stats.files_opened <= survivors, text


def test_expression_filters_and_other_entry_points(ds: ft.Dataset) -> None:
    ds.create_index("k", "BTREE")
    expr = (pc.field("k") == 11) & (pc.field("s") != "zz")
    table, stats = _both(ds, expr, ["v"])
    assert stats.fragments_indexed == 4
    assert ds.count_rows(expr) == table.num_rows
    batches = list(ds.to_batches(["v"], expr))
    assert pa.Table.from_batches(batches, table.schema).equals(table)
    with_offsets = ds.scanner(["v"], expr, with_row_offsets=True).to_table()
    plain = ds.scanner(["v"], expr, with_row_offsets=True, use_indices=False).to_table()
    assert with_offsets.equals(plain)
    _, stats = _both(ds, pc.field("v") < 3)  # no conjunct on k: the index is not used
    assert stats.fragments_indexed == 0 and stats.index_files_read == 0


def test_a_key_lookup_reads_few_index_pages_and_only_matching_fragments(tmp_path: Path) -> None:
    n = 1_000_000
    keys = np.random.default_rng(1).permutation(n).astype(np.int64)
    data = pa.table({"k": keys, "payload": np.arange(n)})
    ds = ft.write_dataset(data, str(tmp_path / "t"), max_rows_per_file=n // 4)
    ds.create_index("k", "BTREE")
    index_size = ds.indices()[0].size_bytes
    target = int(keys[123_456])
    table, stats = _both(ds, f"k = {target}")
    assert table.to_pydict() == {"k": [target], "payload": [123_456]}
    assert stats.fragments_indexed == 4
    assert stats.files_opened == 1  # only the fragment holding the key
    # the metadata and the pages of the one key (64 KiB each), not the whole index
    assert stats.index_bytes_read < index_size / 10, (stats.index_bytes_read, index_size)
    plain = ds.scanner(None, f"k = {target}", use_indices=False)
    plain.to_table()
    assert plain.stats.files_opened == 4  # without the index every fragment is read


def test_deleted_rows_never_come_back(ds: ft.Dataset) -> None:
    ds.create_index("k", "BTREE")
    ds.delete((pc.field("k") == 7) & (pc.bit_wise_and(pc.field("v"), 1) == 0))
    table, _ = _both(ds, "k = 7")
    assert all(v % 2 for v in table["v"].to_pylist())
    ds.delete("k = 8")
    table, stats = _both(ds, "k = 8")
    assert table.num_rows == 0 and stats.fragments_indexed == 4


def test_appends_and_compactions_after_the_build(ds: ft.Dataset) -> None:
    ds.create_index("k", "BTREE")
    ds.append(_table(300, seed=5))
    _, stats = _both(ds, "k = 7")
    assert stats.fragments_indexed == 4  # the appended fragment is scanned as usual
    ds.delete("v < 50")
    ds.compact_files(target_rows_per_fragment=600)
    index = ds.indices()[0]
    assert not set(index.fragment_ids) & {f.id for f in ds.fragments}  # all rewritten
    _both(ds, "k IN (7, 9)")
    ds.optimize_indices()
    index = ds.indices()[0]
    assert set(index.fragment_ids) == {f.id for f in ds.fragments}
    for text in ("k IN (7, 9)", "k IS NULL", "k > 200"):
        _, stats = _both(ds, text)
        # the index is consulted first and answers every fragment (an exact answer:
        # statistics could not narrow its candidate rows, so they are not evaluated)
        assert stats.fragments_indexed == len(ds.fragments)
    assert index.num_entries == sum(f.physical_rows for f in ds.fragments)


def test_optimize_merges_the_old_entries_with_the_new_fragments(ds: ft.Dataset) -> None:
    ds.create_index("c", "BITMAP")
    ds.append(_table(100, seed=9))
    before = ds.indices()[0]
    ds.optimize_indices()
    after = ds.indices()[0]
    assert after.uuid != before.uuid and after.name == before.name
    assert after.fragment_ids == (0, 1, 2, 3, 4)
    assert after.num_entries == 1100
    _both(ds, "c = 'us'")
    version = ds.version
    ds.optimize_indices()  # nothing left to cover: no commit
    assert ds.version == version


def test_schema_changes(ds: ft.Dataset) -> None:
    ds.create_index("k", "BTREE")
    ds.rename_columns({"k": "key"})
    assert ds.indices()[0].columns == ("key",)
    _, stats = _both(ds, "key = 7")
    assert stats.fragments_indexed == 4
    ds.create_index("d", "BTREE")
    ds.alter_columns({"key": pa.int64()})  # same type: still used
    ds.drop_columns(["d"])
    assert [i.columns for i in ds.indices()] == [("key",)]


def test_a_widened_column_is_scanned_without_its_index(tmp_path: Path) -> None:
    data = pa.table({"k": pa.array([1, 2, 3, 2], pa.int32())})
    ds = ft.write_dataset(data, str(tmp_path / "t"))
    ds.create_index("k", "BTREE")
    ds.alter_columns({"k": pa.int64()})
    table, stats = _both(ds, "k = 2")
    assert table.num_rows == 2 and stats.index_files_read == 0
    ds.append(pa.table({"k": pa.array([2], pa.int64())}))
    ds.optimize_indices()  # the old entries widen with the column
    table, stats = _both(ds, "k = 2")
    assert table.num_rows == 3 and stats.index_files_read == 1


def test_replace_drop_and_bad_input(ds: ft.Dataset) -> None:
    ds.create_index("k", "btree", name="by_k")
    first = ds.indices()[0].uuid
    with pytest.raises(InvalidArgumentError, match="exists"):
        ds.create_index("k", "BTREE", name="by_k")
    ds.create_index("k", "BITMAP", name="by_k", replace=True)
    assert [(i.name, i.kind) for i in ds.indices()] == [("by_k", "BITMAP")]
    assert ds.indices()[0].uuid != first
    with pytest.raises(InvalidArgumentError, match="unknown index kind"):
        ds.create_index("k", "HASH")
    with pytest.raises(InvalidArgumentError, match="cannot key"):
        _bool_index(ds)
    with pytest.raises(ColumnNotFoundError):
        ds.create_index("nope")
    with pytest.raises(DatasetError, match="no index named"):
        ds.drop_index("nope")
    ds.drop_index("by_k")
    assert ds.indices() == []
    _, stats = _both(ds, "k = 7")
    assert stats.index_files_read == 0
    old = ft.dataset(ds.uri, version=ds.version - 1)
    assert [i.name for i in old.indices()] == ["by_k"]  # time travel keeps it
    _, stats = _both(old, "k = 7")
    assert stats.index_files_read == 1


def _bool_index(ds: ft.Dataset) -> None:
    ds.add_columns([pa.field("flag", pa.bool_())])
    ds.create_index("flag", "BTREE")


def test_a_build_racing_a_compaction_covers_only_what_is_left(ds: ft.Dataset) -> None:
    read = load_manifest(ds.storage, ds.version)
    ds.compact_files(target_rows_per_fragment=500)  # fragments 0-3 -> two new ones
    result = create_index(ds.storage, read, "k", "BTREE")
    assert result.replanned == 1
    index = result.manifest.indices[0]
    assert list(index.fragment_ids) == []  # everything it indexed was rewritten
    latest = ft.dataset(ds.uri)
    _, stats = _both(latest, "k = 7")
    assert stats.fragments_indexed == 0
    latest.optimize_indices()
    _, stats = _both(latest, "k = 7")
    assert stats.fragments_indexed == 2


def test_a_refresh_adds_a_build_and_the_next_one_merges_them(ds: ft.Dataset) -> None:
    """``optimize_indices`` writes a build of the uncovered fragments only and keeps the
    earlier build's files (two entries files, both searched); a refresh that would make a
    third entries file merges every live entry into one build, dropping the entries of
    fragments a compaction removed."""
    texts = ("k = 7", "k IN (1, 2, 300)", "k IS NULL", "k > 240")
    ds.create_index("k", "BTREE")
    first = ds.indices()[0]
    ds.append(_table(100, seed=3))
    ds.optimize_indices()
    extended = ds.indices()[0]
    assert extended.files[:2] == first.files and len(extended.files) == 4
    assert extended.uuid != first.uuid and all(extended.uuid in f for f in extended.files[2:])
    assert extended.fragment_ids == (0, 1, 2, 3, 4) and extended.num_entries == 1100
    ds.cleanup_old_versions(datetime.timedelta(0), orphan_older_than=datetime.timedelta(0))
    assert all(ds.storage.exists(f) for f in extended.files)  # the first build's too
    for text in texts:
        _, stats = _both(ds, text)
        assert stats.fragments_indexed == 5 and stats.index_files_read == 2
    ds.delete("v < 200")  # (and the whole appended fragment: its v are 0-99)
    ds.compact_files(target_rows_per_fragment=250)  # fragment 0 rewritten: 300 stale entries
    assert 0 not in {f.id for f in ds.fragments}
    ds.optimize_indices()
    merged = ds.indices()[0]
    assert len(merged.files) == 2
    assert merged.fragment_ids == tuple(sorted(f.id for f in ds.fragments))
    assert merged.num_entries == sum(f.physical_rows for f in ds.fragments)
    for text in texts:
        _, stats = _both(ds, text)
        assert stats.fragments_indexed == len(ds.fragments) and stats.index_files_read == 1
    ds.cleanup_old_versions(datetime.timedelta(0), orphan_older_than=datetime.timedelta(0))
    assert not any(ds.storage.exists(f) for f in extended.files)


def test_cleanup_keeps_the_files_of_retained_indices(ds: ft.Dataset) -> None:
    ds.create_index("k", "BTREE")
    files = ds.indices()[0].files
    ds.cleanup_old_versions(datetime.timedelta(0), orphan_older_than=datetime.timedelta(0))
    assert all(ds.storage.exists(f) for f in files)
    _both(ds, "k = 7")
    ds.drop_index("k_idx")
    ds.cleanup_old_versions(datetime.timedelta(0), orphan_older_than=datetime.timedelta(0))
    assert not any(ds.storage.exists(f) for f in files)


def test_fermion_show_lists_indices(ds: ft.Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    ds.create_index("k", "BTREE")
    ds.create_index("c", "BITMAP")
    assert cli_main(["show", ds.uri, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["indices"]
    assert [(i["name"], i["kind"], i["columns"]) for i in shown] == [
        ("k_idx", "BTREE", ["k"]), ("c_idx", "BITMAP", ["c"]),
    ]  # fmt: skip
    assert cli_main(["show", ds.uri]) == 0
    assert "index k_idx (BTREE) on k over 4 fragments" in capsys.readouterr().out


def test_is_null_on_empty_strings_and_nulls(tmp_path: Path) -> None:
    # a stripe of '' and nulls has no DATA chunk; its statistics must not claim "no nulls"
    path = str(tmp_path / "f.fermion")
    fermion.write_table(pa.table({"k": pa.array(["", None, None], pa.string())}), path)
    assert fermion.read_table(path, filter=pc.field("k").is_null()).num_rows == 2


def _theirs(ds: ft.Dataset, what: str) -> None:
    """Commit one concurrent operation on ``ds`` (a table with an index ``old``)."""
    if what == "append":
        ds.append(_table(50, seed=3))
    elif what == "delete_rows":
        ds.delete("k = 7")
    elif what == "delete_fragment":
        ds.delete("v < 250")  # fragment 0 entirely
    elif what == "rewrite":
        ds.compact_files(target_rows_per_fragment=500)
    elif what == "overwrite":
        ft.write_dataset(_table(300, seed=4), ds.uri, mode="overwrite")
    elif what == "restore":
        ds.restore(1)
    elif what == "drop_index":
        ds.drop_index("old")


#: their operation -> whether a CreateIndex read before it must re-plan (conflict matrix)
REPLANS = {
    "append": False, "delete_rows": False, "delete_fragment": True, "rewrite": True,
    "overwrite": True, "restore": True, "drop_index": False,
}  # fmt: skip


@pytest.mark.parametrize("theirs", sorted(REPLANS))
def test_create_and_drop_index_against_each_concurrent_operation(
    ds: ft.Dataset, theirs: str
) -> None:
    ds.create_index("c", "BITMAP", name="old")
    read = load_manifest(ds.storage, ds.version)
    _theirs(ft.dataset(ds.uri), theirs)
    result = create_index(ds.storage, read, "k", "BTREE")  # read before theirs
    assert result.replanned == int(REPLANS[theirs])
    present = {f.id for f in result.manifest.fragments}
    index = next(i for i in result.manifest.indices if i.name == "k_idx")
    expected = present & {0, 1, 2, 3}  # what it indexed, minus what left
    assert set(index.fragment_ids) == expected
    latest = ft.dataset(ds.uri)
    for text in ("k = 7", "k IN (3, 9, 11)", "k IS NULL", "c = 'fr'"):
        _both(latest, text)
    latest.optimize_indices()
    assert {i.name: set(i.fragment_ids) == present for i in latest.indices()}["k_idx"]
    _both(latest, "k = 7")
    # a drop read before a newer commit always commits, and the index is gone after it
    read = load_manifest(ds.storage, latest.version)
    _theirs(ft.dataset(ds.uri), "append")
    result = drop_index(ds.storage, read, "k_idx")
    assert result.replanned == 0 and result.manifest.version == read.version + 2
    assert "k_idx" not in [i.name for i in result.manifest.indices]


def test_index_build_tasks_refresh_rebuild_and_race(ds: ft.Dataset) -> None:
    plan = plan_index_build(ds.uri, "k", "btree", fragments_per_task=3)
    assert [len(t.fragments) for t in plan.tasks] == [3, 1]
    commit_index_build(plan, [execute_index_build(t) for t in plan.tasks])
    ds = ft.dataset(ds.uri)
    first = ds.indices()[0]
    ds.append(_table(100, seed=8))
    plan = plan_index_build(ds.uri, "k", "BTREE")  # a refresh: only the new fragment
    assert [len(t.fragments) for t in plan.tasks] == [1]
    results = [execute_index_build(t) for t in plan.tasks]
    ft.dataset(ds.uri).compact_files(target_rows_per_fragment=500)  # rewrites 0-3 meanwhile
    result = commit_index_build(plan, results)
    assert result.replanned == 1
    latest = ft.dataset(ds.uri)
    (index,) = latest.indices()
    assert index.fragment_ids == (4,) and index.uuid != first.uuid
    assert not [p for p in Path(ds.uri, "_indices").rglob("run-*")]
    _both(latest, "k IN (7, 8, 9)")
    plan = plan_index_build(ds.uri, "k", "BTREE", rebuild=True)
    assert len(plan.tasks) == len(latest.fragments)
    commit_index_build(plan, [execute_index_build(t) for t in plan.tasks])
    latest = ft.dataset(ds.uri)
    assert set(latest.indices()[0].fragment_ids) == {f.id for f in latest.fragments}
    _, stats = _both(latest, "k = 9")
    assert stats.fragments_indexed == len(latest.fragments)
    with pytest.raises(InvalidArgumentError, match="another column or kind"):
        plan_index_build(ds.uri, "k", "BITMAP")
    with pytest.raises(ColumnNotFoundError):
        plan_index_build(ds.uri, "nope", "BTREE")


def test_index_modules_take_versions_and_still_accept_messages(tmp_path: Path) -> None:
    """The lookups and index planning take a TableVersion, domain fragments and index
    entries; a manifest and its messages (the signatures before the domain model) give the
    same answers."""
    from fermion.table.indices import api, lookup
    from fermion.table.indices.model import IndexEntry, entry_of, indices_of
    from fermion.table.scan import ScanStats

    ds = ft.write_dataset(_table(1000), str(tmp_path / "t"), max_rows_per_file=300)
    ds.create_index("k", "BTREE")
    ds.append(_table(100, seed=1))
    version, manifest = ds.table_version, ds.manifest
    (entry,) = indices_of(version)
    assert isinstance(entry, IndexEntry) and entry.fragment_ids == (0, 1, 2, 3)
    assert api.list_indices(manifest) == api.list_indices(version) == ds.indices()
    where = pc.field("k") <= 20
    by_version = lookup.plan_indexed_scan(
        ds.storage, version, ds.table_schema, where, list(ds.fragments), ScanStats()
    )
    by_manifest = lookup.plan_indexed_scan(
        ds.storage, manifest, ds.table_schema, where, list(manifest.fragments), ScanStats()
    )
    assert [f.id for f in by_version[0]] == [f.id for f in by_manifest[0]]
    assert by_version[1].keys() == by_manifest[1].keys()
    assert all(np.array_equal(by_version[1][i], by_manifest[1][i]) for i in by_version[1])
    assert lookup.index_column(manifest.indices[0], ds.table_schema) == "k"
    op = api.extend_index(ds.storage, manifest, "k", manifest.indices[0], [manifest.fragments[4]])
    assert entry_of(op).fragment_ids == (0, 1, 2, 3, 4)
    assert entry_of(api.narrowed(op, version)).fragment_ids == (0, 1, 2, 3, 4)
    assert entry_of(api.narrowed(op, None)).fragment_ids == ()
