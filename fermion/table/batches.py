"""Table-level batch lookup: the rows of given batch ids, and shuffled epochs of batches.

A table written in batch mode (``plan_write(..., batch_id_column=...)``; the column is
recorded in the table configuration under ``fermion.batch_id_column``) keeps every batch —
the rows sharing one value of that integer column — whole inside one data file, written
with ``append_batch`` (docs/FORMAT.md §11). A lookup of many ids costs one planning pass:

1. **planning** — the ids are sorted once; each fragment's min/max of the batch-id column
   (its manifest statistics, docs/TABLE_FORMAT.md) is turned into the slice of sorted ids it
   can hold by binary search. Fragments whose range holds none of the ids are never opened;
   fragments without statistics for the column are always candidates.
2. **reading** — candidate fragments are read one after another from a local table (the
   reads are mostly Python, and threads only contended for the GIL) and in parallel from
   a remote one (a thread pool: its requests wait on the network). A batch-mode data file
   is read with ``FileReader.read_batches`` (only the pages holding the batches); any
   other file (a fragment written without batch mode, or one of several data files) is
   scanned with an ``is_in`` filter on the batch-id column. The data file of a
   one-file fragment is read through the dataset's ``fermion.table.readers.ReaderCache``:
   it stays open, with its parsed metadata and deletion keep-mask, for the next lookups
   (files never change once committed).
3. **assembly** — deleted rows are dropped; columns are read by field id through this
   version's schema (renames, widening, added columns as nulls); the rows come out grouped
   by batch, in the order the ids were asked (a repeated id repeats its rows), rows of one
   batch in table order.

An id with no live row (never written, or every row deleted) is *missing*: by default
:meth:`BatchLookup.to_table` raises :class:`~fermion.errors.BatchModeError` naming it (a
data loader asking for an id it was not given is a bug worth seeing);
``on_missing="skip"`` returns the other batches instead.

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table.tasks import plan_write, execute_write, commit_write
    >>> from fermion.table.dataset import dataset
    >>> uri = tempfile.mkdtemp()
    >>> data = pa.table({"b": [1, 1, 2, 3, 3, 3], "x": list("abcdef")})
    >>> plan = plan_write(uri, data.schema, batch_id_column="b", max_rows_per_file=3)
    >>> _ = commit_write(plan, [execute_write(plan, data)])
    >>> lookup = dataset(uri).batch_lookup([3, 1], columns=["x"])
    >>> lookup.to_table().to_pydict(), lookup.stats.files_opened
    ({'x': ['d', 'e', 'f', 'a', 'b']}, 2)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import BatchModeError, ColumnNotFoundError, InvalidArgumentError
from fermion.format import FileReader
from fermion.format.encoding.arrow_ops import cast_table, filter_table, take_table
from fermion.table.codec import as_fragment, as_table_version, has_deletion_file
from fermion.table.domain import Fragment, TableVersion
from fermion.table.readers import OpenFile, ReaderCache
from fermion.table.scan import ScanStats, merge_fragment_columns
from fermion.table.schema import TableSchema, project_file_table
from fermion.table.stats import int_bounds
from fermion.table.storage import TableStorage
from fermion.table.tasks.write import BATCH_ID_COLUMN_KEY

__all__ = ["BatchLookup", "BatchRanges", "OnMissing", "batch_id_column", "epoch_batches"]

OnMissing = Literal["raise", "skip"]
_LOOKUP_THREADS = 8
_INT64 = np.iinfo(np.int64)


def batch_id_column(version: TableVersion, schema: TableSchema, given: str | None = None) -> str:
    """The batch-id column of a table version: ``given``, else the table configuration's.

    ``version`` is a :class:`~fermion.table.domain.TableVersion` (a manifest message is
    still accepted).

    Raises:
        BatchModeError: no batch-id column is recorded (and none given), or it is not an
            integer column of this version's schema.

    Example:
        >>> import pyarrow as pa
        >>> schema = TableSchema.from_arrow(pa.schema([("b", pa.int64())]))
        >>> v = TableVersion(1, schema, (), config={"fermion.batch_id_column": "b"})
        >>> batch_id_column(v, schema)
        'b'
    """
    if given is not None:
        name: str | None = given
    else:
        name = as_table_version(version).config.get(BATCH_ID_COLUMN_KEY)
    if not name:
        raise BatchModeError(
            f"the table records no batch-id column ({BATCH_ID_COLUMN_KEY}); write it with "
            "plan_write(..., batch_id_column=...) or pass batch_id_column="
        )
    index = schema.arrow.get_field_index(name)
    if index < 0:
        raise BatchModeError(f"batch-id column {name!r} is not in the table schema")
    if not pa.types.is_integer(schema.arrow.field(index).type):
        raise BatchModeError(
            f"batch-id column {name!r} must be an integer column, not "
            f"{schema.arrow.field(index).type}"
        )
    return str(name)


def _as_ids(batch_ids: Any) -> np.ndarray:
    """The requested ids as a one-dimensional int64 array (typed errors otherwise)."""
    if isinstance(batch_ids, str | bytes):
        raise InvalidArgumentError("batch_ids must be a sequence of integers, not a string")
    try:
        if hasattr(batch_ids, "to_numpy"):
            batch_ids = batch_ids.to_numpy(zero_copy_only=False)
        ids = np.asarray(batch_ids)
    except (TypeError, ValueError, pa.ArrowInvalid) as exc:
        raise InvalidArgumentError(f"batch_ids must be integers: {exc}") from None
    if ids.ndim != 1:
        raise InvalidArgumentError("batch_ids must be a one-dimensional sequence of integers")
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    if ids.dtype == np.bool_ or not np.issubdtype(ids.dtype, np.integer):
        raise InvalidArgumentError(f"batch_ids must be integers, not {ids.dtype}")
    if ids.dtype == np.uint64 and bool(np.any(ids > np.uint64(_INT64.max))):
        raise InvalidArgumentError("batch ids must fit in int64")
    return ids.astype(np.int64)


@dataclass(frozen=True)
class BatchRanges:
    """Per-fragment batch-id ranges of one version, from the manifest alone.

    ``lo[k]``/``hi[k]`` bound the batch ids of ``fragments[k]`` (its min/max statistics of
    the batch-id column); a fragment without them gets the whole int64 range.
    """

    fragments: tuple[Fragment, ...]
    lo: np.ndarray
    hi: np.ndarray

    @staticmethod
    def build(version: TableVersion, field_id: int) -> BatchRanges:
        """Ranges of the fragments with live rows (fragments fully deleted are left out)
        of a :class:`~fermion.table.domain.TableVersion` (or its manifest message).

        Example:
            >>> import pyarrow as pa
            >>> schema = TableSchema.from_arrow(pa.schema([("b", pa.int64())]))
            >>> v = TableVersion(1, schema, (Fragment(1, (), 2), Fragment(2, (), 3, 3)))
            >>> r = BatchRanges.build(v, 0)
            >>> [f.id for f in r.fragments], r.lo.tolist() == [np.iinfo(np.int64).min]
            ([1], True)
        """
        return BatchRanges.of(
            [f for f in as_table_version(version).fragments if f.live_rows > 0], field_id
        )

    @staticmethod
    def of(fragments: Sequence[Fragment], field_id: int) -> BatchRanges:
        """Ranges of ``fragments``: the min/max statistics of the batch-id field
        (:func:`fermion.table.stats.int_bounds`), else the whole int64 range."""
        lo = np.full(len(fragments), _INT64.min, dtype=np.int64)
        hi = np.full(len(fragments), _INT64.max, dtype=np.int64)
        for k, fragment in enumerate(fragments):
            bounds = int_bounds(fragment, field_id)
            if bounds is not None:
                lo[k], hi[k] = bounds
        return BatchRanges(tuple(fragments), lo, hi)

    def plan(self, unique_ids: np.ndarray) -> list[tuple[Fragment, np.ndarray]]:
        """The fragments that may hold some of ``unique_ids`` (sorted, distinct), each with
        the ids its range holds: two binary searches per fragment, no IO.

        Example:
            >>> r = BatchRanges((Fragment(1, (), 1), Fragment(2, (), 1)),
            ...                 np.array([0, 10]), np.array([9, 19]))
            >>> [(f.id, ids.tolist()) for f, ids in r.plan(np.array([3, 4, 25]))]
            [(1, [3, 4])]
        """
        first = np.searchsorted(unique_ids, self.lo, side="left")
        last = np.searchsorted(unique_ids, self.hi, side="right")
        return [
            (self.fragments[k], unique_ids[first[k] : last[k]])
            for k in np.flatnonzero(last > first).tolist()
        ]


def _batch_file_rows(reader: FileReader, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of sorted ``ids``, those the batch-mode file holds, and each one's first row and
    length in the file (from BATCH_META: metadata and the ids/lengths of touched stripes)."""
    index = reader.batches()
    stripe_of = index.locate(ids)
    stripe_start = np.concatenate([[0], np.cumsum(index.stripe_rows)]).astype(np.int64)
    present: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    for s in np.unique(stripe_of[stripe_of >= 0]).tolist():
        mask = stripe_of == s
        b = index.stripe(s)
        pos = b.find(ids[mask])
        found = pos >= 0
        present.append(ids[mask][found])
        starts.append(stripe_start[s] + b.starts[pos[found]])
        lengths.append(b.lengths[pos[found]])
    if not present:
        empty = np.zeros(0, dtype=np.int64)
        return empty, np.zeros((2, 0), dtype=np.int64)
    return np.concatenate(present), np.stack([np.concatenate(starts), np.concatenate(lengths)])


def _batch_mode_by(opened: OpenFile, fragment: Fragment, batch_fid: int) -> bool:
    """Whether the file's BATCH_META ids are the values of the batch-id column: a batch-mode
    file holding the column whose id range (metadata only) is the column's min/max.
    (Worked out once per open file: neither the file nor its statistics change.)"""
    known = opened.batch_mode.get(batch_fid)
    if known is not None:
        return known
    reader = opened.reader
    found = False
    if reader.batch_mode and batch_fid in opened.top_ids:
        ranges = BatchRanges.of([fragment] if fragment.live_rows > 0 else [], batch_fid)
        index = reader.batches()
        filled = index.batches_per_stripe > 0
        if ranges.fragments and bool(np.any(filled)):
            lo, hi = int(ranges.lo[0]), int(ranges.hi[0])
            found = (
                int(index.min_ids[filled].min()) == lo and int(index.max_ids[filled].max()) == hi
            )
    opened.batch_mode[batch_fid] = found
    return found


def read_fragment_batches(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment,
    columns: Sequence[str],
    batch_column: str,
    ids: np.ndarray,
    stats: ScanStats,
    readers: ReaderCache | None = None,
) -> pa.Table:
    """The live rows of ``fragment`` whose ``batch_column`` is in ``ids`` (sorted,
    distinct), projected to ``columns`` (which must include ``batch_column``), in table
    order. Batch-mode files are read by batch; other files are scanned with a filter.
    A fragment of one data file is read through ``readers`` when given (its reader then
    stays open for the next lookup); ``stats.files_reused`` counts those kept open.
    ``fragment`` is a :class:`~fermion.table.domain.Fragment` (or its manifest message)."""
    fragment = as_fragment(fragment)
    # the files of a fragment of several are opened for this read only (ReaderCache(0))
    cache = readers if readers is not None and len(fragment.files) == 1 else ReaderCache(0)
    with ExitStack() as leases:
        files: list[OpenFile] = []
        for data_file in fragment.files:
            files.append(leases.enter_context(cache.lease(storage, data_file.path)))
            stats.files_opened += 1
            stats.files_reused += not files[-1].fresh
            files[-1].check_rows(fragment, data_file.path)
        top_ids = schema.top_level_ids()
        wanted = {top_ids[schema.arrow.get_field_index(n)]: n for n in columns}
        batch_fid = top_ids[schema.arrow.get_field_index(batch_column)]
        if len(files) == 1 and _batch_mode_by(files[0], fragment, batch_fid):
            reader = files[0].reader
            present, (starts, lengths) = _batch_file_rows(reader, ids)
            names, got = files[0].columns(wanted)
            table = reader.read_batches(present, columns=names)
            merged = project_file_table(table, got, schema, list(columns))
            offsets = (
                np.concatenate([np.arange(a, a + n) for a, n in zip(starts, lengths, strict=True)])
                if len(present)
                else np.zeros(0, dtype=np.int64)
            )
            expected = np.repeat(present, lengths)
            stored = merged.column(batch_column).to_numpy(zero_copy_only=False)
            if not np.array_equal(stored.astype(np.int64), expected):
                raise BatchModeError(
                    f"{fragment.files[0].path}: the batch-id column disagrees with the "
                    "file's batch ids (written outside the table's batch mode)"
                )
        else:
            parts = []
            for opened in files:
                names, got = opened.columns(wanted)
                part = opened.reader.read(columns=names)
                parts.append(project_file_table(part, got, schema, [wanted[g] for g in got]))
            merged = merge_fragment_columns(parts, schema, list(columns), fragment.physical_rows)
            values = merged.column(batch_column).cast(pa.int64())  # nulls never match
            hits = pc.fill_null(pc.is_in(values, value_set=pa.array(ids, pa.int64())), False)
            offsets = np.flatnonzero(hits.to_numpy(zero_copy_only=False))
            merged = take_table(merged, offsets)
        if has_deletion_file(fragment):  # (kept with the first file: its rows)
            keep, read_now = files[0].keep_mask(storage, fragment)
            stats.deletion_files_read += read_now
            merged = filter_table(merged, pa.array(keep[offsets]))
        stats.rows_returned += merged.num_rows
        return merged


class BatchLookup:
    """A planned lookup of batch ids in one table version. Build with
    ``Dataset.batch_lookup``; ``Dataset.read_batches`` is ``batch_lookup(...).to_table()``.

    Attributes:
        stats: what the lookup touched (``files_opened`` counts data files opened,
            ``fragments_pruned`` the fragments never opened).
        missing: after :meth:`to_table`, the requested ids without a live row (sorted).
        row_counts: after :meth:`to_table`, the rows returned for each requested id, in
            the order asked (0 for a missing id).
    """

    def __init__(
        self,
        storage: TableStorage,
        ranges: BatchRanges,
        schema: TableSchema,
        batch_column: str,
        batch_ids: Any,
        columns: Sequence[str] | None = None,
        *,
        on_missing: OnMissing = "raise",
        readers: ReaderCache | None = None,
    ) -> None:
        if on_missing not in ("raise", "skip"):
            raise InvalidArgumentError(f"on_missing must be 'raise' or 'skip', not {on_missing!r}")
        if isinstance(columns, str):
            raise InvalidArgumentError("columns must be a list of column names")
        names = schema.arrow.names
        self.columns = list(names) if columns is None else list(columns)
        unknown = [c for c in self.columns if c not in names]
        if unknown:
            raise ColumnNotFoundError(f"no such columns: {unknown}")
        self.ids = _as_ids(batch_ids)
        self.batch_column = batch_column
        self.on_missing = on_missing
        self.stats = ScanStats()
        self.missing = np.zeros(0, dtype=np.int64)
        self.row_counts = np.zeros(0, dtype=np.int64)
        self._storage, self._ranges, self._schema = storage, ranges, schema
        self._readers = readers

    def plan(self) -> list[tuple[Fragment, np.ndarray]]:
        """The fragments to open, each with the sorted ids its batch-id range holds."""
        unique = np.unique(self.ids)
        planned = self._ranges.plan(unique)
        self.stats.fragments_total = len(self._ranges.fragments)
        self.stats.fragments_pruned = len(self._ranges.fragments) - len(planned)
        return planned

    def _read(self, item: tuple[Fragment, np.ndarray]) -> pa.Table:
        fragment, ids = item
        needed = list(dict.fromkeys([*self.columns, self.batch_column]))
        return read_fragment_batches(
            self._storage,
            self._schema,
            fragment,
            needed,
            self.batch_column,
            ids,
            self.stats,
            self._readers,
        )

    def to_table(self) -> pa.Table:
        """The rows of the requested batches, grouped by batch in the order asked.

        Raises:
            BatchModeError: an id has no live row and ``on_missing`` is ``"raise"``.
        """
        planned = self.plan()
        # fragments of a local table are read one after another: their reads are mostly
        # Python holding the GIL, and on 2 cores 8 threads took 1.3x the time of one
        # (2 threads: the same as one); remote stores wait on requests, in parallel
        if len(planned) <= 1 or not self._storage.store.remote:
            tables = [self._read(item) for item in planned]
        else:
            with ThreadPoolExecutor(min(_LOOKUP_THREADS, len(planned))) as pool:
                tables = list(pool.map(self._read, planned))
        schema = self._output_schema()
        tables = [t for t in tables if t.num_rows]
        if not tables:
            combined = pa.Table.from_arrays(
                [pa.array([], type=f.type) for f in schema], schema=schema
            ).append_column(self.batch_column + "\0", pa.array([], pa.int64()))
            found = np.zeros(0, dtype=np.int64)
        else:
            combined = pa.concat_tables(
                [cast_table(t.select(self.columns), schema) for t in tables]
            ).append_column(
                self.batch_column + "\0",
                pa.chunked_array([t.column(self.batch_column).cast(pa.int64()) for t in tables]),
            )
            found = combined.column(self.batch_column + "\0").to_numpy()
        unique = np.unique(self.ids)
        group = np.searchsorted(unique, found)  # every found row's id is one of unique
        counts = np.bincount(group, minlength=len(unique))
        self.missing = unique[counts == 0]
        if len(self.missing) and self.on_missing == "raise":
            shown = self.missing[:5].tolist()
            more = f" and {len(self.missing) - 5} more" if len(self.missing) > 5 else ""
            raise BatchModeError(f"batch id(s) {shown}{more} have no live rows in this version")
        by_group = np.argsort(group, kind="stable")  # rows of one batch keep table order
        first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        wanted = np.searchsorted(unique, self.ids)
        self.row_counts = counts[wanted].astype(np.int64)
        order = np.concatenate(
            [by_group[first[g] : first[g + 1]] for g in wanted.tolist()]
            or [np.zeros(0, dtype=np.int64)]
        )
        out = take_table(combined.drop_columns([self.batch_column + "\0"]), order)
        return out.combine_chunks() if out.num_rows else out

    def _output_schema(self) -> pa.Schema:
        return pa.schema([self._schema.arrow.field(c).with_nullable(True) for c in self.columns])


def epoch_batches(
    lookup_factory: Any,
    ids: np.ndarray,
    *,
    seed: int | None,
    shuffle: bool,
    read_ahead: int,
) -> Iterator[tuple[int, pa.Table]]:
    """``(batch_id, rows)`` for each of ``ids`` once, in a shuffled (or sorted) order.

    ``lookup_factory(ids)`` returns a :class:`BatchLookup` with ``on_missing="skip"``;
    ids are looked up ``read_ahead`` at a time (one planning pass each). A batch whose rows
    are deleted meanwhile is left out.
    """
    if isinstance(read_ahead, bool) or not isinstance(read_ahead, int) or read_ahead < 1:
        raise InvalidArgumentError(f"read_ahead must be an integer >= 1, got {read_ahead!r}")
    order = np.sort(ids)
    if shuffle:
        order = np.random.default_rng(seed).permutation(order)
    return _epoch(lookup_factory, order, read_ahead)


def _epoch(
    lookup_factory: Any, order: np.ndarray, read_ahead: int
) -> Iterator[tuple[int, pa.Table]]:
    for start in range(0, len(order), read_ahead):
        chunk = order[start : start + read_ahead]
        lookup: BatchLookup = lookup_factory(chunk)
        table = lookup.to_table()
        offset = 0
        for bid, n in zip(chunk.tolist(), lookup.row_counts.tolist(), strict=True):
            if n:
                yield bid, table.slice(offset, n)
                offset += n
