"""Batch-mode reads of a :class:`~fermion.table.dataset.Dataset`: the batch ranges of its
version (cached, one version at a time) and the lookups planned over them
(:meth:`Dataset.batch_lookup`, :meth:`Dataset.read_batches`,
:meth:`Dataset.epoch_batches` delegate here; :mod:`fermion.table.batches` does the work).

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table.dataset import dataset
    >>> from fermion.table.tasks import plan_write, execute_write, commit_write
    >>> uri = tempfile.mkdtemp()
    >>> data = pa.table({"b": [1, 2, 2], "x": [10, 20, 21]})
    >>> plan = plan_write(uri, data.schema, batch_id_column="b")
    >>> _ = commit_write(plan, [execute_write(plan, data)])
    >>> ds = dataset(uri)
    >>> reads = BatchReads(ds.storage, ReaderCache())
    >>> reads.lookup(ds.table_version, ds.table_schema, [2], None).to_table()["x"].to_pylist()
    [20, 21]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from fermion.table.batches import (
    BatchLookup,
    BatchRanges,
    OnMissing,
    epoch_batches,
)
from fermion.table.batches import batch_id_column as batch_id_column_of
from fermion.table.domain import TableVersion
from fermion.table.readers import ReaderCache
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage

__all__ = ["BatchReads"]


class BatchReads:
    """The batch-mode reads of one ``Dataset`` object: its storage, its open data files
    and the batch ranges of the version it last read."""

    def __init__(self, storage: TableStorage, readers: ReaderCache) -> None:
        self._storage = storage
        self._readers = readers
        self._batch_ranges: dict[tuple[int, int], BatchRanges] = {}

    def column(
        self, version: TableVersion, schema: TableSchema, batch_id_column: str | None
    ) -> str:
        """The batch-id column: ``batch_id_column``, else the one the table records."""
        return batch_id_column_of(version, schema, batch_id_column)

    def ranges(self, version: TableVersion, schema: TableSchema, column: str) -> BatchRanges:
        """The batch ranges of ``column`` in ``version`` (cached)."""
        key = (version.version, schema.id_of(column))
        ranges = self._batch_ranges.get(key)
        if ranges is None:
            ranges = BatchRanges.build(version, key[1])
            self._batch_ranges = {key: ranges}  # one version at a time
        return ranges

    def lookup(
        self,
        version: TableVersion,
        schema: TableSchema,
        batch_ids: Sequence[int] | np.ndarray | pa.Array,
        columns: Sequence[str] | None,
        *,
        on_missing: OnMissing = "raise",
        batch_id_column: str | None = None,
    ) -> BatchLookup:
        """A planned lookup of ``batch_ids`` (:meth:`Dataset.batch_lookup`)."""
        column = self.column(version, schema, batch_id_column)
        return BatchLookup(
            self._storage, self.ranges(version, schema, column), schema, column, batch_ids,
            columns, on_missing=on_missing, readers=self._readers,
        )  # fmt: skip

    def epoch(
        self,
        version: TableVersion,
        schema: TableSchema,
        column: str,
        ids: np.ndarray,
        columns: Sequence[str] | None,
        *,
        seed: int | None,
        shuffle: bool,
        read_ahead: int,
    ) -> Iterator[tuple[int, pa.Table]]:
        """One epoch over the batches ``ids`` of ``column`` (:meth:`Dataset.epoch_batches`)."""
        ranges = self.ranges(version, schema, column)
        storage = self._storage

        def lookup(chunk: np.ndarray) -> BatchLookup:
            return BatchLookup(storage, ranges, schema, column, chunk, columns, on_missing="skip")

        if columns is not None:
            lookup(ids[:0])  # check the columns before the first batch is asked for
        return epoch_batches(lookup, ids, seed=seed, shuffle=shuffle, read_ahead=read_ahead)
