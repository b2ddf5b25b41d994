"""The table API: time travel, tags, restore, schema evolution, pruning, deletions, backends."""

from __future__ import annotations

import importlib.metadata
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
import fermion.table as ft
from fermion.cli import main as cli_main
from fermion.errors import DatasetError, InvalidArgumentError
from fermion.table.deletions import ARROW_MAX_ROWS
from fermion.table.manifest_store import SQLiteManifestStore
from fermion.table.proto import manifest_pb2 as pb


def _ids(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "f": pa.array(ids.astype(np.float32)), "s": [f"s{i}" for i in ids]})


def test_time_travel_tags_checkout_and_restore(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_ids(10), uri)
    ds.create_tag("first")
    ft.write_dataset(_ids(5, 10), uri, mode="append")
    ds = ft.write_dataset(_ids(3, 100), uri, mode="overwrite")
    assert ds.version == 3 and ds.count_rows() == 3
    assert ft.dataset(uri, version=2).count_rows() == 15
    assert ft.dataset(uri, tag="first").version == 1
    assert ds.tags() == {"first": 1}
    with pytest.raises(DatasetError, match="already exists"):
        ds.create_tag("first")
    with pytest.raises(InvalidArgumentError):
        ds.create_tag("../escape")
    old = ds.checkout(2)
    old.restore()
    assert old.version == 4 and old.count_rows() == 15
    assert [v.operation for v in old.versions()] == ["create", "append", "overwrite", "restore"]
    assert old.versions()[0].tags == ("first",)
    ds.delete_tag("first")
    assert ds.tags() == {}


def test_manifests_record_the_library_version(tmp_path: Path) -> None:
    ds = ft.write_dataset(_ids(3), str(tmp_path / "t"))
    ft.write_dataset(_ids(2, 3), ds.uri, mode="append")
    for version in (1, 2):
        manifest = ft.dataset(ds.uri, version=version).manifest
        assert (manifest.writer_library, manifest.writer_version) == (
            "fermion",
            fermion.__version__,
        )
    assert fermion.__version__ == importlib.metadata.version("fermion")


def test_schema_evolution_by_field_id_reads_old_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    data = pa.table({"a": pa.array([1, 2], pa.int32()), "b": pa.array([0.5, 1.5], pa.float32())})
    ds = ft.write_dataset(data, uri)
    ds.rename_columns({"a": "alpha"})
    ds.alter_columns({"alpha": pa.int64(), "b": pa.float64()})
    ds.add_columns([pa.field("c", pa.string())])
    ds.drop_columns(["b"])
    assert ds.schema.names == ["alpha", "c"]
    assert ds.table_schema.field_ids == (0, 2)
    assert ds.to_table().to_pydict() == {"alpha": [1, 2], "c": [None, None]}
    assert ds.to_table(filter=pc.field("alpha") > 1).to_pydict() == {"alpha": [2], "c": [None]}
    ft.write_dataset(pa.table({"alpha": pa.array([3], pa.int64()), "c": ["x"]}), uri, mode="append")
    ds = ft.dataset(uri)
    assert ds.to_table().to_pydict() == {"alpha": [1, 2, 3], "c": [None, None, "x"]}
    ds.add_columns([pa.field("b", pa.float32())])  # a new "b" gets a new id: old data not revived
    assert ds.table_schema.id_of("b") == 3
    assert ds.to_table(["b"]).column("b").null_count == 3
    with pytest.raises(InvalidArgumentError, match="cannot widen"):
        ds.alter_columns({"alpha": pa.int32()})
    with pytest.raises(InvalidArgumentError, match="must be nullable"):
        ds.add_columns([pa.field("d", pa.int8(), nullable=False)])
    assert ft.dataset(uri, version=1).schema.names == ["a", "b"]  # history intact


def test_fragment_pruning_opens_only_matching_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_ids(1000), uri, max_rows_per_file=100)
    scanner = ds.scanner(filter=(pc.field("id") >= 250) & (pc.field("id") < 260))
    assert scanner.to_table().column("id").to_pylist() == list(range(250, 260))
    assert (scanner.stats.fragments_total, scanner.stats.files_opened) == (10, 1)
    scanner = ds.scanner(filter=pc.field("s") == "s999")
    assert scanner.to_table().num_rows == 1 and scanner.stats.files_opened == 1
    scanner = ds.scanner(filter=pc.field("id") > 5000)
    assert scanner.to_table().num_rows == 0 and scanner.stats.files_opened == 0
    unprunable = pc.field("id") == pc.field("f").cast(pa.int64())
    assert ds.count_rows(unprunable) == 1000


def test_pruning_is_correct_with_nulls_and_nans(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    data = pa.table(
        {"x": pa.array([1.0, None, float("nan"), 5.0]), "k": pa.array([1, 1, 2, 2], pa.int64())}
    )
    ds = ft.write_dataset(data, uri, max_rows_per_file=2)
    assert ds.count_rows(pc.field("x").is_null()) == 1
    assert ds.count_rows(pc.field("x").is_nan()) == 1
    assert ds.count_rows(pc.field("x") != 5.0) == 2  # 1.0 and NaN
    assert ds.count_rows(pc.field("k") == 2) == 2


def test_decimal_bounds_prune_fragments_exactly(tmp_path: Path) -> None:
    # decimal bounds are kept as exact text; every filter's answer equals Arrow's filter
    values = [None if i % 9 == 0 else Decimal(i - 50) / 4 for i in range(100)]
    data = pa.table({"d": pa.array(values, pa.decimal128(12, 2)), "i": range(100)})
    ds = ft.write_dataset(data, str(tmp_path / "t"), max_rows_per_file=25)
    first = ds.manifest.fragments[0].stats[0]
    assert (first.min.string_value, first.max.string_value) == ("-12.25", "-6.50")
    d = pc.field("d")
    cases = [
        (d > pa.scalar(Decimal("6.00"), pa.decimal128(12, 2)), 1),
        (d == pa.scalar(Decimal("-10.5"), pa.decimal128(5, 1)), 1),  # another precision
        (d < pa.scalar(Decimal("-12.25"), pa.decimal128(12, 2)), 0),
        (d.is_null(), 4),
        ((d >= pa.scalar(Decimal("0"), pa.decimal128(12, 2))) & (pc.field("i") < 75), 1),
    ]
    for expr, opened in cases:
        scanner = ds.scanner(filter=expr)
        assert scanner.to_table().equals(data.filter(expr)), expr
        assert scanner.stats.files_opened == opened, expr


def test_decimal_bounds_a_reader_cannot_parse_keep_the_fragment(tmp_path: Path) -> None:
    from fermion.table.stats import fragment_guarantee

    data = pa.table({"d": pa.array([Decimal("1.50"), Decimal("2.25")], pa.decimal128(6, 2))})
    ds = ft.write_dataset(data, str(tmp_path / "t"))
    schema = ds.table_schema
    for low, high in ((pb.Value(string_value="x"), pb.Value(string_value="2.25")),
                      (pb.Value(int_value=150), pb.Value(int_value=225)),
                      (pb.Value(string_value="1e9"), pb.Value(string_value="2e9"))):  # fmt: skip
        stats = [pb.FieldStats(field_id=schema.top_level_ids()[0], null_count=0, min=low, max=high)]
        guarantee = fragment_guarantee(stats, schema, 2)
        # no bound (only "d is valid", from the null count): the fragment is kept
        assert "<" not in str(guarantee) and ">" not in str(guarantee), (low, high)


def test_uint64_above_the_int64_range_is_written_and_pruned_safely(tmp_path: Path) -> None:
    # Manifest bounds are sint64: a fragment whose uint64 range does not fit keeps no
    # range (it is never pruned), one that fits keeps its range.
    big = 2**64 - 1
    data = pa.table({"u": pa.array([1, 2, 3, big], pa.uint64())})
    ds = ft.write_dataset(data, str(tmp_path / "t"), max_rows_per_file=2)
    bounds = [
        (s.HasField("min"), s.HasField("max"))
        for fragment in ds.manifest.fragments
        for s in fragment.stats
    ]
    assert bounds == [(True, True), (False, False)]
    above = pc.field("u") > pa.scalar(2, pa.uint64())
    scanner = ds.scanner(filter=above)
    assert scanner.to_table().column("u").to_pylist() == [3, big]
    assert scanner.stats.files_opened == 1
    assert ds.count_rows(pc.field("u") == pa.scalar(big, pa.uint64())) == 1


@pytest.mark.parametrize("count", [3, ARROW_MAX_ROWS + 500])
def test_deletions_use_arrow_for_few_rows_and_roaring_for_many(tmp_path: Path, count: int) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_ids(5000), uri)
    ds.delete(pc.field("id") < count)
    (fragment,) = ds.manifest.fragments
    kind = fragment.deletion_file.file_type
    assert kind == (
        pb.DeletionFile.ARROW_ARRAY if count <= ARROW_MAX_ROWS else pb.DeletionFile.BITMAP
    )
    assert ds.count_rows() == 5000 - count
    assert ds.to_table(["id"]).column("id")[0].as_py() == count
    assert ds.take([0, 1]).column("id").to_pylist() == [count, count + 1]
    ds.delete(pc.field("id") >= 0)  # everything: the fragment disappears
    assert ds.fragments == [] and ds.count_rows() == 0 and ds.to_table().num_rows == 0


def test_compaction_materialises_deletions_and_merges_small_fragments(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_ids(400), uri, max_rows_per_file=50)
    ds.delete(pc.equal(pc.bit_wise_and(pc.field("id"), 3), 0))  # every 4th row
    before = ds.to_table().sort_by("id")
    stats = ds.compact_files(target_rows_per_fragment=200, materialize_deletions_threshold=0.2)
    assert stats["fragments_removed"] == 8
    assert [f.physical_rows for f in ds.fragments] == [187, 113]  # groups of <= 200 live rows
    assert not any(f.HasField("deletion_file") for f in ds.manifest.fragments)
    assert ds.to_table().sort_by("id").equals(before)
    again = ds.compact_files(target_rows_per_fragment=200)
    assert again["fragments_removed"] == 0


def test_cleanup_keeps_tags_latest_and_recent_versions(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_ids(10), uri, max_rows_per_file=5)
    ds.create_tag("v1")
    ft.write_dataset(_ids(10, 10), uri, mode="append")
    ft.dataset(uri).compact_files(target_rows_per_fragment=100)
    ds = ft.dataset(uri)
    stats = ds.cleanup_old_versions(timedelta(0))
    assert stats["versions_removed"] == 1  # version 2; 1 is tagged, 3 is latest
    assert ds.storage.versions() == [1, 3]
    assert ft.dataset(uri, tag="v1").to_table().num_rows == 10  # files of v1 kept
    assert ds.to_table().num_rows == 20
    ds.delete_tag("v1")
    ds.cleanup_old_versions(timedelta(0))
    assert ds.storage.versions() == [3]
    referenced = {f.files[0].path for f in ds.fragments}
    root = Path(uri)
    assert {p.relative_to(root).as_posix() for p in root.glob("data/**/*.fermion")} == referenced
    # the directories of the writes and the compaction whose files went are gone too
    assert {p.name for p in (root / "data").iterdir()} == {p.split("/")[1] for p in referenced}


def _cleanup_race_worker(uri: str, role: str, cutoff: str, rounds: int) -> int:
    if role == "writer":
        for i in range(rounds):
            ft.write_dataset(_ids(2, 10_000 + i * 2), uri, mode="append")
        return rounds
    if role == "reader":
        for _ in range(rounds):
            pinned = ft.dataset(uri, tag="pinned").to_table()
            assert pinned.num_rows == 50
            latest = ft.dataset(uri)
            assert latest.to_table().num_rows == latest.count_rows()
        return rounds
    for _ in range(rounds):
        ft.dataset(uri).cleanup_old_versions(datetime.fromisoformat(cutoff))
    return rounds


def test_cleanup_racing_writers_and_readers(tmp_path: Path, processes: Any) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_ids(10), uri, max_rows_per_file=5)
    for i in range(4):
        ft.write_dataset(_ids(10, 10 + 10 * i), uri, mode="append")
    ds = ft.dataset(uri)
    ds.create_tag("pinned")
    for _ in range(3):
        ft.dataset(uri).compact_files(target_rows_per_fragment=7)
    cutoff = datetime.now(UTC).isoformat()
    jobs = [("writer", 15), ("writer", 15), ("reader", 15), ("reader", 15), ("cleaner", 15)]
    results = processes(_cleanup_race_worker, [(uri, r, cutoff, n) for r, n in jobs])
    assert all(s == "ok" for s, _ in results), results
    ds = ft.dataset(uri)
    assert ds.count_rows() == 50 + 60
    assert ft.dataset(uri, tag="pinned").to_table().num_rows == 50


def test_memory_filesystem_table() -> None:
    mem = fsspec.filesystem("memory")
    uri = "memory://fermion-table-test"
    ds = ft.write_dataset(_ids(20), uri, max_rows_per_file=10)
    ft.write_dataset(_ids(5, 20), uri, mode="append")
    ds = ft.dataset(uri)
    ds.delete(pc.field("id") < 3)
    assert ds.version == 3 and ds.count_rows() == 22
    assert ds.to_table(filter=pc.field("id") >= 20).num_rows == 5
    mem.rm("/fermion-table-test", recursive=True)


def _store_appender(uri: str, db: str, worker: int) -> int:
    store = SQLiteManifestStore(db)
    for i in range(8):
        ft.write_dataset(_ids(1, 1000 * worker + i), uri, mode="append", manifest_store=store)
    return 8


def test_external_sqlite_store_serialises_concurrent_writers(
    tmp_path: Path, processes: Any
) -> None:
    uri, db = str(tmp_path / "t"), str(tmp_path / "store.db")
    store = SQLiteManifestStore(db)
    ft.write_dataset(_ids(1), uri, manifest_store=store)
    results = processes(_store_appender, [(uri, db, w) for w in range(1, 5)])
    assert all(s == "ok" for s, _ in results), results
    ds = ft.dataset(uri, manifest_store=store)
    assert ds.version == 33 and ds.count_rows() == 33
    assert ds.storage.versions() == list(range(1, 34))  # plain readers see every version
    assert ft.dataset(uri).count_rows() == 33


def test_external_store_reader_repairs_an_unfinished_commit(tmp_path: Path) -> None:
    uri, db = str(tmp_path / "t"), str(tmp_path / "store.db")
    store = SQLiteManifestStore(db)
    ft.write_dataset(_ids(1), uri, manifest_store=store)
    # a writer that died right after its commit point: staged manifest + store entry only
    final = Path(uri) / "_versions" / "1.manifest"
    staged = final.with_name("2.manifest-" + "d" * 32)
    manifest = ft.dataset(uri).manifest
    manifest.version, manifest.parent_version = 2, 1
    from fermion.table.codec import encode_manifest

    staged.write_bytes(encode_manifest(manifest))
    store.put_if_absent(str(Path(uri).resolve()), 2, str(staged))
    assert ft.dataset(uri).version == 1  # a reader without the store lags one version
    assert ft.dataset(uri, manifest_store=store).version == 2  # the store-aware reader repairs
    assert (final.with_name("2.manifest")).exists()


def test_cli_log_and_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_ids(10), uri, max_rows_per_file=5)
    ds.delete(pc.field("id") == 3)
    ds.create_tag("release")
    assert cli_main(["log", uri]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("version 2 [release]") and "delete" in out[0]
    assert "deleted_rows=1" in out[0] and out[1].startswith("version 1")
    assert cli_main(["log", uri, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["version"] for r in rows] == [2, 1] and rows[0]["rows"] == 9
    assert cli_main(["show", uri, "--version", "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["version"] == 1 and len(shown["fragments"]) == 2 and shown["rows"] == 10
    assert [c["name"] for c in shown["schema"]] == ["id", "f", "s"]
    assert cli_main(["show", uri]) == 0
    text = capsys.readouterr().out
    assert "deleted=1" in text and "_deletions/" in text
    assert cli_main(["show", uri, "--version", "9"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert cli_main(["log", str(tmp_path / "missing")]) == 1


def test_manifest_is_copied_once_and_changing_it_leaves_the_table_alone(tmp_path: Path) -> None:
    ds = ft.write_dataset(pa.table({"x": pa.array([1, 2], pa.int64())}), str(tmp_path / "t"))
    first = ds.manifest
    assert ds.manifest is first  # no copy per access
    first.fragments.pop()
    first.version = 99
    first.writer_feature_flags |= 1 << 33
    assert ds.version == 1 and ds.count_rows() == 2 and len(ds.fragments) == 1
    ds.append(pa.table({"x": pa.array([3], pa.int64())}))  # the flag was on the copy only
    assert ds.manifest is not first
    assert ds.manifest.version == 2 and len(ds.manifest.fragments) == 2
    assert ft.dataset(ds.uri).manifest.version == 2
    assert ds.checkout(1).manifest.version == 1
