"""Arrow inputs and outputs: every writer accepts the same data, every reader exports a stream.

Inputs (:func:`as_reader`): a ``pa.Table``, ``pa.RecordBatch``, ``pa.RecordBatchReader``,
a pandas ``DataFrame`` or any object with ``__arrow_c_stream__`` (the Arrow PyCapsule
interface: a Polars DataFrame, a DuckDB relation, another library's reader). Streams stay
streams: batches are pulled one at a time, so a writer holds at most a stripe.

Outputs (:func:`export_stream`): an ``__arrow_c_stream__`` for a reader factory, honouring a
``requested_schema`` by projecting to its columns before the batches are read.

Example:
    >>> import pyarrow as pa
    >>> reader = as_reader(pa.record_batch({"x": [1, 2]}))
    >>> reader.schema.names, reader.read_all().num_rows
    (['x'], 2)
    >>> as_reader(42)
    Traceback (most recent call last):
    ...
    fermion.errors.InvalidArgumentError: expected a pyarrow Table, ... got int
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from fermion.errors import InvalidArgumentError

__all__ = ["ArrowInput", "as_reader", "export_stream", "is_arrow_input"]

ArrowInput = Any  # pa.Table | pa.RecordBatch | pa.RecordBatchReader | DataFrame | stream


def is_arrow_input(data: Any) -> bool:
    """Whether :func:`as_reader` accepts ``data`` (without consuming it).

    Example:
        >>> import pyarrow as pa
        >>> is_arrow_input(pa.table({"x": [1]})), is_arrow_input([1, 2])
        (True, False)
    """
    return (
        isinstance(data, pa.Table | pa.RecordBatch | pa.RecordBatchReader)
        or _is_pandas(data)
        or hasattr(data, "__arrow_c_stream__")
    )


def _is_pandas(data: Any) -> bool:
    pandas = sys.modules.get("pandas")  # never imported here: a DataFrame implies it is loaded
    return pandas is not None and isinstance(data, pandas.DataFrame)


def as_reader(data: ArrowInput) -> pa.RecordBatchReader:
    """A ``RecordBatchReader`` over any supported input (a stream is not read here).

    A pandas DataFrame is converted as ``pa.Table.from_pandas`` does (its index kept the
    way ``pyarrow.parquet`` keeps it).

    Raises:
        InvalidArgumentError: an unsupported type, or a stream export that fails.

    Example:
        >>> import pandas as pd
        >>> as_reader(pd.DataFrame({"a": [1.5]})).read_all().column("a").to_pylist()
        [1.5]
    """
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(data.schema, [data])
    if _is_pandas(data):
        try:
            table = pa.Table.from_pandas(data)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"cannot convert the DataFrame to Arrow: {exc}") from None
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    if hasattr(data, "__arrow_c_stream__"):
        try:
            return pa.RecordBatchReader.from_stream(data)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"{type(data).__name__}.__arrow_c_stream__ failed: {exc}"
            ) from None
    raise InvalidArgumentError(
        "expected a pyarrow Table, RecordBatch, RecordBatchReader, pandas DataFrame or an "
        f"object with __arrow_c_stream__, got {type(data).__name__}"
    )


def export_stream(
    open_reader: Callable[[Sequence[str] | None], pa.RecordBatchReader],
    requested_schema: object | None,
) -> object:
    """The ``__arrow_c_stream__`` capsule of ``open_reader(columns)``.

    A ``requested_schema`` (a schema capsule) selects its columns before anything is read
    (projection pushdown); the stream is then cast to it as pyarrow allows.

    Example:
        >>> import pyarrow as pa
        >>> t = pa.table({"a": [1], "b": ["x"]})
        >>> def open_reader(columns):
        ...     return as_reader(t if columns is None else t.select(columns))
        >>> class Source:
        ...     def __arrow_c_stream__(self, requested_schema=None):
        ...         return export_stream(open_reader, requested_schema)
        >>> wanted = pa.schema([("b", pa.string())])
        >>> pa.RecordBatchReader.from_stream(Source(), schema=wanted).read_all().column_names
        ['b']
    """
    if requested_schema is None:
        return open_reader(None).__arrow_c_stream__()
    wanted = pa.Schema._import_from_c_capsule(requested_schema)
    reader = open_reader(list(wanted.names))
    if reader.schema.equals(wanted):
        return reader.__arrow_c_stream__()
    return reader.__arrow_c_stream__(requested_schema)
