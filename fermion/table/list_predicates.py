"""``array_contains(list, value)`` as a pyarrow compute expression.

Arrow has no kernel telling whether a list holds a value, so this module registers one
scalar function per element domain (Arrow functions take exact types): signed integers
(as ``large_list<int64>``, ``int64``), unsigned integers (``large_list<uint64>``,
``uint64``) and strings (``large_list<large_string>``, ``large_string``).
:func:`array_contains` casts the list column to its domain's list type inside the
expression, so any ``list``/``large_list`` of those element types can be filtered, and
the registration happens on import (any process evaluating such a filter imports
:mod:`fermion.table`, which imports this module through the predicate parser).

Semantics are Spark SQL's: true when some element equals the value; otherwise null when
the list is null, the value is null or the list holds a null element; otherwise false.
A filter keeps only the rows where it is true.

Example:
    >>> import pyarrow as pa
    >>> t = pa.table({"tags": [["a", "b"], ["c"], None, ["c", None]]})
    >>> t.filter(array_contains("tags", pa.list_(pa.string()), "a"))["tags"].to_pylist()
    [['a', 'b']]
    >>> contains_mask(t["tags"], "c").to_pylist()
    [False, True, None, True]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidArgumentError

__all__ = [
    "ARRAY_CONTAINS_FUNCTIONS",
    "array_contains",
    "contains_mask",
    "list_domain",
]

#: Registered function name -> (list type the column is cast to, value type).
ARRAY_CONTAINS_FUNCTIONS: dict[str, tuple[pa.DataType, pa.DataType]] = {
    "fermion_array_contains_int64": (pa.large_list(pa.int64()), pa.int64()),
    "fermion_array_contains_uint64": (pa.large_list(pa.uint64()), pa.uint64()),
    "fermion_array_contains_string": (pa.large_list(pa.large_string()), pa.large_string()),
}


def list_domain(t: pa.DataType) -> str | None:
    """The registered function for a list column of type ``t`` (None: not supported).

    Example:
        >>> list_domain(pa.list_(pa.int32())), list_domain(pa.list_(pa.float64()))
        ('fermion_array_contains_int64', None)
    """
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return None
    item = t.value_type
    if pa.types.is_signed_integer(item):
        return "fermion_array_contains_int64"
    if pa.types.is_unsigned_integer(item):
        return "fermion_array_contains_uint64"
    if pa.types.is_string(item) or pa.types.is_large_string(item):
        return "fermion_array_contains_string"
    return None


def contains_mask(lists: pa.Array | pa.ChunkedArray, value: Any) -> pa.Array:
    """Per row of ``lists``, whether it holds ``value`` (Spark's ``array_contains``).

    ``value`` is a Python value or a pyarrow scalar (null: every row is null).
    """
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks() if lists.num_chunks else pa.array([], lists.type)
    scalar = value if isinstance(value, pa.Scalar) else pa.scalar(value)
    n = len(lists)
    if not scalar.is_valid:
        return pa.nulls(n, pa.bool_())
    items = pc.list_flatten(lists)
    parents = np.asarray(pc.list_parent_indices(lists).to_numpy(zero_copy_only=False))
    if len(items):
        equal = pc.equal(items, scalar.cast(items.type) if scalar.type != items.type else scalar)
        found_at = np.asarray(pc.fill_null(equal, False).to_numpy(zero_copy_only=False))
        null_at = np.asarray(items.is_null().to_numpy(zero_copy_only=False))
    else:
        found_at = null_at = np.zeros(0, dtype=bool)
    found = np.zeros(n, dtype=bool)
    found[parents[found_at]] = True
    has_null = np.zeros(n, dtype=bool)
    has_null[parents[null_at]] = True
    unknown = ~found & (has_null | np.asarray(lists.is_null().to_numpy(zero_copy_only=False)))
    return pa.array(found, mask=unknown)


def _kernel(ctx: Any, lists: Any, value: Any) -> Any:
    if isinstance(lists, pa.Scalar):  # a literal list: one row
        return contains_mask(pa.array([lists.as_py()], lists.type), value)[0]
    if isinstance(value, pa.Scalar):
        return contains_mask(lists, value)
    # a value per row: compare each row with its own value
    rows = [contains_mask(lists.slice(i, 1), value[i])[0].as_py() for i in range(len(lists))]
    return pa.array(rows, pa.bool_())


def _register() -> None:
    registered = set(pc.list_functions())
    for name, (list_type, value_type) in ARRAY_CONTAINS_FUNCTIONS.items():
        if name in registered:
            continue
        pc.register_scalar_function(
            _kernel,
            name,
            {
                "summary": "Whether a list holds a value (Spark SQL array_contains).",
                "description": "True if an element equals the value; null if not found and "
                "the list, the value or an element is null; else false.",
            },
            {"lists": list_type, "value": value_type},
            pa.bool_(),
        )


_register()


def array_contains(column: str, column_type: pa.DataType, value: Any) -> pc.Expression:
    """The expression ``array_contains(column, value)`` for a list column of ``column_type``.

    Raises:
        InvalidArgumentError: A column type other than a list of integers or strings, or a
            value that is not one of its elements' type.

    Example:
        >>> str(array_contains("xs", pa.list_(pa.int32()), 3))[:40]
        'fermion_array_contains_int64(cast(xs, {t'
    """
    name = list_domain(column_type)
    if name is None:
        raise InvalidArgumentError(
            f"array_contains needs a list of integers or strings; {column!r} is {column_type}"
        )
    list_type, value_type = ARRAY_CONTAINS_FUNCTIONS[name]
    try:
        scalar = pa.scalar(value).cast(column_type.value_type).cast(value_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidArgumentError(
            f"array_contains({column}, {value!r}): not a {column_type.value_type} value ({exc})"
        ) from None
    lists = pc.field(column)
    if not column_type.equals(list_type):
        lists = lists.cast(list_type)
    return pc.Expression._call(name, [lists, pc.scalar(scalar)])
