"""One process-wide worker pool for page encoding and decoding (like Arrow's CPU pool).

Creating threads per reader costs more than decoding a handful of small pages, so readers
and writers share this pool; zstandard, zlib and numpy release the GIL while they work.

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
