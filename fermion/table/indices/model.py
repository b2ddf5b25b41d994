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

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from fermion.errors import InvalidArgumentError
from fermion.table.proto import manifest_pb2 as pb

__all__ = [
    "BITMAP",
    "BTREE",
    "INDEX_LAYOUT_VERSION",
    "KEY",
    "KINDS",
    "LABEL_LIST",
    "ROW_ADDRESS",
    "IndexInfo",
    "IndexKind",
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


def is_scalar_index(index: pb.IndexMetadata) -> bool:
    """Whether a manifest entry is a scalar index (not a statistics rebuild).

    Example:
        >>> is_scalar_index(pb.IndexMetadata(kind="BTREE")), is_scalar_index(pb.IndexMetadata())
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
