"""Writing fragments: data files plus the manifest metadata that describes them.

This is the worker half of a distributed write: workers call :func:`write_fragments`, ship
the returned fragment messages to one driver, and the driver commits them with
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

import pyarrow as pa

from fermion.errors import InvalidArgumentError, SchemaMismatchError
from fermion.io.manifest_store import ManifestStore
from fermion.table import _failpoints
from fermion.table._datafile import write_data_file
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.schema import TableSchema
from fermion.table.stats import compute_stats
from fermion.table.storage import TableStorage
from fermion.table.versions import latest_manifest, schema_of

__all__ = ["MAX_ROWS_PER_FILE_DEFAULT", "TableData", "as_batches", "write_fragments"]

MAX_ROWS_PER_FILE_DEFAULT = 1_048_576

TableData = pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch]


def as_batches(data: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema and record batches of any supported input.

    Raises:
        InvalidArgumentError: Unsupported input type.
    """
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    if isinstance(data, list | tuple) and data and all(isinstance(b, pa.RecordBatch) for b in data):
        return data[0].schema, iter(data)
    raise InvalidArgumentError(
        f"expected a pyarrow Table, RecordBatch, RecordBatchReader or list of batches, "
        f"got {type(data).__name__}"
    )


def _chunks(batches: Iterator[pa.RecordBatch], schema: pa.Schema, size: int) -> Iterator[pa.Table]:
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        while rows >= size:
            table = pa.Table.from_batches(pending, schema)
            yield table.slice(0, size)
            rest = table.slice(size)
            pending, rows = rest.to_batches(), rest.num_rows
    if rows:
        yield pa.Table.from_batches(pending, schema)


def write_fragments(
    data: Any,
    uri: Any,
    *,
    schema: TableSchema | None = None,
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
    manifest_store: ManifestStore | None = None,
) -> list[pb.Fragment]:
    """Write data files for ``data`` under ``uri`` without committing anything.

    Args:
        data: A ``pa.Table``, ``RecordBatch``, ``RecordBatchReader`` or list of batches.
        uri: Table location (path, fsspec URL or ``(filesystem, path)``).
        schema: The table schema to write with (field ids). Default: the latest version's
            schema if the table exists, else fresh ids for the data's schema.
        max_rows_per_file: Rows per data file (one fragment per file).
        manifest_store: The table's external manifest store, if it uses one.

    Returns:
        One fragment message per data file (ids are assigned when committed).

    Raises:
        SchemaMismatchError: The data does not match the table schema.
    """
    if max_rows_per_file < 1:
        raise InvalidArgumentError(f"max_rows_per_file must be >= 1, got {max_rows_per_file}")
    storage = TableStorage(uri, manifest_store=manifest_store)
    data_schema, batches = as_batches(data)
    if schema is None:
        latest = latest_manifest(storage)
        schema = schema_of(latest) if latest is not None else TableSchema.from_arrow(data_schema)
    target = schema.check_data(data_schema)
    top_ids = schema.top_level_ids()
    fragments = []
    storage.ensure_directories()
    for chunk in _chunks(batches, data_schema, max_rows_per_file):
        table = chunk.select(target.names)
        try:
            table = table.cast(target)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaMismatchError(f"data does not fit the table schema: {exc}") from exc
        path = f"data/{uuid.uuid4().hex}.fermion"
        write_data_file(table, storage.target(path), list(schema.field_ids))
        fragment = pb.Fragment(physical_rows=table.num_rows)
        fragment.files.add(
            path=path,
            field_ids=list(schema.field_ids),
            size_bytes=storage.size(path),
            file_format="fermion",
        )
        fragment.stats.extend(compute_stats(table, top_ids))
        fragments.append(fragment)
    _failpoints.hit("after_data_write")
    return fragments
