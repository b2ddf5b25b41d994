"""Batch mode (docs/FORMAT.md §11): alignment, BATCH_META, validation.

In batch mode rows arrive as *batches* (``FileWriter.append_batch(batch_id, data)``) that are
stored so that no page of any stream holds part of one batch and part of another: pages are
cut at batch boundaries, several whole batches may share a page, and a batch bigger than a
page gets pages of its own. A *system column* after the user columns stores, per stripe,
two ``BATCH_META`` streams: the batch ids (i64, strictly increasing in the file) and the
batch lengths (u32, > 0). docs/FORMAT.md §11 is the normative description.

This module holds what writer and reader share: the system column's stream layout, the
aligned page cutter used by :mod:`fermion.format.write.shred`, writer-side validation and the
decoded per-stripe batch table the reader uses for lookups and virtual columns.

Example:
    >>> import numpy as np
    >>> bounds = np.array([0, 3, 5, 12, 13])  # batches of 3, 2, 7 and 1 values
    >>> aligned_cuts(bounds, lambda a: a + 4, lambda a, b: [(a, min(b, a + 4)), (a + 4, b)])
    [(0, 3), (3, 5), (5, 9), (9, 12), (12, 13)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from fermion.errors import BatchModeError, InvalidFileError
from fermion.format.metadata.layout import Kind, Node, StreamSpec
from fermion.format.metadata.structs import StreamType

__all__ = [
    "BATCH_ID",
    "BATCH_INDEX",
    "VIRTUAL_COLUMNS",
    "StripeBatches",
    "aligned_cuts",
    "check_batch_id",
    "system_tree",
    "virtual_array",
    "virtual_field",
]

BATCH_ID = "_batch_id"
BATCH_INDEX = "_batch_index"
VIRTUAL_COLUMNS = (BATCH_ID, BATCH_INDEX)
"""Column names a batch-mode reader serves from BATCH_META (never stored as user columns)."""

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_BATCH_ROWS = 0xFFFFFFFF  # a batch length is a u32 and a batch never spans two stripes


def system_tree() -> Node:
    """The storage nodes of the BATCH_META system column (stream 0: ids, stream 1: lengths).

    Example:
        >>> [(s.index, s.node, s.stream_type.name) for s in system_tree().all_streams()]
        [(0, 0, 'BATCH_META'), (1, 1, 'BATCH_META')]
    """
    ids = Node(0, "batch_id", pa.int64(), Kind.FIXED, nullable=False, byte_width=8)
    lengths = Node(1, "batch_length", pa.uint32(), Kind.FIXED, nullable=False, byte_width=4)
    ids.streams = (StreamSpec(0, 0, StreamType.BATCH_META),)
    lengths.streams = (StreamSpec(1, 1, StreamType.BATCH_META),)
    ids.children = (lengths,)  # only so that all_streams() lists both, in file order
    return ids


def virtual_field(name: str) -> pa.Field:
    """The Arrow field of a virtual column.

    Example:
        >>> virtual_field("_batch_index")
        pyarrow.Field<_batch_index: int32 not null>
    """
    if name == BATCH_ID:
        return pa.field(BATCH_ID, pa.int64(), nullable=False)
    return pa.field(BATCH_INDEX, pa.int32(), nullable=False)


def check_batch_id(batch_id: Any, last: int | None) -> int:
    """Validate one batch id against the previous one (ids strictly increase in a file).

    Example:
        >>> check_batch_id(7, 3)
        7
        >>> check_batch_id(3, 3)
        Traceback (most recent call last):
        ...
        fermion.errors.BatchModeError: batch id 3 is not greater than the previous id 3
    """
    if isinstance(batch_id, bool) or not isinstance(batch_id, int | np.integer):
        raise BatchModeError(f"batch id must be an integer, not {type(batch_id).__name__}")
    value = int(batch_id)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise BatchModeError(f"batch id {value} does not fit in int64")
    if last is not None and value <= last:
        raise BatchModeError(f"batch id {value} is not greater than the previous id {last}")
    return value


def aligned_cuts(
    bounds: np.ndarray,
    reach: Callable[[int], int],
    natural: Callable[[int, int], list[tuple[int, int]]],
) -> list[tuple[int, int]]:
    """Page value ranges cut only at batch boundaries (a page closes early, FORMAT.md §11.1).

    Args:
        bounds: non-decreasing value positions ``[start of batch 0, ..., end of last batch]``
            (equal neighbours are batches without values at this level).
        reach: for a page starting at ``a``, the largest end ``b`` that the stream's normal
            page rule lets one page hold.
        natural: the stream's normal cutting of ``[a, b)``, used for a batch that does not
            fit one page: it gets pages of its own.

    Returns:
        ``[(a, b), ...]`` covering ``[bounds[0], bounds[-1])``; ``[(0, 0)]`` when empty.
    """
    start, end = int(bounds[0]), int(bounds[-1])
    if end == start:
        return [(start, start)]
    cuts: list[tuple[int, int]] = []
    i, last = 0, len(bounds) - 1
    while i < last:
        a = int(bounds[i])
        if a >= end:
            break
        j = int(np.searchsorted(bounds, reach(a), side="right")) - 1
        if int(bounds[j]) > a:  # one or more whole batches fit: close the page after them
            cuts.append((a, int(bounds[j])))
            i = j
            continue
        k = int(np.searchsorted(bounds, a, side="right"))  # the next batch alone is too big
        cuts.extend(natural(a, int(bounds[k])))
        i = k
    return cuts


@dataclass(frozen=True)
class StripeBatches:
    """The decoded BATCH_META of one stripe: batch ids, lengths and first rows."""

    ids: np.ndarray  # int64, strictly increasing
    lengths: np.ndarray  # int64, > 0
    starts: np.ndarray  # int64 row of each batch's first row within the stripe

    @staticmethod
    def build(ids: np.ndarray, lengths: np.ndarray, rows: int, where: str) -> StripeBatches:
        """Validate decoded streams of one stripe (typed errors for any inconsistency)."""
        ids = ids.astype(np.int64, copy=False)
        lengths = lengths.astype(np.int64)
        if len(ids) != len(lengths) or len(ids) == 0:
            raise InvalidFileError(f"{where}: {len(ids)} batch ids for {len(lengths)} lengths")
        if bool(np.any(lengths <= 0)) or int(lengths.sum()) != rows:
            raise InvalidFileError(f"{where}: batch lengths do not add up to {rows} rows")
        if len(ids) > 1 and bool(np.any(ids[1:] <= ids[:-1])):
            raise InvalidFileError(f"{where}: batch ids are not strictly increasing")
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        return StripeBatches(ids, lengths, starts)

    def bounds(self) -> np.ndarray:
        """Row boundaries ``[0, end of batch 0, ..., rows]``."""
        return np.append(self.starts, self.starts[-1] + self.lengths[-1])

    def find(self, batch_ids: np.ndarray) -> np.ndarray:
        """Position of each id in this stripe, -1 where absent."""
        pos = np.searchsorted(self.ids, batch_ids)
        pos = np.minimum(pos, len(self.ids) - 1)
        return np.where(self.ids[pos] == batch_ids, pos, -1)


def virtual_array(name: str, batches: StripeBatches) -> pa.Array:
    """A virtual column over a whole stripe: ids repeated by length, or 0..length-1.

    Example:
        >>> b = StripeBatches.build(np.array([10, 20]), np.array([2, 3]), 5, "x")
        >>> virtual_array("_batch_id", b).to_pylist(), virtual_array("_batch_index", b).to_pylist()
        ([10, 10, 20, 20, 20], [0, 1, 0, 1, 2])
    """
    if name == BATCH_ID:
        return pa.array(np.repeat(batches.ids, batches.lengths), pa.int64())
    rows = int(batches.lengths.sum())
    index = np.arange(rows, dtype=np.int64) - np.repeat(batches.starts, batches.lengths)
    return pa.array(index.astype(np.int32), pa.int32())
