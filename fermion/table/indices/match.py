"""Which part of a scan filter an index on one column can answer.

The filter's top-level conjuncts (``AND``) that constrain the indexed column alone, with
``= < <= > >=`` against a literal, ``IN`` (either form :mod:`fermion.table.predicate`
builds), ``IS NULL``, ``BETWEEN`` (two conjuncts) or ``OR`` of those, are rebuilt over the
index file's ``key`` column. A row the filter keeps has a key the rebuilt expression keeps
(each rebuilt conjunct is the conjunct itself on the key), so the index returns a superset
of the matching rows of the fragments it covers; the scan applies the whole filter to the
rows it reads, so the result is exactly the unindexed one.

Example:
    >>> import pyarrow.compute as pc
    >>> key_filter((pc.field("k") == 3) & (pc.field("v") > 1), "k")
    <pyarrow.compute.Expression (key == 3)>
    >>> key_filter(pc.field("v") > 1, "k") is None
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# the format layer's reading of an expression's serialised tree (it is what its own page
# pruning uses); the table layer has no other view of a pyarrow expression's structure
from fermion.format.read.pruning import _parse, _serialized, and_all
from fermion.table.indices.model import KEY

__all__ = ["key_filter"]

_COMPARE: dict[str, Callable[[pc.Expression, pc.Expression], pc.Expression]] = {
    "equal": lambda a, b: a == b,
    "less": lambda a, b: a < b,
    "less_equal": lambda a, b: a <= b,
    "greater": lambda a, b: a > b,
    "greater_equal": lambda a, b: a >= b,
}
_FLIPPED = {
    "equal": "equal", "less": "greater", "less_equal": "greater_equal",
    "greater": "less", "greater_equal": "less_equal",
}  # fmt: skip
_AND = ("and", "and_kleene")
_OR = ("or", "or_kleene")


def key_filter(filter: pc.Expression, column: str, key: str = KEY) -> pc.Expression | None:
    """The conjuncts of ``filter`` an index on ``column`` answers, over its ``key`` column
    (None: none)."""
    try:
        tree = _parse(*_serialized(filter))
    except Exception:  # an expression Arrow serialises in a way we do not read: no index
        return None
    conjuncts, stack = [], [tree]
    while stack:
        node = stack.pop()
        if node[0] == "call" and node[1] in _AND:
            stack.extend(node[2])
        else:
            conjuncts.append(node)
    return and_all([_match(c, column, key) for c in reversed(conjuncts)])


def _options(node: Any) -> dict[str, Any]:
    options = node[3]
    return options.as_py() if options is not None and options.is_valid else {}


def _match(node: Any, column: str, key: str) -> pc.Expression | None:
    """An expression over ``key`` true wherever ``node`` is true (None: unknown)."""
    if node[0] != "call":
        return None
    name, args = node[1], node[2]
    field = ("field", column)
    if name in _COMPARE and len(args) == 2:
        left, right = args
        if left == field and right[0] == "literal":
            return _COMPARE[name](pc.field(key), pc.scalar(right[1]))
        if right == field and left[0] == "literal":
            return _COMPARE[_FLIPPED[name]](pc.field(key), pc.scalar(left[1]))
        return None
    if name == "is_null" and args == [field]:
        return pc.field(key).is_null(nan_is_null=bool(_options(node).get("nan_is_null")))
    if name == "is_in" and args == [field] and node[3] is not None and node[3].is_valid:
        values: pa.Array = node[3]["value_set"].values
        # (nulls matching nulls is the widest of the null behaviours: a superset)
        return pc.field(key).isin(values)  # (default: nulls match nulls)
    if name == "if_else" and len(args) == 3:
        # IN of many values (fermion.table.predicate): if_else(k IS NULL, NULL, k IN (...))
        condition, then = args[0], args[1]
        null = then[0] == "literal" and not then[1].is_valid
        if null and condition[0] == "call" and condition[1] == "is_null":
            if condition[2] == [field]:
                return _match(args[2], column, key)
        return None
    if name in _OR and len(args) == 2:
        left, right = _match(args[0], column, key), _match(args[1], column, key)
        return left | right if left is not None and right is not None else None
    if name in _AND:
        return and_all([_match(a, column, key) for a in args])
    return None
