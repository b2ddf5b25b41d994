"""Table write properties (``fermion.write.*``) reach the files of every writer.

Each writer test opens the data files the writer made with ``FileReader`` and checks the
layout the table's properties ask for: no zstd page (``compression: none``), a bloom
filter stream on ``id``, small pages (``page_size``) and short stripes
(``max_stripe_rows``); a table without properties written the same way has none of these
(``test_without_properties_files_have_the_format_defaults``), so each check can fail.

Bad inputs tried: unknown properties and keys outside ``fermion.write.``, bad values of
every kind, bloom columns missing from the table or of a type without bloom filters, and
other values given to an append of an existing table.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
import fermion.table as ft
from fermion.errors import InvalidArgumentError, UnsupportedTypeError, UnsupportedVersionError
from fermion.table import codec, framing
from fermion.table.operations import UpdateConfig
from fermion.table.tasks import (
    WritePlan,
    commit_rewrite,
    commit_write,
    execute_rewrite,
    execute_write,
    plan_compaction,
    plan_materialization,
    plan_write,
)
from fermion.table.write_properties import WriteProperties

ROWS = 12_000
STRIPE_ROWS = 3_000
PROPS = {
    "bloom_filter_columns": ["id"],
    "compression": "none",
    "page_size": 4096,
    "max_stripe_rows": STRIPE_ROWS,
}


def _data(first: int = 0, rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(first)
    return pa.table(
        {
            "id": pa.array(rng.permutation(rows).astype(np.int64) + first),
            "v": pa.array(rng.random(rows)),
            # text zstd shrinks: random keys and floats are stored uncompressed where zstd
            # saves too little (docs/FORMAT.md, 5.2), so this column shows the codec
            "email": pa.array([f"user-{i:08d}@example.com" for i in rng.permutation(rows)]),
        }
    )


def _layout(path: str) -> dict[str, Any]:
    """What a data file's metadata says about how it was written."""
    with fermion.FileReader(path) as reader:
        d = reader.describe()
    compressions: set[str] = set()
    blooms: set[str] = set()
    pages: dict[str, int] = {}
    for column in d["columns"]:
        for stream in column["streams"]:
            if stream["stream_type"] == "BLOOM" and stream["chunks"]:
                blooms.add(column["name"])
            if stream["stream_type"] == "DATA":
                pages[column["name"]] = sum(c["num_pages"] for c in stream["chunks"])
                for chunk in stream["chunks"]:
                    compressions.update(chunk["compressions"])
    rows = d["num_rows"]
    return {
        "zstd": any(c.startswith("ZSTD") for c in compressions),
        "blooms": blooms,
        "pages": pages,
        "stripes": d["num_stripes"],
        "rows": rows,
    }


def _new_files(ds: ft.Dataset, before: set[str]) -> list[str]:
    paths = {f.path for fragment in ds.fragments for f in fragment.files} - before
    assert paths, "the writer wrote no file"
    return [str(Path(ds.uri) / p) for p in sorted(paths)]


def _files(ds: ft.Dataset) -> set[str]:
    return {f.path for fragment in ds.fragments for f in fragment.files}


def _assert_props(paths: list[str], bloom: str | None = "id") -> None:
    for path in paths:
        layout = _layout(path)
        assert not layout["zstd"], path
        if bloom is not None:
            assert bloom in layout["blooms"], path
        assert layout["stripes"] == -(-layout["rows"] // STRIPE_ROWS), path
        # 4 KiB pages: a stripe of 3,000 random doubles (24 KB) takes several pages
        for column, pages in layout["pages"].items():
            if column == "v":
                assert pages >= 3 * layout["stripes"], (path, layout)


def _table(tmp_path: Path, **kwargs: Any) -> ft.Dataset:
    return ft.write_dataset(
        _data(), str(tmp_path / "t"), write_properties=PROPS, max_rows_per_file=4_000, **kwargs
    )


def test_without_properties_files_have_the_format_defaults(tmp_path: Path) -> None:
    ds = ft.write_dataset(_data(), str(tmp_path / "t"), max_rows_per_file=4_000)
    assert ds.write_properties == WriteProperties()
    for path in _new_files(ds, set()):
        layout = _layout(path)
        assert layout["zstd"] and not layout["blooms"] and layout["stripes"] == 1
        assert layout["pages"]["v"] == 1


def test_create_records_the_properties_and_writes_with_them(tmp_path: Path) -> None:
    ds = _table(tmp_path)
    assert ds.manifest.config["fermion.write.compression"] == "none"
    assert ds.manifest.config["fermion.write.bloom_filter_columns"] == '["id"]'
    assert ds.write_properties == WriteProperties.parse(PROPS)
    _assert_props(_new_files(ds, set()))
    assert ft.dataset(ds.uri).to_table().sort_by("id")["id"].to_pylist() == list(range(ROWS))


def test_append_and_overwrite_use_the_tables_properties(tmp_path: Path) -> None:
    ds = _table(tmp_path)
    before = _files(ds)
    ds.append(_data(ROWS))
    _assert_props(_new_files(ds, before))
    again = ft.write_dataset(_data(5), ds.uri, mode="overwrite")
    assert again.write_properties == ds.write_properties
    _assert_props(_new_files(again, set()))


def test_properties_set_later_by_a_config_commit(tmp_path: Path) -> None:
    ds = ft.write_dataset(_data(), str(tmp_path / "t"))
    old = _files(ds)
    ds.update_write_properties(PROPS)
    assert ds.version == 2 and ds.versions()[-1].operation == "update_config"
    assert ds.count_rows() == ROWS  # no data changed
    ds.append(_data(ROWS))
    _assert_props(_new_files(ds, old))
    assert _layout(str(Path(ds.uri) / sorted(old)[0]))["zstd"]  # old files keep theirs
    ds.update_write_properties(unset=["compression", "bloom_filter_columns"])
    assert ds.write_properties == WriteProperties(page_size=4096, max_stripe_rows=STRIPE_ROWS)
    before = _files(ds)
    ds.append(_data(2 * ROWS))
    (path,) = _new_files(ds, before)
    assert _layout(path)["zstd"] and not _layout(path)["blooms"]


def test_distributed_write_tasks_get_the_properties_through_the_plan(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    data = _data()
    plan = plan_write(uri, data.schema, write_properties=PROPS)
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert WritePlan.from_json(plan.to_json()) == plan  # what an executor receives
    shipped = WritePlan.from_json(plan.to_json())
    results = [execute_write(shipped, data.slice(i, 6_000), task_id=i) for i in (0, 6_000)]
    summary = commit_write(plan, results)
    ds = ft.dataset(uri)
    assert summary.version == 1 and ds.write_properties == WriteProperties.parse(PROPS)
    _assert_props(_new_files(ds, set()))
    again = plan_write(uri, data.schema)  # an append: the table's properties
    assert again.properties == plan.properties
    before = _files(ds)
    commit_write(again, [execute_write(again, _data(ROWS))])
    _assert_props(_new_files(ft.dataset(uri), before))


def test_compaction_and_materialisation_rewrite_with_the_properties(tmp_path: Path) -> None:
    ds = ft.write_dataset(_data(), str(tmp_path / "t"), max_rows_per_file=2_000)
    ds.update_write_properties(PROPS)  # the small files were written before: zstd
    plan = plan_compaction(ds.uri, target_rows_per_fragment=ROWS)
    assert plan.tasks and all(t.properties == ds.write_properties for t in plan.tasks)
    before = _files(ds)
    commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    ds = ft.dataset(ds.uri)
    _assert_props(_new_files(ds, before))

    ds.delete(pc.field("id") < ROWS // 2)
    ds.update_write_properties({"page_size": 8192})
    plan = plan_materialization(ds.uri, threshold=0.1)
    assert plan.tasks and plan.tasks[0].properties.page_size == 8192
    before = _files(ds)
    commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    ds = ft.dataset(ds.uri)
    (path,) = _new_files(ds, before)
    assert not _layout(path)["zstd"] and "id" in _layout(path)["blooms"]
    assert ds.count_rows() == ROWS // 2


def test_compact_files_uses_the_properties(tmp_path: Path) -> None:
    ds = _table(tmp_path)
    ds.append(_data(ROWS, 500))
    before = _files(ds)
    assert ds.compact_files(target_rows_per_fragment=2 * ROWS)["fragments_removed"] >= 2
    _assert_props(_new_files(ds, before))


def test_merge_insert_update_and_replace_where_use_the_properties(tmp_path: Path) -> None:
    ds = _table(tmp_path)
    before = _files(ds)
    source = _data(ROWS - 100, 4_100)  # ids ROWS-100 .. ROWS+3999: 100 matched
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(source)
    _assert_props(_new_files(ds, before))

    before = _files(ds)
    assert ds.update("id < 5000", set={"v": "v * 2"}) == 5_000
    _assert_props(_new_files(ds, before))

    before = _files(ds)
    replaced = ft.write_dataset(
        _data(0, 5_000), ds.uri, mode="overwrite", replace_where="id < 5000"
    )
    _assert_props(_new_files(replaced, before))
    assert replaced.count_rows() == ROWS + 4_000


def test_add_columns_writes_the_new_column_files_with_the_properties(tmp_path: Path) -> None:
    ds = _table(tmp_path)
    before = _files(ds)
    ds.add_columns({"w": "v * 3"})
    paths = _new_files(ds, before)
    assert len(paths) == len(ds.fragments)
    for path in paths:
        layout = _layout(path)
        assert not layout["zstd"] and layout["stripes"] == -(-layout["rows"] // STRIPE_ROWS)
        assert layout["pages"]["w"] >= 3 * layout["stripes"]


def test_batch_mode_property_makes_appends_batch_mode(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    data = pa.table({"b": pa.array(np.repeat(np.arange(100), 10)), "x": pa.array(range(1000))})
    plan = plan_write(uri, data.schema, batch_id_column="b", write_properties={"batch_mode": True})
    commit_write(plan, [execute_write(plan, data)])
    ds = ft.dataset(uri)
    assert ds.manifest.config["fermion.write.batch_mode"] == "true"
    later = plan_write(uri, data.schema)  # names no batch-id column
    assert later.batch_id_column == "b"
    more = pa.table({"b": pa.array(np.repeat(np.arange(100, 150), 10)), "x": range(500)})
    commit_write(later, [execute_write(later, more)])
    ds = ft.dataset(uri)
    before = _files(ds)
    ds.append(pa.table({"b": pa.array(np.repeat(np.arange(150, 160), 10)), "x": range(100)}))
    for path in [*_new_files(ds, before), *(str(Path(uri) / p) for p in before)]:
        with fermion.FileReader(path) as reader:
            assert reader.describe()["batch_mode"] is not None, path  # append_batch files
    assert ds.read_batches([155, 3]).num_rows == 20
    ds.update_write_properties({"batch_mode": False})
    assert plan_write(uri, data.schema).batch_id_column is None


def test_update_config_commits_over_a_concurrent_append(tmp_path: Path) -> None:
    ds = ft.write_dataset(_data(), str(tmp_path / "t"))
    other = ft.dataset(ds.uri)
    plan = plan_write(ds.uri, ds.schema)  # planned before the config commit: old properties
    ds.update_write_properties({"compression": "none"})
    commit_write(plan, [execute_write(plan, _data(ROWS))])
    other.update_write_properties({"page_size": 4096})  # read version 1: rebased, not lost
    final = ft.dataset(ds.uri)
    assert final.write_properties == WriteProperties(compression="none", page_size=4096)
    assert final.count_rows() == 2 * ROWS


@pytest.mark.parametrize(
    ("props", "error"),
    [
        ({"colour": "red"}, InvalidArgumentError),
        ({"fermion.input.x": "1"}, InvalidArgumentError),
        ({"compression": "lz4"}, InvalidArgumentError),
        ({"compression_level": 99}, InvalidArgumentError),
        ({"compression_level": "high"}, InvalidArgumentError),
        ({"page_size": 10}, InvalidArgumentError),
        ({"page_size": True}, InvalidArgumentError),
        ({"max_stripe_rows": 0}, InvalidArgumentError),
        ({"batch_mode": "maybe"}, InvalidArgumentError),
        ({"bloom_filter_columns": "id"}, InvalidArgumentError),
        ({"bloom_filter_columns": "[1]"}, InvalidArgumentError),
        ({"bloom_filter_columns": "not json"}, InvalidArgumentError),
        ({"bloom_filter_columns": ["nope"]}, InvalidArgumentError),
        ({"bloom_filter_columns": ["v"]}, UnsupportedTypeError),
    ],
)
def test_bad_properties_are_typed_errors_and_commit_nothing(
    tmp_path: Path, props: dict[str, Any], error: type[Exception]
) -> None:
    uri = str(tmp_path / "t")
    with pytest.raises(error):
        ft.write_dataset(_data(), uri, write_properties=props)
    assert not (tmp_path / "t" / "data").exists() or not any((tmp_path / "t" / "data").iterdir())
    ds = ft.write_dataset(_data(), uri)
    with pytest.raises(error):
        ds.update_write_properties(props)
    with pytest.raises(error):
        plan_write(uri, ds.schema, mode="overwrite", write_properties=props)
    assert ft.dataset(uri).version == 1


def test_misuse_of_the_config_commit_is_a_typed_error(tmp_path: Path) -> None:
    ds = ft.write_dataset(_data(), str(tmp_path / "t"), write_properties={"compression": "none"})
    with pytest.raises(InvalidArgumentError, match="differ from the table's"):
        ft.write_dataset(
            _data(ROWS), ds.uri, mode="append", write_properties={"compression": "zstd"}
        )
    # the same values an existing table records: fine (a job config that created it)
    ft.write_dataset(_data(ROWS), ds.uri, mode="append", write_properties={"compression": "none"})
    with pytest.raises(InvalidArgumentError, match="no write property"):
        ds.update_write_properties({})
    with pytest.raises(InvalidArgumentError, match="unknown write properties"):
        ds.update_write_properties(unset=["colour"])
    with pytest.raises(InvalidArgumentError, match="only fermion.write"):
        UpdateConfig({"fermion.batch_id_column": "b"})
    with pytest.raises(InvalidArgumentError, match="both set and removed"):
        UpdateConfig({"fermion.write.page_size": "4096"}, ("fermion.write.page_size",))
    with pytest.raises(InvalidArgumentError):
        ft.write_dataset(_data(), ds.uri, mode="overwrite", replace_where="id < 5",
                         write_properties={"compression": "zstd"})  # fmt: skip


def test_a_newer_librarys_unknown_property_is_skipped_when_reading(tmp_path: Path) -> None:
    config = {"fermion.write.compression": "none", "fermion.write.future_thing": "1"}
    assert WriteProperties.from_config(config, strict=False).compression == "none"
    with pytest.raises(InvalidArgumentError, match="future_thing"):
        WriteProperties.from_config(config)


# -- the WRITE_PROPERTIES writer feature flag (docs/TABLE_FORMAT.md, "Feature flags") -----


def _small(first: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + 3), pa.int64()), "v": [0.5] * 3})


def test_only_versions_with_write_properties_carry_the_writer_flag(tmp_path: Path) -> None:
    flag = codec.FLAG_WRITE_PROPERTIES
    plain = ft.write_dataset(_small(), str(tmp_path / "plain"))
    plain.append(_small(3))
    assert not plain.manifest.writer_feature_flags & flag
    made = ft.write_dataset(_small(), str(tmp_path / "made"), write_properties=PROPS)
    assert made.manifest.writer_feature_flags & flag
    assert not made.manifest.reader_feature_flags & flag  # older readers still read it
    made.append(_small(3))
    assert made.manifest.writer_feature_flags & flag
    later = ft.write_dataset(_small(), str(tmp_path / "later"))
    later.update_write_properties({"page_size": 4096})
    assert later.manifest.writer_feature_flags & flag
    assert not later.checkout(1).manifest.writer_feature_flags & flag
    later.update_write_properties(unset=["page_size"])
    assert not later.manifest.writer_feature_flags & flag


def test_a_writer_unaware_of_write_properties_refuses_and_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = ft.write_dataset(_small(), str(tmp_path / "t"), write_properties=PROPS)
    ds.update_write_properties({"page_size": 8192})
    # a library from before the flag: bit 8 is an unknown writer feature flag to it
    before_flag = codec.KNOWN_WRITER_FLAGS & ~codec.FLAG_WRITE_PROPERTIES
    monkeypatch.setattr(framing, "KNOWN_WRITER_FLAGS", before_flag)  # the flags' owner
    with pytest.raises(UnsupportedVersionError, match="writer feature flags 0x8"):
        ft.write_dataset(_small(3), ds.uri, mode="append")
    with pytest.raises(UnsupportedVersionError, match="writer feature flags 0x8"):
        ft.dataset(ds.uri).append(_small(3))
    with pytest.raises(UnsupportedVersionError, match="writer feature flags 0x8"):
        plan_write(ds.uri, _small(3).schema, mode="append")
    frags = ft.write_fragments(_small(3), ds.uri)
    with pytest.raises(UnsupportedVersionError, match="writer feature flags 0x8"):
        ft.Dataset.commit(ds.uri, ft.Append(frags), read_version=2)
    with pytest.raises(UnsupportedVersionError, match="writer feature flags 0x8"):
        ft.dataset(ds.uri).update_write_properties({"page_size": 4096})
    # nothing committed, and every version still reads
    reopened = ft.dataset(ds.uri)
    assert [v.version for v in reopened.versions()] == [1, 2]
    assert reopened.to_table().sort_by("id")["id"].to_pylist() == [0, 1, 2]
    assert reopened.checkout(1).count_rows() == 3
