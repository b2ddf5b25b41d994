"""The TableVersion handle (fermion.table.domain, built by fermion.table.codec) and the
readers and planners that take it instead of the manifest message."""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from fermion.errors import InvalidArgumentError
from fermion.table import dataset, write_dataset
from fermion.table.codec import (
    as_table_version,
    fragment_message,
    fragments_from_manifest,
    manifest_of,
    table_version,
)
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragments import write_fragment_values, write_fragments
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.scan import Scanner
from fermion.table.schema import TableSchema
from fermion.table.tasks import plan_compaction, plan_delete
from fermion.table.versions import latest_table_version, load_manifest


def _table(tmp_path: Any) -> str:
    uri = str(tmp_path / "t")
    data = pa.table({"x": list(range(6)), "s": list("abcdef")})
    ds = write_dataset(data, uri, max_rows_per_file=2)
    ds.delete("x = 3")
    return uri


def test_handle_reads_the_manifest(tmp_path: Any) -> None:
    uri = _table(tmp_path)
    manifest = load_manifest(dataset(uri).storage, 2)
    version = table_version(manifest)
    assert isinstance(version, TableVersion)
    # the number is read at once, the other fields when first used
    assert set(vars(version)) == {"_wire", "version"}
    assert (version.version, version.operation) == (2, "delete")
    assert version.transaction_uuid == manifest.transaction_uuid
    assert version.has_row_ids and version.next_row_id == manifest.next_row_id == 6
    assert version.schema.arrow.names == ["x", "s"]
    assert version.config == dict(manifest.config)
    assert version.fragments == fragments_from_manifest(manifest)
    assert version.live_rows == 5 and not version.has_indices
    assert "schema" in vars(version) and version.schema is version.schema  # kept
    assert manifest_of(version) is manifest and as_table_version(version) is version
    assert as_table_version(manifest).version == 2
    copy = pickle.loads(pickle.dumps(version))
    assert copy.fragments == version.fragments and copy.config == version.config
    assert manifest_of(copy) == manifest and manifest_of(copy) is not manifest


def test_a_handle_built_by_hand_has_no_manifest() -> None:
    schema = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
    with pytest.raises(InvalidArgumentError, match="not read from a manifest"):
        manifest_of(TableVersion(1, schema, (Fragment(0, (), 3),)))


def test_dataset_keeps_one_handle_per_version(tmp_path: Any) -> None:
    uri = _table(tmp_path)
    ds = dataset(uri)
    first = ds.table_version
    assert first is ds.table_version and ds.fragments == list(first.fragments)
    ds.append(pa.table({"x": [9], "s": ["z"]}))
    assert ds.table_version is not first and ds.table_version.version == 3
    assert latest_table_version(ds.storage).fragments == ds.table_version.fragments
    assert pickle.loads(pickle.dumps(ds)).table_version.version == 3


def test_scanner_on_a_handle_or_a_manifest(tmp_path: Any) -> None:
    uri = _table(tmp_path)
    ds = dataset(uri)
    version = ds.table_version
    manifest = manifest_of(version)
    flt = pc.field("x") >= 4
    on_handle = Scanner(ds.storage, version, ds.table_schema, ["x"], flt)
    on_message = Scanner(ds.storage, manifest, ds.table_schema, ["x"], flt)
    values = on_handle.fragment_values()
    assert [f.id for f in values] == [2] and all(isinstance(f, Fragment) for f in values)
    # fragments() answers with the manifest's own messages, whatever the scanner was given
    for scanner in (on_handle, on_message):
        messages = scanner.fragments()
        assert [type(m) for m in messages] == [pb.Fragment]
        assert messages[0] is manifest.fragments[2]
        assert scanner.to_table()["x"].to_pylist() == [4, 5]
    assert on_handle.stats.fragments_pruned == 2
    assert Scanner(ds.storage, version, ds.table_schema, ["_rowid"]).to_table().num_rows == 5


def test_write_fragment_values_and_their_messages(tmp_path: Any) -> None:
    uri = _table(tmp_path)
    data = pa.table({"x": [7, 8, 9], "s": ["p", "q", "r"]})
    values = write_fragment_values(data, uri, max_rows_per_file=2)
    assert [(f.id, f.physical_rows) for f in values] == [(None, 2), (None, 1)]
    assert fragment_message(values[0]).stats  # the statistics travel with the value
    messages = write_fragments(data, uri, max_rows_per_file=2)
    assert [type(m) for m in messages] == [pb.Fragment, pb.Fragment]
    assert [m.physical_rows for m in messages] == [2, 1]


def test_planners_hold_domain_fragments(tmp_path: Any) -> None:
    uri = _table(tmp_path)
    delete = plan_delete(uri, "x >= 4")
    assert [f.id for t in delete.tasks for f in t.fragments] == [2]
    compaction = plan_compaction(uri, target_rows_per_fragment=10)
    fragments = [f for t in compaction.tasks for f in t.fragments]
    assert [f.id for f in fragments] == [0, 1, 2]
    assert all(isinstance(f, Fragment) for f in fragments)
    assert pickle.loads(pickle.dumps(compaction)) == compaction


def test_a_kept_handle_keeps_its_pruning_guarantees(tmp_path: Any) -> None:
    ds = dataset(_table(tmp_path))
    first = ds.scanner(["x"], "x >= 4")
    assert [f.id for f in first.fragment_values()] == [2]
    kept = [vars(f).get("_guarantees") for f in ds.table_version.fragments]
    assert all(kept)  # built once, for this schema and these columns
    again = ds.scanner(["x"], "x >= 4")
    assert again.fragment_values() == first.fragment_values()
    assert [vars(f).get("_guarantees") for f in ds.table_version.fragments] == kept
    # fragments made for one scan (a scanner given the manifest message) keep nothing
    manifest = manifest_of(ds.table_version)
    scanner = Scanner(ds.storage, manifest, ds.table_schema, ["x"], pc.field("x") >= 4)
    assert scanner.fragments() == [manifest.fragments[2]]
    assert not any("_guarantees" in vars(f) for f in scanner._version.fragments)
