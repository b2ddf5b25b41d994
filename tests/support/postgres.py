"""A real PostgreSQL server for tests, on 127.0.0.1, started and stopped by a fixture.

The server binaries come from the ``pgserver`` package of the ``dev`` extra (a wheel that
ships PostgreSQL 16 for Linux and macOS); ``FERMION_TEST_PG_BIN`` may name another ``bin``
directory (e.g. Debian's ``/usr/lib/postgresql/15/bin``). We use only its binaries, not its
``PostgresServer`` class: that one listens on a unix socket with password-less ``trust``
logins, and as root it adds a system user and widens the permissions of every parent folder
of the virtualenv. Here the server

* listens on 127.0.0.1 only, on a free port, with ``scram-sha-256`` password logins (so the
  tests can check that a password never reaches an error message);
* runs as ``nobody`` when the tests run as root (PostgreSQL refuses to run as root), from a
  data directory under the system temp folder that it owns, without fsync; when ``nobody``
  cannot reach the binaries (a checkout under a private home folder), they are copied
  into that folder first (about 27 MB);
* is stopped (``pg_ctl stop -m fast``, then SIGKILL of the postmaster if need be) and its
  folder removed when the fixture ends.

Use it from a ``conftest.py``::

    from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401

``postgres_server`` (session scope) is the running :class:`PostgresServer`;
``postgres_dsn`` (per test) is the URL of a fresh, empty database on it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BIN_ENV_VAR = "FERMION_TEST_PG_BIN"
USER = "fermion"
START_ATTEMPTS = 3


def bin_dir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``."""
    chosen = os.environ.get(BIN_ENV_VAR)
    if chosen:
        return Path(chosen)
    # find_spec, not import: importing pgserver builds its runtime paths (and warns)
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"no PostgreSQL binaries: install the dev extra (pgserver) or set {BIN_ENV_VAR}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _reachable_by_others(folder: Path) -> bool:
    """Whether every parent of ``folder`` (and the folder) lets other users through."""
    return all(
        p.stat().st_mode & stat.S_IXOTH for p in (folder.resolve(), *folder.resolve().parents)
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One PostgreSQL server in a private temp folder (see the module docstring).

    Example::

        with PostgresServer() as server:
            psycopg.connect(server.dsn()).execute("SELECT 1")
    """

    def __init__(self) -> None:
        self.password = secrets.token_urlsafe(16)
        self.port = 0
        self.folder = Path(tempfile.mkdtemp(prefix="fermion-pg-"))
        self.data = self.folder / "data"
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            self._as = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
            os.chown(self.folder, nobody.pw_uid, nobody.pw_gid)
        self.folder.chmod(0o700)

    def _bin(self) -> Path:
        """The binaries, copied where ``nobody`` can run them if it cannot reach them."""
        found = bin_dir()
        if not self._as or _reachable_by_others(found):
            return found
        # keep the wheel's layout: the binaries find their libraries through
        # RPATH $ORIGIN/../../../pgserver.libs
        root = self.folder / "pg"
        copy = root / found.parent.parent.name / found.parent.name
        if not root.exists():
            for part in ("bin", "lib", "share"):
                shutil.copytree(found.parent / part, copy / part, symlinks=True)
            libs = found.parent.parent.parent / "pgserver.libs"
            if libs.is_dir():
                shutil.copytree(libs, root / libs.name, symlinks=True)
            for path in (root, *root.rglob("*")):
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | 0o055)
        return copy / "bin"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self._bin() / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            cwd=self.folder,
            timeout=120,
            check=False,
            **self._as,
        )

    def start(self) -> PostgresServer:
        """initdb, then start the server on a free port of 127.0.0.1."""
        pwfile = self.folder / "pw"
        pwfile.write_text(self.password + "\n")
        if self._as:
            os.chown(pwfile, self._as["user"], self._as["group"])
        init = self._run(
            "initdb", "-D", str(self.data), "-U", USER, "--auth=scram-sha-256",
            f"--pwfile={pwfile}", "--no-locale", "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        pwfile.unlink()
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed: {init.stderr.strip()}")
        for _ in range(START_ATTEMPTS):  # the free port may be taken before the server binds
            self.port = _free_port()
            options = f"-h 127.0.0.1 -p {self.port} -k {self.folder} -F -c max_connections=200"
            started = self._run(
                "pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-l",
                str(self.folder / "log"), "-o", options, "start",
            )  # fmt: skip
            if started.returncode == 0:
                return self
        log = (self.folder / "log").read_text() if (self.folder / "log").exists() else ""
        raise RuntimeError(f"PostgreSQL did not start: {started.stderr.strip()} {log[-2000:]}")

    def stop(self) -> None:
        """Stop the server (fast shutdown, then SIGKILL) and remove its folder."""
        if self.data.exists():
            stopped = self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop")
            pid_file = self.data / "postmaster.pid"
            if stopped.returncode != 0 and pid_file.exists():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
        shutil.rmtree(self.folder, ignore_errors=True)

    def dsn(self, dbname: str = "postgres", *, password: str | None = None) -> str:
        """A ``postgresql://`` URL of a database on this server."""
        secret = self.password if password is None else password
        return f"postgresql://{USER}:{secret}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self) -> str:
        """A fresh empty database; returns its name."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server on 127.0.0.1 for the whole test session."""
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """The URL (with its password) of a fresh, empty database on :func:`postgres_server`."""
    return postgres_server.dsn(postgres_server.create_database())
