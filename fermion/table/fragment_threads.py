"""Per-fragment work of one table edit run on a few threads.

The work of an edit on one fragment (read its key columns, join, write a deletion file or
a column file) spends most of its time in calls that release the GIL (pyarrow compute,
zstd, file writes and fsync), so the fragments of one edit overlap well on threads. Each
call uses its own short-lived executor, never the file format's shared pool: a task here
waits on the format's pool (a reader decoding columns), which must not wait on itself.

Example:
    >>> map_fragments(lambda x: x * 2, [1, 2, 3])
    [2, 4, 6]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from fermion.table.storage import carry_deferral

__all__ = ["FRAGMENT_THREADS_DEFAULT", "map_fragments"]

#: Threads one edit uses for its fragments.
FRAGMENT_THREADS_DEFAULT = 4

_In = TypeVar("_In")
_Out = TypeVar("_Out")


def map_fragments(
    work: Callable[[_In], _Out],
    items: Sequence[_In],
    *,
    threads: int = FRAGMENT_THREADS_DEFAULT,
) -> list[_Out]:
    """``[work(item) for item in items]``, on up to ``threads`` threads, in order.

    Every item is worked on even if one fails; then the first failure (in item order)
    is raised. The threads take part in the caller's
    :func:`~fermion.table.storage.deferred_syncs` block, if any.
    """
    if len(items) <= 1 or threads <= 1:
        return [work(item) for item in items]
    work = carry_deferral(work)
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        futures = [pool.submit(work, item) for item in items]
    return [future.result() for future in futures]
