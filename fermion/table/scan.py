"""Scans: prune fragments with manifest statistics, read through the schema, drop deletions.

A scan of version ``v`` with ``filter``:

1. **fragment pruning** — each fragment's statistics become a guarantee; fragments whose
   guarantee contradicts the filter are never opened (:func:`fermion.table.stats.prune`);
2. **file reading** — the data file is read by field id through the current schema
   (renames, widening, columns added later read as nulls). When a fragment has no deletions
   and needs no renaming, the filter is handed to the file reader too (page pruning);
3. **deletions and filter** — deleted rows are masked out, then the filter is applied with
   ``pyarrow.compute``.

:class:`ScanStats` counts what happened, so tests and benchmarks can prove the pruning.

Example:
    >>> import tempfile, pyarrow as pa, pyarrow.compute as pc, fermion.table as ft
    >>> uri = tempfile.mkdtemp()
    >>> ds = ft.write_dataset(pa.table({"x": list(range(10))}), uri, max_rows_per_file=5)
    >>> scanner = ds.scanner(filter=pc.field("x") >= 7)
    >>> scanner.to_table().column("x").to_pylist(), scanner.stats.files_opened
    ([7, 8, 9], 1)
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import ColumnNotFoundError, InvalidArgumentError, InvalidFileError
from fermion.format import FileReader
from fermion.format.encoding.arrow_ops import cast_table, filter_table, take_table
from fermion.format.read.pruning import referenced_fields
from fermion.table._datafile import open_data_file
from fermion.table.codec import (
    as_fragment,
    as_table_version,
    fragment_message,
    has_deletion_file,
)
from fermion.table.deletions import keep_mask, read_fragment_deletions
from fermion.table.domain import Fragment, TableVersion
from fermion.table.predicate import parse_predicate
from fermion.table.readers import ReaderCache
from fermion.table.row_ids import ROW_ID, add_row_id_column, row_id_request
from fermion.table.schema import TableSchema, project_file_table, top_level_field_ids
from fermion.table.stats import guarantee_of, prune
from fermion.table.storage import TableStorage

__all__ = [
    "ROW_OFFSET",
    "IndexedScan",
    "STREAM_READAHEAD",
    "ScanStats",
    "Scanner",
    "fragment_stripe_rows",
    "merge_fragment_columns",
    "open_fragment_files",
    "read_fragment",
]

ROW_OFFSET = "_rowoffset"
#: ``(storage, version, schema, filter, fragments, *, stats, columns, with_row_offsets,
#: readers) -> (fragments to read, read(fragment) -> its rows, or None to scan it)``: a
#: scan through a scalar index, on a :class:`~fermion.table.domain.TableVersion` and its
#: fragments (``fermion.table.indices.lookup.indexed_scan``).
IndexedScan = Callable[..., tuple[list[Fragment], Callable[[Fragment], pa.Table | None]]]
_SCAN_THREADS = 8
# fragments a streaming scan reads ahead: memory stays a few fragments, not the table
STREAM_READAHEAD = 2


@dataclass
class ScanStats:
    """What a scan touched."""

    fragments_total: int = 0
    fragments_pruned: int = 0
    files_opened: int = 0
    files_reused: int = 0  # of files_opened: readers a dataset kept open (batch lookups)
    deletion_files_read: int = 0
    rows_returned: int = 0
    fragments_indexed: int = 0  # covered by the scalar index a filter conjunct used
    index_files_read: int = 0
    index_bytes_read: int = 0


def _referenced(filter: pc.Expression | None, names: Sequence[str]) -> list[str]:
    """Columns of ``names`` the filter references (read from the expression's structure)."""
    if filter is None:
        return []
    used = referenced_fields(filter)
    return [name for name in names if name in used]


def open_fragment_files(
    storage: TableStorage, fragment: Fragment, stats: ScanStats
) -> list[tuple[FileReader, list[int]]]:
    """Open every data file of a fragment with its top-level field ids (caller closes)."""
    fragment = as_fragment(fragment)
    readers: list[tuple[FileReader, list[int]]] = []
    try:
        for data_file in fragment.files:
            reader = open_data_file(storage.target(data_file.path))
            readers.append((reader, []))
            stats.files_opened += 1
            if reader.num_rows != fragment.physical_rows:
                raise InvalidFileError(
                    f"{data_file.path}: {reader.num_rows} rows, the manifest says "
                    f"{fragment.physical_rows}"
                )
            readers[-1] = (reader, top_level_field_ids(reader.schema, reader.field_ids))
    except BaseException:
        for reader, _ in readers:
            reader.close()
        raise
    return readers


def read_fragment(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment,
    columns: Sequence[str],
    filter: pc.Expression | None = None,
    *,
    with_row_offsets: bool = False,
    stats: ScanStats | None = None,
    stripes: range | None = None,
) -> pa.Table:
    """The live rows of one fragment matching ``filter``, projected to ``columns``.

    With ``with_row_offsets`` a ``_rowoffset`` (uint64) column gives each row's physical
    offset in the fragment. ``stripes`` reads only that range of stripes of a fragment
    with one data file (see :func:`fragment_stripe_rows`); its deletions and the filter
    are applied as for the whole fragment, so a fragment split into stripe ranges reads
    exactly the rows of the whole.

    Raises:
        InvalidArgumentError: ``stripes`` for a fragment of several data files, or out of
            range.

    Example:
        >>> import tempfile, pyarrow as pa, pyarrow.compute as pc, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
        >>> ds.delete(pc.field("x") == 2)
        >>> read_fragment(ds.storage, ds.table_schema, ds.fragments[0], ["x"],
        ...               stripes=range(0, 1)).to_pydict()
        {'x': [1, 3]}
    """
    fragment = as_fragment(fragment)
    stats = stats if stats is not None else ScanStats()
    needed = list(dict.fromkeys([*columns, *_referenced(filter, schema.arrow.names)]))
    if not needed:
        needed = [schema.arrow.names[0]]
    if stripes is not None and len(fragment.files) != 1:
        raise InvalidArgumentError(
            f"fragment {fragment.id} has {len(fragment.files)} data files: stripe ranges "
            "need exactly one"
        )
    opened = open_fragment_files(storage, fragment, stats)
    try:
        span = (0, fragment.physical_rows)
        if stripes is not None:
            span = _stripe_span(opened[0][0], stripes)
        return _read_opened(
            storage, schema, fragment, opened, columns, needed, filter, stats, with_row_offsets,
            stripes, span,
        )  # fmt: skip
    finally:
        for reader, _ in opened:
            reader.close()


def take_fragment(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment,
    columns: Sequence[str],
    positions: np.ndarray,
    readers: ReaderCache | None = None,
) -> pa.Table:
    """The live rows at ``positions`` of ``fragment`` (0-based among its live rows, in scan
    order; any order, repeats allowed, each in range), projected to ``columns``, in the
    order asked. Of a fragment of one data file only the pages holding them are read
    (``FileReader.take``), through ``readers`` when given (the file then stays open); a
    fragment of several data files is read whole.

    Example:
        >>> import tempfile, numpy as np, pyarrow as pa, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"x": [1, 2, 3, 4]}), tempfile.mkdtemp())
        >>> ds.delete("x = 2")
        >>> take_fragment(ds.storage, ds.table_schema, ds.fragments[0], ["x"],
        ...               np.array([2, 0])).to_pydict()
        {'x': [4, 1]}
    """
    fragment = as_fragment(fragment)
    positions = np.asarray(positions, dtype=np.int64)
    if len(fragment.files) == 1:
        top_ids = schema.top_level_ids()
        wanted = {top_ids[schema.arrow.get_field_index(n)] for n in columns}
        path = fragment.files[0].path
        with (readers if readers is not None else ReaderCache(0)).lease(storage, path) as opened:
            opened.check_rows(fragment, path)
            names, got = opened.columns(wanted)
            if names:  # (else every column asked is newer than the file: read below)
                physical = positions
                if has_deletion_file(fragment):
                    physical = opened.live_rows(storage, fragment)[positions]
                table = opened.reader.take(physical, columns=names)
                return project_file_table(table, got, schema, list(columns))
    return take_table(read_fragment(storage, schema, fragment, columns), positions)


def _read_opened(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment,
    opened: list[tuple[FileReader, list[int]]],
    columns: Sequence[str],
    needed: list[str],
    filter: pc.Expression | None,
    stats: ScanStats,
    with_row_offsets: bool,
    stripes: range | None,
    span: tuple[int, int],
) -> pa.Table:
    top_ids = schema.top_level_ids()
    wanted_ids = {top_ids[schema.arrow.get_field_index(n)]: n for n in needed}
    has_deletions = has_deletion_file(fragment)
    parts: list[pa.Table] = []
    for reader, file_ids in opened:
        file_columns = [
            reader.schema.field(i).name for i, fid in enumerate(file_ids) if fid in wanted_ids
        ]
        same = all(
            wanted_ids[fid] == reader.schema.field(i).name
            and reader.schema.field(i).type.equals(schema.arrow.field(wanted_ids[fid]).type)
            for i, fid in enumerate(file_ids)
            if fid in wanted_ids
        )
        push = (
            filter is not None
            and len(opened) == 1
            and not has_deletions
            and not with_row_offsets
            and same
            and len(file_columns) == len(needed)
        )
        table = reader.read(columns=file_columns, filter=filter if push else None, stripes=stripes)
        if push:
            out = table.select(list(columns))
            stats.rows_returned += out.num_rows
            return out
        ids = [file_ids[reader.schema.get_field_index(c)] for c in file_columns]
        parts.append(project_file_table(table, ids, schema, [wanted_ids[i] for i in ids]))
    start, stop = span
    merged = merge_fragment_columns(parts, schema, needed, stop - start)
    if with_row_offsets:
        merged = merged.append_column(ROW_OFFSET, pa.array(np.arange(start, stop, dtype=np.uint64)))
    if has_deletions:
        deleted = read_fragment_deletions(storage, fragment)
        stats.deletion_files_read += 1
        keep = keep_mask(deleted, fragment.physical_rows)[start:stop]
        merged = filter_table(merged, pa.array(keep))
    if filter is not None:
        merged = filter_table(merged, filter, referenced_fields(filter))
    out = merged.select([*columns, ROW_OFFSET] if with_row_offsets else list(columns))
    stats.rows_returned += out.num_rows
    return out


def fragment_stripe_rows(storage: TableStorage, fragment: Fragment) -> list[int]:
    """Rows of each stripe of a fragment's data file (one entry per stripe).

    A fragment of several data files (columns added by a schema change) has no common
    stripes: it is one entry of ``physical_rows``.

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
        >>> fragment_stripe_rows(ds.storage, ds.fragments[0])
        [3]
    """
    fragment = as_fragment(fragment)
    if len(fragment.files) != 1:
        return [fragment.physical_rows]
    with open_data_file(storage.target(fragment.files[0].path)) as reader:
        return reader.stripe_row_counts()


def _stripe_span(reader: FileReader, stripes: range) -> tuple[int, int]:
    """The physical rows ``[start, stop)`` of a range of stripes."""
    counts = reader.stripe_row_counts()
    if stripes.step != 1 or (len(stripes) and (stripes.start < 0 or stripes.stop > len(counts))):
        raise InvalidArgumentError(f"stripes {stripes} out of range for {len(counts)} stripes")
    start = sum(counts[: stripes.start])
    return start, start + sum(counts[stripes.start : stripes.stop])


def merge_fragment_columns(
    parts: list[pa.Table], schema: TableSchema, needed: list[str], rows: int
) -> pa.Table:
    columns: dict[str, pa.ChunkedArray] = {}
    for part in parts:
        for name in part.column_names:
            columns.setdefault(name, part.column(name))
    arrays, fields = [], []
    for name in needed:
        field = schema.arrow.field(name)
        if name in columns:
            arrays.append(columns[name])
            fields.append(field)
        else:  # no data file holds this field: it was added after the fragment was written
            arrays.append(pa.nulls(rows, field.type))
            fields.append(field.with_nullable(True))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


class Scanner:
    """A planned scan of one table version. Build with ``Dataset.scanner``.

    ``version`` is the :class:`~fermion.table.domain.TableVersion` scanned (its manifest
    message is still accepted, the signature before the handle). :meth:`fragment_values`
    gives the fragments to read as domain values; :meth:`fragments` and :meth:`to_tables`
    hand out their manifest messages, as they did before.
    """

    def __init__(
        self,
        storage: TableStorage,
        version: TableVersion,
        schema: TableSchema,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        with_row_offsets: bool = False,
        batch_size: int | None = None,
        indices: IndexedScan | None = None,
        readers: ReaderCache | None = None,
    ) -> None:
        names = schema.arrow.names
        if batch_size is not None and batch_size <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        self.batch_size = batch_size
        if isinstance(columns, str):
            raise InvalidArgumentError("columns must be a list of column names")
        self.columns = list(names) if columns is None else list(columns)
        handle = as_table_version(version)
        # a handle the caller keeps (a Dataset's) keeps its fragments' pruning guarantees
        self._keep_guarantees = handle is version
        # "_rowid" asked for (and not a column of the table): read offsets, map them to ids
        self._requested, self._row_ids = row_id_request(handle, names, self.columns)
        if self._row_ids:
            self.columns = [c for c in self.columns if c != ROW_ID]
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise ColumnNotFoundError(f"no such columns: {missing}")
        if isinstance(filter, str):
            filter = parse_predicate(filter, schema.arrow)
        elif filter is not None:
            unknown = sorted(referenced_fields(filter) - set(names))
            if unknown:
                raise ColumnNotFoundError(f"filter {filter}: no column named {unknown[0]!r}")
        self.filter = filter
        self.stats = ScanStats()
        self._storage, self._version, self._schema = storage, handle, schema
        self._with_row_offsets = with_row_offsets
        self._offsets = with_row_offsets or self._row_ids  # what the fragment reads return
        self._indices = indices
        self._readers = readers  # data files kept open for indexed lookups (a Dataset's)
        self._indexed_read: Callable[[Fragment], pa.Table | None] | None = None

    def fragments(self) -> list[Any]:
        """The manifest ``Fragment`` messages of :meth:`fragment_values`, as this method
        gave them before the domain model (the Spark data source reads them); new code
        calls :meth:`fragment_values`."""
        return [fragment_message(f) for f in self._plan()]

    def fragment_values(self) -> list[Fragment]:
        """The fragments left after pruning by a scalar index and by manifest statistics.

        The index is consulted first (its lookup costs the same whatever fragments
        statistics would keep): a fragment it answers exactly (every conjunct) is read only
        at its candidate rows, the rows the filter keeps (none: the fragment is dropped),
        which statistics cannot narrow, so statistics prune only the other fragments.

        Example:
            >>> import tempfile, pyarrow as pa, fermion.table as ft
            >>> ds = ft.write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp(),
            ...                       max_rows_per_file=2)
            >>> [f.live_rows for f in ds.scanner(filter="x > 2").fragment_values()]
            [1]
        """
        return self._plan()

    def _plan(self) -> list[Fragment]:
        every = self._version.fragments
        fragments = [f for f in every if f.live_rows > 0]
        self.stats.fragments_total = len(every)
        answered: Callable[[Sequence[Fragment]], bool] | None = None
        if self.filter is not None and self._indices is not None and self._version.has_indices:
            fragments, self._indexed_read = self._indices(
                self._storage, self._version, self._schema, self.filter, fragments,
                stats=self.stats, columns=self.columns,
                with_row_offsets=self._offsets, readers=self._readers,
            )  # fmt: skip
            if getattr(self._indexed_read, "exact", False):
                answered = getattr(self._indexed_read, "answers_all", None)
        unanswered = [f for f in fragments if answered is None or not answered([f])]
        if self.filter is not None and unanswered:
            only = set(_referenced(self.filter, self._schema.arrow.names))
            cache = self._keep_guarantees
            guarantees = [guarantee_of(f, self._schema, only, keep=cache) for f in unanswered]
            keep = prune(guarantees, self._schema.arrow, self.filter)
            pruned = {id(f) for f, k in zip(unanswered, keep, strict=True) if not k}
            fragments = [f for f in fragments if id(f) not in pruned]
        self.stats.fragments_pruned = self.stats.fragments_total - len(fragments)
        return fragments

    def _read(self, fragment: Fragment) -> pa.Table:
        table = self._indexed_read(fragment) if self._indexed_read is not None else None
        if table is None:
            table = read_fragment(
                self._storage,
                self._schema,
                fragment,
                self.columns,
                self.filter,
                with_row_offsets=self._offsets,
                stats=self.stats,
            )
        if self._row_ids:
            table = add_row_id_column(
                table, fragment, self._requested, ROW_OFFSET, keep_offsets=self._with_row_offsets
            )
        return table

    def to_tables(self, readahead: int = _SCAN_THREADS) -> Iterator[tuple[Any, pa.Table]]:
        """Each surviving fragment (its manifest message, as :meth:`fragments` gives it)
        with its rows, in fragment order.

        At most ``readahead`` fragments are read ahead of the one handed out (on as many
        threads), so a scan holds at most ``readahead + 1`` fragments in memory.
        """
        for fragment, table in self._tables(readahead):
            yield fragment_message(fragment), table

    def _tables(self, readahead: int) -> Iterator[tuple[Fragment, pa.Table]]:
        fragments = self._plan()
        # fragments an index answers are read one after another: their reads are small
        # takes, or reads that use the file reader's own threads (threads here only
        # contend for the interpreter)
        answered = getattr(self._indexed_read, "answers_all", None)
        if len(fragments) <= 1 or readahead <= 0 or (answered and answered(fragments)):
            yield from ((f, self._read(f)) for f in fragments)
            return
        with ThreadPoolExecutor(min(readahead, len(fragments))) as pool:
            pending: deque[tuple[Fragment, Future[pa.Table]]] = deque()
            queued = iter(fragments)
            try:
                for fragment in itertools.islice(queued, readahead):
                    pending.append((fragment, pool.submit(self._read, fragment)))
                while pending:
                    fragment, future = pending.popleft()
                    table = future.result()
                    nxt = next(queued, None)
                    if nxt is not None:
                        pending.append((nxt, pool.submit(self._read, nxt)))
                    yield fragment, table
            finally:
                for _, future in pending:
                    future.cancel()

    def to_batches(self, batch_size: int | None = None) -> Generator[pa.RecordBatch, None, None]:
        """The result as record batches in the output schema, fragment by fragment
        (at most :data:`STREAM_READAHEAD` fragments read ahead), split to ``batch_size``
        rows if given."""
        batch_size = self.batch_size if batch_size is None else batch_size
        if batch_size is not None and batch_size <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        schema = self._output_schema()
        for _, table in self._tables(STREAM_READAHEAD):
            if not table.schema.equals(schema):
                table = cast_table(table, schema)
            for batch in table.to_batches(max_chunksize=batch_size):
                if batch.num_rows:
                    yield batch

    def to_reader(self, batch_size: int | None = None) -> pa.RecordBatchReader:
        """The result as a ``pa.RecordBatchReader`` that reads as it is consumed (what
        DuckDB asks a ``pyarrow.dataset`` scanner for).

        Example:
            >>> import tempfile, pyarrow as pa, fermion.table as ft
            >>> ds = ft.write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
            >>> ds.scanner(["x"], "x > 1").to_reader().read_all().to_pydict()
            {'x': [2, 3]}
        """
        if batch_size is not None and batch_size <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        return pa.RecordBatchReader.from_batches(self._output_schema(), self.to_batches(batch_size))

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the rows this scan returns."""
        return self._output_schema()

    def to_table(self) -> pa.Table:
        """The result as one table."""
        schema = self._output_schema()
        tables = [t for _, t in self._tables(_SCAN_THREADS)]
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(
            [t if t.schema.equals(schema, check_metadata=True) else cast_table(t, schema)
             for t in tables]
        )  # fmt: skip

    def count_rows(self) -> int:
        """Number of rows matching (from the manifest alone when there is no filter)."""
        if self.filter is None:
            self.stats.fragments_total = len(self._version.fragments)
            return self._version.live_rows
        return sum(t.num_rows for _, t in self._tables(_SCAN_THREADS))

    def _output_schema(self) -> pa.Schema:
        if self._row_ids:
            fields = [
                pa.field(ROW_ID, pa.uint64(), nullable=False)
                if c == ROW_ID
                else self._schema.arrow.field(c).with_nullable(True)
                for c in self._requested
            ]
            if self._with_row_offsets:
                fields.append(pa.field(ROW_OFFSET, pa.uint64()))
            return pa.schema(fields)
        fields = [self._schema.arrow.field(c).with_nullable(True) for c in self.columns]
        if self._with_row_offsets:
            fields.append(pa.field(ROW_OFFSET, pa.uint64()))
        return pa.schema(fields)
