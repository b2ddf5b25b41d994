"""Opening a byte source: any path, URL, store file or file object -> a :class:`ByteSource`.

Paths, URLs and ``(fsspec filesystem, path)`` pairs go through the store that serves them
(:func:`fermion.io.store.store_for`, then :meth:`~fermion.io.store.Store.new_input`); a
store's own files (:meth:`~fermion.io.store.Store.target`) open directly. The sources
themselves live in :mod:`fermion.io.byte_source` (re-exported here).

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"0123456789")
    >>> src = open_source(path)
    >>> [bytes(b) for b in src.read_ranges([(0, 2), (8, 2)], max_gap=0)]
    [b'01', b'89']
    >>> src.stats.requests, src.stats.bytes_read
    (2, 4)
"""

from __future__ import annotations

from typing import Any

from fermion.io.byte_source import (
    ByteSource,
    FileObjectSource,
    FsspecSource,
    IOStats,
    LocalSource,
    is_file_object,
)
from fermion.io.store import InputFile, resolve, store_for

__all__ = [
    "ByteSource",
    "FileObjectSource",
    "FsspecSource",
    "IOStats",
    "LocalSource",
    "open_source",
    "resolve",
]


def open_source(source: Any, memory_map: bool = False) -> ByteSource:
    """Open a path, URL, ``(fsspec filesystem, path)`` pair or store file
    (:class:`~fermion.io.store.InputFile`) for random-access reads (a local file
    memory-mapped with ``memory_map``, see :class:`LocalSource`), or serve a seekable file
    object or in-memory bytes (:class:`FileObjectSource`).

    Raises:
        InvalidArgumentError: not a path, URL, pair or file object; an unknown URL protocol.
        SourceNotFoundError: no file at the path.

    Example:
        >>> src = open_source(b"in memory")
        >>> type(src).__name__, src.size
        ('FileObjectSource', 9)
    """
    if isinstance(source, ByteSource):
        return source
    if is_file_object(source):
        return FileObjectSource(source)
    if isinstance(source, InputFile):
        return source.open(memory_map)
    store, path = store_for(source)
    return store.new_input(path).open(memory_map)
