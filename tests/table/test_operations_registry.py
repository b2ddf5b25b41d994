"""One module per operation type (fermion/table/operations/): registry, codec, matrix.

Checks that every registered type declares its codec, transition and conflict row, that
every type round-trips through a transaction message, that the conflict matrix assembled
from the declarations has exactly one cell per pair, and that a new operation type can be
added from its own module alone (its ``CONFLICTS_AS_THEIRS`` fills the older rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pytest

from fermion.table.conflicts import MATRIX, build_matrix, check
from fermion.table.operations import (
    REGISTRY,
    AddColumns,
    Append,
    CreateIndex,
    Delete,
    DropIndex,
    MergeInsert,
    Overwrite,
    Restore,
    Rewrite,
    RewriteGroup,
    SchemaChange,
    Update,
    UpdateConfig,
    operation_from_proto,
    operation_to_proto,
)
from fermion.table.operations.base import NO, OK, ApplyContext, Cell, OperationBase, R
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.proto import transaction_pb2 as txpb
from fermion.table.schema import TableSchema

SCHEMA = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
DELETED = pb.Fragment(id=1, physical_rows=4, deletion_file=pb.DeletionFile(num_deleted_rows=1))
EXAMPLES: list[Any] = [
    Append((pb.Fragment(physical_rows=3),), {"fermion.input.a": "1"}),
    Delete((DELETED,), (2,), "x > 1"),
    Overwrite((pb.Fragment(physical_rows=1),), SCHEMA, {"k": "v"}),
    Rewrite((RewriteGroup((1, 2), (pb.Fragment(physical_rows=5),)),)),
    CreateIndex(pb.IndexMetadata(uuid="u", name="n", fragment_ids=[1]), (DELETED,)),
    SchemaChange(SCHEMA),
    Restore(2),
    MergeInsert((DELETED,), (2,), (pb.Fragment(physical_rows=2),), ("x",), (9, 4), 1),
    MergeInsert(
        new_fragments=(pb.Fragment(physical_rows=2),),
        on=("x",),
        key_hashes=(3,),
        inserted_rows=2,
        config={"fermion.input.merge.a": "1"},  # the merge job's record
    ),  # fmt: skip
    Update((DELETED,), (), (pb.Fragment(physical_rows=1),), "x = 1", ("x",)),
    Update(new_fragments=(pb.Fragment(physical_rows=1),), predicate="x = 1", replace_where=True),
    AddColumns(SCHEMA, (pb.Fragment(id=1, files=[pb.DataFile(path="p", field_ids=[1])]),)),
    DropIndex("n"),
    UpdateConfig({"fermion.write.page_size": "65536"}, ("fermion.write.compression",)),
]


def test_every_transaction_field_has_one_registered_type() -> None:
    oneof = txpb.Transaction.DESCRIPTOR.oneofs_by_name["operation"]
    assert sorted(REGISTRY) == sorted(f.name for f in oneof.fields)
    assert sorted({type(e).name for e in EXAMPLES}) == sorted(REGISTRY)
    for cls in REGISTRY.values():
        for member in ("fill", "from_message", "apply", "CONFLICTS", "name"):
            assert member in vars(cls), f"{cls.__name__} does not define {member}"


@pytest.mark.parametrize("op", EXAMPLES, ids=lambda op: op.name)
def test_every_type_round_trips_through_a_transaction(op: Any) -> None:
    txn = operation_to_proto(op, 7, "uuid", 123)
    assert txn.WhichOneof("operation") == op.name
    again = operation_from_proto(txpb.Transaction.FromString(txn.SerializeToString()))
    assert again == op


def test_an_unknown_or_missing_operation_is_none_and_incompatible() -> None:
    assert operation_from_proto(txpb.Transaction(read_version=1)) is None
    assert check(EXAMPLES[0], None) is NO


def test_the_matrix_has_one_cell_per_pair() -> None:
    names = sorted(REGISTRY)
    assert sorted(MATRIX) == names
    for mine in names:
        assert sorted(MATRIX[mine]) == names
    row = {n: OK for n in names}
    broken = dict(REGISTRY)

    @dataclass(frozen=True)
    class Gappy(OperationBase):
        name: ClassVar[str] = "gappy"
        CONFLICTS: ClassVar[Mapping[str, Cell]] = row

    broken["gappy"] = Gappy
    with pytest.raises(ValueError, match="missing"):
        build_matrix(broken)


def test_a_new_operation_type_is_added_from_its_own_module() -> None:
    @dataclass(frozen=True)
    class Upsert(OperationBase):
        """A hypothetical row update: conflicts declared both ways in one place."""

        fragment_ids: tuple[int, ...]
        name: ClassVar[str] = "upsert"
        CONFLICTS: ClassVar[Mapping[str, Cell]] = {
            **{n: OK for n in REGISTRY}, "upsert": R, "overwrite": NO, "restore": NO,
        }  # fmt: skip
        CONFLICTS_AS_THEIRS: ClassVar[Mapping[str, Cell]] = {n: OK for n in REGISTRY}

        def touched_fragment_ids(self) -> set[int]:
            return set(self.fragment_ids)

        def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
            manifest.summary.properties["updated"] = str(len(self.fragment_ids))

    matrix = build_matrix({**REGISTRY, "upsert": Upsert})
    assert matrix["append"]["upsert"] is OK and matrix["upsert"]["upsert"] is R
    twice = type("Twice", (Upsert,), {"CONFLICTS_AS_THEIRS": {"upsert": OK}})
    with pytest.raises(ValueError, match="declared twice"):
        build_matrix({**REGISTRY, "upsert": twice})
