"""Fragments between the manifest's wire form and the domain model (fermion.table.codec):
the conversion ``Dataset.fragments`` runs, and the deprecated ``FragmentInfo`` methods."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from fermion.errors import InvalidArgumentError
from fermion.table import write_dataset
from fermion.table.codec import (
    FragmentInfo,
    fragment_from_proto,
    fragment_message,
    fragment_stats,
    fragment_to_bytes,
    fragment_to_dict,
    fragment_to_proto,
    fragment_views,
    fragments_from_manifest,
)
from fermion.table.domain import DataFile, Fragment
from fermion.table.proto import manifest_pb2 as pb


def _message_types(descriptor: Descriptor, seen: set[str] | None = None) -> Iterator[Descriptor]:
    seen = set() if seen is None else seen
    if descriptor.full_name in seen:
        return
    seen.add(descriptor.full_name)
    yield descriptor
    for f in descriptor.fields:
        if f.message_type is not None:
            yield from _message_types(f.message_type, seen)


def test_no_map_field_in_a_fragment_message() -> None:
    """The codec serialises a fragment without ``deterministic=True``: that option only
    orders map entries, so the bytes are the same as long as no message a ``Fragment``
    holds has a map field. A new map field fails here: then serialise deterministically."""
    kinds = list(_message_types(pb.Fragment.DESCRIPTOR))
    assert {"fermion.table.Fragment", "fermion.table.RowIdSegment.Range"} <= {
        d.full_name for d in kinds
    }
    maps = [
        f"{d.full_name}.{f.name}"
        for d in kinds
        for f in d.fields
        if f.message_type is not None
        and f.message_type.GetOptions().map_entry
        and f.label == FieldDescriptor.LABEL_REPEATED
    ]
    assert maps == []
    # the check itself sees a map field where there is one
    assert pb.Manifest.DESCRIPTOR.fields_by_name["config"].message_type.GetOptions().map_entry


def _manifest(tmp_path: Any) -> pb.Manifest:
    ds = write_dataset(pa.table({"x": [1, 2, 3], "s": ["a", "b", None]}), str(tmp_path))
    ds.append(pa.table({"x": [4], "s": ["d"]}))
    ds.delete("x = 2")
    manifest = pb.Manifest()
    manifest.CopyFrom(ds.manifest)
    return manifest


def test_fragments_from_manifest_builds_what_the_constructors_build(tmp_path: Any) -> None:
    manifest = _manifest(tmp_path)
    fragments = fragments_from_manifest(manifest)
    assert len(fragments) == 2 and fragments[0].deleted_rows == 1
    for fragment, message in zip(fragments, manifest.fragments, strict=True):
        by_hand = Fragment(
            id=message.id,
            files=tuple(
                DataFile(f.path, tuple(f.field_ids), f.size_bytes, f.file_format)
                for f in message.files
            ),
            physical_rows=message.physical_rows,
            deleted_rows=message.deletion_file.num_deleted_rows,
            message=message.SerializeToString(deterministic=True),
        )
        assert fragment == by_hand and by_hand == fragment
        assert hash(fragment) == hash(by_hand)
        assert repr(fragment) == repr(by_hand)
        assert vars(fragment) == vars(by_hand)
        assert vars(fragment.files[0]) == vars(by_hand.files[0])
        assert fragment.files[0] == by_hand.files[0]
        assert fragment == fragment_from_proto(message, committed=True)
        assert pickle.loads(pickle.dumps(fragment)) == by_hand
        assert fragment_to_proto(fragment) == message


@pytest.mark.parametrize("first", ["id", "files", "physical_rows", "deleted_rows", "message"])
def test_fragment_views_read_like_the_converted_fragments(tmp_path: Any, first: str) -> None:
    """``Dataset.fragments`` values (:func:`fragment_views`): whichever field is read
    first, every field, equality, hash, repr, pickle, copy and ``replace`` are those of
    the eagerly converted fragment, and the values stay frozen. A field is read alone
    (the others stay unread) and the message is kept for :func:`fragment_message`."""
    manifest = _manifest(tmp_path)
    eager = fragments_from_manifest(manifest)
    views = fragment_views(manifest)
    for view, converted, message in zip(views, eager, manifest.fragments, strict=True):
        assert getattr(view, first) == getattr(converted, first)
        assert set(vars(view)) == {"_wire", first}
        assert fragment_message(view) is message
        fields = {k: v for k, v in vars(view).items() if k != "_wire"}
        assert fields == {first: vars(converted)[first]}
        assert view == converted and converted == view and hash(view) == hash(converted)
        assert repr(view) == repr(converted)
        assert isinstance(view, FragmentInfo)
        assert {k: v for k, v in vars(view).items() if k != "_wire"} == vars(converted)
        for clone in (pickle.loads(pickle.dumps(view)), copy.copy(view), copy.deepcopy(view)):
            assert clone == converted and vars(clone) == vars(converted)
        moved = dataclasses.replace(view, id=99)
        assert moved.id == 99 and moved.files == converted.files
        with pytest.raises(dataclasses.FrozenInstanceError):
            view.id = 5  # type: ignore[misc]
    # a view pickled before any field was read carries the fields, not the message
    unread = fragment_views(manifest)[1]
    assert "_wire" in vars(unread)
    assert pickle.loads(pickle.dumps(unread)) == eager[1]
    # Dataset.fragments holds views
    ds = write_dataset(pa.table({"x": [1]}), str(tmp_path / "t"))
    assert [f.physical_rows for f in ds.fragments] == [1]


def _call_warns(call: Callable[[], Any], name: str) -> Any:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call()
    assert [w.category for w in seen] == [DeprecationWarning], name
    assert name in str(seen[0].message) and seen[0].filename == __file__
    return result


def test_fragment_info_methods_work_and_warn(tmp_path: Any) -> None:
    """Every method ``FragmentInfo`` had before the domain model, on a fragment of
    ``Dataset.fragments``: same result as the codec function, plus a DeprecationWarning."""
    ds = write_dataset(pa.table({"x": [1, 2, 3]}), str(tmp_path))
    ds.delete("x = 1")
    fragment = ds.fragments[0]
    message = ds.manifest.fragments[0]
    assert isinstance(fragment, FragmentInfo) and fragment.deleted_rows == 1

    assert _call_warns(fragment.to_proto, "FragmentInfo.to_proto()") == message
    stats = _call_warns(lambda: fragment.stats, "FragmentInfo.stats")
    assert stats == fragment_stats(fragment) == list(message.stats) and len(stats) == 1
    data = _call_warns(fragment.to_bytes, "FragmentInfo.to_bytes()")
    assert data == fragment_to_bytes(fragment)
    assert _call_warns(lambda: FragmentInfo.from_bytes(data), "FragmentInfo.from_bytes()") == (
        fragment
    )
    as_dict = _call_warns(fragment.to_dict, "FragmentInfo.to_dict()")
    assert as_dict == fragment_to_dict(fragment)
    assert _call_warns(lambda: FragmentInfo.from_dict(as_dict), "FragmentInfo.from_dict()") == (
        fragment
    )
    text = _call_warns(fragment.to_json, "FragmentInfo.to_json()")
    assert json.loads(text) == as_dict
    assert _call_warns(lambda: FragmentInfo.from_json(text), "FragmentInfo.from_json()") == (
        fragment
    )
    from_proto = _call_warns(
        lambda: FragmentInfo.from_proto(message, committed=True), "FragmentInfo.from_proto()"
    )
    assert from_proto == fragment and isinstance(from_proto, FragmentInfo)
    # what the old methods returned is a FragmentInfo again, so chains keep working
    assert isinstance(fragment_from_proto(pb.Fragment(physical_rows=1)), FragmentInfo)


def test_fragment_info_bad_input_is_typed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(InvalidArgumentError):
            FragmentInfo.from_json("{not json")
        with pytest.raises(InvalidArgumentError):
            FragmentInfo.from_bytes(b"X")
        with pytest.raises(InvalidArgumentError):
            FragmentInfo.from_dict({"fragment": {}})


def test_a_hand_built_fragment_info_is_a_fragment() -> None:
    """``FragmentInfo(...)`` as older code built it still constructs, and equals the
    ``Fragment`` of the same fields."""
    info = FragmentInfo(None, (DataFile("data/a.fermion", (0,), 9),), 3, 0, b"")
    assert info == Fragment(None, (DataFile("data/a.fermion", (0,), 9),), 3)
    assert repr(info).startswith("Fragment(id=None")
    assert _call_warns(info.to_proto, "FragmentInfo.to_proto()").physical_rows == 3
