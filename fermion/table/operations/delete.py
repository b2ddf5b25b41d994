"""``Delete``: new deletion files for existing fragments, or fragments removed entirely.

Concurrent deletes of the same fragment are merged by :meth:`Delete.rebase` (the bitmaps
are OR-ed) when their rows are disjoint.

Example:
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> op = Delete(deleted_fragment_ids=(3,), predicate="x > 1")
    >>> message = txpb.Transaction().delete
    >>> op.fill(message)
    >>> Delete.from_message(message) == op, op.touched_fragment_ids()
    (True, {3})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pyroaring import BitMap

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.table.deletions import read_deletion_file, write_deletion_file
from fermion.table.operations.base import (
    NO,
    OK,
    REBASE,
    ApplyContext,
    Cell,
    OperationBase,
    R,
    RebaseConflict,
    copy_fragments,
    if_overlap,
    live_rows,
    register,
    replace_fragments,
)
from fermion.table.proto import manifest_pb2 as pb

if TYPE_CHECKING:
    from fermion.table.storage import TableStorage

__all__ = ["Delete"]


@register
@dataclass(frozen=True)
class Delete(OperationBase):
    """Give existing fragments new deletion files, or remove fragments entirely.

    Each updated fragment carries the *complete* deletion set as of the read version plus
    this transaction's rows; concurrent deletes of disjoint rows are rebased at commit.
    """

    updated_fragments: tuple[pb.Fragment, ...] = ()
    deleted_fragment_ids: tuple[int, ...] = ()
    predicate: str = ""
    name: ClassVar[str] = "delete"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": if_overlap(REBASE), "rewrite": if_overlap(R),
        "create_index": OK, "schema_change": OK, "overwrite": NO, "restore": NO,
    }  # fmt: skip

    def __post_init__(self) -> None:
        object.__setattr__(self, "updated_fragments", copy_fragments(self.updated_fragments))
        object.__setattr__(self, "deleted_fragment_ids", tuple(self.deleted_fragment_ids))
        ids = [f.id for f in self.updated_fragments] + list(self.deleted_fragment_ids)
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError("Delete names a fragment twice")
        if any(not f.HasField("deletion_file") for f in self.updated_fragments):
            raise InvalidArgumentError("an updated fragment of a Delete has no deletion file")

    def touched_fragment_ids(self) -> set[int]:
        """Fragments that get a deletion file or are removed."""
        return {f.id for f in self.updated_fragments} | set(self.deleted_fragment_ids)

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.delete``."""
        message.SetInParent()
        message.updated_fragments.extend(self.updated_fragments)
        message.deleted_fragment_ids.extend(self.deleted_fragment_ids)
        message.predicate = self.predicate

    @classmethod
    def from_message(cls, message: Any) -> Delete:
        """Read ``Transaction.delete``."""
        return cls(
            tuple(message.updated_fragments), tuple(message.deleted_fragment_ids),
            message.predicate,
        )  # fmt: skip

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Swap in the deletion files, drop the removed fragments, count deleted rows."""
        by_id = context.by_id
        missing = [i for i in self.deleted_fragment_ids if i not in by_id]
        missing += [f.id for f in self.updated_fragments if f.id not in by_id]
        if missing:
            raise DatasetError(
                f"delete names fragments not in version {context.base_version}: {missing}"
            )
        removed = [by_id[i] for i in self.deleted_fragment_ids]
        newly = sum(live_rows(f) for f in removed)
        for update in self.updated_fragments:
            fragment = by_id[update.id]
            newly += live_rows(fragment) - live_rows(update)
            fragment.deletion_file.CopyFrom(update.deletion_file)
        gone = set(self.deleted_fragment_ids)
        replace_fragments(manifest, [f for f in manifest.fragments if f.id not in gone])
        summary = manifest.summary
        summary.removed_fragments = len(removed)
        summary.removed_files = sum(len(f.files) for f in removed)
        summary.deleted_rows = newly

    def rebase(self, storage: TableStorage, read: pb.Manifest, latest: pb.Manifest) -> Delete:
        """Merge my deletions onto the latest deletion files.

        Raises:
            RebaseConflict: Both deleted a common row, or a fragment changed otherwise.
        """
        read_by_id = {f.id: f for f in read.fragments}
        latest_by_id = {f.id: f for f in latest.fragments}

        def rows(fragment: pb.Fragment) -> BitMap:
            if not fragment.HasField("deletion_file"):
                return BitMap()
            return read_deletion_file(storage, fragment.id, fragment.deletion_file)

        updated = []
        for mine in self.updated_fragments:
            current, base = latest_by_id.get(mine.id), read_by_id.get(mine.id)
            if current is None or base is None:
                raise RebaseConflict(f"fragment {mine.id} was removed")
            if current.deletion_file == base.deletion_file:
                updated.append(mine)
                continue
            base_rows = rows(base)
            mine_new = rows(mine) - base_rows
            theirs_new = rows(current) - base_rows
            if mine_new & theirs_new:
                raise RebaseConflict(f"concurrent deletes of the same rows of fragment {mine.id}")
            fragment = pb.Fragment()
            fragment.CopyFrom(current)
            merged = rows(current) | mine_new
            fragment.deletion_file.CopyFrom(
                write_deletion_file(storage, mine.id, latest.version, merged)
            )
            updated.append(fragment)
        for fragment_id in self.deleted_fragment_ids:
            current, base = latest_by_id.get(fragment_id), read_by_id.get(fragment_id)
            if current is None or base is None or current.deletion_file != base.deletion_file:
                raise RebaseConflict(f"fragment {fragment_id} changed concurrently")
        return Delete(tuple(updated), self.deleted_fragment_ids, self.predicate)
