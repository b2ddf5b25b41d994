"""Batch integrity: every batch id's rows live in one fragment, in one contiguous run.

Training readers fetch "all rows of one request" by batch id; the ingest job writes each
batch with one ``append_batch`` call and compaction must keep it whole. This check needs the
table's fragments, not just the rows, so it reads the batch-id column fragment by fragment
(live rows only, in physical order) through :mod:`fermion.table` and reports:

- batch ids found in more than one fragment (*split* batches);
- batch ids that appear in more than one run inside a fragment (*scattered* batches);
- rows whose batch id is null.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> uri = tempfile.mkdtemp()
    >>> _ = ft.write_dataset(pa.table({"b": [1, 1, 2, 2]}), uri, max_rows_per_file=3)
    >>> result = check_batch_integrity(uri, "b")
    >>> result.success, result.split_batches
    (False, [2])
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import ColumnNotFoundError
from fermion.table import dataset
from fermion.table.scan import read_fragment

__all__ = ["EXAMPLES", "IntegrityResult", "check_batch_integrity"]

EXAMPLES = 20  # offending batch ids listed per kind of violation


@dataclass(frozen=True)
class IntegrityResult:
    """Outcome of :func:`check_batch_integrity` (examples capped at :data:`EXAMPLES`)."""

    table: str
    version: int
    column: str
    fragments: int
    rows: int
    batches: int
    split_batches: list[Any] = field(default_factory=list)
    split_count: int = 0
    scattered_batches: list[Any] = field(default_factory=list)
    scattered_count: int = 0
    null_rows: int = 0

    @property
    def success(self) -> bool:
        """True when no batch is split, scattered, or missing its id."""
        return self.split_count == 0 and self.scattered_count == 0 and self.null_rows == 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``check`` names the check, ``success`` is included)."""
        return {"check": "batch_integrity", "success": self.success, **asdict(self)}


def _runs(ids: pa.Array) -> pa.Array:
    """The value of each run of equal consecutive ids (nulls dropped first)."""
    ids = ids.drop_null()
    if len(ids) <= 1:
        return ids
    changes = pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1))
    starts = np.flatnonzero(np.concatenate([[True], changes.to_numpy(zero_copy_only=False)]))
    return ids.take(pa.array(starts))


def _repeated(values: pa.Array) -> pa.Array:
    """Values occurring more than once in ``values``."""
    counts = pc.value_counts(values)
    return counts.field("values").filter(pc.greater(counts.field("counts"), 1))


def check_batch_integrity(
    table_uri: str, column: str, *, version: int | None = None
) -> IntegrityResult:
    """Check that each batch id of ``column`` sits in one fragment, in one contiguous run.

    Args:
        table_uri: The Fermion table.
        column: The batch-id column.
        version: Table version to check (default: the latest).

    Raises:
        DatasetError: No table at ``table_uri`` or no such version.
        ColumnNotFoundError: ``column`` is not in the table.

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> uri = tempfile.mkdtemp()
        >>> _ = ft.write_dataset(pa.table({"b": [7, 7, 8, 7]}), uri)
        >>> check_batch_integrity(uri, "b").scattered_batches
        [7]
    """
    ds = dataset(table_uri, version)
    schema = ds.table_schema
    if column not in schema.arrow.names:
        raise ColumnNotFoundError(f"batch-id column {column!r} is not in the table {table_uri}")
    per_fragment: list[pa.Array] = []
    scattered: list[pa.Array] = []
    rows = nulls = 0
    for fragment in ds.fragments:
        ids = read_fragment(ds.storage, schema, fragment, [column]).column(column)
        ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        rows += len(ids)
        nulls += ids.null_count
        runs = _runs(ids)
        scattered.append(_repeated(runs))
        per_fragment.append(pc.unique(runs))
    distinct = pa.concat_arrays(per_fragment) if per_fragment else pa.array([], pa.int64())
    split = _repeated(distinct)
    scattered_ids = pc.unique(pa.concat_arrays(scattered)) if scattered else split
    return IntegrityResult(
        table=str(table_uri),
        version=ds.version,
        column=column,
        fragments=len(ds.fragments),
        rows=rows,
        batches=len(pc.unique(distinct)),
        split_batches=split.slice(0, EXAMPLES).to_pylist(),
        split_count=len(split),
        scattered_batches=scattered_ids.slice(0, EXAMPLES).to_pylist(),
        scattered_count=len(scattered_ids),
        null_rows=nulls,
    )
