"""``CreateIndex``: register an index or a statistics rebuild over some fragments.

Example:
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> op = CreateIndex(pb.IndexMetadata(uuid="u", name="n", fragment_ids=[4]))
    >>> message = txpb.Transaction().create_index
    >>> op.fill(message)
    >>> CreateIndex.from_message(message) == op, op.touched_fragment_ids()
    (True, {4})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.table.operations.base import (
    OK,
    ApplyContext,
    Cell,
    OperationBase,
    R,
    Verdict,
    copy_fragments,
    if_overlap,
    register,
)
from fermion.table.proto import manifest_pb2 as pb

__all__ = ["CreateIndex"]


def _retry_if_removed(mine: Any, theirs: Any) -> Verdict:
    """An index only cares about fragments that disappear (more deletions keep stats valid)."""
    return R if mine.touched_fragment_ids() & set(theirs.deleted_fragment_ids) else OK


@register
@dataclass(frozen=True)
class CreateIndex(OperationBase):
    """Register an index or statistics rebuild covering ``index.fragment_ids``.

    ``fragment_stats`` (fragment id + recomputed ``stats``) replace those fragments' stats.
    An index never covers fragments a concurrent rewrite removed.
    """

    index: pb.IndexMetadata
    fragment_stats: tuple[pb.Fragment, ...] = ()
    name: ClassVar[str] = "create_index"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": _retry_if_removed, "rewrite": if_overlap(R),
        "create_index": OK, "schema_change": OK, "overwrite": R, "restore": R,
    }  # fmt: skip

    def __post_init__(self) -> None:
        copy = pb.IndexMetadata()
        copy.CopyFrom(self.index)
        object.__setattr__(self, "index", copy)
        object.__setattr__(self, "fragment_stats", copy_fragments(self.fragment_stats))
        if not copy.name or not copy.uuid:
            raise InvalidArgumentError("an index needs a name and a uuid")

    def touched_fragment_ids(self) -> set[int]:
        """The fragments the index covers."""
        return set(self.index.fragment_ids)

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.create_index``."""
        message.index.CopyFrom(self.index)
        message.fragment_stats.extend(self.fragment_stats)

    @classmethod
    def from_message(cls, message: Any) -> CreateIndex:
        """Read ``Transaction.create_index``."""
        return cls(message.index, tuple(message.fragment_stats))

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """New statistics for covered fragments; the index replaces one of the same name."""
        missing = sorted(set(self.index.fragment_ids) - context.by_id.keys())
        if missing:
            raise DatasetError(
                f"index covers fragments not in version {context.base_version}: {missing}"
            )
        for update in self.fragment_stats:
            fragment = context.by_id.get(update.id)
            if fragment is not None:
                del fragment.stats[:]
                fragment.stats.extend(update.stats)
        kept = [i for i in manifest.indices if i.name != self.index.name]
        del manifest.indices[:]
        manifest.indices.extend(kept)
        manifest.indices.append(self.index)
        manifest.summary.properties["index"] = self.index.name
