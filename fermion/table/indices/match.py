"""Which part of a scan filter an index on one column can answer.

The filter's top-level conjuncts (``AND``) that constrain the indexed column alone, with
``= < <= > >=`` against a literal, ``IN`` (either form :mod:`fermion.table.predicate`
builds), ``IS NULL``, ``BETWEEN`` (two conjuncts) or ``OR`` of those, become a
:data:`KeyPredicate` over the index file's ``key`` column: a small tree that can be turned
back into an expression (:func:`to_expression`), evaluated on an array of keys with compute
kernels (:func:`evaluate`), and bounded by key intervals (:func:`intervals`) for a search
in the sorted keys. A row the filter keeps has a key the predicate keeps (each conjunct is
kept as it is, only on the key), so the index returns a superset of the matching rows of the
fragments it covers; when every conjunct was taken (``exact``) it is exactly them.

For a LABEL_LIST index (``kind``), the conjuncts taken are ``array_contains(column,
literal)`` (:mod:`fermion.table.list_predicates`) and ``OR`` of those: each becomes
``key = literal`` over the index's element keys, true exactly where the conjunct is (a
null literal is not taken). A row holds several keys, so only the first such conjunct is
taken (the others are applied to the rows it selects).

Example:
    >>> import pyarrow.compute as pc
    >>> predicate, exact = match_filter((pc.field("k") == 3) & (pc.field("v") > 1), "k")
    >>> to_expression(predicate), exact
    (<pyarrow.compute.Expression (key == 3)>, False)
    >>> match_filter(pc.field("v") > 1, "k")
    (None, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidArgumentError
from fermion.table.indices.expression_tree import expression_tree
from fermion.table.indices.model import KEY, LABEL_LIST
from fermion.table.list_predicates import ARRAY_CONTAINS_FUNCTIONS

__all__ = ["KeyPredicate", "evaluate", "intervals", "match_filter", "to_expression"]

#: ("cmp", op, scalar) | ("in", array) | ("null", nan_is_null) | ("and" | "or", [preds])
KeyPredicate = tuple[Any, ...]

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "equal": lambda a, b: a == b,
    "less": lambda a, b: a < b,
    "less_equal": lambda a, b: a <= b,
    "greater": lambda a, b: a > b,
    "greater_equal": lambda a, b: a >= b,
}
_KERNEL = {
    "equal": pc.equal, "less": pc.less, "less_equal": pc.less_equal,
    "greater": pc.greater, "greater_equal": pc.greater_equal,
}  # fmt: skip
_FLIPPED = {
    "equal": "equal", "less": "greater", "less_equal": "greater_equal",
    "greater": "less", "greater_equal": "less_equal",
}  # fmt: skip
_AND = ("and", "and_kleene")
_OR = ("or", "or_kleene")


def match_filter(
    filter: pc.Expression, column: str, kind: str = "BTREE"
) -> tuple[KeyPredicate | None, bool]:
    """The predicate an index of ``kind`` on ``column`` answers (None: none), and whether
    it is the whole filter (then the rows it selects are exactly the filter's).

    Example:
        >>> from fermion.table.list_predicates import array_contains
        >>> import pyarrow as pa
        >>> found = array_contains("tags", pa.list_(pa.string()), "x")
        >>> predicate, exact = match_filter(found, "tags", "LABEL_LIST")
        >>> predicate[:2], predicate[2].as_py(), exact
        (('cmp', 'equal'), 'x', True)
    """
    match = _match_label if kind == LABEL_LIST else _match
    try:
        tree = expression_tree(filter)
    except InvalidArgumentError:  # an expression we do not read: no index
        return None, False
    conjuncts, stack = [], [tree]
    while stack:
        node = stack.pop()
        if node[0] == "call" and node[1] in _AND:
            stack.extend(node[2])
        else:
            conjuncts.append(node)
    found = [match(c, column) for c in reversed(conjuncts)]
    parts = [p for p, _ in found if p is not None]
    exact = all(p is not None and e for p, e in found)
    if not parts:
        return None, False
    if kind == LABEL_LIST and len(parts) > 1:
        # a predicate holds per key, and a row holds several keys: one conjunct only (an
        # AND of two labels is a row holding both, not a key equal to both)
        return parts[0], False
    return (parts[0] if len(parts) == 1 else ("and", parts)), exact


def _options(node: Any) -> dict[str, Any]:
    options = node[3]
    return options.as_py() if options is not None and options.is_valid else {}


def _match(node: Any, column: str) -> tuple[KeyPredicate | None, bool]:
    """A predicate true wherever ``node`` is true (None: unknown), and whether it is
    true exactly there."""
    if node[0] != "call":
        return None, False
    name, args = node[1], node[2]
    field = ("field", column)
    if name in _COMPARE and len(args) == 2:
        left, right = args
        if left == field and right[0] == "literal":
            return ("cmp", name, right[1]), True
        if right == field and left[0] == "literal":
            return ("cmp", _FLIPPED[name], left[1]), True
        return None, False
    if name == "is_null" and args == [field]:
        return ("null", bool(_options(node).get("nan_is_null"))), True
    if name == "is_in" and args == [field] and node[3] is not None and node[3].is_valid:
        values: pa.Array = node[3]["value_set"].values
        # nulls matching nulls is the widest null behaviour; the same without nulls
        return ("in", values), values.null_count == 0
    if name == "if_else" and len(args) == 3:
        # IN of many values (fermion.table.predicate): if_else(k IS NULL, NULL, k IN (...))
        condition, then = args[0], args[1]
        null = then[0] == "literal" and not then[1].is_valid
        if null and condition[0] == "call" and condition[1] == "is_null":
            if condition[2] == [field]:
                inner, exact = _match(args[2], column)
                return inner, exact and inner is not None and inner[0] == "in"
        return None, False
    if name in _OR and len(args) == 2:
        (left, le), (right, re) = _match(args[0], column), _match(args[1], column)
        if left is None or right is None:
            return None, False
        return ("or", [left, right]), le and re
    if name in _AND:
        found = [_match(a, column) for a in args]
        parts = [p for p, _ in found if p is not None]
        if not parts:
            return None, False
        return ("and", parts), all(p is not None and e for p, e in found)
    return None, False


def _match_label(node: Any, column: str) -> tuple[KeyPredicate | None, bool]:
    """For a LABEL_LIST index: ``array_contains(column, literal)`` and ORs of those."""
    if node[0] != "call":
        return None, False
    name, args = node[1], node[2]
    if name in ARRAY_CONTAINS_FUNCTIONS and len(args) == 2:
        lists, value = args
        if lists[0] == "call" and lists[1] == "cast" and len(lists[2]) == 1:
            lists = lists[2][0]  # (the column cast to the function's list type)
        if lists == ("field", column) and value[0] == "literal" and value[1].is_valid:
            return ("cmp", "equal", value[1]), True
        return None, False
    if name in _OR and len(args) == 2:
        (left, le), (right, re) = _match_label(args[0], column), _match_label(args[1], column)
        if left is None or right is None:
            return None, False
        return ("or", [left, right]), le and re
    return None, False


def to_expression(predicate: KeyPredicate, key: str = KEY) -> pc.Expression:
    """The predicate as an expression over column ``key``."""
    kind = predicate[0]
    if kind == "cmp":
        return _COMPARE[predicate[1]](pc.field(key), pc.scalar(predicate[2]))
    if kind == "in":
        return pc.field(key).isin(predicate[1])  # (default: nulls match nulls)
    if kind == "null":
        return pc.field(key).is_null(nan_is_null=predicate[1])
    parts = [to_expression(p, key) for p in predicate[1]]
    out = parts[0]
    for part in parts[1:]:
        out = out & part if kind == "and" else out | part
    return out


def evaluate(predicate: KeyPredicate, keys: pa.Array) -> np.ndarray:
    """Where the predicate is true on ``keys`` (a boolean mask; null counts as false)."""
    kind = predicate[0]
    if kind == "cmp":
        result = _KERNEL[predicate[1]](keys, predicate[2])
    elif kind == "in":
        result = pc.is_in(keys, value_set=predicate[1])
    elif kind == "null":
        result = pc.is_null(keys, nan_is_null=predicate[1])
    else:
        masks = [evaluate(p, keys) for p in predicate[1]]
        return np.logical_and.reduce(masks) if kind == "and" else np.logical_or.reduce(masks)
    return np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), dtype=bool)


def physical(values: pa.Array | pa.ChunkedArray, key_type: pa.DataType) -> np.ndarray:
    """Keys as numpy values ordered as Arrow orders them (temporal types as integers)."""
    if pa.types.is_temporal(values.type):
        values = values.cast(pa.int64() if values.type.bit_width == 64 else pa.int32())
    return np.asarray(values.to_numpy(zero_copy_only=False))


def intervals(predicate: KeyPredicate, key_type: pa.DataType) -> list[tuple[Any, Any]] | None:
    """Closed key intervals (``None`` bound: unbounded) covering every non-null key the
    predicate keeps, in the domain of :func:`physical`; None when it may keep null or NaN
    keys or a literal does not convert exactly."""
    kind = predicate[0]
    if kind == "cmp" and predicate[2].type.equals(key_type):
        point = _point(predicate[2])
        if point is not None:  # (a literal of the key type: no cast, no array)
            return [_bounds(point, predicate[1])]
    if kind in ("cmp", "in"):
        values = pa.array([predicate[2]]) if kind == "cmp" else predicate[1]
        try:
            values = values.cast(key_type)  # safe cast: a lossy literal raises
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        if values.null_count or (
            pa.types.is_floating(key_type) and pc.any(pc.is_nan(values)).as_py()
        ):
            return None
        points = physical(values, key_type)
        if kind == "in":
            return [(v, v) for v in points]
        return [_bounds(points[0], predicate[1])]
    if kind == "null":
        return None
    found = [intervals(p, key_type) for p in predicate[1]]
    if kind == "or":
        if any(f is None for f in found):
            return None
        return [i for f in found for i in f]  # type: ignore[union-attr]
    known = [f for f in found if f is not None]
    if not known:
        return None
    out = known[0]
    for other in known[1:]:
        both = [_intersect(a, b) for a in out for b in other]
        out = [i for i in both if i is not None]
    return out


def _bounds(v: Any, op: str) -> tuple[Any, Any]:
    """The closed interval of the keys ``key op v`` may keep."""
    return {"equal": (v, v), "less": (None, v), "less_equal": (None, v),
            "greater": (v, None), "greater_equal": (v, None)}[op]  # fmt: skip


def _point(value: pa.Scalar) -> Any:
    """An integer, float or string scalar as the :func:`physical` value of its type, or
    None: any other type (the caller takes the general way), null, or NaN."""
    t = value.type
    if not value.is_valid:
        return None
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        point = np.array(value.as_py(), dtype=t.to_pandas_dtype())[()]
        return None if pa.types.is_floating(t) and np.isnan(point) else point
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return value.as_py()
    return None


def _intersect(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any] | None:
    lo = a[0] if b[0] is None else b[0] if a[0] is None else max(a[0], b[0])
    hi = a[1] if b[1] is None else b[1] if a[1] is None else min(a[1], b[1])
    if lo is not None and hi is not None and lo > hi:
        return None
    return lo, hi
