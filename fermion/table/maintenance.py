"""Maintenance: compaction, statistics rebuild, cleanup of old versions and orphans.

All three commit (or delete) through the same protocol as every writer: compaction is a
``Rewrite`` (re-planned on a newer version when a concurrent delete or rewrite touched its
fragments, so it never resurrects deleted rows), the statistics rebuild is a
``CreateIndex``, and cleanup never removes a file referenced by a retained version.

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table.dataset import write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> ds = write_dataset(pa.table({"x": list(range(6))}), uri, max_rows_per_file=2)
    >>> compact_files(ds, target_rows_per_fragment=10)["fragments_removed"], len(ds.fragments)
    (3, 1)
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pyarrow as pa

from fermion.errors import InvalidArgumentError
from fermion.io.atomic import is_temp_name
from fermion.io.manifest_store import is_staging_path
from fermion.table.commit import CommitConfig, commit_operation
from fermion.table.deletions import deletion_path
from fermion.table.fragments import write_fragments
from fermion.table.operations import CreateIndex, Rewrite, RewriteGroup
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.scan import read_fragment
from fermion.table.stats import compute_stats
from fermion.table.storage import manifest_name
from fermion.table.transition import live_rows
from fermion.table.versions import list_tags, load_manifest, schema_of

if TYPE_CHECKING:
    from fermion.table.dataset import Dataset

__all__ = ["STATS_INDEX_NAME", "cleanup_old_versions", "compact_files", "rebuild_stats"]

STATS_INDEX_NAME = "fermion.stats"


def _needs_rewrite(fragment: pb.Fragment, target: int, threshold: float) -> bool:
    deleted = fragment.physical_rows - live_rows(fragment)
    return live_rows(fragment) < target or deleted > threshold * fragment.physical_rows


def compact_files(
    ds: Dataset,
    *,
    target_rows_per_fragment: int,
    materialize_deletions_threshold: float = 0.1,
    max_retries: int | None = None,
) -> dict[str, int]:
    """Merge runs of small fragments and rewrite fragments with many deleted rows.

    Args:
        ds: The table (moves to the new version).
        target_rows_per_fragment: Fragments below this many live rows are merged with their
            neighbours into fragments of up to this size.
        materialize_deletions_threshold: A fragment whose deleted fraction exceeds this is
            rewritten without the deleted rows even if it is large.
        max_retries: Commit attempts (default 20).

    Returns:
        ``fragments_removed``, ``fragments_added``, ``rows_rewritten``.
    """
    if target_rows_per_fragment < 1:
        raise InvalidArgumentError("target_rows_per_fragment must be >= 1")
    if not 0 <= materialize_deletions_threshold <= 1:
        raise InvalidArgumentError("materialize_deletions_threshold must be in [0, 1]")
    storage = ds.storage

    def plan(manifest: pb.Manifest) -> Rewrite | None:
        schema = schema_of(manifest)
        groups: list[list[pb.Fragment]] = []
        current: list[pb.Fragment] = []
        rows = 0
        for fragment in manifest.fragments:
            if not _needs_rewrite(
                fragment, target_rows_per_fragment, materialize_deletions_threshold
            ):
                if current:
                    groups.append(current)
                current, rows = [], 0
                continue
            if current and rows + live_rows(fragment) > target_rows_per_fragment:
                groups.append(current)
                current, rows = [], 0
            current.append(fragment)
            rows += live_rows(fragment)
        if current:
            groups.append(current)
        rewrite = []
        for group in groups:
            has_deletions = any(f.HasField("deletion_file") for f in group)
            if len(group) == 1 and not has_deletions:
                continue  # a lone small fragment: nothing to gain
            tables = [read_fragment(storage, schema, f, schema.arrow.names) for f in group]
            data = pa.concat_tables(tables) if tables else schema.arrow.empty_table()
            new = write_fragments(
                data, (storage.fs, storage.root) if storage.fs else storage.root,
                schema=schema, max_rows_per_file=target_rows_per_fragment,
                manifest_store=storage.manifest_store,
            ) if data.num_rows else []  # fmt: skip
            rewrite.append(RewriteGroup(tuple(f.id for f in group), tuple(new)))
        return Rewrite(tuple(rewrite)) if rewrite else None

    op = plan(ds._manifest)
    if op is None:
        return {"fragments_removed": 0, "fragments_added": 0, "rows_rewritten": 0}
    result = commit_operation(
        storage, op, read_version=ds.version,
        config=CommitConfig(max_retries=max_retries or CommitConfig().max_retries),
        planner=plan,
    )  # fmt: skip
    ds._moved(result)
    summary = result.manifest.summary
    return {
        "fragments_removed": summary.removed_fragments,
        "fragments_added": summary.added_fragments,
        "rows_rewritten": summary.added_rows,
    }


def rebuild_stats(ds: Dataset, columns: Sequence[str] | None = None) -> None:
    """Recompute per-fragment min/max/null statistics from the live rows.

    Commits a ``CreateIndex`` named :data:`STATS_INDEX_NAME` covering every fragment. A
    concurrent compaction of covered fragments makes it re-plan, so the statistics never
    point at removed fragments.
    """
    storage = ds.storage

    def plan(manifest: pb.Manifest) -> CreateIndex:
        schema = schema_of(manifest)
        names = list(schema.arrow.names) if columns is None else list(columns)
        ids = [schema.id_of(n) for n in names]
        stats = []
        for fragment in manifest.fragments:
            table = read_fragment(storage, schema, fragment, names)
            fresh = {s.field_id: s for s in compute_stats(table, ids)}
            update = pb.Fragment(id=fragment.id)
            update.stats.extend(fresh.get(s.field_id, s) for s in fragment.stats)
            update.stats.extend(
                s for i, s in fresh.items() if i not in {x.field_id for x in fragment.stats}
            )
            stats.append(update)
        index = pb.IndexMetadata(
            uuid=uuidlib.uuid4().hex, name=STATS_INDEX_NAME, kind="zonemap",
            field_ids=ids, fragment_ids=[f.id for f in manifest.fragments],
            dataset_version=manifest.version,
        )  # fmt: skip
        return CreateIndex(index, tuple(stats))

    result = commit_operation(storage, plan(ds._manifest), read_version=ds.version, planner=plan)
    ds._moved(result)


def _referenced_files(manifest: pb.Manifest) -> set[str]:
    files = {f"_transactions/{manifest.transaction_file}"} if manifest.transaction_file else set()
    for fragment in manifest.fragments:
        files.update(d.path for d in fragment.files)
        if fragment.HasField("deletion_file"):
            files.add(deletion_path(fragment.id, fragment.deletion_file))
    for index in manifest.indices:
        files.update(index.files)
    return files


def cleanup_old_versions(
    ds: Dataset,
    older_than: timedelta | datetime,
    *,
    keep_tags: bool = True,
    orphan_older_than: timedelta | datetime | None = None,
) -> dict[str, int]:
    """Delete versions older than a cutoff and every file no retained version references.

    The latest version is always kept, and so (with ``keep_tags``) are tagged versions.
    A file no retained version references is deleted only when it is itself older than
    ``orphan_older_than`` (default: ``older_than``), so a writer's files are safe until its
    commit lands. Readers of retained versions never see a file disappear.

    Args:
        ds: The table.
        older_than: Age (``timedelta``) or absolute cutoff (``datetime``).
        keep_tags: Keep tagged versions.
        orphan_older_than: Age or cutoff for unreferenced files.

    Returns:
        ``versions_removed``, ``files_removed``, ``bytes_removed``.
    """
    storage = ds.storage
    now = datetime.now(UTC)
    cutoff = now - older_than if isinstance(older_than, timedelta) else older_than
    orphan = orphan_older_than if orphan_older_than is not None else older_than
    orphan_cutoff = (now - orphan if isinstance(orphan, timedelta) else orphan).timestamp()

    versions = storage.versions()
    if not versions:
        return {"versions_removed": 0, "files_removed": 0, "bytes_removed": 0}
    latest = versions[-1]
    pinned = set(list_tags(storage).values()) if keep_tags else set()
    referenced: set[str] = set()
    doomed: list[int] = []
    for version in versions:
        manifest = load_manifest(storage, version)
        created = manifest.timestamp_us / 1e6
        if version == latest or version in pinned or created >= cutoff.timestamp():
            referenced |= _referenced_files(manifest)
        else:
            doomed.append(version)
    # files: anything under the managed directories that no retained version references
    removed_files = removed_bytes = 0
    for version in doomed:
        storage.remove(manifest_name(version))
    candidates = []
    for directory in ("data", "_deletions", "_transactions", "_indices"):
        candidates.extend(storage.list_tree(directory))
    candidates.extend(
        f"_versions/{name}"
        for name in storage.list_dir("_versions")
        if is_temp_name(name) or is_staging_path(name)
    )
    for path in candidates:
        if path in referenced:
            continue
        try:
            if storage.modified(path) >= orphan_cutoff:
                continue
            size = storage.size(path)
        except FileNotFoundError:
            continue
        storage.remove(path)
        removed_files += 1
        removed_bytes += size
    return {
        "versions_removed": len(doomed),
        "files_removed": removed_files,
        "bytes_removed": removed_bytes,
    }
