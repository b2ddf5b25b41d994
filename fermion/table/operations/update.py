"""``Update``: rows rewritten by predicate in one version (``Dataset.update``, and
``write_dataset(..., mode="overwrite", replace_where=...)``).

The rows matching the predicate get deletion files; their new values (an update) or the
new rows that replace them (a replace_where) are new fragments. A replace_where re-plans
over any concurrent commit that may have added rows matching its predicate (an append, a
merge, another update), so no such row survives it.

Example:
    >>> from fermion.table.proto import manifest_pb2 as pb, transaction_pb2 as txpb
    >>> op = Update(new_fragments=(pb.Fragment(physical_rows=1),), predicate="ds = 1",
    ...             replace_where=True)
    >>> message = txpb.Transaction().update
    >>> op.fill(message)
    >>> Update.from_message(message) == op
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from fermion.table.operations.base import (
    NO,
    OK,
    REBASE,
    ApplyContext,
    Cell,
    R,
    Verdict,
    if_overlap,
    register,
)
from fermion.table.operations.merge_insert import retry_if_removed
from fermion.table.operations.row_changes import RowChanges
from fermion.table.proto import manifest_pb2 as pb

__all__ = ["Update"]


def _retry_if_replacing(mine: Any, theirs: Any) -> Verdict:
    """Added rows may match a replace_where's predicate; an update leaves them be."""
    return R if mine.replace_where else OK


def _update_vs_update(mine: Any, theirs: Any) -> Verdict:
    if mine.replace_where or theirs.replace_where:
        return R
    return if_overlap(REBASE)(mine, theirs)


def _update_vs_merge(mine: Any, theirs: Any) -> Verdict:
    """A merge may have inserted rows a replace_where must replace, or keys an update of a
    key column duplicates: re-plan. Otherwise as a delete."""
    if mine.replace_where or (theirs.inserted_rows and set(mine.columns) & set(theirs.on)):
        return R
    return if_overlap(REBASE)(mine, theirs)


@register
@dataclass(frozen=True)
class Update(RowChanges):
    """Rows matching ``predicate`` replaced by new rows.

    Attributes:
        predicate: The predicate as SQL text.
        columns: The columns an update sets (empty for a replace_where).
        replace_where: The new rows replace every row matching the predicate.
    """

    predicate: str = ""
    columns: tuple[str, ...] = ()
    replace_where: bool = False
    name: ClassVar[str] = "update"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": _retry_if_replacing, "delete": if_overlap(REBASE), "rewrite": if_overlap(R),
        "create_index": OK, "schema_change": OK, "overwrite": NO, "restore": NO,
        "merge_insert": _update_vs_merge, "update": _update_vs_update,
    }  # fmt: skip
    CONFLICTS_AS_THEIRS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": if_overlap(REBASE), "rewrite": if_overlap(R),
        "create_index": retry_if_removed, "schema_change": OK, "overwrite": OK,
        "restore": OK,
    }  # fmt: skip

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "columns", tuple(self.columns))

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.update``."""
        self.fill_rows(message)
        message.predicate = self.predicate
        message.columns.extend(self.columns)
        message.replace_where = self.replace_where

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Matching rows deleted, their new rows added (:meth:`RowChanges.apply_rows`)."""
        self.apply_rows(manifest, context)

    @classmethod
    def from_message(cls, message: Any) -> Update:
        """Read ``Transaction.update``."""
        return cls(
            **cls.rows_of(message), predicate=message.predicate,
            columns=tuple(message.columns), replace_where=message.replace_where,
        )  # fmt: skip
