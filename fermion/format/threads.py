"""One process-wide worker pool for page encoding and decoding (like Arrow's CPU pool).

Creating threads per reader costs more than decoding a handful of small pages, so readers
and writers share this pool; zstandard, zlib and numpy release the GIL while they work.
After ``fork`` the child gets a new pool (the parent's threads do not exist there).

Example:
    >>> list(pool().map(abs, [-1, 2]))
    [1, 2]
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["pool"]

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _forget_in_child() -> None:
    """A forked child inherits the pool object but not its threads: start afresh."""
    global _pool, _lock
    _pool = None
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
