"""What a scalar index is: its kinds, its row addresses, its manifest entry.

A scalar index maps the values of one top-level column to the rows holding them (a
LABEL_LIST index: the elements of a list column to the rows whose list holds them). A row is
addressed by its fragment and its physical offset in the fragment, packed into one
``uint64`` (the *row address*, ``fragment_id << 32 | offset``). The manifest entry
(``IndexMetadata``) names the index, its kind, its column (by field id), the fragments it
covers and its files under ``_indices/<uuid>/`` (docs/TABLE_FORMAT.md, "Scalar indices").

Example:
    >>> import numpy as np
    >>> addresses = row_addresses(3, np.array([0, 7], dtype=np.uint64))
    >>> [int(a) for a in addresses], split_addresses(addresses)[0].tolist()
    ([12884901888, 12884901895], [3, 3])
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from fermion.errors import InvalidArgumentError
from fermion.table.codec import fragment_messages, manifest_of
from fermion.table.domain import Fragment, TableVersion
from fermion.table.operations.create_index import CreateIndex
from fermion.table.proto import manifest_pb2 as pb

__all__ = [
    "BITMAP",
    "BTREE",
    "INDEX_LAYOUT_VERSION",
    "KEY",
    "KINDS",
    "LABEL_LIST",
    "ROW_ADDRESS",
    "IndexEntry",
    "IndexInfo",
    "IndexKind",
    "as_index_entry",
    "create_index_op",
    "entry_of",
    "index_entry_from_bytes",
    "index_entry_to_bytes",
    "index_info",
    "indices_of",
    "check_key_type",
    "is_scalar_index",
    "key_type_of",
    "row_addresses",
    "split_addresses",
]

IndexKind = Literal["BTREE", "BITMAP", "LABEL_LIST"]
BTREE: IndexKind = "BTREE"
BITMAP: IndexKind = "BITMAP"
LABEL_LIST: IndexKind = "LABEL_LIST"
KINDS: tuple[IndexKind, ...] = (BTREE, BITMAP, LABEL_LIST)
#: Layout version of the index files this library writes and reads.
INDEX_LAYOUT_VERSION = 1
#: Column names inside an index file.
KEY = "key"
ROW_ADDRESS = "_rowaddr"
_OFFSET_BITS = 32
_OFFSET_MASK = np.uint64((1 << _OFFSET_BITS) - 1)


def is_scalar_index(index: IndexEntry | pb.IndexMetadata) -> bool:
    """Whether an index entry is a scalar index (not a statistics rebuild).

    Example:
        >>> is_scalar_index(IndexEntry("a", "BTREE", (0,))), is_scalar_index(IndexEntry("s", ""))
        (True, False)
    """
    return index.kind in KINDS


def check_key_type(kind: str, column: str, t: pa.DataType) -> None:
    """Raise InvalidArgumentError unless an index of ``kind`` can key on type ``t``.

    BTREE keys on integers, floats, strings, dates and timestamps; BITMAP also on booleans;
    LABEL_LIST on lists (``list`` or ``large_list``) of integers or strings.

    Example:
        >>> check_key_type("BTREE", "x", pa.int64())
        >>> check_key_type("BTREE", "x", pa.bool_())
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidArgumentError: a BTREE index cannot key column 'x' of type bool
    """
    if kind not in KINDS:
        raise InvalidArgumentError(f"unknown index kind {kind!r}; expected one of {KINDS}")
    if kind == LABEL_LIST:
        lists = pa.types.is_list(t) or pa.types.is_large_list(t)
        item = t.value_type if lists else None
        if item is None or not (
            pa.types.is_integer(item) or pa.types.is_string(item) or pa.types.is_large_string(item)
        ):
            raise InvalidArgumentError(
                f"a LABEL_LIST index keys a list of integers or strings; {column!r} is {t}"
            )
        return
    ok = (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or (kind == BITMAP and pa.types.is_boolean(t))
    )
    if not ok:
        raise InvalidArgumentError(f"a {kind} index cannot key column {column!r} of type {t}")


def key_type_of(kind: str, t: pa.DataType) -> pa.DataType:
    """The type of an index's keys on a column of type ``t``: the column's, or for a
    LABEL_LIST index its elements'.

    Example:
        >>> key_type_of("LABEL_LIST", pa.list_(pa.string())), key_type_of("BTREE", pa.int8())
        (DataType(string), DataType(int8))
    """
    return t.value_type if kind == LABEL_LIST else t


def row_addresses(fragment_id: int, offsets: np.ndarray) -> np.ndarray:
    """Row addresses of ``offsets`` (physical rows) of one fragment.

    Raises:
        InvalidArgumentError: A fragment id that does not fit 32 bits.
    """
    if fragment_id >> _OFFSET_BITS:
        raise InvalidArgumentError(f"fragment id {fragment_id} does not fit a row address")
    return (np.uint64(fragment_id) << np.uint64(_OFFSET_BITS)) | offsets.astype(np.uint64)


def split_addresses(addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fragment ids, offsets)`` of row addresses."""
    addresses = addresses.astype(np.uint64, copy=False)
    return addresses >> np.uint64(_OFFSET_BITS), addresses & _OFFSET_MASK


@dataclass(frozen=True)
class IndexInfo:
    """One index of a version, as ``Dataset.indices()`` lists it.

    Attributes:
        name: The index name (unique in a version).
        kind: ``"BTREE"``, ``"BITMAP"``, ``"LABEL_LIST"``, or ``"zonemap"`` for the
            statistics rebuild.
        columns: The indexed column names (current names; empty if dropped).
        fragment_ids: The fragments the index covers.
        uuid: The build's uuid (the files it wrote are under ``_indices/<uuid>/``; an
            index refreshed by ``optimize_indices`` may keep an earlier build's files).
        dataset_version: The version the index was built from.
        files: The index files, relative to the table root.
        num_entries: Entries in the files.
        size_bytes: Bytes of the files.
    """

    name: str
    kind: str
    columns: tuple[str, ...]
    fragment_ids: tuple[int, ...]
    uuid: str
    dataset_version: int
    files: tuple[str, ...]
    num_entries: int
    size_bytes: int


@dataclass(frozen=True)
class IndexEntry:
    """A version's index entry as a frozen value (the manifest's ``IndexMetadata``,
    docs/TABLE_FORMAT.md "Scalar indices"), what the index modules plan and look up with.

    Attributes:
        name: The index name (unique in a version).
        kind: ``"BTREE"``, ``"BITMAP"``, ``"LABEL_LIST"``, or ``"zonemap"``.
        field_ids: The indexed fields (one top-level field for a scalar index).
        fragment_ids: The fragments it covers, ascending.
        uuid: The build's uuid.
        dataset_version: The version the build was planned on.
        files: Its files, relative to the table root.
        index_version: The layout version of its files.
        num_entries: Entries in its files.
        size_bytes: Bytes of its files.

    Example:
        >>> e = IndexEntry("k_idx", "BTREE", (0,), (1, 2), uuid="u", files=("_indices/u/a",))
        >>> index_entry_from_bytes(index_entry_to_bytes(e)) == e
        True
    """

    name: str
    kind: str
    field_ids: tuple[int, ...] = ()
    fragment_ids: tuple[int, ...] = ()
    uuid: str = ""
    dataset_version: int = 0
    files: tuple[str, ...] = ()
    index_version: int = 0
    num_entries: int = 0
    size_bytes: int = 0

    def covering(self, present: Iterable[int | None]) -> IndexEntry:
        """This entry covering only those of its fragments in ``present``.

        Example:
            >>> IndexEntry("a", "BTREE", (0,), (1, 2, 3)).covering({2, 5}).fragment_ids
            (2,)
        """
        keep = set(present)
        return replace(self, fragment_ids=tuple(i for i in self.fragment_ids if i in keep))


def _entry(message: pb.IndexMetadata) -> IndexEntry:
    return IndexEntry(
        name=message.name, kind=message.kind, field_ids=tuple(message.field_ids),
        fragment_ids=tuple(message.fragment_ids), uuid=message.uuid,
        dataset_version=message.dataset_version, files=tuple(message.files),
        index_version=message.index_version, num_entries=message.num_entries,
        size_bytes=message.size_bytes,
    )  # fmt: skip


def _message(entry: IndexEntry) -> pb.IndexMetadata:
    return pb.IndexMetadata(
        name=entry.name, kind=entry.kind, field_ids=entry.field_ids,
        fragment_ids=entry.fragment_ids, uuid=entry.uuid,
        dataset_version=entry.dataset_version, files=entry.files,
        index_version=entry.index_version, num_entries=entry.num_entries,
        size_bytes=entry.size_bytes,
    )  # fmt: skip


def as_index_entry(index: IndexEntry | pb.IndexMetadata) -> IndexEntry:
    """An index entry given either way (for callers that still pass the message).

    Example:
        >>> as_index_entry(pb.IndexMetadata(name="a", kind="BTREE", files=["f"])).files
        ('f',)
    """
    return index if isinstance(index, IndexEntry) else _entry(index)


def index_entry_to_bytes(entry: IndexEntry) -> bytes:
    """The entry's manifest form, serialised (what a build plan carries)."""
    return _message(entry).SerializeToString(deterministic=True)


def index_entry_from_bytes(data: bytes) -> IndexEntry:
    """The entry :func:`index_entry_to_bytes` (or a serialised ``IndexMetadata``) holds.

    Raises:
        InvalidArgumentError: Not a serialised index entry.

    Example:
        >>> index_entry_from_bytes(b"\\xff")
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidArgumentError: not a serialised index entry: Error parsing message...
    """
    message = pb.IndexMetadata()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise InvalidArgumentError(f"not a serialised index entry: {exc}") from exc
    return _entry(message)


#: The entries of the versions read, per handle (a lookup per scan reads them once).
_INDICES: weakref.WeakKeyDictionary[TableVersion, tuple[IndexEntry, ...]] = (
    weakref.WeakKeyDictionary()
)


def indices_of(version: TableVersion) -> tuple[IndexEntry, ...]:
    """The index entries a version lists, in manifest order (read once per handle).

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"k": [1]}), tempfile.mkdtemp())
        >>> ds.create_index("k")
        >>> [(e.name, e.kind, e.fragment_ids) for e in indices_of(ds.table_version)]
        [('k_idx', 'BTREE', (0,))]
    """
    if not version.index_names:
        return ()
    found = _INDICES.get(version)
    if found is None:
        found = tuple(_entry(i) for i in manifest_of(version).indices)
        _INDICES[version] = found
    return found


def index_info(entry: IndexEntry, columns: tuple[str, ...]) -> IndexInfo:
    """The :class:`IndexInfo` ``Dataset.indices()`` lists for ``entry``, whose columns'
    current names are ``columns``."""
    return IndexInfo(
        name=entry.name, kind=entry.kind, columns=columns, fragment_ids=entry.fragment_ids,
        uuid=entry.uuid, dataset_version=entry.dataset_version, files=entry.files,
        num_entries=entry.num_entries, size_bytes=entry.size_bytes,
    )  # fmt: skip


def create_index_op(entry: IndexEntry, fragment_stats: Iterable[Fragment] = ()) -> CreateIndex:
    """The ``CreateIndex`` operation registering ``entry`` (with ``fragment_stats``:
    fragments whose recomputed statistics replace theirs).

    Example:
        >>> create_index_op(IndexEntry("a", "BTREE", (0,), (1,), uuid="u")).index.name
        'a'
    """
    return CreateIndex(_message(entry), fragment_messages(fragment_stats))


def entry_of(op: CreateIndex) -> IndexEntry:
    """The entry a ``CreateIndex`` operation registers."""
    return _entry(op.index)
