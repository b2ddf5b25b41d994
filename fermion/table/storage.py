"""The table directory: paths, plain reads/writes, the atomic put, version manifests.

A table lives in one directory (local path, fsspec URL or ``(filesystem, path)``)::

    data/{uuid}.fermion                                  data files
    _versions/{version}.manifest                         one framed Manifest per version
    _transactions/{read_version}-{uuid}.txn              one framed Transaction per commit
    _deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}
    _indices/{uuid}/...                                  index / statistics files
    _refs/tags/{name}.json                               tags

Every byte moves through one :class:`~fermion.io.store.Store` (local disk, in-memory or any
fsspec filesystem). Manifests are committed with the store's put-if-absent or, for object
stores without a conditional put, through an external manifest store
(:mod:`fermion.table.manifest_store`).

Durability (docs/TABLE_FORMAT.md, "Durability"): :meth:`TableStorage.write_bytes` writes a
synced file (on the local disk), :meth:`TableStorage.sync_file` syncs one written through
:meth:`TableStorage.target`; both remember the file's directory, and
:meth:`TableStorage.sync_directories` syncs each remembered directory once. The manifest put
calls it first, so the files a manifest names and their directory entries are durable
before the manifest is. Within :func:`deferred_syncs` (a local ``write_dataset``), a
thread's file and directory syncs wait for its next manifest put, which runs them in
parallel first.

Example:
    >>> import tempfile
    >>> st = TableStorage(tempfile.mkdtemp())
    >>> st.latest_version() is None
    True
    >>> st.put_manifest(1, b"bytes")
    >>> st.latest_version(), st.read_manifest_bytes(1)
    (1, b'bytes')
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import fsspec

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.io import failpoints
from fermion.io.store import FsspecStore, Store, StoreFile, open_store
from fermion.table.manifest_store import (
    ManifestStore,
    commit_external,
    open_manifest_store,
    resolve_external,
)

__all__ = ["DIRECTORIES", "TableStorage", "deferred_syncs", "manifest_name"]

DIRECTORIES = ("data", "_versions", "_transactions", "_deletions", "_indices", "_refs/tags")
_MANIFEST = re.compile(r"^(\d+)\.manifest$")


#: Per thread, inside :func:`deferred_syncs`: the syncs waiting for the next manifest put,
#: as ``(is a directory, sync function, path)`` in the order asked (None outside a block).
_DEFERRED = threading.local()
_SYNC_THREADS: list[ThreadPoolExecutor] = []
_SYNC_THREADS_LOCK = threading.Lock()


@contextmanager
def deferred_syncs() -> Iterator[None]:
    """Within this block, this thread's :meth:`TableStorage.sync_file` and
    :meth:`TableStorage.sync_directories` (of any ``TableStorage``) record what they would
    sync instead of syncing it; the thread's next :meth:`TableStorage.put_manifest` runs
    them before the manifest is put, the files' in parallel, then the directories' in
    parallel (so a committed manifest still
    names only durable files and directory entries), and the end of the block runs what
    is left. A block left by an exception drops what is left: no manifest names those
    files. Nested blocks: the outermost one ends the deferral. Also a decorator.

    Why: the fsyncs of a write's data files, then of ``data/`` and ``_transactions/``,
    each a wait for the disk, overlap instead of running one after another
    (docs/TABLE_FORMAT.md, "Durability").

    Example:
        >>> import tempfile
        >>> st = TableStorage(tempfile.mkdtemp())
        >>> with deferred_syncs():
        ...     st.write_bytes("_transactions/a.txn", b"t")
        ...     st.sync_directories()  # (recorded)
        ...     st.put_manifest(1, b"m")  # syncs _transactions/, then puts
        >>> st.latest_version()
        1
    """
    if getattr(_DEFERRED, "pending", None) is not None:
        yield
        return
    _DEFERRED.pending = []
    try:
        yield
        _run_deferred()
    finally:
        _DEFERRED.pending = None


def _defer(sync: Callable[[str], None], path: str, directory: bool) -> bool:
    """Record ``sync(path)`` if this thread defers its syncs (and say whether it did)."""
    pending = getattr(_DEFERRED, "pending", None)
    if pending is None:
        return False
    pending.append((directory, sync, path))
    return True


def _run_deferred() -> None:
    """Run this thread's deferred syncs, each once: the files' in parallel, then the
    directories' in parallel (a directory is synced after the files it received); the
    first error raises."""
    pending = getattr(_DEFERRED, "pending", None)
    if not pending:
        return
    calls = list(dict.fromkeys(pending))
    pending.clear()
    for directories in (False, True):
        _run_all([(sync, path) for d, sync, path in calls if d is directories])


def _run_all(calls: list[tuple[Callable[[str], None], str]]) -> None:
    if len(calls) <= 1:
        for sync, path in calls:
            sync(path)
        return
    with _SYNC_THREADS_LOCK:
        if not _SYNC_THREADS:
            _SYNC_THREADS.append(ThreadPoolExecutor(8, thread_name_prefix="fermion-sync"))
    for future in [_SYNC_THREADS[0].submit(sync, path) for sync, path in calls]:
        future.result()


def manifest_name(version: int) -> str:
    """Relative path of a version's manifest.

    Example:
        >>> manifest_name(12)
        '_versions/12.manifest'
    """
    return f"_versions/{version}.manifest"


class TableStorage:
    """File operations relative to a table root, on the local disk or any fsspec store.

    Args:
        uri: Local path, fsspec URL, or ``(filesystem, path)``.
        manifest_store: Commit manifests through this external store instead of
            put-if-absent (required for stores without an atomic create): a
            :class:`ManifestStore`, a ``postgresql://`` URL or an SQLite file path
            (:func:`~fermion.table.manifest_store.open_manifest_store`). When none is given
            and the filesystem has no atomic create, the ``FERMION_MANIFEST_STORE``
            environment variable names it (unless ``from_environment`` is false: a
            :class:`~fermion.table.ref.TableRef` opens its table so, on any process).
    """

    def __init__(
        self,
        uri: Any,
        *,
        manifest_store: ManifestStore | str | None = None,
        from_environment: bool = True,
    ) -> None:
        if isinstance(uri, TableStorage):
            raise InvalidArgumentError("pass a URI, not a TableStorage")
        self.store: Store
        self.store, self.root = open_store(uri if not isinstance(uri, Path) else str(uri))
        self.uri: str = self.store.uri(self.root)
        self.manifest_store: ManifestStore | None = None
        if manifest_store is not None:
            self.manifest_store = open_manifest_store(manifest_store)
        elif not self.store.supports_put_if_absent:
            # only here: a table on a store with an atomic create never switches to the
            # external store behind its other writers' backs
            self.manifest_store = open_manifest_store(None) if from_environment else None
            if self.manifest_store is None:
                raise InvalidArgumentError(
                    f"{self.uri}: this filesystem has no atomic put-if-absent; pass "
                    "manifest_store='postgresql://...' (or an SQLite file path), or set "
                    "FERMION_MANIFEST_STORE"
                )
        self.opened_from: Any = None  # the TableRef that opened it (fermion.table.ref)
        self._dirs_ready = False
        self._unsynced_dirs: set[str] = set()  # directories with entries not yet synced

    def _is_a_file(self) -> DatasetError:
        """The error for a root that is a plain file (``NotADirectoryError`` underneath)."""
        return DatasetError(
            f"{self.uri} is a file or inside one, not a table directory; try `fermion inspect` or "
            "fermion.read_table"
        )

    @property
    def fs(self) -> fsspec.AbstractFileSystem | None:
        """The fsspec filesystem of a table that is not on the local disk, else ``None``."""
        return self.store.fs if isinstance(self.store, FsspecStore) else None

    # -- paths ------------------------------------------------------------------------------

    def path(self, relative: str) -> str:
        """Absolute path of ``relative`` (which uses ``/`` separators)."""
        return self.store.join(self.root, relative)

    def target(self, relative: str) -> StoreFile:
        """What :func:`fermion.format.write_table` / ``FileReader`` accept for ``relative``."""
        return self.store.target(self.path(relative))

    def ensure_directories(self) -> None:
        """Create the table's sub-directories (idempotent; object stores need none)."""
        if self._dirs_ready:
            return
        try:
            for name in DIRECTORIES:
                self.store.makedirs(self.path(name))
        except NotADirectoryError:
            raise self._is_a_file() from None
        self._dirs_ready = True

    def ensure_directory(self, relative: str) -> None:
        """Create a directory below the root (idempotent; object stores need none)."""
        self.ensure_directories()
        self.store.makedirs(self.path(relative))

    # -- plain file operations ----------------------------------------------------------------

    def read_bytes(self, relative: str) -> bytes:
        """Whole-file read; ``FileNotFoundError`` if absent, ``DatasetError`` if the root is
        a file."""
        try:
            return self.store.read(self.path(relative))
        except NotADirectoryError:
            raise self._is_a_file() from None

    def write_bytes(self, relative: str, data: bytes) -> None:
        """Write a uniquely named file (not atomic: only for names nobody else uses)."""
        self.ensure_directories()
        self.store.write(self.path(relative), data)
        self._unsynced_dirs.add(relative.rpartition("/")[0])

    def sync_file(self, relative: str) -> None:
        """Make a file written through :meth:`target` durable (its directory entry follows
        with :meth:`sync_directories`)."""
        if not _defer(self.store.sync, self.path(relative), False):
            self.store.sync(self.path(relative))
        self._unsynced_dirs.add(relative.rpartition("/")[0])

    def sync_directories(self) -> None:
        """Sync each directory that received a file since the last call, once (within
        :func:`deferred_syncs`: at the next manifest put)."""
        for relative in sorted(self._unsynced_dirs):
            path = self.path(relative) if relative else self.root
            if not _defer(self.store.sync_directory, path, True):
                self.store.sync_directory(path)
        self._unsynced_dirs.clear()

    def create_bytes(self, relative: str, data: bytes) -> None:
        """Create a file that must not exist yet: atomic (put-if-absent) where the store has
        it, else check-then-write. ``FileExistsError`` if it exists."""
        self.ensure_directories()
        if self.store.supports_put_if_absent:
            self.store.put_if_absent(self.path(relative), data)
            return
        if self.exists(relative):
            raise FileExistsError(relative)
        self.store.write(self.path(relative), data)

    def exists(self, relative: str) -> bool:
        """Whether ``relative`` exists."""
        return self.store.exists(self.path(relative))

    def list_dir(self, relative: str) -> list[str]:
        """Base names in a directory (empty if it does not exist; ``DatasetError`` if the
        root is a file)."""
        try:
            return self.store.listdir(self.path(relative))
        except NotADirectoryError:
            raise self._is_a_file() from None

    def list_tree(self, relative: str) -> list[str]:
        """Every file below a directory, as paths relative to the table root."""
        return [self.store.relative(self.root, p) for p in self.store.walk(self.path(relative))]

    def remove(self, relative: str) -> None:
        """Delete a file; a missing file is not an error."""
        self.store.delete(self.path(relative))

    def empty_directories(self, relative: str) -> list[str]:
        """The empty directories below a directory, deepest first, as paths relative to
        the table root (none on object stores)."""
        found = self.store.empty_directories(self.path(relative))
        return [self.store.relative(self.root, p) for p in found]

    def remove_empty_directory(self, relative: str) -> bool:
        """Remove an empty directory; ``False`` if it is gone or holds something."""
        return self.store.remove_empty_directory(self.path(relative))

    def modified(self, relative: str) -> float:
        """Modification (or creation) time as seconds since the epoch."""
        return self.store.modified(self.path(relative))

    def size(self, relative: str) -> int:
        """Size in bytes."""
        return self.store.size(self.path(relative))

    # -- versions -------------------------------------------------------------------------------

    def versions(self) -> list[int]:
        """Every version with a manifest in ``_versions/``, ascending."""
        found = []
        for name in self.list_dir("_versions"):
            match = _MANIFEST.match(name)
            if match:
                found.append(int(match.group(1)))
        return sorted(found)

    def latest_version(self) -> int | None:
        """The highest committed version, or ``None`` for a table without versions."""
        if self.manifest_store is not None:
            latest = self.manifest_store.latest_version(self.uri)
            if latest is not None:
                return latest
        versions = self.versions()
        return versions[-1] if versions else None

    def read_manifest_bytes(self, version: int) -> bytes:
        """The framed manifest of ``version`` (repairing an external-store commit first).

        Raises:
            DatasetError: The version does not exist.
        """
        if self.manifest_store is not None:
            resolve_external(self.manifest_store, self.store, self.uri, version)
        try:
            return self.read_bytes(manifest_name(version))
        except FileNotFoundError:
            raise DatasetError(f"{self.uri}: version {version} does not exist") from None

    def put_manifest(self, version: int, data: bytes) -> None:
        """Commit point: make ``data`` the manifest of ``version``, or ``FileExistsError``.

        First syncs the directories of the files written through this storage
        (:meth:`sync_directories`); the put itself syncs the manifest and its directory."""
        self.ensure_directories()
        self.sync_directories()  # what the manifest names is durable before the manifest
        _run_deferred()  # (this thread's deferred syncs, in parallel)
        failpoints.hit("before_manifest_put")
        final = self.path(manifest_name(version))
        if self.manifest_store is None:
            self.store.put_if_absent(final, data)
        else:
            commit_external(self.manifest_store, self.store, self.uri, version, final, data)
        failpoints.hit("after_manifest_put")
