"""``write_dataset`` and ``Dataset.append`` as plan → execute → commit (docs/TASKS.md): the
table appearing while a write streams, a write that fails half way, the table's handle
on append, and the directories a write leaves for cleanup."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import fermion.table as ft
from fermion.errors import DatasetError, SchemaMismatchError

SCHEMA = pa.schema([("x", pa.int64())])


def _files(uri: str) -> list[str]:
    root = Path(uri)
    return sorted(p.relative_to(root).as_posix() for p in root.glob("data/**/*") if p.is_file())


def _stream(before_rows: Any, *batches: pa.RecordBatch) -> pa.RecordBatchReader:
    """A stream that runs ``before_rows()`` when the writer asks for its first batch: after
    the writer has planned on the table as it was, before it writes anything."""

    def batches_() -> Iterator[pa.RecordBatch]:
        before_rows()
        yield from batches

    return pa.RecordBatchReader.from_batches(SCHEMA, batches_())


def _x(uri: str) -> list[int]:
    return sorted(ft.dataset(uri).to_table()["x"].to_pylist())


def test_an_append_to_a_table_created_meanwhile_keeps_the_creators_rows(tmp_path: Path) -> None:
    # another writer creates the table while this append (planned on no table) streams;
    # the append used to commit an overwrite and drop the creator's rows
    uri = str(tmp_path / "t")
    other = lambda: ft.write_dataset(pa.table({"x": [1]}), uri, mode="append")  # noqa: E731
    ds = ft.write_dataset(_stream(other, pa.record_batch({"x": [2]})), uri, mode="append")
    assert _x(uri) == [1, 2]
    assert [v.operation for v in ds.versions()] == ["create", "append"]
    assert ds.version == 2 and ds.count_rows() == 2


def test_a_create_losing_the_race_is_refused_and_leaves_no_file(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    other = lambda: ft.write_dataset(pa.table({"x": [1]}), uri)  # noqa: E731
    creators_files = []

    def create_and_look() -> None:
        other()
        creators_files.extend(_files(uri))

    with pytest.raises(DatasetError, match="already"):
        ft.write_dataset(_stream(create_and_look, pa.record_batch({"x": [2]})), uri)
    assert _x(uri) == [1] and ft.dataset(uri).version == 1
    assert _files(uri) == creators_files  # the loser's file is removed


def test_a_write_failing_half_way_commits_nothing_and_removes_its_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1]}), uri)
    kept = _files(uri)

    def failing() -> Iterator[pa.RecordBatch]:
        yield pa.record_batch({"x": list(range(100))})
        yield pa.record_batch({"x": list(range(100))})
        raise OSError("the source went away")

    ds = ft.dataset(uri)
    with pytest.raises(OSError, match="went away"):
        ds.append(pa.RecordBatchReader.from_batches(SCHEMA, failing()), max_rows_per_file=50)
    assert ft.dataset(uri).version == 1 and _x(uri) == [1]
    assert _files(uri) == kept  # the four files it had finished went with the write
    # bad input: a column of another type is refused before anything is written
    with pytest.raises(SchemaMismatchError):
        ds.append(pa.table({"x": ["a"]}))
    assert _files(uri) == kept and ft.dataset(uri).version == 1


def test_an_empty_write_makes_no_directory(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(pa.table({"x": pa.array([], pa.int64())}), uri)
    ds.append(pa.table({"x": pa.array([], pa.int64())}))
    assert ds.version == 1 and os.listdir(tmp_path / "t" / "data") == []


def test_append_writes_through_the_tables_storage_options(tmp_path: Path) -> None:
    # fsspec's dir filesystem is reachable only with its options: an append that opened
    # the table by its URI alone could not find it
    options = {"path": str(tmp_path), "target_protocol": "file",
               "target_options": {"auto_mkdir": True}}  # fmt: skip
    db = str(tmp_path / "m.db")
    ft.write_dataset(pa.table({"x": [1]}), "dir://t", storage_options=options, manifest_store=db)
    ds = ft.dataset("dir://t", storage_options=options, manifest_store=db)
    ds.append(pa.table({"x": [2]}))
    assert ds.version == 2 and ds.count_rows() == 2
    again = ft.dataset("dir://t", storage_options=options, manifest_store=db)
    assert sorted(again.to_table()["x"].to_pylist()) == [1, 2]


def test_cleanup_removes_the_directories_it_empties_and_keeps_young_ones(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(pa.table({"x": [1]}), uri)
    for value in (2, 3):
        ds.append(pa.table({"x": [value]}))
    ds.compact_files()
    data = tmp_path / "t" / "data"
    assert len(os.listdir(data)) == 4  # three writes and the compaction
    two_hours_ago = time.time() - 7200
    for path in data.glob("**/*"):  # every write so far is two hours old, files and dirs
        os.utime(path, (two_hours_ago, two_hours_ago))
    young = data / "a-writer-just-made-this"  # a writer's directory, no file in it yet
    young.mkdir()
    stats = ds.cleanup_old_versions(timedelta(0), orphan_older_than=timedelta(hours=1))
    assert stats["files_removed"] == 3  # the three writes' files, replaced by the compaction
    live = {f.files[0].path.split("/")[1] for f in ds.fragments}
    assert set(os.listdir(data)) == live | {young.name}  # their directories went with them
    assert _x(uri) == [1, 2, 3]
