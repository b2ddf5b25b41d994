"""Batch mode's stripes (docs/FORMAT.md §11): how appended batches are measured against
a stripe's limits and joined into one stripe.

A :class:`BatchColumns` is fixed per file schema. It says which columns batch mode gathers
in bulk (the "block": the columns of the numeric type most columns have) and how the
Arrow bytes of a batch are counted. :class:`~fermion.format.write.writer.FileWriter`
cuts stripes by those bytes and rows, and :meth:`BatchColumns.stripe` joins a stripe's
pending batches. Many small batches of a wide schema are not concatenated chunk by chunk:
the block columns are copied per batch into one column-major block (one C++ call) and
gathered with one NumPy concatenation; the bytes written are the same as the
chunk-by-chunk path's.

Example:
    >>> import pyarrow as pa
    >>> schema = pa.schema([("s", pa.string())] + [(f"c{i}", pa.float32()) for i in range(9)])
    >>> layout = BatchColumns.of(schema)
    >>> layout.block
    [1, 2, 3, 4, 5, 6, 7, 8, 9]
    >>> part = pa.record_batch([pa.array(["a"])] + [pa.array([1.0], pa.float32())] * 9,
    ...                        schema=schema)
    >>> layout.stripe([part, part], workers=1).num_rows
    2
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from fermion.errors import UnsupportedTypeError
from fermion.format import native
from fermion.format.encoding.encoded import has_run_ends
from fermion.format.threads import pool

__all__ = [
    "BLOCK_MIN_COLUMNS",
    "STAGED_BATCHES",
    "BatchColumns",
    "block_columns",
    "columns_of",
    "fixed_row_bytes",
    "joined",
    "record_batches",
    "staged_nbytes",
]

BLOCK_MIN_COLUMNS = 8  # fewer same-typed numeric columns: concatenating chunks is cheap
# batches staged before their Arrow bytes are measured together (FileWriter._place_staged)
STAGED_BATCHES = 64
_OFFSET_WIDTHS = {
    pa.string(): 4,
    pa.binary(): 4,
    pa.large_string(): 8,
    pa.large_binary(): 8,
}


def joined(f: pa.Field, chunks: Sequence[pa.Array]) -> pa.Array:
    """The chunks of one column's stripe as one array."""
    try:
        return pa.chunked_array(chunks, f.type).combine_chunks()
    except pa.ArrowInvalid as exc:  # run ends past what their type holds
        raise UnsupportedTypeError(f"column {f.name!r}: {f.type}: {exc}") from None


# numpy dtype (without byte order) -> Arrow C data interface format of the block types
_ARROW_FORMATS = {
    "i1": "c",
    "u1": "C",
    "i2": "s",
    "u2": "S",
    "i4": "i",
    "u4": "I",
    "i8": "l",
    "u8": "L",
    "f4": "f",
    "f8": "g",
}


def block_columns(schema: pa.Schema) -> list[int]:
    """Columns batch mode gathers in bulk: those of the numeric type most columns have,
    if at least :data:`BLOCK_MIN_COLUMNS` do (and names are unique, to drop the others).

    Example:
        >>> fields = [("s", pa.string())] + [(f"c{i}", pa.float32()) for i in range(9)]
        >>> block_columns(pa.schema(fields))
        [1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    if len(set(schema.names)) != len(schema.names):
        return []
    groups: dict[pa.DataType, list[int]] = {}
    for i, f in enumerate(schema):
        t = f.type
        if (pat.is_integer(t) or pat.is_floating(t)) and not pat.is_float16(t):
            groups.setdefault(t, []).append(i)
    best = max(groups.values(), key=len, default=[])
    return best if len(best) >= BLOCK_MIN_COLUMNS else []


def columns_of(batches: list[pa.RecordBatch], columns: list[int], schema: pa.Schema) -> pa.Table:
    """A table of ``columns`` (indices) of ``batches`` (with ``schema``), one chunk per
    batch.

    A table of whole batches cost about 1.5 us per column of each batch (4,000 batches of
    301 columns: 1.9 s): with a few columns of many, each batch is narrowed first
    (``RecordBatch.select``, about 0.4 us per column kept), e.g. the one list column
    beside 300 float32 columns (0.09 s). Narrowing to 33 of 50 columns cost more than it
    saved in a writer, so it is done only for at most one column in 8.

    Example:
        >>> b = pa.record_batch({"a": [1], "b": ["x"], "c": [2.0]})
        >>> columns_of([b, b], [1], b.schema).column(0).to_pylist()
        ['x', 'x']
    """
    if len(columns) * 8 <= len(schema):
        narrow = pa.schema([schema.field(i) for i in columns])
        return pa.Table.from_batches([b.select(columns) for b in batches], schema=narrow)
    return pa.Table.from_batches(batches, schema=schema).select(columns)


def record_batches(part: pa.Table | pa.RecordBatch) -> list[pa.RecordBatch]:
    """A table's or a batch's record batches."""
    return [part] if isinstance(part, pa.RecordBatch) else part.to_batches()


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    return table.combine_chunks().to_batches()[0]


def staged_nbytes(
    parts: Sequence[pa.Table | pa.RecordBatch],
    schema: pa.Schema,
    measured: Sequence[int],
    row_bytes: float,
) -> list[int]:
    """Arrow bytes of each part: fixed-width columns by their width per row, the
    ``measured`` others once for all parts. A string or binary column counts its values'
    bytes (from one concatenation's offsets), offsets and a validity bit per row; another
    type each part's ``nbytes`` (which per part costs microseconds a column in wrappers).

    Example:
        >>> import pyarrow as pa
        >>> parts = [pa.record_batch({"s": ["ab", None, "c"]}), pa.record_batch({"s": ["xyz"]})]
        >>> staged_nbytes(parts, parts[0].schema, [0], 0.0)
        [20, 12]
    """
    rows = np.array([p.num_rows for p in parts], dtype=np.int64)
    out = (rows * row_bytes).astype(np.int64)  # as int() per part: truncated
    if not measured:
        return out.tolist()
    split = [record_batches(p) for p in parts]
    firsts = np.concatenate([[0], np.cumsum([len(b) for b in split])[:-1]]).astype(np.int64)
    table = columns_of([b for bs in split for b in bs], list(measured), schema)
    bounds = np.concatenate([[0], np.cumsum(rows)])
    for j in range(len(measured)):
        column = table.column(j)
        width = _OFFSET_WIDTHS.get(column.type)
        if width is None:
            sizes = np.array([c.nbytes for c in column.chunks], dtype=np.int64)
            out += np.add.reduceat(sizes, firsts) if len(sizes) else 0
            continue
        array = column.combine_chunks()
        offsets = np.frombuffer(
            array.buffers()[1],
            dtype=f"<i{width}",
            count=len(array) + 1,
            offset=array.offset * width,
        ).astype(np.int64)
        out += offsets[bounds[1:]] - offsets[bounds[:-1]] + (rows + 1) * width + (rows + 7) // 8
    return out.tolist()


def fixed_row_bytes(t: pa.DataType) -> float | None:
    """Arrow bytes per row of a fixed-width type (values and validity bit), else None."""
    if pat.is_boolean(t):
        return 0.25
    if pat.is_integer(t) or pat.is_floating(t) or pat.is_temporal(t) or pat.is_decimal(t):
        return t.bit_width / 8 + 0.125
    return None


@dataclass(frozen=True)
class BatchColumns:
    """What batch mode needs to know of a file schema's columns.

    Attributes:
        schema: The file schema.
        block: The columns gathered in bulk (:func:`block_columns`; empty: none).
        select: The block columns, to narrow a batch to them (empty: the block is every
            column, no narrowing).
        measured: Columns whose Arrow bytes are measured (not fixed-width).
        row_bytes: Arrow bytes per row of the fixed-width columns together.
    """

    schema: pa.Schema
    block: list[int]
    select: list[int]
    measured: list[int]
    row_bytes: float

    @classmethod
    def of(cls, schema: pa.Schema) -> BatchColumns:
        """The plan of ``schema``'s columns.

        A batch's Arrow bytes count fixed-width columns by their width (``Table.nbytes``
        of a slice walks every buffer: 2.8 ms for a 30-row slice of 1,000 columns).
        """
        block = block_columns(schema)
        # the other columns, if any (RecordBatch.select by index: drop_columns by name
        # costs about a millisecond a batch at 50 columns)
        select = block if len(block) < len(schema) else []
        widths = [fixed_row_bytes(f.type) for f in schema]
        measured = [i for i, w in enumerate(widths) if w is None]
        return cls(schema, block, select, measured, sum(w for w in widths if w is not None))

    def staged_nbytes(self, parts: Sequence[pa.Table | pa.RecordBatch]) -> list[int]:
        """Arrow bytes of each part (:func:`staged_nbytes`)."""
        return staged_nbytes(parts, self.schema, self.measured, self.row_bytes)

    def run_nbytes(self, data: pa.Table | pa.RecordBatch, bounds: np.ndarray) -> np.ndarray:
        """Arrow bytes of each run ``bounds[k]:bounds[k + 1]`` of ``data``, measured as
        :func:`staged_nbytes` measures a batch (a column that is neither fixed-width nor
        string/binary: its bytes shared out by rows)."""
        lengths = np.diff(bounds)
        out = (lengths * self.row_bytes).astype(np.int64)
        rows = max(1, data.num_rows)
        for i in self.measured:
            column = data.column(i)
            array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            width = _OFFSET_WIDTHS.get(array.type)
            if width is None:
                out += (lengths * (array.nbytes / rows)).astype(np.int64)
                continue
            offsets = np.frombuffer(
                array.buffers()[1], dtype=f"<i{width}", count=len(array) + 1,
                offset=array.offset * width,
            ).astype(np.int64)  # fmt: skip
            out += offsets[bounds[1:]] - offsets[bounds[:-1]] + (lengths + 1) * width
            out += (lengths + 7) // 8
        return out

    def gather(self, parts: Sequence[pa.Table | pa.RecordBatch], workers: int) -> np.ndarray | None:
        """The block columns of ``parts`` (a stripe's batches) as one ``(columns, rows)`` array (a
        C-contiguous row per column), or None when some batch has a null in them (the
        generic path then writes this stripe; docs/FORMAT.md §11.1 is unchanged either way:
        pages are still cut at batch boundaries).

        The batches are split among ``workers`` threads; each thread's share is one Arrow C
        stream (``RecordBatchReader.__arrow_c_stream__``) that the compiled kernel
        (``gather_stream``) reads with the GIL released, copying each batch's block columns
        into their rows of the block (a memcpy per column): the schema is exported once
        and each batch's arrays in C++, with no Python object per batch. Without the kernel,
        or for a thread's share where it declines a batch, each batch is copied column-major
        by one C++ call (``RecordBatch.to_tensor``) and then into the block.
        """
        starts = np.concatenate([[0], np.cumsum([p.num_rows for p in parts])]).tolist()
        dtype = np.dtype(self.schema.field(self.block[0]).type.to_pandas_dtype())
        block = np.empty((len(self.block), starts[-1]), dtype=dtype)
        kernels, arrow_format = native.KERNELS, _ARROW_FORMATS[dtype.str[1:]]
        columns = np.asarray(self.block, dtype=np.int64)
        select = self.select

        def copy_share(lo: int, hi: int) -> bool:
            if kernels is not None and lo < hi:
                batches = [b for p in parts[lo:hi] for b in record_batches(p)]
                stream = pa.RecordBatchReader.from_batches(self.schema, batches)
                rows = kernels.gather_stream(
                    stream.__arrow_c_stream__(),
                    arrow_format,
                    dtype.itemsize,
                    columns,
                    block,
                    starts[-1],
                    starts[lo],
                )
                if rows == starts[hi] - starts[lo]:
                    return True
            for k in range(lo, hi):  # (rows, columns) in Fortran order: its transpose is a
                part = parts[k]  # row per column (Table.to_tensor is several times slower;
                if isinstance(part, pa.Table):  # a one-chunk Table is a RecordBatch by now)
                    part = _one_batch(part)
                if select:
                    part = part.select(select)
                try:
                    tensor = part.to_tensor(row_major=False).to_numpy().T
                except (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    return False  # nulls
                block[:, starts[k] : starts[k + 1]] = tensor
            return True

        workers = min(workers, len(parts))
        cuts = np.linspace(0, len(parts), workers + 1).round().astype(int).tolist()
        if workers > 1:
            done = list(pool().map(copy_share, cuts[:-1], cuts[1:]))
        else:
            done = [copy_share(0, len(parts))]
        return block if all(done) else None

    def stripe(self, parts: Sequence[pa.Table | pa.RecordBatch], *, workers: int) -> pa.Table:
        """``parts`` (a stripe's batches, in order) as one table: through the block when
        the schema has one and its columns have no nulls in these batches, else by one C++
        concatenation of every column (per column from Python, each of the many small
        chunks would first become a Python object)."""
        block = self.gather(parts, workers) if self.block else None
        if block is None:
            batches = [b for part in parts for b in record_batches(part)]
            return pa.Table.from_batches(batches, schema=self.schema).combine_chunks()
        return self._from_block(block, parts)

    def _from_block(
        self, block: np.ndarray, parts: Sequence[pa.Table | pa.RecordBatch]
    ) -> pa.Table:
        """The batches as one stripe: block columns from ``block`` (no copy), the other
        columns by one C++ concatenation."""
        arrays: list[Any] = [None] * len(self.schema)
        for j, i in enumerate(self.block):
            arrays[i] = pa.array(block[j], type=self.schema.field(i).type)
        rest = [i for i in range(len(self.schema)) if arrays[i] is None]
        if any(has_run_ends(self.schema.field(i).type) for i in rest):
            # run-end encoded values are joined column by column: a join past what their
            # run-end type can count is an UnsupportedTypeError naming the column
            for i in rest:
                chunks = [b.column(i) for p in parts for b in record_batches(p)]
                arrays[i] = joined(self.schema.field(i), chunks)
        elif rest:  # one C++ concatenation of the other columns (per part from Python, each
            # part's column would first become a Python object)
            batches = [b for p in parts for b in record_batches(p)]
            table = columns_of(batches, rest, self.schema)
            for i, column in zip(rest, table.combine_chunks().columns, strict=True):
                arrays[i] = column
        return pa.Table.from_arrays(arrays, schema=self.schema)
