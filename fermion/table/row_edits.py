"""Helpers that merge-insert, update and replace_where share.

Each of them plans on one manifest: finds rows of existing fragments to replace, writes each
touched fragment's complete new deletion file (:func:`mark_deleted`), writes the new rows as
fragments, and commits one operation with a planner that runs the whole plan again on a
newer version after a retryable conflict (:func:`commit_planned`).

Example:
    >>> import tempfile, numpy as np, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
    >>> update, removed = mark_deleted(ds.storage, ds.fragments[0], np.array([0]), 1)
    >>> update.deletion_file.num_deleted_rows, removed
    (1, False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.format.encoding.arrow_ops import aligned_for_acero
from fermion.table.codec import fragment_message
from fermion.table.commit import CommitConfig, CommitResult, commit_operation
from fermion.table.deletions import (
    bitmap_from_offsets,
    keep_mask,
    read_deletion_file,
    write_deletion_file,
)
from fermion.table.domain import Fragment
from fermion.table.fragments import write_fragments
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage
from fermion.table.write_properties import WriteProperties

__all__ = ["commit_planned", "evaluate", "mark_deleted", "write_new_rows"]


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


def mark_deleted(
    storage: TableStorage,
    fragment: pb.Fragment | Fragment,
    offsets: np.ndarray,
    read_version: int,
) -> tuple[pb.Fragment | None, bool]:
    """Write the complete deletion set of ``fragment`` with ``offsets`` added.

    Returns:
        ``(updated fragment, False)``, or ``(None, True)`` when no live row is left (the
        fragment is removed instead).
    """
    fragment = fragment_message(fragment)
    rows = bitmap_from_offsets(offsets)
    if fragment.HasField("deletion_file"):
        rows |= read_deletion_file(storage, fragment.id, fragment.deletion_file)
    if len(rows) == fragment.physical_rows:
        return None, True
    keep_mask(rows, fragment.physical_rows)  # validates the offsets
    update = pb.Fragment()
    update.CopyFrom(fragment)
    update.deletion_file.CopyFrom(write_deletion_file(storage, fragment.id, read_version, rows))
    return update, False


def write_new_rows(
    storage: TableStorage,
    schema: TableSchema,
    tables: list[pa.Table],
    max_rows_per_file: int,
    properties: WriteProperties,
) -> list[pb.Fragment]:
    """The new rows as fragments of ``schema`` (none for no rows), written with the
    table's write ``properties`` (those of the version the edit is planned on)."""
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return []
    rows = pa.concat_tables([t.select(schema.arrow.names).cast(schema.arrow) for t in tables])
    return write_fragments(
        rows, storage.uri, schema=schema, max_rows_per_file=max_rows_per_file,
        manifest_store=storage.manifest_store, properties=properties,
    )  # fmt: skip


def commit_planned(
    storage: TableStorage,
    manifest: pb.Manifest,
    plan: Callable[[pb.Manifest], Any],
    *,
    config: CommitConfig | None = None,
    properties: Mapping[str, str] | None = None,
) -> tuple[CommitResult | None, Any]:
    """Plan on ``manifest`` and commit, re-planning on newer versions when told to.

    ``plan(manifest)`` returns ``(operation or None, stats)``; the stats returned are those
    of the plan that committed. ``(None, stats)``: there was nothing to do.
    """
    op, stats = plan(manifest)
    if op is None:
        return None, stats
    latest_stats = [stats]

    def replan(latest: pb.Manifest) -> Any:
        new_op, new_stats = plan(latest)
        latest_stats[0] = new_stats
        return new_op

    result = commit_operation(
        storage, op, read_version=manifest.version, config=config, planner=replan,
        properties=properties,
    )  # fmt: skip
    return result, latest_stats[0]
