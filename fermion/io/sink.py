"""Buffered append-only output: the writer hands over pages, the sink writes multi-MB units.

Encode and compress per page, but never *write* per page; gather
pages in memory and write in units of several MB.

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "out.bin")
    >>> with open_sink(path) as sink:
    ...     first, second = sink.append(b"abc"), sink.append(b"de")
    ...     (first, second, sink.tell())
    (0, 3, 5)
    >>> with open(path, "rb") as f:
    ...     f.read()
    b'abcde'
"""

from __future__ import annotations

import io
import os
from typing import IO, Any

from fermion.errors import InvalidArgumentError, SourceNotFoundError
from fermion.io import failpoints
from fermion.io.store import OutputFile, store_for

__all__ = ["Sink", "open_sink", "DEFAULT_FLUSH_BYTES"]

DEFAULT_FLUSH_BYTES = 8 << 20


class Sink:
    """Append-only writer with a position counter and a flush threshold.

    A handle the caller opened (``owned=False``: a file object, ``io.BytesIO``, a
    ``pa.NativeFile`` such as ``pa.BufferOutputStream``) is flushed but left open on close,
    as ``pyarrow.parquet.write_table`` leaves it.
    """

    def __init__(
        self, handle: IO[bytes], *, flush_bytes: int = DEFAULT_FLUSH_BYTES, owned: bool = True
    ) -> None:
        self._handle = handle
        self._owned = owned
        self._pending: list[bytes | memoryview] = []
        self._pending_bytes = 0
        self._position = 0
        self._flush_bytes = flush_bytes
        self.closed = False

    def tell(self) -> int:
        """The offset the next appended byte will have."""
        return self._position

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Queue ``data``; returns the offset it starts at."""
        offset = self._position
        n = len(data)
        if n:
            self._pending.append(data if isinstance(data, bytes | memoryview) else bytes(data))
            self._pending_bytes += n
            self._position += n
            if self._pending_bytes >= self._flush_bytes:
                self.flush()
        return offset

    def flush(self) -> None:
        """Write what is queued in one call (one ``writev`` of the queued parts into a file
        the sink opened itself: no copy of them joined first)."""
        if self._pending:
            if (
                self._owned
                and isinstance(self._handle, io.FileIO)
                and hasattr(os, "writev")
                and not failpoints.armed("partial_write")
            ):
                _write_vectored(self._handle.fileno(), self._pending)
            else:
                data = b"".join(self._pending)
                name = str(getattr(self._handle, "name", ""))
                failpoints.split_write(self._handle.write, data, name)
            self._pending.clear()
            self._pending_bytes = 0

    def close(self) -> None:
        """Flush and close the handle (idempotent)."""
        if not self.closed:
            try:
                self.flush()
                if not self._owned and hasattr(self._handle, "flush"):
                    self._handle.flush()
            finally:
                if self._owned:
                    self._handle.close()
                self.closed = True

    def abort(self) -> None:
        """Close without flushing what is queued."""
        if not self.closed:
            self._pending.clear()
            if self._owned:
                self._handle.close()
            self.closed = True

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


#: Buffers one ``writev`` call takes at most (POSIX guarantees 16; Linux takes 1024).
_IOV_MAX = 512


def _write_vectored(fd: int, parts: list[bytes | memoryview]) -> None:
    """Write ``parts`` one after another at the descriptor's position, with as few
    ``writev`` calls as the kernel allows (a short write continues where it stopped).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryFile() as f:
        ...     _write_vectored(f.fileno(), [b"ab", memoryview(b"cde"), b""])
        ...     _ = f.seek(0)
        ...     f.read()
        b'abcde'
    """
    views: list[memoryview] = []
    for part in parts:
        view = memoryview(part)
        if view.ndim != 1 or view.format != "B":
            view = view.cast("B")
        if view.nbytes:
            views.append(view)
    at = 0
    while at < len(views):
        written = os.writev(fd, views[at : at + _IOV_MAX])
        while written:
            size = views[at].nbytes
            if written >= size:
                written -= size
                at += 1
            else:
                views[at] = views[at][written:]
                written = 0


def open_sink(where: Any, *, flush_bytes: int = DEFAULT_FLUSH_BYTES) -> Sink:
    """Open a local path, fsspec URL, ``(fs, path)`` pair, store file
    (:class:`~fermion.io.store.OutputFile`) or writable binary file object
    (``open(..., "wb")``, ``io.BytesIO``, ``pa.OSFile``, ``pa.BufferOutputStream``; such a
    handle is left open). Paths go through the store that serves them
    (:func:`fermion.io.store.store_for`).

    Raises:
        InvalidArgumentError: ``where`` is a directory, or below a plain file.
        SourceNotFoundError: the folder to write into does not exist.
    """
    if hasattr(where, "write") and not isinstance(where, str):
        if getattr(where, "closed", False):
            raise InvalidArgumentError("the file object to write into is closed")
        return Sink(where, flush_bytes=flush_bytes, owned=False)
    if isinstance(where, OutputFile):
        target = where
    else:
        store, path = store_for(where)
        target = store.new_output(path)
    path = target.path
    try:
        return Sink(target.create(), flush_bytes=flush_bytes)
    except IsADirectoryError:
        raise InvalidArgumentError(f"{path}: is a directory, not a file") from None
    except NotADirectoryError:
        raise InvalidArgumentError(f"{path}: a parent of this path is a file") from None
    except FileNotFoundError:
        parent = os.path.dirname(str(path)) or "."
        raise SourceNotFoundError(f"{path}: the folder {parent} does not exist") from None
