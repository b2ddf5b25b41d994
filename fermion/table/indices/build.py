"""Building index files: the entries of some fragments, sorted, written as a Fermion file.

An index's *entries* are ``(key, row address)`` pairs, one per physical row of each
covered fragment (deleted rows included: a scan drops them with the deletion files, and a
fragment's deletions only grow). :func:`fragment_entries` reads them from a fragment,
:func:`read_entries` from existing index files (for :func:`write_index_file` to merge an old
index with new fragments), and :func:`write_index_file` writes the file of one kind:

- BTREE: one row per entry, sorted by key (nulls last), then by row address, and a
  fences file with the key of every :data:`FENCE_ROWS`-th entry, which a lookup searches
  to read only the entry rows that may match;
- BITMAP: one row per distinct key (null included), its row addresses as a sorted list;
- LABEL_LIST: the BITMAP layout over the elements of a list column: one row per distinct
  non-null element, the addresses of the rows whose list holds it (each once).

All are Fermion files (zstd, page statistics on ``key``; docs/TABLE_FORMAT.md, "Scalar
indices").

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table.storage import TableStorage
    >>> storage = TableStorage(tempfile.mkdtemp())
    >>> entries = pa.table({"key": [3, 1, 3], "_rowaddr": pa.array([0, 1, 2], pa.uint64())})
    >>> paths, size = write_index_file(storage, "u1", "BITMAP", entries)
    >>> read_entries(storage, paths, "BITMAP").to_pydict()
    {'key': [1, 3, 3], '_rowaddr': [1, 0, 2]}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidArgumentError, InvalidFileError
from fermion.format import FileReader, write_table
from fermion.table.domain import Fragment
from fermion.table.indices.model import (
    BITMAP,
    BTREE,
    KEY,
    LABEL_LIST,
    ROW_ADDRESS,
    key_type_of,
    row_addresses,
)
from fermion.table.scan import read_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage

__all__ = [
    "INDEX_PAGE_SIZE",
    "INDEX_STRIPE_ROWS",
    "FENCE_ROW",
    "FENCE_ROWS",
    "collect_entries",
    "entry_schema",
    "fences_path",
    "fragment_entries",
    "is_fences_path",
    "index_file_path",
    "merge_sorted",
    "read_entries",
    "sorted_entries",
    "write_index_file",
]

#: Pages of index files: small, so that a point lookup decodes little besides its key.
INDEX_PAGE_SIZE = 64 << 10
#: Rows of a stripe of an index file: stripe statistics narrow a lookup before its pages.
INDEX_STRIPE_ROWS = 1 << 18
#: A BTREE's fences file holds the key of every this many-th entry.
FENCE_ROWS = 256
#: Column of a fences file: the entry row each fence key starts.
FENCE_ROW = "_row"


def index_file_path(uuid: str, kind: str) -> str:
    """Relative path of an index build's file.

    Example:
        >>> index_file_path("ab12", "BTREE")
        '_indices/ab12/btree.fermion'
    """
    return f"_indices/{uuid}/{kind.lower()}.fermion"


def fences_path(path: str) -> str:
    """The fences file of a BTREE file.

    Example:
        >>> fences_path("_indices/ab12/btree.fermion")
        '_indices/ab12/btree.fences.fermion'
    """
    return path.removesuffix(".fermion") + ".fences.fermion"


def is_fences_path(path: str) -> bool:
    """Whether ``path`` is a fences file (not an entries file)."""
    return path.endswith(".fences.fermion")


def _fences(rows: pa.Table) -> pa.Table:
    """The key of every FENCE_ROWS-th entry of sorted BTREE ``rows`` with its row, over the
    ordered keys (neither null nor NaN), then one row (null key) at the end of them."""
    keys = rows.column(KEY).combine_chunks()
    unordered = keys.null_count
    if pa.types.is_floating(keys.type):
        unordered += pc.sum(pc.is_nan(keys)).as_py() or 0
    ordered = rows.num_rows - unordered
    starts = np.arange(0, ordered, FENCE_ROWS, dtype=np.int64)
    fence_keys = keys.take(pa.array(starts, pa.int64()))
    return pa.table({
        KEY: pa.concat_arrays([fence_keys, pa.nulls(1, keys.type)]),
        FENCE_ROW: pa.array(np.append(starts, ordered).astype(np.uint64)),
    })  # fmt: skip


def fragment_entries(
    storage: TableStorage,
    schema: TableSchema,
    fragment: Fragment,
    column: str,
    kind: str = BTREE,
) -> pa.Table:
    """The ``(key, _rowaddr)`` entries of every physical row of the committed
    ``fragment`` (for a LABEL_LIST index: of every distinct non-null element of every
    row's list).

    Raises:
        InvalidArgumentError: A fragment without an id (not committed).
        InvalidFileError: Its files hold another number of rows than it says.
    """
    if fragment.id is None:
        raise InvalidArgumentError("only a committed fragment (one with an id) is indexed")
    # its data files alone: deleted rows are indexed too (the scan drops them)
    whole = Fragment(fragment.id, fragment.files, fragment.physical_rows)
    table = read_fragment(storage, schema, whole, [column])  # (every row, in order)
    if table.num_rows != fragment.physical_rows:
        raise InvalidFileError(
            f"fragment {fragment.id}: {table.num_rows} rows, the manifest says "
            f"{fragment.physical_rows}"
        )
    keys = table.column(column)
    addresses = row_addresses(fragment.id, np.arange(table.num_rows, dtype=np.uint64))
    if kind == LABEL_LIST:
        return _label_entries(keys, addresses)
    return pa.table({KEY: keys, ROW_ADDRESS: pa.array(addresses)})


def _label_entries(lists: pa.ChunkedArray, addresses: np.ndarray) -> pa.Table:
    """One entry per distinct non-null element of each row's list."""
    lists_array = lists.combine_chunks() if lists.num_chunks else pa.array([], lists.type)
    items = pc.list_flatten(lists_array)
    parents = pc.list_parent_indices(lists_array).to_numpy(zero_copy_only=False)
    entries = pa.table({KEY: items, ROW_ADDRESS: pa.array(addresses[parents], pa.uint64())})
    entries = entries.filter(items.is_valid())
    # a label repeated within a list is one entry
    return entries.group_by([KEY, ROW_ADDRESS], use_threads=False).aggregate([])


def read_entries(storage: TableStorage, paths: Iterable[str], kind: str) -> pa.Table:
    """The entries held by existing index files of ``kind`` (a BITMAP's or LABEL_LIST's
    lists flattened).

    Raises:
        InvalidFileError: A file without the index columns.
    """
    parts = []
    for path in paths:
        if is_fences_path(path):
            continue
        with FileReader(storage.target(path)) as reader:
            names = reader.schema.names
            if KEY not in names or ROW_ADDRESS not in names:
                raise InvalidFileError(f"{path}: not an index file (columns {names})")
            table = reader.read(columns=[KEY, ROW_ADDRESS])
        if kind in (BITMAP, LABEL_LIST):
            lists = table.column(ROW_ADDRESS).combine_chunks()
            keys = table.column(KEY).combine_chunks().take(pc.list_parent_indices(lists))
            table = pa.table({KEY: keys, ROW_ADDRESS: pc.list_flatten(lists)})
        parts.append(table)
    return pa.concat_tables(parts) if parts else pa.table({})


def sorted_entries(entries: pa.Table) -> pa.Table:
    """Entries sorted by key (nulls last, NaN before them), then by row address."""
    done = _integer_sorted(entries)
    if done is not None:
        return done
    keys = [(KEY, "ascending", "at_end"), (ROW_ADDRESS, "ascending", "at_end")]
    return entries.take(pc.sort_indices(entries, sort_keys=keys))


#: Sorted runs up to which integer entries are merged rather than sorted afresh.
_FEW_RUNS = 64


def _integer_values(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Integer, date or timestamp values as numpy integers (ordered as Arrow orders them)."""
    t = column.type
    if not pa.types.is_integer(t):
        column = column.cast(pa.int64() if t.bit_width == 64 else pa.int32())
    return np.asarray(column.to_numpy())


def _in_order(keys: np.ndarray, addresses: np.ndarray) -> bool:
    """Whether entries are sorted: keys non-decreasing, equal keys in row address order."""
    if len(keys) < 2:
        return True
    later, earlier = keys[1:], keys[:-1]
    if bool((later < earlier).any()):
        return False
    return not bool(((later == earlier) & (addresses[1:] < addresses[:-1])).any())


#: The sign bit of a 64-bit integer (flipping it orders signed values as unsigned ones).
_SIGN = np.uint64(1 << 63)


def _sort_order(values: np.ndarray) -> np.ndarray:
    """The positions of integer ``values`` in ascending order, equal values in position
    order (what a stable argsort gives, three to five times faster, measured on 2M-5M
    random int64 keys).

    Each value, made unsigned in the same order and less the smallest, keeps its high bits
    in the high bits of one ``uint64`` and its position in the low ones, and numpy sorts
    those integers (a value sort, much faster than an argsort). When a value needs more
    bits than are left, values sharing their kept high bits are put in order among
    themselves afterwards; if those are many, a plain stable argsort is used.

    Example:
        >>> _sort_order(np.array([5, -2, 5, 0])).tolist()
        [1, 3, 0, 2]
    """
    n = len(values)
    position_bits = max(1, (n - 1).bit_length())
    if n < 2 or position_bits > 40:
        return np.argsort(values, kind="stable")
    if values.dtype.kind == "i":
        packed = values.astype(np.int64).view(np.uint64)  # (a copy: changed in place)
        packed ^= _SIGN
    else:
        packed = values.astype(np.uint64)
    low = packed.min()
    shift = max(0, (int(packed.max()) - int(low)).bit_length() - (64 - position_bits))
    packed -= low
    if shift:
        packed >>= np.uint64(shift)
    packed <<= np.uint64(position_bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    tied = None
    if shift:  # values sharing their kept bits: in position order, not yet in value order
        high = packed >> np.uint64(position_bits)
        tied = high[1:] == high[:-1]
        del high
    packed &= np.uint64((1 << position_bits) - 1)
    order = packed.view(np.int64)
    if tied is not None and tied.any():
        at, run = _tied_runs(tied)
        if len(at) > n // 8:
            return np.argsort(values, kind="stable")
        among = order[at]
        order[at] = among[np.lexsort((values[among], run))]  # (stable: ties keep order)
    return order


def _order_ties(keys: np.ndarray, addresses: np.ndarray) -> None:
    """Sort ``addresses`` in place within each run of equal ``keys`` (sorted keys)."""
    tied = keys[1:] == keys[:-1]
    if not tied.any():
        return
    at, run = _tied_runs(tied)
    addresses[at] = addresses[at][np.lexsort((addresses[at], run))]


def _tied_runs(tied: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The places in runs of equal neighbours (``tied[i]``: places ``i`` and ``i + 1``
    are equal) and the run of each, numbered in order (boolean passes over all places and
    work on the tied ones only: no integer pass over all of them).

    Example:
        >>> [a.tolist() for a in _tied_runs(np.array([True, False, True, True]))]
        [[0, 1, 2, 3, 4], [1, 1, 2, 2, 2]]
    """
    before = np.concatenate([[False], tied])
    after = np.concatenate([tied, [False]])
    at = np.flatnonzero(before | after)
    starts = np.flatnonzero(after & ~before)  # (places starting a run)
    return at, np.searchsorted(starts, at, side="right")


def _entry_table(key_type: pa.DataType, keys: np.ndarray, addresses: np.ndarray) -> pa.Table:
    """Entries from numpy keys (the integers of a fixed-width ``key_type``) and addresses."""
    keys = np.ascontiguousarray(keys)
    column = pa.Array.from_buffers(key_type, len(keys), [None, pa.py_buffer(keys)])
    return pa.table({KEY: column, ROW_ADDRESS: pa.array(addresses, pa.uint64())})


def _integer_keyed(entries: pa.Table) -> bool:
    """Whether ``entries`` have integer, date or timestamp keys without nulls."""
    key = entries.column(KEY)
    t = key.type
    integer = pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
    return integer and not key.null_count


def _integer_sorted(entries: pa.Table) -> pa.Table | None:
    """Entries with integer (or date, timestamp) keys without nulls, sorted by numpy's
    unstable sort of the keys alone, equal keys then put in row address order (five
    times faster than a two-key Arrow sort; sorted entries are returned as they are);
    None for other entries."""
    if not _integer_keyed(entries) or entries.num_rows < 2:
        return None
    values = _integer_values(entries.column(KEY))
    addresses = np.asarray(entries.column(ROW_ADDRESS).to_numpy())
    if _in_order(values, addresses):
        return entries
    # a few sorted runs (the runs of an index job's tasks): numpy's stable sort merges
    # runs in linear time; else a sort of packed keys and positions
    runs = int(np.count_nonzero(values[1:] < values[:-1])) + 1
    order = np.argsort(values, kind="stable") if runs <= _FEW_RUNS else _sort_order(values)
    keys, addresses = values[order], addresses[order]  # (numpy gathers: no Arrow take)
    _order_ties(keys, addresses)
    return _entry_table(entries.schema.field(KEY).type, keys, addresses)


def merge_sorted(old: pa.Table, new: pa.Table) -> pa.Table:
    """Two tables of sorted entries (the same schema) merged into sorted entries: for
    integer, date or timestamp keys without nulls without sorting them again (each ``new``
    entry placed by a binary search among the ``old`` ones, ``O(m log n)``, then every
    entry scattered once, ``O(n + m)``, and equal keys put in row address order), else
    concatenated and sorted.

    Example:
        >>> a = pa.table({"key": [1, 5], "_rowaddr": pa.array([7, 1], pa.uint64())})
        >>> b = pa.table({"key": [1, 3], "_rowaddr": pa.array([2, 9], pa.uint64())})
        >>> merge_sorted(a, b).to_pydict()
        {'key': [1, 1, 3, 5], '_rowaddr': [2, 7, 9, 1]}
    """
    if not old.num_rows or not new.num_rows:
        return sorted_entries(pa.concat_tables([old, new]))
    if not (_integer_keyed(old) and _integer_keyed(new)):
        return sorted_entries(pa.concat_tables([old, new]))
    a, b = _integer_values(old.column(KEY)), _integer_values(new.column(KEY))
    a_rows = np.asarray(old.column(ROW_ADDRESS).to_numpy())
    b_rows = np.asarray(new.column(ROW_ADDRESS).to_numpy())
    if not (_in_order(a, a_rows) and _in_order(b, b_rows)):
        return sorted_entries(pa.concat_tables([old, new]))
    at = np.searchsorted(a, b, side="left")
    at += np.arange(len(b))  # the new entries' places among all
    from_new = np.zeros(len(a) + len(b), dtype=bool)
    from_new[at] = True
    keys = np.empty(len(from_new), dtype=a.dtype)
    addresses = np.empty(len(from_new), dtype=np.uint64)
    keys[at], addresses[at] = b, b_rows
    old_at = np.flatnonzero(~from_new)  # (scattering by index: three times faster than
    keys[old_at], addresses[old_at] = a, a_rows  # a boolean-mask assignment, measured)
    _order_ties(keys, addresses)
    return _entry_table(old.schema.field(KEY).type, keys, addresses)


def _bitmap_rows(entries: pa.Table) -> pa.Table:
    """One row per distinct key (of sorted ``entries``) with its row addresses."""
    keys = entries.column(KEY).combine_chunks()
    addresses = entries.column(ROW_ADDRESS).combine_chunks()
    n = len(keys)
    if n == 0:
        offsets = pa.array([0], pa.int32())
        return pa.table({KEY: keys, ROW_ADDRESS: pa.ListArray.from_arrays(offsets, addresses)})
    # run starts: where the key differs from the previous one (nulls sorted last, one run)
    same = pc.fill_null(pc.equal(keys[1:], keys[:-1]), False).to_numpy(zero_copy_only=False)
    both_null = np.logical_and(
        keys.is_null().to_numpy(zero_copy_only=False)[1:],
        keys.is_null().to_numpy(zero_copy_only=False)[:-1],
    )
    if pa.types.is_floating(keys.type):  # NaN != NaN, but NaNs sort together: one run
        nan = pc.fill_null(pc.is_nan(keys), False).to_numpy(zero_copy_only=False)
        both_null |= nan[1:] & nan[:-1]
    starts = np.flatnonzero(~(same | both_null)) + 1
    bounds = np.concatenate([[0], starts, [n]]).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(bounds), addresses)
    return pa.table({KEY: keys.take(pa.array(bounds[:-1])), ROW_ADDRESS: lists})


#: Rows of the sample on which :func:`_compression_for` tries zstd.
COMPRESSION_SAMPLE_ROWS = 1 << 16


def _compression_for(table: pa.Table) -> str:
    """``"zstd"``, unless the file's first :data:`COMPRESSION_SAMPLE_ROWS` rows written
    with zstd are no smaller than without it: then ``"none"``.

    Why: the writer stores a page uncompressed when zstd does not shrink it, so entries
    whose encoded pages zstd cannot shrink (random integer keys delta-encoded, row
    addresses bit-packed) give the same file bytes either way, and compressing each page
    only to drop the result took about half of the writer's time (5M entries: 0.53 s of
    zstd attempts, 0.27 s without them, one thread).
    """
    if table.num_rows <= COMPRESSION_SAMPLE_ROWS:
        return "zstd"
    sample = table.slice(0, COMPRESSION_SAMPLE_ROWS)
    sizes = {}
    for compression in ("zstd", "none"):
        sink = pa.BufferOutputStream()
        write_table(
            sample,
            sink,
            page_size=INDEX_PAGE_SIZE,
            max_stripe_rows=INDEX_STRIPE_ROWS,
            compression=compression,
        )
        sizes[compression] = sink.getvalue().size
    return "zstd" if sizes["zstd"] < sizes["none"] else "none"


def write_index_file(
    storage: TableStorage, uuid: str, kind: str, entries: pa.Table
) -> tuple[list[str], int]:
    """Write the index files of ``kind`` holding ``entries`` (a BTREE's entries file and
    its fences file); their paths and total size in bytes."""
    rows = sorted_entries(entries.select([KEY, ROW_ADDRESS]))
    if kind in (BITMAP, LABEL_LIST):
        rows = _bitmap_rows(rows)
    elif kind != BTREE:
        raise ValueError(f"unknown index kind {kind!r}")
    path = index_file_path(uuid, kind)
    storage.ensure_directory(f"_indices/{uuid}")
    files = [(path, rows)]
    if kind == BTREE:
        files.append((fences_path(path), _fences(rows)))
    for name, table in files:
        write_table(
            table,
            storage.target(name),
            page_size=INDEX_PAGE_SIZE,
            max_stripe_rows=INDEX_STRIPE_ROWS,
            compression=_compression_for(table),
            # keys in the encoding the writer picks: sorted integer keys delta-encode (5M
            # random int64 keys: 10.4 instead of 12.5 bytes per entry); a lookup decodes
            # the pages of its blocks once, then finds them in the index cache
        )
        storage.sync_file(name)
    return [name for name, _ in files], sum(storage.size(name) for name, _ in files)


def collect_entries(
    storage: TableStorage,
    schema: TableSchema,
    fragments: Sequence[Fragment],
    column: str,
    previous: tuple[Sequence[str], str, set[int]] | None = None,
    kind: str = BTREE,
) -> pa.Table:
    """Entries of ``fragments`` for an index of ``kind``, plus those of ``previous``
    (files, kind, fragment ids still covered) restricted to those fragments; when the old
    entries are of ``kind`` (an index refresh), sorted: the new entries sorted, then merged
    into the old ones, which are sorted already (:func:`merge_sorted`)."""
    # (a column widened since the old build: its keys widen the same way)
    schema_of_entries = entry_schema(key_type_of(kind, schema.arrow.field(column).type))
    parts = [fragment_entries(storage, schema, f, column, kind) for f in fragments]
    new = (
        pa.concat_tables([p.cast(schema_of_entries) for p in parts])
        if parts
        else schema_of_entries.empty_table()
    )
    if previous is None:
        return new
    files, old_kind, keep = previous
    old = read_entries(storage, files, old_kind)
    if not old.num_rows:
        return new
    old = old.cast(schema_of_entries)
    addresses = np.asarray(old.column(ROW_ADDRESS).to_numpy())
    # (kind "sort": with a few fragment ids numpy compares against each of them,
    # ten times faster on millions of entries than the default's lookup table)
    kept_ids = np.fromiter(keep, dtype=np.uint64, count=len(keep))
    mask = np.isin(addresses >> np.uint64(32), kept_ids, kind="sort")
    if not mask.all() and _integer_keyed(old):  # (numpy picks: one copy, one chunk)
        keys = _integer_values(old.column(KEY))[mask]
        old = _entry_table(schema_of_entries.field(KEY).type, keys, addresses[mask])
    elif not mask.all():
        old = old.filter(pa.array(mask))
    if old_kind == kind:
        return merge_sorted(old, sorted_entries(new))
    return pa.concat_tables([old, new])


def entry_schema(key_type: pa.DataType) -> pa.Schema:
    """The schema of entries keyed by ``key_type``."""
    return pa.schema([pa.field(KEY, key_type), pa.field(ROW_ADDRESS, pa.uint64())])
