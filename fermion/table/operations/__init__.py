"""Table operations: what a transaction does, one module per operation type.

An operation describes a change relative to the version a writer read. It is written to the
transaction file (so concurrent writers can check conflicts against it) and applied to the
latest manifest by :func:`fermion.table.transition.apply_operation`. Each type's module
holds everything about it: the validated frozen dataclass, its transaction codec, its
transition and its row of the conflict matrix (:mod:`fermion.table.operations.base` says
how; adding an operation type means adding a module here and a field to the transaction
oneof in ``transaction.proto``).

Fragments are the protobuf ``Fragment`` messages of the manifest (``FragmentMetadata``).

Example:
    >>> op = Restore(version=3)
    >>> op.name, operation_from_proto(operation_to_proto(op, 2, "u", 0))
    ('restore', Restore(version=3))
"""

from __future__ import annotations

from fermion.table.operations.add_columns import AddColumns
from fermion.table.operations.append import Append
from fermion.table.operations.base import INPUT_KEY_PREFIX, REGISTRY
from fermion.table.operations.create_index import CreateIndex
from fermion.table.operations.delete import Delete
from fermion.table.operations.drop_index import DropIndex
from fermion.table.operations.merge_insert import MergeInsert
from fermion.table.operations.overwrite import Overwrite
from fermion.table.operations.restore import Restore
from fermion.table.operations.rewrite import Rewrite, RewriteGroup
from fermion.table.operations.schema_change import SchemaChange
from fermion.table.operations.update import Update
from fermion.table.operations.update_config import UpdateConfig
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.proto import transaction_pb2 as txpb

__all__ = [
    "INPUT_KEY_PREFIX",
    "REGISTRY",
    "AddColumns",
    "Append",
    "CreateIndex",
    "Delete",
    "DropIndex",
    "FragmentMetadata",
    "MergeInsert",
    "Operation",
    "Overwrite",
    "Restore",
    "Rewrite",
    "RewriteGroup",
    "SchemaChange",
    "Update",
    "UpdateConfig",
    "operation_from_proto",
    "operation_to_proto",
    "touched_fragment_ids",
]

FragmentMetadata = pb.Fragment

Operation = (
    Append
    | Delete
    | Overwrite
    | Rewrite
    | CreateIndex
    | SchemaChange
    | Restore
    | MergeInsert
    | Update
    | AddColumns
    | DropIndex
    | UpdateConfig
)


def touched_fragment_ids(op: Operation) -> set[int]:
    """Existing fragments an operation modifies, removes or depends on."""
    return op.touched_fragment_ids()


def operation_to_proto(
    op: Operation, read_version: int, uuid: str, timestamp_us: int
) -> txpb.Transaction:
    """The transaction message of ``op``."""
    txn = txpb.Transaction(read_version=read_version, uuid=uuid, timestamp_us=timestamp_us)
    op.fill(getattr(txn, op.name))
    return txn


def operation_from_proto(txn: txpb.Transaction) -> Operation | None:
    """The operation of a transaction message; ``None`` for an unknown or missing one."""
    kind = txn.WhichOneof("operation")
    cls = REGISTRY.get(kind) if kind is not None else None
    if cls is None:
        return None
    operation: Operation = cls.from_message(getattr(txn, kind))
    return operation
