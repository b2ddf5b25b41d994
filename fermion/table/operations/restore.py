"""``Restore``: make an old version's content the latest. Last writer wins.

Example:
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> message = txpb.Transaction().restore
    >>> Restore(3).fill(message)
    >>> Restore.from_message(message), Restore(3).required_versions()
    (Restore(version=3), (3,))
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
    register,
    replace_fragments,
    summarise,
)
from fermion.table.proto import manifest_pb2 as pb

__all__ = ["Restore"]


@register
@dataclass(frozen=True)
class Restore(OperationBase):
    """Make version ``version``'s content the latest. Last writer wins."""

    version: int
    name: ClassVar[str] = "restore"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK,
        "schema_change": OK, "overwrite": OK, "restore": OK,
    }  # fmt: skip

    def __post_init__(self) -> None:
        if self.version < 1:
            raise InvalidArgumentError(f"cannot restore version {self.version}")

    def required_versions(self) -> tuple[int, ...]:
        """The restored version's manifest."""
        return (self.version,)

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.restore``."""
        message.version = self.version

    @classmethod
    def from_message(cls, message: Any) -> Restore:
        """Read ``Transaction.restore``."""
        return cls(message.version)

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Fragments, schema, indices and config of the restored version."""
        restored = context.restored
        if restored is None or restored.version != self.version:
            raise DatasetError(f"restoring version {self.version} needs its manifest")
        removed = list(manifest.fragments)
        replace_fragments(manifest, list(restored.fragments))
        manifest.schema.CopyFrom(restored.schema)
        manifest.max_field_id = max(manifest.max_field_id, restored.max_field_id)
        del manifest.indices[:]
        manifest.indices.extend(restored.indices)
        manifest.config.clear()
        manifest.config.update(restored.config)
        manifest.summary.properties["restored_version"] = str(self.version)
        summarise(manifest.summary, list(restored.fragments), removed)
