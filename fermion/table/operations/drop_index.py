"""``DropIndex``: remove an index from the manifest by name.

The index files stay for the versions that still list the index; cleanup removes them with
those versions (docs/TABLE_FORMAT.md, "Maintenance").

Example:
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> op = DropIndex("k_idx")
    >>> message = txpb.Transaction().drop_index
    >>> op.fill(message)
    >>> DropIndex.from_message(message) == op, op.touched_fragment_ids()
    (True, set())
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from fermion.errors import InvalidArgumentError
from fermion.table.operations.base import OK, ApplyContext, Cell, OperationBase, register
from fermion.table.proto import manifest_pb2 as pb

__all__ = ["DropIndex"]


@register
@dataclass(frozen=True)
class DropIndex(OperationBase):
    """Remove the index named ``index_name`` (nothing to do if it is already gone).

    It touches no fragment, so it commits over anything, and anything commits over it: a
    concurrent ``CreateIndex`` of the same name, committed first, is dropped; committed
    after, it stays (its writer asked for it last).
    """

    index_name: str
    name: ClassVar[str] = "drop_index"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK, "schema_change": OK,
        "overwrite": OK, "restore": OK, "drop_index": OK, "merge_insert": OK, "update": OK,
        "add_columns": OK,
    }  # fmt: skip
    CONFLICTS_AS_THEIRS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK, "schema_change": OK,
        "overwrite": OK, "restore": OK, "merge_insert": OK, "update": OK, "add_columns": OK,
    }  # fmt: skip

    def __post_init__(self) -> None:
        if not isinstance(self.index_name, str) or not self.index_name:
            raise InvalidArgumentError("DropIndex needs an index name")

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.drop_index``."""
        message.name = self.index_name

    @classmethod
    def from_message(cls, message: Any) -> DropIndex:
        """Read ``Transaction.drop_index``."""
        return cls(message.name)

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Remove the index of that name."""
        kept = [i for i in manifest.indices if i.name != self.index_name]
        del manifest.indices[:]
        manifest.indices.extend(kept)
        manifest.summary.properties["index"] = self.index_name
