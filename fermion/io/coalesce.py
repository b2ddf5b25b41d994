"""IO coalescing: merge nearby byte ranges into fewer, larger reads.

Object stores and HDFS charge per request, so reading ``[0, 10)`` and ``[20, 30)`` as one
request ``[0, 30)`` is cheaper than two requests whenever the gap is small. The planner is
pure: it takes ranges and returns merged reads that remember which ranges they serve.

Example:
    >>> plan = coalesce_ranges([(0, 10), (20, 10), (5_000_000, 4)], max_gap=1024)
    >>> [(r.start, r.end) for r in plan]
    [(0, 30), (5000000, 5000004)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["MAX_READ", "MergedRead", "coalesce_ranges"]

MAX_READ = 64 << 20  # the largest merged read (bounds memory per read)


@dataclass(slots=True)
class MergedRead:
    """One physical read covering one or more requested ranges."""

    start: int
    end: int
    members: list[int] = field(default_factory=list)  # indices into the request list

    @property
    def length(self) -> int:
        return self.end - self.start


def coalesce_ranges(
    ranges: Sequence[tuple[int, int]], *, max_gap: int, max_read: int = MAX_READ
) -> list[MergedRead]:
    """Merge ``(offset, length)`` ranges whose gaps are at most ``max_gap`` bytes.

    Args:
        ranges: requested ``(offset, length)`` pairs, in any order, possibly overlapping.
        max_gap: the largest hole (in bytes) worth reading to save one request.
        max_read: a merged read is not grown beyond this size (bounds memory per read).

    Returns:
        Merged reads in file order; ``members`` lists which requests each one serves.
    """
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    merged: list[MergedRead] = []
    start = end = 0
    members: list[int] = []  # of the read being grown (kept in locals: a lookup asks
    for i in order:  # for hundreds of small ranges, and this loop is on its path)
        off, length = ranges[i]
        stop = off + length
        if members and off - end <= max_gap and max(end, stop) - start <= max_read:
            end = max(end, stop)
            members.append(i)
            continue
        if members:
            merged.append(MergedRead(start, end, members))
        start, end, members = off, stop, [i]
    if members:
        merged.append(MergedRead(start, end, members))
    return merged
