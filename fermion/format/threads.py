"""Process-wide worker pools: one for page encoding and decoding (like Arrow's CPU pool),
one for IO that runs ahead of decoding (like Arrow's IO pool).

Creating threads per reader costs more than decoding a handful of small pages, so readers
and writers share these pools; zstandard, zlib, numpy and ``os.pread`` release the GIL
while they work. IO has its own pool so that a read never waits behind decode tasks (and
decode tasks never wait on IO queued behind them). After ``fork`` the child gets new pools
(the parent's threads do not exist there).

Example:
    >>> list(pool().map(abs, [-1, 2]))
    [1, 2]
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["io_pool", "pool"]

IO_THREADS = 2  # requests in flight at once (local reads are page-cache copies)

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_io_pool: ThreadPoolExecutor | None = None


def _forget_in_child() -> None:
    """A forked child inherits the pool objects but not their threads: start afresh."""
    global _pool, _io_pool, _lock
    _pool = None
    _io_pool = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)


def pool() -> ThreadPoolExecutor:
    """The shared pool, created on first use with one thread per core."""
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(
                    max(1, os.cpu_count() or 1), thread_name_prefix="fermion"
                )
    return _pool


def io_pool() -> ThreadPoolExecutor:
    """The shared IO pool, created on first use."""
    global _io_pool
    if _io_pool is None:
        with _lock:
            if _io_pool is None:
                _io_pool = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="fermion-io")
    return _io_pool
