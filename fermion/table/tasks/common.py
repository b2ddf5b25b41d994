"""What every task module shares: opening the planned version, summarising a commit, and
which files the table's versions reference (an abort removes only files none of them does).

:func:`open_ref` (defined in :mod:`fermion.table.ref`) and :func:`open_version` /
:func:`open_planned` (in :mod:`fermion.table.versions`, which reads the manifests) are
exported from here too.

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table import write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"x": [1]}), uri)
    >>> storage, manifest = open_version(uri)
    >>> storage.latest_version()
    1
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence

from fermion.deprecation import deprecated_alias
from fermion.table.commit import CommitResult
from fermion.table.domain import Fragment
from fermion.table.ref import open_ref
from fermion.table.storage import TableStorage
from fermion.table.tasks.model import CommitSummary
from fermion.table.versions import (
    VersionSummary,
    data_file_paths,
    manifests_after,
    open_planned,
    open_version,
    version_summary,
)

__all__ = [
    "data_files_of_versions",
    "fragment_groups",
    "open_planned",
    "open_ref",
    "open_version",
    "remove_unreferenced",
    "summarise",
]


def fragment_groups(fragments: Sequence[Fragment], per_task: int) -> list[tuple[Fragment, ...]]:
    """Committed ``fragments``, ``per_task`` to a task, in order (a manifest's messages
    become fragments through :func:`fermion.table.codec.fragments_from_messages`).

    Example:
        >>> from fermion.table.domain import Fragment
        >>> [len(g) for g in fragment_groups([Fragment(i, (), 1) for i in range(5)], 2)]
        [2, 2, 1]
    """
    return [tuple(fragments[i : i + per_task]) for i in range(0, len(fragments), per_task)]


#: Deprecated name of :func:`open_version` (it opened no table object, unlike ``dataset``).
open_table = deprecated_alias(
    open_version, "fermion.table.tasks.open_table", "fermion.table.tasks.open_version"
)


def summarise(
    result: CommitResult, read_version: int, *, committed: bool, skipped: Sequence[str] = ()
) -> CommitSummary:
    """A :class:`CommitSummary` of a commit result (``committed``: a new version was made)."""
    summary = version_summary(result.manifest)
    if not committed:  # the latest version, made by someone else: its counts are not ours
        summary = VersionSummary(summary.version)
    return CommitSummary(
        committed=committed,
        read_version=read_version,
        attempts=result.attempts,
        **dataclasses.asdict(summary),  # version, operation and the counts, same names
        skipped_tasks=tuple(skipped),
        recognised=result.recognised,
        rebased=result.rebased,
        replanned=result.replanned,
    )


def data_files_of_versions(storage: TableStorage, *, after: int = 0) -> Iterator[set[str]]:
    """The data file paths of each retained version above ``after``, one set per version.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> [len(files) for files in data_files_of_versions(ds.storage)]
        [1]
    """
    for manifest in manifests_after(storage, after):
        yield data_file_paths(manifest)


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
