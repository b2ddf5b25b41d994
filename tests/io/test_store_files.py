"""Typed store files (docs/ARCHITECTURE.md, "The storage seam"): every store hands out an
InputFile and an OutputFile for a path, and open_source/open_sink reach any path through
the store that serves it."""

from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import pytest

from fermion.errors import InvalidArgumentError, SourceNotFoundError
from fermion.io import InputFile, OutputFile, StoreFile, open_sink, open_source
from fermion.io.byte_source import FsspecSource, LocalSource
from fermion.io.store import FsspecStore, LocalStore, MemoryStore, open_store, store_for


@pytest.fixture(params=["local", "memory"])
def store_root(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[object, str]:
    where = str(tmp_path) if request.param == "local" else f"memory://sf-{uuid.uuid4().hex}"
    store, root = open_store(where)
    store.makedirs(root)
    return store, root


def test_a_store_file_is_written_and_read_through_its_store(store_root) -> None:
    store, root = store_root
    path = store.join(root, "f.bin")
    target = store.target(path)
    assert isinstance(target, StoreFile)
    assert isinstance(target, InputFile) and isinstance(target, OutputFile)
    with open_sink(target) as sink:
        sink.append(b"hello, ")
        sink.append(b"world")
    assert store.read(path) == b"hello, world"
    source = open_source(target)
    expected = LocalSource if isinstance(store, LocalStore) else FsspecSource
    assert isinstance(source, expected)
    assert [bytes(v) for v in source.read_ranges([(0, 5), (7, 5)], max_gap=0)] == [
        b"hello",
        b"world",
    ]
    source.close()
    assert store.isfile(path) and not store.isdir(path)


def test_store_for_keeps_the_path_and_picks_the_backend(tmp_path: Path) -> None:
    store, path = store_for("memory://bucket/a.bin")
    assert isinstance(store, MemoryStore) and path == "/bucket/a.bin"
    store, path = store_for(tmp_path / "x.bin")
    assert isinstance(store, LocalStore) and path == str(tmp_path / "x.bin")
    store, path = store_for("file://" + str(tmp_path / "y.bin"))
    assert isinstance(store, LocalStore) and path == str(tmp_path / "y.bin")
    # an explicit (filesystem, path) pair goes through that filesystem, even a local one
    store, path = store_for((fsspec.filesystem("file"), str(tmp_path / "z.bin")))
    assert type(store) is FsspecStore and path == str(tmp_path / "z.bin")
    with pytest.raises(InvalidArgumentError):
        store_for(42)
    with pytest.raises(InvalidArgumentError):
        store_for("nosuchprotocol-xyz://a/b")


def test_local_stage_and_publish_replace_the_file_at_once(tmp_path: Path) -> None:
    store = LocalStore()
    path = str(tmp_path / "out.bin")
    store.write(path, b"old")
    staged = store.stage(path)
    assert staged != path and Path(staged).parent == tmp_path
    with store.new_output(staged).create() as f:
        f.write(b"new")
    assert store.read(path) == b"old"  # nothing visible before publish
    store.publish(staged, path)
    assert store.read(path) == b"new" and not store.exists(staged)
    with pytest.raises(IsADirectoryError):
        store.check_destination(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        store.check_destination(str(tmp_path / "missing" / "f.bin"))


def test_fsspec_stores_write_in_place() -> None:
    store, root = open_store(f"memory://sf-{uuid.uuid4().hex}")
    path = store.join(root, "f.bin")
    assert store.stage(path) == path
    store.check_destination(path)  # no folders to check


def test_open_sink_and_source_errors_stay_typed(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError):
        open_sink(str(tmp_path / "missing" / "f.bin"))
    with pytest.raises(InvalidArgumentError):
        open_sink(str(tmp_path))
    with pytest.raises(SourceNotFoundError):
        open_source(str(tmp_path / "nothing.bin"))
