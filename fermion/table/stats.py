"""Per-fragment column statistics: computed at write time, used to prune fragments.

Statistics are computed with ``pyarrow.compute`` on the data being written (never by
peeking into file internals) and stored in the manifest per field id: the null count, and
``min``/``max`` of the non-null values (none for a float column with a NaN). At scan time
each fragment's statistics become an Arrow *guarantee* expression, the same one the file
format builds for stripes and pages (:func:`fermion.format.read.pruning.guarantee_for`):
``(x >= min) & (x <= max) & is_valid(x)`` without nulls, ``(min <= x <= max) or x is null``
(as ``((x >= min) | is_null(x)) & ((x <= max) | is_null(x))``) with some nulls,
``is_null(x)`` for an all-null column, ``is_valid(x)`` for a column without nulls or bounds.
Arrow's own expression simplification then decides whether the filter can match any row of
the fragment (see :func:`prune`), keeping SQL's three-valued logic: ``x > c`` never selects
a null, so it prunes a nullable fragment whose range lies below ``c``, while ``is_null(x)``
and ``NOT (x > c)`` keep it. A float column with a NaN has no bounds, so ``x > c``,
``x != c`` and ``is_nan(x)`` never prune it.

Example:
    >>> import pyarrow as pa, pyarrow.compute as pc
    >>> from fermion.table.schema import TableSchema
    >>> t = pa.table({"x": [5, 7, 9]})
    >>> schema = TableSchema.from_arrow(t.schema)
    >>> stats = compute_field_stats(t, schema.top_level_ids())
    >>> guarantee = fragment_guarantee(stats, schema, 3)
    >>> prune([guarantee], schema.arrow, pc.field("x") > 100)
    [False]
    >>> nullable = pa.table({"x": [5, None, 9]})
    >>> g = fragment_guarantee(compute_field_stats(nullable, schema.top_level_ids()), schema, 3)
    >>> prune([g], schema.arrow, pc.field("x") > 100)  # the nulls never satisfy x > 100
    [False]
    >>> prune([g], schema.arrow, ~(pc.field("x") > 100))
    [True]
"""

from __future__ import annotations

import decimal
from collections.abc import Collection, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.deprecation import deprecated_alias
from fermion.format.read.pruning import guarantee_for, segments_that_may_match
from fermion.table.codec import FragmentInfo, fragment_from_proto, fragment_message
from fermion.table.domain import Fragment
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.schema import TableSchema

__all__ = [
    "StatsAccumulator",
    "compute_field_stats",
    "fragment_guarantee",
    "prune",
    "refreshed_stats",
    "stats_field_ids",
]


def _ordered(kind: pa.DataType) -> bool:
    return (
        pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_temporal(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_decimal(kind)
    ) and not (  # Arrow has no min_max kernel for these
        pa.types.is_float16(kind) or pa.types.is_duration(kind) or pa.types.is_interval(kind)
    )


_INT64_MAX = 2**63 - 1


def _min_max(values: pa.Array | pa.ChunkedArray) -> tuple[pa.Scalar, pa.Scalar]:
    """``pc.min_max`` of ``values``; decimal32/decimal64 (which have no such kernel) through
    decimal128 of the same precision and scale, the bounds as exact decimals of that type."""
    kind = values.type
    if not (pa.types.is_decimal(kind) and kind.bit_width < 128):
        bounds = pc.min_max(values)
        return bounds["min"], bounds["max"]
    wide = pc.min_max(values.cast(pa.decimal128(kind.precision, kind.scale)))
    low, high = wide["min"], wide["max"]
    if not (low.is_valid and high.is_valid):
        return pa.scalar(None, kind), pa.scalar(None, kind)
    return pa.scalar(low.as_py(), kind), pa.scalar(high.as_py(), kind)


def _to_value(scalar: pa.Scalar) -> pb.Value | None:
    """The manifest value of a bound, or None where it has none (a uint64 above the int64
    range: ``Value.int_value`` is a sint64, so such a column keeps no range)."""
    kind = scalar.type
    if pa.types.is_boolean(kind):
        return pb.Value(bool_value=bool(scalar.as_py()))
    if pa.types.is_integer(kind):
        value = int(scalar.as_py())
        return pb.Value(int_value=value) if value <= _INT64_MAX else None
    if pa.types.is_floating(kind):
        # a zero bound is kept as +0.0: Arrow's min_max picks either sign among equal
        # zeros (by position, and differently with and without nulls), and no comparison
        # tells them apart, so one sign keeps the statistics of the same rows the same
        # however they were cut into batches
        return pb.Value(float_value=float(scalar.as_py()) or 0.0)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pb.Value(string_value=scalar.as_py())
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return pb.Value(binary_value=scalar.as_py())
    if pa.types.is_decimal(kind):  # exact: the decimal's text, e.g. "-12.50"
        return pb.Value(string_value=str(scalar.as_py()))
    # temporal: the integer representation, interpreted through the schema type
    storage = pa.int32() if kind.bit_width == 32 else pa.int64()
    return pb.Value(int_value=int(pa.array([scalar], kind).view(storage)[0].as_py()))


def _from_value(value: pb.Value, kind: pa.DataType) -> pa.Scalar | None:
    which = value.WhichOneof("kind")
    if which is None:
        return None
    raw = getattr(value, which)
    if pa.types.is_temporal(kind):
        storage = pa.int32() if kind.bit_width == 32 else pa.int64()
        return pa.array([raw], storage).view(kind)[0]
    if pa.types.is_decimal(kind):
        if which != "string_value":
            return None
        try:
            return pa.scalar(decimal.Decimal(raw), type=kind)
        except (decimal.InvalidOperation, pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return None  # not a decimal's text, or out of the (current) type's range
    try:
        return pa.scalar(raw, type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None


def _set_bounds(stats: pb.FieldStats, low: pa.Scalar, high: pa.Scalar) -> None:
    """Record ``[low, high]`` in ``stats`` where both have a manifest value."""
    low_value, high_value = _to_value(low), _to_value(high)
    if low_value is not None and high_value is not None:
        stats.min.CopyFrom(low_value)
        stats.max.CopyFrom(high_value)


def compute_field_stats(table: pa.Table, top_level_ids: Sequence[int]) -> list[pb.FieldStats]:
    """A fragment's manifest statistics (``FieldStats``): null count for every top-level
    column; min/max where defined and NaN-free (``compute_stats`` before; not the file
    format's page statistics).

    Args:
        table: The rows of one fragment, columns in table-schema order.
        top_level_ids: The field id of each column.
    """
    out = []
    for column, field_id in zip(table.columns, top_level_ids, strict=True):
        stats = pb.FieldStats(field_id=field_id, null_count=column.null_count)
        kind = column.type
        if _ordered(kind) and column.null_count < len(column):
            has_nan = pa.types.is_floating(kind) and pc.any(pc.is_nan(column)).as_py()
            if not has_nan:
                low, high = _min_max(column)
                if low.is_valid and high.is_valid:
                    _set_bounds(stats, low, high)
        out.append(stats)
    return out


def stats_field_ids(fragment: Fragment) -> set[int]:
    """The fields the fragment records statistics for.

    Example:
        >>> stats_field_ids(Fragment(None, (), 0))
        set()
    """
    return {s.field_id for s in fragment_message(fragment).stats}


def refreshed_stats(fragment: Fragment, table: pa.Table, field_ids: Sequence[int]) -> Fragment:
    """The statistics update of a committed fragment (its id and statistics only, what a
    ``CreateIndex`` of the statistics rebuild carries): its recorded statistics, those of
    ``field_ids`` recomputed from ``table`` (its live rows, one column per field id).

    Example:
        >>> import pyarrow as pa
        >>> update = refreshed_stats(Fragment(4, (), 3), pa.table({"x": [3, None, 1]}), [0])
        >>> update.id, stats_field_ids(update), update.physical_rows
        (4, {0}, 0)
    """
    fresh = {s.field_id: s for s in compute_field_stats(table, field_ids)}
    recorded = fragment_message(fragment).stats
    update = pb.Fragment(id=fragment.id)
    update.stats.extend(fresh.get(s.field_id, s) for s in recorded)
    known = {s.field_id for s in recorded}
    update.stats.extend(s for i, s in fresh.items() if i not in known)
    return fragment_from_proto(update, committed=True)


#: Deprecated name of :func:`compute_field_stats` (the file format has a ``compute_stats``).
compute_stats = deprecated_alias(
    compute_field_stats,
    "fermion.table.stats.compute_stats",
    "fermion.table.stats.compute_field_stats",
)


# _numeric_bounds: a NaN, no range (no pyarrow scalar here: making one at import time
# loads pandas, which `import fermion` leaves unloaded, tests/test_architecture.py)
_HAS_NAN: tuple[pa.Scalar, ...] = ()


def _numeric_bounds(
    column: pa.Array | pa.ChunkedArray, kind: pa.DataType
) -> tuple[pa.Scalar, ...] | None:
    """(min, max) of a float or integer ``column`` without nulls by numpy (a SIMD pass, up
    to 20x faster than ``pc.min_max`` on float64), :data:`_HAS_NAN` when a float column
    holds a NaN (numpy's min propagates it), None where ``pc.min_max`` must decide: other
    types, nulls, float bounds of zero (left to ``pc.min_max`` like the other cases; a
    zero bound is stored as +0.0 either way, see :func:`_to_value`)."""
    floating = pa.types.is_floating(kind) and not pa.types.is_float16(kind)
    if column.null_count or not (floating or pa.types.is_integer(kind)):
        return None
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks != 1:
            return None
        column = column.chunk(0)
    values = column.to_numpy(zero_copy_only=False)
    low, high = values.min(), values.max()
    if floating:
        if np.isnan(low) or np.isnan(high):
            return _HAS_NAN
        if low == 0 or high == 0:
            return None
    return pa.scalar(low.item(), kind), pa.scalar(high.item(), kind)


class StatsAccumulator:
    """:func:`compute_field_stats` of rows that arrive batch by batch (a streamed fragment):
    the result equals ``compute_field_stats`` of all of them at once.

    Example:
        >>> import pyarrow as pa
        >>> acc = StatsAccumulator(pa.schema([("x", pa.int64())]), [1])
        >>> acc.add(pa.record_batch({"x": [5, None]})); acc.add(pa.record_batch({"x": [2]}))
        >>> s = acc.result()[0]
        >>> s.null_count, s.min.int_value, s.max.int_value
        (1, 2, 5)
    """

    def __init__(self, schema: pa.Schema, top_level_ids: Sequence[int]) -> None:
        self._types = [f.type for f in schema]
        self._ids = list(top_level_ids)
        self._nulls = [0] * len(self._types)
        self._rows = 0
        self._low: list[pa.Scalar | None] = [None] * len(self._types)
        self._high: list[pa.Scalar | None] = [None] * len(self._types)
        self._ranged = [_ordered(t) for t in self._types]  # False once a NaN is seen

    @property
    def rows(self) -> int:
        """Rows added so far."""
        return self._rows

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Account for the rows of ``batch`` (columns in table-schema order)."""
        self._rows += batch.num_rows
        for i, column in enumerate(batch.columns):
            self._nulls[i] += column.null_count
            if not self._ranged[i] or column.null_count == len(column):
                continue
            kind = self._types[i]
            fast = _numeric_bounds(column, kind)
            if fast is None:
                if pa.types.is_floating(kind) and pc.any(pc.is_nan(column)).as_py():
                    self._ranged[i] = False
                    continue
                low, high = _min_max(column)
            elif fast == _HAS_NAN:
                self._ranged[i] = False
                continue
            else:
                low, high = fast
            if not (low.is_valid and high.is_valid):
                continue
            before_low, before_high = self._low[i], self._high[i]
            if before_low is not None and before_high is not None:
                if fast is not None:  # numbers (no NaN, no zero here): compared as such
                    low = low if low.as_py() < before_low.as_py() else before_low
                    high = high if high.as_py() > before_high.as_py() else before_high
                else:
                    low = _min_max(pa.array([before_low, low], kind))[0]
                    high = _min_max(pa.array([before_high, high], kind))[1]
            self._low[i], self._high[i] = low, high

    def result(self) -> list[pb.FieldStats]:
        """One ``FieldStats`` per column, as :func:`compute_field_stats` makes them."""
        out = []
        for i, field_id in enumerate(self._ids):
            stats = pb.FieldStats(field_id=field_id, null_count=self._nulls[i])
            low, high = self._low[i], self._high[i]
            if self._ranged[i] and low is not None and high is not None:
                _set_bounds(stats, low, high)
            out.append(stats)
        return out


def fragment_guarantee(
    stats: Sequence[pb.FieldStats],
    schema: TableSchema,
    physical_rows: int,
    only: Collection[str] | None = None,
) -> pc.Expression:
    """What every row of a fragment is known to satisfy, in the current schema's names.

    Statistics of dropped fields are ignored; widened fields' bounds are cast. ``only``
    limits the guarantee to the columns a filter can reference (cheaper to build).
    """
    names = dict(zip(schema.top_level_ids(), schema.arrow.names, strict=True))
    if only is not None:
        names = {i: n for i, n in names.items() if n in only}
    guarantee: pc.Expression = pc.scalar(True)
    for item in stats:
        name = names.get(item.field_id)
        if name is None:
            continue
        kind = schema.arrow.field(name).type
        bounds = None
        if item.HasField("min") and item.HasField("max"):
            low, high = _from_value(item.min, kind), _from_value(item.max, kind)
            if low is not None and high is not None:
                bounds = (low, high)
        part = guarantee_for(name, kind, bounds, item.null_count, physical_rows)
        if part is not None:
            guarantee = guarantee & part
    return guarantee


def guarantee_of(
    fragment: Fragment,
    schema: TableSchema,
    only: Collection[str] | None = None,
    *,
    keep: bool = False,
) -> pc.Expression:
    """:func:`fragment_guarantee` of a fragment's recorded statistics.

    With ``keep``, a fragment the codec made (a ``Dataset``'s, read from its manifest)
    keeps the last few guarantees built for it, by schema object and columns: the next
    scan of the same version prunes without building them again (statistics never
    change). A caller whose fragments live for one scan only leaves ``keep`` false.

    Example:
        >>> import pyarrow as pa
        >>> from fermion.table.domain import Fragment
        >>> schema = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
        >>> guarantee_of(Fragment(None, (), 0), schema).equals(pc.scalar(True))
        True
    """
    kept = fragment.__dict__.get("_guarantees")
    key = None if only is None else frozenset(only)
    if kept is not None:
        for of, on, guarantee in kept:
            if of is schema and on == key:
                return guarantee
    message = fragment_message(fragment)
    guarantee = fragment_guarantee(message.stats, schema, message.physical_rows, only)
    if keep and isinstance(fragment, FragmentInfo):  # (its pickles leave them out)
        fragment.__dict__["_guarantees"] = [*(kept or ()), (schema, key, guarantee)][-4:]
    return guarantee


def int_bounds(fragment: Fragment, field_id: int) -> tuple[int, int] | None:
    """The min/max of an integer field in a fragment, from its statistics (``None``:
    unknown, or the field has nulls).

    Example:
        >>> from fermion.table.codec import fragment_from_proto
        >>> m = pb.Fragment(id=1, physical_rows=2)
        >>> s = m.stats.add(field_id=0)
        >>> s.min.int_value, s.max.int_value = 5, 9
        >>> int_bounds(fragment_from_proto(m), 0), int_bounds(fragment_from_proto(m), 1)
        ((5, 9), None)
    """
    for item in fragment_message(fragment).stats:
        if item.field_id != field_id or item.null_count:
            continue
        if item.min.WhichOneof("kind") == "int_value" and item.max.WhichOneof("kind") == (
            "int_value"
        ):
            return item.min.int_value, item.max.int_value
    return None


def prune(
    guarantees: Sequence[pc.Expression], schema: pa.Schema, filter: pc.Expression
) -> list[bool]:
    """For each guarantee, whether a row satisfying it may satisfy ``filter``.

    The file format's pruning does the work (Arrow's expression simplifier over
    partition-expression guarantees); this only turns its kept indices into flags.
    """
    kept = set(segments_that_may_match(schema, guarantees, filter))
    return [i in kept for i in range(len(guarantees))]
