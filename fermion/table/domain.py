"""The table's domain model: table versions, fragments and data files as frozen values.

A :class:`TableVersion` is one committed version of a table as readers and planners see
it (its number, schema, fragments, configuration). A :class:`Fragment` is what
``Dataset.fragments``, plans and Spark partitions hold: it pickles, compares by value and
carries no protobuf object. The manifest's wire form (docs/TABLE_FORMAT.md) is converted
to and from them in one place, :mod:`fermion.table.codec`; the fields the wire form has
beyond the ones below (per-field statistics, row ids, the deletion file's location)
travel in :attr:`Fragment.message`, the message's bytes, unread here.

Example:
    >>> f = Fragment(id=4, files=(DataFile("data/a.fermion", (0, 1), 99),), physical_rows=3)
    >>> f.live_rows, f.files[0].file_format
    (3, 'fermion')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fermion.table.schema import TableSchema

__all__ = ["DataFile", "Fragment", "TableVersion"]


@dataclass(frozen=True)
class DataFile:
    """One data file of a fragment.

    Attributes:
        path: The file, relative to the table root.
        field_ids: The table fields it holds, in its column order.
        size_bytes: Its size.
        file_format: ``"fermion"`` (the only format written today).

    Example:
        >>> DataFile("data/a.fermion", (0,), 10).path
        'data/a.fermion'
    """

    path: str
    field_ids: tuple[int, ...]
    size_bytes: int
    file_format: str = "fermion"


@dataclass(frozen=True)
class Fragment:
    """A fragment: what a worker wrote, or what a table version holds.

    Attributes:
        id: The fragment id (``None`` for a fragment not committed yet: ids are assigned
            by the commit).
        files: Its data files.
        physical_rows: Rows in the data files, deleted ones included.
        deleted_rows: Rows marked deleted by its deletion file (0 without one).
        message: The fragment's manifest message as bytes (statistics, row ids, deletion
            file); :mod:`fermion.table.codec` reads and writes it, the fields above agree
            with it. Empty for a fragment built by hand.

    Example:
        >>> Fragment(id=None, files=(), physical_rows=5, deleted_rows=2).live_rows
        3
    """

    id: int | None
    files: tuple[DataFile, ...]
    physical_rows: int
    deleted_rows: int = 0
    message: bytes = field(default=b"", repr=False)

    @property
    def live_rows(self) -> int:
        """Rows not deleted."""
        return self.physical_rows - self.deleted_rows

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths of its data files (relative to the table root)."""
        return tuple(f.path for f in self.files)


@dataclass(frozen=True, eq=False)
class TableVersion:
    """One committed version of a table: what scans, batch lookups and planners read.

    :func:`fermion.table.codec.table_version` builds it from a manifest, once per version
    a reader holds; the fields that cost something to convert (the schema, the fragments,
    the configuration) are then read from the manifest when first used. Code outside the
    codec takes a ``TableVersion``, never the manifest message (docs/ARCHITECTURE.md,
    "Domain model and wire format"). Two handles are equal only if they are the same
    object.

    Attributes:
        version: The version number.
        schema: The table schema, with field ids.
        fragments: The committed fragments, in manifest order (fully deleted ones too).
        config: The table configuration (``fermion.*`` keys; write properties, batch-id
            column, input markers).
        next_row_id: The first row id not assigned yet (0 for a table without row ids).
        has_row_ids: Whether every fragment has row ids.
        index_names: The names of the secondary indices this version lists.
        transaction_file: Its transaction file, relative to ``_transactions/``.
        transaction_uuid: The uuid of the transaction that made it.
        operation: The operation that made it (``append``, ``delete``, ...).
        timestamp_us: When it was committed (microseconds since the epoch).

    Example:
        >>> import pyarrow as pa
        >>> schema = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
        >>> v = TableVersion(3, schema, (Fragment(0, (), 5, 1), Fragment(1, (), 2)))
        >>> v.live_rows, v.has_indices
        (6, False)
    """

    version: int
    schema: TableSchema
    fragments: tuple[Fragment, ...]
    config: Mapping[str, str] = field(default_factory=dict)
    next_row_id: int = 0
    has_row_ids: bool = False
    index_names: tuple[str, ...] = ()
    transaction_file: str = ""
    transaction_uuid: str = ""
    operation: str = ""
    timestamp_us: int = 0

    @property
    def live_rows(self) -> int:
        """Rows of the version not deleted."""
        return sum(f.live_rows for f in self.fragments)

    @property
    def has_indices(self) -> bool:
        """Whether the version lists a secondary index."""
        return bool(self.index_names)
