"""``Overwrite``: replace every fragment (and the schema, if given). Last writer wins.

Example:
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> op = Overwrite((), config={"k": "v"})
    >>> message = txpb.Transaction().overwrite
    >>> op.fill(message)
    >>> Overwrite.from_message(message) == op
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fermion.table.operations.base import (
    OK,
    ApplyContext,
    Cell,
    OperationBase,
    copy_fragments,
    register,
    replace_fragments,
    summarise,
    with_new_ids,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.schema import TableSchema

__all__ = ["Overwrite"]


@register
@dataclass(frozen=True)
class Overwrite(OperationBase):
    """Replace every fragment (and the schema, if given). Last writer wins."""

    fragments: tuple[pb.Fragment, ...]
    schema: TableSchema | None = None
    config: Mapping[str, str] = field(default_factory=dict)
    name: ClassVar[str] = "overwrite"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK,
        "schema_change": OK, "overwrite": OK, "restore": OK,
    }  # fmt: skip

    def __post_init__(self) -> None:
        object.__setattr__(self, "fragments", copy_fragments(self.fragments))
        object.__setattr__(self, "config", dict(self.config))

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.overwrite``."""
        message.SetInParent()
        message.fragments.extend(self.fragments)
        if self.schema is not None:
            message.schema.CopyFrom(self.schema.to_proto())
            message.max_field_id = self.schema.max_field_id
        message.config.update(self.config)

    @classmethod
    def from_message(cls, message: Any) -> Overwrite:
        """Read ``Transaction.overwrite``."""
        schema = (
            TableSchema.from_proto(message.schema, message.max_field_id)
            if message.HasField("schema")
            else None
        )
        return cls(tuple(message.fragments), schema, dict(message.config))

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Every fragment and index replaced; the schema too when given."""
        removed = list(manifest.fragments)
        added = with_new_ids(manifest, self.fragments)
        for fragment in added:  # new rows: the commit gives them fresh row ids
            fragment.ClearField("row_ids")
        replace_fragments(manifest, added)
        if self.schema is not None:
            manifest.schema.CopyFrom(self.schema.to_proto())
            manifest.max_field_id = max(manifest.max_field_id, self.schema.max_field_id)
        manifest.config.update(self.config)
        del manifest.indices[:]
        summarise(manifest.summary, added, removed)
