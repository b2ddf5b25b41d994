"""Random-access byte sources: a fast local path and any fsspec filesystem.

A :class:`ByteSource` answers ``size`` and ``read_ranges`` and counts what it did, so tests
and benchmarks can prove how many requests and bytes an operation cost. A store opens them
(:meth:`fermion.io.store.Store.new_input`); :func:`fermion.io.source.open_source` opens one
for any path, URL, store file or file object.

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"0123456789")
    >>> src = LocalSource(path)
    >>> [bytes(b) for b in src.read_ranges([(0, 2), (8, 2)], max_gap=0)]
    [b'01', b'89']
    >>> src.stats.requests, src.stats.bytes_read
    (2, 4)
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import fsspec
import pyarrow as pa

from fermion.errors import InvalidArgumentError, SourceNotFoundError, TruncatedFileError
from fermion.io.coalesce import MAX_READ, MergedRead, coalesce_ranges

_PREADS: Any
try:  # compiled where the install could (setup.py); the same work in Python without it
    from fermion.io import preads as _PREADS  # type: ignore[attr-defined,no-redef]
except ImportError:  # no compiler at install time, or shipped in a zip to Spark executors
    _PREADS = None

__all__ = [
    "ByteSource",
    "FileObjectSource",
    "FsspecSource",
    "IOStats",
    "LocalSource",
    "is_file_object",
]


@dataclass
class IOStats:
    """Requests and bytes a source has served (thread-safe counters)."""

    requests: int = 0
    bytes_read: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, nbytes: int) -> None:
        with self._lock:
            self.requests += 1
            self.bytes_read += nbytes

    def add_many(self, requests: int, nbytes: int) -> None:
        """Count ``requests`` requests of ``nbytes`` bytes in all."""
        with self._lock:
            self.requests += requests
            self.bytes_read += nbytes

    def reset(self) -> None:
        with self._lock:
            self.requests = 0
            self.bytes_read = 0


class ByteSource(ABC):
    """Base class: a file of known size that serves byte ranges."""

    name: str
    size: int
    stats: IOStats

    @property
    def mapped(self) -> bool:
        """Whether ranges are views of memory (no IO wait): prefetching them on another
        thread then costs a thread hand-off and saves nothing."""
        return False

    @abstractmethod
    def _read_at(self, offset: int, length: int) -> bytes | memoryview:
        """Read ``length`` bytes at ``offset`` (bounds already checked)."""

    def read(self, offset: int, length: int) -> memoryview:
        """Read exactly ``length`` bytes at ``offset`` (one request)."""
        self._check_range(offset, length)
        if length == 0:
            return memoryview(b"")
        data = self._read_at(offset, length)
        self._check_read(offset, length, data)
        self.stats.add(length)
        return memoryview(data)

    def _check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0:
            raise TruncatedFileError(f"{self.name}: negative range ({offset}, {length})")
        if offset + length > self.size:
            raise TruncatedFileError(
                f"{self.name}: range [{offset}, {offset + length}) is past the end of the "
                f"file ({self.size} bytes)"
            )

    def _check_read(self, offset: int, length: int, data: bytes | memoryview) -> None:
        if len(data) != length:
            raise TruncatedFileError(
                f"{self.name}: short read at {offset}: wanted {length}, got {len(data)}"
            )

    def read_ranges(self, ranges: Sequence[tuple[int, int]], *, max_gap: int) -> list[memoryview]:
        """Read many ranges with coalescing; returns one view per requested range."""
        return self._coalesced(ranges, max_gap, self._read_each)

    def _read_each(self, merged: list[MergedRead]) -> list[memoryview]:
        return [self.read(m.start, m.end - m.start) for m in merged]

    def _coalesced(
        self,
        ranges: Sequence[tuple[int, int]],
        max_gap: int,
        read_all: Callable[[list[MergedRead]], list[memoryview]],
    ) -> list[memoryview]:
        """``ranges`` coalesced, the merged reads made by ``read_all`` (a buffer each),
        sliced back into one view per range."""
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        plan = coalesce_ranges(ranges, max_gap=max_gap)
        for merged, buf in zip(plan, read_all(plan), strict=True):
            start = merged.start
            for i in merged.members:
                off, length = ranges[i]
                out[i] = buf[off - start : off - start + length]
        return out

    def read_copies(
        self, ranges: Sequence[tuple[int, int]], *, max_gap: int
    ) -> Sequence[bytes | memoryview]:
        """Like :meth:`read_ranges`, but the bytes are copied out even of a memory-mapped
        file: what batch lookups use, a few scattered bytes of many pages. (Touching a
        page of a fresh mapping faults it in, and unmapping it on close costs again: on
        the machine measured both together cost more than a ``pread`` of the bytes.)
        A range may come as ``bytes`` rather than a view: a lookup asks for hundreds,
        and each memoryview is one more object for the garbage collector to track.

        Example:
            >>> import tempfile, os
            >>> path = os.path.join(tempfile.mkdtemp(), "c.bin")
            >>> with open(path, "wb") as f:
            ...     _ = f.write(b"0123456789")
            >>> src = LocalSource(path, memory_map=True)
            >>> [bytes(b) for b in src.read_copies([(8, 2), (0, 2), (3, 1)], max_gap=1)]
            [b'89', b'01', b'3']
            >>> src.stats.requests, src.stats.bytes_read
            (2, 6)
        """
        return self.read_ranges(ranges, max_gap=max_gap)

    def close(self) -> None:  # noqa: B027 - a no-op for sources that hold no handle
        """Release the underlying handle (idempotent)."""


class LocalSource(ByteSource):
    """A local file read with ``os.pread`` (thread-safe, no seek state), or, with
    ``memory_map``, served from a read-only mapping of the file: a range is then a view of
    the page cache (no copy, and only the bytes a reader touches are faulted in).

    A mapping assumes the file is not truncated while it is read (Fermion files are
    immutable once written; a file truncated under a mapping makes the process fault on
    access, as with any memory-mapped reader). Views handed out keep the mapping alive.
    """

    def __init__(self, path: str, memory_map: bool = False) -> None:
        self.name = path
        self._fd = -1
        self._view: memoryview | None = None
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise SourceNotFoundError(f"{path}: no such file") from None
        info = os.fstat(self._fd)
        if stat.S_ISDIR(info.st_mode):
            self.close()
            raise InvalidArgumentError(f"{path}: is a directory, not a file")
        self.size = info.st_size
        self.stats = IOStats()
        if memory_map and self.size > 0 and stat.S_ISREG(info.st_mode):
            self._view = memoryview(mmap.mmap(self._fd, self.size, access=mmap.ACCESS_READ))

    @property
    def mapped(self) -> bool:
        return self._view is not None

    def _read_at(self, offset: int, length: int) -> bytes | memoryview:
        if self._view is not None:
            return self._view[offset : offset + length]
        return self._pread(offset, length)

    def read_ranges(self, ranges: Sequence[tuple[int, int]], *, max_gap: int) -> list[memoryview]:
        if self._view is not None or _PREADS is None or not ranges:
            return super().read_ranges(ranges, max_gap=max_gap)
        return self._pread_ranges(ranges, max_gap)

    def read_copies(
        self, ranges: Sequence[tuple[int, int]], *, max_gap: int
    ) -> Sequence[bytes | memoryview]:
        if _PREADS is not None and ranges:
            return self._pread_bytes(ranges, max_gap)
        if self._view is None:
            return self.read_ranges(ranges, max_gap=max_gap)
        return self._coalesced(ranges, max_gap, self._pread_all)

    def _pread_ranges(self, ranges: Sequence[tuple[int, int]], max_gap: int) -> list[memoryview]:
        return [memoryview(b) for b in self._pread_bytes(ranges, max_gap)]

    def _pread_bytes(self, ranges: Sequence[tuple[int, int]], max_gap: int) -> list[bytes]:
        """The compiled path of both reads: coalesced as coalesce_ranges does, the merged
        reads made with the GIL released, each range copied out (fermion/io/preads.c)."""
        assert _PREADS is not None
        if self._fd < 0:
            raise InvalidArgumentError(f"{self.name}: the file is closed")
        try:
            got, requests, total = _PREADS.pread_ranges(
                self._fd, self.size, ranges, max_gap, MAX_READ
            )
        except ValueError:  # a range outside the file: the same error as read()
            for offset, length in ranges:
                self._check_range(offset, length)
            raise
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            raise TruncatedFileError(f"{self.name}: short read (the file is shorter now)") from None
        self.stats.add_many(requests, total)
        return got

    def _pread_all(self, merged: list[MergedRead]) -> list[memoryview]:
        """Each merged read by ``pread`` (checked as :meth:`read` checks), counted at
        once: a batch lookup asks for hundreds of small ranges."""
        fd, pread, out, total, requests = self._fd, os.pread, [], 0, 0
        if fd < 0:
            raise InvalidArgumentError(f"{self.name}: the file is closed")
        for m in merged:
            offset, length = m.start, m.end - m.start
            self._check_range(offset, length)
            if length == 0:  # as read(): no request
                out.append(memoryview(b""))
                continue
            data = pread(fd, length, offset)
            if len(data) != length:
                data = self._pread(offset, length)
                self._check_read(offset, length, data)
            out.append(memoryview(data))
            total += length
            requests += 1
        self.stats.add_many(requests, total)
        return out

    def _pread(self, offset: int, length: int) -> bytes:
        if self._fd < 0:
            raise InvalidArgumentError(f"{self.name}: the file is closed")
        data = os.pread(self._fd, length, offset)
        if len(data) == length:
            return data
        parts = [data]  # pread may return short reads for very large ranges
        got = len(data)
        while got < length:
            more = os.pread(self._fd, length - got, offset + got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        # the mapping itself is released with the last view of it (arrays built on pages
        # may still hold some): unmapping under them would fault
        self._view = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass


class FsspecSource(ByteSource):
    """Any fsspec filesystem (memory, s3, hdfs, ...) through ``cat_file`` ranges."""

    def __init__(self, fs: fsspec.AbstractFileSystem, path: str) -> None:
        self.name = path
        self._fs = fs
        self._path = path
        try:
            self.size = int(fs.size(path))
        except FileNotFoundError:
            # a cached listing of the folder may predate the file: ask the backend itself
            fs.invalidate_cache(path)
            try:
                self.size = int(fs.size(path))
            except FileNotFoundError:
                raise SourceNotFoundError(f"{path}: no such file") from None
        self.stats = IOStats()

    def _read_at(self, offset: int, length: int) -> bytes:
        return bytes(self._fs.cat_file(self._path, start=offset, end=offset + length))

    def read_ranges(self, ranges: Sequence[tuple[int, int]], *, max_gap: int) -> list[memoryview]:
        """Coalesce, then fetch the merged reads with one ``cat_ranges`` call: one request
        per merged read, issued concurrently by asynchronous filesystems (s3fs, gcsfs)."""
        plan = coalesce_ranges(ranges, max_gap=max_gap)
        if len(plan) < 2:
            return super().read_ranges(ranges, max_gap=max_gap)
        for merged in plan:
            if merged.start < 0 or merged.end > self.size:
                raise TruncatedFileError(
                    f"{self.name}: range [{merged.start}, {merged.end}) is outside the file "
                    f"({self.size} bytes)"
                )
        n = len(plan)
        blobs = self._fs.cat_ranges(
            [self._path] * n, [m.start for m in plan], [m.end for m in plan], on_error="raise"
        )
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        for merged, blob in zip(plan, blobs, strict=True):
            if len(blob) != merged.length:
                raise TruncatedFileError(
                    f"{self.name}: short read at {merged.start}: wanted {merged.length}, "
                    f"got {len(blob)}"
                )
            self.stats.add(merged.length)
            buf = memoryview(blob)
            for i in merged.members:
                off, length = ranges[i]
                out[i] = buf[off - merged.start : off - merged.start + length]
        return out


class FileObjectSource(ByteSource):
    """A seekable binary file object the caller opened: ``open(path, "rb")``,
    ``io.BytesIO``, or a ``pa.NativeFile`` (``pa.BufferReader``, ``pa.OSFile``,
    ``pa.memory_map``). In-memory bytes (``bytes``, ``pa.Buffer``) are served through a
    ``pa.BufferReader``, whose ranges are views (no copy).

    Reads are serialised by a lock (a file object has one position); closing the source
    leaves the caller's object open.

    Example:
        >>> import io
        >>> src = FileObjectSource(io.BytesIO(b"0123456789"))
        >>> src.size, bytes(src.read(3, 4))
        (10, b'3456')
    """

    def __init__(self, handle: Any) -> None:
        if isinstance(handle, bytes | bytearray | memoryview | pa.Buffer):
            handle = pa.BufferReader(handle)
        if getattr(handle, "closed", False):
            raise InvalidArgumentError("the file object to read from is closed")
        self._native = isinstance(handle, pa.NativeFile)
        if self._native and not handle.seekable():
            raise InvalidArgumentError(f"{type(handle).__name__} is not seekable")
        if not self._native and hasattr(handle, "seekable") and not handle.seekable():
            raise InvalidArgumentError(f"{type(handle).__name__} is not seekable")
        self._handle = handle
        self._lock = threading.Lock()
        self._in_memory = isinstance(handle, pa.BufferReader)
        self.name = str(getattr(handle, "name", "") or f"<{type(handle).__name__}>")
        with self._lock:
            if self._native:
                self.size = int(handle.size())
            else:
                position = handle.tell()
                self.size = int(handle.seek(0, os.SEEK_END))
                handle.seek(position)
        self.stats = IOStats()

    @property
    def mapped(self) -> bool:
        return self._in_memory

    def _read_at(self, offset: int, length: int) -> bytes | memoryview:
        if self._native:
            return memoryview(self._handle.read_at(length, offset))
        with self._lock:
            self._handle.seek(offset)
            return bytes(self._handle.read(length))


def is_file_object(source: Any) -> bool:
    """Whether ``source`` is in-memory bytes or a seekable file object (not a path)."""
    if isinstance(source, bytes | bytearray | memoryview | pa.Buffer):
        return True
    return hasattr(source, "read") and hasattr(source, "seek") and not isinstance(source, str)
