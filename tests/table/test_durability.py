"""Durability (docs/TABLE_FORMAT.md, "Durability"): everything a committed manifest names,
and the directory entries naming it, is fsynced before the manifest is put.

The recording layer wraps the real ``os.fsync`` and ``os.link`` (and the external store's
insert): each fsync is logged with the path of its file descriptor (``/proc/self/fd``, so
Linux only), each link with its destination. Nothing is mocked: the calls still happen.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion.table as ft
from fermion.table.deletions import deletion_path
from fermion.table.manifest_store import SQLiteManifestStore
from fermion.table.tasks import commit_write, execute_write, plan_write

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads fd paths from /proc"
)


class Recorder:
    """Logs ``("fsync", path)``, ``("link", destination)`` and ``("insert", path)``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_fsync, real_link = os.fsync, os.link
        real_insert = SQLiteManifestStore.put_if_absent

        def fsync(fd: int) -> None:
            self.events.append(("fsync", os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))))
            real_fsync(fd)

        def link(src: str, dst: str, *args: Any, **kwargs: Any) -> None:
            real_link(src, dst, *args, **kwargs)
            self.events.append(("link", os.path.realpath(dst)))

        def insert(store: SQLiteManifestStore, base: str, version: int, path: str) -> None:
            real_insert(store, base, version, path)
            self.events.append(("insert", os.path.realpath(path)))

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "link", link)
        monkeypatch.setattr(SQLiteManifestStore, "put_if_absent", insert)

    def first(self, kind: str, path: str, after: int = -1) -> int | None:
        for i, event in enumerate(self.events):
            if i > after and event == (kind, path):
                return i
        return None


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    rec = Recorder()
    rec.install(monkeypatch)
    yield rec


def _referenced(ds: ft.Dataset) -> list[str]:
    """Relative paths of every file the manifest names."""
    manifest = ds.manifest
    files = [f"_transactions/{manifest.transaction_file}"]
    for fragment in manifest.fragments:
        files.extend(f.path for f in fragment.files)
        if fragment.HasField("deletion_file"):
            files.append(deletion_path(fragment.id, fragment.deletion_file))
    return files


def _check_synced_before(rec: Recorder, root: str, files: list[str], commit_index: int) -> None:
    """Each file, and each directory from its own up to the root, was fsynced before
    ``commit_index``; its own directory after the file was (so the entry existed)."""
    root = os.path.realpath(root)
    for relative in files:
        path = os.path.join(root, *relative.split("/"))
        synced = rec.first("fsync", path)
        assert synced is not None and synced < commit_index, f"{relative} not synced first"
        directory = os.path.dirname(path)
        entry = rec.first("fsync", directory, after=synced)
        assert entry is not None and entry < commit_index, f"entry of {relative} not synced"
        while directory != root:
            directory = os.path.dirname(directory)
            parent = rec.first("fsync", directory)
            assert parent is not None and parent < commit_index, f"{directory} not synced"


def _check_version(rec: Recorder, ds: ft.Dataset) -> None:
    manifest = os.path.realpath(ds.storage.path(f"_versions/{ds.version}.manifest"))
    put = rec.first("link", manifest)
    assert put is not None, f"version {ds.version} was not put through a link"
    _check_synced_before(rec, ds.uri, _referenced(ds), put)
    versions_dir = rec.first("fsync", os.path.dirname(manifest), after=put)
    assert versions_dir is not None  # the manifest's own entry follows it


def test_every_committed_file_is_synced_before_its_manifest(
    tmp_path: Path, recorder: Recorder
) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(pa.table({"x": list(range(8))}), uri, max_rows_per_file=3)  # create
    checked = [ds.version]
    _check_version(recorder, ds)
    ds = ft.write_dataset(pa.table({"x": [8, 9]}), uri, mode="append")
    _check_version(recorder, ds)
    ds.delete(pc.field("x") == 1)  # a deletion file
    _check_version(recorder, ds)
    ds.delete("x >= 6 and x <= 7")  # deletes touching another fragment
    _check_version(recorder, ds)
    ds.compact_files(target_rows_per_fragment=100)  # new data files in data/{write_id}/
    _check_version(recorder, ds)
    ds.add_columns([pa.field("y", pa.string())])
    _check_version(recorder, ds)
    ds.checkout(2).restore()
    _check_version(recorder, ds := ft.dataset(uri))
    ds.rebuild_stats()
    _check_version(recorder, ds := ft.dataset(uri))
    ds = ft.write_dataset(pa.table({"x": [42]}), uri, mode="overwrite")
    _check_version(recorder, ds)
    checked += list(range(2, ds.version + 1))
    assert checked == list(range(1, 10))
    assert ds.to_table()["x"].to_pylist() == [42]


def test_row_edits_and_column_values_sync_every_file_before_their_manifest(
    tmp_path: Path, recorder: Recorder
) -> None:
    uri = str(tmp_path / "t")
    table = pa.table({"id": list(range(12)), "v": [float(i) for i in range(12)]})
    ds = ft.write_dataset(table, uri, max_rows_per_file=4)
    ds.delete("id = 5")  # a fragment that has a deletion file already
    _check_version(recorder, ds)
    source = pa.table({"id": [1, 5, 6, 20], "v": [-1.0, -5.0, -6.0, -20.0]})
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        source
    )  # (new rows written while the fragments are joined, deletion files on threads)
    _check_version(recorder, ds)
    ds.merge_insert("id").when_matched_update(["v"]).execute(source.slice(0, 2))
    _check_version(recorder, ds)
    assert ds.update("id >= 9", set={"v": "v + 100"}) == 4
    _check_version(recorder, ds)
    ds = ft.write_dataset(
        pa.table({"id": [3], "v": [3.5]}), uri, mode="overwrite", replace_where="id = 3"
    )
    _check_version(recorder, ds)
    ds.add_columns({"w": "v * 2"})  # one column file per fragment, on threads
    _check_version(recorder, ds)
    ds.add_columns(lambda b: pa.table({"x": pc.add(b["id"], 1)}), read_columns=["id"])
    _check_version(recorder, ds)
    ds.add_columns(pa.table({"id": [1, 2], "y": ["a", "b"]}), on="id")
    _check_version(recorder, ds)
    rows = {r["id"]: r["v"] for r in ds.to_table(columns=["id", "v"]).to_pylist()}
    assert (rows[1], rows[3], rows[5], rows[10], rows[20]) == (-1.0, 3.5, -5.0, 110.0, 80.0)
    assert len(rows) == 13


def _worker_write(plan: Any, data: pa.Table) -> tuple[Any, list[str]]:
    """A worker: writes its share, returns its result and the paths it fsynced."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.path.realpath(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    os.fsync = fsync
    try:
        return execute_write(plan, data, task_id="w"), synced
    finally:
        os.fsync = real_fsync


def test_task_api_worker_syncs_before_reporting(
    tmp_path: Path, recorder: Recorder, processes: Any
) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1]}), uri)
    plan = plan_write(uri, pa.schema([("x", pa.int64())]), max_rows_per_file=2)
    ((status, (result, synced)),) = processes(_worker_write, [(plan, pa.table({"x": [2, 3, 4]}))])
    assert status == "ok"
    root = os.path.realpath(uri)
    files = [os.path.join(root, info.files[0].path) for info in result.fragments]
    assert len(files) == 2
    for path in files:  # each file, then its new directory and that directory's entry
        assert path in synced
        assert os.path.dirname(path) in synced[synced.index(path) :]
    assert os.path.join(root, "data") in synced  # data/{write_id} is named in data/
    commit_write(plan, [result])
    ds = ft.dataset(uri)
    manifest = os.path.realpath(ds.storage.path(f"_versions/{ds.version}.manifest"))
    put = recorder.first("link", manifest)
    assert put is not None
    _check_synced_before(recorder, uri, [f"_transactions/{ds.manifest.transaction_file}"], put)
    assert ds.to_table()["x"].to_pylist() == [1, 2, 3, 4]


def test_external_store_stages_a_synced_manifest_before_the_insert(
    tmp_path: Path, recorder: Recorder
) -> None:
    store = SQLiteManifestStore(str(tmp_path / "m.db"))
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1, 2]}), uri, manifest_store=store)
    ds = ft.write_dataset(pa.table({"x": [3]}), uri, mode="append", manifest_store=store)
    inserts = [i for i, (kind, _) in enumerate(recorder.events) if kind == "insert"]
    assert len(inserts) == 2
    for version, insert in enumerate(inserts, start=1):
        staged = recorder.events[insert][1]
        assert os.path.basename(staged).startswith(f"{version}.manifest-")
        synced = recorder.first("fsync", staged)
        assert synced is not None and synced < insert
        entry = recorder.first("fsync", os.path.dirname(staged), after=synced)
        assert entry is not None and entry < insert
        manifest = ft.dataset(uri, version=version, manifest_store=store)
        _check_synced_before(recorder, uri, _referenced(manifest), insert)
    assert ds.to_table()["x"].to_pylist() == [1, 2, 3]


def test_a_fresh_table_names_its_directories_durably(tmp_path: Path, recorder: Recorder) -> None:
    uri = tmp_path / "a" / "b" / "t"
    ft.write_dataset(pa.table({"x": [1]}), str(uri))
    for created in (uri.parent.parent, uri.parent, uri, uri / "data", uri / "_versions"):
        synced = recorder.first("fsync", os.path.realpath(created.parent))
        assert synced is not None, f"the entry of {created} was never synced"
