"""Put-if-absent on the local disk: the atomic primitive under the table commit protocol.

:func:`put_if_absent_local` makes ``data`` visible at ``path`` in one step, or raises
:class:`FileExistsError` and changes nothing. The bytes go to a uniquely named temp file in
the target directory, are flushed and fsynced, and are then hard-linked to the final name
with ``os.link``: the kernel makes the link atomic and fails with ``EEXIST`` if the name is
taken. The temp file is always unlinked afterwards; there is no check-then-write anywhere.
:class:`fermion.io.store.LocalStore` uses it; the other backends are in
:mod:`fermion.io.store`.

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

import os
import uuid

__all__ = ["TEMP_SUFFIX", "is_temp_name", "put_if_absent_local"]

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
