"""The table handle (fermion/table/ref.py): what it carries, what it shows, how it travels."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pytest

import fermion.table as ft
from fermion.errors import InvalidArgumentError
from fermion.table.manifest_store import ENV_VAR, ManifestStore, SQLiteManifestStore
from fermion.table.ref import TableRef, is_credential, parse_storage_option, ref_of
from fermion.table.tasks import (
    WritePlan,
    commit_write,
    execute_write,
    plan_compaction,
    plan_delete,
    plan_write,
)

SECRET = "wJalrXUtnFEMI-not-a-real-secret"
KEY_ID = "AKIA-not-a-real-key"


def _dir_options(root: Path) -> dict[str, Any]:
    """fsspec's ``dir`` filesystem over a local directory: no atomic create, reachable
    only with these options."""
    return {"path": str(root), "target_protocol": "file", "target_options": {"auto_mkdir": True}}


def test_repr_json_and_errors_never_show_credentials() -> None:
    options = {
        "key": KEY_ID,
        "secret": SECRET,
        "endpoint_url": "http://minio:9000",
        "client_kwargs": {"region_name": "eu", "aws_session_token": SECRET},
    }
    ref = TableRef("s3://b/t", options, "postgresql://u:" + SECRET + "@db:5432/meta")
    texts = [repr(ref), str(ref), json.dumps(ref.to_dict()), repr([ref])]
    for text in texts:
        assert SECRET not in text and KEY_ID not in text, text
    data = ref.to_dict()
    assert data["storage_options"] == {
        "endpoint_url": "http://minio:9000",
        "client_kwargs": {"region_name": "eu"},
    }
    assert data["manifest_store"] == "postgresql://u@db:5432/meta"
    back = TableRef.from_dict(data).with_storage_options({"key": KEY_ID, "secret": SECRET})
    assert back.storage_options["secret"] == SECRET and back.uri == ref.uri
    dsn = TableRef("/t", manifest_store=f"host=db password={SECRET} dbname=m")
    assert SECRET not in repr(dsn) and SECRET not in json.dumps(dsn.to_dict())


def test_pickle_carries_everything_but_a_live_filesystem(tmp_path: Path) -> None:
    options = _dir_options(tmp_path)
    ref = TableRef("dir://t", options, str(tmp_path / "m.db"))
    back = pickle.loads(pickle.dumps(ref))
    assert back == ref and back.storage_options == options
    assert back.manifest_store == ref.manifest_store
    fs = fsspec.filesystem("memory")
    live = TableRef.of((fs, "/ref-test/t"))
    assert live.filesystem is fs and live.uri == "memory:///ref-test/t"
    assert pickle.loads(pickle.dumps(live)).filesystem is None


def test_open_never_reads_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "m.db")
    monkeypatch.setenv(ENV_VAR, db)
    bare = TableRef("dir://t", _dir_options(tmp_path))
    with pytest.raises(InvalidArgumentError, match="atomic put-if-absent"):
        bare.open()  # a worker gets its store from the ref, or none
    # the driver side (TableRef.of) takes the variable as the default store...
    assert TableRef.of("dir://t", storage_options=_dir_options(tmp_path)).manifest_store == db
    # ... but never for a table whose filesystem has an atomic create
    assert TableRef.of(str(tmp_path / "local")).manifest_store is None


def _execute_in_child(plan_bytes: bytes, out: Any) -> None:
    os.environ.pop(ENV_VAR, None)
    plan = pickle.loads(plan_bytes)
    result = execute_write(plan, pa.table({"x": [1, 2, 3]}))
    out.put(pickle.dumps(result))


def test_a_plan_executes_in_another_process_without_the_environment(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ref = TableRef("dir://t", _dir_options(tmp_path), db)
    plan = plan_write(ref, pa.schema([("x", pa.int64())]))
    assert isinstance(plan, WritePlan) and plan.table.manifest_store == db
    context = multiprocessing.get_context("spawn")  # a fresh interpreter, like an executor
    queue = context.Queue()
    child = context.Process(target=_execute_in_child, args=(pickle.dumps(plan), queue))
    child.start()
    result = pickle.loads(queue.get(timeout=300))
    child.join(timeout=60)
    assert child.exitcode == 0
    summary = commit_write(plan, [result])
    assert summary.version == 1 and SQLiteManifestStore(db).latest_version("dir://t") == 1
    assert ft.dataset(ref).count_rows() == 3


def test_plans_carry_the_ref_and_keep_their_old_json_form(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(pa.table({"x": list(range(6))}), uri, max_rows_per_file=2)
    plan = plan_compaction(uri, target_rows_per_fragment=10)
    assert plan.table == ds.ref and plan.uri == ds.uri
    assert all(t.table == ds.ref for t in plan.tasks)
    assert type(plan).from_json(plan.to_json()) == plan
    old = json.loads(plan.to_json())
    old["uri"] = old.pop("table")["uri"]  # the JSON form before plans carried a TableRef
    for task in old["tasks"]:
        task["uri"] = task.pop("table")["uri"]
    assert type(plan).from_json(json.dumps(old)) == plan
    delete = plan_delete(ds.ref, "x >= 4")
    assert delete.table.uri == ds.uri


def test_entry_points_take_storage_options(tmp_path: Path) -> None:
    options = _dir_options(tmp_path)
    db = str(tmp_path / "m.db")
    ds = ft.write_dataset(
        pa.table({"x": [1]}), "dir://t", storage_options=options, manifest_store=db
    )
    assert ds.version == 1 and SQLiteManifestStore(db).latest_version("dir://t") == 1
    again = ft.dataset("dir://t", storage_options=options, manifest_store=db)
    assert again.count_rows() == 1 and again.ref == ref_of(again.storage)
    assert again.ref.storage_options == options


def test_bad_input_is_a_typed_error() -> None:
    with pytest.raises(InvalidArgumentError):
        TableRef("")
    with pytest.raises(InvalidArgumentError):
        TableRef("/t", storage_options=["key"])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        TableRef.of(42)
    with pytest.raises(InvalidArgumentError):
        parse_storage_option("no-equals-sign")
    with pytest.raises(InvalidArgumentError, match="storage options <bogus_option>"):
        TableRef("dir://t", {"bogus_option": 1}).open()
    assert is_credential("aws_secret_access_key") and not is_credential("endpoint_url")


def test_cli_takes_storage_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fermion.cli.app import main

    options = _dir_options(tmp_path)
    db = str(tmp_path / "m.db")
    ft.write_dataset(pa.table({"x": [1, 2]}), "dir://t", storage_options=options, manifest_store=db)
    argv = ["log", "dir://t", "--json", "--manifest-store", db]
    argv += ["--storage-option", f"path={tmp_path}", "--storage-option", "target_protocol=file"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 2
    assert main(["log", "dir://t", "--storage-option", "nonsense"]) != 0


def test_a_custom_manifest_store_has_no_json_form(tmp_path: Path) -> None:
    class Custom(ManifestStore):
        def put_if_absent(self, base_uri: str, version: int, path: str) -> None: ...
        def put(self, base_uri: str, version: int, path: str) -> None: ...
        def get(self, base_uri: str, version: int) -> str | None: ...
        def latest_version(self, base_uri: str) -> int | None: ...

    ref = TableRef("/t", manifest_store=Custom())
    assert "Custom" in repr(ref)
    with pytest.raises(InvalidArgumentError, match="no JSON form"):
        ref.to_dict()
    sqlite = TableRef("/t", manifest_store=SQLiteManifestStore(str(tmp_path / "m.db")))
    assert TableRef.from_dict(sqlite.to_dict()).manifest_store == f"sqlite://{tmp_path}/m.db"
