"""The reliability scenarios of docs/TABLE_FORMAT.md on a real S3-compatible server (moto on
127.0.0.1): the workers of test_table_concurrency.py and test_table_failures.py, run with
``s3://`` table URIs and fewer commits; the put-if-absent is S3's conditional PutObject.
Also: a table on a store without conditional writes committing through the SQLite manifest
store, and no credential in anything a table writes, logs or raises."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from fsspec.implementations.dirfs import DirFileSystem

import fermion
import fermion.table as ft
from fermion.errors import CommitConflictError
from fermion.io import FsspecStore, S3Store
from fermion.table.manifest_store import SQLiteManifestStore
from fermion.table.storage import TableStorage
from tests.support.s3server import S3Server
from tests.table.test_table_concurrency import (
    ROWS_PER_COMMIT,
    _append_many,
    _claim_version_two,
    _maintain,
    _rows,
)
from tests.table.test_table_failures import KILL_POINTS, _run_writer

Runner = Callable[..., list[tuple[str, Any]]]

WORKERS = 4
COMMITS = 5


def _in_env(env: dict[str, str], target: Callable[..., Any], *args: Any) -> Any:
    """Run ``target`` in a worker process with the server's ``AWS_*`` variables (the fork
    server's children do not see variables set after it started)."""
    import os

    os.environ.update(env)
    return target(*args)


def _data_files(uri: str) -> list[str]:
    storage = TableStorage(uri)
    return sorted(storage.list_dir("data"))


def test_concurrent_appenders_on_s3_lose_and_duplicate_nothing(
    s3_env: S3Server, s3_bucket: str, processes: Runner
) -> None:
    uri = f"s3://{s3_bucket}/t"
    ft.write_dataset(_rows([]), uri)
    env = s3_env.env()
    results = processes(
        _in_env, [(env, _append_many, uri, w, None, COMMITS) for w in range(WORKERS)]
    )
    assert all(status == "ok" for status, _ in results), results
    ds = ft.dataset(uri)
    assert isinstance(ds.storage.store, S3Store)
    total = WORKERS * COMMITS
    assert ds.storage.versions() == list(range(1, total + 2))  # contiguous, nothing skipped
    ids = ds.to_table(["id"]).column("id").to_numpy()
    assert np.array_equal(np.sort(ids), np.arange(total * ROWS_PER_COMMIT))  # no loss, no dup
    paths = [f.files[0].path for f in ds.fragments]
    assert len(paths) == len(set(paths)) == total
    assert _data_files(uri) == sorted(p.split("/")[1] for p in paths)
    for v in (2, total + 1):
        manifest = ds.checkout(v).manifest
        assert manifest.transaction_uuid in manifest.transaction_file


def test_same_version_race_on_s3_has_exactly_one_winner(
    s3_env: S3Server, s3_bucket: str, processes: Runner
) -> None:
    # one round of processes here (threads race three rounds in tests/io/test_s3_store.py)
    uri = f"s3://{s3_bucket}/t"
    ft.write_dataset(_rows([0]), uri)
    env = s3_env.env()
    results = processes(_in_env, [(env, _claim_version_two, uri, w) for w in range(6)])
    winners = [r for _, r in results if r != "lost"]
    assert len(winners) == 1, results
    assert ft.dataset(uri).manifest.transaction_uuid == winners[0]
    assert ft.dataset(uri).storage.versions() == [1, 2]


def test_deletes_racing_compaction_on_s3_never_resurrect_rows(
    s3_env: S3Server, s3_bucket: str, processes: Runner
) -> None:
    uri = f"s3://{s3_bucket}/t"
    ft.write_dataset(_rows(list(range(1000))), uri, max_rows_per_file=100)
    deleters = [[0, 2, 4], [1, 3, 5]]  # residues of r50, rows with id < 1000
    env = s3_env.env()
    jobs = [(uri, "c", 2), (uri, "a", 5000), *[(uri, "d", d) for d in deleters]]
    results = processes(_in_env, [(env, _maintain, *job) for job in jobs])
    assert all(s == "ok" for s, _ in results), results
    ds = ft.dataset(uri)
    got = np.sort(ds.to_table(["id"]).column("id").to_numpy())
    gone = {r for d in deleters for r in d}
    expect = [i for i in [*range(1000), *range(5000, 5100)] if i >= 1000 or i % 50 not in gone]
    assert np.array_equal(got, np.array(expect, np.int64))
    assert ds.storage.versions() == list(range(1, ds.version + 1))


@pytest.mark.parametrize(("point", "committed"), KILL_POINTS)
def test_writer_killed_on_s3_leaves_old_or_new_version(
    s3_env: S3Server, s3_bucket: str, point: str, committed: bool
) -> None:
    uri = f"s3://{s3_bucket}/t"
    ft.write_dataset(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), uri)
    before = _data_files(uri)
    proc = _run_writer(uri, f"{point}:kill")  # a child with the server's AWS_* variables
    assert proc.returncode == -9, proc.stderr
    ds = ft.dataset(uri)
    assert ds.version == (2 if committed else 1)
    assert ds.to_table().column("x").to_pylist() == ([1, 2, 3, 10, 11] if committed else [1, 2, 3])
    assert len(_data_files(uri)) == len(before) + 1  # the killed writer's file
    stats = ds.cleanup_old_versions(timedelta(days=1), orphan_older_than=timedelta(0))
    assert (stats["files_removed"] > 0) is not committed
    referenced = {f.files[0].path.split("/")[1] for f in ft.dataset(uri).fragments}
    assert set(_data_files(uri)) == referenced
    assert _run_writer(uri, None).stdout.strip() == "committed"
    assert ft.dataset(uri).count_rows() == (7 if committed else 5)


def test_retry_exhaustion_on_s3_after_exactly_the_configured_attempts(
    s3_env: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a writer that keeps seeing version 1 as the latest puts version 2 again and again:
    # every put is a real conditional PutObject that the server answers with 412
    uri = f"s3://{s3_bucket}/t"
    ft.write_dataset(_rows([0]), uri)
    ft.write_dataset(_rows([1]), uri, mode="append")
    frags = ft.write_fragments(_rows([2]), uri)
    puts: list[str] = []
    put = S3Store.put_if_absent

    def counted(self: S3Store, path: str, data: bytes) -> None:
        puts.append(path.rsplit("/", 1)[1])
        put(self, path, data)

    monkeypatch.setattr(S3Store, "put_if_absent", counted)
    monkeypatch.setattr(TableStorage, "latest_version", lambda self: 1)
    with pytest.raises(CommitConflictError, match="after 3 commit attempts"):
        ft.Dataset.commit(uri, ft.Append(frags), read_version=1, max_retries=3)
    assert puts == ["2.manifest"] * 3
    monkeypatch.undo()
    ds = ft.dataset(uri)
    assert ds.version == 2 and sorted(ds.to_table().column("id").to_pylist()) == [0, 1]


def _append_external(bucket: str, db: str, worker: int, commits: int) -> int:
    """Append through a filesystem without conditional writes (a DirFileSystem over s3fs is
    a plain :class:`FsspecStore`) and the SQLite manifest store."""
    import fsspec

    fs = DirFileSystem(path=bucket, fs=fsspec.filesystem("s3"))
    store = SQLiteManifestStore(db)
    for commit in range(commits):
        base = (worker * commits + commit) * ROWS_PER_COMMIT
        rows = _rows(list(range(base, base + ROWS_PER_COMMIT)))
        ft.write_dataset(rows, (fs, "t"), mode="append", manifest_store=store)
    return commits


def test_store_without_conditional_writes_commits_through_sqlite_on_s3(
    s3_env: S3Server, s3_bucket: str, tmp_path: Path, processes: Runner
) -> None:
    import fsspec

    fs = DirFileSystem(path=s3_bucket, fs=fsspec.filesystem("s3"))
    db = str(tmp_path / "manifests.db")
    store = SQLiteManifestStore(db)
    with pytest.raises(fermion.InvalidArgumentError, match="no atomic put-if-absent"):
        ft.write_dataset(_rows([]), (fs, "t"))
    ft.write_dataset(_rows([]), (fs, "t"), manifest_store=store)
    workers, commits = 3, 3
    env = s3_env.env()
    results = processes(
        _in_env, [(env, _append_external, s3_bucket, db, w, commits) for w in range(workers)]
    )
    assert all(s == "ok" for s, _ in results), results
    ds = ft.dataset((fs, "t"), manifest_store=store)
    assert type(ds.storage.store) is FsspecStore
    total = workers * commits
    assert ds.version == total + 1 == store.latest_version(ds.uri)
    ids = np.sort(ds.to_table(["id"]).column("id").to_numpy())
    assert np.array_equal(ids, np.arange(total * ROWS_PER_COMMIT))
    # the directory alone (no manifest store) reads the same table: every manifest landed
    plain = ft.dataset(f"s3://{s3_bucket}/t")
    assert plain.version == total + 1 and plain.count_rows() == total * ROWS_PER_COMMIT


def test_credentials_appear_in_no_object_log_repr_or_error(
    s3_server: S3Server, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # credentials only in storage_options (no AWS_* variables), logging at DEBUG everywhere
    for name in s3_server.env():
        monkeypatch.delenv(name, raising=False)
    bucket = s3_server.create_bucket()
    fs = s3_server.filesystem()
    secret, key_id = s3_server.secret_access_key, s3_server.access_key_id
    where = (fs, f"{bucket}/t")
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG):
        ds = ft.write_dataset(_rows(list(range(50))), where)
        ds.delete(pc.field("r10") == 3)
        ds = ft.write_dataset(_rows([99]), where, mode="append")
        ds.create_tag("t1")
        ds.compact_files(target_rows_per_fragment=100)
        texts += [repr(ds), repr(ds.storage.store), str(ds.versions()), repr(ds.manifest)]
        for bad in (
            lambda: ft.dataset(where, version=99),
            lambda: ft.write_dataset(_rows([1]), where),
            lambda: ft.write_dataset(pa.table({"id": ["x"]}), where, mode="append"),
            lambda: ft.dataset((fs, "fermion-no-such-bucket/t")),
        ):
            with pytest.raises(Exception) as info:  # noqa: B017, PT011 - any error: its text
                bad()
            texts.append(f"{type(info.value).__name__}: {info.value!r} {info.value}")
    assert sum(t.startswith("DatasetError") for t in texts) >= 2, texts
    objects = fs.find(bucket)
    assert any(o.endswith(".manifest") for o in objects) and any("_refs" in o for o in objects)
    for obj in objects:
        body = fs.cat_file(obj)
        assert secret.encode() not in body and key_id.encode() not in body, obj
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert logs  # s3fs and botocore did log at DEBUG
    assert secret not in logs
    for text in texts:
        assert secret not in text and key_id not in text, text
