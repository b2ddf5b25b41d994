"""Reliability scenarios 1–6 of docs/TABLE_FORMAT.md: real processes racing on a real table
directory.

Scenarios 1, 2 and 4 also run with every commit going through the PostgreSQL external
manifest store (a real server, tests/support/postgres.py) instead of the directory's own
put-if-absent: ``via="postgres"``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion.table as ft
from fermion.errors import CommitConflictError
from fermion.io.atomic import is_temp_name
from fermion.table.manifest_store import PostgresManifestStore, is_staging_path
from fermion.table.storage import manifest_name
from fermion.table.tasks import STATS_INDEX_NAME
from tests.table.row_id_support import write_moved_rows

Runner = Callable[..., list[tuple[str, Any]]]

WORKERS = 8
COMMITS = 25
ROWS_PER_COMMIT = 3


VIAS = ["own", "postgres"]  # how commits claim a version: put-if-absent, or the external store


def _store_for(via: str, request: pytest.FixtureRequest) -> str | None:
    """``None`` (the directory's own put-if-absent) or the URL of a fresh PostgreSQL store."""
    return None if via == "own" else str(request.getfixturevalue("postgres_dsn"))


def _rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "r10": pa.array([i % 10 for i in ids], pa.int32()),
            "r50": pa.array([i % 50 for i in ids], pa.int32()),
        }
    )


def _append_many(
    uri: str, worker: int, ms: str | None = None, commits: int = COMMITS
) -> dict[str, float]:
    attempts = 0
    started = time.perf_counter()
    for commit in range(commits):
        base = (worker * commits + commit) * ROWS_PER_COMMIT
        ids = list(range(base, base + ROWS_PER_COMMIT))
        ds = ft.write_dataset(_rows(ids), uri, mode="append", manifest_store=ms)
        assert ds.last_commit is not None
        attempts += ds.last_commit.attempts
    return {"attempts": attempts, "seconds": time.perf_counter() - started}


@pytest.mark.parametrize(("round_", "via"), [(1, "own"), (2, "own"), (1, "postgres")])
def test_concurrent_appenders_lose_and_duplicate_nothing(
    tmp_path: Path, processes: Runner, round_: int, via: str, request: pytest.FixtureRequest
) -> None:
    uri = str(tmp_path / "t")
    ms = _store_for(via, request)
    ft.write_dataset(_rows([]), uri, manifest_store=ms)
    started = time.perf_counter()
    results = processes(_append_many, [(uri, w, ms) for w in range(WORKERS)])
    elapsed = time.perf_counter() - started
    assert all(status == "ok" for status, _ in results), results
    ds = ft.dataset(uri, manifest_store=ms)
    total = WORKERS * COMMITS
    assert ds.storage.versions() == list(range(1, total + 2))  # contiguous, nothing skipped
    ids = ds.to_table(["id"]).column("id").to_numpy()
    assert len(ids) == total * ROWS_PER_COMMIT
    assert np.array_equal(np.sort(ids), np.arange(total * ROWS_PER_COMMIT))  # no loss, no dup
    # every data file is referenced by exactly one fragment
    paths = [f.files[0].path for f in ds.fragments]
    assert len(paths) == len(set(paths)) == total
    on_disk = [p.relative_to(uri).as_posix() for p in Path(uri).glob("data/**/*") if p.is_file()]
    assert sorted(on_disk) == sorted(paths)
    leftovers = [
        n for d in ("_versions", "_transactions", "data") for n in os.listdir(Path(uri) / d)
    ]
    assert not [n for n in leftovers if is_temp_name(n)]
    # each version's transaction file names the uuid recorded in the manifest
    for v in (2, total // 2, total + 1):
        manifest = ds.checkout(v).manifest
        assert manifest.transaction_uuid in manifest.transaction_file
    retries = sum(r["attempts"] for _, r in results) - total
    if ms is not None:
        store = PostgresManifestStore(ms)
        assert store.latest_version(uri) == total + 1
        for v in (1, total // 2, total + 1):  # every commit finished: final paths, not staged
            assert store.get(uri, v) == str(Path(uri) / manifest_name(v))
        # one staged manifest per put attempt (the initial write's included), none lost
        staged = [n for n in os.listdir(Path(uri) / "_versions") if is_staging_path(n)]
        assert len(staged) == total + retries + 1
    print(
        f"\n{via} round {round_}: {WORKERS} procs x {COMMITS} commits in {elapsed:.2f}s = "
        f"{total / elapsed:.1f} commits/s, {retries} retries"
    )


def _claim_version_two(uri: str, worker: int, ms: str | None = None) -> str:
    """Build a real version-2 manifest and race for the one put of version 2."""
    from fermion.table.codec import encode_manifest
    from fermion.table.transition import apply_operation
    from fermion.table.versions import load_manifest

    storage = ft.dataset(uri, manifest_store=ms).storage
    op = ft.Append(ft.write_fragments(_rows([1000 + worker]), uri))
    manifest = apply_operation(
        load_manifest(storage, 1), op, version=2, transaction_file=f"1-{worker}.txn",
        transaction_uuid=f"worker-{worker}", timestamp_us=0,
    )  # fmt: skip
    try:
        storage.put_manifest(2, encode_manifest(manifest))
        return f"worker-{worker}"
    except FileExistsError:
        return "lost"


@pytest.mark.parametrize("via", VIAS)
def test_same_version_race_has_exactly_one_winner(
    tmp_path: Path, processes: Runner, via: str, request: pytest.FixtureRequest
) -> None:
    ms = _store_for(via, request)
    for round_ in range(3):  # repeat the race on fresh tables
        uri = str(tmp_path / f"t{round_}")
        ft.write_dataset(_rows([0]), uri, manifest_store=ms)
        results = processes(_claim_version_two, [(uri, w, ms) for w in range(WORKERS)])
        winners = [r for _, r in results if r != "lost"]
        assert len(winners) == 1, results
        assert ft.dataset(uri, manifest_store=ms).manifest.transaction_uuid == winners[0]
        assert ft.dataset(uri).manifest.transaction_uuid == winners[0]  # finalised on disk


def _append_once_no_retry(uri: str, worker: int) -> str:
    frags = ft.write_fragments(_rows([1000 + worker]), uri)
    try:
        return str(ft.Dataset.commit(uri, ft.Append(frags), read_version=1, max_retries=1).version)
    except CommitConflictError:
        return "lost"


def test_single_attempt_appenders_never_share_a_version(tmp_path: Path, processes: Runner) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows([0]), uri)
    results = [r for _, r in processes(_append_once_no_retry, [(uri, w) for w in range(WORKERS)])]
    won = [int(r) for r in results if r != "lost"]
    assert len(won) == len(set(won)) >= 1
    ds = ft.dataset(uri)
    assert sorted(won) == list(range(2, ds.version + 1))
    assert ds.count_rows() == 1 + len(won)


# -- scenario 3: concurrent deletes in one fragment ------------------------------------------------


def _delete_residue(uri: str, residue: int) -> dict[str, int]:
    # every worker reads version 1, so all but the first to commit must rebase, however
    # the processes happen to be scheduled (reading the latest version let a loaded machine
    # run them one after another, and then none rebased)
    ds = ft.dataset(uri, version=1)
    ds.delete(pc.field("r10") == residue)
    assert ds.last_commit is not None
    return {"rebased": ds.last_commit.rebased, "replanned": ds.last_commit.replanned}


def test_concurrent_disjoint_deletes_in_one_fragment_merge_like_a_serial_run(
    tmp_path: Path, processes: Runner
) -> None:
    data = _rows(list(range(2000)))  # one fragment; > ARROW_MAX_ROWS deletions use bitmaps
    uri, serial = str(tmp_path / "t"), str(tmp_path / "serial")
    ft.write_dataset(data, uri)
    ft.write_dataset(data, serial)
    residues = list(range(WORKERS))
    results = processes(_delete_residue, [(uri, r) for r in residues])
    assert all(s == "ok" for s, _ in results), results
    for r in residues:
        ft.dataset(serial).delete(pc.field("r10") == r)
    got, want = ft.dataset(uri), ft.dataset(serial)
    assert got.version == want.version == WORKERS + 1
    assert got.to_table().sort_by("id").equals(want.to_table().sort_by("id"))
    assert len(got.fragments) == 1
    rebased = [r["rebased"] for _, r in results]
    assert sum(1 for n in rebased if n == 0) <= 1, results  # only the first commit did not merge
    assert sum(1 for n in rebased if n > 0) >= WORKERS - 1, results


def _commit_overlapping_delete(uri: str, worker: int) -> str:
    ds = ft.dataset(uri, version=1)
    ids = [0, 1, 2, 100 + worker]  # rows 0-2 are deleted by everybody
    plan = ft.dataset(uri, version=1).scanner([], pc.field("id").isin(ids), with_row_offsets=True)
    offsets = [int(o) for _, t in plan.to_tables() for o in t.column("_rowoffset").to_pylist()]
    from pyroaring import BitMap

    from fermion.table.deletions import write_deletion_file

    fragment = ft.FragmentMetadata()
    fragment.CopyFrom(ds.manifest.fragments[0])
    fragment.deletion_file.CopyFrom(
        write_deletion_file(ds.storage, fragment.id, 1, BitMap(offsets))
    )
    try:
        ft.Dataset.commit(uri, ft.Delete((fragment,)), read_version=1)
        return "won"
    except CommitConflictError:
        return "retryable"


def test_overlapping_deletes_give_one_winner_and_retryable_errors(
    tmp_path: Path, processes: Runner
) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(list(range(200))), uri)
    results = processes(_commit_overlapping_delete, [(uri, w) for w in range(4)])
    outcomes = sorted(r for _, r in results)
    assert outcomes == ["retryable", "retryable", "retryable", "won"], results
    assert ft.dataset(uri).count_rows() == 200 - 4


# -- scenarios 4 and 5: compaction against deletes and appends -------------------------------------


def _compact_loop(uri: str, rounds: int, ms: str | None) -> int:
    done = 0
    for _ in range(rounds):
        ds = ft.dataset(uri, manifest_store=ms)
        done += ds.compact_files(target_rows_per_fragment=400)["fragments_removed"]
    return done


def _delete_loop(uri: str, residues: list[int], ms: str | None) -> int:
    for r in residues:
        ft.dataset(uri, manifest_store=ms).delete((pc.field("r50") == r) & (pc.field("id") < 1000))
    return len(residues)


def _append_loop(uri: str, base: int, ms: str | None) -> int:
    for i in range(10):
        start = base + i * 10
        rows = _rows(list(range(start, start + 10)))
        ft.write_dataset(rows, uri, mode="append", manifest_store=ms)
    return 10


def _maintain(uri: str, kind: str, arg: Any, ms: str | None = None) -> int:
    jobs = {"c": _compact_loop, "d": _delete_loop, "a": _append_loop, "s": _rebuild_loop}
    return int(jobs[kind](uri, arg, ms))


@pytest.mark.parametrize("via", VIAS)
def test_compaction_racing_deletes_and_appends_never_resurrects_rows(
    tmp_path: Path, processes: Runner, via: str, request: pytest.FixtureRequest
) -> None:
    uri = str(tmp_path / "t")
    ms = _store_for(via, request)
    ft.write_dataset(_rows(list(range(1000))), uri, max_rows_per_file=50, manifest_store=ms)
    deleters = [list(range(k, 20, 4)) for k in range(4)]
    jobs = [(uri, "c", 6), (uri, "c", 6), (uri, "a", 5000), *[(uri, "d", d) for d in deleters]]
    results = processes(_maintain, [(*job, ms) for job in jobs])
    assert all(s == "ok" for s, _ in results), results
    ds = ft.dataset(uri, manifest_store=ms)
    got = np.sort(ds.to_table(["id"]).column("id").to_numpy())
    expect = np.array(
        [i for i in [*range(1000), *range(5000, 5100)] if i >= 1000 or i % 50 >= 20], np.int64
    )
    assert np.array_equal(got, expect)
    assert ds.storage.versions() == list(range(1, ds.version + 1))
    if ms is not None:
        assert PostgresManifestStore(ms).latest_version(uri) == ds.version


def test_compaction_planned_before_a_delete_is_retryable_not_resurrecting(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_rows(list(range(100))), uri, max_rows_per_file=10)
    from fermion.table.operations import Rewrite, RewriteGroup

    old = ds.fragments[:3]
    merged = ds.to_table(columns=[*ds.schema.names, "_rowid"], filter=pc.field("id") < 30)
    rewrite = Rewrite(
        (RewriteGroup(tuple(f.id for f in old), tuple(write_moved_rows(merged, uri))),)
    )
    ft.dataset(uri).delete(pc.field("id") == 5)  # version 2 touches fragment 0
    with pytest.raises(CommitConflictError):
        ft.Dataset.commit(uri, rewrite, read_version=1)
    assert 5 not in ft.dataset(uri).to_table().column("id").to_pylist()
    # the same compaction against an append-only race commits
    ds = ft.dataset(uri)
    old = ds.fragments[3:6]
    merged = ds.to_table(
        columns=[*ds.schema.names, "_rowid"], filter=(pc.field("id") >= 30) & (pc.field("id") < 60)
    )
    rewrite = Rewrite(
        (RewriteGroup(tuple(f.id for f in old), tuple(write_moved_rows(merged, uri))),)
    )
    ft.write_dataset(_rows([1000]), uri, mode="append")
    after = ft.Dataset.commit(uri, rewrite, read_version=ds.version)
    assert sorted(after.to_table().column("id").to_pylist()) == sorted(
        [*range(5), *range(6, 100), 1000]
    )


def _commit_planned_rewrite(uri: str, worker: int) -> str:
    ds = ft.dataset(uri, version=1)
    from fermion.table.operations import Rewrite, RewriteGroup

    old = ds.fragments[: 4 + worker % 2]  # every compaction includes fragments 0-3
    # version 1 wrote ids 0..99 in fragment order: these are the rows of the fragments
    data = ds.take_rowids(list(range(0, 10 * len(old))), columns=[*ds.schema.names, "_rowid"])
    rewrite = Rewrite((RewriteGroup(tuple(f.id for f in old), tuple(write_moved_rows(data, uri))),))
    try:
        ft.Dataset.commit(uri, rewrite, read_version=1)
        return "won"
    except CommitConflictError:
        return "lost"


def test_two_overlapping_compactions_exactly_one_wins(tmp_path: Path, processes: Runner) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(list(range(100))), uri, max_rows_per_file=10)
    results = processes(_commit_planned_rewrite, [(uri, w) for w in range(4)])
    assert sorted(r for _, r in results) == ["lost", "lost", "lost", "won"], results
    ds = ft.dataset(uri)
    assert np.array_equal(np.sort(ds.to_table().column("id").to_numpy()), np.arange(100))


# -- scenario 6: statistics rebuild racing compaction ----------------------------------------------


def _rebuild_loop(uri: str, rounds: int, ms: str | None) -> int:
    for _ in range(rounds):
        ft.dataset(uri, manifest_store=ms).rebuild_stats()
    return rounds


def test_stats_rebuild_racing_compaction_never_points_at_removed_fragments(
    tmp_path: Path, processes: Runner
) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(list(range(600))), uri, max_rows_per_file=20)
    results = processes(
        _maintain,
        [(uri, "s", 5), (uri, "s", 5), (uri, "c", 3)],
    )
    assert all(s == "ok" for s, _ in results), results
    ds = ft.dataset(uri)
    for info in ds.versions():
        manifest = ds.checkout(info.version).manifest
        present = {f.id for f in manifest.fragments}
        for index in manifest.indices:
            assert set(index.fragment_ids) <= present
    assert any(v.operation == "create_index" for v in ds.versions())
    assert STATS_INDEX_NAME == "fermion.stats"
    assert ds.count_rows() == 600


def test_stats_rebuild_planned_before_a_compaction_is_retryable(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(_rows(list(range(100))), uri, max_rows_per_file=10)
    from fermion.table.proto import manifest_pb2 as pb

    index = pb.IndexMetadata(
        uuid="a" * 32, name="idx", kind="zonemap", fragment_ids=[f.id for f in ds.fragments]
    )
    ft.dataset(uri).compact_files(target_rows_per_fragment=100)
    with pytest.raises(CommitConflictError):
        ft.Dataset.commit(uri, ft.CreateIndex(index), read_version=1)
    # an index over fragments a concurrent append did not touch commits fine
    ds = ft.dataset(uri)
    ft.write_dataset(_rows([7]), uri, mode="append")
    index = pb.IndexMetadata(
        uuid="b" * 32, name="idx", kind="zonemap", fragment_ids=[ds.fragments[0].id]
    )
    done = ft.Dataset.commit(uri, ft.CreateIndex(index), read_version=ds.version)
    assert [list(i.fragment_ids) for i in done.manifest.indices] == [[ds.fragments[0].id]]
