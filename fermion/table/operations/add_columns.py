"""``AddColumns``: new columns with values, one extra data file per fragment.

The other data files are untouched: each fragment gains a file holding only the new columns
(row-aligned with the fragment, deleted rows included, as nulls), and the schema gains the
columns. Readers merge the files of a fragment by field id; compaction folds them back
into one file. Anything that adds rows the new columns were not computed for (an append, a
merge, an update, a compaction) or changes the schema makes it re-plan.

Example:
    >>> import pyarrow as pa
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> schema = TableSchema.from_arrow(pa.schema([("a", pa.int8()), ("g", pa.int8())]))
    >>> op = AddColumns(schema, (pb.Fragment(id=4, files=[pb.DataFile(path="p")]),))
    >>> message = txpb.Transaction().add_columns
    >>> op.fill(message)
    >>> AddColumns.from_message(message) == op, op.touched_fragment_ids()
    (True, {4})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.table.operations.base import (
    NO,
    OK,
    ApplyContext,
    Cell,
    OperationBase,
    R,
    copy_fragments,
    register,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.schema import TableSchema

__all__ = ["AddColumns"]


@register
@dataclass(frozen=True)
class AddColumns(OperationBase):
    """The new ``schema``, and per fragment (``fragment_files``: id, files, statistics of
    the new columns) the data files holding the new columns."""

    schema: TableSchema
    fragment_files: tuple[pb.Fragment, ...] = ()
    name: ClassVar[str] = "add_columns"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": R, "delete": OK, "rewrite": R, "create_index": OK,
        "schema_change": R, "overwrite": NO, "restore": NO, "merge_insert": R, "update": R,
        "add_columns": R,
    }  # fmt: skip
    CONFLICTS_AS_THEIRS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": OK, "rewrite": R, "create_index": OK,
        "schema_change": R, "overwrite": OK, "restore": OK, "merge_insert": R, "update": R,
    }  # fmt: skip

    def __post_init__(self) -> None:
        object.__setattr__(self, "fragment_files", copy_fragments(self.fragment_files))
        ids = [f.id for f in self.fragment_files]
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError("AddColumns names a fragment twice")
        if any(not f.files for f in self.fragment_files):
            raise InvalidArgumentError("AddColumns gives a fragment no data file")

    def touched_fragment_ids(self) -> set[int]:
        """The fragments that gain a data file."""
        return {f.id for f in self.fragment_files}

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.add_columns``."""
        message.schema.CopyFrom(self.schema.to_proto())
        message.max_field_id = self.schema.max_field_id
        message.fragment_files.extend(self.fragment_files)

    @classmethod
    def from_message(cls, message: Any) -> AddColumns:
        """Read ``Transaction.add_columns``."""
        schema = TableSchema.from_proto(message.schema, message.max_field_id)
        return cls(schema, tuple(message.fragment_files))

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Every fragment gains its new files and statistics; the schema is replaced.

        A fragment a concurrent delete removed entirely is skipped; a fragment without new
        files (its rows would read the new columns as nulls) is an error.
        """
        given = {f.id: f for f in self.fragment_files}
        uncovered = sorted(context.by_id.keys() - given.keys())
        if uncovered:
            raise DatasetError(
                f"add_columns has no data files for fragments {uncovered} of version "
                f"{context.base_version}"
            )
        for fragment_id, fragment in context.by_id.items():
            fragment.files.extend(given[fragment_id].files)
            fragment.stats.extend(given[fragment_id].stats)
        manifest.schema.CopyFrom(self.schema.to_proto())
        manifest.max_field_id = max(manifest.max_field_id, self.schema.max_field_id)
        manifest.summary.added_files = sum(len(f.files) for f in self.fragment_files)
