"""Storage backends: the one seam through which the table layer touches its files.

A :class:`Store` owns a few primitives on the absolute paths of one backend: ``read``,
``write``, ``exists``, ``listdir``, ``walk``, ``delete``, ``size``, ``modified``, ``makedirs``,
``copy`` and ``put_if_absent``, and two durability hooks, ``sync`` (a written file) and
``sync_directory`` (the names in a directory). Three implementations:

* :class:`LocalStore` — the local disk through ``os``. Put-if-absent writes a uniquely
  named temp file, fsyncs it and hard-links it to the final name (:mod:`fermion.io.atomic`).
  ``write`` fsyncs the file, ``makedirs`` fsyncs the parent of every directory it creates,
  ``sync`` and ``sync_directory`` are one ``fsync`` each.
* :class:`MemoryStore` — fsspec's in-memory filesystem (``memory://``); put-if-absent is an
  exclusive create under one process-wide lock, atomic for everyone who sees the store.
* :class:`FsspecStore` — any other fsspec filesystem (S3, HDFS, ...). It has no atomic
  put-if-absent (fsspec's ``pipe_file(mode="create")`` is check-then-write), so
  :attr:`~Store.supports_put_if_absent` is False and callers commit through an external
  manifest store instead.

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

import os
import posixpath
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from fermion.errors import InvalidArgumentError
from fermion.io.atomic import (
    fsync_directory,
    fsync_file,
    put_if_absent_local,
    write_file_durable,
)
from fermion.io.source import resolve

__all__ = ["FsspecStore", "LocalStore", "MemoryStore", "Store", "open_store"]

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

    def sync(self, path: str) -> None:  # noqa: B027 - an optional hook, a no-op by default
        """Make a file written through :meth:`target` durable. A no-op here: object stores
        make an object durable when its upload completes, and other fsspec filesystems
        offer no way to ask."""

    def sync_directory(self, path: str) -> None:  # noqa: B027 - an optional hook
        """Make the names in a directory durable (a no-op where there are no directories
        or no way to ask)."""

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
        write_file_durable(path, data)  # the file is fsynced; its directory is not

    def sync(self, path: str) -> None:
        fsync_file(path)

    def sync_directory(self, path: str) -> None:
        fsync_directory(path)

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
        return bool(self.fs.exists(path))

    def listdir(self, path: str) -> list[str]:
        try:
            return [posixpath.basename(p.rstrip("/")) for p in self.fs.ls(path, detail=False)]
        except FileNotFoundError:
            return []

    def walk(self, path: str) -> list[str]:
        try:
            return list(self.fs.find(path))
        except FileNotFoundError:
            return []

    def delete(self, path: str) -> None:
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            pass

    def size(self, path: str) -> int:
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


def open_store(where: Any) -> tuple[Store, str]:
    """The store and root path for a local path, fsspec URL or ``(filesystem, path)`` pair.

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
    if isinstance(fs, fsspec.AbstractFileSystem) and not isinstance(fs, LocalFileSystem):
        return FsspecStore(fs), root.rstrip("/")
    return LocalStore(), os.path.abspath(root)
