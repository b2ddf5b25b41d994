"""Round-robin timing shared by the benchmarks that compare systems in one process.

Each round calls every case once, in turn, so that a load change on a shared machine
falls on every case alike rather than on whichever was timed in that minute.

Example:
    >>> calls = []
    >>> times = interleaved_ms({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 2)
    >>> calls, sorted(times), [len(t) for t in times.values()]
    (['a', 'b', 'a', 'b'], ['a', 'b'], [2, 2])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["interleaved_ms"]

K = TypeVar("K", bound=Hashable)


def interleaved_ms(
    cases: dict[K, Callable[[], Any]], runs: int, *, warmup: bool = False
) -> dict[K, list[float]]:
    """``runs`` timed calls (milliseconds) of every case, round-robin; ``warmup``: one
    untimed call of each first (page cache, imports)."""
    if warmup:
        for fn in cases.values():
            fn()
    times: dict[K, list[float]] = {key: [] for key in cases}
    for _ in range(runs):
        for key, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            times[key].append((time.perf_counter() - t0) * 1000)
    return times
