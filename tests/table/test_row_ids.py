"""Stable row ids (docs/TABLE_FORMAT.md, "Row ids"): assigned at commit, kept by every
rewrite, never reused; ``_rowid`` as a column; ``take_rowids``; tables without row ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion.table as ft
from fermion.errors import (
    ColumnNotFoundError,
    DatasetError,
    InvalidArgumentError,
    InvalidFileError,
    UnsupportedVersionError,
)
from fermion.table import codec, framing
from fermion.table.codec import FLAG_ROW_IDS, decode_manifest
from fermion.table.operations import Append, Overwrite, Rewrite, RewriteGroup
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.row_ids import decode, encode, fragment_row_ids
from fermion.table.schema import TableSchema
from fermion.table.tasks import (
    commit_rewrite,
    commit_write,
    execute_rewrite,
    execute_write,
    plan_compaction,
    plan_write,
)
from fermion.table.transition import apply_operation
from tests.table.row_id_support import golden_copy, write_table_without_row_ids


def _rows(ids: list[int] | range, tag: str = "a") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "v": pa.array([f"{tag}{i}" for i in ids], pa.string())}
    )


def _by_rowid(ds: ft.Dataset) -> dict[int, tuple[int, str]]:
    """Every live row of the version, by row id (asserting ids are unique)."""
    table = ds.to_table(columns=["_rowid", "id", "v"])
    ids = table["_rowid"].to_pylist()
    assert len(set(ids)) == len(ids), "duplicate row ids"
    return {
        r: (i, v)
        for r, i, v in zip(ids, table["id"].to_pylist(), table["v"].to_pylist(), strict=True)
    }


def _all_ids(ds: ft.Dataset) -> np.ndarray:
    """The ids of every physical row of the version (deleted rows included)."""
    parts = [fragment_row_ids(f) for f in ds.manifest.fragments]
    return np.concatenate([p for p in parts if p is not None])


# -- assignment -----------------------------------------------------------------------------


def test_a_new_table_has_row_ids_in_write_order(tmp_path: Path) -> None:
    ds = ft.write_dataset(_rows(range(10)), str(tmp_path / "t"), max_rows_per_file=4)
    assert ds.manifest.reader_feature_flags & FLAG_ROW_IDS
    assert ds.manifest.writer_feature_flags & FLAG_ROW_IDS
    assert ds.manifest.next_row_id == 10
    table = ds.to_table(columns=["id", "_rowid"])
    assert table.schema.field("_rowid").type == pa.uint64()
    assert table["_rowid"].to_pylist() == table["id"].to_pylist() == list(range(10))
    kinds = [f.row_ids.segments[0].WhichOneof("kind") for f in ds.manifest.fragments]
    assert kinds == ["range"] * 3


def test_appends_continue_and_deleted_ids_are_never_given_again(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_rows(range(5)), uri)
    ds.delete("id >= 3")  # ids 3 and 4 gone
    ds.append(_rows(range(5, 8)))
    assert sorted(_by_rowid(ds)) == [0, 1, 2, 5, 6, 7]
    ds.delete("id >= 0")  # every row: the fragments leave the manifest
    assert ds.count_rows() == 0 and ds.manifest.next_row_id == 8
    ds.append(_rows([100]))
    assert list(_by_rowid(ds)) == [8]


def test_overwrite_and_restore_never_move_next_row_id_back(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_rows(range(4)), uri)  # v1: ids 0..3
    ds.append(_rows(range(4, 6)))  # v2: ids 4, 5
    ds = ft.write_dataset(_rows(range(3)), uri, mode="overwrite")  # v3: fresh ids 6..8
    assert sorted(_by_rowid(ds)) == [6, 7, 8]
    ds.restore(2)  # the rows of v2 come back with their ids
    assert _by_rowid(ds) == {i: (i, f"a{i}") for i in range(6)}
    assert ds.manifest.next_row_id == 9
    ds.append(_rows([50]))
    assert max(_by_rowid(ds)) == 9


def test_commit_assigns_ids_on_the_version_it_lands_on() -> None:
    """A retried append is applied again on the newer version: it gets the ids after the
    ones the winner took, never the same."""
    schema = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
    create = Overwrite((pb.Fragment(physical_rows=3),), schema)
    m1 = apply_operation(None, create, version=1, transaction_file="a", transaction_uuid="a",
                         timestamp_us=0)  # fmt: skip
    mine = Append((pb.Fragment(physical_rows=2),))
    theirs = Append((pb.Fragment(physical_rows=4),))
    m2 = apply_operation(m1, theirs, version=2, transaction_file="b", transaction_uuid="b",
                         timestamp_us=0)  # fmt: skip
    m3 = apply_operation(m2, mine, version=3, transaction_file="c", transaction_uuid="c",
                         timestamp_us=0)  # fmt: skip
    ids = [decode(f.row_ids).tolist() for f in m3.fragments]
    assert ids == [[0, 1, 2], [3, 4, 5, 6], [7, 8]]
    assert m3.next_row_id == 9


def test_a_rewrite_without_the_moved_ids_is_refused() -> None:
    schema = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
    m1 = apply_operation(
        None, Overwrite((pb.Fragment(physical_rows=3),), schema), version=1,
        transaction_file="a", transaction_uuid="a", timestamp_us=0,
    )  # fmt: skip
    bare = Rewrite((RewriteGroup((0,), (pb.Fragment(physical_rows=3),)),))
    with pytest.raises(DatasetError, match="lacks the row ids"):
        apply_operation(m1, bare, version=2, transaction_file="b", transaction_uuid="b",
                        timestamp_us=0)  # fmt: skip
    short = pb.Fragment(physical_rows=3, row_ids=encode(np.array([0, 1])))
    with pytest.raises(DatasetError, match="2 row ids for 3 rows"):
        apply_operation(m1, Rewrite((RewriteGroup((0,), (short,)),)), version=2,
                        transaction_file="b", transaction_uuid="b", timestamp_us=0)  # fmt: skip


# -- rewrites keep the ids ----------------------------------------------------------------


def test_compaction_and_materialisation_keep_ids(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_rows(range(40)), uri, max_rows_per_file=6)
    ds.append(_rows(range(40, 50)))
    ds.delete(pc.field("id").isin([3, 7, 8, 20, 41]))
    before = _by_rowid(ds)
    taken = ds.take_rowids([49, 0, 21, 49], columns=["_rowid", "id", "v"])
    counts = ds.compact_files(target_rows_per_fragment=1000, materialize_deletions_threshold=0)
    assert counts["fragments_removed"] == 8 and len(ds.fragments) == 1
    assert not ds.manifest.fragments[0].HasField("deletion_file")
    assert _by_rowid(ds) == before
    assert ds.take_rowids([49, 0, 21, 49], columns=["_rowid", "id", "v"]).equals(taken)
    assert ds.manifest.next_row_id == 50
    ds.append(_rows([99]))
    assert max(_by_rowid(ds)) == 50  # ids of deleted rows 3, 7, ... stay retired


def test_batch_mode_compaction_moves_ids_with_their_rows(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    rng = np.random.default_rng(3)
    for append in range(3):  # interleaved batch ids across tasks and appends
        ids = np.arange(300) + append * 100
        data = pa.table({"b": ids, "x": ids * 1000 + append})
        plan = plan_write(uri, data.schema, batch_id_column="b")
        owner = rng.integers(0, 3, size=len(ids))
        parts = [data.filter(pa.array(owner == k)) for k in range(3)]
        commit_write(plan, [execute_write(plan, p, task_id=k) for k, p in enumerate(parts)])
    ds = ft.dataset(uri)
    ds.delete(pc.field("x") < 5_000)
    before = ds.to_table(columns=["_rowid", "b", "x"]).sort_by("_rowid")
    ds.compact_files(target_rows_per_fragment=250)
    after = ds.to_table(columns=["_rowid", "b", "x"]).sort_by("_rowid")
    assert after.equals(before)
    # the merge reordered rows by batch id: the sequences are not plain ranges any more
    kinds = {s.WhichOneof("kind") for f in ds.manifest.fragments for s in f.row_ids.segments}
    assert kinds - {"range"}


def test_a_compaction_split_by_batch_id_range_keeps_ids(tmp_path: Path) -> None:
    """A batch-mode compaction whose tasks each rewrite one id range of the same fragments
    (one commit unit): each task's new fragments carry the ids of the rows of its range."""
    uri = str(tmp_path / "t")
    for append in range(3):
        ids = np.arange(200) + append * 50
        data = pa.table({"b": ids, "x": ids * 10 + append})
        plan = plan_write(uri, data.schema, batch_id_column="b")
        parts = [data.filter(pa.array(ids % 2 == k)) for k in range(2)]
        commit_write(plan, [execute_write(plan, p, task_id=k) for k, p in enumerate(parts)])
    ds = ft.dataset(uri)
    ds.delete(pc.field("x").isin([int(v) for v in range(0, 3000, 7)]))
    before = ds.to_table(columns=["_rowid", "b", "x"]).sort_by("_rowid")
    plan = plan_compaction(uri, target_rows_per_fragment=100, max_tasks=3)
    assert len(plan.tasks) == 3 and len(plan.units()) == 1
    summary = commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    assert summary.committed
    after = ft.dataset(uri).to_table(columns=["_rowid", "b", "x"]).sort_by("_rowid")
    assert after.equals(before)


def test_update_keeps_ids_and_replace_where_gives_new_ones(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_rows(range(10)), uri, max_rows_per_file=4)
    assert ds.update("id >= 6", set={"v": "'u'"}) == 4
    assert _by_rowid(ds) == {i: (i, "u" if i >= 6 else f"a{i}") for i in range(10)}
    # the old rows, deleted, still hold ids 6..9 in their fragments: take finds the live ones
    assert ds.take_rowids([9, 6, 0])["v"].to_pylist() == ["u", "u", "a0"]
    ds.update("id = 1", set={"v": "'w'"})  # id 1 now in a new fragment, [0, 4) still holds it
    assert ds.take_rowids([2, 1, 3])["v"].to_pylist() == ["a2", "w", "a3"]
    ds = ft.write_dataset(_rows([2], "r"), uri, mode="overwrite", replace_where="id = 2")
    rows = _by_rowid(ds)
    assert 2 not in rows and rows[10] == (2, "r2")  # replaced rows are new rows


def test_merge_insert_keeps_updated_ids_and_gives_inserted_rows_new_ones(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_rows(range(8)), uri, max_rows_per_file=3)
    source = _rows([6, 1, 20, 4, 21], "m")
    result = (
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        .execute(source)
    )  # fmt: skip
    assert (result.num_updated_rows, result.num_inserted_rows) == (3, 2)
    rows = _by_rowid(ds)
    for i in range(8):
        assert rows[i] == (i, f"m{i}" if i in (1, 4, 6) else f"a{i}")
    assert {rows[8][0], rows[9][0]} == {20, 21}
    assert ds.manifest.next_row_id == 10


def test_add_columns_keeps_ids(tmp_path: Path) -> None:
    ds = ft.write_dataset(_rows(range(6)), str(tmp_path / "t"), max_rows_per_file=4)
    ds.delete("id = 1")
    ds.add_columns({"w": "id * 2"})
    table = ds.to_table(columns=["_rowid", "id", "w"])
    assert table["_rowid"].to_pylist() == table["id"].to_pylist() == [0, 2, 3, 4, 5]


# -- reading ------------------------------------------------------------------------------


def test_rowid_column_in_scans_with_filters_and_offsets(tmp_path: Path) -> None:
    ds = ft.write_dataset(_rows(range(20)), str(tmp_path / "t"), max_rows_per_file=8)
    ds.delete("id = 12")
    scanner = ds.scanner(["_rowid", "v"], "id >= 10", with_row_offsets=True)
    table = scanner.to_table()
    assert table.column_names == ["_rowid", "v", "_rowoffset"]
    assert table["_rowid"].to_pylist() == [10, 11, 13, 14, 15, 16, 17, 18, 19]
    assert table["_rowoffset"].to_pylist() == [2, 3, 5, 6, 7, 0, 1, 2, 3]
    batches = list(ds.scanner(["_rowid"], "id < 3").to_batches())
    assert pa.Table.from_batches(batches)["_rowid"].to_pylist() == [0, 1, 2]


def test_take_rowids_order_repeats_missing_and_skip(tmp_path: Path) -> None:
    ds = ft.write_dataset(_rows(range(12)), str(tmp_path / "t"), max_rows_per_file=5)
    ds.delete("id = 6")
    assert ds.take_rowids([11, 0, 11]).to_pydict() == {"id": [11, 0, 11], "v": ["a11", "a0", "a11"]}
    assert ds.take_rowids([], columns=["id"]).num_rows == 0
    assert ds.take_rowids(np.array([3], dtype=np.uint32), columns=["id"])["id"].to_pylist() == [3]
    assert ds.take_rowids(pa.array([4, 5]), columns=["_rowid"]).to_pydict() == {"_rowid": [4, 5]}
    with pytest.raises(InvalidArgumentError, match="row ids 6, 12"):
        ds.take_rowids([6, 1, 12])  # deleted, live, never given
    skipped = ds.take_rowids([6, 1, 12, 2], columns=["_rowid", "id"], missing="skip")
    assert skipped.to_pydict() == {"_rowid": [1, 2], "id": [1, 2]}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([-1], "non-negative"),
        ([1.0], "integers"),
        (["1"], "integers"),
        ([True], "integers"),
        ([[1, 2]], "one-dimensional"),
        (pa.array([1, None]), "null"),
        (np.array([2**63], dtype=np.uint64), "out of range"),
    ],
)
def test_take_rowids_refuses_bad_ids(tmp_path: Path, bad: Any, message: str) -> None:
    ds = ft.write_dataset(_rows(range(3)), str(tmp_path / "t"))
    with pytest.raises(InvalidArgumentError, match=message):
        ds.take_rowids(bad)


def test_take_rowids_refuses_a_bad_missing_mode(tmp_path: Path) -> None:
    ds = ft.write_dataset(_rows(range(3)), str(tmp_path / "t"))
    with pytest.raises(InvalidArgumentError, match="missing"):
        ds.take_rowids([0], missing="ignore")  # type: ignore[arg-type]


# -- compatibility ------------------------------------------------------------------------


def test_an_older_reader_refuses_a_table_with_row_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = ft.write_dataset(_rows(range(3)), str(tmp_path / "t"))
    data = (Path(ds.uri) / "_versions" / "1.manifest").read_bytes()
    before_row_ids = codec.FLAG_DELETION_FILES | codec.FLAG_INDICES
    monkeypatch.setattr(framing, "KNOWN_READER_FLAGS", before_row_ids)
    monkeypatch.setattr(framing, "KNOWN_WRITER_FLAGS", before_row_ids)
    with pytest.raises(UnsupportedVersionError, match="reader feature flags 0x4"):
        decode_manifest(data, "1.manifest")
    manifest = pb.Manifest()
    manifest.ParseFromString(data[16:-8])
    with pytest.raises(UnsupportedVersionError, match="writer feature flags 0x4"):
        codec.check_writer_flags(manifest)


def test_a_table_from_before_row_ids_still_reads_and_writes(tmp_path: Path) -> None:
    uri = golden_copy(tmp_path / "old")
    ds = ft.dataset(uri)
    assert not ds.manifest.reader_feature_flags & FLAG_ROW_IDS
    assert ds.to_table()["id"].to_pylist() == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12]
    assert ds.take([4]).to_pydict() == {"id": [5], "name": ["n5"]}
    with pytest.raises(ColumnNotFoundError, match="no row ids"):
        ds.to_table(columns=["id", "_rowid"])
    with pytest.raises(DatasetError, match="no row ids"):
        ds.take_rowids([0])
    # writing keeps the table's format: an older reader can still read it
    ds.append(pa.table({"id": [13], "name": ["n13"]}))
    ds.update("id = 13", set={"name": "'x'"})
    ds.compact_files(target_rows_per_fragment=100)
    ds.delete("id = 0")
    latest = ft.dataset(uri)
    assert not latest.manifest.reader_feature_flags & FLAG_ROW_IDS
    assert latest.manifest.next_row_id == 0
    assert all(not f.HasField("row_ids") for f in latest.manifest.fragments)
    assert latest.to_table()["name"].to_pylist()[-1] == "x"
    assert latest.count_rows() == 12


def test_stripped_helper_makes_the_old_format(tmp_path: Path) -> None:
    uri = write_table_without_row_ids(tmp_path / "t", _rows(range(3)))
    ds = ft.dataset(uri)
    assert ds.manifest.reader_feature_flags == 0 and ds.to_table().num_rows == 3
    ds.append(_rows([3]))
    assert not ft.dataset(uri).manifest.reader_feature_flags & FLAG_ROW_IDS


def test_rowid_through_a_scalar_index_lookup(tmp_path: Path) -> None:
    ds = ft.write_dataset(_rows(range(90)), str(tmp_path / "t"), max_rows_per_file=30)
    ds.delete("id = 50")
    ds.create_index("id", "BTREE")
    scanner = ds.scanner(["_rowid", "v"], "id IN (5, 50, 51, 89)")
    assert scanner.to_table().to_pydict() == {"_rowid": [5, 51, 89], "v": ["a5", "a51", "a89"]}
    assert scanner.stats.fragments_indexed == 3


def test_appended_fragments_never_bring_their_own_ids(tmp_path: Path) -> None:
    """Rows read with their ``_rowid`` and written to a table again are new rows there."""
    ds = ft.write_dataset(_rows(range(3)), str(tmp_path / "t"))
    claimed = ft.write_fragments(_rows([7]), ds.uri)
    claimed[0].row_ids.CopyFrom(encode(np.array([0])))  # the id of a live row
    ds = ft.Dataset.commit(ds.uri, Append(tuple(claimed)), read_version=ds.version)
    assert sorted(_by_rowid(ds)) == [0, 1, 2, 3]
    again = ft.write_fragments(_rows([8]), ds.uri)
    again[0].row_ids.CopyFrom(encode(np.array([1])))
    ds = ft.Dataset.commit(ds.uri, Overwrite(tuple(again), None), read_version=ds.version)
    assert list(_by_rowid(ds)) == [4]


@pytest.mark.parametrize(
    ("segment", "rows", "message"),
    [
        (pb.RowIdSegment(), 0, "unknown kind"),
        (pb.RowIdSegment(range=pb.RowIdSegment.Range(start=5, end=3)), 0, "ends before"),
        (pb.RowIdSegment(sorted=pb.RowIdSegment.Sorted(bitmap=b"junk", count=2)), 2, "bitmap"),
        (pb.RowIdSegment(array=pb.RowIdSegment.Array(deltas=b"junk", count=1)), 1, "array"),
        (pb.RowIdSegment(range=pb.RowIdSegment.Range(start=0, end=4)), 3, "4 row ids for 3"),
        (pb.RowIdSegment(unassigned=2), 2, "unassigned"),
    ],
)
def test_damaged_sequences_are_typed_errors(
    segment: pb.RowIdSegment, rows: int, message: str
) -> None:
    fragment = pb.Fragment(id=1, physical_rows=rows)
    fragment.row_ids.segments.append(segment)
    with pytest.raises(InvalidFileError, match=message):
        fragment_row_ids(fragment)


def test_a_sorted_segment_must_hold_its_count() -> None:
    good = encode(np.array([10, 12, 13, 20] * 1 + list(range(30, 90, 2))))
    assert good.segments[0].WhichOneof("kind") == "sorted"
    good.segments[0].sorted.count += 1
    with pytest.raises(InvalidFileError, match="header says"):
        decode(good)


def test_compacting_untouched_fragments_keeps_one_range(tmp_path: Path) -> None:
    ds = ft.write_dataset(_rows(range(30)), str(tmp_path / "t"), max_rows_per_file=7)
    ds.compact_files(target_rows_per_fragment=100)
    (fragment,) = ds.manifest.fragments
    assert [s.WhichOneof("kind") for s in fragment.row_ids.segments] == ["range"]
    assert fragment.row_ids.ByteSize() < 16
