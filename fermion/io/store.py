"""Storage backends: the one seam through which the table layer touches its files.

A :class:`Store` owns a few primitives on the absolute paths of one backend: ``read``,
``write``, ``exists``, ``listdir``, ``walk``, ``delete``, ``size``, ``modified``, ``makedirs``,
``copy`` and ``put_if_absent``, and two durability hooks, ``sync`` (a written file) and
``sync_directory`` (the names in a directory). It also hands out typed files for the format
layer: :meth:`Store.new_input` (an :class:`InputFile`, opened as a
:class:`~fermion.io.byte_source.ByteSource`) and :meth:`Store.new_output` (an
:class:`OutputFile`, created as a binary file object); :meth:`Store.target` is one
:class:`StoreFile` that is both. Four implementations:

* :class:`LocalStore` — the local disk through ``os``. Put-if-absent writes a uniquely
  named temp file, fsyncs it and hard-links it to the final name (:mod:`fermion.io.atomic`).
  ``write`` fsyncs the file (``write_unsynced`` does not), ``makedirs`` fsyncs the parent
  of every directory it creates, ``sync`` and ``sync_directory`` are one ``fsync`` each.
* :class:`MemoryStore` — fsspec's in-memory filesystem (``memory://``); put-if-absent is an
  exclusive create under one process-wide lock, atomic for everyone who sees the store.
* :class:`S3Store` — S3 and S3-compatible servers through ``s3fs``. Put-if-absent is one
  conditional ``PutObject`` (``If-None-Match: *``): the server creates the object only if
  the key is free, and answers 412 ``PreconditionFailed`` when it is taken (a 409
  ``ConditionalRequestConflict``, another conditional write to the key in flight, is
  retried until it turns into a 412 or a success).
* :class:`FsspecStore` — any other fsspec filesystem (GCS, Azure, HDFS, ...). It has no
  atomic put-if-absent (fsspec's ``pipe_file(mode="create")`` is check-then-write on most
  backends), so :attr:`~Store.supports_put_if_absent` is False and callers commit through
  an external manifest store instead.

Listings and existence checks bypass fsspec's listing cache: another process may have
committed a version since the last look.

:func:`open_store` picks the backend for a path, URL or ``(filesystem, path)`` pair. Stores
only move bytes: they know nothing of the files they hold.

Example:
    >>> import tempfile
    >>> store, root = open_store(tempfile.mkdtemp())
    >>> path = store.join(root, "a/b.bin")
    >>> store.makedirs(store.join(root, "a"))
    >>> store.put_if_absent(path, b"one")
    >>> try:
    ...     store.put_if_absent(path, b"two")
    ... except FileExistsError:
    ...     print("taken")
    taken
    >>> store.read(path), store.listdir(store.join(root, "a")), store.size(path)
    (b'one', ['b.bin'], 3)
"""

from __future__ import annotations

import errno
import os
import posixpath
import threading
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import fsspec
import pyarrow as pa
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from fermion.errors import InvalidArgumentError
from fermion.extras import require
from fermion.io.atomic import (
    fsync_directory,
    fsync_file,
    link_staged_local,
    put_if_absent_local,
    stage_local,
    write_file,
    write_file_durable,
)
from fermion.io.byte_source import ByteSource, FsspecSource, LocalSource

__all__ = [
    "FsspecStore",
    "InputFile",
    "LocalStore",
    "MemoryStore",
    "OutputFile",
    "S3Store",
    "Store",
    "StoreFile",
    "open_store",
    "resolve",
    "store_for",
]

#: Retries of a conditional PutObject answered 409 ``ConditionalRequestConflict``.
S3_CONFLICT_RETRIES = 4
#: First backoff (seconds) before such a retry; doubles per retry.
S3_CONFLICT_BACKOFF = 0.05

_MEMORY_LOCK = threading.Lock()


class Store(ABC):
    """Byte storage on one backend, addressed by absolute paths."""

    #: Whether :meth:`put_if_absent` is atomic on this backend.
    supports_put_if_absent: bool = False
    #: Whether the store has directories that exist apart from the files in them.
    has_directories: bool = False
    #: Whether reads wait on requests (worth issuing in parallel), not on the CPU.
    remote: bool = True

    @abstractmethod
    def uri(self, root: str) -> str:
        """A URI naming ``root`` on this backend (a plain path on the local disk)."""

    @abstractmethod
    def join(self, root: str, relative: str) -> str:
        """The absolute path of ``relative`` (``/``-separated) below ``root``."""

    @abstractmethod
    def relative(self, root: str, path: str) -> str:
        """``path`` (below ``root``) relative to ``root``, ``/``-separated."""

    @abstractmethod
    def open_input(self, path: str, memory_map: bool = False) -> ByteSource:
        """A random-access source over the file at ``path`` (``memory_map``: map a local
        file, see :class:`~fermion.io.byte_source.LocalSource`; ignored elsewhere)."""

    @abstractmethod
    def open_output(self, path: str) -> IO[bytes]:
        """A new binary file object writing the file at ``path`` (replacing any)."""

    @abstractmethod
    def open_read(self, path: str) -> IO[bytes] | pa.NativeFile:
        """A sequential binary file object reading ``path`` (for readers of other formats,
        such as ``pyarrow.parquet.ParquetFile``; closed by the caller)."""

    @abstractmethod
    def isfile(self, path: str) -> bool:
        """Whether ``path`` is a file."""

    @abstractmethod
    def isdir(self, path: str) -> bool:
        """Whether ``path`` is a directory (object stores: a prefix with objects below)."""

    def canonical(self, path: str) -> str:
        """``path`` in the one spelling the store compares (absolute on the local disk)."""
        return path

    def check_destination(self, path: str) -> None:  # noqa: B027 - nothing by default
        """Whether a new file can be written at ``path``: ``IsADirectoryError`` (a
        directory is there) or ``FileNotFoundError`` (its folder is missing, naming the
        folder). Nothing to check by default: object stores have no folders."""

    def stage(self, path: str) -> str:
        """Where to write a file that must appear at ``path`` only once complete
        (:meth:`publish`). By default ``path`` itself: an object appears when its upload
        completes."""
        return path

    def publish(self, staged: str, path: str) -> None:  # noqa: B027 - a no-op by default
        """Make the file written at ``staged`` (:meth:`stage`) appear at ``path``."""

    def new_input(self, path: str) -> InputFile:
        """The file at ``path``, to read (as pyiceberg's ``FileIO.new_input``).

        Example:
            >>> import tempfile, os
            >>> store, root = open_store(tempfile.mkdtemp())
            >>> store.write(store.join(root, "f"), b"abc")
            >>> source = store.new_input(store.join(root, "f")).open()
            >>> source.size, bytes(source.read_ranges([(1, 2)], max_gap=0)[0])
            (3, b'bc')
        """
        return StoreFile(self, path)

    def new_output(self, path: str) -> OutputFile:
        """The file at ``path``, to write (as pyiceberg's ``FileIO.new_output``).

        Example:
            >>> import tempfile
            >>> store, root = open_store(tempfile.mkdtemp())
            >>> with store.new_output(store.join(root, "f")).create() as f:
            ...     _ = f.write(b"xyz")
            >>> store.read(store.join(root, "f"))
            b'xyz'
        """
        return StoreFile(self, path)

    def target(self, path: str) -> StoreFile:
        """The file at ``path`` as :func:`fermion.io.open_source` and
        :func:`fermion.io.open_sink` (so ``FileReader`` and ``write_table``) accept it:
        both an :class:`InputFile` and an :class:`OutputFile`.

        Example:
            >>> store, root = open_store("memory://target-doc")
            >>> f = store.target(store.join(root, "a.bin"))
            >>> isinstance(f, InputFile) and isinstance(f, OutputFile), f.path
            (True, '/target-doc/a.bin')
        """
        return StoreFile(self, path)

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The whole object; ``FileNotFoundError`` if absent."""

    @abstractmethod
    def write(self, path: str, data: bytes) -> None:
        """Write the whole object (not atomic: for names nobody else writes)."""

    def write_unsynced(self, path: str, data: bytes) -> None:
        """:meth:`write`, leaving the file to a later :meth:`sync` where a write is not
        durable by itself (the local disk); elsewhere the same as :meth:`write`."""
        self.write(path, data)

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` exists."""

    @abstractmethod
    def listdir(self, path: str) -> list[str]:
        """Base names in a directory (empty if it does not exist)."""

    @abstractmethod
    def walk(self, path: str) -> list[str]:
        """Absolute paths of every file below a directory (empty if it does not exist)."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""

    @abstractmethod
    def size(self, path: str) -> int:
        """Size in bytes."""

    @abstractmethod
    def modified(self, path: str) -> float:
        """Modification (or creation) time, seconds since the epoch."""

    @abstractmethod
    def makedirs(self, path: str) -> None:
        """Create a directory and its parents (idempotent; a no-op where none are needed)."""

    def copy(self, source: str, destination: str) -> None:
        """Copy one object to another path (not atomic)."""
        self.write(destination, self.read(source))

    def sync(self, path: str) -> None:  # noqa: B027 - an optional hook, a no-op by default
        """Make a file written through :meth:`target` durable. A no-op here: object stores
        make an object durable when its upload completes, and other fsspec filesystems
        offer no way to ask."""

    def sync_directory(self, path: str) -> None:  # noqa: B027 - an optional hook
        """Make the names in a directory durable (a no-op where there are no directories
        or no way to ask)."""

    def empty_directories(self, path: str) -> list[str]:
        """Absolute paths of the empty directories strictly below ``path``, deepest first
        (none where the store has no directories)."""
        return []

    def remove_empty_directory(self, path: str) -> bool:  # noqa: B027 - an optional hook
        """Remove ``path`` if it is an empty directory; whether it was removed (a directory
        that is gone or not empty, e.g. because a writer just put a file in it, stays)."""
        return False

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` holding ``data`` atomically, or raise ``FileExistsError`` and change
        nothing. Readers never see a partial object.

        Raises:
            FileExistsError: Something already exists at ``path``.
            InvalidArgumentError: The backend has no atomic create
                (:attr:`supports_put_if_absent` is False).
        """
        raise InvalidArgumentError(
            f"{type(self).__name__} has no atomic put-if-absent; "
            "use an external manifest store (fermion.table.manifest_store)"
        )


class InputFile(ABC):
    """A file of a store, to read (:meth:`Store.new_input`)."""

    path: str

    @abstractmethod
    def open(self, memory_map: bool = False) -> ByteSource:
        """A random-access source over the file (closed by the caller)."""


class OutputFile(ABC):
    """A file of a store, to write (:meth:`Store.new_output`)."""

    path: str

    @abstractmethod
    def create(self) -> IO[bytes]:
        """A new binary file object writing the file (closed by the caller)."""


@dataclass(frozen=True)
class StoreFile(InputFile, OutputFile):
    """One file of a store, to read or to write: what :meth:`Store.target` gives.

    Example:
        >>> store, root = open_store("memory://store-file-doc")
        >>> f = StoreFile(store, store.join(root, "x"))
        >>> with f.create() as out:
        ...     _ = out.write(b"hello")
        >>> f.open().size
        5
    """

    store: Store
    path: str

    def open(self, memory_map: bool = False) -> ByteSource:
        return self.store.open_input(self.path, memory_map)

    def create(self) -> IO[bytes]:
        return self.store.open_output(self.path)


class LocalStore(Store):
    """The local disk, through ``os``."""

    supports_put_if_absent = True
    remote = False
    has_directories = True

    def uri(self, root: str) -> str:
        return root

    def join(self, root: str, relative: str) -> str:
        return os.path.join(root, *relative.split("/"))

    def relative(self, root: str, path: str) -> str:
        return os.path.relpath(path, root).replace(os.sep, "/")

    def open_input(self, path: str, memory_map: bool = False) -> ByteSource:
        return LocalSource(path, memory_map=memory_map)

    def open_output(self, path: str) -> IO[bytes]:
        return open(path, "wb", buffering=0)  # noqa: SIM115 - the caller closes it

    def open_read(self, path: str) -> IO[bytes] | pa.NativeFile:
        return pa.OSFile(path, "rb")  # what pyarrow opens for a local path itself

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def canonical(self, path: str) -> str:
        return os.path.abspath(path)

    def check_destination(self, path: str) -> None:
        if os.path.isdir(path):
            raise IsADirectoryError(path)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(parent)

    def stage(self, path: str) -> str:
        """A hidden, unique name beside ``path`` (renamed onto it by :meth:`publish`)."""
        parent, name = os.path.split(os.path.abspath(path))
        return os.path.join(parent, f".{name}.{uuid.uuid4().hex[:12]}.tmp")

    def publish(self, staged: str, path: str) -> None:
        os.replace(staged, path)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def write(self, path: str, data: bytes) -> None:
        write_file_durable(path, data)  # the file is fsynced; its directory is not

    def write_unsynced(self, path: str, data: bytes) -> None:
        write_file(path, data)  # neither the file nor its directory is synced

    def sync(self, path: str) -> None:
        fsync_file(path)

    def sync_directory(self, path: str) -> None:
        fsync_directory(path)

    def empty_directories(self, path: str) -> list[str]:
        return [
            directory
            for directory, subdirectories, files in os.walk(path, topdown=False)
            if directory != path and not subdirectories and not files
        ]

    def remove_empty_directory(self, path: str) -> bool:
        try:
            os.rmdir(path)  # refuses a directory that is not empty
        except OSError:
            return False
        return True

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def listdir(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except FileNotFoundError:
            return []

    def walk(self, path: str) -> list[str]:
        return [
            os.path.join(directory, name) for directory, _, files in os.walk(path) for name in files
        ]

    def delete(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def size(self, path: str) -> int:
        return os.stat(path).st_size

    def modified(self, path: str) -> float:
        return os.stat(path).st_mtime

    def makedirs(self, path: str) -> None:
        missing = []
        current = os.path.abspath(path)
        while not os.path.isdir(current):
            missing.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        if not missing:
            return
        os.makedirs(path, exist_ok=True)
        for created in reversed(missing):  # each new entry is durable in its parent
            fsync_directory(os.path.dirname(created))

    def put_if_absent(self, path: str, data: bytes) -> None:
        put_if_absent_local(path, data)

    def stage_if_absent(self, path: str, data: bytes) -> str:
        """:meth:`put_if_absent` in steps, first: ``data`` in a temp file beside ``path``
        (not synced; returns its path). Then :meth:`sync` it, :meth:`link_if_absent` it
        and :meth:`delete` it (:func:`fermion.io.atomic.stage_local`)."""
        return stage_local(path, data)

    def link_if_absent(self, staged: str, path: str) -> None:
        """Link a synced :meth:`stage_if_absent` file to ``path`` atomically (or
        ``FileExistsError``) and sync the directory."""
        link_staged_local(staged, path)


class FsspecStore(Store):
    """Any fsspec filesystem; no atomic put-if-absent.

    Args:
        fs: The filesystem.
    """

    def __init__(self, fs: fsspec.AbstractFileSystem) -> None:
        self.fs = fs

    def uri(self, root: str) -> str:
        protocol = self.fs.protocol
        return f"{protocol if isinstance(protocol, str) else protocol[0]}://{root}"

    def join(self, root: str, relative: str) -> str:
        return posixpath.join(root, relative)

    def relative(self, root: str, path: str) -> str:
        prefix = root.rstrip("/") + "/"
        return path[len(prefix) :] if path.startswith(prefix) else path

    def open_input(self, path: str, memory_map: bool = False) -> ByteSource:
        return FsspecSource(self.fs, path)

    def open_output(self, path: str) -> IO[bytes]:
        return self.fs.open(path, "wb")

    def open_read(self, path: str) -> IO[bytes] | pa.NativeFile:
        return self.fs.open(path, "rb")

    def isfile(self, path: str) -> bool:
        return bool(self.fs.isfile(path))

    def isdir(self, path: str) -> bool:
        return bool(self.fs.isdir(path))

    def read(self, path: str) -> bytes:
        return bytes(self.fs.cat_file(path))

    def write(self, path: str, data: bytes) -> None:
        self.fs.pipe_file(path, bytes(data))

    def exists(self, path: str) -> bool:
        self.fs.invalidate_cache(path)
        return bool(self.fs.exists(path))

    def listdir(self, path: str) -> list[str]:
        self.fs.invalidate_cache(path)
        try:
            names = [posixpath.basename(p.rstrip("/")) for p in self.fs.ls(path, detail=False)]
        except FileNotFoundError:
            return []
        finally:
            # a listing left in the cache would later hide files other processes add
            # (``info``/``size`` answer "not found" from a cached listing of the parent)
            self.fs.invalidate_cache(path)
        return names

    def walk(self, path: str) -> list[str]:
        self.fs.invalidate_cache(path)
        try:
            found = list(self.fs.find(path))
        except FileNotFoundError:
            return []
        for directory in {posixpath.dirname(p) for p in found} | {path}:
            self.fs.invalidate_cache(directory)
        return found

    def delete(self, path: str) -> None:
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            pass

    def size(self, path: str) -> int:
        self.fs.invalidate_cache(path)
        return int(self.fs.size(path))

    def modified(self, path: str) -> float:
        info = self.fs.info(path)
        for key in ("mtime", "created", "LastModified"):
            value = info.get(key)
            if value is not None:
                return value.timestamp() if hasattr(value, "timestamp") else float(value)
        return float(self.fs.modified(path).timestamp())

    def makedirs(self, path: str) -> None:
        """Object stores have no directories to create."""

    def copy(self, source: str, destination: str) -> None:
        self.fs.copy(source, destination)


class MemoryStore(FsspecStore):
    """fsspec's in-memory filesystem, with an atomic put-if-absent.

    Example:
        >>> import fsspec, uuid
        >>> store = MemoryStore(fsspec.filesystem("memory"))
        >>> path = f"/doc-store/{uuid.uuid4().hex}"  # one store per process: a fresh name
        >>> store.put_if_absent(path, b"x")
        >>> store.read(path), store.uri("/t")
        (b'x', 'memory:///t')
    """

    supports_put_if_absent = True

    def __init__(self, fs: MemoryFileSystem) -> None:
        super().__init__(fs)

    def put_if_absent(self, path: str, data: bytes) -> None:
        with _MEMORY_LOCK:
            if self.fs.exists(path):
                raise FileExistsError(path)
            self.fs.pipe_file(path, bytes(data))


class S3Store(FsspecStore):
    """S3 or an S3-compatible server through ``s3fs``, with an atomic put-if-absent.

    Credentials and the endpoint come from the filesystem (``storage_options`` of an
    ``s3fs.S3FileSystem``, or boto's environment: ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ...); the store never reads or prints
    them. Data files go through the filesystem's file objects: one ``PutObject`` below its
    block size (``default_block_size``, 50 MiB unless set), a multipart upload above.

    Args:
        fs: An ``s3fs.S3FileSystem``.

    Example:
        >>> import s3fs
        >>> store = S3Store(s3fs.S3FileSystem(anon=True))
        >>> store.supports_put_if_absent, store.uri("bucket/table")
        (True, 's3://bucket/table')
    """

    supports_put_if_absent = True

    def read(self, path: str) -> bytes:
        """One ``GetObject`` (s3fs would first ask the size to split big objects into
        concurrent ranged GETs: a request too many for manifests and transactions)."""
        return bytes(self.fs.cat_file(path, max_concurrency=1))

    def put_if_absent(self, path: str, data: bytes) -> None:
        """One ``PutObject`` with ``If-None-Match: *``.

        412 ``PreconditionFailed``: the key is taken. 409 ``ConditionalRequestConflict``:
        another conditional write to the key was in flight, with an outcome this request
        cannot know; S3 asks for a retry, which then gets 412 (the other write landed) or
        creates the key. A request retried by the client after a lost response may find its
        own object and report ``FileExistsError``: the commit loop then recognises its
        transaction in the version it meant to write (:mod:`fermion.table.commit`).

        Raises:
            FileExistsError: The key exists.
            OSError: Any other failure (the outcome is unknown), including a key still in
                conflict after :data:`S3_CONFLICT_RETRIES` retries.
        """
        bucket, key, _ = self.fs.split_path(path)
        request = {"Bucket": bucket, "Key": key, "Body": bytes(data), "IfNoneMatch": "*"}
        try:
            for attempt in range(S3_CONFLICT_RETRIES + 1):
                try:
                    self.fs.call_s3("put_object", **request)
                    return
                except Exception as exc:
                    answer = _s3_conditional_answer(exc)
                    if answer == "taken":
                        raise FileExistsError(path) from None
                    if answer != "conflict":
                        raise
                time.sleep(S3_CONFLICT_BACKOFF * 2**attempt)
            raise OSError(
                errno.EBUSY, f"{path}: conditional writes kept conflicting (409); outcome unknown"
            )
        finally:
            self.fs.invalidate_cache(path)


def _s3_conditional_answer(exc: BaseException) -> str:
    """``"taken"`` (412), ``"conflict"`` (409) or ``"other"`` for an s3fs/botocore error of
    a conditional create."""
    for error in (exc, exc.__cause__):
        response = getattr(error, "response", None)
        if isinstance(response, dict):
            code = str(response.get("Error", {}).get("Code", ""))
            status = str(response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            if code == "PreconditionFailed" or status == "412":
                return "taken"
            if code == "ConditionalRequestConflict" or status == "409":
                return "conflict"
            return "other"
    return "taken" if isinstance(exc, FileExistsError) else "other"


def _is_s3(fs: Any) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    return hasattr(fs, "call_s3") and bool({"s3", "s3a"} & set(protocols))


def _filesystem_store(fs: fsspec.AbstractFileSystem) -> FsspecStore:
    """The fsspec store of ``fs``: :class:`MemoryStore`, :class:`S3Store` or
    :class:`FsspecStore`."""
    if isinstance(fs, MemoryFileSystem):
        return MemoryStore(fs)
    if isinstance(fs, fsspec.AbstractFileSystem) and _is_s3(fs):
        return S3Store(fs)
    return FsspecStore(fs)


def _url_store(where: str) -> tuple[Store, str]:
    """The store serving an fsspec URL and the path in it."""
    if where.startswith(("s3://", "s3a://")):
        require("s3fs", "s3")  # a one-line install hint rather than fsspec's
    try:
        fs, path = fsspec.core.url_to_fs(where)
    except (ValueError, ImportError) as exc:  # an unknown protocol, a backend not installed
        raise InvalidArgumentError(f"{where}: {exc}") from None
    return _filesystem_store(fs), path


def store_for(where: Any) -> tuple[Store, str]:
    """The store serving one file, and the file's path in it, for a local path,
    ``pathlib.Path``, fsspec URL (``file://`` is the local disk) or ``(fsspec filesystem,
    path)`` pair (always through that filesystem, even a local one). The path is kept as
    given (:func:`open_store` normalises a table root).

    Raises:
        InvalidArgumentError: not a path or URL; an unknown URL protocol, or one whose
            fsspec backend is not installed.
        MissingExtraError: an ``s3://`` URL without s3fs (``fermion[s3]``).

    Example:
        >>> store, path = store_for("memory://bucket/f.fermion")
        >>> type(store).__name__, path
        ('MemoryStore', '/bucket/f.fermion')
        >>> type(store_for("data/f.fermion")[0]).__name__
        'LocalStore'
    """
    if isinstance(where, tuple) and len(where) == 2:
        fs, path = where
        return _filesystem_store(fs), path
    if isinstance(where, Path):
        return LocalStore(), str(where)
    if not isinstance(where, str):
        raise InvalidArgumentError(f"expected a path or URL, got {type(where).__name__}")
    if "://" not in where or where.startswith("file://"):
        return LocalStore(), where.removeprefix("file://")
    return _url_store(where)


def resolve(where: Any) -> tuple[fsspec.AbstractFileSystem | None, str]:
    """Split a path, ``pathlib.Path`` or fsspec URL into (filesystem or None, path).

    ``None`` means "the local filesystem", served by the fast ``os`` path. (Kept for
    callers outside the package; inside it, :func:`store_for` gives the store itself.)

    Raises:
        InvalidArgumentError: not a path or URL; an unknown URL protocol, or one whose
            fsspec backend is not installed.
        MissingExtraError: an ``s3://`` URL without s3fs (``fermion[s3]``).

    Example:
        >>> resolve("/tmp/x.fermion")
        (None, '/tmp/x.fermion')
    """
    if isinstance(where, tuple):
        raise InvalidArgumentError("expected a path or URL, got tuple")
    store, path = store_for(where)
    return (store.fs if isinstance(store, FsspecStore) else None), path


def open_store(where: Any) -> tuple[Store, str]:
    """The store and root path for a local path, fsspec URL or ``(filesystem, path)`` pair:
    :class:`S3Store` for ``s3://`` URLs and ``s3fs`` filesystems, :class:`MemoryStore` for
    ``memory://``, :class:`LocalStore` for the local disk, :class:`FsspecStore` otherwise.

    Example:
        >>> import fsspec
        >>> store, root = open_store("memory://tables/t/")
        >>> type(store).__name__, root
        ('MemoryStore', '/tables/t')
        >>> type(open_store((fsspec.filesystem("file"), "/tmp/t"))[0]).__name__
        'LocalStore'
    """
    store, root = store_for(str(where) if isinstance(where, Path) else where)
    if isinstance(store, FsspecStore) and not isinstance(store.fs, LocalFileSystem):
        return store, root.rstrip("/")
    return LocalStore(), os.path.abspath(root)
