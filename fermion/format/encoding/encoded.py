"""Arrays of the encoded types (unions, run-end encoded, list views) to and from the
types they are stored as (docs/FORMAT.md §3.1), one layer at a time.

The writer calls :func:`to_storage` on each node's values before shredding them; the
reader builds the storage array of a node (its children already rebuilt) and calls
:func:`from_storage`. :func:`take_rows` picks rows from arrays Arrow has no ``take``
kernel for (run-end encoded values, at any depth).

Example:
    >>> import pyarrow as pa
    >>> ree = pa.RunEndEncodedArray.from_arrays(pa.array([2, 3], pa.int32()), pa.array([7, 8]))
    >>> stored = to_storage(ree)
    >>> stored.to_pylist()
    [7, 7, 8]
    >>> from_storage(ree.type, stored).equals(ree)
    True
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from fermion.errors import InvalidFileError, UnsupportedTypeError
from fermion.format.metadata.layout import UNION_TYPE_IDS, is_view, view_storage

__all__ = [
    "from_storage",
    "has_run_ends",
    "run_end_decoded",
    "run_end_encoded",
    "take_rows",
    "to_storage",
]


def to_storage(arr: pa.Array) -> pa.Array:
    """``arr`` as its node stores it: extension and encoded layers removed (views kept).

    Raises:
        UnsupportedTypeError: run-end encoded values whose row count its run-end type
            cannot hold (the reader could not rebuild them).
    """
    while True:
        t = arr.type
        if isinstance(arr, pa.ExtensionArray):
            arr = arr.storage
        elif pat.is_union(t):
            arr = _union_storage(arr)
        elif pat.is_run_end_encoded(t):
            limit = 2 ** (t.run_end_type.bit_width - 1) - 1
            if len(arr) > limit:
                raise UnsupportedTypeError(
                    f"{t}: {len(arr)} values in one stripe, more than {t.run_end_type} run "
                    "ends can count; use wider run ends or smaller stripes"
                )
            arr = run_end_decoded(arr)
        elif pat.is_list_view(t) or pat.is_large_list_view(t):
            arr = _list_storage(arr)
        else:
            return arr


def from_storage(t: pa.DataType, storage: pa.Array) -> pa.Array:
    """The array of type ``t`` stored as ``storage`` (its children already of their own
    logical types).

    Raises:
        InvalidFileError: the stored values cannot form a ``t`` (a corrupt file).
    """
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, from_storage(t.storage_type, storage))
    if is_view(t):
        return storage.cast(t)
    try:
        if pat.is_union(t):
            return _union_from(t, storage)
        if pat.is_run_end_encoded(t):
            return run_end_encoded(t, from_storage(t.value_type, storage))
        if pat.is_list_view(t) or pat.is_large_list_view(t):
            return _list_view_from(t, storage)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, TypeError) as exc:
        raise InvalidFileError(f"cannot rebuild {t}: {exc}") from None
    return storage


def run_end_decoded(arr: pa.Array) -> pa.Array:
    """The logical values of a run-end encoded array (also of value types Arrow's
    ``run_end_decode`` has no kernel for: dictionaries, views, extension types)."""
    try:
        return pc.run_end_decode(arr)
    except pa.ArrowNotImplementedError:
        pass
    ends = arr.run_ends.to_numpy(zero_copy_only=False)
    rows = np.arange(arr.offset, arr.offset + len(arr), dtype=np.int64)
    runs = pa.array(np.searchsorted(ends, rows, side="right"), pa.int64())
    values = arr.values
    if is_view(values.type):  # no take kernel either
        return values.cast(view_storage(values.type)).take(runs).cast(values.type)
    return values.take(runs)


def run_end_encoded(t: pa.DataType, values: pa.Array) -> pa.Array:
    """``values`` run-end encoded as ``t``; value types Arrow's ``run_end_encode`` has no
    kernel for get one run per row (the same values, not merged)."""
    try:
        return pc.run_end_encode(values, run_end_type=t.run_end_type)
    except pa.ArrowNotImplementedError:
        ends = pa.array(np.arange(1, len(values) + 1), t.run_end_type)
        return pa.RunEndEncodedArray.from_arrays(ends, values, type=t)


def _union_storage(arr: pa.UnionArray) -> pa.StructArray:
    """``struct<type_ids, member...>``: member i holds the value of each row of type i,
    null elsewhere (a dense union's values are expanded to one per row; a sparse union's
    children are kept as they are)."""
    t = arr.type
    n, off = len(arr), arr.offset
    codes = np.frombuffer(arr.buffers()[1], dtype=np.int8)[off : off + n]
    members = []
    for i, code in enumerate(t.type_codes):
        child = arr.field(i)  # sparse: sliced to the union's rows; dense: the whole child
        if t.mode == "dense":
            if has_run_ends(child.type):
                raise UnsupportedTypeError(
                    f"{t}: a dense union member holding run-end encoded values"
                )
            offsets = np.frombuffer(arr.buffers()[2], dtype=np.int32)[off : off + n]
            mine = codes == code
            child = take_rows(child, pa.array(offsets, mask=~mine))
        members.append(child)
    fields = [pa.field(UNION_TYPE_IDS, pa.int8(), nullable=False)]
    fields += [t.field(i).with_nullable(True) for i in range(t.num_fields)]
    return pa.StructArray.from_arrays([pa.array(codes, pa.int8()), *members], fields=fields)


def _union_from(t: pa.UnionType, storage: pa.StructArray) -> pa.UnionArray:
    n = len(storage)
    flat = storage.flatten()
    codes = np.ascontiguousarray(flat[0].to_numpy(zero_copy_only=False), np.int8)
    known = np.asarray(t.type_codes, dtype=np.int8)
    if len(flat) != 1 + t.num_fields or not np.isin(codes, known).all():
        raise InvalidFileError(f"stored union values do not match {t}")
    members = flat[1:]
    buffers: list[pa.Buffer | None] = [None, pa.py_buffer(codes.tobytes())]
    if t.mode == "dense":
        offsets = np.zeros(n, dtype=np.int32)
        children = []
        for code, member in zip(known, members, strict=True):
            rows = np.flatnonzero(codes == code)
            offsets[rows] = np.arange(len(rows), dtype=np.int32)
            children.append(take_rows(member, pa.array(rows, pa.int64())))
        members = children
        buffers.append(pa.py_buffer(offsets.tobytes()))
    arr = pa.Array.from_buffers(t, n, buffers, children=members)
    arr.validate(full=True)
    return arr


def _list_storage(arr: pa.Array) -> pa.Array:
    """A list view as a list (or large list) of its values in row order."""
    t = arr.type
    large = pat.is_large_list_view(t)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    sizes = np.where(valid, arr.sizes.to_numpy(zero_copy_only=False), 0)
    offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    values = arr.flatten()
    if large:
        return pa.LargeListArray.from_arrays(
            pa.array(offsets, pa.int64()),
            values,
            type=pa.large_list(t.value_field),
            mask=pa.array(~valid),
        )
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), values, type=pa.list_(t.value_field), mask=pa.array(~valid)
    )


def _list_view_from(t: pa.DataType, storage: pa.Array) -> pa.Array:
    index = pa.int64() if pat.is_large_list_view(t) else pa.int32()
    offsets = storage.offsets.to_numpy(zero_copy_only=False)
    starts = pa.array(offsets[:-1], index)
    sizes = pa.array(np.diff(offsets), index)
    mask = storage.is_null() if storage.null_count else None
    cls = pa.LargeListViewArray if pat.is_large_list_view(t) else pa.ListViewArray
    return cls.from_arrays(starts, sizes, storage.values, type=t, mask=mask)


def has_run_ends(t: pa.DataType) -> bool:
    """Whether ``t`` holds a run-end encoded type at any depth."""
    if pat.is_run_end_encoded(t):
        return True
    if isinstance(t, pa.BaseExtensionType):
        return has_run_ends(t.storage_type)
    if pat.is_dictionary(t):
        return has_run_ends(t.value_type)
    return any(has_run_ends(t.field(i).type) for i in range(t.num_fields))


def take_rows(arr: pa.Array, indices: pa.Array) -> pa.Array:
    """``arr.take(indices)``, also where Arrow has no ``take`` kernel: views are taken as
    their offsets-based types; run-end encoded values at any depth, and unions or lists of
    views, are sliced out in runs and concatenated (then ``indices`` may hold no nulls).

    Example:
        >>> ree = pa.RunEndEncodedArray.from_arrays(pa.array([2, 3], pa.int32()),
        ...                                         pa.array([7, 8]))
        >>> take_rows(ree, pa.array([2, 0, 1])).to_pylist()
        [8, 7, 7]
    """
    t = arr.type
    if isinstance(arr, pa.ExtensionArray):
        return pa.ExtensionArray.from_storage(t, take_rows(arr.storage, indices))
    if is_view(t):
        return arr.cast(view_storage(t)).take(indices).cast(t)
    if not has_run_ends(t):
        try:
            return arr.take(indices)
        except pa.ArrowNotImplementedError:
            pass  # e.g. a union with a view member
    if indices.null_count:
        raise UnsupportedTypeError(f"null take indices into {arr.type}")
    idx = indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if len(idx) == 0:
        return arr.slice(0, 0)
    breaks = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(idx)]])
    pieces = [arr.slice(int(idx[a]), int(b - a)) for a, b in zip(starts, ends, strict=True)]
    return pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)
