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
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import fsspec

from fermion.errors import CommitError, DatasetError, InvalidArgumentError
from fermion.io import failpoints
from fermion.io.store import FsspecStore, LocalStore, Store, StoreFile, open_store
from fermion.table.manifest_store import (
    ManifestStore,
    commit_external,
    open_manifest_store,
    resolve_external,
)

__all__ = ["DIRECTORIES", "TableStorage", "carry_deferral", "deferred_syncs", "manifest_name"]

DIRECTORIES = ("data", "_versions", "_transactions", "_deletions", "_indices", "_refs/tags")
_MANIFEST = re.compile(r"^(\d+)\.manifest$")


_SYNC_THREADS: list[ThreadPoolExecutor] = []
_SYNC_THREADS_LOCK = threading.Lock()

_In = ParamSpec("_In")
_Out = TypeVar("_Out")


def _sync_threads() -> ThreadPoolExecutor:
    with _SYNC_THREADS_LOCK:
        if not _SYNC_THREADS:
            _SYNC_THREADS.append(ThreadPoolExecutor(8, thread_name_prefix="fermion-sync"))
        return _SYNC_THREADS[0]


class _Deferral:
    """The syncs of one :func:`deferred_syncs` block: the files' fsyncs, started in the
    background as each file is finished, and the directories to sync once they are done
    (shared by the threads the block is carried to, :func:`carry_deferral`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.files: dict[str, Future[None]] = {}  # absolute path -> its fsync
        self.directories: dict[str, Callable[[str], None]] = {}  # absolute path -> sync
        self.open = True
        self.failed: CommitError | None = None

    def start(self, sync: Callable[[str], None], path: str) -> bool:
        """Start ``sync(path)`` of a file in the background (False: the block is over)."""
        with self.lock:
            if not self.open:
                return False
            self.files[path] = _sync_threads().submit(sync, path)
            return True

    def defer(self, sync: Callable[[str], None], path: str) -> bool:
        """Record ``sync(path)`` of a directory (False: the block is over)."""
        with self.lock:
            if not self.open:
                return False
            self.directories[path] = sync
            return True

    def forget(self, path: str) -> None:
        """Drop the sync of a file that was removed (no manifest will name it)."""
        with self.lock:
            self.files.pop(path, None)

    def flush(self) -> None:
        """Wait for the files' fsyncs, then sync the directories in parallel (a directory
        after the files it received); the first error raises.

        Raises:
            CommitError: An fsync failed (and so does every later flush of the block:
                the commit loop must not take it for a put of unknown outcome and put a
                manifest naming a file that is not durable).
        """
        with self.lock:
            files, self.files = list(self.files.items()), {}
            directories, self.directories = list(self.directories.items()), {}
        self._wait(files)
        if len(directories) == 1:
            (path, sync), directories = directories[0], []
            self._wait([(path, _done(sync, path))])
        pool = _sync_threads()
        self._wait([(path, pool.submit(sync, path)) for path, sync in directories])

    def _wait(self, syncs: list[tuple[str, Future[None]]]) -> None:
        for path, future in syncs:  # (every fsync has finished before one is raised)
            try:
                future.result()
            except Exception as exc:
                if self.failed is None:
                    self.failed = CommitError(f"{path}: could not be made durable: {exc}")
                    self.failed.__cause__ = exc
        if self.failed is not None:
            raise self.failed


def _done(sync: Callable[[str], None], path: str) -> Future[None]:
    """``sync(path)`` run here, as a finished future (its error kept in it)."""
    future: Future[None] = Future()
    try:
        sync(path)
    except Exception as exc:
        future.set_exception(exc)
    else:
        future.set_result(None)
    return future


#: Per thread, inside :func:`deferred_syncs` (or a function :func:`carry_deferral` made):
#: the block whose syncs wait for the next manifest put (None outside a block).
_DEFERRED = threading.local()


def _block() -> _Deferral | None:
    return getattr(_DEFERRED, "block", None)


@contextmanager
def deferred_syncs() -> Iterator[None]:
    """Within this block, this thread's :meth:`TableStorage.sync_file` and
    :meth:`TableStorage.write_bytes` (of any ``TableStorage``) start the file's fsync in
    the background instead of waiting for it, and :meth:`TableStorage.sync_directories`
    records the directories instead of syncing them; the thread's next
    :meth:`TableStorage.put_manifest` waits for those fsyncs, then syncs the directories
    in parallel, before the manifest is put (so a committed manifest still names only
    durable files and directory entries), and the end of the block does what is left. A
    block left by an exception drops what is left: no manifest names those files. Nested
    blocks: the outermost one ends the deferral. Other threads take part only through
    :func:`carry_deferral`. Also a decorator.

    Why: the fsyncs of an edit's files (data, deletion, transaction files) overlap with
    its work and with each other, and each directory is synced once per commit, instead
    of waits for the disk one after another (docs/TABLE_FORMAT.md, "Durability").

    Example:
        >>> import tempfile
        >>> st = TableStorage(tempfile.mkdtemp())
        >>> with deferred_syncs():
        ...     st.write_bytes("_transactions/a.txn", b"t")  # (its fsync started)
        ...     st.sync_directories()  # (recorded)
        ...     st.put_manifest(1, b"m")  # waits for the fsync, syncs _transactions/, puts
        >>> st.latest_version()
        1
    """
    if _block() is not None:
        yield
        return
    block = _Deferral()
    _DEFERRED.block = block
    try:
        yield
        block.flush()
    finally:
        with block.lock:
            block.open = False  # a thread still carrying it syncs at once from now on
        _DEFERRED.block = None


def carry_deferral(work: Callable[_In, _Out]) -> Callable[_In, _Out]:
    """``work``, made to run (on any thread) inside the calling thread's
    :func:`deferred_syncs` block, if it is in one: for the threads of one edit. The
    block's put must come after every such call has returned.

    Example:
        >>> import threading
        >>> seen = []
        >>> with deferred_syncs():
        ...     work = carry_deferral(lambda: seen.append(_block() is not None))
        ...     thread = threading.Thread(target=work); thread.start(); thread.join()
        >>> seen
        [True]
    """
    block = _block()
    if block is None:
        return work

    def carried(*args: _In.args, **kwargs: _In.kwargs) -> _Out:
        previous = _block()
        _DEFERRED.block = block
        try:
            return work(*args, **kwargs)
        finally:
            _DEFERRED.block = previous

    return carried


def _run_deferred() -> None:
    """Finish this thread's deferred syncs (see :meth:`_Deferral.flush`)."""
    block = _block()
    if block is not None:
        block.flush()


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
        """Write a uniquely named file (not atomic: only for names nobody else uses) and
        make it durable (within :func:`deferred_syncs`: its fsync runs in the background
        and the next manifest put waits for it)."""
        self.ensure_directories()
        path = self.path(relative)
        block = _block()
        if block is None:
            self.store.write(path, data)
        else:
            self.store.write_unsynced(path, data)
            if not block.start(self.store.sync, path):
                self.store.sync(path)
        self._unsynced_dirs.add(relative.rpartition("/")[0])

    def sync_file(self, relative: str) -> None:
        """Make a file written through :meth:`target` durable (its directory entry follows
        with :meth:`sync_directories`; within :func:`deferred_syncs` the fsync runs in the
        background and the next manifest put waits for it)."""
        path = self.path(relative)
        block = _block()
        if block is None or not block.start(self.store.sync, path):
            self.store.sync(path)
        self._unsynced_dirs.add(relative.rpartition("/")[0])

    def sync_directories(self) -> None:
        """Sync each directory that received a file since the last call, once (within
        :func:`deferred_syncs`: at the next manifest put, once per directory whichever
        ``TableStorage`` asked)."""
        block = _block()
        for relative in sorted(self._unsynced_dirs):
            path = self.path(relative) if relative else self.root
            if block is None or not block.defer(self.store.sync_directory, path):
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
        """Delete a file; a missing file is not an error (within :func:`deferred_syncs`,
        its pending fsync is dropped: no manifest can name it)."""
        path = self.path(relative)
        block = _block()
        if block is not None:
            block.forget(path)
        self.store.delete(path)

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
        (:meth:`sync_directories`); the put itself syncs the manifest and its directory.
        Within :func:`deferred_syncs`, on the local disk, the manifest's temp file is
        written first and fsynced beside the block's files (one wait for the disk fewer),
        then the directories, then it is linked."""
        self.ensure_directories()
        self.sync_directories()  # what the manifest names is durable before the manifest
        block = _block()
        final = self.path(manifest_name(version))
        if block is not None and self.manifest_store is None and isinstance(self.store, LocalStore):
            failpoints.hit("before_manifest_put")
            staged = self.store.stage_if_absent(final, data)
            try:
                if not block.start(self.store.sync, staged):  # (the block is the caller's)
                    self.store.sync(staged)
                block.flush()  # the files (the manifest's with them), then the directories
                self.store.link_if_absent(staged, final)
            finally:
                self.store.delete(staged)
            failpoints.hit("after_manifest_put")
            return
        _run_deferred()  # (this thread's deferred syncs, in parallel)
        failpoints.hit("before_manifest_put")
        if self.manifest_store is None:
            self.store.put_if_absent(final, data)
        else:
            commit_external(self.manifest_store, self.store, self.uri, version, final, data)
        failpoints.hit("after_manifest_put")
