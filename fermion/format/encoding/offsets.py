"""OFFSETS pages into one Arrow offsets buffer: checked kernels over preallocated output.

A stream's OFFSETS pages are decoded in parallel, each straight into its slice of one run
buffer (:func:`~fermion.format.read.stripes.merge_targets`): the buffer holds a leading 0 and
then one entry per value, page after page. Each page writes its entries *relative to its
own first offset* (a page cannot know where the previous page ends), checked on the way
in to be non-decreasing, non-negative and to fit the offset width; :func:`join_run` then
adds each page's base in place, checking the running end against the width. So the
offsets Arrow sees are monotonic without a separate validation pass.

Example:
    >>> import numpy as np
    >>> run = np.zeros(1 + 3 + 2, dtype=np.int32)
    >>> lengths_into(np.array([2, 0, 5]), run[1:4], "p")  # page 0: lengths 2, 0, 5
    >>> plain_into(np.array([40, 41, 44], dtype=np.int32), run[4:], "p")  # page 1: plain
    >>> join_run(run, [3, 2], "p")
    11
    >>> run.tolist()
    [0, 2, 2, 7, 8, 11]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fermion.errors import InvalidFileError

__all__ = ["join_run", "lengths_into", "plain_into", "sums_fit"]

_I64_MAX = (1 << 63) - 1


def sums_fit(bounds: tuple[int, int] | None, n: int, dtype: np.dtype) -> bool:
    """Whether ``n`` value lengths known to lie within ``bounds`` are never negative and
    never sum past ``dtype``'s maximum, so that they may be decoded straight into offsets
    of ``dtype`` and summed there (each length then fits that dtype too)."""
    return bounds is not None and bounds[0] >= 0 and bounds[1] * n <= np.iinfo(dtype).max


def lengths_into(
    lengths: np.ndarray, out: np.ndarray, where: str, bounds: tuple[int, int] | None = None
) -> None:
    """Value ``lengths`` (int64) as their running sums in ``out`` (int32 or int64, one
    entry per length): a page's offsets after its first, relative to it.

    ``bounds`` (lowest, highest) known from the encoding header spare the passes that
    find them. Raises InvalidFileError for a negative length or sums beyond ``out``'s width.
    """
    n = len(lengths)
    if len(out) != n:
        raise InvalidFileError(f"{where}: {n} value lengths for {len(out)} offsets")
    if n == 0:
        return
    cap = int(np.iinfo(out.dtype).max)
    if sums_fit(bounds, n, out.dtype):
        np.cumsum(lengths, out=out, dtype=out.dtype)
        return
    lo, hi = int(lengths.min()), int(lengths.max())  # the header does not settle it: look
    if lo < 0:
        raise InvalidFileError(f"{where}: negative value length")
    if hi * n <= cap:  # no running sum can exceed the width: sum straight into out
        np.cumsum(lengths, out=out, dtype=out.dtype)
        return
    sums = np.cumsum(lengths)  # int64; past 2**63 it wraps, which shows as a decrease
    if int(sums[-1]) > cap or (hi * n > _I64_MAX and bool(np.any(sums[1:] < sums[:-1]))):
        raise InvalidFileError(f"{where}: offsets exceed the offset width")
    out[:] = sums


def plain_into(offsets: np.ndarray, out: np.ndarray, where: str) -> None:
    """A plain OFFSETS page (its ``len(out) + 1`` chunk-relative offsets, the dtype of
    ``out``) as ``out`` entries relative to its first offset. Raises InvalidFileError
    unless the offsets are non-negative and non-decreasing."""
    if len(offsets) != len(out) + 1:
        raise InvalidFileError(f"{where}: {len(offsets)} offsets for {len(out)} values")
    first = offsets[0]
    if int(first) < 0 or bool(np.any(offsets[1:] < offsets[:-1])):
        raise InvalidFileError(f"{where}: offsets are not monotonic")
    np.subtract(offsets[1:], first, out=out)


def join_run(run: np.ndarray, counts: Sequence[int], where: str) -> int:
    """Rebase a run of pages in place; returns the run's last offset.

    ``run`` is 0 then ``sum(counts)`` entries, page ``j``'s ``counts[j]`` entries relative
    to its first offset as :func:`lengths_into` and :func:`plain_into` write them. Each
    page after the first gets the end of the previous one added; the ends are checked
    against the offset width before, so nothing wraps.
    """
    if len(run) != 1 + sum(counts) or int(run[0]) != 0:
        raise InvalidFileError(f"{where}: offsets run of the wrong size")
    cap = int(np.iinfo(run.dtype).max)
    end = 0
    at = 1
    for c in counts:
        if c == 0:
            continue
        page = run[at : at + c]
        last = end + int(page[-1])
        if last > cap:
            raise InvalidFileError(f"{where}: offsets exceed the offset width")
        if end:
            page += end
        end = last
        at += c
    return end
