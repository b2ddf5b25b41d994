"""The table's domain model: fragments and data files as plain, frozen values.

A :class:`Fragment` is what ``Dataset.fragments``, plans and Spark partitions hold: it
pickles, compares by value and carries no protobuf object. The manifest's wire form (the
``Fragment`` message of docs/TABLE_FORMAT.md) is converted to and from it in one place,
:mod:`fermion.table.codec`; the fields the wire form has beyond the ones below
(per-field statistics, row ids, the deletion file's location) travel in
:attr:`Fragment.message`, the message's bytes, unread here.

Example:
    >>> f = Fragment(id=4, files=(DataFile("data/a.fermion", (0, 1), 99),), physical_rows=3)
    >>> f.live_rows, f.files[0].file_format
    (3, 'fermion')
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DataFile", "Fragment"]


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
