"""The Fermion writer: "data first, meta last" (docs/FORMAT.md §1).

Rows are buffered into a stripe; a full stripe is shredded column by column into pages
(encoded and zstd-compressed on a thread pool) and appended to a buffered sink. Chunk
descriptors and page statistics stay in memory (a
:class:`~fermion.format.metadata.cmb.ColumnRecord` per column) until
:meth:`FileWriter.close`, which writes every Column Metadata Block, the schema area, the
Column Index Table and the fixed-size footer, each built by its module of
:mod:`fermion.format.metadata`.

In batch mode (:meth:`FileWriter.append_batch`) rows come as identified batches that are
never split across pages or stripes, and a BATCH_META system column records them; how the
batches are measured and joined into a stripe is :mod:`fermion.format.write.batch_stripes`.

Example:
    >>> import pyarrow as pa, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.fermion")
    >>> schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    >>> with FileWriter(path, schema, page_size=4096) as w:
    ...     w.write(pa.table({"id": [1, 2], "name": ["a", None]}))
    ...     w.write(pa.record_batch({"id": [3], "name": ["c"]}))
    >>> w.num_rows
    3
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from fermion.errors import (
    BatchModeError,
    FermionError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedTypeError,
)
from fermion.format.encoding.bloom import bloom_supported
from fermion.format.metadata.batch import (
    MAX_BATCH_ROWS,
    VIRTUAL_COLUMNS,
    check_batch_id,
    system_tree,
)
from fermion.format.metadata.cit import build_cit
from fermion.format.metadata.cmb import ColumnRecord, build_cmb
from fermion.format.metadata.footer import build_footer
from fermion.format.metadata.layout import Node, build_tree
from fermion.format.metadata.schema import build_schema_area
from fermion.format.metadata.structs import (
    BASE_VERSION_MINOR,
    CHUNK_ALL_NULL,
    FILE_HEADER_DTYPE,
    FORMAT_VERSION_MAJOR,
    MAGIC,
    PAGE_META_DTYPE,
    RequiredFeature,
    StreamType,
)
from fermion.format.options import WriteOptions, split_options
from fermion.format.streams import ArrowInput, as_reader
from fermion.format.threads import pool
from fermion.format.write.batch_stripes import STAGED_BATCHES, BatchColumns, joined
from fermion.format.write.shred import ColumnChoices, StreamChunk, shred_column
from fermion.io.sink import Sink, open_sink

__all__ = ["FileWriter", "write_table"]

_SIMPLE_STREAMS = (StreamType.VALIDITY, StreamType.BLOOM)  # single-page chunks
# batch mode measures, on a stripe of at least _CALIBRATE_MIN block columns, whether they
# encode faster on the writing thread or on the workers (rounds of _CALIBRATE_COLUMNS
# there, twice as many on the workers; see FileWriter._encode_columns)
_CALIBRATE_COLUMNS = 4
_CALIBRATE_ROUNDS = 4
_CALIBRATE_MIN = 96


def _tree_of(f: pa.Field, bloom: bool) -> Node:
    """``build_tree``, its ``UnsupportedTypeError`` naming the column."""
    try:
        return build_tree(f, bloom=bloom)
    except UnsupportedTypeError as exc:
        if repr(f.name) in str(exc):
            raise
        raise UnsupportedTypeError(f"column {f.name!r}: {exc}") from None


class FileWriter:
    """Write one Fermion file from Arrow tables or record batches.

    Args:
        where: local path, fsspec URL, ``(filesystem, path)`` pair or binary file object.
        schema: the Arrow schema every written batch must match exactly.
        field_ids: one id per storage node in pre-order (default ``0..n-1``).
        **options: :class:`~fermion.format.options.WriteOptions` fields.

    Example:
        >>> import pyarrow as pa, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "e.fermion")
        >>> with FileWriter(path, pa.schema([("x", pa.float32())])) as w:
        ...     w.write(pa.table({"x": pa.array([1.5], pa.float32())}))
    """

    def __init__(
        self,
        where: Any,
        schema: pa.Schema,
        *,
        field_ids: Sequence[int] | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(schema, pa.Schema):
            raise InvalidArgumentError(f"schema must be a pyarrow.Schema, not {type(schema)}")
        self.options: WriteOptions = split_options(WriteOptions, options)
        self.schema = schema
        blooms = set(self.options.bloom_filter_columns)
        unknown = blooms - set(schema.names)
        if unknown:
            raise InvalidArgumentError(f"bloom_filter_columns not in the schema: {sorted(unknown)}")
        # raises UnsupportedTypeError early, also for bloom filters on unsupported columns
        self._trees = [_tree_of(f, f.name in blooms) for f in schema]
        for f in schema:
            if f.name in blooms and not bloom_supported(f.type):
                raise UnsupportedTypeError(f"no bloom filters for {f.name!r} of type {f.type}")
        self._schema_area = build_schema_area(schema, field_ids, self._trees)
        self._columns = [ColumnRecord(t) for t in self._trees]
        self._choices = [ColumnChoices() for _ in self._trees]  # see ColumnChoices
        self._stripe_rows: list[int] = []
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self._sink: Sink = open_sink(where, flush_bytes=self.options.flush_bytes)
        self._mode: Literal["rows", "batches"] | None = None
        self._system = ColumnRecord(system_tree())  # BATCH_META, used in batch mode only
        self._pending_ids: list[int] = []
        self._pending_lengths: list[int] = []
        self._last_batch_id: int | None = None
        # a stripe's validity bitmap is one page: in batch mode it never exceeds page_size
        # unless a single batch needs more (that batch then gets a stripe of its own)
        self._batch_stripe_rows = min(self.options.max_stripe_rows, 8 * self.options.page_size)
        self._virtual_clash = [n for n in schema.names if n in VIRTUAL_COLUMNS]
        # batch mode's columns: the bulk path's block, how a batch's bytes are counted
        self._layout = BatchColumns.of(schema)
        self._pending_parts: list[pa.Table | pa.RecordBatch] = []  # batch mode's _pending
        # appended batches whose bytes are not measured yet (see _place_staged)
        self._staged: list[tuple[int, pa.Table | pa.RecordBatch]] = []
        self.num_batches = 0
        self.num_rows = 0
        self.closed = False
        self._required = 0
        header = np.zeros(1, dtype=FILE_HEADER_DTYPE)
        header["magic"] = MAGIC
        header["version_major"] = FORMAT_VERSION_MAJOR
        header["version_minor"] = BASE_VERSION_MINOR  # before any data: see minor_version
        self._sink.append(header.tobytes())

    # -- public API -------------------------------------------------------------------
    def write(self, data: ArrowInput) -> None:
        """Append rows; stripes are cut by row count or buffered bytes.

        ``data`` is a ``pa.Table``, ``RecordBatch``, ``RecordBatchReader``, pandas
        DataFrame or any object with ``__arrow_c_stream__``; a stream is pulled batch by
        batch, so at most a stripe of it is in memory.

        Raises:
            InvalidArgumentError: an unsupported input type.
            SchemaMismatchError: the data's schema is not the file schema.
        """
        self._check_open()
        if self._mode == "batches":
            raise BatchModeError("this file is written with append_batch(); write() cannot mix")
        for batch in self._batches(data):
            if batch.num_rows == 0:
                continue
            self._mode = "rows"
            self._pending.append(batch)
            self._pending_rows += batch.num_rows
            self._pending_bytes += batch.nbytes
            while self._pending_rows >= self.options.max_stripe_rows:
                self._flush_stripe(self.options.max_stripe_rows)
            if self._pending_bytes >= self.options.max_stripe_bytes:
                self._flush_stripe(self._pending_rows)

    def append_batch(self, batch_id: int, data: pa.Table | pa.RecordBatch) -> None:
        """Append one batch (docs/FORMAT.md §11.1): its rows never share a page with part of
        another batch, and never span two stripes.

        Args:
            batch_id: an int64, greater than every id appended before to this file.
            data: the batch's rows (at least one), with exactly the file schema.

        Raises:
            BatchModeError: id not an integer, not increasing, empty batch, or the file is
                written with :meth:`write`. The writer stays usable; nothing was appended.
            SchemaMismatchError: ``data`` does not have the file schema.

        Example:
            >>> import pyarrow as pa, tempfile, os
            >>> path = os.path.join(tempfile.mkdtemp(), "b.fermion")
            >>> with FileWriter(path, pa.schema([("x", pa.int64())])) as w:
            ...     w.append_batch(1001, pa.table({"x": [1, 2, 3]}))
            ...     w.append_batch(1002, pa.table({"x": [4, 5]}))
            >>> w.num_batches, w.num_rows
            (2, 5)
        """
        self._check_batch_input(data)
        batch_id = check_batch_id(batch_id, self._last_batch_id)
        if not data.schema.equals(self.schema, check_metadata=False):
            raise SchemaMismatchError(
                f"batch {batch_id} does not match the file schema:\n{data.schema}\n!=\n"
                f"{self.schema}"
            )
        rows = data.num_rows
        if rows == 0:
            raise BatchModeError(f"batch {batch_id} is empty (a batch needs at least one row)")
        if rows > MAX_BATCH_ROWS:
            raise BatchModeError(f"batch {batch_id} has {rows} rows (at most {MAX_BATCH_ROWS})")
        if isinstance(data, pa.Table):  # converted once here, not at each use at the flush
            batches = data.to_batches()  # (about 6 us for a slice of 50 columns)
            if len(batches) == 1:
                data = batches[0]
        self._mode = "batches"
        self._last_batch_id = batch_id
        self.num_batches += 1
        self._staged.append((batch_id, data))
        if len(self._staged) >= STAGED_BATCHES or not self._layout.measured:
            self._place_staged()

    def append_batches(self, data: pa.Table | pa.RecordBatch, batch_ids: Any) -> None:
        """Append many batches at once: consecutive rows with one id in ``batch_ids`` (one
        integer per row, runs in increasing order) form one batch. The file is the same as
        with :meth:`append_batch` once per run, without a Python call per batch; a stripe
        is cut only between batches, by the same row and byte limits.

        Args:
            data: the rows of every batch, with exactly the file schema.
            batch_ids: an integer array (numpy or Arrow, no nulls), one id per row of
                ``data``; equal ids are adjacent and the first is greater than every id
                appended before to this file.

        Raises:
            BatchModeError: ids not integers, with nulls, not increasing from run to run,
                not greater than the last id appended, or a length unlike ``data``'s; the
                file is written with :meth:`write`. Nothing is appended then.
            SchemaMismatchError: ``data`` does not have the file schema.

        Example:
            >>> import pyarrow as pa, tempfile, os
            >>> path = os.path.join(tempfile.mkdtemp(), "m.fermion")
            >>> with FileWriter(path, pa.schema([("x", pa.int64())])) as w:
            ...     w.append_batches(pa.table({"x": [1, 2, 3, 4]}), [10, 10, 11, 15])
            >>> w.num_batches, w.num_rows
            (3, 4)
        """
        self._check_batch_input(data)
        if not data.schema.equals(self.schema, check_metadata=False):
            raise SchemaMismatchError(
                f"batches do not match the file schema:\n{data.schema}\n!=\n{self.schema}"
            )
        ids = batch_id_values(batch_ids, data.num_rows)
        if len(ids) == 0:
            return
        starts = np.concatenate([[0], np.flatnonzero(ids[1:] != ids[:-1]) + 1])
        run_ids = ids[starts]
        if len(run_ids) > 1 and not bool(np.all(run_ids[1:] > run_ids[:-1])):
            k = int(np.flatnonzero(run_ids[1:] <= run_ids[:-1])[0])
            raise BatchModeError(
                f"batch id {int(run_ids[k + 1])} is not greater than the previous id "
                f"{int(run_ids[k])} (equal ids must be adjacent, runs increasing)"
            )
        check_batch_id(int(run_ids[0]), self._last_batch_id)
        bounds = np.append(starts, len(ids)).astype(np.int64)
        lengths = np.diff(bounds)
        if int(lengths.max()) > MAX_BATCH_ROWS:
            raise BatchModeError(
                f"a batch has {int(lengths.max())} rows (at most {MAX_BATCH_ROWS})"
            )
        self._place_staged()  # batches appended one by one before these go first
        self._mode = "batches"
        self._last_batch_id = int(run_ids[-1])
        self.num_batches += len(run_ids)
        self._place_runs(data, run_ids, bounds, self._layout.run_nbytes(data, bounds))

    def _check_batch_input(self, data: Any) -> None:
        """What :meth:`append_batch` and :meth:`append_batches` refuse before any id check."""
        self._check_open()
        if self._mode == "rows":
            raise BatchModeError("this file is written with write(); append_batch() cannot mix")
        if not isinstance(data, pa.Table | pa.RecordBatch):
            raise InvalidArgumentError(
                f"expected a pyarrow Table or RecordBatch, got {type(data).__name__}"
            )
        if self._virtual_clash:
            raise BatchModeError(
                f"column(s) {self._virtual_clash} clash with batch mode's virtual columns"
            )

    def _place_runs(
        self,
        data: pa.Table | pa.RecordBatch,
        run_ids: np.ndarray,
        bounds: np.ndarray,
        nbytes: np.ndarray,
    ) -> None:
        """Add runs to the pending stripe as :meth:`_add_pending` adds batches one by one
        (flush before a run that would pass a limit, and when a limit is reached), one
        slice of ``data`` per stripe."""
        cum_rows = bounds - bounds[0]
        cum_bytes = np.concatenate([[0], np.cumsum(nbytes)])
        limit_rows, limit_bytes = self._batch_stripe_rows, self.options.max_stripe_bytes
        i, n = 0, len(run_ids)
        while i < n:
            room_rows = limit_rows - self._pending_rows
            room_bytes = limit_bytes - self._pending_bytes
            fit_rows = int(np.searchsorted(cum_rows, cum_rows[i] + room_rows, side="right")) - 1
            fit_bytes = int(np.searchsorted(cum_bytes, cum_bytes[i] + room_bytes, side="right"))
            j = min(fit_rows, fit_bytes - 1, n)
            if j <= i:
                if self._pending_rows:
                    self._flush_batches()
                    continue
                j = i + 1  # one batch above a limit: a stripe of its own
            self._pending_parts.append(data.slice(int(bounds[i]), int(bounds[j] - bounds[i])))
            self._pending_rows += int(cum_rows[j] - cum_rows[i])
            self._pending_bytes += int(cum_bytes[j] - cum_bytes[i])
            self._pending_ids.extend(run_ids[i:j].tolist())
            self._pending_lengths.extend(np.diff(bounds[i : j + 1]).tolist())
            if j < n or self._pending_rows >= limit_rows or self._pending_bytes >= limit_bytes:
                self._flush_batches()
            i = j

    def _place_staged(self) -> None:
        """Move the staged batches to the pending stripe, flushing stripes where their rows
        or Arrow bytes reach the limits: batch by batch in order, the same cuts as if each
        batch were placed as it came (a batch's bytes are only measured here, for all staged
        batches at once, see :func:`~fermion.format.write.batch_stripes.staged_nbytes`)."""
        staged, self._staged = self._staged, []
        if not staged:
            return
        sizes = self._layout.staged_nbytes([d for _, d in staged])
        for (batch_id, data), nbytes in zip(staged, sizes, strict=True):
            self._add_pending(batch_id, data, data.num_rows, nbytes)

    def _add_pending(
        self, batch_id: int, data: pa.Table | pa.RecordBatch, rows: int, nbytes: int
    ) -> None:
        full_rows = self._pending_rows + rows > self._batch_stripe_rows
        full_bytes = self._pending_bytes + nbytes > self.options.max_stripe_bytes
        if self._pending_rows and (full_rows or full_bytes):
            self._flush_batches()
        self._pending_parts.append(data)
        self._pending_rows += rows
        self._pending_bytes += nbytes
        self._pending_ids.append(batch_id)
        self._pending_lengths.append(rows)
        if (
            self._pending_rows >= self._batch_stripe_rows
            or self._pending_bytes >= self.options.max_stripe_bytes
        ):
            self._flush_batches()

    def close(self) -> None:
        """Write the last stripe and all metadata; the file is complete after this."""
        if self.closed:
            return
        try:
            self._place_staged()
            if self._pending_rows and self._mode == "batches":
                self._flush_batches()
            elif self._pending_rows:
                self._flush_stripe(self._pending_rows)
            self._write_metadata()
            self._sink.close()
        except BaseException:
            self._sink.abort()
            raise
        finally:
            self.closed = True

    def abort(self) -> None:
        """Stop without writing metadata (the partial output is not a valid file)."""
        if not self.closed:
            self.closed = True
            self._sink.abort()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    # -- stripes ----------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise InvalidArgumentError("the writer is closed")

    def _batches(self, data: Any) -> Iterable[pa.RecordBatch]:
        batches: Iterable[pa.RecordBatch]
        if isinstance(data, pa.RecordBatch):
            batches, schema = [data], data.schema
        elif isinstance(data, pa.Table):
            batches, schema = data.to_batches(), data.schema
        else:
            reader = as_reader(data)
            batches, schema = reader, reader.schema
        if not schema.equals(self.schema, check_metadata=False):
            raise SchemaMismatchError(
                f"data schema does not match the file schema:\n{schema}\n!=\n{self.schema}"
            )
        return batches

    def _flush_stripe(self, rows: int) -> None:
        table = pa.Table.from_batches(self._pending, schema=self.schema)
        stripe, rest = table.slice(0, rows), table.slice(rows)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows
        self._pending_bytes = rest.nbytes if rest.num_rows else 0
        self._write_stripe(stripe)

    def _flush_batches(self) -> None:
        """Write every pending batch as one stripe (batch mode never splits a batch)."""
        stripe = self._layout.stripe(self._pending_parts, workers=self.options.worker_threads)
        self._pending_parts = []
        ids = np.asarray(self._pending_ids, dtype=np.int64)
        lengths = np.asarray(self._pending_lengths, dtype=np.int64)
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        self._pending_ids, self._pending_lengths = [], []
        self._write_stripe(stripe, (ids, lengths))

    def _encode_column(
        self, i: int, column: pa.ChunkedArray, bounds: np.ndarray | None = None
    ) -> list[StreamChunk]:
        if column.num_chunks == 1:
            array = column.chunk(0)
        else:
            array = joined(self.schema.field(i), column.chunks)
        name = self.schema.field(i).name
        encode = self.options.encodes(name)
        # batch mode decides blocks on a sample of each stripe's first page already: a
        # kept choice would only add the check's sample to it
        choices = self._choices[i] if bounds is None else None
        if choices is not None:
            choices.next_stripe()
        try:
            chunks, features = shred_column(
                self._trees[i],
                array,
                self.options,
                encode=encode,
                batch_bounds=bounds,
                choices=choices,
            )
        except UnsupportedTypeError as exc:  # values an encoded type cannot hold
            raise UnsupportedTypeError(f"column {name!r}: {exc}") from None
        self._required |= features
        return chunks

    def _encode_columns(
        self, stripe: pa.Table, bounds: np.ndarray | None
    ) -> list[list[StreamChunk]]:
        """Every column's stream chunks, in column order, encoded on the worker threads;
        in batch mode the block columns (same type, same rows, see BatchColumns) may be
        encoded on this thread instead, one after another, while the workers encode the
        other columns.

        Why: a column's encode alternates Python with short calls that release the GIL
        (a zstd frame per 2 KiB block in batch mode), and every such release hands the
        interpreter to the other thread, on another core. Measured on a 2-core VM with
        128 KB float32 columns: about 0.57 ms of CPU a column alone, 1.06-1.12 ms each on
        two threads (on one core, two threads: 0.61 ms), so the stripe took longer on two
        threads than on one; with 8 MB columns two threads won (1.37x). Which way a stripe
        goes depends on the machine and the columns, so it is measured: on a stripe of at
        least _CALIBRATE_MIN block columns, after one column here (a warm-up, untimed),
        _CALIBRATE_ROUNDS rounds each encode _CALIBRATE_COLUMNS of them here and twice as
        many on the workers, and the faster way per column (each at its best round) encodes
        the rest. Each such stripe is measured anew (the machine's load changes); with fewer
        block columns nothing is measured and every column goes to the workers. The bytes
        written are the same either way: each column is encoded on its own.
        """
        n = stripe.num_columns
        if self.options.worker_threads <= 1 or n <= 1:
            return [self._encode_column(i, stripe.column(i), bounds) for i in range(n)]

        def encode(i: int) -> list[StreamChunk]:
            return self._encode_column(i, stripe.column(i), bounds)

        ex = pool()
        done: dict[int, list[StreamChunk]] = {}
        alike = self._layout.block if bounds is not None else []
        rest, here = alike, False
        if len(alike) >= _CALIBRATE_MIN:
            done[alike[0]] = encode(alike[0])  # (a first column warms this thread up)
            k, at = _CALIBRATE_COLUMNS, 1
            mine: list[float] = []  # per column, each round: here
            theirs: list[float] = []  # and on the workers
            for _ in range(_CALIBRATE_ROUNDS):  # alternating, so that a slow moment of
                start = time.perf_counter()  # the machine does not decide alone
                for i in alike[at : at + k]:
                    done[i] = encode(i)
                middle = time.perf_counter()
                batch = alike[at + k : at + 3 * k]
                done.update(zip(batch, ex.map(encode, batch), strict=True))
                mine.append((middle - start) / k)
                theirs.append((time.perf_counter() - middle) / (2 * k))
                at += 3 * k
            here = min(mine) <= min(theirs)  # each way at its best
            rest = alike[at:]
        taken = set(alike)
        futures = [(i, ex.submit(encode, i)) for i in range(n) if i not in taken]
        if here:
            for i in rest:
                done[i] = encode(i)
        else:
            futures += [(i, ex.submit(encode, i)) for i in rest]
        for i, future in futures:
            done[i] = future.result()
        return [done[i] for i in range(n)]

    def _write_stripe(
        self, stripe: pa.Table, batches: tuple[np.ndarray, np.ndarray] | None = None
    ) -> None:
        bounds = None
        if batches is not None:
            bounds = np.concatenate([[0], np.cumsum(batches[1])]).astype(np.int64)
        results = self._encode_columns(stripe, bounds)
        for i, chunks in enumerate(results):
            self._place(self._columns[i], chunks)
        if batches is not None:  # the system column follows the user columns in the stripe
            self._place(self._system, _batch_meta_chunks(*batches, self.options))
        self._stripe_rows.append(stripe.num_rows)
        self.num_rows += stripe.num_rows

    def _place(self, col: ColumnRecord, chunks: list[StreamChunk]) -> None:
        sink = self._sink
        for rec, chunk in zip(col.streams, chunks, strict=True):
            start = sink.tell()
            for page in chunk.pages:
                sink.append(page.data)
            rec.states.append(chunk.state)
            rec.offsets.append(start if chunk.pages else 0)
            length = sink.tell() - start
            if length >= CHUNK_ALL_NULL:
                raise FermionError("a stream chunk exceeds 4 GiB; lower max_stripe_rows")
            rec.lengths.append(length)
            rec.num_values.append(chunk.num_values)
            rec.null_counts.append(chunk.null_count)
            rec.mins.append(chunk.min_val)
            rec.maxs.append(chunk.max_val)
            rec.flags.append(chunk.stats_flags)
            if rec.stream_type in _SIMPLE_STREAMS:
                rec.pages.append(None)
                continue
            metas = np.zeros(len(chunk.pages), dtype=PAGE_META_DTYPE)
            if chunk.pages:
                metas["page_size"] = [len(p.data) for p in chunk.pages]
                metas["row_count"] = [p.num_values for p in chunk.pages]
                metas["min_val"] = [p.min_val for p in chunk.pages]
                metas["max_val"] = [p.max_val for p in chunk.pages]
                metas["null_count"] = [p.null_count for p in chunk.pages]
                metas["stats_flags"] = [p.stats_flags for p in chunk.pages]
            rec.pages.append(metas)

    # -- metadata ---------------------------------------------------------------------
    def _write_metadata(self) -> None:
        sink = self._sink
        cmb_offset = sink.tell()
        batch_mode = self._mode == "batches"
        # batch mode: the BATCH_META system column's CMB follows, its CIT entry num_columns
        columns = [*self._columns, self._system] if batch_mode else self._columns
        cmb_starts = []
        for i, col in enumerate(columns):
            cmb_starts.append(sink.tell())
            sink.append(build_cmb(i, col, self._stripe_rows))
        schema_offset = sink.tell()
        sink.append(self._schema_area)
        cit_offset = sink.tell()
        sink.append(build_cit(cmb_starts, schema_offset))
        required = self._required | (RequiredFeature.BATCH_MODE if batch_mode else 0)
        footer = build_footer(
            cmb_offset=cmb_offset,
            schema_offset=schema_offset,
            cit_offset=cit_offset,
            num_rows=self.num_rows,
            num_columns=len(self._columns),
            num_stripes=len(self._stripe_rows),
            schema_size=len(self._schema_area),
            required_features=required,
            page_crc=self.options.page_crc,
        )
        sink.append(footer)


def batch_id_values(batch_ids: Any, rows: int) -> np.ndarray:
    """One int64 batch id per row, from a numpy array, Arrow array or sequence.

    Raises:
        BatchModeError: not integers, nulls, a value outside int64, or not ``rows`` ids.

    Example:
        >>> batch_id_values(pa.array([3, 3, 4], pa.uint8()), 3).tolist()
        [3, 3, 4]
    """
    if isinstance(batch_ids, pa.ChunkedArray):
        batch_ids = batch_ids.combine_chunks()
    if isinstance(batch_ids, pa.Array):
        if batch_ids.null_count:
            raise BatchModeError("batch ids have nulls")
        if not pa.types.is_integer(batch_ids.type):
            raise BatchModeError(f"batch ids must be integers, not {batch_ids.type}")
        batch_ids = batch_ids.to_numpy(zero_copy_only=False)
    values = np.asarray(batch_ids)
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        raise BatchModeError(f"batch ids must be a 1-d integer array, not {values.dtype}")
    if len(values) != rows:
        raise BatchModeError(f"{len(values)} batch ids for {rows} rows")
    if values.dtype == np.uint64 and values.size and int(values.max()) > np.iinfo(np.int64).max:
        raise BatchModeError(f"batch id {int(values.max())} does not fit in int64")
    return values.astype(np.int64, copy=False)


def _batch_meta_chunks(
    ids: np.ndarray, lengths: np.ndarray, opts: WriteOptions
) -> list[StreamChunk]:
    """The two BATCH_META chunks of a stripe, encoded like non-null i64/u32 DATA streams
    (pages by size, per-page and per-chunk min/max: the stripe's min/max batch id)."""
    out = []
    tree = system_tree()
    for node, values in ((tree, ids), (tree.children[0], lengths)):
        flat = build_tree(pa.field(node.name, node.type, nullable=False))
        array = pa.array(values, type=node.type)
        system = replace(opts, statistics=True, compression_block_size=0)
        chunks, _ = shred_column(flat, array, system, encode=False)
        data = chunks[1]  # [VALIDITY, DATA]; system pages stay PLAIN, one zstd frame
        out.append(replace(data, stream=node.streams[0]))
    return out


def write_table(
    table: ArrowInput,
    where: Any,
    *,
    field_ids: Sequence[int] | None = None,
    **options: Any,
) -> None:
    """Write a table (or a stream of batches) as one Fermion file.

    Args:
        table: a ``pa.Table``, ``RecordBatch``, ``RecordBatchReader``, pandas DataFrame or
            any object with ``__arrow_c_stream__`` (Polars, DuckDB); a stream is written
            as it is read, holding at most a stripe in memory.
        where: local path, fsspec URL, ``(filesystem, path)`` or a writable binary file
            object (``io.BytesIO``, ``pa.BufferOutputStream``, ``pa.OSFile``; left open).
        field_ids: one id per storage node in pre-order (default ``0..n-1``).
        **options: :class:`~fermion.format.options.WriteOptions` fields, e.g.
            ``page_size``, ``max_stripe_rows``, ``compression``, ``compression_level``.

    Example:
        >>> import pyarrow as pa, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "t.fermion")
        >>> write_table(pa.table({"a": [1, None, 3]}), path, compression="none")
        >>> os.path.getsize(path) > 0
        True
        >>> sink = pa.BufferOutputStream()
        >>> write_table(pa.record_batch({"a": [1]}), sink)
        >>> sink.getvalue().size > 0
        True
    """
    data = table if isinstance(table, pa.Table) else as_reader(table)
    with FileWriter(where, data.schema, field_ids=field_ids, **options) as writer:
        writer.write(data)
