"""The pure step of a commit: old manifest + operation -> new manifest.

No I/O happens here: everything an operation needs (fragments, deletion files already
written, the manifest of a restored version) is an argument. Calling it twice with the same
arguments gives equal manifests, which is what lets the commit loop rebuild the manifest on
top of whatever version is latest at each attempt.

Example:
    >>> import pyarrow as pa
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

from collections.abc import Iterable, Mapping

from fermion.errors import DatasetError
from fermion.table.codec import FLAG_DELETION_FILES, FLAG_INDICES
from fermion.table.operations import (
    Append,
    CreateIndex,
    Delete,
    Operation,
    Overwrite,
    Rewrite,
    SchemaChange,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.version import __version__

__all__ = ["WRITER_LIBRARY", "apply_operation", "live_rows"]

WRITER_LIBRARY = "fermion"


def live_rows(fragment: pb.Fragment) -> int:
    """Rows of a fragment that are not deleted.

    Example:
        >>> gone = pb.DeletionFile(num_deleted_rows=2)
        >>> live_rows(pb.Fragment(physical_rows=5, deletion_file=gone))
        3
    """
    deleted = fragment.deletion_file.num_deleted_rows if fragment.HasField("deletion_file") else 0
    return fragment.physical_rows - deleted


def _next_id(manifest: pb.Manifest) -> int:
    return manifest.max_fragment_id + 1 if manifest.HasField("max_fragment_id") else 0


def _with_new_ids(manifest: pb.Manifest, fragments: Iterable[pb.Fragment]) -> list[pb.Fragment]:
    out = []
    for fragment in fragments:
        copy = pb.Fragment()
        copy.CopyFrom(fragment)
        copy.id = _next_id(manifest)
        manifest.max_fragment_id = copy.id
        out.append(copy)
    return out


def _replace_fragments(manifest: pb.Manifest, fragments: list[pb.Fragment]) -> None:
    del manifest.fragments[:]
    manifest.fragments.extend(fragments)


def _prune_indices(manifest: pb.Manifest) -> None:
    """Indices never name fragments that left the manifest."""
    present = {f.id for f in manifest.fragments}
    kept = []
    for index in manifest.indices:
        covered = [i for i in index.fragment_ids if i in present]
        if covered:
            copy = pb.IndexMetadata()
            copy.CopyFrom(index)
            del copy.fragment_ids[:]
            copy.fragment_ids.extend(covered)
            kept.append(copy)
    del manifest.indices[:]
    manifest.indices.extend(kept)


def _summarise(
    summary: pb.OperationSummary, added: list[pb.Fragment], removed: list[pb.Fragment]
) -> None:
    summary.added_fragments += len(added)
    summary.removed_fragments += len(removed)
    summary.added_files += sum(len(f.files) for f in added)
    summary.removed_files += sum(len(f.files) for f in removed)
    summary.added_rows += sum(live_rows(f) for f in added)
    summary.removed_rows += sum(live_rows(f) for f in removed)


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
    summary.operation = op.name
    summary.properties.update(properties or {})
    by_id = {f.id: f for f in manifest.fragments}

    if isinstance(op, Append):
        added = _with_new_ids(manifest, op.fragments)
        manifest.fragments.extend(added)
        manifest.config.update(op.config)
        _summarise(summary, added, [])
    elif isinstance(op, Delete):
        missing = [i for i in op.deleted_fragment_ids if i not in by_id]
        missing += [f.id for f in op.updated_fragments if f.id not in by_id]
        if missing:
            raise DatasetError(
                f"delete names fragments not in version {base_version(base)}: {missing}"
            )
        removed = [by_id[i] for i in op.deleted_fragment_ids]
        newly = sum(live_rows(f) for f in removed)
        for update in op.updated_fragments:
            fragment = by_id[update.id]
            newly += live_rows(fragment) - live_rows(update)
            fragment.deletion_file.CopyFrom(update.deletion_file)
        gone = set(op.deleted_fragment_ids)
        _replace_fragments(manifest, [f for f in manifest.fragments if f.id not in gone])
        summary.removed_fragments = len(removed)
        summary.removed_files = sum(len(f.files) for f in removed)
        summary.deleted_rows = newly
    elif isinstance(op, Overwrite):
        removed = list(manifest.fragments)
        added = _with_new_ids(manifest, op.fragments)
        _replace_fragments(manifest, added)
        if op.schema is not None:
            manifest.schema.CopyFrom(op.schema.to_proto())
            manifest.max_field_id = max(manifest.max_field_id, op.schema.max_field_id)
        manifest.config.update(op.config)
        del manifest.indices[:]
        _summarise(summary, added, removed)
    elif isinstance(op, Rewrite):
        old_ids = {i for g in op.groups for i in g.old_fragment_ids}
        missing = sorted(old_ids - by_id.keys())
        if missing:
            raise DatasetError(
                f"rewrite names fragments not in version {base_version(base)}: {missing}"
            )
        first_of_group = {g.old_fragment_ids[0]: g for g in op.groups}
        fragments: list[pb.Fragment] = []
        added, removed = [], []
        for fragment in manifest.fragments:
            group = first_of_group.get(fragment.id)
            if group is not None:
                new = _with_new_ids(manifest, group.new_fragments)
                fragments.extend(new)
                added.extend(new)
            if fragment.id in old_ids:
                removed.append(fragment)
            else:
                fragments.append(fragment)
        _replace_fragments(manifest, fragments)
        _summarise(summary, added, removed)
    elif isinstance(op, CreateIndex):
        missing = sorted(set(op.index.fragment_ids) - by_id.keys())
        if missing:
            raise DatasetError(
                f"index covers fragments not in version {base_version(base)}: {missing}"
            )
        for update in op.fragment_stats:
            fragment = by_id.get(update.id)
            if fragment is not None:
                del fragment.stats[:]
                fragment.stats.extend(update.stats)
        kept = [i for i in manifest.indices if i.name != op.index.name]
        del manifest.indices[:]
        manifest.indices.extend(kept)
        manifest.indices.append(op.index)
        summary.properties["index"] = op.index.name
    elif isinstance(op, SchemaChange):
        manifest.schema.CopyFrom(op.schema.to_proto())
        manifest.max_field_id = max(manifest.max_field_id, op.schema.max_field_id)
    else:
        if restored is None or restored.version != op.version:
            raise DatasetError(f"restoring version {op.version} needs its manifest")
        removed = list(manifest.fragments)
        _replace_fragments(manifest, list(restored.fragments))
        manifest.schema.CopyFrom(restored.schema)
        manifest.max_field_id = max(manifest.max_field_id, restored.max_field_id)
        del manifest.indices[:]
        manifest.indices.extend(restored.indices)
        manifest.config.clear()
        manifest.config.update(restored.config)
        summary.properties["restored_version"] = str(op.version)
        _summarise(summary, list(restored.fragments), removed)

    _prune_indices(manifest)
    flags = 0
    if any(f.HasField("deletion_file") for f in manifest.fragments):
        flags |= FLAG_DELETION_FILES
    if manifest.indices:
        flags |= FLAG_INDICES
    manifest.reader_feature_flags = flags
    manifest.writer_feature_flags = flags
    return manifest


def base_version(base: pb.Manifest | None) -> int:
    """The version of ``base`` (0 for none)."""
    return base.version if base is not None else 0
