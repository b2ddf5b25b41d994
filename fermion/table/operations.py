"""Table operations: what a transaction does, as small validated frozen dataclasses.

An operation describes a change relative to the version a writer read. It is written to the
transaction file (so concurrent writers can check conflicts against it) and applied to the
latest manifest by :func:`fermion.table.transition.apply_operation`.

Fragments are the protobuf ``Fragment`` messages of the manifest (``FragmentMetadata``),
as returned by :func:`fermion.table.write_fragments`.

Example:
    >>> op = Restore(version=3)
    >>> op.name, operation_from_proto(operation_to_proto(op, 2, "u", 0))
    ('restore', Restore(version=3))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from fermion.errors import InvalidArgumentError
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.proto import transaction_pb2 as txpb
from fermion.table.schema import TableSchema

__all__ = [
    "INPUT_KEY_PREFIX",
    "Append",
    "CreateIndex",
    "Delete",
    "FragmentMetadata",
    "Operation",
    "Overwrite",
    "Restore",
    "Rewrite",
    "RewriteGroup",
    "SchemaChange",
    "operation_from_proto",
    "operation_to_proto",
    "touched_fragment_ids",
]

FragmentMetadata = pb.Fragment

#: Table configuration keys with this prefix record loaded inputs (see :class:`Append`).
INPUT_KEY_PREFIX = "fermion.input."


def _copy_fragments(fragments: object) -> tuple[pb.Fragment, ...]:
    out = []
    for fragment in fragments:  # type: ignore[attr-defined]
        if not isinstance(fragment, pb.Fragment):
            raise InvalidArgumentError(f"expected a Fragment message, got {type(fragment)}")
        copy = pb.Fragment()
        copy.CopyFrom(fragment)
        out.append(copy)
    return tuple(out)


@dataclass(frozen=True)
class Append:
    """Add new fragments (their ids are assigned at commit time).

    ``config`` entries are set in the table configuration by the same commit. An ingest
    records each input it loaded under a key starting with :data:`INPUT_KEY_PREFIX`; two
    concurrent appends that set the same such key are incompatible, so an input is never
    loaded twice.
    """

    fragments: tuple[pb.Fragment, ...]
    config: Mapping[str, str] = field(default_factory=dict)
    name: ClassVar[str] = "append"

    def __post_init__(self) -> None:
        object.__setattr__(self, "fragments", _copy_fragments(self.fragments))
        object.__setattr__(self, "config", dict(self.config))
        if not self.fragments:
            raise InvalidArgumentError("Append needs at least one fragment")


@dataclass(frozen=True)
class Delete:
    """Give existing fragments new deletion files, or remove fragments entirely.

    Each updated fragment carries the *complete* deletion set as of the read version plus
    this transaction's rows; concurrent deletes of disjoint rows are rebased at commit.
    """

    updated_fragments: tuple[pb.Fragment, ...] = ()
    deleted_fragment_ids: tuple[int, ...] = ()
    predicate: str = ""
    name: ClassVar[str] = "delete"

    def __post_init__(self) -> None:
        object.__setattr__(self, "updated_fragments", _copy_fragments(self.updated_fragments))
        object.__setattr__(self, "deleted_fragment_ids", tuple(self.deleted_fragment_ids))
        ids = [f.id for f in self.updated_fragments] + list(self.deleted_fragment_ids)
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError("Delete names a fragment twice")
        if any(not f.HasField("deletion_file") for f in self.updated_fragments):
            raise InvalidArgumentError("an updated fragment of a Delete has no deletion file")


@dataclass(frozen=True)
class Overwrite:
    """Replace every fragment (and the schema, if given). Last writer wins."""

    fragments: tuple[pb.Fragment, ...]
    schema: TableSchema | None = None
    config: Mapping[str, str] = field(default_factory=dict)
    name: ClassVar[str] = "overwrite"

    def __post_init__(self) -> None:
        object.__setattr__(self, "fragments", _copy_fragments(self.fragments))
        object.__setattr__(self, "config", dict(self.config))


@dataclass(frozen=True)
class RewriteGroup:
    """Fragments ``old_fragment_ids`` replaced by ``new_fragments`` holding the same live rows."""

    old_fragment_ids: tuple[int, ...]
    new_fragments: tuple[pb.Fragment, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "old_fragment_ids", tuple(self.old_fragment_ids))
        object.__setattr__(self, "new_fragments", _copy_fragments(self.new_fragments))
        if not self.old_fragment_ids:
            raise InvalidArgumentError("a RewriteGroup must replace at least one fragment")


@dataclass(frozen=True)
class Rewrite:
    """Compaction or deletion materialisation."""

    groups: tuple[RewriteGroup, ...]
    name: ClassVar[str] = "rewrite"

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))
        old = [i for g in self.groups for i in g.old_fragment_ids]
        if not old or len(set(old)) != len(old):
            raise InvalidArgumentError("Rewrite groups must replace distinct fragments")


@dataclass(frozen=True)
class CreateIndex:
    """Register an index or statistics rebuild covering ``index.fragment_ids``.

    ``fragment_stats`` (fragment id + recomputed ``stats``) replace those fragments' stats.
    """

    index: pb.IndexMetadata
    fragment_stats: tuple[pb.Fragment, ...] = ()
    name: ClassVar[str] = "create_index"

    def __post_init__(self) -> None:
        copy = pb.IndexMetadata()
        copy.CopyFrom(self.index)
        object.__setattr__(self, "index", copy)
        object.__setattr__(self, "fragment_stats", _copy_fragments(self.fragment_stats))
        if not copy.name or not copy.uuid:
            raise InvalidArgumentError("an index needs a name and a uuid")


@dataclass(frozen=True)
class SchemaChange:
    """Replace the schema (add / drop / rename / widen by field id); data is untouched."""

    schema: TableSchema
    name: ClassVar[str] = "schema_change"


@dataclass(frozen=True)
class Restore:
    """Make version ``version``'s content the latest. Last writer wins."""

    version: int
    name: ClassVar[str] = "restore"

    def __post_init__(self) -> None:
        if self.version < 1:
            raise InvalidArgumentError(f"cannot restore version {self.version}")


Operation = Append | Delete | Overwrite | Rewrite | CreateIndex | SchemaChange | Restore


def touched_fragment_ids(op: Operation) -> set[int]:
    """Existing fragments an operation modifies, removes or depends on."""
    if isinstance(op, Delete):
        return {f.id for f in op.updated_fragments} | set(op.deleted_fragment_ids)
    if isinstance(op, Rewrite):
        return {i for g in op.groups for i in g.old_fragment_ids}
    if isinstance(op, CreateIndex):
        return set(op.index.fragment_ids)
    return set()


def operation_to_proto(
    op: Operation, read_version: int, uuid: str, timestamp_us: int
) -> txpb.Transaction:
    """The transaction message of ``op``."""
    txn = txpb.Transaction(read_version=read_version, uuid=uuid, timestamp_us=timestamp_us)
    if isinstance(op, Append):
        txn.append.SetInParent()
        txn.append.fragments.extend(op.fragments)
        txn.append.config.update(op.config)
    elif isinstance(op, Delete):
        txn.delete.SetInParent()
        txn.delete.updated_fragments.extend(op.updated_fragments)
        txn.delete.deleted_fragment_ids.extend(op.deleted_fragment_ids)
        txn.delete.predicate = op.predicate
    elif isinstance(op, Overwrite):
        txn.overwrite.SetInParent()
        txn.overwrite.fragments.extend(op.fragments)
        if op.schema is not None:
            txn.overwrite.schema.CopyFrom(op.schema.to_proto())
            txn.overwrite.max_field_id = op.schema.max_field_id
        txn.overwrite.config.update(op.config)
    elif isinstance(op, Rewrite):
        txn.rewrite.SetInParent()
        for group in op.groups:
            message = txn.rewrite.groups.add()
            message.old_fragment_ids.extend(group.old_fragment_ids)
            message.new_fragments.extend(group.new_fragments)
    elif isinstance(op, CreateIndex):
        txn.create_index.index.CopyFrom(op.index)
        txn.create_index.fragment_stats.extend(op.fragment_stats)
    elif isinstance(op, SchemaChange):
        txn.schema_change.schema.CopyFrom(op.schema.to_proto())
        txn.schema_change.max_field_id = op.schema.max_field_id
    else:
        txn.restore.version = op.version
    return txn


def operation_from_proto(txn: txpb.Transaction) -> Operation | None:
    """The operation of a transaction message; ``None`` for an unknown or missing one."""
    kind = txn.WhichOneof("operation")
    if kind == "append":
        return Append(tuple(txn.append.fragments), dict(txn.append.config))
    if kind == "delete":
        d = txn.delete
        return Delete(tuple(d.updated_fragments), tuple(d.deleted_fragment_ids), d.predicate)
    if kind == "overwrite":
        o = txn.overwrite
        schema = TableSchema.from_proto(o.schema, o.max_field_id) if o.HasField("schema") else None
        return Overwrite(tuple(o.fragments), schema, dict(o.config))
    if kind == "rewrite":
        groups = tuple(
            RewriteGroup(tuple(g.old_fragment_ids), tuple(g.new_fragments))
            for g in txn.rewrite.groups
        )
        return Rewrite(groups)
    if kind == "create_index":
        c = txn.create_index
        return CreateIndex(c.index, tuple(c.fragment_stats))
    if kind == "schema_change":
        s = txn.schema_change
        return SchemaChange(TableSchema.from_proto(s.schema, s.max_field_id))
    if kind == "restore":
        return Restore(txn.restore.version)
    return None
