"""Cleanup of old versions and orphaned files (vacuum).

Compaction, deletion materialisation and the statistics rebuild commit through the task
API (:mod:`fermion.table.tasks`). Cleanup is the one maintenance step that deletes instead
of committing: it never removes a file referenced by a retained version, and removes an
unreferenced file only once it is older than the orphan cutoff, so a writer's files are
safe until its commit lands.

Example:
    >>> import tempfile, pyarrow as pa
    >>> from datetime import timedelta
    >>> from fermion.table.dataset import write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> ds = write_dataset(pa.table({"x": [1]}), uri)
    >>> ds = write_dataset(pa.table({"x": [2]}), uri, mode="overwrite")
    >>> cleanup_old_versions(ds.storage, timedelta(0))["versions_removed"]
    1
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fermion.errors import InvalidArgumentError
from fermion.io.atomic import is_temp_name
from fermion.table.manifest_store import is_staging_path
from fermion.table.storage import TableStorage, manifest_name
from fermion.table.versions import list_tags, load_manifest, referenced_files

__all__ = ["RETENTION_DEFAULT", "cleanup_old_versions"]


# lance's default: a version is kept two weeks after a newer one replaced it
RETENTION_DEFAULT = timedelta(days=14)


def cleanup_old_versions(
    storage: TableStorage,
    older_than: timedelta | datetime = RETENTION_DEFAULT,
    *,
    keep_tags: bool = True,
    orphan_older_than: timedelta | datetime | None = None,
) -> dict[str, int]:
    """Delete versions older than a cutoff and every file no retained version references.

    The latest version is always kept, and so (with ``keep_tags``) are tagged versions.
    A file no retained version references is deleted only when it is itself older than
    ``orphan_older_than`` (default: ``older_than``), so a writer's files are safe until its
    commit lands. Readers of retained versions never see a file disappear. Directories left
    empty under ``data/`` and ``_indices/`` (a write's ``data/{write_id}/``) are removed
    under the same age rule.

    Args:
        storage: The table.
        older_than: Age (``timedelta``) or absolute cutoff (``datetime``); default
            :data:`RETENTION_DEFAULT` (14 days).
        keep_tags: Keep tagged versions.
        orphan_older_than: Age or cutoff for unreferenced files.

    Returns:
        ``versions_removed``, ``files_removed``, ``bytes_removed``.

    Raises:
        InvalidArgumentError: an age that is not a ``timedelta`` / ``datetime``, or a
            negative ``timedelta`` or a ``datetime`` in the future (a cutoff in the future
            would remove a running writer's files).
    """
    for value in (older_than, orphan_older_than):
        if value is not None and not isinstance(value, timedelta | datetime):
            raise InvalidArgumentError(
                f"ages are timedelta or datetime values, not {type(value).__name__}"
            )
        if isinstance(value, timedelta) and value < timedelta(0):
            raise InvalidArgumentError(f"ages must not be negative, got {value}")
    now = datetime.now(UTC)
    for value in (older_than, orphan_older_than):
        if isinstance(value, datetime) and value.timestamp() > now.timestamp():
            raise InvalidArgumentError(
                f"a cutoff in the future ({value.isoformat()}) would remove a running "
                "writer's files; give a time in the past"
            )
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
            referenced |= referenced_files(manifest)
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
    # a directory's age is taken before its files go (removing one makes it new again)
    directory_ages: dict[str, float] = {}
    for path in candidates:
        if path in referenced:
            continue
        try:
            if storage.modified(path) >= orphan_cutoff:
                continue
            size = storage.size(path)
            parent = path.rpartition("/")[0]
            if storage.store.has_directories and parent not in directory_ages:
                directory_ages[parent] = storage.modified(parent)
        except FileNotFoundError:
            continue
        storage.remove(path)
        removed_files += 1
        removed_bytes += size
    # directories left empty (a write's data/{write_id}/, a dropped index's _indices/{uuid}/),
    # under the orphan rule: a writer may have just made one
    for directory in ("data", "_indices"):
        for path in storage.empty_directories(directory):
            try:
                age = directory_ages.get(path) or storage.modified(path)
            except FileNotFoundError:
                continue
            if age < orphan_cutoff:
                storage.remove_empty_directory(path)
    return {
        "versions_removed": len(doomed),
        "files_removed": removed_files,
        "bytes_removed": removed_bytes,
    }
