"""Take, filter and cast over Arrow tables, for every type a Fermion file holds.

Arrow has no take or filter kernel for some types (string and binary views, run-end
encoded arrays, unions or list views holding them) and its cast of a sliced run-end
encoded array to its own type loses the slice offset. These helpers work around both; the
reader (:mod:`fermion.format.read`) and the table layer (:mod:`fermion.table`) use them, so
they sit beside the encoded types (:mod:`fermion.format.encoding.encoded`), in neither
direction of the format.

Example:
    >>> t = pa.table({"r": pa.RunEndEncodedArray.from_arrays([2, 3], [7, 8])})
    >>> take_table(t, [2, 0]).column("r").to_pylist()
    [8, 7]
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import UnsupportedTypeError
from fermion.format.encoding.encoded import (
    has_run_ends,
    run_end_decoded,
    run_end_encoded,
    take_rows,
)
from fermion.format.metadata.layout import build_tree, is_encoded, without_views

__all__ = ["cast_table", "filter_table", "take_table", "take_values"]

_ROW = "\x00row"  # the row-number column filter_table adds (no user column has this name)


def take_values(values: Any, indices: pa.Array) -> Any:
    """``values.take(indices)``, also for types Arrow has no take kernel for (views,
    run-end encoded values)."""
    t = values.type
    if isinstance(t, pa.ExtensionType):
        storage = values.storage if isinstance(values, pa.Array) else values.cast(t.storage_type)
        taken = take_values(storage, indices)
        if isinstance(taken, pa.ChunkedArray):
            taken = taken.combine_chunks()
        return pa.ExtensionArray.from_storage(t, taken)
    plain = without_views(t)
    if plain != t:
        return values.cast(plain).take(indices).cast(t)
    if pa.types.is_run_end_encoded(t):  # by value: no take (or concat) kernel for all
        chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
        decoded = pa.chunked_array([run_end_decoded(c) for c in chunks], t.value_type)
        taken = take_values(decoded, indices)
        if isinstance(taken, pa.ChunkedArray):
            taken = taken.combine_chunks()
        limit = 2 ** (t.run_end_type.bit_width - 1) - 1
        if len(taken) <= limit:
            return run_end_encoded(t, taken)
        parts = [taken.slice(a, limit) for a in range(0, len(taken), limit)]
        return pa.chunked_array([run_end_encoded(t, p) for p in parts], t)
    if not has_run_ends(t):
        try:
            return values.take(indices)
        except pa.ArrowNotImplementedError:
            pass  # e.g. a union with a view member: take_rows slices instead
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(indices, pa.ChunkedArray):
        indices = indices.combine_chunks()
    return take_rows(values, indices)


def cast_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table.cast(schema)``, leaving alone the columns whose type already matches (Arrow's
    cast of a sliced run-end encoded array to its own type loses the slice offset).

    Example:
        >>> r = pa.RunEndEncodedArray.from_arrays([2, 3], ["x", None]).slice(2)
        >>> target = pa.schema([pa.field("r", r.type, metadata={b"k": b"v"})])
        >>> cast_table(pa.table({"r": r}), target)["r"].to_pylist()
        [None]
    """
    if table.schema.names != schema.names or any(
        not f.nullable and c.null_count for c, f in zip(table.columns, schema, strict=True)
    ):
        return table.cast(schema)  # Arrow's own checks and errors
    columns = [
        c if c.type.equals(f.type) else c.cast(f.type)
        for c, f in zip(table.columns, schema, strict=True)
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def take_table(table: pa.Table, indices: Any) -> pa.Table:
    """``table.take(indices)``, also for columns Arrow has no take kernel for.

    Example:
        >>> t = pa.table({"r": pa.RunEndEncodedArray.from_arrays([2, 3], [7, 8])})
        >>> take_table(t, [2, 0]).column("r").to_pylist()
        [8, 7]
    """
    if not any(has_run_ends(f.type) for f in table.schema):
        try:
            return table.take(indices)
        except pa.ArrowNotImplementedError:
            pass  # column by column below
    idx = pa.array(np.asarray(indices, dtype=np.int64))
    return pa.Table.from_arrays([take_values(c, idx) for c in table.columns], schema=table.schema)


#: Buffer alignment (bytes) a copied column gets, and the one every buffer of a column of
#: another type than :func:`_value_alignment` knows must have to go to Acero uncopied:
#: Arrow's own allocations have it, and it covers the value width of every type.
ACERO_ALIGNMENT = 64


def _value_alignment(type_: pa.DataType) -> int | None:
    """The alignment Acero checks of the values (or offsets) buffer of a flat column of
    ``type_``, its natural one (Arrow's ``kValueAlignment``: the value width; bitmaps and
    string bytes need none); None for other types (nested, dictionary, views...)."""
    if pa.types.is_boolean(type_) or pa.types.is_fixed_size_binary(type_):
        return 1
    if pa.types.is_string(type_) or pa.types.is_binary(type_):
        return 4  # int32 offsets
    if pa.types.is_large_string(type_) or pa.types.is_large_binary(type_):
        return 8
    if (
        pa.types.is_integer(type_)
        or pa.types.is_floating(type_)
        or pa.types.is_temporal(type_)
        or pa.types.is_decimal(type_)
    ):
        return int(type_.bit_width) // 8  # (a decimal: its whole width)
    return None


def _unaligned(column: pa.ChunkedArray) -> bool:
    """Whether Acero would find a buffer of ``column`` misaligned (it prints a warning on
    stderr): the values of a flat column off their natural alignment, or, for other types,
    any buffer off :data:`ACERO_ALIGNMENT`."""
    need = _value_alignment(column.type)
    for chunk in column.chunks:
        buffers = chunk.buffers()
        if need is None:
            if any(b is not None and b.address % ACERO_ALIGNMENT for b in buffers):
                return True
        elif len(buffers) > 1 and buffers[1] is not None and buffers[1].address % need:
            return True
    return False


def aligned_for_acero(table: pa.Table) -> pa.Table:
    """``table`` with every column Acero, the engine behind expressions, would find
    misaligned copied (values read in place from a file may sit at any offset, which Acero
    warns about on stderr): the values of a flat column off their natural alignment (the
    value width, 4 bytes for a string's offsets), any buffer of another column off
    :data:`ACERO_ALIGNMENT`. The other columns are kept as they are: values read in place
    at a multiple of their width are not copied.

    Example:
        >>> data = pa.py_buffer(bytes(257)).slice(1)  # starts one byte off
        >>> t = pa.table({"a": pa.Array.from_buffers(pa.int32(), 64, [None, data]),
        ...               "b": pa.array([0] * 64, pa.int32())})
        >>> out = aligned_for_acero(t)
        >>> def data_at(table, name):
        ...     return table.column(name).chunk(0).buffers()[1].address
        >>> data_at(out, "a") % 64, data_at(out, "b") == data_at(t, "b")  # only "a" copied
        (0, True)
        >>> out.equals(t)
        True
    """
    copy = [at for at, column in enumerate(table.columns) if _unaligned(column)]
    if not copy:
        return table
    index = pa.array(np.arange(table.num_rows, dtype=np.int64))
    for at in copy:
        table = table.set_column(at, table.schema.field(at), table.column(at).take(index))
    return table


def _arrow_filter(
    table: pa.Table, expr: pc.Expression | pa.Array, used: Collection[str] | None
) -> pa.Table:
    plain = pa.schema([f.with_type(without_views(f.type)) for f in table.schema])
    if plain != table.schema:
        return _arrow_filter(table.cast(plain), expr, used).cast(table.schema)
    if isinstance(expr, pc.Expression) and any(_unaligned(c) for c in table.columns):
        # Acero evaluates the expression over aligned copies of the columns it names (all
        # of them when unknown); the rows it keeps are taken from the table as it is
        names = table.column_names
        named = [at for at, name in enumerate(names) if used is None or name in used]
        probe = aligned_for_acero(table.select(named))
        probe = probe.append_column(_ROW, pa.array(np.arange(table.num_rows, dtype=np.int64)))
        return table.take(probe.filter(expr).column(_ROW))
    return table.filter(expr)


def filter_table(
    table: pa.Table, expr: pc.Expression | pa.Array, used: Collection[str] | None = None
) -> pa.Table:
    """``table.filter(expr)`` (an expression or a boolean mask), also for columns Arrow has
    no filter kernel for: views are filtered as their plain types; run-end encoded columns,
    unions and list views by the rows the expression picks (it sees a run-end encoded
    column's values; other such columns it cannot name). Columns read in place at
    unaligned offsets are not handed to Acero (see :func:`aligned_for_acero`); ``used``,
    the top-level columns the expression names when the caller knows them, spares copies
    of the others.

    Raises:
        UnsupportedTypeError: the expression names a column of such a type.

    Example:
        >>> t = pa.table({"r": pa.RunEndEncodedArray.from_arrays([2, 3], [7, 8])})
        >>> filter_table(t, pc.field("r") == 8).column("r").to_pylist()
        [8]
    """
    if not any(has_run_ends(f.type) for f in table.schema):
        try:
            return _arrow_filter(table, expr, used)
        except pa.ArrowNotImplementedError:
            pass  # by row numbers below
    if not isinstance(expr, pc.Expression):
        return take_table(table, np.flatnonzero(pc.fill_null(expr, False).to_numpy(False)))
    probe: dict[str, Any] = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_run_end_encoded(col.type):
            col = pa.chunked_array([run_end_decoded(c) for c in col.chunks], col.type.value_type)
        if not any(is_encoded(n.type) for n in build_tree(pa.field(name, col.type)).walk()):
            probe[name] = col.cast(without_views(col.type))
    rows = pa.table(probe).append_column(_ROW, pa.array(np.arange(table.num_rows)))
    try:
        picked = rows.filter(expr).column(_ROW).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UnsupportedTypeError(f"filter {expr}: cannot be evaluated here: {first}") from None
    return take_table(table, picked)
