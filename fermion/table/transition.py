"""The pure step of a commit: old manifest + operation -> new manifest.

The common frame (version, parent, transaction, summary, index pruning, feature flags) is
here; what each operation changes is its own ``apply`` (:mod:`fermion.table.operations`).
No I/O happens here: everything an operation needs (fragments, deletion files already
written, the manifest of a restored version) is an argument. Calling it twice with the same
arguments gives equal manifests, which is what lets the commit loop rebuild the manifest on
top of whatever version is latest at each attempt.

Example:
    >>> import pyarrow as pa
    >>> from fermion.table.operations import Append
    >>> from fermion.table.schema import TableSchema
    >>> schema = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
    >>> fragment = pb.Fragment(physical_rows=10)
    >>> m1 = apply_operation(None, Overwrite((fragment,), schema), version=1,
    ...                      transaction_file="0-a.txn", transaction_uuid="a", timestamp_us=0)
    >>> m2 = apply_operation(m1, Append((fragment,)), version=2,
    ...                      transaction_file="1-b.txn", transaction_uuid="b", timestamp_us=0)
    >>> [f.id for f in m2.fragments], m2.max_fragment_id, m2.summary.added_rows
    ([0, 1], 1, 10)
"""

from __future__ import annotations

from collections.abc import Mapping

from fermion.errors import DatasetError
from fermion.table.codec import (
    FLAG_DELETION_FILES,
    FLAG_INDICES,
    FLAG_ROW_IDS,
    FLAG_WRITE_PROPERTIES,
)
from fermion.table.indices.model import KINDS as SCALAR_INDEX_KINDS
from fermion.table.operations import Operation, Overwrite
from fermion.table.operations.base import ApplyContext, live_rows
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.row_ids import assign_row_ids
from fermion.table.write_properties import WRITE_KEY_PREFIX
from fermion.version import __version__

__all__ = ["WRITER_LIBRARY", "apply_operation", "live_rows"]

WRITER_LIBRARY = "fermion"


def _prune_indices(manifest: pb.Manifest) -> None:
    """Indices never name fragments that left the manifest. A scalar index covering none
    any more stays while its column exists (``optimize_indices`` indexes the fragments
    that replaced them), and goes with its column; a statistics rebuild covering none
    goes."""
    present = {f.id for f in manifest.fragments}
    fields = set(manifest.schema.field_ids)
    kept = []
    for index in manifest.indices:
        covered = [i for i in index.fragment_ids if i in present]
        if index.kind in SCALAR_INDEX_KINDS:
            keep = set(index.field_ids) <= fields
        else:
            keep = bool(covered)
        if keep:
            copy = pb.IndexMetadata()
            copy.CopyFrom(index)
            del copy.fragment_ids[:]
            copy.fragment_ids.extend(covered)
            kept.append(copy)
    del manifest.indices[:]
    manifest.indices.extend(kept)


def apply_operation(
    base: pb.Manifest | None,
    op: Operation,
    *,
    version: int,
    transaction_file: str,
    transaction_uuid: str,
    timestamp_us: int,
    restored: pb.Manifest | None = None,
    writer_version: str = __version__,
    properties: Mapping[str, str] | None = None,
) -> pb.Manifest:
    """Build the manifest of ``version`` by applying ``op`` on top of ``base``.

    Args:
        base: The latest manifest (``None`` when creating the table).
        op: The operation, already rebased onto ``base`` by the commit loop.
        version: The version to build (``base.version + 1``).
        transaction_file: Name of the transaction file, relative to ``_transactions/``.
        transaction_uuid: The transaction's uuid (how a retry recognises its own commit).
        timestamp_us: Commit time in microseconds since the epoch.
        restored: For :class:`Restore`, the manifest of the version being restored.
        writer_version: Library version recorded in the manifest.
        properties: Informational key/values for this version's summary (a job's name,
            its write id, ...).

    Raises:
        DatasetError: The operation does not fit ``base`` (e.g. a missing fragment, an
            append to a table that does not exist).
    """
    manifest = pb.Manifest()
    if base is not None:
        manifest.CopyFrom(base)
    elif not isinstance(op, Overwrite) or op.schema is None:
        raise DatasetError(f"the first version must be an Overwrite with a schema, not {op.name}")
    manifest.version = version
    manifest.parent_version = base.version if base is not None else 0
    manifest.timestamp_us = timestamp_us
    manifest.tag = ""
    manifest.transaction_file = transaction_file
    manifest.transaction_uuid = transaction_uuid
    manifest.writer_library = WRITER_LIBRARY
    manifest.writer_version = writer_version
    manifest.summary.Clear()
    summary = manifest.summary
    # the first version of a table is its creation, whatever operation wrote it
    summary.operation = op.name if base is not None else "create"
    summary.properties.update(properties or {})
    context = ApplyContext(
        base_version=base_version(base),
        restored=restored,
        by_id={f.id: f for f in manifest.fragments},
    )
    op.apply(manifest, context)

    _prune_indices(manifest)
    flags = FLAG_ROW_IDS if assign_row_ids(base, manifest) else 0
    if any(f.HasField("deletion_file") for f in manifest.fragments):
        flags |= FLAG_DELETION_FILES
    if manifest.indices:
        flags |= FLAG_INDICES
    manifest.reader_feature_flags = flags
    # a writer unaware of write properties would write files that ignore them
    if any(key.startswith(WRITE_KEY_PREFIX) for key in manifest.config):
        flags |= FLAG_WRITE_PROPERTIES
    manifest.writer_feature_flags = flags
    return manifest


def base_version(base: pb.Manifest | None) -> int:
    """The version of ``base`` (0 for none)."""
    return base.version if base is not None else 0
