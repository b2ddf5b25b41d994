"""What every task module shares: opening the planned version, summarising a commit.

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table import write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"x": [1]}), uri)
    >>> storage, manifest = open_table(uri)
    >>> manifest.version
    1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fermion.errors import DatasetError
from fermion.table.codec import check_writer_flags
from fermion.table.commit import CommitResult
from fermion.table.manifest_store import ManifestStore
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.storage import TableStorage
from fermion.table.tasks.model import CommitSummary, FragmentInfo
from fermion.table.versions import latest_manifest, load_manifest

__all__ = ["fragment_groups", "open_table", "summarise"]


def fragment_groups(
    fragments: Sequence[pb.Fragment], per_task: int
) -> list[tuple[FragmentInfo, ...]]:
    """Committed ``fragments`` as plain data, ``per_task`` to a task, in order.

    Example:
        >>> [len(g) for g in fragment_groups([pb.Fragment(id=i) for i in range(5)], 2)]
        [2, 2, 1]
    """
    infos = [FragmentInfo.from_proto(f, committed=True) for f in fragments]
    return [tuple(infos[i : i + per_task]) for i in range(0, len(infos), per_task)]


def open_table(
    uri: Any, version: int | None = None, manifest_store: ManifestStore | None = None
) -> tuple[TableStorage, pb.Manifest]:
    """The table's storage and the manifest of ``version`` (default: the latest).

    Raises:
        DatasetError: No table at ``uri``, or no such version.
    """
    storage = TableStorage(uri, manifest_store=manifest_store)
    manifest = load_manifest(storage, version) if version else latest_manifest(storage)
    if manifest is None:
        raise DatasetError(f"{storage.uri}: not a Fermion table (no versions)")
    check_writer_flags(manifest)
    return storage, manifest


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
