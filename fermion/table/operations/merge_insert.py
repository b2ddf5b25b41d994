"""``MergeInsert``: upsert by key columns in one version (``Dataset.merge_insert``).

The rows of the read version whose keys the source matched (and, with
``when_not_matched_by_source_delete``, the rows it did not) get deletion files; the updated
and inserted rows are new fragments. The transaction records the key columns and sorted
64-bit hashes of the source keys, so that two merges of common keys conflict (and the later
one re-plans on the newer version) while merges of disjoint keys rebase.

Example:
    >>> from fermion.table.proto import manifest_pb2 as pb, transaction_pb2 as txpb
    >>> op = MergeInsert(new_fragments=(pb.Fragment(physical_rows=1),), on=("id",),
    ...                  key_hashes=(7, 3), inserted_rows=1)
    >>> message = txpb.Transaction().merge_insert
    >>> op.fill(message)
    >>> MergeInsert.from_message(message) == op, op.key_hashes
    (True, (3, 7))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from fermion.errors import InvalidArgumentError
from fermion.table.key_hash import KeyHashes
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
from fermion.table.operations.row_changes import RowChanges
from fermion.table.proto import manifest_pb2 as pb

__all__ = ["MergeInsert", "retry_if_removed"]


def _common_keys(mine: MergeInsert, theirs: MergeInsert) -> bool:
    a = KeyHashes.of(mine.key_hashes).array
    b = KeyHashes.of(theirs.key_hashes).array
    return bool(np.intersect1d(a, b, assume_unique=True).size)


def _merge_vs_merge(mine: Any, theirs: Any) -> Verdict:
    """Common keys: re-plan (the later merge must see the earlier one's rows). Disjoint
    keys: merge the deletion bitmaps of common fragments."""
    if _common_keys(mine, theirs):
        return R
    return if_overlap(REBASE)(mine, theirs)


def _merge_vs_append(mine: Any, theirs: Any) -> Verdict:
    """An append may hold keys this merge inserted: re-plan so they match instead."""
    return R if mine.inserted_rows else OK


def _merge_vs_update(mine: Any, theirs: Any) -> Verdict:
    """A replace_where, or an update of a key column while this merge inserts rows, may
    have made rows with keys this merge inserted: re-plan. Otherwise as a delete."""
    if theirs.replace_where or (mine.inserted_rows and set(theirs.columns) & set(mine.on)):
        return R
    return if_overlap(REBASE)(mine, theirs)


def retry_if_removed(mine: Any, theirs: Any) -> Verdict:
    """An index only cares about fragments that disappear (more deleted rows keep its
    statistics valid bounds); a row change removes the fragments it empties."""
    return R if mine.touched_fragment_ids() & set(theirs.removed_fragment_ids) else OK


@register
@dataclass(frozen=True)
class MergeInsert(RowChanges):
    """Upsert by key columns: old rows deleted, updated and inserted rows added.

    Attributes:
        on: The key columns.
        key_hashes: Sorted distinct 64-bit hashes of the source keys.
        inserted_rows: Rows whose keys matched nothing at the read version.
        config: Table configuration entries the commit sets (the merge job records its
            input, as ``Append.config`` does); kept in the transaction record. Two merges
            of one input conflict through their common key hashes.
    """

    on: tuple[str, ...] = ()
    key_hashes: tuple[int, ...] = ()
    inserted_rows: int = 0
    config: Mapping[str, str] = field(default_factory=dict)
    name: ClassVar[str] = "merge_insert"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": _merge_vs_append, "delete": if_overlap(REBASE), "rewrite": if_overlap(R),
        "create_index": OK, "schema_change": OK, "overwrite": NO, "restore": NO,
        "merge_insert": _merge_vs_merge, "update": _merge_vs_update,
    }  # fmt: skip
    CONFLICTS_AS_THEIRS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": if_overlap(REBASE), "rewrite": if_overlap(R),
        "create_index": retry_if_removed, "schema_change": OK, "overwrite": OK,
        "restore": OK,
    }  # fmt: skip

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "on", tuple(self.on))
        # sorted and distinct once (a KeyHashes given is already: kept as it is)
        object.__setattr__(self, "key_hashes", KeyHashes.of(self.key_hashes))
        object.__setattr__(self, "config", dict(self.config))
        if not self.on:
            raise InvalidArgumentError("MergeInsert needs at least one key column")
        if self.inserted_rows < 0 or self.inserted_rows > self.new_rows():
            raise InvalidArgumentError(
                f"MergeInsert inserts {self.inserted_rows} rows but adds {self.new_rows()}"
            )

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.merge_insert``."""
        self.fill_rows(message)
        message.on.extend(self.on)
        message.key_hashes.extend(self.key_hashes)
        message.inserted_rows = self.inserted_rows
        message.config.update(self.config)

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Old rows deleted, updated and inserted rows added (:meth:`RowChanges.apply_rows`);
        ``config`` entries set."""
        self.apply_rows(manifest, context)
        manifest.config.update(self.config)

    @classmethod
    def from_message(cls, message: Any) -> MergeInsert:
        """Read ``Transaction.merge_insert``."""
        return cls(
            **cls.rows_of(message), on=tuple(message.on), key_hashes=tuple(message.key_hashes),
            inserted_rows=message.inserted_rows, config=dict(message.config),
        )  # fmt: skip
