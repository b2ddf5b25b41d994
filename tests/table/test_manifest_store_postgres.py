"""The PostgreSQL manifest store on a real server (tests/support/postgres.py): selection by
URL or environment variable, the table API through it, and its failures — each a typed,
one-line error that never shows the password.

The protocol itself (one winner per version across processes, reader repair, the staged
commit on object stores) is tested on both stores in tests/table/test_manifest_store.py.
"""

from __future__ import annotations

import json
import pickle
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import fsspec
import psycopg
import pyarrow as pa
import pytest
from fsspec.implementations.dirfs import DirFileSystem

import fermion.table as ft
from fermion.errors import (
    FermionError,
    InvalidArgumentError,
    ManifestStoreError,
    MissingExtraError,
)
from fermion.table.manifest_store import (
    ENV_VAR,
    POSTGRES_TABLE,
    PostgresManifestStore,
    SQLiteManifestStore,
    open_manifest_store,
)
from fermion.table.storage import TableStorage, manifest_name
from tests.support.postgres import PostgresServer


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nobody listens once the socket is closed


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text, text
    return text


def test_open_manifest_store_by_url_path_and_environment(
    tmp_path: Path, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_manifest_store(postgres_dsn)
    assert isinstance(store, PostgresManifestStore)
    alias = open_manifest_store(postgres_dsn.replace("postgresql://", "postgres://", 1))
    assert isinstance(alias, PostgresManifestStore)
    parts = psycopg.conninfo.conninfo_to_dict(postgres_dsn)
    key_value = " ".join(f"{k}={v}" for k, v in parts.items())
    assert isinstance(open_manifest_store(key_value), PostgresManifestStore)
    db = str(tmp_path / "m.db")
    assert isinstance(open_manifest_store(db), SQLiteManifestStore)
    assert open_manifest_store(store) is store
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert open_manifest_store(None) is None
    monkeypatch.setenv(ENV_VAR, "")
    assert open_manifest_store(None) is None
    monkeypatch.setenv(ENV_VAR, postgres_dsn)
    from_env = open_manifest_store(None)
    assert isinstance(from_env, PostgresManifestStore) and from_env.dsn == postgres_dsn
    for bad in ("", "   ", "mysql://u@h/db", "sqlite://"):
        with pytest.raises(InvalidArgumentError):
            open_manifest_store(bad)


def test_environment_variable_applies_only_to_filesystems_without_an_atomic_create(
    tmp_path: Path, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirfs = DirFileSystem(path=str(tmp_path), fs=fsspec.filesystem("file"))  # no put-if-absent
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(InvalidArgumentError, match=ENV_VAR):
        TableStorage((dirfs, "t"))
    monkeypatch.setenv(ENV_VAR, postgres_dsn)
    assert isinstance(TableStorage((dirfs, "t")).manifest_store, PostgresManifestStore)
    # a local table keeps its own atomic create: its other writers may not have the variable
    assert TableStorage(str(tmp_path / "local")).manifest_store is None
    assert isinstance(
        TableStorage(str(tmp_path / "local"), manifest_store=postgres_dsn).manifest_store,
        PostgresManifestStore,
    )


def test_table_api_commits_through_the_store_given_as_a_url(
    tmp_path: Path, postgres_dsn: str
) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1, 2]}), uri, manifest_store=postgres_dsn)
    ds = ft.write_dataset(pa.table({"x": [3]}), uri, mode="append", manifest_store=postgres_dsn)
    assert ds.version == 2
    store = PostgresManifestStore(postgres_dsn)
    assert store.latest_version(uri) == 2
    assert store.get(uri, 2) == str(Path(uri) / manifest_name(2))  # finalised, not staged
    reread = ft.dataset(uri, manifest_store=postgres_dsn)
    assert sorted(reread.to_table().column("x").to_pylist()) == [1, 2, 3]
    reread.delete("x = 2")  # a Dataset keeps committing through its store
    assert store.latest_version(uri) == 3
    assert ft.dataset(uri).count_rows() == 2  # readers without the store see the same table


def test_repr_and_pickle_carry_no_open_connection_and_no_password(
    tmp_path: Path, postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    store = PostgresManifestStore(postgres_dsn)
    assert postgres_server.password not in repr(store)
    assert f"127.0.0.1:{postgres_server.port}" in repr(store)
    copy = pickle.loads(pickle.dumps(store))  # what a Spark executor receives
    copy.put_if_absent("p", 1, "a")
    assert store.get("p", 1) == "a"


def test_wrong_password_is_one_line_without_the_password(
    postgres_server: PostgresServer,
) -> None:
    wrong = "Wr0ng-" + postgres_server.password[::-1]
    with pytest.raises(ManifestStoreError) as exc:
        PostgresManifestStore(postgres_server.dsn(password=wrong))
    text = _one_line(exc)
    assert "password authentication failed" in text
    assert wrong not in text and postgres_server.password not in text
    assert text.startswith(f"manifest store postgresql://fermion@127.0.0.1:{postgres_server.port}")
    assert exc.value.__cause__ is None and exc.value.__context__ is not None  # suppressed
    assert isinstance(exc.value, FermionError) and isinstance(exc.value, OSError)


def test_unreachable_server_is_one_line_without_the_password() -> None:
    secret = "S3cret-that-must-not-leak"
    port = _closed_port()
    with pytest.raises(ManifestStoreError, match="cannot connect") as exc:
        PostgresManifestStore(f"postgresql://fermion:{secret}@127.0.0.1:{port}/meta")
    text = _one_line(exc)
    assert secret not in text and f"127.0.0.1:{port}" in text
    # the same through the table API: nothing is written
    with pytest.raises(ManifestStoreError) as exc:
        ft.dataset("/nonexistent/t", manifest_store=f"host=127.0.0.1 port={port} password={secret}")
    assert secret not in _one_line(exc)


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://fermion:S3cret-x@127.0.0.1:5432/meta?sslmode",  # a key without a value
        "host=127.0.0.1 password=S3cret-x dbname",  # a key without a value
        "host=127.0.0.1 password='S3cret-x",  # an unterminated quote
    ],
)
def test_malformed_dsn_is_an_invalid_argument_without_the_password(dsn: str) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid PostgreSQL DSN") as exc:
        open_manifest_store(dsn)
    assert "S3cret" not in _one_line(exc)


def test_dsn_rejected_by_the_driver_at_connect_time_hides_the_password() -> None:
    with pytest.raises(ManifestStoreError, match="notaport") as exc:
        open_manifest_store("postgresql://fermion:S3cret-x@127.0.0.1:notaport/meta")
    assert "S3cret" not in _one_line(exc)


def test_server_side_failure_after_connecting_is_a_manifest_store_error(
    postgres_dsn: str,
) -> None:
    store = PostgresManifestStore(postgres_dsn)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {POSTGRES_TABLE}")
    with pytest.raises(ManifestStoreError, match="does not exist") as exc:
        store.latest_version("t")
    assert _one_line(exc)
    PostgresManifestStore(postgres_dsn)  # opening the store again recreates the table
    assert store.latest_version("t") is None


def test_missing_driver_is_a_one_line_hint_and_sqlite_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now fails
    with pytest.raises(MissingExtraError, match=r"pip install 'fermion\[postgres\]'") as exc:
        open_manifest_store("postgresql://u:pw@127.0.0.1:5432/meta")
    assert "pw" not in _one_line(exc).replace("psycopg", "")
    store = open_manifest_store(str(tmp_path / "m.db"))
    assert store is not None
    store.put_if_absent("t", 1, "p")
    assert store.get("t", 1) == "p"


def test_importing_fermion_does_not_import_the_driver() -> None:
    code = "import sys, fermion, fermion.table, fermion.table.manifest_store; "
    code += "print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_table_creation_is_idempotent_when_many_clients_start_at_once(
    postgres_server: PostgresServer,
) -> None:
    """Plain CREATE TABLE IF NOT EXISTS fails here (a unique violation in the catalog) for
    most of the racers; the store serialises its creators."""
    for _ in range(3):  # each round on a fresh database: the creators race for real
        dsn = postgres_server.dsn(postgres_server.create_database())
        barrier = threading.Barrier(6)
        errors: list[BaseException] = []

        def open_store(
            dsn: str = dsn, barrier: threading.Barrier = barrier, errors: list[Any] = errors
        ) -> None:
            barrier.wait()
            try:
                PostgresManifestStore(dsn)
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=open_store) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert errors == []
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE tablename = %s", (POSTGRES_TABLE,)
            ).fetchone()
        assert row == (1,)


def _terminate_backends(dsn: str) -> int:
    """Kill the server sessions of every other connection to the database of ``dsn``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


def test_a_connection_killed_while_idle_is_replaced(postgres_dsn: str) -> None:
    store = PostgresManifestStore(postgres_dsn)
    store.put_if_absent("t", 1, "one")
    assert _terminate_backends(postgres_dsn) == 1  # the store's one cached connection
    assert store.get("t", 1) == "one"  # an idempotent read reconnects and runs again
    store.put("t", 1, "uno")
    assert _terminate_backends(postgres_dsn) == 1
    # an insert is never re-run: its outcome is unknown, which the commit loop resolves
    with pytest.raises(ManifestStoreError):
        store.put_if_absent("t", 2, "two")
    assert store.get("t", 2) is None and store.get("t", 1) == "uno"
    store.put_if_absent("t", 2, "two")  # and the next call has a new connection
    assert store.latest_version("t") == 2
    store.close()
    assert _terminate_backends(postgres_dsn) == 0


def test_cli_reads_through_the_store_and_repairs(
    tmp_path: Path,
    postgres_server: PostgresServer,
    postgres_dsn: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from fermion.cli import main

    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1]}), uri, manifest_store=postgres_dsn)
    ft.write_dataset(pa.table({"x": [2]}), uri, mode="append", manifest_store=postgres_dsn)
    # back to the state a writer killed right after its insert leaves: only a staged manifest
    final = Path(uri) / manifest_name(2)
    staged = f"{final}-{'e' * 32}"
    final.rename(staged)
    store = PostgresManifestStore(postgres_dsn)
    store.put(uri, 2, staged)

    def log(*extra: str) -> tuple[int, list[int], str]:
        code = main(["log", uri, "--json", *extra])
        out, err = capsys.readouterr()
        return code, [json.loads(line)["version"] for line in out.splitlines()], err

    assert log() == (0, [1], "")  # the directory alone: one version behind
    assert log("--manifest-store", postgres_dsn) == (0, [2, 1], "")
    assert store.get(uri, 2) == str(final) and final.exists()  # repaired by the reader
    assert main(["show", uri, "--json", "--manifest-store", postgres_dsn]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 2
    wrong = postgres_server.dsn(password="Not-the-password-42")
    code, versions, err = log("--manifest-store", wrong)
    assert (code, versions) == (1, [])
    assert "password authentication failed" in err and "Not-the-password-42" not in err
    assert len(err.strip().splitlines()) == 1
