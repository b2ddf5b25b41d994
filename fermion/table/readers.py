"""Open data-file readers a :class:`~fermion.table.dataset.Dataset` keeps between
lookups (``read_batches``, ``epoch_batches``, ``take``).

A data loader calls ``Dataset.read_batches`` (or ``take``) once per training step, and
each call reads a few batches from a few fragments. Opening a data file costs its footer,
schema and column metadata (docs/FORMAT.md §3); for a lookup of one small batch that is
most of the work. Data files never change once committed (docs/TABLE_FORMAT.md), so a reader opened
for one lookup serves the next ones: the file's metadata, and what each reader resolved
(projections, parsed column metadata blocks), are kept.

The cache is bounded (:data:`READER_CACHE_SIZE` readers: file handles and, for a
memory-mapped file, its mapping; the least recently used is closed first) and lends each
reader to one caller at a time: a caller finding the reader it wants already lent opens
another (kept afterwards only if the first was not given back meanwhile). ``close()``
closes every idle reader; a lent one is closed when given back.

Example:
    >>> import os, tempfile, pyarrow as pa
    >>> from fermion.table._datafile import write_data_file
    >>> from fermion.table.storage import TableStorage
    >>> root = tempfile.mkdtemp()
    >>> storage = TableStorage(root)
    >>> write_data_file(pa.table({"a": [1, 2]}), os.path.join(root, "d.fermion"), [1])
    >>> cache = ReaderCache()
    >>> with cache.lease(storage, "d.fermion") as opened:
    ...     opened.fresh, opened.reader.num_rows, opened.top_ids
    (True, 2, [1])
    >>> with cache.lease(storage, "d.fermion") as opened:
    ...     opened.fresh
    False
    >>> cache.close(); len(cache)
    0
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from fermion.errors import InvalidArgumentError, InvalidFileError
from fermion.format import FileReader
from fermion.table._datafile import open_data_file
from fermion.table.codec import as_fragment
from fermion.table.deletions import fragment_deletion_path, keep_mask, read_fragment_deletions
from fermion.table.domain import Fragment
from fermion.table.schema import top_level_field_ids
from fermion.table.storage import TableStorage

__all__ = ["READER_CACHE_SIZE", "OpenFile", "ReaderCache"]

READER_CACHE_SIZE = 64  # open readers a dataset keeps (each holds one file handle)


@dataclass
class OpenFile:
    """An open data file and what was worked out about it once (the file never changes).

    Attributes:
        reader: the open reader.
        top_ids: the table field id of each top-level column of the file.
        fresh: opened for this lease (False: kept from an earlier one).
        batch_mode: per batch-id column field id, whether the file's batch ids are that
            column's values (``fermion.table.batches``).
        keep: the fragment's latest deletion file read, by path: the mask of the file's
            rows it leaves live (see :meth:`keep_mask`; a new deletion file replaces it).
        live: the same for the positions of those rows (see :meth:`live_rows`).
    """

    reader: FileReader
    top_ids: list[int]
    fresh: bool = True
    batch_mode: dict[int, bool] = field(default_factory=dict)
    keep: dict[str, np.ndarray] = field(default_factory=dict)
    live: dict[str, np.ndarray] = field(default_factory=dict)

    def columns(self, wanted: Collection[int]) -> tuple[list[str], list[int]]:
        """The file's top-level column names whose table field id is in ``wanted``, in
        file order, and those field ids."""
        fields = self.reader.schema
        got = [(fields.field(i).name, f) for i, f in enumerate(self.top_ids) if f in wanted]
        return [n for n, _ in got], [f for _, f in got]

    def check_rows(self, fragment: Fragment, path: str) -> None:
        """Raise InvalidFileError unless the file holds the rows the manifest says.

        ``fragment`` is a :class:`~fermion.table.domain.Fragment` (or, for callers
        written before the domain model, its manifest message: so are the methods below).
        """
        rows = as_fragment(fragment).physical_rows
        if self.reader.num_rows != rows:
            raise InvalidFileError(f"{path}: {self.reader.num_rows} rows, the manifest says {rows}")

    def keep_mask(self, storage: TableStorage, fragment: Fragment) -> tuple[np.ndarray, bool]:
        """The mask of the live rows of ``fragment`` (whose deletion file this file's
        rows are), and whether its deletion file was read now (else it was kept)."""
        fragment = as_fragment(fragment)
        path = fragment_deletion_path(fragment)
        mask = self.keep.get(path)
        if mask is not None:
            return mask, False
        mask = keep_mask(read_fragment_deletions(storage, fragment), fragment.physical_rows)
        self.keep = {path: mask}  # an earlier deletion file of the fragment: not needed
        return mask, True

    def live_rows(self, storage: TableStorage, fragment: Fragment) -> np.ndarray:
        """The physical positions of the live rows of ``fragment`` (which has a deletion
        file), in order."""
        fragment = as_fragment(fragment)
        path = fragment_deletion_path(fragment)
        live = self.live.get(path)
        if live is None:
            live = np.flatnonzero(self.keep_mask(storage, fragment)[0])
            self.live = {path: live}
        return live

    @staticmethod
    def open(storage: TableStorage, path: str) -> OpenFile:
        """Open the data file ``path`` of ``storage``."""
        reader = open_data_file(storage.target(path))
        try:
            return OpenFile(reader, top_level_field_ids(reader.schema, reader.field_ids))
        except BaseException:
            reader.close()
            raise


class ReaderCache:
    """Idle open readers of data files, by path, least recently used first (thread-safe).

    Args:
        capacity: the most idle readers kept (0: none; every lease opens and closes).

    Raises:
        InvalidArgumentError: a negative ``capacity``.
    """

    def __init__(self, capacity: int = READER_CACHE_SIZE) -> None:
        if capacity < 0:
            raise InvalidArgumentError(f"capacity must be >= 0, got {capacity}")
        self.capacity = capacity
        self._idle: OrderedDict[str, OpenFile] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def __len__(self) -> int:
        return len(self._idle)

    def __getstate__(self) -> dict[str, int]:
        # open files do not travel (a pickled dataset, e.g. to a Spark task, opens afresh)
        return {"capacity": self.capacity}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__init__(state["capacity"])  # type: ignore[misc]

    @contextmanager
    def lease(self, storage: TableStorage, path: str) -> Iterator[OpenFile]:
        """The data file ``path`` (relative to ``storage``) for the ``with`` block: kept
        open from an earlier lease if it is idle (``fresh`` False), else opened now. Given
        back afterwards, unless the block raised (then closed: a reader that failed is not
        lent again)."""
        with self._lock:
            opened = self._idle.pop(path, None)
        if opened is None:
            opened = OpenFile.open(storage, path)
        else:
            opened.fresh = False
        try:
            yield opened
        except BaseException:
            opened.reader.close()
            raise
        self._give_back(path, opened)

    def _give_back(self, path: str, opened: OpenFile) -> None:
        evicted: list[OpenFile] = []
        with self._lock:
            if self._closed or self.capacity == 0 or path in self._idle:
                evicted.append(opened)
            else:
                self._idle[path] = opened
                while len(self._idle) > self.capacity:
                    evicted.append(self._idle.popitem(last=False)[1])
        for old in evicted:  # closed outside the lock
            old.reader.close()

    def close(self) -> None:
        """Close every idle reader; readers lent now are closed when given back. The cache
        stays usable (the next lease opens afresh) but keeps nothing more."""
        with self._lock:
            idle = list(self._idle.values())
            self._idle.clear()
            self._closed = True
        for opened in idle:
            opened.reader.close()
