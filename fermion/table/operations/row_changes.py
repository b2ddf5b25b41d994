"""What ``MergeInsert`` and ``Update`` share: rows replaced in place, in one version.

Both operations change some rows of existing fragments: the old rows get deletion files
(the fragments' complete new deletion sets, as a ``Delete`` writes them) and the new rows
go to new fragments. Applying one is a ``Delete`` of the old rows followed by an ``Append``
of the new fragments, in the same version; rebasing over a concurrent delete of other rows
of the same fragments ORs the bitmaps exactly as :meth:`Delete.rebase` does.

Example:
    >>> from fermion.table.operations.merge_insert import MergeInsert
    >>> op = MergeInsert(new_fragments=(pb.Fragment(physical_rows=3),), on=("id",))
    >>> op.touched_fragment_ids(), op.new_rows()
    (set(), 3)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.table.operations.base import (
    ApplyContext,
    OperationBase,
    copy_fragments,
    summarise,
    with_new_ids,
)
from fermion.table.operations.delete import Delete
from fermion.table.proto import manifest_pb2 as pb

if TYPE_CHECKING:
    from fermion.table.storage import TableStorage

__all__ = ["RowChanges"]


@dataclass(frozen=True)
class RowChanges(OperationBase):
    """Deletion files for changed rows of existing fragments, new fragments for new rows.

    Attributes:
        updated_fragments: Existing fragments with their complete new deletion files.
        removed_fragment_ids: Existing fragments left with no live row.
        new_fragments: The rewritten and inserted rows (ids are assigned at commit).
    """

    updated_fragments: tuple[pb.Fragment, ...] = ()
    removed_fragment_ids: tuple[int, ...] = ()
    new_fragments: tuple[pb.Fragment, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "updated_fragments", copy_fragments(self.updated_fragments))
        object.__setattr__(self, "removed_fragment_ids", tuple(self.removed_fragment_ids))
        object.__setattr__(self, "new_fragments", copy_fragments(self.new_fragments))
        ids = [f.id for f in self.updated_fragments] + list(self.removed_fragment_ids)
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError(f"{self.name} names a fragment twice")
        if any(not f.HasField("deletion_file") for f in self.updated_fragments):
            raise InvalidArgumentError(f"an updated fragment of {self.name} has no deletion file")

    def touched_fragment_ids(self) -> set[int]:
        """Existing fragments that get a deletion file or are removed."""
        return {f.id for f in self.updated_fragments} | set(self.removed_fragment_ids)

    def new_rows(self) -> int:
        """Rows of the new fragments."""
        return sum(f.physical_rows for f in self.new_fragments)

    def _deletes(self) -> Delete:
        return Delete(self.updated_fragments, self.removed_fragment_ids, predicate=self.name)

    def fill_rows(self, message: Any) -> None:
        """Write the three fragment lists into the operation's message."""
        message.SetInParent()
        message.updated_fragments.extend(self.updated_fragments)
        message.removed_fragment_ids.extend(self.removed_fragment_ids)
        message.new_fragments.extend(self.new_fragments)

    @staticmethod
    def rows_of(message: Any) -> dict[str, Any]:
        """The three fragment lists of a message, as keyword arguments."""
        return {
            "updated_fragments": tuple(message.updated_fragments),
            "removed_fragment_ids": tuple(message.removed_fragment_ids),
            "new_fragments": tuple(message.new_fragments),
        }

    def apply_rows(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """The old rows deleted (as a ``Delete``), the new fragments added at the end."""
        missing = sorted(self.touched_fragment_ids() - context.by_id.keys())
        if missing:
            raise DatasetError(
                f"{self.name} names fragments not in version {context.base_version}: {missing}"
            )
        if self.touched_fragment_ids():
            self._deletes().apply(manifest, context)
        added = with_new_ids(manifest, self.new_fragments)
        manifest.fragments.extend(added)
        summarise(manifest.summary, added, [])

    def rebase(self, storage: TableStorage, read: pb.Manifest, latest: pb.Manifest) -> Any:
        """My deletion sets merged onto the latest ones (see :meth:`Delete.rebase`).

        Raises:
            RebaseConflict: A concurrent commit deleted a row this one changed, or changed
                a fragment this one removes.
        """
        merged = self._deletes().rebase(storage, read, latest)
        return dataclasses.replace(self, updated_fragments=merged.updated_fragments)
