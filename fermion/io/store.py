"""Storage backends: the one seam through which the table layer touches its files.

A :class:`Store` owns a few primitives on the absolute paths of one backend: ``read``,
``write``, ``exists``, ``listdir``, ``walk``, ``delete``, ``size``, ``modified``, ``makedirs``,
``copy`` and ``put_if_absent``. Four implementations:

* :class:`LocalStore` — the local disk through ``os``. Put-if-absent writes a uniquely
  named temp file, fsyncs it and hard-links it to the final name (:mod:`fermion.io.atomic`).
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
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from fermion.errors import InvalidArgumentError
from fermion.io.atomic import put_if_absent_local
from fermion.io.source import resolve

__all__ = ["FsspecStore", "LocalStore", "MemoryStore", "S3Store", "Store", "open_store"]

#: Retries of a conditional PutObject answered 409 ``ConditionalRequestConflict``.
S3_CONFLICT_RETRIES = 4
#: First backoff (seconds) before such a retry; doubles per retry.
S3_CONFLICT_BACKOFF = 0.05

_MEMORY_LOCK = threading.Lock()


class Store(ABC):
    """Byte storage on one backend, addressed by absolute paths."""

    #: Whether :meth:`put_if_absent` is atomic on this backend.
    supports_put_if_absent: bool = False

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
    def target(self, path: str) -> Any:
        """What :func:`fermion.io.open_source` and :func:`fermion.io.open_sink` accept for
        ``path``."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The whole object; ``FileNotFoundError`` if absent."""

    @abstractmethod
    def write(self, path: str, data: bytes) -> None:
        """Write the whole object (not atomic: for names nobody else writes)."""

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


class LocalStore(Store):
    """The local disk, through ``os``."""

    supports_put_if_absent = True

    def uri(self, root: str) -> str:
        return root

    def join(self, root: str, relative: str) -> str:
        return os.path.join(root, *relative.split("/"))

    def relative(self, root: str, path: str) -> str:
        return os.path.relpath(path, root).replace(os.sep, "/")

    def target(self, path: str) -> Any:
        return path

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def write(self, path: str, data: bytes) -> None:
        with open(path, "wb") as f:
            f.write(data)

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
        os.makedirs(path, exist_ok=True)

    def put_if_absent(self, path: str, data: bytes) -> None:
        put_if_absent_local(path, data)


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

    def target(self, path: str) -> Any:
        return (self.fs, path)

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
    if isinstance(where, tuple) and len(where) == 2:
        fs, root = where
    else:
        fs, root = resolve(str(where) if isinstance(where, Path) else where)
    if isinstance(fs, MemoryFileSystem):
        return MemoryStore(fs), root.rstrip("/")
    if isinstance(fs, fsspec.AbstractFileSystem) and _is_s3(fs):
        return S3Store(fs), root.rstrip("/")
    if isinstance(fs, fsspec.AbstractFileSystem) and not isinstance(fs, LocalFileSystem):
        return FsspecStore(fs), root.rstrip("/")
    return LocalStore(), os.path.abspath(root)
