"""Stable row ids: every row of a table with the ROW_IDS feature flag has a 64-bit id.

An id is given once, when the commit that adds the row applies (so writers that retry on
a newer version get distinct ids), and never again, not even after the row is deleted.
Rewrites (compaction, deletion materialisation), updates, merge-insert updates and
``add_columns`` keep the ids of the rows they move (docs/TABLE_FORMAT.md, "Row ids").

Each fragment stores the ids of its physical rows as a :class:`RowIdSequence` message: a
list of segments, each a range, an increasing set (a Roaring bitmap over a base), or an
array in any order (zstd-compressed int64 deltas). In a transaction a segment may also be
*unassigned*: that many rows get fresh ids from the manifest's ``next_row_id`` when the
commit applies (:func:`assign_row_ids`). Here a sequence is handled as an int64 array with
:data:`UNASSIGNED` (-1) for those rows.

Example:
    >>> seq = encode(np.array([5, 6, 7, 9, 10, -1, -1]))
    >>> [s.WhichOneof("kind") for s in seq.segments]
    ['sorted', 'unassigned']
    >>> decode(seq).tolist()
    [5, 6, 7, 9, 10, -1, -1]
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import zstandard
from pyroaring import BitMap

from fermion.errors import (
    ColumnNotFoundError,
    DatasetError,
    InvalidArgumentError,
    InvalidFileError,
)
from fermion.table.codec import (
    FLAG_ROW_IDS,
    fragment_from_proto,
    fragment_message,
    fragment_views,
)
from fermion.table.deletions import bitmap_from_offsets, keep_mask, read_deletion_file
from fermion.table.domain import Fragment, TableVersion
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.storage import TableStorage

__all__ = [
    "ROW_ID",
    "UNASSIGNED",
    "RowIdLookup",
    "VersionRowIds",
    "add_row_id_column",
    "assign_row_ids",
    "attach_row_ids",
    "decode",
    "encode",
    "fragment_has_row_ids",
    "fragment_row_ids",
    "has_row_ids",
    "keep_row_ids",
    "row_id_request",
    "row_ids_at",
    "sequence_length",
    "with_row_id_column",
    "with_row_ids",
]

#: The name of the row-id column a scan or ``take_rowids`` returns on request (uint64).
ROW_ID = "_rowid"
#: In an id array: a row whose id the commit assigns.
UNASSIGNED = -1
#: A sequence is cut into its increasing runs (a range or bitmap each) while it has at most
#: ``max(_MAX_RUNS, ids // _IDS_PER_RUN)`` of them; past that it is one array segment.
_MAX_RUNS = 64
_IDS_PER_RUN = 1024
_SPAN_32 = 1 << 32


def has_row_ids(manifest: pb.Manifest | TableVersion | None) -> bool:
    """Whether the table version has row ids (its reader flags name ROW_IDS).

    Example:
        >>> has_row_ids(pb.Manifest()), has_row_ids(pb.Manifest(reader_feature_flags=4))
        (False, True)
    """
    if isinstance(manifest, TableVersion):
        return manifest.has_row_ids
    return manifest is not None and bool(manifest.reader_feature_flags & FLAG_ROW_IDS)


# -- encoding -----------------------------------------------------------------------------


def _segment(ids: np.ndarray) -> pb.RowIdSegment:
    """One segment for a run of assigned ids (non-negative int64)."""
    count = int(ids.size)
    first, last = int(ids[0]), int(ids[-1])
    if count == 1 or (last - first + 1 == count and bool(np.all(np.diff(ids) == 1))):
        return pb.RowIdSegment(range=pb.RowIdSegment.Range(start=first, end=last + 1))
    increasing = bool(np.all(ids[1:] > ids[:-1]))
    if increasing and last - first < _SPAN_32:
        bitmap = bitmap_from_offsets(ids - first)  # (from an array.array: 6x faster)
        bitmap.run_optimize()
        data = bitmap.serialize()
        if len(data) < 8 * count:
            sorted_ = pb.RowIdSegment.Sorted(base=first, bitmap=data, count=count)
            return pb.RowIdSegment(sorted=sorted_)
    return _array_segment(ids)


def _assigned_segments(ids: np.ndarray) -> list[pb.RowIdSegment]:
    """Segments for assigned ids: increasing runs as ranges or bitmaps, unless there are
    so many runs that one array is smaller (and the manifest stays short)."""
    if ids.size == 0:
        return []
    breaks = np.flatnonzero(ids[1:] <= ids[:-1]) + 1
    if breaks.size + 1 > max(_MAX_RUNS, ids.size // _IDS_PER_RUN):
        return [_array_segment(ids)]
    return [_segment(run) for run in np.split(ids, breaks)]


def _array_segment(ids: np.ndarray) -> pb.RowIdSegment:
    deltas = np.diff(ids, prepend=np.int64(0)).astype("<i8")
    packed = zstandard.ZstdCompressor(level=3).compress(deltas.tobytes())
    return pb.RowIdSegment(array=pb.RowIdSegment.Array(deltas=packed, count=int(ids.size)))


def encode(ids: np.ndarray | Sequence[int]) -> pb.RowIdSequence:
    """The sequence message of an id array (:data:`UNASSIGNED` for rows without an id yet).

    Raises:
        InvalidArgumentError: An id below -1.

    Example:
        >>> [s.WhichOneof("kind") for s in encode(np.arange(10, 20)).segments]
        ['range']
        >>> decode(encode(np.array([3, 1, 2]))).tolist()
        [3, 1, 2]
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size and int(ids.min()) < UNASSIGNED:
        raise InvalidArgumentError(f"row ids must be non-negative, got {int(ids.min())}")
    sequence = pb.RowIdSequence()
    if ids.size == 0:
        return sequence
    pending = ids == UNASSIGNED
    edges = np.flatnonzero(pending[1:] != pending[:-1]) + 1
    for run in np.split(np.arange(ids.size), edges):
        if pending[run[0]]:
            sequence.segments.add(unassigned=int(run.size))
        else:
            sequence.segments.extend(_assigned_segments(ids[run]))
    return sequence


def _segment_length(segment: pb.RowIdSegment) -> int:
    kind = segment.WhichOneof("kind")
    if kind == "range":
        return max(0, segment.range.end - segment.range.start)
    if kind == "sorted":
        return int(segment.sorted.count)
    if kind == "array":
        return int(segment.array.count)
    if kind == "unassigned":
        return int(segment.unassigned)
    raise InvalidFileError("a row-id segment of unknown kind")


def sequence_length(sequence: pb.RowIdSequence) -> int:
    """How many rows the sequence covers (from the segment headers, nothing decoded).

    Example:
        >>> sequence_length(encode(np.array([4, -1, -1])))
        3
    """
    return sum(_segment_length(s) for s in sequence.segments)


def _decode_segment(segment: pb.RowIdSegment) -> np.ndarray:
    kind = segment.WhichOneof("kind")
    if kind == "range":
        if segment.range.end < segment.range.start:
            raise InvalidFileError("a row-id range ends before it starts")
        return np.arange(segment.range.start, segment.range.end, dtype=np.int64)
    if kind == "sorted":
        try:
            bitmap = BitMap.deserialize(segment.sorted.bitmap)
        except (ValueError, OverflowError) as exc:
            raise InvalidFileError(f"undecodable row-id bitmap: {exc}") from None
        values = np.asarray(bitmap.to_array(), dtype=np.int64) + np.int64(segment.sorted.base)
        if values.size != segment.sorted.count:
            raise InvalidFileError(
                f"a row-id bitmap holds {values.size} ids, its header says {segment.sorted.count}"
            )
        return values
    if kind == "array":
        try:
            raw = zstandard.ZstdDecompressor().decompress(
                segment.array.deltas, max_output_size=8 * int(segment.array.count)
            )
        except zstandard.ZstdError as exc:
            raise InvalidFileError(f"undecodable row-id array: {exc}") from None
        if len(raw) != 8 * segment.array.count:
            raise InvalidFileError(
                f"a row-id array holds {len(raw) // 8} ids, its header says {segment.array.count}"
            )
        return np.cumsum(np.frombuffer(raw, dtype="<i8")).astype(np.int64)
    if kind == "unassigned":
        return np.full(int(segment.unassigned), UNASSIGNED, dtype=np.int64)
    raise InvalidFileError("a row-id segment of unknown kind")


def decode(sequence: pb.RowIdSequence) -> np.ndarray:
    """The id array of a sequence (int64; :data:`UNASSIGNED` for unassigned rows).

    Raises:
        InvalidFileError: A damaged segment.
    """
    parts = [_decode_segment(s) for s in sequence.segments]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


# -- fragments ----------------------------------------------------------------------------


def fragment_row_ids(fragment: pb.Fragment | Fragment) -> np.ndarray | None:
    """The ids of a committed fragment's physical rows (``None``: it has none).

    Raises:
        InvalidFileError: A sequence that does not cover the fragment's rows, or holds
            unassigned rows (a manifest never does).
    """
    fragment = fragment_message(fragment)
    if not fragment.HasField("row_ids"):
        return None
    ids = decode(fragment.row_ids)
    if ids.size != fragment.physical_rows:
        raise InvalidFileError(
            f"fragment {fragment.id}: {ids.size} row ids for {fragment.physical_rows} rows"
        )
    if ids.size and int(ids.min()) < 0:
        raise InvalidFileError(f"fragment {fragment.id}: unassigned row ids in a manifest")
    return ids


def row_ids_at(fragment: pb.Fragment | Fragment, offsets: np.ndarray) -> np.ndarray | None:
    """The ids of the rows at physical ``offsets`` of a fragment (``None``: no row ids).

    Example:
        >>> f = pb.Fragment(physical_rows=3, row_ids=encode(np.array([7, 8, 9])))
        >>> row_ids_at(f, np.array([2, 0])).tolist()
        [9, 7]
    """
    message = fragment_message(fragment)
    if not message.HasField("row_ids"):
        return None
    offsets = np.asarray(offsets, dtype=np.int64)
    segments = message.row_ids.segments
    if len(segments) == 1 and segments[0].WhichOneof("kind") == "range":
        # one range (a fragment written at once): the ids are start + offset, no array of
        # the fragment's ids is made; checked as fragment_row_ids checks them
        start, end = segments[0].range.start, segments[0].range.end
        if end < start:
            raise InvalidFileError("a row-id range ends before it starts")
        if end - start != message.physical_rows:
            raise InvalidFileError(
                f"fragment {message.id}: {end - start} row ids for {message.physical_rows} rows"
            )
        if start < 0 and end > start:
            raise InvalidFileError(f"fragment {message.id}: unassigned row ids in a manifest")
        if offsets.size and (int(offsets.min()) < 0 or int(offsets.max()) >= end - start):
            raise IndexError(f"row offsets outside the fragment's {end - start} rows")
        return offsets + np.int64(start)
    ids = fragment_row_ids(message)
    assert ids is not None
    return ids[offsets]


def attach_row_ids(fragments: Sequence[pb.Fragment], ids: np.ndarray) -> None:
    """Set the row ids of new fragments written from rows whose ids are ``ids`` in order
    (the fragments' rows, one after another; :data:`UNASSIGNED` for new rows).

    Raises:
        InvalidArgumentError: ``ids`` and the fragments' rows differ in number.
    """
    ids = np.asarray(ids, dtype=np.int64)
    total = sum(f.physical_rows for f in fragments)
    if total != ids.size:
        raise InvalidArgumentError(f"{ids.size} row ids for {total} rows of new fragments")
    start = 0
    for fragment in fragments:
        stop = start + fragment.physical_rows
        fragment.row_ids.CopyFrom(encode(ids[start:stop]))
        start = stop


def fragment_has_row_ids(fragment: pb.Fragment | Fragment) -> bool:
    """Whether a fragment carries the ids of its rows.

    Example:
        >>> from fermion.table.codec import fragment_from_proto
        >>> m = pb.Fragment(id=1, physical_rows=2, row_ids=encode(np.array([4, 5])))
        >>> fragment_has_row_ids(fragment_from_proto(m)), fragment_has_row_ids(Fragment(1, (), 2))
        (True, False)
    """
    return fragment_message(fragment).HasField("row_ids")


def with_row_ids(fragments: Sequence[Fragment], ids: np.ndarray) -> list[Fragment]:
    """New fragments (not committed) with the row ids :func:`attach_row_ids` gives them.

    Raises:
        InvalidArgumentError: ``ids`` and the fragments' rows differ in number.

    Example:
        >>> from fermion.table.codec import fragment_from_proto
        >>> f = fragment_from_proto(pb.Fragment(physical_rows=2), committed=False)
        >>> [g] = with_row_ids([f], np.array([7, 8]))
        >>> g.id, fragment_row_ids(g).tolist()
        (None, [7, 8])
    """
    messages = []
    for f in fragments:
        message = pb.Fragment()
        message.CopyFrom(fragment_message(f))
        messages.append(message)
    attach_row_ids(messages, ids)
    return [fragment_from_proto(m, committed=False) for m in messages]


def keep_row_ids(fragments: Sequence[pb.Fragment], ids: Sequence[np.ndarray | None]) -> None:
    """Set the row ids of fragments written from the concatenated rows whose ids are
    ``ids`` (one array per written table, :data:`UNASSIGNED` for inserted rows). A table
    without row ids (any entry ``None``, i.e. read from a fragment without ids) sets
    nothing: the commit drops or assigns ids as the table's mode says.
    """
    if not ids or any(part is None for part in ids):
        return
    attach_row_ids(fragments, np.concatenate([p for p in ids if p is not None]))


def assign_row_ids(base: pb.Manifest | None, manifest: pb.Manifest) -> bool:
    """Give fresh ids to the rows of ``manifest`` that have none (pure; the commit's last
    step). Returns whether the version has row ids.

    A table has row ids when it was created with them (every table created by this
    version of Fermion is): ``base`` is ``None`` or has the ROW_IDS flag. Then every
    fragment without a sequence (appended, overwritten, inserted rows) and every
    unassigned segment gets ids from ``next_row_id`` on, in fragment order, and
    ``next_row_id`` moves past them; it never goes back (a restore keeps the higher one).
    A table without row ids stays so: sequences are dropped.

    Raises:
        DatasetError: A sequence whose length differs from its fragment's rows.
    """
    enabled = base is None or has_row_ids(base)
    if not enabled:
        for fragment in manifest.fragments:
            fragment.ClearField("row_ids")
        manifest.next_row_id = 0
        return False
    next_row_id = max(manifest.next_row_id, base.next_row_id if base is not None else 0)
    # fragments of the base keep the sequences that were checked when they were added
    kept = {f.id for f in base.fragments if f.HasField("row_ids")} if base is not None else set()
    for fragment in manifest.fragments:
        if fragment.id in kept and fragment.HasField("row_ids"):
            continue
        if not fragment.HasField("row_ids"):
            fragment.row_ids.segments.add(
                range=pb.RowIdSegment.Range(
                    start=next_row_id, end=next_row_id + fragment.physical_rows
                )
            )
            next_row_id += fragment.physical_rows
            continue
        if sequence_length(fragment.row_ids) != fragment.physical_rows:
            raise DatasetError(
                f"fragment {fragment.id}: {sequence_length(fragment.row_ids)} row ids for "
                f"{fragment.physical_rows} rows"
            )
        if any(s.WhichOneof("kind") == "unassigned" for s in fragment.row_ids.segments):
            ids = decode(fragment.row_ids)
            pending = ids == UNASSIGNED
            ids[pending] = np.arange(next_row_id, next_row_id + int(pending.sum()), dtype=np.int64)
            next_row_id += int(pending.sum())
            fragment.row_ids.CopyFrom(encode(ids))
    manifest.next_row_id = next_row_id
    return True


def with_row_id_column(table: pa.Table, ids: np.ndarray) -> pa.Table:
    """``table`` with a :data:`ROW_ID` column (uint64) of ``ids`` appended."""
    return table.append_column(ROW_ID, pa.array(ids.astype(np.uint64), type=pa.uint64()))


# -- the _rowid column of a scan ----------------------------------------------------------


def row_id_request(
    manifest: pb.Manifest | TableVersion, names: Sequence[str], columns: Sequence[str]
) -> tuple[list[str], bool]:
    """``(columns as asked, whether the scan must add the _rowid column)``.

    A table column named ``_rowid`` shadows the row ids (it is read as any column).

    Raises:
        ColumnNotFoundError: ``_rowid`` asked of a table without row ids.
    """
    asked = ROW_ID in columns and ROW_ID not in names
    if asked and not has_row_ids(manifest):
        raise ColumnNotFoundError(
            f"no such columns: ['{ROW_ID}'] (version {manifest.version} of this table has "
            "no row ids: it was created before they existed)"
        )
    return list(columns), asked


def add_row_id_column(
    table: pa.Table,
    fragment: pb.Fragment | Fragment,
    requested: Sequence[str],
    offset_column: str,
    *,
    keep_offsets: bool,
) -> pa.Table:
    """A fragment's scan result (with its physical-offset column) with the ``_rowid``
    column added, in the ``requested`` column order (the offsets kept if asked for).

    Raises:
        InvalidFileError: The fragment's sequence does not cover its rows.
    """
    ids = fragment_row_ids(fragment)
    if ids is None:
        raise InvalidFileError(f"fragment {fragment.id} of a table with row ids has none")
    offsets = table.column(offset_column).to_numpy().astype(np.int64)
    table = with_row_id_column(table, ids[offsets])
    return table.select([*requested, offset_column] if keep_offsets else list(requested))


# -- lookup by id -------------------------------------------------------------------------


@dataclass(frozen=True)
class RowIdLookup:
    """Where each row id of a version lives: (fragment position, physical offset).

    Ranges are looked up by their bounds (nothing materialised); bitmap and array
    segments by a sorted array of their ids.
    """

    range_starts: np.ndarray
    range_ends: np.ndarray
    range_fragment: np.ndarray
    range_offset: np.ndarray
    ids: np.ndarray
    ids_fragment: np.ndarray
    ids_offset: np.ndarray

    @classmethod
    def build(cls, fragments: Iterable[pb.Fragment]) -> RowIdLookup:
        """The lookup of ``fragments`` (positions are indices into this iterable).

        Raises:
            DatasetError: A fragment without row ids.
        """
        starts, ends, r_frag, r_off = [], [], [], []
        ids, i_frag, i_off = [], [], []
        for position, fragment in enumerate(fragments):
            if not fragment.HasField("row_ids"):
                raise DatasetError(f"fragment {fragment.id} has no row ids")
            offset = 0
            for segment in fragment.row_ids.segments:
                length = _segment_length(segment)
                if segment.WhichOneof("kind") == "range":
                    starts.append(segment.range.start)
                    ends.append(segment.range.end)
                    r_frag.append(position)
                    r_off.append(offset)
                else:
                    values = _decode_segment(segment)
                    ids.append(values)
                    i_frag.append(np.full(values.size, position, dtype=np.int64))
                    i_off.append(np.arange(offset, offset + values.size, dtype=np.int64))
                offset += length
        order = np.argsort(np.asarray(starts, dtype=np.int64), kind="stable")
        all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        by_id = np.argsort(all_ids, kind="stable")

        def cat(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts)[by_id] if parts else np.zeros(0, np.int64)

        return cls(
            np.asarray(starts, dtype=np.int64)[order],
            np.asarray(ends, dtype=np.int64)[order],
            np.asarray(r_frag, dtype=np.int64)[order],
            np.asarray(r_off, dtype=np.int64)[order],
            all_ids[by_id],
            cat(i_frag),
            cat(i_off),
        )

    def candidates(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every physical row holding one of the ``wanted`` ids, as ``(index into wanted,
        fragment position, physical offset)`` arrays.

        An id may sit on several physical rows: a rewritten row (an update, a merge) keeps
        its id in its new fragment while its old row, deleted, still holds it. At most one
        of them is live; the caller tells which from the deletion files.
        """
        wanted = np.asarray(wanted, dtype=np.int64)
        order = np.argsort(wanted, kind="stable")
        ordered = wanted[order]
        queries, fragments, offsets = [], [], []
        if self.range_starts.size and ordered.size:
            lo = np.searchsorted(ordered, self.range_starts, side="left")
            hi = np.searchsorted(ordered, self.range_ends, side="left")
            hits = hi - lo
            ranges = np.repeat(np.arange(self.range_starts.size), hits)
            # the positions lo[r] .. hi[r]-1 of the ordered ids, for every range r
            within = np.arange(int(hits.sum())) - np.repeat(np.cumsum(hits) - hits, hits)
            at = np.repeat(lo, hits) + within
            queries.append(order[at])
            fragments.append(self.range_fragment[ranges])
            offsets.append(self.range_offset[ranges] + ordered[at] - self.range_starts[ranges])
        if self.ids.size and ordered.size:
            lo = np.searchsorted(self.ids, wanted, side="left")
            hi = np.searchsorted(self.ids, wanted, side="right")
            hits = hi - lo
            query = np.repeat(np.arange(wanted.size), hits)
            within = np.arange(int(hits.sum())) - np.repeat(np.cumsum(hits) - hits, hits)
            at = np.repeat(lo, hits) + within
            queries.append(query)
            fragments.append(self.ids_fragment[at])
            offsets.append(self.ids_offset[at])
        if not queries:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        return (
            np.concatenate(queries).astype(np.int64),
            np.concatenate(fragments).astype(np.int64),
            np.concatenate(offsets).astype(np.int64),
        )


# -- one version's row ids, for ``Dataset.take_rowids`` ------------------------------------

#: Lookups of the last few versions read, by (table, version, transaction): a version's
#: manifest never changes, so its lookup is built once for repeated ``take_rowids``.
_LOOKUPS: OrderedDict[tuple[str, int, str], RowIdLookup] = OrderedDict()
_LOOKUPS_KEPT = 4
_LOOKUPS_LOCK = threading.Lock()


class VersionRowIds:
    """The row ids of one table version, read from its manifest on demand.

    What :func:`fermion.table.row_id_take.take_rowids` works from: it asks here for the
    version's lookup, its fragments (as :class:`~fermion.table.domain.Fragment` values)
    and the live position of physical rows, and never reads the manifest itself.

    Args:
        table: The table's URI (with the version and transaction, the lookup's cache key).
        manifest: The version's manifest (not changed while this lives).

    Example:
        >>> m = pb.Manifest(version=3, reader_feature_flags=FLAG_ROW_IDS)
        >>> f = m.fragments.add(id=0, physical_rows=2)
        >>> f.row_ids.CopyFrom(encode(np.arange(2)))
        >>> rows = VersionRowIds("mem://t", m)
        >>> rows.version, rows.has_row_ids, rows.fragment(0).physical_rows
        (3, True, 2)
        >>> [a.tolist() for a in rows.lookup().candidates(np.array([1]))]
        [[0], [0], [1]]
    """

    def __init__(self, table: str, manifest: pb.Manifest) -> None:
        self._table = table
        self._manifest = manifest
        self._fragments: tuple[Fragment, ...] | None = None

    @property
    def version(self) -> int:
        """The version number."""
        return self._manifest.version

    @property
    def has_row_ids(self) -> bool:
        """Whether the version has row ids (see :func:`has_row_ids`)."""
        return has_row_ids(self._manifest)

    def lookup(self) -> RowIdLookup:
        """The version's :class:`RowIdLookup` (built once for the last few versions read;
        fragment positions index :meth:`fragment`).

        Raises:
            DatasetError: A fragment without row ids.
        """
        manifest = self._manifest
        key = (self._table, manifest.version, manifest.transaction_uuid)
        with _LOOKUPS_LOCK:
            found = _LOOKUPS.get(key)
            if found is not None:
                _LOOKUPS.move_to_end(key)
                return found
        built = RowIdLookup.build(manifest.fragments)
        with _LOOKUPS_LOCK:
            _LOOKUPS[key] = built
            while len(_LOOKUPS) > _LOOKUPS_KEPT:
                _LOOKUPS.popitem(last=False)
        return built

    def fragment(self, position: int) -> Fragment:
        """The fragment at ``position`` in the manifest (a lookup's fragment position)."""
        if self._fragments is None:
            self._fragments = fragment_views(self._manifest)
        return self._fragments[position]

    def live_positions(
        self, storage: TableStorage, position: int, offsets: np.ndarray
    ) -> np.ndarray:
        """Positions among the live rows of the fragment at ``position`` of its physical
        ``offsets`` (-1: a deleted row), reading its deletion file if it has one.

        Raises:
            InvalidFileError: A damaged deletion file.
        """
        fragment = self._manifest.fragments[position]
        if not fragment.HasField("deletion_file"):
            return offsets
        deleted = read_deletion_file(storage, fragment.id, fragment.deletion_file)
        keep = keep_mask(deleted, fragment.physical_rows)
        before = np.cumsum(keep) - 1  # live position of each physical row, if live
        return np.where(keep[offsets], before[offsets], -1)
