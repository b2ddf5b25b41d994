"""Writing fragments: data files plus the manifest metadata that describes them.

This is the worker half of a distributed write: workers call :func:`write_fragment_values`
(or :func:`write_fragments`, which returns their manifest messages), ship the returned
fragments to one driver, and the driver commits them with
``Dataset.commit(uri, Append(fragments), read_version=...)``.

Example:
    >>> import tempfile, pyarrow as pa
    >>> uri = tempfile.mkdtemp()
    >>> frags = write_fragments(pa.table({"x": [1, 2, 3]}), uri, max_rows_per_file=2)
    >>> [f.physical_rows for f in frags], frags[0].files[0].path.startswith("data/")
    ([2, 1], True)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from fermion.errors import BatchModeError, InvalidArgumentError, SchemaMismatchError
from fermion.format import FileWriter
from fermion.format.encoding.arrow_ops import cast_table
from fermion.format.streams import as_reader, is_arrow_input
from fermion.io import failpoints
from fermion.table._datafile import open_data_writer
from fermion.table.codec import fragment_message, new_fragment
from fermion.table.domain import DataFile, Fragment
from fermion.table.manifest_store import ManifestStore
from fermion.table.ref import TableRef
from fermion.table.schema import TableSchema
from fermion.table.stats import StatsAccumulator, compute_field_stats
from fermion.table.storage import TableStorage
from fermion.table.versions import latest_table_version
from fermion.table.write_properties import WriteProperties, write_properties_of

__all__ = [
    "MAX_ROWS_PER_FILE_DEFAULT",
    "TableData",
    "as_batches",
    "write_fragment_values",
    "write_fragments",
]

MAX_ROWS_PER_FILE_DEFAULT = 1_048_576

# also a pandas DataFrame or any object with __arrow_c_stream__ (see as_batches)
TableData = pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch]


def as_batches(data: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema and record batches of any supported input: what
    :func:`fermion.format.streams.as_reader` takes, or a list of record batches. A stream
    is not read here.

    Raises:
        InvalidArgumentError: Unsupported input type.
    """
    if is_arrow_input(data):
        reader = as_reader(data)
        return reader.schema, iter(reader)
    if isinstance(data, list | tuple) and data and all(isinstance(b, pa.RecordBatch) for b in data):
        return data[0].schema, iter(data)
    if isinstance(data, list | tuple) and not data:
        raise InvalidArgumentError(
            "an empty list of batches has no schema: pass an empty pa.Table instead"
        )
    raise InvalidArgumentError(
        "expected a pyarrow Table, RecordBatch, RecordBatchReader, pandas DataFrame, an object "
        f"with __arrow_c_stream__ or a list of batches, got {type(data).__name__}"
    )


def write_fragments(
    data: Any,
    uri: Any,
    *,
    schema: TableSchema | None = None,
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
    manifest_store: ManifestStore | None = None,
    prefix: str = "data",
    batch_id_column: str | None = None,
    properties: WriteProperties | None = None,
) -> list[Any]:
    """:func:`write_fragment_values`, answered as the fragments' manifest ``Fragment``
    messages (:func:`fermion.table.codec.fragment_message` of each), as before the domain
    model; new code takes the values.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> [f.physical_rows for f in write_fragments(pa.table({"x": [1]}), tempfile.mkdtemp())]
        [1]
    """
    values = write_fragment_values(
        data, uri, schema=schema, max_rows_per_file=max_rows_per_file,
        manifest_store=manifest_store, prefix=prefix, batch_id_column=batch_id_column,
        properties=properties,
    )  # fmt: skip
    return [fragment_message(f) for f in values]


def write_fragment_values(
    data: Any,
    uri: Any,
    *,
    schema: TableSchema | None = None,
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
    manifest_store: ManifestStore | None = None,
    prefix: str = "data",
    batch_id_column: str | None = None,
    properties: WriteProperties | None = None,
) -> list[Fragment]:
    """Write data files for ``data`` under ``uri`` without committing anything.

    Args:
        data: A ``pa.Table``, ``RecordBatch``, ``RecordBatchReader`` or list of batches.
        uri: Table location (path, fsspec URL, ``(filesystem, path)`` or ``TableRef``).
        schema: The table schema to write with (field ids). Default: the latest version's
            schema if the table exists, else fresh ids for the data's schema.
        max_rows_per_file: Rows per data file (one fragment per file).
        manifest_store: The table's external manifest store, if it uses one.
        prefix: Directory of the new files, relative to the table root (a distributed
            write uses ``data/{write_id}`` so that an aborted write's files can be found).
        batch_id_column: Write in batch mode: consecutive rows with the same value of this
            integer column form one ``append_batch`` call, so a batch never crosses a page,
            a file or a fragment. Rows of one batch must arrive together; a batch id lower
            than the previous one starts a new file (ids increase within a file).
        properties: The table's write properties the files are written with (bloom
            filter columns, compression, page and stripe sizes). Default: those the latest
            version records (a caller holding the version it planned on passes its own).

    Returns:
        One :class:`~fermion.table.domain.Fragment` per data file, with its statistics
        (ids are assigned when committed: ``id`` is ``None``).

    Raises:
        SchemaMismatchError: The data does not match the table schema.
        BatchModeError: The batch id column is missing, not an integer column, or has nulls.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> frags = write_fragment_values(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
        >>> [(f.id, f.physical_rows, f.files[0].field_ids) for f in frags]
        [(None, 3, (0,))]
    """
    if max_rows_per_file < 1:
        raise InvalidArgumentError(f"max_rows_per_file must be >= 1, got {max_rows_per_file}")
    if prefix != "data" and not prefix.startswith("data/"):
        raise InvalidArgumentError(f"data files live under data/, not {prefix!r}")
    storage = TableRef.of(uri, manifest_store=manifest_store).open()
    data_schema, batches = as_batches(data)
    if schema is None or properties is None:
        latest = latest_table_version(storage)
        if properties is None:
            properties = write_properties_of(latest.config if latest is not None else {})
        if schema is None:
            schema = latest.schema if latest is not None else TableSchema.from_arrow(data_schema)
    target = schema.check_data(data_schema)
    files = _FileMaker(storage, schema, target, prefix, properties)
    if batch_id_column is None:
        _write_rows(files, batches, max_rows_per_file)
    else:
        _check_batch_column(target, batch_id_column)
        conformed = (files.conform_batch(b) for b in batches if b.num_rows)
        _write_batches(files, _batch_chunks(conformed, batch_id_column), max_rows_per_file)
    storage.sync_directories()  # a worker's files are durable before it reports them
    failpoints.hit("after_data_write")
    return files.fragments


class _FileMaker:
    """Writes data files of one schema and describes each as a fragment."""

    def __init__(
        self,
        storage: TableStorage,
        schema: TableSchema,
        target: pa.Schema,
        prefix: str,
        properties: WriteProperties,
    ) -> None:
        self.storage, self.schema, self.target, self.prefix = storage, schema, target, prefix
        self.properties = properties
        self.top_ids = schema.top_level_ids()
        self.fragments: list[Fragment] = []

    def conform(self, table: pa.Table) -> pa.Table:
        table = table.select(self.target.names)
        if table.schema.equals(self.target, check_metadata=True):
            return table  # a cast would refuse nulls under null structs in non-nullable fields
        try:
            return cast_table(table, self.target)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaMismatchError(f"data does not fit the table schema: {exc}") from exc

    def conform_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """:meth:`conform` of one record batch (batch mode casts each input batch once,
        not each of the many small batches cut from it)."""
        if batch.schema.equals(self.target, check_metadata=False):
            return batch
        return self.conform(pa.Table.from_batches([batch])).combine_chunks().to_batches()[0]

    def new_path(self) -> str:
        if not self.fragments:  # the directory is made for the first file: none if no rows
            self.storage.ensure_directory(self.prefix)
        return f"{self.prefix}/{uuid.uuid4().hex}.fermion"

    def describe(
        self, path: str, table: pa.Table | None, stats: StatsAccumulator | None = None
    ) -> None:
        """Sync the finished data file at ``path`` and record it as a fragment, with the
        statistics of ``table`` (or those ``stats`` gathered while it was streamed)."""
        self.storage.sync_file(path)
        if stats is not None:
            rows, field_stats = stats.rows, stats.result()
        else:
            assert table is not None
            rows, field_stats = table.num_rows, compute_field_stats(table, self.top_ids)
        data_file = DataFile(path, tuple(self.schema.field_ids), self.storage.size(path))
        self.fragments.append(new_fragment([data_file], rows, field_stats))


def _write_rows(files: _FileMaker, batches: Iterator[pa.RecordBatch], max_rows: int) -> None:
    """Rows-mode files of at most ``max_rows`` rows, written as the batches arrive: the
    writer holds a stripe, the statistics are merged batch by batch."""
    writer: FileWriter | None = None
    stats: StatsAccumulator | None = None
    path = ""
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            batch = files.conform_batch(batch)
            while batch.num_rows:
                if writer is None:
                    path = files.new_path()
                    writer = open_data_writer(
                        files.storage.target(path),
                        files.target,
                        files.schema.field_ids,
                        files.properties,
                    )
                    stats = StatsAccumulator(files.target, files.top_ids)
                assert stats is not None
                part = batch.slice(0, max_rows - stats.rows)
                writer.write(part)
                stats.add(part)
                batch = batch.slice(part.num_rows)
                if stats.rows == max_rows:
                    writer.close()
                    files.describe(path, None, stats)
                    writer = None
        if writer is not None:
            writer.close()
            assert stats is not None
            files.describe(path, None, stats)
            writer = None
    finally:
        if writer is not None:
            writer.abort()


def _check_batch_column(schema: pa.Schema, name: str) -> None:
    index = schema.get_field_index(name)
    if index < 0:
        raise BatchModeError(f"batch id column {name!r} is not in the data")
    if not pa.types.is_integer(schema.field(index).type):
        raise BatchModeError(
            f"batch id column {name!r} must be an integer column, not {schema.field(index).type}"
        )


def _batch_chunks(
    batches: Iterator[pa.RecordBatch], column: str
) -> Iterator[tuple[pa.Table, np.ndarray]]:
    """The rows as ``(rows, batch id per row)`` chunks that end between batches: the last
    run of ids of each input batch is held back and joined to the next (a batch may span
    input batches)."""
    carry: pa.Table | None = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if batch.column(column).null_count:
            raise BatchModeError(f"batch id column {column!r} has nulls")
        table = pa.Table.from_batches([batch])
        if carry is not None:
            table = pa.concat_tables([carry, table])
        ids = table.column(column).to_numpy()
        differ = np.flatnonzero(ids != ids[-1])  # rows before the last run
        tail = int(differ[-1]) + 1 if len(differ) else 0
        if tail:
            yield table.slice(0, tail), ids[:tail]
        carry = table.slice(tail)
    if carry is not None and carry.num_rows:
        yield carry, carry.column(column).to_numpy()


def _file_cut(ids: np.ndarray, room: int, last_id: int | None) -> int:
    """How many leading rows of ``ids`` (whole runs, ids increasing from run to run and
    above ``last_id``) fit in a file with ``room`` rows left: 0 if not even the first run.

    Example:
        >>> import numpy as np
        >>> ids = np.array([4, 4, 5, 6, 6, 3, 3])
        >>> _file_cut(ids, 10, 2), _file_cut(ids, 4, 2), _file_cut(ids, 10, 4)
        (5, 3, 0)
        >>> _file_cut(ids, 1, 2), _file_cut(ids, 0, 2), _file_cut(ids[:2], 5, None)
        (0, 0, 2)
    """
    if last_id is not None and ids[0] <= last_id:
        return 0
    falls = np.flatnonzero(ids[1:] < ids[:-1])
    end = int(falls[0]) + 1 if len(falls) else len(ids)  # ids do not decrease before it
    end = min(end, room)
    if end <= 0:
        return 0
    if end >= len(ids) or ids[end] != ids[end - 1]:
        return end
    starts = np.flatnonzero(ids[1 : end + 1] != ids[:end]) + 1  # run starts within [1, end]
    return int(starts[-1]) if len(starts) else 0


def _write_batches(
    files: _FileMaker, chunks: Iterator[tuple[pa.Table, np.ndarray]], max_rows: int
) -> None:
    """Batch-mode files: whole batches only, ids increasing within a file, many batches
    per ``append_batches`` call; the statistics are merged as the rows are written."""
    writer: FileWriter | None = None
    stats: StatsAccumulator | None = None
    path = ""
    last_id: int | None = None

    def finish() -> None:
        assert writer is not None and stats is not None
        writer.close()
        files.describe(path, None, stats)

    try:
        for table, ids in chunks:  # conformed by the caller
            while table.num_rows:
                room = max_rows - (stats.rows if stats is not None else 0)
                cut = _file_cut(ids, room, last_id) if writer is not None else 0
                if writer is not None and cut == 0:
                    finish()
                    writer, stats, last_id = None, None, None
                if writer is None:
                    path = files.new_path()
                    writer = open_data_writer(
                        files.storage.target(path),
                        files.target,
                        files.schema.field_ids,
                        files.properties,
                    )
                    stats = StatsAccumulator(files.target, files.top_ids)
                    cut = _file_cut(ids, max_rows, None)
                    if cut == 0:  # one batch above max_rows: a file of its own
                        cut = int(np.flatnonzero(np.r_[ids[1:] != ids[0], True])[0]) + 1
                assert stats is not None
                part = table.slice(0, cut)
                writer.append_batches(part, ids[:cut])
                stats.add(part)
                last_id = int(ids[cut - 1])
                table, ids = table.slice(cut), ids[cut:]
        if writer is not None:
            finish()
            writer = None
    finally:
        if writer is not None:
            writer.abort()
