"""Put-if-absent: the one atomic primitive the table commit protocol stands on.

``put_if_absent(fs, path, data)`` makes ``data`` visible at ``path`` in one step, or raises
:class:`FileExistsError` and changes nothing, when something already exists there. Readers
never see a partial file. It is implemented per backend:

* **local filesystem** (``fs`` is ``None`` or an fsspec ``LocalFileSystem``): the bytes go to
  a uniquely named temp file in the target directory, are flushed and fsynced, and then
  hard-linked to the final name with ``os.link``. The kernel makes the link atomic and
  fails with ``EEXIST`` if the name is taken. The temp file is always unlinked afterwards.
  There is no check-then-write anywhere.
* **fsspec memory filesystem**: an in-process store, so an exclusive create under one
  process-wide lock is atomic for everyone who can see the store.
* anything else (S3, HDFS, ...) has no primitive here: use an external manifest store
  (:mod:`fermion.io.manifest_store`), as the table layer does when given one.

Temp files are named ``.{name}.{uuid}.tmp`` (see :func:`is_temp_name`), so maintenance can
recognise the leftovers of a writer killed between its write and its unlink.

Example:
    >>> import os, tempfile, pathlib
    >>> path = os.path.join(tempfile.mkdtemp(), "1.manifest")
    >>> put_if_absent(None, path, b"first")
    >>> try:
    ...     put_if_absent(None, path, b"second")
    ... except FileExistsError:
    ...     print("taken")
    taken
    >>> pathlib.Path(path).read_bytes()
    b'first'
"""

from __future__ import annotations

import os
import threading
import uuid

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from fermion.errors import InvalidArgumentError

__all__ = ["TEMP_SUFFIX", "is_temp_name", "put_if_absent", "supports_put_if_absent"]

TEMP_SUFFIX = ".tmp"

_MEMORY_LOCK = threading.Lock()


def is_temp_name(name: str) -> bool:
    """Whether a base name is a put-if-absent temp file (``.{name}.{uuid}.tmp``).

    Example:
        >>> is_temp_name(".3.manifest.5f0c.tmp"), is_temp_name("3.manifest")
        (True, False)
    """
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def supports_put_if_absent(fs: fsspec.AbstractFileSystem | None) -> bool:
    """Whether :func:`put_if_absent` has an atomic implementation for ``fs``.

    Example:
        >>> supports_put_if_absent(None)
        True
    """
    return fs is None or isinstance(fs, LocalFileSystem | MemoryFileSystem)


def put_if_absent(fs: fsspec.AbstractFileSystem | None, path: str, data: bytes) -> None:
    """Create ``path`` holding ``data`` atomically, or raise ``FileExistsError``.

    Args:
        fs: ``None`` for the local filesystem, or an fsspec filesystem.
        path: Destination path (its parent directory must exist for local paths).
        data: The complete content.

    Raises:
        FileExistsError: Something already exists at ``path``; nothing was changed.
        InvalidArgumentError: ``fs`` has no atomic create (use an external manifest store).

    Example:
        >>> import fsspec, uuid
        >>> mem = fsspec.filesystem("memory")  # one store per process: use a fresh name
        >>> path = f"/doc-atomic/{uuid.uuid4().hex}"
        >>> put_if_absent(mem, path, b"x")
        >>> mem.cat_file(path)
        b'x'
    """
    if fs is None or isinstance(fs, LocalFileSystem):
        _put_if_absent_local(path, data)
    elif isinstance(fs, MemoryFileSystem):
        _put_if_absent_memory(fs, path, data)
    else:
        raise InvalidArgumentError(
            f"{type(fs).__name__} has no atomic put-if-absent in Fermion; "
            "configure an external manifest store (fermion.io.manifest_store)"
        )


def _put_if_absent_local(path: str, data: bytes) -> None:
    directory, name = os.path.split(os.path.abspath(path))
    temp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}{TEMP_SUFFIX}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temp, path)  # atomic; raises FileExistsError if the name is taken
        _fsync_directory(directory)
    finally:
        os.unlink(temp)


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories; durability is best effort
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _put_if_absent_memory(fs: MemoryFileSystem, path: str, data: bytes) -> None:
    with _MEMORY_LOCK:
        if fs.exists(path):
            raise FileExistsError(path)
        fs.pipe_file(path, bytes(data))
