"""Helpers that merge-insert, update and replace_where share.

Each of them plans on one table version (:class:`~fermion.table.domain.TableVersion`):
finds rows of existing fragments to replace, writes each touched fragment's complete new
deletion file (:func:`mark_deleted`), writes the new rows as fragments
(:func:`write_new_rows`, :func:`kept_row_ids`), and commits one operation with a planner
that runs the whole plan again on a newer version after a retryable conflict
(:func:`commit_planned`).

Example:
    >>> import tempfile, numpy as np, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
    >>> update, removed = mark_deleted(ds.storage, ds.fragments[0], np.array([0]), 1)
    >>> update.deleted_rows, removed
    (1, False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidArgumentError
from fermion.format.encoding.arrow_ops import aligned_for_acero
from fermion.table.codec import as_fragment, as_table_version, has_deletion_file
from fermion.table.commit import CommitConfig, CommitResult, commit_operation, on_versions
from fermion.table.deletions import (
    bitmap_from_offsets,
    keep_mask,
    read_fragment_deletions,
    with_deletions,
)
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragments import write_fragment_values
from fermion.table.row_ids import with_row_ids
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage, deferred_syncs
from fermion.table.write_properties import WriteProperties

__all__ = [
    "commit_planned",
    "committed_id",
    "evaluate",
    "kept_row_ids",
    "mark_deleted",
    "write_new_rows",
]


def evaluate(table: pa.Table, expressions: Mapping[str, pc.Expression]) -> pa.Table:
    """``expressions`` evaluated over the rows of ``table`` (an Acero projection), one
    column per name.

    Example:
        >>> evaluate(pa.table({"f": [1, 2]}), {"g": pc.field("f") * 2}).to_pydict()
        {'g': [2, 4]}
    """
    # imported here: it loads pyarrow.dataset and pandas (import fermion stays light)
    from pyarrow import acero

    table = aligned_for_acero(table)
    plan = acero.Declaration.from_sequence(
        [
            acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
            acero.Declaration(
                "project", acero.ProjectNodeOptions(list(expressions.values()), list(expressions))
            ),
        ]
    )
    return plan.to_table(use_threads=False)


def committed_id(fragment: Fragment) -> int:
    """The id of a committed fragment (one of a table version).

    Raises:
        InvalidArgumentError: ``fragment`` is not committed (it has no id).

    Example:
        >>> committed_id(Fragment(4, (), 1))
        4
    """
    if fragment.id is None:
        raise InvalidArgumentError("a row edit names committed fragments only (this has no id)")
    return fragment.id


def mark_deleted(
    storage: TableStorage,
    fragment: Fragment | Any,
    offsets: np.ndarray,
    read_version: int,
) -> tuple[Fragment | None, bool]:
    """Write the complete deletion set of a committed ``fragment`` (a manifest message is
    still accepted) with ``offsets`` added.

    Returns:
        ``(updated fragment, False)``, or ``(None, True)`` when no live row is left (the
        fragment is removed instead).
    """
    fragment = as_fragment(fragment, committed=True)
    rows = bitmap_from_offsets(offsets)
    if has_deletion_file(fragment):
        rows |= read_fragment_deletions(storage, fragment)
    if len(rows) == fragment.physical_rows:
        return None, True
    keep_mask(rows, fragment.physical_rows)  # validates the offsets
    return with_deletions(storage, fragment, read_version, rows), False


def write_new_rows(
    storage: TableStorage,
    schema: TableSchema,
    tables: list[pa.Table],
    max_rows_per_file: int,
    properties: WriteProperties,
) -> list[Fragment]:
    """The new rows as fragments of ``schema`` (none for no rows), written with the
    table's write ``properties`` (those of the version the edit is planned on)."""
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return []
    rows = pa.concat_tables([t.select(schema.arrow.names).cast(schema.arrow) for t in tables])
    return write_fragment_values(
        rows, storage.uri, schema=schema, max_rows_per_file=max_rows_per_file,
        manifest_store=storage.manifest_store, properties=properties,
    )  # fmt: skip


def kept_row_ids(fragments: list[Fragment], ids: Sequence[np.ndarray | None]) -> list[Fragment]:
    """New ``fragments`` written from the concatenated rows whose ids are ``ids`` (one
    array per written table, ``row_ids.UNASSIGNED`` for inserted rows), with those ids.
    A table without row ids (any entry ``None``: read from a fragment without ids) gives
    the fragments as they are: the commit drops or assigns ids as the table's mode says.

    Example:
        >>> import tempfile, fermion.table as ft
        >>> from fermion.table.row_ids import fragment_row_ids
        >>> ds = ft.write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
        >>> [f] = write_new_rows(ds.storage, ds.table_version.schema, [pa.table({"x": [5, 6]})], 9,
        ...                      WriteProperties())
        >>> [g] = kept_row_ids([f], [np.array([7]), np.array([8])])
        >>> fragment_row_ids(g).tolist(), kept_row_ids([f], [None]) == [f]
        ([7, 8], True)
    """
    if not ids or any(part is None for part in ids):
        return fragments
    return with_row_ids(fragments, np.concatenate([p for p in ids if p is not None]))


@deferred_syncs()  # (the plan's fsyncs run in the background until the manifest put)
def commit_planned(
    storage: TableStorage,
    version: TableVersion | Any,
    plan: Callable[[TableVersion], Any],
    *,
    config: CommitConfig | None = None,
    properties: Mapping[str, str] | None = None,
) -> tuple[CommitResult | None, Any]:
    """Plan on ``version`` (its manifest message is still accepted) and commit,
    re-planning on newer versions when told to.

    ``plan(version)`` returns ``(operation or None, stats)``; the stats returned are those
    of the plan that committed. ``(None, stats)``: there was nothing to do.

    Runs in a :func:`~fermion.table.storage.deferred_syncs` block: the fsyncs of the files
    the plans write (on this thread, or on threads that carry the block) run in the
    background, and each directory is synced once, just before the manifest put.
    """
    version = as_table_version(version)
    op, stats = plan(version)
    if op is None:
        return None, stats
    latest_stats = [stats]

    def replan(latest: TableVersion) -> Any:
        new_op, new_stats = plan(latest)
        latest_stats[0] = new_stats
        return new_op

    result = commit_operation(
        storage, op, read_version=version.version, config=config,
        planner=on_versions(replan), properties=properties,
    )  # fmt: skip
    return result, latest_stats[0]
