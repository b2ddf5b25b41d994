"""What every task module shares: opening the planned version, summarising a commit, and
which files the table's versions reference (an abort removes only files none of them does).

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table import write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"x": [1]}), uri)
    >>> storage, manifest = open_version(uri)
    >>> manifest.version
    1
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from fermion.deprecation import deprecated_alias
from fermion.errors import DatasetError
from fermion.table.codec import check_writer_flags, fragment_from_proto
from fermion.table.commit import CommitResult
from fermion.table.domain import Fragment
from fermion.table.manifest_store import ManifestStore
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.ref import TableRef
from fermion.table.storage import TableStorage
from fermion.table.tasks.model import CommitSummary
from fermion.table.versions import latest_manifest, load_manifest

__all__ = [
    "data_files_of_versions",
    "fragment_groups",
    "open_planned",
    "open_ref",
    "open_version",
    "remove_unreferenced",
    "summarise",
]


def fragment_groups(fragments: Sequence[pb.Fragment], per_task: int) -> list[tuple[Fragment, ...]]:
    """Committed ``fragments`` as plain data, ``per_task`` to a task, in order.

    Example:
        >>> [len(g) for g in fragment_groups([pb.Fragment(id=i) for i in range(5)], 2)]
        [2, 2, 1]
    """
    infos = [fragment_from_proto(f, committed=True) for f in fragments]
    return [tuple(infos[i : i + per_task]) for i in range(0, len(infos), per_task)]


def open_ref(
    where: Any, manifest_store: ManifestStore | str | None = None
) -> tuple[TableRef, TableStorage]:
    """The ref of a table (a :class:`TableRef`, path or URL; ``manifest_store`` given by
    hand overrides the ref's) bound to its normalised URI and store, and its storage.

    Example:
        >>> import tempfile
        >>> ref, storage = open_ref(tempfile.mkdtemp())
        >>> ref.uri == storage.uri
        True
    """
    ref = TableRef.of(where, manifest_store=manifest_store)
    storage = ref.open()
    return ref.bound(storage), storage


def open_version(
    uri: Any, version: int | None = None, manifest_store: ManifestStore | None = None
) -> tuple[TableStorage, pb.Manifest]:
    """The table's storage and the manifest of ``version`` (default: the latest), checked
    writable by this library (``open_table`` before; not a ``Dataset``: see
    :func:`fermion.table.dataset`).

    Args:
        uri: A :class:`TableRef`, path or URL.
        version: The version (default: the latest).
        manifest_store: Overrides the ref's manifest store.

    Raises:
        DatasetError: No table at ``uri``, or no such version.
    """
    _, storage, manifest = open_planned(uri, version, manifest_store)
    return storage, manifest


def open_planned(
    where: Any, version: int | None = None, manifest_store: ManifestStore | str | None = None
) -> tuple[TableRef, TableStorage, pb.Manifest]:
    """:func:`open_version` with the bound ref a plan carries.

    Raises:
        DatasetError: No table at ``where``, or no such version.
    """
    ref, storage = open_ref(where, manifest_store)
    manifest = load_manifest(storage, version) if version else latest_manifest(storage)
    if manifest is None:
        raise DatasetError(f"{storage.uri}: not a Fermion table (no versions)")
    check_writer_flags(manifest)
    return ref, storage, manifest


#: Deprecated name of :func:`open_version` (it opened no table object, unlike ``dataset``).
open_table = deprecated_alias(
    open_version, "fermion.table.tasks.open_table", "fermion.table.tasks.open_version"
)


def summarise(
    result: CommitResult, read_version: int, *, committed: bool, skipped: Sequence[str] = ()
) -> CommitSummary:
    """A :class:`CommitSummary` of a commit result (``committed``: a new version was made)."""
    summary = result.manifest.summary if committed else pb.OperationSummary()
    return CommitSummary(
        committed=committed,
        version=result.manifest.version,
        read_version=read_version,
        attempts=result.attempts,
        operation=summary.operation,
        fragments_added=summary.added_fragments,
        fragments_removed=summary.removed_fragments,
        rows_added=summary.added_rows,
        rows_removed=summary.removed_rows,
        rows_deleted=summary.deleted_rows,
        skipped_tasks=tuple(skipped),
        recognised=result.recognised,
        rebased=result.rebased,
        replanned=result.replanned,
    )


def _manifests(storage: TableStorage, after: int) -> Iterator[pb.Manifest]:
    """The manifest of every retained version above ``after``, ascending.

    A version listed in ``_versions/`` and removed before it is read (a concurrent cleanup)
    is skipped; the versions an external manifest store holds beyond the listed ones are
    read through it.
    """
    listed = storage.versions()
    latest = storage.latest_version()
    versions = list(listed)
    if latest is not None:
        versions.extend(range((listed[-1] if listed else 0) + 1, latest + 1))
    for version in versions:
        if version <= after:
            continue
        try:
            yield load_manifest(storage, version)
        except DatasetError:
            continue  # removed since it was listed: it references nothing any more


def data_files_of_versions(storage: TableStorage, *, after: int = 0) -> Iterator[set[str]]:
    """The data file paths of each retained version above ``after``, one set per version.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> [len(files) for files in data_files_of_versions(ds.storage)]
        [1]
    """
    for manifest in _manifests(storage, after):
        yield {d.path for f in manifest.fragments for d in f.files}


def remove_unreferenced(storage: TableStorage, paths: Iterable[str]) -> int:
    """Remove each of ``paths`` that no retained version references; returns how many.

    A file a version references stays even when the caller wrote it and believes its write
    failed: the write may have committed, and a later rewrite may have replaced its
    fragments since, so only an older version still names the file.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> remove_unreferenced(ds.storage, [ds.fragments[0].files[0].path])
        0
    """
    wanted = set(paths)
    if not wanted:
        return 0
    referenced: set[str] = set()
    for files in data_files_of_versions(storage):
        referenced |= files & wanted
    doomed = sorted(wanted - referenced)
    for path in doomed:
        storage.remove(path)
    return len(doomed)
