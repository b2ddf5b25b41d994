"""Put-if-absent on the local disk: the atomic primitive under the table commit protocol.

:func:`put_if_absent_local` makes ``data`` visible at ``path`` in one step, or raises
:class:`FileExistsError` and changes nothing. The bytes go to a uniquely named temp file in
the target directory, are flushed and fsynced, and are then hard-linked to the final name
with ``os.link``: the kernel makes the link atomic and fails with ``EEXIST`` if the name is
taken. The temp file is always unlinked afterwards; there is no check-then-write anywhere.
:class:`fermion.io.store.LocalStore` uses it; the other backends are in
:mod:`fermion.io.store`.

Durability: :func:`write_file_durable` writes and fsyncs a plain file, :func:`write_file`
writes one without syncing it, :func:`fsync_file` fsyncs one written by other means,
:func:`fsync_directory` makes the names in a directory durable (POSIX: a new file's
directory entry survives a power loss only once its directory was fsynced). The table layer
calls them through :class:`fermion.io.store.Store`.

Temp files are named ``.{name}.{uuid}.tmp`` (see :func:`is_temp_name`), so maintenance can
recognise the leftovers of a writer killed between its write and its unlink.

Example:
    >>> import os, tempfile, pathlib
    >>> path = os.path.join(tempfile.mkdtemp(), "1.manifest")
    >>> put_if_absent_local(path, b"first")
    >>> try:
    ...     put_if_absent_local(path, b"second")
    ... except FileExistsError:
    ...     print("taken")
    taken
    >>> pathlib.Path(path).read_bytes()
    b'first'
"""

from __future__ import annotations

import contextlib
import os
import uuid

from fermion.io import failpoints

__all__ = [
    "TEMP_SUFFIX",
    "fsync_directory",
    "fsync_file",
    "is_temp_name",
    "link_staged_local",
    "put_if_absent_local",
    "stage_local",
    "write_file",
    "write_file_durable",
]

TEMP_SUFFIX = ".tmp"


def is_temp_name(name: str) -> bool:
    """Whether a base name is a put-if-absent temp file (``.{name}.{uuid}.tmp``).

    Example:
        >>> is_temp_name(".3.manifest.5f0c.tmp"), is_temp_name("3.manifest")
        (True, False)
    """
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def put_if_absent_local(path: str, data: bytes) -> None:
    """Create the local file ``path`` holding ``data`` atomically, or raise
    ``FileExistsError`` (its parent directory must exist).

    Raises:
        FileExistsError: Something already exists at ``path``; nothing was changed.
    """
    temp = _temp_beside(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            _write_all(fd, data, temp)
            os.fsync(fd)
        finally:
            os.close(fd)
        link_staged_local(temp, path)
    finally:
        os.unlink(temp)


def _temp_beside(path: str) -> str:
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{uuid.uuid4().hex}{TEMP_SUFFIX}")


def stage_local(path: str, data: bytes) -> str:
    """:func:`put_if_absent_local` in two steps, first: write ``data`` to a new temp file
    beside ``path`` (not synced) and return its path. The caller fsyncs it
    (:func:`fsync_file`), links it with :func:`link_staged_local` and always unlinks it.

    Example:
        >>> import os, tempfile, pathlib
        >>> path = os.path.join(tempfile.mkdtemp(), "2.manifest")
        >>> temp = stage_local(path, b"m")
        >>> fsync_file(temp); link_staged_local(temp, path); os.unlink(temp)
        >>> pathlib.Path(path).read_bytes(), is_temp_name(os.path.basename(temp))
        (b'm', True)
    """
    temp = _temp_beside(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            _write_all(fd, data, temp)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def link_staged_local(temp: str, path: str) -> None:
    """Second step of :func:`put_if_absent_local`: hard-link the synced ``temp`` to
    ``path`` (atomic; ``FileExistsError`` if the name is taken) and fsync the directory.
    """
    failpoints.hit("before_link", path)
    os.link(temp, path)  # atomic; raises FileExistsError if the name is taken
    fsync_directory(os.path.dirname(os.path.abspath(path)))


def _write_all(fd: int, data: bytes, detail: str) -> None:
    def write(view: memoryview) -> None:
        while view:
            view = view[os.write(fd, view) :]

    failpoints.split_write(write, data, detail)


def write_file_durable(path: str, data: bytes) -> None:
    """Create or replace the local file ``path`` with ``data`` and fsync it (not its
    directory: see :func:`fsync_directory`).

    Example:
        >>> import os, tempfile, pathlib
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txn")
        >>> write_file_durable(path, b"abc")
        >>> pathlib.Path(path).read_bytes()
        b'abc'
    """
    _write_file(path, data, sync=True)


def write_file(path: str, data: bytes) -> None:
    """Create or replace the local file ``path`` with ``data``, not synced: the caller
    makes it durable later with :func:`fsync_file` (and its directory entry with
    :func:`fsync_directory`).

    Example:
        >>> import os, tempfile, pathlib
        >>> path = os.path.join(tempfile.mkdtemp(), "b.txn")
        >>> write_file(path, b"abc"); fsync_file(path)
        >>> pathlib.Path(path).read_bytes()
        b'abc'
    """
    _write_file(path, data, sync=False)


def _write_file(path: str, data: bytes, *, sync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data, path)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: str) -> None:
    """Flush a written local file's data to the disk (one ``fsync``).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "d.bin")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(b"x")
        >>> fsync_file(path)
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(directory: str) -> None:
    """Make the entries of a local directory durable (best effort where a platform cannot
    open or fsync a directory).

    Example:
        >>> import tempfile
        >>> fsync_directory(tempfile.mkdtemp())
    """
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
