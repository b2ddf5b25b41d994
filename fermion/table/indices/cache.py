"""Decoded parts of index files kept in memory between lookups, least recently used first.

Index files never change once written (a build writes new files under a new uuid), so what
a lookup decoded from one stays right for as long as the file exists: a BTREE's blocks of
entries (the rows between two fences), a BITMAP's or LABEL_LIST's keys and the row
addresses of a key. :data:`INDEX_CACHE` holds them, keyed by table, file and part, within a
byte budget (``FERMION_INDEX_CACHE_BYTES``, default 256 MiB; 0 turns it off). A lookup
reads from the file only the parts it does not find here, so repeated lookups of nearby
keys read nothing but the data rows.

Example:
    >>> import numpy as np
    >>> cache = IndexCache(1 << 20)
    >>> cache.put(("t", "f", 0), np.arange(4), 32)
    >>> cache.get(("t", "f", 0)).tolist(), cache.get(("t", "f", 1))
    ([0, 1, 2, 3], None)
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["INDEX_CACHE", "IndexCache", "default_cache_bytes"]

_DEFAULT_BYTES = 256 << 20


def default_cache_bytes() -> int:
    """The byte budget of :data:`INDEX_CACHE`: ``FERMION_INDEX_CACHE_BYTES`` if set (an
    integer >= 0), else 256 MiB.

    Example:
        >>> default_cache_bytes() >= 0
        True
    """
    text = os.environ.get("FERMION_INDEX_CACHE_BYTES", "").strip()
    try:
        value = int(text) if text else _DEFAULT_BYTES
    except ValueError:
        return _DEFAULT_BYTES
    return max(value, 0)


class IndexCache:
    """A thread-safe least-recently-used map from a part's key to its decoded value,
    holding at most ``capacity`` bytes (as each ``put`` declares them)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes_held(self) -> int:
        """Bytes of the values held now."""
        return self._bytes

    def get(self, key: Hashable) -> Any | None:
        """The value put under ``key`` (None if absent or evicted)."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        """Keep ``value`` (of ``nbytes`` bytes) under ``key``, evicting the least recently
        used values beyond the capacity; a value larger than the capacity is not kept."""
        if nbytes > self.capacity:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, nbytes)
            self._bytes += nbytes
            while self._bytes > self.capacity:
                _, (_, freed) = self._items.popitem(last=False)
                self._bytes -= freed

    def clear(self) -> None:
        """Drop every value."""
        with self._lock:
            self._items.clear()
            self._bytes = 0


#: The process-wide cache of decoded index parts (see the module docstring).
INDEX_CACHE = IndexCache(default_cache_bytes())
