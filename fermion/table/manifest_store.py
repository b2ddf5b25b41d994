"""External manifest stores: put-if-absent for object stores that have none.

This is table-layer knowledge (it names manifest paths); the bytes move through the table's
:class:`~fermion.io.store.Store`.

An external manifest store is a small key-value store keyed by ``(base_uri, version)`` that
supports an atomic insert. It supplements, never replaces, the manifests in the table
directory (docs/TABLE_FORMAT.md, "put-if-absent per backend"): a table committed through
it stays a plain directory that readers without the store can open, at worst one version
behind.

Commit (see :func:`commit_external`), for version ``v``:

1. write the manifest to a staging path ``_versions/{v}.manifest-{uuid}`` and sync it and
   its directory (:meth:`~fermion.io.store.Store.sync_directory`; a no-op on object stores);
2. ``store.put_if_absent(base, v, staging)`` — the commit point; ``FileExistsError`` means
   another writer owns ``v``;
3. copy the staging file to ``_versions/{v}.manifest``;
4. ``store.put(base, v, final)`` — point the store at the final path.

A writer that dies after step 2 has committed; readers repair the table (see
:func:`resolve_external`): when the store still names a staging path they redo steps 3–4,
and refuse to load if that fails.

:class:`SQLiteManifestStore` is the embedded default, on a real SQLite database file that
the processes of one host can share. :class:`PostgresManifestStore` keeps the same table on a
PostgreSQL server, for writers on several hosts (a cluster whose object store has no
conditional write). Other stores (DynamoDB, ...) implement the four methods of
:class:`ManifestStore`. :func:`open_manifest_store` turns a setting into a store: a
``postgresql://`` URL, an SQLite file path, or the ``FERMION_MANIFEST_STORE`` environment
variable.

Example:
    >>> import os, tempfile
    >>> store = SQLiteManifestStore(os.path.join(tempfile.mkdtemp(), "m.db"))
    >>> store.put_if_absent("mem://t", 1, "_versions/1.manifest-abc")
    >>> store.put("mem://t", 1, "_versions/1.manifest")
    >>> store.get("mem://t", 1), store.latest_version("mem://t")
    ('_versions/1.manifest', 1)
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import uuid
import weakref
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import closing
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from fermion.errors import DatasetError, InvalidArgumentError, ManifestStoreError
from fermion.extras import require
from fermion.io import failpoints
from fermion.io.store import Store

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "ENV_VAR",
    "ManifestStore",
    "PostgresManifestStore",
    "SQLiteManifestStore",
    "commit_external",
    "finalise",
    "is_staging_path",
    "open_manifest_store",
    "resolve_external",
]

ENV_VAR = "FERMION_MANIFEST_STORE"
"""Environment variable naming the external manifest store (see :func:`open_manifest_store`)."""

POSTGRES_TABLE = "fermion_manifests"
CONNECT_TIMEOUT_DEFAULT = 10.0
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_KEY_VALUE = re.compile(r"\s*[a-z_]+\s*=")  # a libpq key=value DSN, never taken for a file

_STAGING = re.compile(r"\.manifest-[0-9a-f]{32}$")


def is_staging_path(path: str) -> bool:
    """Whether a manifest path is a staging path (``....manifest-{uuid hex}``).

    Example:
        >>> is_staging_path("_versions/3.manifest-" + "0" * 32), is_staging_path("3.manifest")
        (True, False)
    """
    return _STAGING.search(path) is not None


class ManifestStore(ABC):
    """A key-value store of ``(base_uri, version) -> manifest path`` with atomic insert."""

    @abstractmethod
    def put_if_absent(self, base_uri: str, version: int, path: str) -> None:
        """Insert the entry; raise ``FileExistsError`` if ``version`` already has one."""

    @abstractmethod
    def put(self, base_uri: str, version: int, path: str) -> None:
        """Replace the path of an existing entry (used to finalise a staged commit)."""

    @abstractmethod
    def get(self, base_uri: str, version: int) -> str | None:
        """The path stored for ``version``, or ``None``."""

    @abstractmethod
    def latest_version(self, base_uri: str) -> int | None:
        """The highest version stored for ``base_uri``, or ``None``."""


class SQLiteManifestStore(ManifestStore):
    """The embedded default store: one table in a SQLite database file.

    Every call opens its own connection (safe across ``fork`` and threads); the primary key
    makes ``put_if_absent`` atomic across processes.

    Args:
        db_path: Path of the database file; created on first use.
        timeout: Seconds a call waits for a lock held by another process.
    """

    def __init__(self, db_path: str, *, timeout: float = 60.0) -> None:
        self.db_path = db_path
        self.timeout = timeout
        with closing(self._connect()) as conn, conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS manifests ("
                " base_uri TEXT NOT NULL, version INTEGER NOT NULL, path TEXT NOT NULL,"
                " PRIMARY KEY (base_uri, version))"
            )

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.db_path, timeout=self.timeout, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        return conn

    def put_if_absent(self, base_uri: str, version: int, path: str) -> None:
        try:
            with closing(self._connect()) as conn:
                conn.execute(
                    "INSERT INTO manifests (base_uri, version, path) VALUES (?, ?, ?)",
                    (base_uri, version, path),
                )
        except sqlite3.IntegrityError as exc:
            raise FileExistsError(f"{base_uri} version {version}") from exc

    def put(self, base_uri: str, version: int, path: str) -> None:
        with closing(self._connect()) as conn:
            cursor = conn.execute(
                "UPDATE manifests SET path = ? WHERE base_uri = ? AND version = ?",
                (path, base_uri, version),
            )
            if cursor.rowcount != 1:
                raise DatasetError(f"{base_uri}: version {version} is not in the store")

    def get(self, base_uri: str, version: int) -> str | None:
        with closing(self._connect()) as conn:
            row = conn.execute(
                "SELECT path FROM manifests WHERE base_uri = ? AND version = ?",
                (base_uri, version),
            ).fetchone()
        return None if row is None else str(row[0])

    def latest_version(self, base_uri: str) -> int | None:
        with closing(self._connect()) as conn:
            row = conn.execute(
                "SELECT MAX(version) FROM manifests WHERE base_uri = ?", (base_uri,)
            ).fetchone()
        return None if row is None or row[0] is None else int(row[0])


class PostgresManifestStore(ManifestStore):
    """The manifest table on a PostgreSQL server, shared by writers on many hosts.

    Each process keeps one autocommit connection, opened on first use and closed with the
    store (or by :meth:`close`); a forked child opens its own, and a pickled store (a Spark
    executor's) carries only its DSN. A connection that broke while idle is replaced. The
    primary key on ``(base_uri, version)`` makes ``put_if_absent`` atomic; a failed insert
    raises :class:`~fermion.errors.ManifestStoreError`, an ``OSError``, which the commit
    loop treats as an unknown outcome. The table ``fermion_manifests`` is created on first use
    (idempotent, also when several processes start at once). The driver, psycopg 3
    (``pip install 'fermion[postgres]'``), is imported only here.

    Args:
        dsn: A libpq connection string, ``postgresql://user:password@host:port/dbname`` or
            ``host=... dbname=...``. A password may also come from ``PGPASSWORD`` or
            ``~/.pgpass``; it never appears in an error message or ``repr``.
        connect_timeout: Seconds to wait for a connection.

    Raises:
        InvalidArgumentError: The DSN cannot be parsed, or psycopg is not installed.
        ManifestStoreError: The server cannot be reached or refuses the login.

    Example (with a server; ``fermion.dataset`` and ``write_dataset`` also take the URL)::

        store = PostgresManifestStore("postgresql://fermion:secret@db.internal:5432/meta")
        ds = fermion.dataset("s3://bucket/t", manifest_store=store)
    """

    def __init__(self, dsn: str, *, connect_timeout: float = CONNECT_TIMEOUT_DEFAULT) -> None:
        self._setup(dsn, connect_timeout)

        def create(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                # CREATE TABLE IF NOT EXISTS races with itself in PostgreSQL (a unique
                # violation in the catalog); a transaction-level advisory lock serialises
                # the creators.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {POSTGRES_TABLE} ("
                    " base_uri TEXT NOT NULL, version BIGINT NOT NULL, path TEXT NOT NULL,"
                    " PRIMARY KEY (base_uri, version))"
                )

        self._call(create, retry=True)

    def _setup(self, dsn: str, connect_timeout: float) -> None:
        self.dsn = dsn
        self.connect_timeout = connect_timeout
        self._label, self._secret = _describe_dsn(dsn)
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._pid = os.getpid()

    def __getstate__(self) -> dict[str, Any]:
        return {"dsn": self.dsn, "connect_timeout": self.connect_timeout}  # no connection

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["dsn"], state["connect_timeout"])

    def __repr__(self) -> str:
        return f"PostgresManifestStore({self._label!r})"

    def _connection(self) -> tuple[psycopg.Connection[Any], bool]:
        """This process's connection (opened on first use) and whether it was reused."""
        if self._pid != os.getpid():
            # a forked child shares the parent's socket: never use or close that connection
            _INHERITED.append(self._conn)
            self._conn, self._pid = None, os.getpid()
        if self._conn is not None:
            if not self._conn.closed and not self._conn.broken:
                return self._conn, True
            self._conn.close()  # broken: release it before opening the next one
            self._conn = None
        psycopg = _import_psycopg()
        try:
            conn = psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
            )
        except psycopg.Error as exc:
            raise ManifestStoreError(
                f"manifest store {self._label}: cannot connect: {self._clean(exc)}"
            ) from None
        weakref.finalize(self, _close_in, conn, self._pid)
        self._conn = conn
        return conn, False

    def _call(self, fn: Callable[[psycopg.Connection[Any]], _T], *, retry: bool) -> _T:
        """Run ``fn`` on the connection; driver errors become one-line typed errors.

        A connection that broke while idle (server restart, idle timeout) is replaced and
        ``fn`` run again when ``retry`` (idempotent calls only).
        """
        psycopg = _import_psycopg()
        with self._lock:
            for attempt in (1, 2):
                conn, reused = self._connection()
                try:
                    return fn(conn)
                except psycopg.Error as exc:
                    if (
                        retry
                        and reused
                        and attempt == 1
                        and isinstance(exc, psycopg.OperationalError)
                    ):
                        continue
                    raise ManifestStoreError(
                        f"manifest store {self._label}: {self._clean(exc)}"
                    ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _clean(self, exc: BaseException) -> str:
        """The first line of a driver message, with the password (if any) blanked out."""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return text.replace(self._secret, "***") if self._secret else text

    def close(self) -> None:
        """Close this process's connection (the next call opens a new one)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def put_if_absent(self, base_uri: str, version: int, path: str) -> None:
        # never retried here: a failure is an unknown outcome, which the commit loop resolves
        inserted = self._call(
            lambda conn: (
                conn.execute(
                    f"INSERT INTO {POSTGRES_TABLE} (base_uri, version, path) VALUES (%s, %s, %s)"
                    " ON CONFLICT (base_uri, version) DO NOTHING",
                    (base_uri, version, path),
                ).rowcount
            ),
            retry=False,
        )
        if inserted != 1:
            raise FileExistsError(f"{base_uri} version {version}")

    def put(self, base_uri: str, version: int, path: str) -> None:
        updated = self._call(
            lambda conn: (
                conn.execute(
                    f"UPDATE {POSTGRES_TABLE} SET path = %s WHERE base_uri = %s AND version = %s",
                    (path, base_uri, version),
                ).rowcount
            ),
            retry=True,
        )
        if updated != 1:
            raise DatasetError(f"{base_uri}: version {version} is not in the store")

    def get(self, base_uri: str, version: int) -> str | None:
        row = self._call(
            lambda conn: conn.execute(
                f"SELECT path FROM {POSTGRES_TABLE} WHERE base_uri = %s AND version = %s",
                (base_uri, version),
            ).fetchone(),
            retry=True,
        )
        return None if row is None else str(row[0])

    def latest_version(self, base_uri: str) -> int | None:
        row = self._call(
            lambda conn: conn.execute(
                f"SELECT MAX(version) FROM {POSTGRES_TABLE} WHERE base_uri = %s", (base_uri,)
            ).fetchone(),
            retry=True,
        )
        return None if row is None or row[0] is None else int(row[0])


_T = TypeVar("_T")
_INHERITED: list[Any] = []  # connections a forked child got from its parent: kept, never used


def _close_in(conn: Any, pid: int) -> None:
    """Close a store's connection when the store goes away, in the process that opened it."""
    if os.getpid() == pid:
        conn.close()


_LOCK_KEY = zlib.crc32(POSTGRES_TABLE.encode())  # the advisory lock of the table's creation


def _import_psycopg() -> Any:
    """The psycopg module, or a one-line hint to install it (``fermion[postgres]``)."""
    return require("psycopg", "postgres")


def _describe_dsn(dsn: str) -> tuple[str, str | None]:
    """A password-free label of a DSN (``postgresql://user@host:port/dbname``) and its password.

    Example:
        >>> _describe_dsn("postgresql://u:pw@db.example:5433/meta")
        ('postgresql://u@db.example:5433/meta', 'pw')
        >>> _describe_dsn("host=/run/pg dbname=meta user=u")
        ('postgresql://u@/run/pg/meta', None)
    """
    if not isinstance(dsn, str) or not dsn.strip():
        raise InvalidArgumentError("the PostgreSQL manifest store needs a non-empty DSN string")
    conninfo = _import_psycopg().conninfo
    try:
        parts = conninfo.conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - the driver's message may quote the password
        raise InvalidArgumentError(
            "invalid PostgreSQL DSN for the manifest store (not shown: it may hold a password); "
            "expected postgresql://user:password@host:port/dbname or 'host=... dbname=...'"
        ) from None
    host = str(parts.get("host") or parts.get("hostaddr") or "")
    port = f":{parts['port']}" if parts.get("port") else ""
    user = f"{parts['user']}@" if parts.get("user") else ""
    label = f"postgresql://{user}{host}{port}/{parts.get('dbname') or ''}"
    password = parts.get("password")
    return label, (str(password) if password else None)


def open_manifest_store(spec: ManifestStore | str | None) -> ManifestStore | None:
    """The external manifest store a setting names.

    * a :class:`ManifestStore`: itself;
    * ``postgresql://...`` or ``postgres://...`` (a libpq URL), or a libpq ``key=value``
      string (``host=db port=5432 dbname=meta``): a :class:`PostgresManifestStore`;
    * ``sqlite:///path/to/file.db`` or a plain file path: a :class:`SQLiteManifestStore`;
    * ``None``: the store named by the ``FERMION_MANIFEST_STORE`` environment variable (the
      same forms), or ``None`` when it is unset or empty.

    Raises:
        InvalidArgumentError: An empty setting, another URL scheme, or a bad DSN.
        ManifestStoreError: The PostgreSQL server cannot be reached.

    Example:
        >>> import os, tempfile
        >>> db = os.path.join(tempfile.mkdtemp(), "m.db")
        >>> type(open_manifest_store(db)).__name__
        'SQLiteManifestStore'
        >>> open_manifest_store(f"sqlite://{db}").db_path == db
        True
    """
    if spec is None:
        spec = os.environ.get(ENV_VAR) or None
        if spec is None:
            return None
    if isinstance(spec, ManifestStore):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgumentError(
            f"manifest store: expected a postgresql:// URL or an SQLite file path, got {spec!r}"
        )
    scheme = urlsplit(spec).scheme.lower() if "://" in spec else ""
    if scheme in _POSTGRES_SCHEMES or (not scheme and _KEY_VALUE.match(spec)):
        return PostgresManifestStore(spec)
    if scheme == "sqlite":
        path = spec.split("://", 1)[1]
        if not path:
            raise InvalidArgumentError("manifest store: sqlite:// needs a file path")
        return SQLiteManifestStore(path)
    if scheme:
        raise InvalidArgumentError(
            f"manifest store: unsupported scheme {scheme}:// (use postgresql:// or sqlite://)"
        )
    return SQLiteManifestStore(spec)


def commit_external(
    store: ManifestStore,
    files: Store,
    base_uri: str,
    version: int,
    final_path: str,
    data: bytes,
) -> None:
    """Commit manifest bytes for ``version`` through an external store (4 steps above).

    Args:
        store: The external store.
        files: The table's file store (writes the staged manifest, copies it).
        base_uri: The table's identity in the store.
        version: The version to claim.
        final_path: The final manifest path, e.g. ``root/_versions/7.manifest``.
        data: The manifest bytes.

    Raises:
        FileExistsError: Another writer owns ``version``.

    Example:
        >>> import os, tempfile
        >>> from fermion.io.store import LocalStore
        >>> d = tempfile.mkdtemp()
        >>> store = SQLiteManifestStore(os.path.join(d, "m.db"))
        >>> final = os.path.join(d, "1.manifest")
        >>> commit_external(store, LocalStore(), d, 1, final, b"m")
        >>> store.get(d, 1) == final, LocalStore().read(final)
        (True, b'm')
    """
    staging = f"{final_path}-{uuid.uuid4().hex}"
    files.write(staging, data)
    files.sync_directory(os.path.dirname(staging))  # durable before the store names it
    failpoints.hit("after_manifest_staged", staging)
    store.put_if_absent(base_uri, version, staging)  # the commit point
    failpoints.hit("after_store_insert", staging)
    finalise(files, staging, final_path)
    failpoints.hit("after_manifest_copy", staging)
    store.put(base_uri, version, final_path)


def resolve_external(store: ManifestStore, files: Store, base_uri: str, version: int) -> str | None:
    """The final manifest path of ``version``, repairing a half-finished commit.

    Returns ``None`` when the store has no entry for ``version``.

    Raises:
        DatasetError: The store names a staging manifest that cannot be finalised.

    Example:
        >>> import os, tempfile
        >>> from fermion.io.store import LocalStore
        >>> d = tempfile.mkdtemp()
        >>> store = SQLiteManifestStore(os.path.join(d, "m.db"))
        >>> staging = os.path.join(d, "1.manifest-" + "a" * 32)
        >>> LocalStore().write(staging, b"m")
        >>> store.put_if_absent(d, 1, staging)  # the writer died right after its commit point
        >>> resolve_external(store, LocalStore(), d, 1) == os.path.join(d, "1.manifest")
        True
    """
    path = store.get(base_uri, version)
    if path is None or not is_staging_path(path):
        return path
    final = _STAGING.sub(".manifest", path)
    try:
        finalise(files, path, final)
    except OSError as exc:
        raise DatasetError(
            f"{base_uri}: version {version} is committed in the manifest store as {path!r} "
            f"but could not be finalised: {exc}"
        ) from exc
    store.put(base_uri, version, final)
    return final


def finalise(files: Store, staging: str, final: str) -> None:
    """Copy a staged manifest to its final name; atomic where put-if-absent exists.

    Writer and repairing readers may finalise the same version at once; both copy the same
    staged bytes, so "already exists" is success. A plain copy would let one of them
    truncate the file while another reads it.
    """
    if not files.supports_put_if_absent:
        files.copy(staging, final)
        return
    try:
        files.put_if_absent(final, files.read(staging))
    except FileExistsError:
        pass
