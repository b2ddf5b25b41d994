"""Deletion files: which row offsets of a fragment are deleted.

``_deletions/{fragment_id}-{read_version}-{id}.arrow`` — an Arrow IPC file with one ``uint32``
column of offsets, for few rows (at most :data:`ARROW_MAX_ROWS`);
``_deletions/{fragment_id}-{read_version}-{id}.bin`` — a serialised Roaring bitmap
(pyroaring, portable format) for many rows. A fragment has at most one deletion file per
version; a new delete writes a new file holding the union.

Example:
    >>> import tempfile
    >>> from pyroaring import BitMap
    >>> from fermion.table.storage import TableStorage
    >>> st = TableStorage(tempfile.mkdtemp())
    >>> meta = write_deletion_file(st, 4, 1, BitMap([2, 7]))
    >>> deletion_path(4, meta)  # doctest: +ELLIPSIS
    '_deletions/4-1-....arrow'
    >>> list(read_deletion_file(st, 4, meta))
    [2, 7]
"""

from __future__ import annotations

import array
import secrets

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from fermion.errors import InvalidArgumentError, InvalidFileError
from fermion.table.codec import fragment_from_proto, fragment_message
from fermion.table.domain import Fragment
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.storage import TableStorage

__all__ = [
    "ARROW_MAX_ROWS",
    "bitmap_from_offsets",
    "deletion_entry",
    "deletion_path",
    "fragment_deletion_path",
    "keep_mask",
    "read_deletion_file",
    "read_fragment_deletions",
    "with_deletions",
    "write_deletion_file",
]

#: Deletion sets up to this size are stored as Arrow arrays, larger ones as Roaring bitmaps.
ARROW_MAX_ROWS = 1024
_COLUMN = "row_offset"


def deletion_path(fragment_id: int, deletion: pb.DeletionFile) -> str:
    """Relative path of a fragment's deletion file."""
    suffix = "arrow" if deletion.file_type == pb.DeletionFile.ARROW_ARRAY else "bin"
    return f"_deletions/{fragment_id}-{deletion.read_version}-{deletion.id}.{suffix}"


def write_deletion_file(
    storage: TableStorage, fragment_id: int, read_version: int, rows: BitMap
) -> pb.DeletionFile:
    """Write the complete deletion set of a fragment; returns its manifest entry."""
    kind = pb.DeletionFile.ARROW_ARRAY if len(rows) <= ARROW_MAX_ROWS else pb.DeletionFile.BITMAP
    meta = pb.DeletionFile(
        file_type=kind,
        read_version=read_version,
        id=secrets.randbits(63),
        num_deleted_rows=len(rows),
    )
    if kind == pb.DeletionFile.ARROW_ARRAY:
        offsets = pa.array(np.frombuffer(rows.to_array(), dtype=np.uint32), pa.uint32())
        table = pa.table({_COLUMN: offsets})
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        data = sink.getvalue().to_pybytes()
    else:
        data = rows.serialize()
    storage.write_bytes(deletion_path(fragment_id, meta), data)
    return meta


def read_deletion_file(
    storage: TableStorage, fragment_id: int, deletion: pb.DeletionFile
) -> BitMap:
    """Read a deletion file; raises ``InvalidFileError`` if it is damaged or inconsistent."""
    path = deletion_path(fragment_id, deletion)
    data = storage.read_bytes(path)
    try:
        if deletion.file_type == pb.DeletionFile.ARROW_ARRAY:
            table = pa.ipc.open_file(pa.py_buffer(data)).read_all()
            if table.schema.names != [_COLUMN] or not table.schema.field(0).type.equals(
                pa.uint32()
            ):
                raise InvalidFileError(f"{path}: unexpected schema {table.schema}")
            rows = bitmap_from_offsets(table.column(0).to_numpy())
        elif deletion.file_type == pb.DeletionFile.BITMAP:
            rows = BitMap.deserialize(data)
        else:
            raise InvalidFileError(f"{path}: unknown deletion file type {deletion.file_type}")
    except (pa.ArrowInvalid, ValueError, OverflowError) as exc:
        if isinstance(exc, InvalidFileError):
            raise
        raise InvalidFileError(f"{path}: unreadable deletion file: {exc}") from exc
    if len(rows) != deletion.num_deleted_rows:
        raise InvalidFileError(
            f"{path}: holds {len(rows)} rows, the manifest says {deletion.num_deleted_rows}"
        )
    return rows


def fragment_deletion_path(fragment: Fragment) -> str:
    """Relative path of the deletion file of a fragment that has one
    (:func:`fermion.table.codec.has_deletion_file`).

    Example:
        >>> from fermion.table.codec import fragment_from_proto
        >>> m = pb.Fragment(id=4, deletion_file=pb.DeletionFile(read_version=2, id=7))
        >>> fragment_deletion_path(fragment_from_proto(m))
        '_deletions/4-2-7.arrow'
    """
    message = fragment_message(fragment)
    return deletion_path(message.id, message.deletion_file)


def deletion_entry(fragment: Fragment) -> bytes:
    """A fragment's deletion file entry, as bytes (``b""`` without one): equal for two
    fragments exactly when they have the same deletion file.

    Example:
        >>> from fermion.table.domain import Fragment
        >>> deletion_entry(Fragment(1, (), 2))
        b''
    """
    message = fragment_message(fragment)
    if not message.HasField("deletion_file"):
        return b""
    return message.deletion_file.SerializeToString(deterministic=True)


def read_fragment_deletions(storage: TableStorage, fragment: Fragment) -> BitMap:
    """The deleted row offsets of a fragment that has a deletion file
    (:func:`read_deletion_file` of its manifest entry).

    Raises:
        InvalidFileError: The deletion file is damaged or disagrees with the manifest.
    """
    message = fragment_message(fragment)
    return read_deletion_file(storage, message.id, message.deletion_file)


def with_deletions(
    storage: TableStorage, fragment: Fragment, read_version: int, rows: BitMap
) -> Fragment:
    """Write ``rows`` as the complete deletion set of a committed fragment; returns the
    fragment with that deletion file (what a ``Delete`` commits).

    Raises:
        InvalidArgumentError: ``fragment`` is not committed (it has no id).

    Example:
        >>> import tempfile
        >>> from fermion.table.codec import fragment_from_proto, has_deletion_file
        >>> st = TableStorage(tempfile.mkdtemp())
        >>> f = fragment_from_proto(pb.Fragment(id=1, physical_rows=4))
        >>> g = with_deletions(st, f, 1, BitMap([0, 3]))
        >>> g.id, g.live_rows, has_deletion_file(g), list(read_fragment_deletions(st, g))
        (1, 2, True, [0, 3])
    """
    if fragment.id is None:
        raise InvalidArgumentError("an uncommitted fragment has no deletion file")
    update = pb.Fragment()
    update.CopyFrom(fragment_message(fragment))
    update.deletion_file.CopyFrom(write_deletion_file(storage, fragment.id, read_version, rows))
    return fragment_from_proto(update, committed=True)


def bitmap_from_offsets(offsets: np.ndarray) -> BitMap:
    """A Roaring bitmap of row offsets, built without a Python loop.

    Example:
        >>> list(bitmap_from_offsets(np.array([9, 3, 3])))
        [3, 9]
    """
    packed = array.array("I")
    packed.frombytes(np.ascontiguousarray(offsets, dtype=np.uint32).tobytes())
    return BitMap(packed)


def keep_mask(deleted: BitMap, physical_rows: int) -> np.ndarray:
    """Boolean mask of the rows that are *not* deleted.

    Example:
        >>> keep_mask(BitMap([1]), 3).tolist()
        [True, False, True]
    """
    mask = np.ones(physical_rows, dtype=bool)
    if deleted:
        offsets = np.frombuffer(deleted.to_array(), dtype=np.uint32)
        if int(offsets[-1]) >= physical_rows:
            raise InvalidFileError(
                f"deletion offset {int(offsets[-1])} is past {physical_rows} rows"
            )
        mask[offsets] = False
    return mask
