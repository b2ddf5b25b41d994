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
many processes can share. Other stores (DynamoDB, a SQL server, ...) implement the four
methods of :class:`ManifestStore`.

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
import uuid
from abc import ABC, abstractmethod
from contextlib import closing

from fermion.errors import DatasetError
from fermion.io import failpoints
from fermion.io.store import Store

__all__ = [
    "ManifestStore",
    "SQLiteManifestStore",
    "commit_external",
    "finalise",
    "is_staging_path",
    "resolve_external",
]

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
    store.put_if_absent(base_uri, version, staging)  # the commit point
    failpoints.hit("external_after_insert", staging)
    finalise(files, staging, final_path)
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
