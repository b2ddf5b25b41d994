"""Reliability scenarios 7–11 and 13 of docs/TABLE_FORMAT.md: crashes, unknown outcomes, damaged
metadata, bad input. Scenarios 7, 8 and 11 also run with commits going through the PostgreSQL
external manifest store (a real server, tests/support/postgres.py), with its own kill points."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.errors import (
    ChecksumError,
    CommitConflictError,
    DatasetError,
    IncompatibleTransactionError,
    InvalidArgumentError,
    InvalidFileError,
    ManifestStoreError,
    SchemaMismatchError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from fermion.io import failpoints
from fermion.io.atomic import is_temp_name
from fermion.table.codec import encode_manifest
from fermion.table.commit import CommitConfig, commit_operation
from fermion.table.manifest_store import PostgresManifestStore, is_staging_path
from fermion.table.storage import TableStorage, manifest_name
from tests.support.budget import examples

WRITER = """
import sys, pyarrow as pa, fermion.table as ft
ms = sys.argv[2] if len(sys.argv) > 2 else None
rows = pa.table({"x": pa.array([10, 11], pa.int64())})
ft.write_dataset(rows, sys.argv[1], mode="append", manifest_store=ms)
print("committed")
"""


def _table(tmp_path: Path, ms: str | None = None) -> str:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), uri, manifest_store=ms)
    return uri


def _files(uri: str) -> dict[str, list[str]]:
    return {d: sorted(os.listdir(Path(uri) / d)) for d in ("data", "_versions", "_transactions")}


def _run_writer(
    uri: str, failpoint: str | None, ms: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop(failpoints.ENV_VAR, None)
    env.pop(failpoints.ENABLE_VAR, None)
    if failpoint:
        env[failpoints.ENV_VAR] = failpoint
        env[failpoints.ENABLE_VAR] = failpoints.ENABLE_TOKEN  # the test's explicit opt-in
    args = [sys.executable, "-c", WRITER, uri, *([ms] if ms else [])]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)


KILL_POINTS = [
    ("after_data_write", False),
    ("after_txn_write", False),
    ("before_manifest_put", False),
    ("after_manifest_put", True),
]


# A commit through an external manifest store (docs/TABLE_FORMAT.md): (point, committed,
# visible to a reader without the store before any repair).
EXTERNAL_KILL_POINTS = [
    ("after_data_write", False, False),
    ("after_txn_write", False, False),
    ("before_manifest_put", False, False),
    ("after_manifest_staged", False, False),
    ("after_store_insert", True, False),  # committed, but only the staged manifest exists
    ("after_manifest_copy", True, True),  # the store still names the staged manifest
    ("after_manifest_put", True, True),
]


def test_every_failpoint_is_exercised() -> None:
    commit_points = failpoints.POINTS[:4]  # the rest: tests/table/test_kill_points.py
    assert [point for point, _ in KILL_POINTS] == list(commit_points)
    assert {point for point, _, _ in EXTERNAL_KILL_POINTS} == {
        *commit_points,
        *failpoints.EXTERNAL_POINTS,
    }


@pytest.mark.parametrize(("point", "committed"), KILL_POINTS)
def test_writer_killed_leaves_old_or_new_version_never_between(
    tmp_path: Path, point: str, committed: bool
) -> None:
    uri = _table(tmp_path)
    before = _files(uri)
    proc = _run_writer(uri, f"{point}:kill")
    assert proc.returncode == -9, proc.stderr
    ds = ft.dataset(uri)
    assert ds.version == (2 if committed else 1)
    assert ds.to_table().column("x").to_pylist() == ([1, 2, 3, 10, 11] if committed else [1, 2, 3])
    after = _files(uri)
    assert not [n for names in after.values() for n in names if is_temp_name(n)]
    assert len(after["data"]) == len(before["data"]) + 1  # the killed writer's file
    # orphans survive a cleanup younger than their age threshold ...
    ds.cleanup_old_versions(timedelta(days=1))
    assert _files(uri) == after
    # ... and go once they are old enough; the table is intact either way
    stats = ds.cleanup_old_versions(timedelta(days=1), orphan_older_than=timedelta(0))
    assert (stats["files_removed"] > 0) is not committed
    referenced = {f.files[0].path.split("/")[1] for f in ft.dataset(uri).fragments}
    assert set(_files(uri)["data"]) == referenced
    assert ft.dataset(uri).count_rows() == (5 if committed else 3)
    # and the table keeps working
    assert _run_writer(uri, None).stdout.strip() == "committed"


@pytest.mark.parametrize(("point", "committed", "on_disk"), EXTERNAL_KILL_POINTS)
def test_writer_killed_in_an_external_store_commit_is_repaired_by_readers(
    tmp_path: Path, postgres_dsn: str, point: str, committed: bool, on_disk: bool
) -> None:
    uri = _table(tmp_path, postgres_dsn)
    proc = _run_writer(uri, f"{point}:kill", postgres_dsn)
    assert proc.returncode == -9, proc.stderr
    store = PostgresManifestStore(postgres_dsn)
    entry = store.get(uri, 2)
    assert (entry is not None) is committed
    if point in ("after_store_insert", "after_manifest_copy"):  # died between insert and update
        assert entry is not None and is_staging_path(entry)
    # a reader without the store sees the old or the new version: at most one behind
    assert ft.dataset(uri).version == (2 if on_disk else 1)
    # a reader with the store sees the committed version, repairing the table on the way
    ds = ft.dataset(uri, manifest_store=postgres_dsn)
    assert ds.version == (2 if committed else 1)
    rows = [1, 2, 3, 10, 11] if committed else [1, 2, 3]
    assert sorted(ds.to_table().column("x").to_pylist()) == rows
    if committed:
        assert store.get(uri, 2) == str(Path(uri) / manifest_name(2))
        assert ft.dataset(uri).version == 2  # repaired on disk, for every reader
    # cleanup removes the orphans (staged manifests included) and nothing the table needs
    ds.cleanup_old_versions(timedelta(days=1), orphan_older_than=timedelta(0))
    assert not [n for n in _files(uri)["_versions"] if is_staging_path(n)]
    referenced = {f.files[0].path.split("/")[1] for f in ds.fragments}
    assert set(_files(uri)["data"]) == referenced
    # and the table keeps working through the store
    assert _run_writer(uri, None, postgres_dsn).stdout.strip() == "committed"
    after = ft.dataset(uri, manifest_store=postgres_dsn)
    assert after.version == store.latest_version(uri) == (3 if committed else 2)
    assert after.count_rows() == len(rows) + 2


def test_commit_that_landed_but_reported_an_error_is_recognised(
    tmp_path: Path,
) -> None:
    uri = _table(tmp_path)
    failpoints.arm("after_manifest_put", "raise")
    try:
        ds = ft.write_dataset(pa.table({"x": pa.array([7], pa.int64())}), uri, mode="append")
    finally:
        failpoints.disarm()
    assert ds.last_commit is not None and ds.last_commit.recognised
    assert ds.last_commit.attempts == 2
    assert ds.storage.versions() == [1, 2]  # committed exactly once
    assert ft.dataset(uri).to_table().column("x").to_pylist() == [1, 2, 3, 7]
    for fragment in ds.fragments:  # nothing the writer wrote was deleted
        assert (Path(uri) / fragment.files[0].path).exists()


def test_commit_that_landed_in_a_process_that_then_failed(tmp_path: Path) -> None:
    uri = _table(tmp_path)
    proc = _run_writer(uri, "after_manifest_put:raise")
    assert proc.returncode == 0 and proc.stdout.strip() == "committed", proc.stderr
    assert ft.dataset(uri).storage.versions() == [1, 2]
    assert ft.dataset(uri).count_rows() == 5


def _race_after_planning(uri: str) -> tuple[list[ft.FragmentMetadata], ft.Dataset]:
    mine = ft.write_fragments(pa.table({"x": pa.array([100], pa.int64())}), uri)
    theirs = ft.write_dataset(pa.table({"x": pa.array([200], pa.int64())}), uri, mode="append")
    return mine, theirs


def test_store_insert_that_landed_but_reported_an_error_is_recognised(
    tmp_path: Path, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection drops after the server ran the insert (simulated: the real insert,
    then the error the store raises for a dropped connection)."""
    uri = _table(tmp_path, postgres_dsn)
    insert = PostgresManifestStore.put_if_absent
    claims: list[int] = []

    def lands_then_fails(self: PostgresManifestStore, base: str, version: int, path: str) -> None:
        insert(self, base, version, path)
        claims.append(version)
        if len(claims) == 1:
            raise ManifestStoreError("manifest store: server closed the connection unexpectedly")

    monkeypatch.setattr(PostgresManifestStore, "put_if_absent", lands_then_fails)
    rows = pa.table({"x": pa.array([7], pa.int64())})
    ds = ft.write_dataset(rows, uri, mode="append", manifest_store=postgres_dsn)
    assert ds.last_commit is not None and ds.last_commit.recognised
    assert claims == [2]  # committed once: the retry found its own commit and repaired it
    store = PostgresManifestStore(postgres_dsn)
    assert store.latest_version(uri) == 2
    assert store.get(uri, 2) == str(Path(uri) / manifest_name(2))
    assert ft.dataset(uri).to_table().column("x").to_pylist() == [1, 2, 3, 7]


def test_retry_exhaustion_through_the_external_store(
    tmp_path: Path, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _table(tmp_path, postgres_dsn)
    claims: list[int] = []

    def always_taken(self: PostgresManifestStore, base: str, version: int, path: str) -> None:
        claims.append(version)
        raise FileExistsError(version)

    monkeypatch.setattr(PostgresManifestStore, "put_if_absent", always_taken)
    frags = ft.write_fragments(pa.table({"x": pa.array([5], pa.int64())}), uri)
    for attempts in (1, 4):
        claims.clear()
        with pytest.raises(CommitConflictError, match=f"after {attempts} commit attempts"):
            ft.Dataset.commit(
                uri, ft.Append(frags), read_version=1, max_retries=attempts,
                manifest_store=postgres_dsn,
            )  # fmt: skip
        assert claims == [2] * attempts
    monkeypatch.undo()
    assert PostgresManifestStore(postgres_dsn).latest_version(uri) == 1
    assert ft.dataset(uri, manifest_store=postgres_dsn).version == 1


def test_missing_intervening_transaction_is_not_retryable(tmp_path: Path) -> None:
    uri = _table(tmp_path)
    mine, theirs = _race_after_planning(uri)
    (Path(uri) / "_transactions" / theirs.manifest.transaction_file).unlink()
    with pytest.raises(IncompatibleTransactionError, match="missing or unreadable"):
        ft.Dataset.commit(uri, ft.Append(mine), read_version=1)
    assert ft.dataset(uri).version == 2


def test_truncated_intervening_transaction_is_not_retryable(tmp_path: Path) -> None:
    uri = _table(tmp_path)
    mine, theirs = _race_after_planning(uri)
    path = Path(uri) / "_transactions" / theirs.manifest.transaction_file
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(IncompatibleTransactionError):
        ft.Dataset.commit(uri, ft.Append(mine), read_version=1)
    assert ft.dataset(uri).version == 2


def test_retry_exhaustion_after_exactly_the_configured_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _table(tmp_path)
    puts: list[int] = []

    def always_taken(self: TableStorage, version: int, data: bytes) -> None:
        puts.append(version)
        raise FileExistsError(version)

    monkeypatch.setattr(TableStorage, "put_manifest", always_taken)
    frags = ft.write_fragments(pa.table({"x": pa.array([5], pa.int64())}), uri)
    for attempts in (1, 3, 7):
        puts.clear()
        with pytest.raises(CommitConflictError, match=f"after {attempts} commit attempts"):
            ft.Dataset.commit(uri, ft.Append(frags), read_version=1, max_retries=attempts)
        assert puts == [2] * attempts
    puts.clear()
    with pytest.raises(CommitConflictError):  # the default number of attempts, no sleeping
        commit_operation(
            TableStorage(uri), ft.Append(frags), read_version=1, config=CommitConfig(backoff_base=0)
        )
    assert len(puts) == 20
    puts.clear()
    with pytest.raises(CommitConflictError, match="timed out"):
        ft.Dataset.commit(uri, ft.Append(frags), read_version=1, max_retries=10**6, timeout=0.05)
    assert 1 <= len(puts) < 10**6
    monkeypatch.undo()
    assert ft.dataset(uri).version == 1


# -- scenario 10: damaged manifests --------------------------------------------------------


def _manifest_path(uri: str, version: int) -> Path:
    return Path(uri) / manifest_name(version)


def _two_versions(tmp_path: Path) -> str:
    uri = _table(tmp_path)
    ft.write_dataset(pa.table({"x": pa.array([4], pa.int64())}), uri, mode="append")
    return uri


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (lambda b: b[: len(b) // 2], TruncatedFileError),
        (lambda b: b[:-1], TruncatedFileError),
        (lambda b: b[:3], TruncatedFileError),
        (lambda b: b"", TruncatedFileError),
        (lambda b: b[:40] + bytes([b[40] ^ 0xFF]) + b[41:], ChecksumError),
        (lambda b: b"XXXX" + b[4:], InvalidFileError),
        (lambda b: b + b"junk", InvalidFileError),
    ],
)
def test_torn_or_corrupt_latest_manifest_is_a_loud_typed_error(
    tmp_path: Path, damage: object, error: type[Exception]
) -> None:
    uri = _two_versions(tmp_path)
    path = _manifest_path(uri, 2)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(error):
        ft.dataset(uri)  # never silently version 1
    with pytest.raises(error):
        ft.write_dataset(pa.table({"x": pa.array([9], pa.int64())}), uri, mode="append")
    assert ft.dataset(uri, version=1).count_rows() == 3
    assert TableStorage(uri).versions() == [1, 2]  # nothing committed


@settings(max_examples=examples(150))
@given(position=st.integers(min_value=0, max_value=10**6), value=st.integers(1, 255))
def test_any_single_byte_change_of_a_manifest_is_detected(
    tmp_path_factory: pytest.TempPathFactory, position: int, value: int
) -> None:
    uri = str(tmp_path_factory.getbasetemp() / "fuzz-manifest")
    if not Path(uri).exists():
        ft.write_dataset(pa.table({"x": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}), uri)
        (Path(uri) / "pristine").write_bytes(_manifest_path(uri, 1).read_bytes())
    data = bytearray((Path(uri) / "pristine").read_bytes())
    data[position % len(data)] ^= value
    _manifest_path(uri, 1).write_bytes(bytes(data))
    with pytest.raises(InvalidFileError):
        ft.dataset(uri)


def test_unknown_reader_flag_refuses_to_read(tmp_path: Path) -> None:
    uri = _table(tmp_path)
    manifest = ft.dataset(uri).manifest
    manifest.reader_feature_flags |= 1 << 20
    _manifest_path(uri, 1).write_bytes(encode_manifest(manifest))
    with pytest.raises(UnsupportedVersionError, match="reader feature"):
        ft.dataset(uri)


def test_unknown_writer_flag_refuses_to_write_and_commits_nothing(tmp_path: Path) -> None:
    uri = _table(tmp_path)
    manifest = ft.dataset(uri).manifest
    manifest.writer_feature_flags |= 1 << 33
    _manifest_path(uri, 1).write_bytes(encode_manifest(manifest))
    assert ft.dataset(uri).count_rows() == 3  # reading is fine
    with pytest.raises(UnsupportedVersionError, match="writer feature"):
        ft.write_dataset(pa.table({"x": pa.array([4], pa.int64())}), uri, mode="append")
    frags = ft.write_fragments(pa.table({"x": pa.array([4], pa.int64())}), uri)
    with pytest.raises(UnsupportedVersionError):
        ft.Dataset.commit(uri, ft.Append(frags), read_version=1)
    assert TableStorage(uri).versions() == [1]


# -- scenario 13: bad input ----------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        pa.table({"x": pa.array([1], pa.int32())}),  # other type
        pa.table({"y": pa.array([1], pa.int64())}),  # other name
        pa.table({"x": pa.array([1], pa.int64()), "extra": [1]}),  # extra column
        pa.table({"x": pa.array(["1"])}),  # string
    ],
)
def test_schema_mismatch_on_append_commits_and_writes_nothing(
    tmp_path: Path, data: pa.Table
) -> None:
    uri = _table(tmp_path)
    before = _files(uri)
    with pytest.raises(SchemaMismatchError):
        ft.write_dataset(data, uri, mode="append")
    with pytest.raises(SchemaMismatchError):
        ft.write_fragments(data, uri)
    assert _files(uri) == before


def test_misuse_gives_typed_errors(tmp_path: Path) -> None:
    uri = _table(tmp_path)
    with pytest.raises(DatasetError, match="already exists"):
        ft.write_dataset(pa.table({"x": pa.array([1], pa.int64())}), uri)
    with pytest.raises(DatasetError, match="unknown mode"):
        ft.write_dataset(pa.table({"x": [1]}), uri, mode="upsert")  # type: ignore[arg-type]
    with pytest.raises(DatasetError, match="does not exist"):
        ft.dataset(uri, version=9)
    with pytest.raises(DatasetError, match="no tag"):
        ft.dataset(uri, tag="nope")
    with pytest.raises(DatasetError, match="not a Fermion table"):
        ft.dataset(str(tmp_path / "empty"))
    with pytest.raises(DatasetError, match="no table"):
        ft.Dataset.commit(
            str(tmp_path / "none"),
            ft.Append(ft.write_fragments(pa.table({"x": [1]}), str(tmp_path / "none"))),
        )
    with pytest.raises(DatasetError, match="does not exist"):
        ft.Dataset.commit(uri, ft.Restore(1), read_version=5)
    with pytest.raises(InvalidArgumentError):
        ft.Dataset.commit(uri, ft.Append(()), read_version=1)
    assert TableStorage(uri).versions() == [1]


def test_corrupt_deletion_file_is_a_typed_error(tmp_path: Path) -> None:
    import pyarrow.compute as pc

    uri = _table(tmp_path)
    ds = ft.dataset(uri)
    ds.delete(pc.field("x") == 2)
    (deletion,) = list((Path(uri) / "_deletions").iterdir())
    deletion.write_bytes(deletion.read_bytes()[:10])
    with pytest.raises(InvalidFileError):
        ft.dataset(uri).to_table()
    assert ft.dataset(uri).count_rows() == 2  # the manifest alone still answers


@pytest.mark.parametrize("landed", [False, True])
def test_a_compaction_that_fails_in_its_commit_leaves_only_referenced_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, landed: bool
) -> None:
    """``compact_files`` removes what a failed round wrote, and only that: when the commit
    landed before the failure (its caller saw an error all the same), the files the new
    version reads stay."""
    # Dataset.compact_files runs its rounds in fermion.table.dataset_maintenance
    dataset_module = sys.modules["fermion.table.dataset_maintenance"]
    real_commit = dataset_module.commit_rewrite

    def failing_commit(*args: Any, **kwargs: Any) -> Any:
        if landed:
            real_commit(*args, **kwargs)
        raise CommitConflictError("injected: the commit's outcome is unknown to its caller")

    uri = str(tmp_path / "t")
    ds = ft.write_dataset(pa.table({"x": pa.array(range(6), pa.int64())}), uri, max_rows_per_file=2)
    monkeypatch.setattr(dataset_module, "commit_rewrite", failing_commit)
    with pytest.raises(CommitConflictError, match="injected"):
        ds.compact_files(target_rows_per_fragment=10)
    monkeypatch.undo()
    latest = ft.dataset(uri)
    assert latest.version == (2 if landed else 1)
    assert sorted(latest.to_table()["x"].to_pylist()) == list(range(6))
    referenced = {d.path for f in latest.fragments for d in f.files} | {
        d.path for f in ft.dataset(uri, version=1).fragments for d in f.files
    }
    data = tmp_path / "t" / "data"
    on_disk = {str(p.relative_to(tmp_path / "t")) for p in data.rglob("*") if p.is_file()}
    assert on_disk == referenced
    assert len(referenced) == (4 if landed else 3)
