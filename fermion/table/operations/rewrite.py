"""``Rewrite``: compaction or deletion materialisation (old fragments -> new ones).

Example:
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> op = Rewrite((RewriteGroup((1, 2), (pb.Fragment(physical_rows=5),)),))
    >>> message = txpb.Transaction().rewrite
    >>> op.fill(message)
    >>> Rewrite.from_message(message) == op, op.touched_fragment_ids()
    (True, {1, 2})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.table.operations.base import (
    NO,
    OK,
    ApplyContext,
    Cell,
    OperationBase,
    R,
    copy_fragments,
    if_overlap,
    register,
    replace_fragments,
    summarise,
    with_new_ids,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.row_ids import UNASSIGNED, decode, has_row_ids

__all__ = ["Rewrite", "RewriteGroup"]


@dataclass(frozen=True)
class RewriteGroup:
    """Fragments ``old_fragment_ids`` replaced by ``new_fragments`` holding the same live rows."""

    old_fragment_ids: tuple[int, ...]
    new_fragments: tuple[pb.Fragment, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "old_fragment_ids", tuple(self.old_fragment_ids))
        object.__setattr__(self, "new_fragments", copy_fragments(self.new_fragments))
        if not self.old_fragment_ids:
            raise InvalidArgumentError("a RewriteGroup must replace at least one fragment")


def _check_moved_row_ids(groups: tuple[RewriteGroup, ...]) -> None:
    """A rewrite of a table with row ids moves rows with their ids: every new fragment
    carries a complete sequence (docs/TABLE_FORMAT.md, "Row ids")."""
    for group in groups:
        for fragment in group.new_fragments:
            if not fragment.HasField("row_ids") or bool(
                np.any(decode(fragment.row_ids) == UNASSIGNED)
            ):
                raise DatasetError(
                    f"rewrite of fragments {list(group.old_fragment_ids)}: a new fragment "
                    "lacks the row ids of the rows it holds"
                )


@register
@dataclass(frozen=True)
class Rewrite(OperationBase):
    """Compaction or deletion materialisation.

    A rewrite never commits over a delete of its fragments (it would bring deleted rows
    back): that cell is retryable, and the task layer drops or re-plans such groups.
    """

    groups: tuple[RewriteGroup, ...]
    name: ClassVar[str] = "rewrite"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": if_overlap(R), "rewrite": if_overlap(R), "create_index": OK,
        "schema_change": OK, "overwrite": NO, "restore": NO,
    }  # fmt: skip

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))
        old = [i for g in self.groups for i in g.old_fragment_ids]
        if not old or len(set(old)) != len(old):
            raise InvalidArgumentError("Rewrite groups must replace distinct fragments")

    def touched_fragment_ids(self) -> set[int]:
        """The fragments it replaces."""
        return {i for g in self.groups for i in g.old_fragment_ids}

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.rewrite``."""
        message.SetInParent()
        for group in self.groups:
            entry = message.groups.add()
            entry.old_fragment_ids.extend(group.old_fragment_ids)
            entry.new_fragments.extend(group.new_fragments)

    @classmethod
    def from_message(cls, message: Any) -> Rewrite:
        """Read ``Transaction.rewrite``."""
        return cls(
            tuple(
                RewriteGroup(tuple(g.old_fragment_ids), tuple(g.new_fragments))
                for g in message.groups
            )
        )

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Each group's new fragments take the place of its first old fragment."""
        old_ids = self.touched_fragment_ids()
        missing = sorted(old_ids - context.by_id.keys())
        if missing:
            raise DatasetError(
                f"rewrite names fragments not in version {context.base_version}: {missing}"
            )
        if has_row_ids(manifest):
            _check_moved_row_ids(self.groups)
        first_of_group = {g.old_fragment_ids[0]: g for g in self.groups}
        fragments: list[pb.Fragment] = []
        added, removed = [], []
        for fragment in manifest.fragments:
            group = first_of_group.get(fragment.id)
            if group is not None:
                new = with_new_ids(manifest, group.new_fragments)
                fragments.extend(new)
                added.extend(new)
            if fragment.id in old_ids:
                removed.append(fragment)
            else:
                fragments.append(fragment)
        replace_fragments(manifest, fragments)
        summarise(manifest.summary, added, removed)
