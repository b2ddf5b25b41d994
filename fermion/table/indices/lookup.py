"""Scans through a scalar index: which rows of the covered fragments to read.

:func:`plan_indexed_scan` picks the first index of the version whose column a conjunct of
the filter constrains (:func:`~fermion.table.indices.match.key_filter`), reads from its
files only the pages whose key statistics may match, and returns, per covered fragment, the
physical offsets of the candidate rows. Covered fragments without a candidate are not
opened at all; :func:`read_rows` reads a fragment's candidates (only the data pages
holding them), drops deleted rows and applies the whole filter, so the scan returns
exactly what an unindexed one does. Fragments the index does not cover (appended or
rewritten since the build) are scanned as usual.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"k": [5, 3, 9]}), tempfile.mkdtemp())
    >>> ds.create_index("k", "BTREE")
    >>> scanner = ds.scanner(filter="k = 3")
    >>> scanner.to_table().to_pydict(), scanner.stats.fragments_indexed
    ({'k': [3]}, 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidFileError
from fermion.format import FileReader
from fermion.format.encoding.arrow_ops import filter_table
from fermion.format.read.pruning import referenced_fields
from fermion.table.codec import as_fragment, as_table_version, has_deletion_file
from fermion.table.domain import Fragment, TableVersion
from fermion.table.indices.build import FENCE_ROW, fences_path, is_fences_path
from fermion.table.indices.cache import INDEX_CACHE
from fermion.table.indices.match import (
    KeyPredicate,
    evaluate,
    intervals,
    match_filter,
    physical,
    to_expression,
)
from fermion.table.indices.model import (
    BITMAP,
    BTREE,
    KEY,
    LABEL_LIST,
    ROW_ADDRESS,
    IndexEntry,
    as_index_entry,
    indices_of,
    is_scalar_index,
    key_type_of,
    split_addresses,
)
from fermion.table.readers import ReaderCache
from fermion.table.scan import ROW_OFFSET, ScanStats, read_fragment
from fermion.table.schema import TableSchema, project_file_table
from fermion.table.storage import TableStorage

__all__ = [
    "DENSE_READ_RATIO",
    "INDEX_READ_OPTIONS",
    "index_column",
    "indexed_scan",
    "lookup_addresses",
    "plan_indexed_scan",
    "read_rows",
]

#: What the index knows of a column for a fragment's candidate rows (see :func:`read_rows`):
#: one value for all of them (a scalar) or a value per candidate (an array).
Fill: TypeAlias = "pa.Scalar | pa.Array"
#: Candidates above 1 / this of a fragment's rows are picked from a read of its columns
#: (a 1% filter on a 1M-row fragment: 10K scattered rows cost more by ``take``).
DENSE_READ_RATIO = 256
#: How index files are opened for a lookup: a small tail read (an index file's metadata is
#: a few KiB: two columns) and no merging of distant pages, so a lookup reads its pages.
INDEX_READ_OPTIONS = {"prefetch_bytes": 64 << 10, "coalesce_gap": 64 << 10}


def index_column(index: IndexEntry | Any, schema: TableSchema) -> str | None:
    """The current name of a scalar index's column (None: not a top-level column now).

    ``index`` is an :class:`~fermion.table.indices.model.IndexEntry` (its manifest
    message is still accepted).

    Example:
        >>> import pyarrow as pa
        >>> from fermion.table.indices.model import IndexEntry
        >>> schema = TableSchema.from_arrow(pa.schema([("a", pa.int64()), ("b", pa.string())]))
        >>> index_column(IndexEntry("b_idx", "BTREE", (1,)), schema)
        'b'
    """
    index = as_index_entry(index)
    if not is_scalar_index(index) or len(index.field_ids) != 1:
        return None
    top = schema.top_level_ids()
    if index.field_ids[0] not in top:
        return None
    return str(schema.arrow.names[top.index(index.field_ids[0])])


def _cached_fences(storage: TableStorage, path: str) -> tuple[np.ndarray, np.ndarray, int]:
    """A fences file's ordered keys (as :func:`physical` values), rows, and bytes read;
    kept per file (index files never change once written), so a lookup reads it once."""
    cache_key = (storage.uri, path)
    with _FENCES_LOCK:
        found = _FENCES.get(cache_key)
        if found is not None:
            _FENCES.move_to_end(cache_key)
    if found is not None:
        return found[0], found[1], 0
    with FileReader(storage.target(path), **INDEX_READ_OPTIONS) as reader:
        table = reader.read(columns=[KEY, FENCE_ROW])
        read = reader.source.stats.bytes_read
    keys = table.column(KEY).combine_chunks()
    fences = (physical(keys[:-1], keys.type), table.column(FENCE_ROW).to_numpy())
    with _FENCES_LOCK:
        _FENCES[cache_key] = fences
        while len(_FENCES) > _FENCES_KEPT:
            _FENCES.popitem(last=False)
    return fences[0], fences[1], read


_FENCES: OrderedDict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = OrderedDict()
_FENCES_KEPT = 64
_FENCES_LOCK = threading.Lock()


class _IndexReaders:
    """Idle open readers of index files by (table, path), least recently used first, each
    lent to one caller at a time (index files never change once written)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._idle: OrderedDict[tuple[str, str], FileReader] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def lease(self, storage: TableStorage, path: str) -> Iterator[FileReader]:
        key = (storage.uri, path)
        with self._lock:
            reader = self._idle.pop(key, None)
        if reader is None:
            reader = FileReader(storage.target(path), **INDEX_READ_OPTIONS)
        try:
            yield reader
        except BaseException:
            reader.close()
            raise
        evicted = []
        with self._lock:
            if key in self._idle:
                evicted.append(reader)
            else:
                self._idle[key] = reader
                while len(self._idle) > self.capacity:
                    evicted.append(self._idle.popitem(last=False)[1])
        for old in evicted:
            old.close()


#: Index files kept open between lookups.
_INDEX_READERS = _IndexReaders(16)


def _wanted_blocks(keys: np.ndarray, bounds: list[tuple[Any, Any]]) -> np.ndarray:
    """Blocks (between fences ``i`` and ``i + 1``) that may hold keys within ``bounds``
    (closed intervals), found by binary search in the fence ``keys`` (all the bounds of
    an ``IN`` list in one search)."""
    n = len(bounds)
    if n == 1:  # (an equality or one range: the same search, without the arrays of many)
        low, high = bounds[0]
        start, stop = 0, len(keys)
        if low is not None:  # (the bounds are of the keys' domain: :func:`physical`)
            start = max(int(keys.searchsorted(low, "left")) - 1, 0)
        if high is not None:
            stop = int(keys.searchsorted(high, "right"))
        return np.arange(start, max(stop, start), dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    last = np.full(n, len(keys), dtype=np.int64)
    # block i holds keys in [keys[i], keys[i + 1]]: a key equal to a fence may also end
    # the block before it
    for at, out in ((0, first), (1, last)):
        where = [i for i, b in enumerate(bounds) if b[at] is not None]
        if where:
            values = np.array([bounds[i][at] for i in where], dtype=keys.dtype)
            out[where] = np.searchsorted(keys, values, "left" if at == 0 else "right")
    bounded_below = np.array([b[0] is not None for b in bounds], dtype=bool)
    first = np.where(bounded_below, np.maximum(first - 1, 0), 0)
    ok = last > first
    first, last = first[ok], last[ok]
    spans = last - first
    if len(spans) == 1:  # (an equality, one range)
        return np.arange(first[0], last[0], dtype=np.int64)
    total = int(spans.sum())
    if total * 8 < len(keys):  # narrow ranges (an IN list): their blocks, not every fence's
        steps = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(spans) - spans, spans)
        return np.unique(np.repeat(first, spans) + steps)
    size = len(keys) + 1  # +1/-1 at block range starts/ends
    changes = np.bincount(first, minlength=size) - np.bincount(last, minlength=size)
    return np.flatnonzero(np.cumsum(changes[:-1]) > 0)


def _block_rows(rows: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entry rows of ``blocks`` (in block order) and each block's row count."""
    starts, stops = rows[blocks].astype(np.int64), rows[blocks + 1].astype(np.int64)
    lengths = stops - starts
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) + offsets, lengths


class _Block(NamedTuple):
    """A decoded block of a BTREE entries file (the entry rows between two fences)."""

    keys: pa.Array  # the block's keys, ascending (neither null nor NaN)
    ordered: np.ndarray  # the same keys as :func:`physical` values (what the fences hold)
    addresses: np.ndarray  # their row addresses (uint64)


def _btree_blocks(
    storage: TableStorage, path: str, bounds: list[tuple[Any, Any]], stats: ScanStats
) -> list[_Block]:
    """The blocks of the BTREE file ``path`` that may hold keys within ``bounds``, in file
    order (so their keys, concatenated, ascend): from :data:`INDEX_CACHE`, or else read
    (with one ``take`` of every missing block, the file opened only then) and kept there."""
    keys, rows, read = _cached_fences(storage, fences_path(path))
    stats.index_bytes_read += read
    wanted = _wanted_blocks(keys, bounds).tolist()
    parts, missing = _cached(storage, path, wanted)
    if missing:
        positions, lengths = _block_rows(rows, np.asarray(missing, dtype=np.int64))
        with _INDEX_READERS.lease(storage, path) as reader:
            before = reader.source.stats.bytes_read
            table = reader.take(positions, columns=[KEY, ROW_ADDRESS])
            stats.index_bytes_read += reader.source.stats.bytes_read - before
        key_column = table.column(KEY).combine_chunks()
        ordered = physical(key_column, key_column.type)
        addresses = table.column(ROW_ADDRESS).to_numpy().astype(np.uint64, copy=False)
        per_row = (key_column.nbytes + ordered.nbytes + addresses.nbytes) / max(len(ordered), 1)
        if ordered.dtype == object:  # (a Python string per key)
            per_row += 64
        # (the blocks are views of one read, alive while one of them is kept: a read larger
        # than a quarter of the cache, a wide range, is not kept)
        keep = per_row * len(ordered) * 4 <= INDEX_CACHE.capacity
        start = 0
        for block, length in zip(missing, lengths.tolist(), strict=True):
            stop = start + length
            part = _Block(
                key_column.slice(start, length), ordered[start:stop], addresses[start:stop]
            )
            parts[block] = part
            if keep:
                INDEX_CACHE.put((storage.uri, path, block), part, int(length * per_row) + 64)
            start = stop
    return [parts[b] for b in wanted]


def _in_bounds(ordered: np.ndarray, bounds: list[tuple[Any, Any]]) -> np.ndarray:
    """Positions (ascending, each once) of the ascending ``ordered`` keys within any of the
    closed intervals ``bounds`` (a ``None`` end: unbounded), by binary search."""
    n = len(ordered)
    if len(bounds) == 1:
        low, high = bounds[0]
        start = 0 if low is None else int(ordered.searchsorted(low, "left"))
        stop = n if high is None else int(ordered.searchsorted(high, "right"))
        return np.arange(start, max(start, stop), dtype=np.int64)
    starts = np.zeros(len(bounds), dtype=np.int64)
    stops = np.full(len(bounds), n, dtype=np.int64)
    for at, out in ((0, starts), (1, stops)):
        where = [i for i, b in enumerate(bounds) if b[at] is not None]
        if where:
            values = np.array([bounds[i][at] for i in where], dtype=ordered.dtype)
            out[where] = np.searchsorted(ordered, values, "left" if at == 0 else "right")
    ok = stops > starts
    changes = np.bincount(starts[ok], minlength=n + 1) - np.bincount(stops[ok], minlength=n + 1)
    return np.flatnonzero(np.cumsum(changes[:-1]) > 0)


def _interval_exact(predicate: KeyPredicate) -> bool:
    """Whether :func:`intervals` of ``predicate`` (when not None) hold exactly the keys it
    keeps: equalities, ``IN`` lists and their ``AND``/``OR`` (a strict bound is not)."""
    kind = predicate[0]
    if kind == "cmp":
        return bool(predicate[1] == "equal")
    if kind == "in":
        return True
    if kind in ("and", "or"):
        return all(_interval_exact(p) for p in predicate[1])
    return False


def _btree_search(
    storage: TableStorage,
    path: str,
    predicate: KeyPredicate,
    bounds: list[tuple[Any, Any]],
    stats: ScanStats,
    want_keys: bool,
) -> tuple[np.ndarray, pa.Array | None]:
    """The row addresses of the entries of BTREE file ``path`` whose key ``predicate``
    keeps (``bounds``: its :func:`intervals`), in entry order, with their keys when
    ``want_keys`` or when the predicate is not exactly its intervals (it is then evaluated
    on the keys within them)."""
    blocks = _btree_blocks(storage, path, bounds, stats)
    if not blocks:
        return np.empty(0, np.uint64), None
    if len(blocks) == 1:
        block = blocks[0]
        ordered, addresses, keys = block.ordered, block.addresses, block.keys
    else:
        ordered = np.concatenate([b.ordered for b in blocks])
        addresses = np.concatenate([b.addresses for b in blocks])
        keys = pa.concat_arrays([b.keys for b in blocks])
    at = _in_bounds(ordered, bounds)
    exact = _interval_exact(predicate)
    if exact and not want_keys:
        return addresses[at], None
    picked = keys.take(pa.array(at, pa.int64()))
    if not exact:
        keep = evaluate(predicate, picked)
        at, picked = at[keep], picked.filter(pa.array(keep))
    return addresses[at], picked


def _cached(storage: TableStorage, path: str, parts: list[int]) -> tuple[dict[int, Any], list[int]]:
    """The parts (BTREE blocks, BITMAP/LABEL_LIST lists) of index file ``path`` found in
    :data:`INDEX_CACHE`, by part number, and the part numbers not found there."""
    found: dict[int, Any] = {}
    missing = []
    for part in parts:
        kept = INDEX_CACHE.get((storage.uri, path, part))
        if kept is None:
            missing.append(part)
        else:
            found[part] = kept
    return found, missing


def _key_lists(
    storage: TableStorage, reader: FileReader, path: str, predicate: KeyPredicate
) -> list[np.ndarray]:
    """The row address lists of the keys of a BITMAP or LABEL_LIST file ``predicate``
    keeps: its keys and each key's list from :data:`INDEX_CACHE` or else read (one
    ``take`` of every missing list) and kept there."""
    keys = INDEX_CACHE.get((storage.uri, path, KEY))
    if keys is None:
        keys = reader.read(columns=[KEY]).column(KEY).combine_chunks()
        INDEX_CACHE.put((storage.uri, path, KEY), keys, keys.nbytes + 64)
    positions = np.flatnonzero(evaluate(predicate, keys)).tolist()
    lists, missing = _cached(storage, path, positions)
    if missing:
        column = reader.take(np.asarray(missing, np.int64), columns=[ROW_ADDRESS])
        array = column.column(ROW_ADDRESS).combine_chunks()
        flat = pc.list_flatten(array).to_numpy(zero_copy_only=False).astype(np.uint64)
        lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False)
        keep = flat.nbytes * 4 <= INDEX_CACHE.capacity  # (views of flat: see _btree_blocks)
        for position, part in zip(missing, np.split(flat, np.cumsum(lengths)[:-1]), strict=True):
            lists[position] = part
            if keep:
                INDEX_CACHE.put((storage.uri, path, position), part, part.nbytes + 64)
    return [lists[p] for p in positions]


def lookup_addresses(
    storage: TableStorage,
    index: IndexEntry | Any,
    predicate: KeyPredicate,
    key_type: pa.DataType,
    stats: ScanStats,
) -> np.ndarray | None:
    """Sorted distinct row addresses whose key ``predicate`` keeps; None when the files'
    key type is not ``key_type`` (the column was widened since the build).

    A BTREE searches its fences for the blocks of entry rows that may match (when the
    predicate has key intervals) and reads only those; otherwise it reads the file with
    the predicate as a filter (its pages are pruned by their key statistics). A BITMAP or
    LABEL_LIST evaluates the predicate on its keys and reads the lists of those it keeps.
    Decoded blocks, keys and lists are kept in :data:`INDEX_CACHE` for the next lookups.

    ``index`` is an :class:`~fermion.table.indices.model.IndexEntry` (its manifest
    message is still accepted).

    Raises:
        InvalidFileError: A file of the index is not an index file.
    """
    found = _lookup(storage, as_index_entry(index), predicate, key_type, stats, False)
    return found[0] if found is not None else None


def _lookup(
    storage: TableStorage,
    index: IndexEntry,
    predicate: KeyPredicate,
    key_type: pa.DataType,
    stats: ScanStats,
    want_keys: bool = True,
) -> tuple[np.ndarray, pa.Array | None] | None:
    """:func:`lookup_addresses`, with the key of each address when a BTREE read its entries
    (one per row: the row's value at the build) and ``want_keys``, else None for the keys."""
    found: list[np.ndarray] = []
    keys: list[pa.Array | None] = []
    bounds = intervals(predicate, key_type) if index.kind == BTREE else None
    for path in index.files:
        if is_fences_path(path):
            continue
        if not _entries_key_type(storage, path).equals(key_type):
            return None
        stats.index_files_read += 1
        if bounds is not None and fences_path(path) in index.files:
            addresses, picked = _btree_search(storage, path, predicate, bounds, stats, want_keys)
            found.append(addresses)
            keys.append(picked)
            continue
        table = None
        with _INDEX_READERS.lease(storage, path) as reader:
            before = reader.source.stats.bytes_read
            if index.kind in (BITMAP, LABEL_LIST):  # a row per key: evaluate them all
                found.extend(_key_lists(storage, reader, path, predicate))
            else:
                table = reader.read(columns=[KEY, ROW_ADDRESS], filter=to_expression(predicate))
            stats.index_bytes_read += reader.source.stats.bytes_read - before
        if table is not None:
            key_column = table.column(KEY).combine_chunks()
            keep = pa.array(evaluate(predicate, key_column))
            column = table.column(ROW_ADDRESS).combine_chunks().filter(keep)
            found.append(column.to_numpy(zero_copy_only=False))
            keys.append(key_column.filter(keep))
    if not found:
        return np.empty(0, np.uint64), None
    if len(found) == 1 and index.kind in (BITMAP, LABEL_LIST):
        return found[0], None  # (one list: ascending, each address once)
    if index.kind == BTREE and len(keys) == len(found):  # (the entries of every file)
        hits = [i for i, f in enumerate(found) if len(f)]
        if sum(len(found[i]) for i in hits) <= 1:  # (an equality's one row: nothing to order)
            one = found[hits[0]] if hits else np.empty(0, np.uint64)
            picked = keys[hits[0]] if hits else None
            return one.astype(np.uint64, copy=False), picked if want_keys else None
        addresses = np.concatenate(found).astype(np.uint64, copy=False)
        order = np.argsort(addresses, kind="stable")
        addresses = addresses[order]
        if not np.any(addresses[1:] == addresses[:-1]):  # (an entry per row)
            if not want_keys or any(k is None for k in keys):
                return addresses, None
            known = [k for k in keys if k is not None]
            key_column = known[0] if len(known) == 1 else pa.concat_arrays(known)
            return addresses, key_column.take(pa.array(order))
    return np.unique(np.concatenate(found).astype(np.uint64, copy=False)), None


def _entries_key_type(storage: TableStorage, path: str) -> pa.DataType:
    """The key type of the entries file ``path``, checked to be an index file once and
    then kept (index files never change once written), so that a lookup finding every
    part it needs in :data:`INDEX_CACHE` does not open the file.

    Raises:
        InvalidFileError: Its first two columns are not ``key``, ``_rowaddr``.
    """
    cache_key = (storage.uri, path)
    with _FENCES_LOCK:
        found = _KEY_TYPES.get(cache_key)
    if found is not None:
        return found
    with _INDEX_READERS.lease(storage, path) as reader:
        names = reader.schema.names
        if names[:2] != [KEY, ROW_ADDRESS]:
            raise InvalidFileError(f"{path}: not an index file ({names})")
        key_type = reader.schema.field(KEY).type
    with _FENCES_LOCK:
        _KEY_TYPES[cache_key] = key_type
        while len(_KEY_TYPES) > _FENCES_KEPT:
            _KEY_TYPES.popitem(last=False)
    return key_type


_KEY_TYPES: OrderedDict[tuple[str, str], pa.DataType] = OrderedDict()


def plan_indexed_scan(
    storage: TableStorage,
    version: TableVersion | Any,
    schema: TableSchema,
    filter: pc.Expression,
    fragments: Sequence[Fragment | Any],
    stats: ScanStats,
) -> tuple[list[Fragment], dict[int, np.ndarray], bool]:
    """The fragments left to read, for those an index answers their candidate rows (sorted
    physical offsets), and whether the candidates are exactly the filter's rows (the index
    answered every conjunct). Without a usable index: ``fragments``, ``{}``, False.

    ``version`` is the :class:`~fermion.table.domain.TableVersion` scanned and
    ``fragments`` domain fragments (a manifest and its fragment messages are still
    accepted; the fragments kept are then domain values).

    Example:
        >>> import tempfile, pyarrow as pa, pyarrow.compute as pc, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"k": [5, 3, 9]}), tempfile.mkdtemp())
        >>> ds.create_index("k", "BTREE")
        >>> kept, hits, exact = plan_indexed_scan(ds.storage, ds.table_version,
        ...     ds.table_schema, pc.field("k") == 3, ds.fragments, ScanStats())
        >>> len(kept), hits[0].tolist(), exact
        (1, [1], True)
    """
    kept, hits, exact, _ = _plan(
        storage, as_table_version(version), schema, filter, _fragments(fragments), stats
    )
    return kept, hits, exact


def _fragments(fragments: Sequence[Fragment | Any]) -> Sequence[Fragment]:
    """Domain fragments of ``fragments`` (manifest messages converted)."""
    if all(isinstance(f, Fragment) for f in fragments):
        return fragments
    return [as_fragment(f, committed=True) for f in fragments]


def _plan(
    storage: TableStorage,
    version: TableVersion,
    schema: TableSchema,
    filter: pc.Expression,
    fragments: Sequence[Fragment],
    stats: ScanStats,
) -> tuple[list[Fragment], dict[int, np.ndarray], bool, dict[int, dict[str, Fill]]]:
    """:func:`plan_indexed_scan`, and per fragment the column whose values the index
    knows for its candidate rows (exact answers only): ``{column: values}``, one value
    (a scalar) for all of them (an equality, see :func:`_fixed_value`) or one per
    candidate (an array: a BTREE's keys of those rows)."""
    present = {f.id for f in fragments}
    for index in indices_of(version):
        column = index_column(index, schema)
        if column is None:
            continue
        covered = set(index.fragment_ids) & present
        predicate, exact = match_filter(filter, column, index.kind) if covered else (None, False)
        if predicate is None:
            continue
        key_type = key_type_of(index.kind, schema.arrow.field(column).type)
        value = _fixed_value(index.kind, predicate, key_type) if exact else None
        # an exact answer's rows hold the keys the entries hold (of identical types)
        want_keys = exact and value is None and _identical(key_type)
        found = _lookup(storage, index, predicate, key_type, stats, want_keys)
        if found is None:
            continue
        addresses, keys = found
        ids, offsets = split_addresses(addresses)
        aligned = keys is not None and want_keys
        hits: dict[int, np.ndarray] = {}
        fills: dict[int, dict[str, Fill]] = {}
        # the addresses are sorted: one run per fragment with candidates (an equality's
        # one or two), rather than a search per covered fragment
        cuts = (np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist()
        for lo, hi in zip([0, *cuts], [*cuts, len(ids)], strict=True):
            fragment_id = int(ids[lo]) if hi > lo else -1
            if fragment_id in covered:  # (an index file may hold uncovered fragments')
                hits[fragment_id] = offsets[lo:hi]
                if value is not None:
                    fills[fragment_id] = {column: value}
                elif aligned and keys is not None:
                    fills[fragment_id] = {column: keys.slice(lo, hi - lo)}
        stats.fragments_indexed += len(covered)
        kept = [f for f in fragments if f.id not in covered or f.id in hits]
        return kept, hits, exact, fills
    return list(fragments), {}, False, {}


def _identical(t: pa.DataType) -> bool:
    """Whether equal values of type ``t`` are identical (not floats: ``-0.0 = 0.0``)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
    )


def _fixed_value(kind: str, predicate: KeyPredicate, key_type: pa.DataType) -> pa.Scalar | None:
    """The one value (a scalar of ``key_type``) of a BTREE or BITMAP key that
    ``predicate`` keeps, when it is an equality with a literal that is exactly a key and
    whose equal keys are identical (integers, strings, booleans, dates, timestamps; not
    floats: ``-0.0 = 0.0``); else None."""
    if kind not in (BTREE, BITMAP) or predicate[0] != "cmp" or predicate[1] != "equal":
        return None
    if not _identical(key_type):
        return None
    value = predicate[2]
    if not value.type.equals(key_type):
        try:
            value = value.cast(key_type)  # safe cast: a lossy literal raises
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
    return value if value.is_valid else None


def indexed_scan(
    storage: TableStorage,
    version: TableVersion | Any,
    schema: TableSchema,
    filter: pc.Expression,
    fragments: Sequence[Fragment | Any],
    *,
    stats: ScanStats,
    columns: Sequence[str],
    with_row_offsets: bool = False,
    readers: ReaderCache | None = None,
) -> tuple[list[Fragment], Callable[[Fragment], pa.Table | None]]:
    """A :data:`~fermion.table.scan.IndexedScan`: the fragments left to read, and a reader
    of a fragment's rows through the index (None for a fragment to scan as usual; its
    ``answers_all(fragments)`` tells whether the index answers each of them).

    ``version`` is the :class:`~fermion.table.domain.TableVersion` scanned and
    ``fragments`` domain fragments (as :func:`plan_indexed_scan`, a manifest and its
    fragment messages are still accepted).
    """
    kept, hits, exact, fixed = _plan(
        storage, as_table_version(version), schema, filter, _fragments(fragments), stats
    )

    def read(fragment: Fragment) -> pa.Table | None:
        offsets = hits.get(fragment.id) if fragment.id is not None else None
        if offsets is None or fragment.id is None:
            return None
        return read_rows(
            storage, schema, fragment, columns, filter, offsets,
            with_row_offsets=with_row_offsets, stats=stats, exact=exact, readers=readers,
            fixed=fixed.get(fragment.id),
        )  # fmt: skip

    return kept, _IndexedRead(read, set(hits), exact)


class _IndexedRead:
    """A fragment reader through an index, knowing the fragments the index answers and
    whether its candidates are exactly the filter's rows (``exact``)."""

    def __init__(
        self,
        read: Callable[[Fragment], pa.Table | None],
        answered: set[int],
        exact: bool = False,
    ):
        self._read = read
        self._answered = answered
        self.exact = exact

    def __call__(self, fragment: Fragment) -> pa.Table | None:
        return self._read(fragment)

    def answers_all(self, fragments: Sequence[Fragment]) -> bool:
        """Whether the index answers every one of ``fragments``."""
        return all(f.id in self._answered for f in fragments)


def read_rows(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment | Any,
    columns: Sequence[str],
    filter: pc.Expression,
    offsets: np.ndarray,
    *,
    with_row_offsets: bool = False,
    stats: ScanStats | None = None,
    exact: bool = False,
    readers: ReaderCache | None = None,
    fixed: Mapping[str, Fill] | None = None,
) -> pa.Table:
    """The live rows at physical ``offsets`` (sorted) of ``fragment`` that ``filter``
    keeps, projected to ``columns`` (and ``_rowoffset`` with ``with_row_offsets``), in
    physical order: the rows :func:`~fermion.table.scan.read_fragment` returns, when
    ``offsets`` hold every row it would keep. With ``exact`` the filter is known to keep
    every row at ``offsets`` and is not evaluated again. ``readers`` keeps the data file
    open (and its deletion mask) for the next lookups. With ``exact``, a column of
    ``fixed`` (``{column: values}``: a scalar, one value for every row, the index
    answered ``column = value``, or an array, a value per offset) is not read but
    filled with those values, as long as another column is read. ``fragment`` is a domain
    :class:`~fermion.table.domain.Fragment` (its manifest message is still accepted)."""
    fragment = as_fragment(fragment, committed=True)
    stats = stats if stats is not None else ScanStats()
    used = referenced_fields(filter) if not exact else set()
    needed = list(dict.fromkeys([*columns, *(n for n in schema.arrow.names if n in used)]))
    needed = needed or [schema.arrow.names[0]]  # (no column asked: rows are still counted)
    filled = {c: v for c, v in (fixed or {}).items() if exact and c in needed}
    if len(filled) == len(needed) or len(fragment.files) != 1:
        filled = {}
    needed = [c for c in needed if c not in filled]
    if len(fragment.files) != 1:  # columns in several files: read the fragment whole
        table = read_fragment(
            storage, schema, fragment, needed, filter, with_row_offsets=True, stats=stats
        )
        mask = np.isin(table.column(ROW_OFFSET).to_numpy(), offsets)  # (deletions applied)
        table = table.filter(pa.array(mask))
        return table.select([*columns, ROW_OFFSET] if with_row_offsets else list(columns))
    path = fragment.files[0].path
    top_ids = schema.top_level_ids()
    with (readers if readers is not None else ReaderCache(0)).lease(storage, path) as opened:
        reader = opened.reader
        stats.files_opened += 1
        stats.files_reused += not opened.fresh
        opened.check_rows(fragment, path)
        if has_deletion_file(fragment):
            keep, read_now = opened.keep_mask(storage, fragment)
            stats.deletion_files_read += read_now
            live = keep[offsets]
            filled = {  # (values per offset: those of the live ones)
                c: v if isinstance(v, pa.Scalar) else v.filter(pa.array(live))
                for c, v in filled.items()
            }
            offsets = offsets[live]
        file_ids = opened.top_ids
        wanted = {top_ids[schema.arrow.get_field_index(n)] for n in needed}
        got = [(reader.schema.field(i).name, f) for i, f in enumerate(file_ids) if f in wanted]
        names = [n for n, _ in got] or [reader.schema.field(0).name]
        positions = offsets.astype(np.int64)
        if len(positions) * DENSE_READ_RATIO > fragment.physical_rows:  # read, then pick
            read = reader.read(columns=names).take(pa.array(positions))
        else:
            read = reader.take(positions, columns=names)
    table = project_file_table(read, [f for _, f in got], schema, needed) if got else None
    if table is None:  # every needed column is newer than the file: nulls
        table = project_file_table(read.select([]), [], schema, needed)
    for name, values in filled.items():
        if isinstance(values, pa.Scalar):  # one value for every row
            values = pa.repeat(values, table.num_rows)
        table = table.append_column(schema.arrow.field(name), values)
    if with_row_offsets:
        table = table.append_column(ROW_OFFSET, pa.array(offsets.astype(np.uint64)))
    if not exact:
        table = filter_table(table, filter)
    out = table.select([*columns, ROW_OFFSET] if with_row_offsets else list(columns))
    stats.rows_returned += out.num_rows
    return out
