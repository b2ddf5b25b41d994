"""``SchemaChange``: replace the schema (add / drop / rename / widen by field id).

Example:
    >>> import pyarrow as pa
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> op = SchemaChange(TableSchema.from_arrow(pa.schema([("a", pa.int8())])))
    >>> message = txpb.Transaction().schema_change
    >>> op.fill(message)
    >>> SchemaChange.from_message(message) == op
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from fermion.table.operations.base import (
    NO,
    OK,
    ApplyContext,
    Cell,
    OperationBase,
    R,
    register,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.schema import TableSchema

__all__ = ["SchemaChange"]


@register
@dataclass(frozen=True)
class SchemaChange(OperationBase):
    """Replace the schema (add / drop / rename / widen by field id); data is untouched."""

    schema: TableSchema
    name: ClassVar[str] = "schema_change"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK,
        "schema_change": R, "overwrite": NO, "restore": NO,
    }  # fmt: skip

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.schema_change``."""
        message.schema.CopyFrom(self.schema.to_proto())
        message.max_field_id = self.schema.max_field_id

    @classmethod
    def from_message(cls, message: Any) -> SchemaChange:
        """Read ``Transaction.schema_change``."""
        return cls(TableSchema.from_proto(message.schema, message.max_field_id))

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """The new schema; the field-id high-water mark never goes down."""
        manifest.schema.CopyFrom(self.schema.to_proto())
        manifest.max_field_id = max(manifest.max_field_id, self.schema.max_field_id)
