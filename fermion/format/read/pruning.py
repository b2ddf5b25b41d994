"""Predicate pruning with Arrow's own expression simplifier.

Statistics become *guarantees* — ``(x >= lo) & (x <= hi) & is_valid(x)``, for a column with
some nulls ``((x >= lo) | is_null(x)) & ((x <= hi) | is_null(x))``, and friends — and
Arrow decides which guarantees contradict the user's filter (the same machinery that prunes
Hive partitions in ``pyarrow.dataset``). Pruning is therefore exactly as precise as Arrow's
simplifier and never wrong: a segment is dropped only when Arrow proves no row can match.
The residual filter is always applied to the rows that survive.

Example:
    >>> import pyarrow as pa, pyarrow.compute as pc
    >>> sorted(referenced_fields((pc.field("a") > 1) | pc.field("b").is_null()))
    ['a', 'b']
    >>> g = [guarantee_for("a", pa.int64(), (lo, lo + 9), 0, 5) for lo in (0, 10)]
    >>> segments_that_may_match(pa.schema([("a", pa.int64())]), g, pc.field("a") == 12)
    [1]
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidArgumentError

__all__ = [
    "ExpressionMemo",
    "and_all",
    "arrow_reason",
    "equality_constraints",
    "guarantee_for",
    "referenced_fields",
    "segments_that_may_match",
]


class _ArrowSchema(ctypes.Structure):
    """The Arrow C data interface struct (only read here, released right after)."""


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))


def _metadata_pairs(schema: pa.Schema) -> list[tuple[bytes, bytes]]:
    """All key/value pairs of a schema's metadata, duplicates and order kept."""
    c_schema = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(c_schema))
    try:
        pairs: list[tuple[bytes, bytes]] = []
        if not c_schema.metadata:
            return pairs
        base = c_schema.metadata

        def int32_at(off: int) -> int:
            return int.from_bytes(ctypes.string_at(base + off, 4), sys.byteorder, signed=True)

        count = int32_at(0)
        pos = 4
        for _ in range(count):
            klen = int32_at(pos)
            key = ctypes.string_at(base + pos + 4, klen)
            pos += 4 + klen
            vlen = int32_at(pos)
            value = ctypes.string_at(base + pos + 4, vlen)
            pos += 4 + vlen
            pairs.append((key, value))
        return pairs
    finally:
        if c_schema.release:
            _RELEASE(c_schema.release)(ctypes.byref(c_schema))


class ExpressionMemo:
    """What was computed of the last few expression objects, by object.

    A scan asks several times about the same filter object, and a filter text parsed once
    is the same object in the next scans. An entry holds its expression, so the
    expression's ``id`` is not reused while the entry lives.

    Example:
        >>> memo = ExpressionMemo(kept=2)
        >>> e = pc.field("a") > 1
        >>> memo.get(e) is None
        True
        >>> memo.put(e, "result")
        'result'
        >>> memo.get(e), memo.get(pc.field("a") > 1)
        ('result', None)
    """

    def __init__(self, kept: int = 16) -> None:
        self._kept = kept
        self._entries: dict[int, tuple[pc.Expression, Any]] = {}
        self._lock = threading.Lock()

    def get(self, expr: pc.Expression) -> Any:
        """The value kept for this very object, or ``None``."""
        with self._lock:
            found = self._entries.get(id(expr))
        return found[1] if found is not None and found[0] is expr else None

    def put(self, expr: pc.Expression, value: Any) -> Any:
        """Keep ``value`` for ``expr`` (dropping the oldest entry past ``kept``); returns it."""
        with self._lock:
            self._entries[id(expr)] = (expr, value)
            while len(self._entries) > self._kept:
                del self._entries[next(iter(self._entries))]
        return value


def _serialized(expr: pc.Expression) -> tuple[list[tuple[bytes, bytes]], pa.RecordBatch | None]:
    """The metadata pairs and literals batch of ``expr``'s serialisation (not to be
    modified: the last few are kept by expression object, see :class:`ExpressionMemo`)."""
    found = _SERIALIZED.get(expr)
    if found is not None:
        return found
    if not isinstance(expr, pc.Expression):
        raise InvalidArgumentError(f"filter must be a pyarrow.compute.Expression, not {expr!r}")
    try:
        _, (buf,) = expr.__reduce__()
        reader = pa.ipc.open_file(buf)
        batch = reader.get_batch(0) if reader.num_record_batches else None
        result = _metadata_pairs(reader.schema), batch
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"cannot analyse filter {expr}: {exc}") from None
    return _SERIALIZED.put(expr, result)


_SERIALIZED = ExpressionMemo()


def _parse(pairs: list[tuple[bytes, bytes]], batch: pa.RecordBatch | None) -> Any:
    """The serialised expression as nested tuples: ("call", name, args, options),
    ("field", name) for top-level refs, ("nested",) or ("literal", scalar)."""
    pos = 0

    def column(index: bytes) -> Any:
        if batch is None:
            raise InvalidArgumentError("filter literal missing")
        return batch.column(int(index))[0]

    def node() -> Any:
        nonlocal pos
        key, value = pairs[pos]
        pos += 1
        if key == b"field_ref":
            return ("field", value.decode())
        if key == b"nested_field_ref":
            pos += int(value)
            return ("nested",)
        if key == b"literal":
            return ("literal", column(value))
        if key == b"call":
            args, options = [], None
            while pairs[pos][0] != b"end":
                if pairs[pos][0] == b"options":
                    options = column(pairs[pos][1])
                    pos += 1
                    continue
                args.append(node())
            pos += 1
            return ("call", value.decode(), args, options)
        raise InvalidArgumentError(f"unexpected token {key!r} in filter")

    return node()


def equality_constraints(expr: pc.Expression) -> dict[str, pa.Array]:
    """Values a field must take for ``expr`` to hold, from its top-level conjunction.

    Recognises ``field == literal`` (either side), ``field.isin(values)`` (without nulls in
    the set) and ORs of those on one field. Anything else constrains nothing.
    """
    try:
        tree = _parse(*_serialized(expr))
    except (IndexError, ValueError, KeyError):
        return {}

    def values_of(n: Any) -> tuple[str, list[pa.Scalar]] | None:
        if n[0] != "call":
            return None
        name, args, options = n[1], n[2], n[3]
        if name == "equal" and len(args) == 2:
            kinds = {a[0] for a in args}
            if kinds == {"field", "literal"}:
                f = next(a for a in args if a[0] == "field")
                lit = next(a for a in args if a[0] == "literal")
                return (f[1], [lit[1]]) if lit[1].is_valid else None
        if name == "is_in" and len(args) == 1 and args[0][0] == "field" and options is not None:
            value_set = options.as_py().get("value_set") if options.is_valid else None
            items = options["value_set"].values if value_set is not None else None
            if items is not None and items.null_count == 0:
                return args[0][1], [items[i] for i in range(len(items))]
        if name in ("or", "or_kleene") and len(args) == 2:
            left, right = values_of(args[0]), values_of(args[1])
            if left and right and left[0] == right[0]:
                return left[0], left[1] + right[1]
        return None

    out: dict[str, list[pa.Scalar]] = {}
    stack = [tree]
    while stack:
        n = stack.pop()
        if n[0] == "call" and n[1] in ("and", "and_kleene"):
            stack.extend(n[2])
            continue
        found = values_of(n)
        if found:
            name, vals = found
            out[name] = vals if name not in out else [v for v in out[name] if v in vals]
    return {
        k: pa.array([v.as_py() for v in vals], type=vals[0].type) if vals else pa.array([])
        for k, vals in out.items()
    }


def referenced_fields(expr: pc.Expression) -> set[str]:
    """Top-level field names an expression refers to.

    Arrow serialises an expression as an IPC stream whose schema metadata lists the
    expression tree in prefix order (``call``/``field_ref``/``nested_field_ref``/...).
    """
    pairs, _ = _serialized(expr)
    names: set[str] = set()
    pending_nested = 0
    take_next = False
    for key, value in pairs:
        if key == b"nested_field_ref":
            pending_nested = int(value)
            take_next = True
        elif key == b"field_ref":
            if pending_nested:
                if take_next:
                    names.add(value.decode())
                    take_next = False
                pending_nested -= 1
            else:
                names.add(value.decode())
    return names


def guarantee_for(
    name: str,
    t: pa.DataType,
    bounds: tuple[pa.Scalar | int | float, pa.Scalar | int | float] | None,
    null_count: int,
    rows: int,
) -> pc.Expression | None:
    """What statistics guarantee about column ``name`` over ``rows`` rows (None: nothing).

    ``bounds`` cover the non-null values (docs/FORMAT.md §7). Without nulls the guarantee is
    ``(x >= lo) & (x <= hi) & is_valid(x)``; with some nulls it is
    ``(lo <= x <= hi) or x is null``, written as ``((x >= lo) | is_null(x)) & ((x <= hi) |
    is_null(x))``: each conjunct is one comparison or-ed with ``is_null`` of its field, the
    shape Arrow's simplifier reads as a nullable bound (the single disjunction
    ``(lo <= x <= hi) | is_null(x)`` prunes nothing). Arrow then keeps SQL's three-valued
    logic: ``x > c`` never selects the nulls, ``is_null(x)`` and ``NOT (x > c)`` are not
    pruned wrongly.

    Example:
        >>> g = guarantee_for("x", pa.int64(), (0, 9), 3, 10)
        >>> segments_that_may_match(pa.schema([("x", pa.int64())]), [g], pc.field("x") > 50)
        []
        >>> segments_that_may_match(pa.schema([("x", pa.int64())]), [g], pc.field("x").is_null())
        [0]
    """
    f = pc.field(name)
    if rows and null_count >= rows:
        return f.is_null()
    if bounds is None:
        return f.is_valid() if null_count == 0 else None
    lo, hi = bounds
    lo_s = lo if isinstance(lo, pa.Scalar) else pa.scalar(lo, type=t)
    hi_s = hi if isinstance(hi, pa.Scalar) else pa.scalar(hi, type=t)
    if null_count == 0:
        return (f >= lo_s) & (f <= hi_s) & f.is_valid()
    null = f.is_null()
    return ((f >= lo_s) | null) & ((f <= hi_s) | null)


def _has_nan(values: pa.Array) -> bool:
    """Whether ``values`` holds a floating-point NaN at any depth (True when unsure)."""
    t = values.type
    try:
        if pa.types.is_floating(t):
            return bool(pc.any(pc.is_nan(values)).as_py())
        if pa.types.is_struct(t):
            return any(_has_nan(values.field(i)) for i in range(t.num_fields))
        if pa.types.is_dictionary(t):
            return _has_nan(values.dictionary)
        if hasattr(values, "flatten") and (
            pa.types.is_list(t)
            or pa.types.is_large_list(t)
            or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t)
            or pa.types.is_large_list_view(t)
            or pa.types.is_map(t)
        ):
            return _has_nan(values.flatten())
    except (pa.ArrowException, NotImplementedError, TypeError):
        return True
    return False


def _mentions_nan(expr: pc.Expression) -> bool:
    """Whether a literal of ``expr`` (or a value of an option such as ``isin``'s set) is NaN.

    Example:
        >>> _mentions_nan(pc.field("x") <= float("nan")), _mentions_nan(pc.field("x") <= 1.5)
        (True, False)
    """
    _, batch = _serialized(expr)
    return batch is not None and any(_has_nan(column) for column in batch.columns)


@functools.cache
def _placeholder_dataset_parts() -> tuple[Any, Any, Any]:
    """``pyarrow.dataset``, a filesystem and a format for the placeholder datasets.

    Imported on first use: ``pyarrow.dataset`` pulls in pandas, which would add about half a
    second to ``import fermion`` (the CLI's start and every Spark Python worker's)."""
    import pyarrow.dataset as pds
    import pyarrow.fs as pafs

    return pds, pafs.LocalFileSystem(), pds.IpcFileFormat()


def segments_that_may_match(
    schema: pa.Schema,
    guarantees: Sequence[pc.Expression | None],
    filter: pc.Expression,
) -> list[int]:
    """Indices of the segments whose guarantee does not contradict ``filter``.

    ``schema`` holds the fields the filter references. No file is opened: the dataset is
    built over placeholder paths only to reach Arrow's partition-expression pruning.

    A filter with a NaN literal prunes nothing: Arrow's simplifier orders NaN above every
    bound, so it would turn ``x <= NaN`` (false on every row) into true and prune
    ``NOT (x <= NaN)``, which holds on every non-null row.
    """
    if not guarantees:
        return []
    if _mentions_nan(filter):
        return list(range(len(guarantees)))
    exprs = [g if g is not None else pc.scalar(True) for g in guarantees]
    paths = [f"/fermion-segment/{i}" for i in range(len(exprs))]
    pds, filesystem, file_format = _placeholder_dataset_parts()
    try:
        ds = pds.FileSystemDataset.from_paths(
            paths, schema=schema, format=file_format, filesystem=filesystem, partitions=exprs
        )
        kept = ds.get_fragments(filter=filter)
        return [int(frag.path.rsplit("/", 1)[1]) for frag in kept]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidArgumentError(
            f"filter {filter} does not apply to this data: {arrow_reason(exc)}"
        ) from None


def arrow_reason(exc: BaseException) -> str:
    """Arrow's error message on one line, without the schema Arrow pastes into some.

    Example:
        >>> arrow_reason(pa.ArrowInvalid("No match for FieldRef.Name(z) in x: int64"))
        'No match for FieldRef.Name(z)'
    """
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if text.startswith("No match for FieldRef") and ") in " in text:
        text = text[: text.index(") in ") + 1]
    return text


def and_all(parts: Sequence[pc.Expression | None]) -> pc.Expression | None:
    """The conjunction of the known parts (None: nothing known).

    Example:
        >>> and_all([None]) is None, and_all([None, pc.field("a") > 1]) is not None
        (True, True)
    """
    out: pc.Expression | None = None
    for p in parts:
        if p is not None:
            out = p if out is None else out & p
    return out
