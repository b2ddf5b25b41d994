"""The Column Index Table (docs/FORMAT.md §2), built and parsed.

``num_columns + 1`` int64 offsets (one more in batch mode, for the BATCH_META system
column): entry ``i`` is where column ``i``'s Column Metadata Block starts, the last one is
``schema_offset``, so the CMB of column ``i`` is ``[cit[i], cit[i + 1])`` and an all-null
column's is empty. A reader fetches only the entries it needs: the two around one column
(:func:`span_range`, :func:`parse_span`) or all of them (:func:`parse_entries`).

Example:
    >>> raw = build_cit([8, 8, 40], 64)
    >>> len(raw) == cit_size(3, batch_mode=False), parse_entries(raw).tolist()
    (True, [8, 8, 40, 64])
    >>> start, size = span_range(0, 2)
    >>> parse_span(raw[start : start + size], 8, 64, what="CIT entry of column 2")
    (40, 64)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from fermion.errors import InvalidFileError
from fermion.format.metadata.structs import CIT_DTYPE

__all__ = [
    "ENTRY_SIZE",
    "build_cit",
    "cit_size",
    "entry_range",
    "parse_entries",
    "parse_entry",
    "parse_span",
    "span_range",
]

ENTRY_SIZE = CIT_DTYPE.itemsize
_PAIR = struct.Struct("<qq")  # two consecutive entries: a CMB's start and end
assert _PAIR.size == 2 * ENTRY_SIZE


def build_cit(cmb_starts: Sequence[int], schema_offset: int) -> bytes:
    """The CIT of CMBs starting at ``cmb_starts`` (one per column, the system column's
    last in batch mode), ended by ``schema_offset``.

    Example:
        >>> build_cit([], 8) == (8).to_bytes(8, "little")
        True
    """
    return np.array([*cmb_starts, schema_offset], dtype=CIT_DTYPE).tobytes()


def cit_size(num_columns: int, batch_mode: bool) -> int:
    """Bytes of the CIT of a file of ``num_columns`` columns.

    Example:
        >>> cit_size(3, batch_mode=False), cit_size(3, batch_mode=True)
        (32, 40)
    """
    return ENTRY_SIZE * (num_columns + 1 + int(batch_mode))


def entry_range(cit_offset: int, column: int) -> tuple[int, int]:
    """(offset, size) of entry ``column``: where its CMB starts.

    Example:
        >>> entry_range(100, 2)
        (116, 8)
    """
    return cit_offset + ENTRY_SIZE * column, ENTRY_SIZE


def span_range(cit_offset: int, column: int) -> tuple[int, int]:
    """(offset, size) of entries ``column`` and ``column + 1``: where its CMB starts and
    ends.

    Example:
        >>> span_range(100, 2)
        (116, 16)
    """
    return cit_offset + ENTRY_SIZE * column, 2 * ENTRY_SIZE


def parse_entry(raw: bytes | memoryview) -> int:
    """The offset one entry (the bytes of :func:`entry_range`) holds.

    Example:
        >>> parse_entry((42).to_bytes(8, "little"))
        42
    """
    return int(np.frombuffer(raw, dtype=CIT_DTYPE, count=1)[0])


def parse_span(
    raw: bytes | memoryview,
    cmb_offset: int,
    schema_offset: int,
    *,
    what: str,
    nonempty: bool = False,
) -> tuple[int, int]:
    """(start, end) of one column's CMB from the bytes of :func:`span_range`, checked to
    lie in the CMB area ``[cmb_offset, schema_offset]`` (and be non-empty if asked).

    Raises:
        InvalidFileError: ``"{what} points outside the CMB area"``.

    Example:
        >>> parse_span(build_cit([8], 4), 8, 64, what="CIT entry of column 0")
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidFileError: CIT entry of column 0 points outside the CMB area
    """
    start, end = _PAIR.unpack_from(raw)
    if not cmb_offset <= start <= end <= schema_offset or (nonempty and start == end):
        raise InvalidFileError(f"{what} points outside the CMB area")
    return start, end


def parse_entries(raw: bytes | memoryview) -> np.ndarray:
    """Every entry of the CIT bytes ``raw`` (or of a prefix of whole entries).

    Example:
        >>> parse_entries(build_cit([8], 8)).tolist()
        [8, 8]
    """
    return np.frombuffer(raw, dtype=CIT_DTYPE)
