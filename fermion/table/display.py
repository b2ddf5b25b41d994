"""How a table prints: a schema preview cut after a few columns, as pyarrow cuts a
``Table``'s preview, so the ``repr`` of a 10,000-column table stays one short line.

Example:
    >>> import pyarrow as pa
    >>> schema_preview(pa.schema([("a", pa.int64()), ("b", pa.string())]))
    'a: int64, b: string'
    >>> schema_preview(pa.schema([(f"c{i}", pa.int8()) for i in range(12)]), limit=3)
    'c0: int8, c1: int8, c2: int8, ... 9 more columns'
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

from fermion.errors import InvalidArgumentError

__all__ = ["REPR_COLUMNS", "schema_preview"]

#: Columns a ``repr`` shows before it cuts (pyarrow's ``Table`` preview shows 10 too).
REPR_COLUMNS: Final = 10


def schema_preview(schema: pa.Schema, limit: int = REPR_COLUMNS) -> str:
    """``name: type`` of the first ``limit`` top-level fields, then how many were left out.

    Args:
        schema: The schema to show.
        limit: How many fields to show (at least 1).

    Returns:
        One line: ``"a: int64, b: string, ... 9998 more columns"``.

    Raises:
        InvalidArgumentError: ``limit`` is below 1.

    Example:
        >>> import pyarrow as pa
        >>> schema_preview(pa.schema([("x", pa.list_(pa.int32()))] * 3), limit=2)
        'x: list<item: int32>, x: list<item: int32>, ... 1 more column'
    """
    if limit < 1:
        raise InvalidArgumentError(f"limit must be at least 1, got {limit}")
    shown = ", ".join(f"{f.name}: {f.type}" for f in list(schema)[:limit])
    hidden = len(schema) - limit
    if hidden <= 0:
        return shown
    return f"{shown}, ... {hidden} more column{'s' if hidden > 1 else ''}"
