"""Storage access: byte sources with ranged, coalesced reads; buffered sinks; the storage
backends (:mod:`fermion.io.store`).

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "b.bin")
    >>> with open_sink(path) as sink:
    ...     _ = sink.append(b"hello, world")
    >>> source = open_source(path)
    >>> [bytes(v) for v in source.read_ranges([(0, 5), (7, 5)], max_gap=4)]
    [b'hello', b'world']
    >>> source.close()
"""

from fermion.io.coalesce import MergedRead, coalesce_ranges
from fermion.io.sink import Sink, open_sink
from fermion.io.source import ByteSource, FileObjectSource, IOStats, open_source, resolve
from fermion.io.store import (
    FsspecStore,
    InputFile,
    LocalStore,
    MemoryStore,
    OutputFile,
    S3Store,
    Store,
    StoreFile,
    open_store,
)

__all__ = [
    "ByteSource",
    "FileObjectSource",
    "FsspecStore",
    "IOStats",
    "InputFile",
    "LocalStore",
    "MemoryStore",
    "MergedRead",
    "OutputFile",
    "S3Store",
    "Sink",
    "Store",
    "StoreFile",
    "coalesce_ranges",
    "open_sink",
    "open_source",
    "open_store",
    "resolve",
]
