"""The S3 store against a real S3-compatible server (moto, on 127.0.0.1): primitives, the
conditional create, its race, multipart writes and coalesced ranged reads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import fsspec
import numpy as np
import pyarrow as pa
import pytest
import s3fs
from botocore.exceptions import ClientError

import fermion
from fermion.io import FsspecStore, LocalStore, MemoryStore, S3Store, open_source, open_store
from fermion.io import store as store_module
from fermion.io.store import S3_CONFLICT_RETRIES
from tests.support.s3count import CountingS3FileSystem
from tests.support.s3server import S3Server


def _store(server: S3Server, bucket: str) -> tuple[S3Store, str]:
    store, root = open_store((server.filesystem(), f"{bucket}/t"))
    assert isinstance(store, S3Store)
    return store, root


def test_open_store_picks_s3_for_urls_and_s3fs_filesystems(
    s3_bucket: str, s3_env: S3Server
) -> None:
    store, root = open_store(f"s3://{s3_bucket}/t/")
    assert isinstance(store, S3Store) and store.supports_put_if_absent
    assert (root, store.uri(root)) == (f"{s3_bucket}/t", f"s3://{s3_bucket}/t")
    assert isinstance(open_store((s3_env.filesystem(), f"{s3_bucket}/t"))[0], S3Store)
    assert isinstance(open_store("memory://x/y")[0], MemoryStore)
    assert isinstance(open_store((fsspec.filesystem("file"), "/tmp/x"))[0], LocalStore)
    other = open_store((fsspec.filesystem("http"), "http://127.0.0.1/x"))
    assert type(other[0]) is FsspecStore and not other[0].supports_put_if_absent


def test_store_primitives(s3_env: S3Server, s3_bucket: str) -> None:
    store, root = _store(s3_env, s3_bucket)
    path = store.join(root, "a/b.bin")
    assert store.relative(root, path) == "a/b.bin"
    assert not store.exists(path) and store.listdir(store.join(root, "a")) == []
    store.makedirs(store.join(root, "a"))  # a no-op on object stores
    store.put_if_absent(path, b"one")
    assert store.exists(path) and store.read(path) == b"one" and store.size(path) == 3
    assert store.modified(path) > 0
    store.write(store.join(root, "a/c.bin"), b"plain")
    store.copy(path, store.join(root, "z/copy.bin"))
    assert sorted(store.listdir(store.join(root, "a"))) == ["b.bin", "c.bin"]
    assert sorted(store.relative(root, p) for p in store.walk(root)) == [
        "a/b.bin",
        "a/c.bin",
        "z/copy.bin",
    ]
    store.delete(store.join(root, "a/c.bin"))
    store.delete(store.join(root, "a/never-there"))  # missing: not an error
    assert store.listdir(store.join(root, "a")) == ["b.bin"]
    with pytest.raises(FileNotFoundError):
        store.read(store.join(root, "missing"))


def test_second_create_fails_and_the_first_object_is_intact(
    s3_env: S3Server, s3_bucket: str
) -> None:
    store, root = _store(s3_env, s3_bucket)
    path = store.join(root, "_versions/1.manifest")
    store.put_if_absent(path, b"first")
    for attempt in (b"second", b"first", b""):
        with pytest.raises(FileExistsError):
            store.put_if_absent(path, attempt)
    assert store.read(path) == b"first"
    # s3fs's own exclusive create sends the same condition, and agrees
    fs = s3_env.filesystem()
    with pytest.raises(FileExistsError):
        fs.pipe_file(path, b"third", mode="create")
    assert store.read(path) == b"first"


def test_listing_sees_objects_another_client_wrote_after_a_listing(
    s3_env: S3Server, s3_bucket: str
) -> None:
    store, root = _store(s3_env, s3_bucket)
    versions = store.join(root, "_versions")
    store.put_if_absent(store.join(versions, "1.manifest"), b"1")
    assert store.listdir(versions) == ["1.manifest"]  # now in s3fs's listing cache
    other, _ = _store(s3_env, s3_bucket)
    other.put_if_absent(store.join(versions, "2.manifest"), b"2")
    assert sorted(store.listdir(versions)) == ["1.manifest", "2.manifest"]
    assert store.exists(store.join(versions, "2.manifest"))


def test_put_if_absent_race_between_threads_has_exactly_one_winner(
    s3_env: S3Server, s3_bucket: str
) -> None:
    threads = 8
    stores = [_store(s3_env, s3_bucket)[0] for _ in range(threads)]  # one client each
    for round_ in range(3):
        path = f"{s3_bucket}/race/{round_}"
        barrier = threading.Barrier(threads)

        def claim(i: int, path: str = path, barrier: threading.Barrier = barrier) -> bool:
            barrier.wait()
            try:
                stores[i].put_if_absent(path, f"writer-{i}".encode())
                return True
            except FileExistsError:
                return False

        with ThreadPoolExecutor(threads) as pool:
            won = list(pool.map(claim, range(threads)))
        assert won.count(True) == 1, won
        assert stores[0].read(path) == f"writer-{won.index(True)}".encode()


def _client_error(code: str, status: int) -> ClientError:
    response = {
        "Error": {"Code": code, "Message": "m"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, "PutObject")  # type: ignore[arg-type]


def test_conflict_answers_are_retried_then_taken_or_unknown(
    s3_env: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # moto never answers 409 ConditionalRequestConflict (S3 does while another conditional
    # write to the key is in flight), so these answers are built by hand and raised by a
    # stand-in for the client call; the real 412 is tested above against the server
    store, root = _store(s3_env, s3_bucket)
    path = store.join(root, "x")
    monkeypatch.setattr(store_module, "S3_CONFLICT_BACKOFF", 0.0)
    answers: list[ClientError | None] = []
    calls: list[str] = []

    def scripted_call(method: str, **kwargs: object) -> None:
        calls.append(method)
        answer = answers.pop(0)
        if answer is not None:
            raise answer

    monkeypatch.setattr(store.fs, "call_s3", scripted_call)
    answers[:] = [_client_error("ConditionalRequestConflict", 409), None]
    store.put_if_absent(path, b"x")  # the other write failed: the retry creates the key
    assert calls == ["put_object", "put_object"]
    answers[:] = [_client_error("ConditionalRequestConflict", 409)] * 2
    answers.append(_client_error("PreconditionFailed", 412))
    with pytest.raises(FileExistsError):  # the other write landed
        store.put_if_absent(path, b"x")
    answers[:] = [_client_error("ConditionalRequestConflict", 409)] * (S3_CONFLICT_RETRIES + 1)
    with pytest.raises(OSError, match="outcome unknown") as unknown:
        store.put_if_absent(path, b"x")
    assert not isinstance(unknown.value, FileExistsError) and answers == []
    answers[:] = [_client_error("AccessDenied", 403)]
    with pytest.raises(ClientError, match="AccessDenied"):
        store.put_if_absent(path, b"x")


def test_put_into_a_missing_bucket_is_not_reported_as_taken(s3_env: S3Server) -> None:
    store, _ = open_store((s3_env.filesystem(), "no-such-bucket-fermion/t"))
    with pytest.raises(OSError) as info:
        store.put_if_absent("no-such-bucket-fermion/t/x", b"x")
    assert not isinstance(info.value, FileExistsError)


def _incompressible(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({"a": rng.integers(0, 2**62, rows), "b": rng.integers(0, 2**62, rows)})


def test_big_fragment_goes_out_multipart_small_object_in_one_put(
    s3_env: S3Server, s3_bucket: str
) -> None:
    block = 5 << 20  # S3's smallest part size
    fs = CountingS3FileSystem(
        **s3_env.storage_options(), default_block_size=block, skip_instance_cache=True
    )
    big = _incompressible(1_000_000)  # 16 MB of random int64
    fermion.write_table(big, (fs, f"{s3_bucket}/big.fermion"))
    size = fs.size(f"{s3_bucket}/big.fermion")
    assert size > 3 * block
    assert fs.counts["create_multipart_upload"] == 1 and fs.counts["put_object"] == 0
    assert fs.counts["upload_part"] >= 2  # one part per flush of the sink, each >= block
    assert fs.counts["complete_multipart_upload"] == 1
    assert fermion.read_table((fs, f"{s3_bucket}/big.fermion")).equals(big)
    fs.reset()
    fermion.write_table(_incompressible(1000), (fs, f"{s3_bucket}/small.fermion"))
    assert fs.counts["put_object"] == 1
    assert fs.counts["create_multipart_upload"] == fs.counts["upload_part"] == 0


def test_ranged_reads_are_coalesced_into_few_gets(s3_env: S3Server, s3_bucket: str) -> None:
    fs = CountingS3FileSystem(**s3_env.storage_options(), skip_instance_cache=True)
    path = f"{s3_bucket}/wide.fermion"
    rng = np.random.default_rng(3)
    wide = pa.table({f"c{i}": rng.integers(0, 2**62, 2000) for i in range(200)})
    fermion.write_table(wide, (fs, path), max_stripe_rows=500)
    pages = 2 * 4  # 2 columns x 4 stripes, plus the metadata pieces
    fs.reset()
    source = open_source((fs, path))
    got = fermion.FileReader(source).read(columns=["c3", "c150"])
    assert got.equals(wide.select(["c3", "c150"]))
    # every request the reader counts is one GET on the wire; holes under the default
    # coalescing gap (1 MiB) are read through, so the 4 stripes' pages take few GETs
    assert fs.counts["get_object"] == source.stats.requests < pages
    assert fs.bytes_read == source.stats.bytes_read
    # with a small gap (and a small speculative tail read at open: 1 MiB by default) the
    # same read fetches little more than it needs, still in few GETs
    fs.reset()
    source = open_source((fs, path))
    reader = fermion.FileReader(source, coalesce_gap=16 << 10, prefetch_bytes=64 << 10)
    got = reader.read(columns=["c3", "c150"])
    assert got.equals(wide.select(["c3", "c150"]))
    assert fs.counts["get_object"] == source.stats.requests <= pages + 4
    assert fs.bytes_read == source.stats.bytes_read < fs.size(path) // 10


def test_fsspec_source_read_ranges_on_s3_matches_local_bytes(
    s3_env: S3Server, s3_bucket: str
) -> None:
    fs = CountingS3FileSystem(**s3_env.storage_options(), skip_instance_cache=True)
    data = bytes(range(256)) * 400
    fs.pipe_file(f"{s3_bucket}/blob", data)
    source = open_source((fs, f"{s3_bucket}/blob"))
    fs.reset()
    ranges = [(0, 10), (5, 20), (50_000, 100), (90_000, 2_400), (20, 1)]
    views = source.read_ranges(ranges, max_gap=64)
    assert [bytes(v) for v in views] == [data[o : o + n] for o, n in ranges]
    assert fs.counts["get_object"] == source.stats.requests == 3
    assert fs.bytes_read == source.stats.bytes_read == 25 + 100 + 2_400
    with pytest.raises(fermion.TruncatedFileError):
        source.read_ranges([(0, 10), (len(data) - 5, 10)], max_gap=0)


def test_endpoint_from_client_kwargs_or_environment_reaches_the_server(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in s3_server.env():
        monkeypatch.delenv(name, raising=False)
    bucket = s3_server.create_bucket()
    options = s3_server.storage_options()
    endpoint = options.pop("endpoint_url")
    options["client_kwargs"] = {**options["client_kwargs"], "endpoint_url": endpoint}
    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    ds = fermion.write_dataset(pa.table({"x": [1, 2]}), (fs, f"{bucket}/t"))
    assert isinstance(ds.storage.store, S3Store) and ds.uri == f"s3://{bucket}/t"
    # the same table by URL, endpoint and credentials from boto's environment variables
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    fermion.write_dataset(pa.table({"x": [3]}), f"s3://{bucket}/t", mode="append")
    assert sorted(fermion.dataset((fs, f"{bucket}/t")).to_table().column("x").to_pylist()) == [
        1,
        2,
        3,
    ]
