"""Create, list, drop and refresh scalar indices (what the ``Dataset`` methods call).

A build reads the indexed column of the fragments, writes one index file under
``_indices/<uuid>/`` and commits a ``CreateIndex`` covering those fragments. If a concurrent
compaction removes some of them first, the commit is re-planned with a narrower coverage
(the file keeps their entries, which no scan uses: a scan only looks at covered fragments).
:func:`optimize_indices` indexes the fragments an index does not cover (appended, or written
by a compaction since the build): it merges the old file's entries of still-covered
fragments with the new ones into a new build of the same name.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> uri = tempfile.mkdtemp()
    >>> ds = ft.write_dataset(pa.table({"k": [1, 2]}), uri)
    >>> ds.create_index("k", "BTREE")
    >>> ds.append(pa.table({"k": [3]}))
    >>> [len(i.fragment_ids) for i in ds.indices()]
    [1]
    >>> ds.optimize_indices()
    >>> [len(i.fragment_ids) for i in ds.indices()]
    [2]
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence

import pyarrow as pa

from fermion.errors import ColumnNotFoundError, DatasetError, InvalidArgumentError
from fermion.table.commit import CommitConfig, CommitResult, commit_operation
from fermion.table.indices.build import collect_entries, write_index_file
from fermion.table.indices.lookup import index_column
from fermion.table.indices.model import (
    INDEX_LAYOUT_VERSION,
    IndexInfo,
    check_key_type,
    is_scalar_index,
)
from fermion.table.operations import CreateIndex, DropIndex
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.storage import TableStorage
from fermion.table.versions import schema_of

__all__ = [
    "build_index",
    "create_index",
    "drop_index",
    "finish_build",
    "list_indices",
    "narrowed",
    "optimize_indices",
]


def list_indices(manifest: pb.Manifest) -> list[IndexInfo]:
    """The indices of a version (scalar indices and the statistics rebuild)."""
    schema = schema_of(manifest)
    out = []
    for index in manifest.indices:
        column = index_column(index, schema)
        out.append(
            IndexInfo(
                name=index.name,
                kind=index.kind,
                columns=(column,) if column else (),
                fragment_ids=tuple(index.fragment_ids),
                uuid=index.uuid,
                dataset_version=index.dataset_version,
                files=tuple(index.files),
                num_entries=index.num_entries,
                size_bytes=index.size_bytes,
            )  # fmt: skip
        )
    return out


def build_index(
    storage: TableStorage,
    manifest: pb.Manifest,
    column: str,
    kind: str,
    name: str,
    fragments: Sequence[pb.Fragment],
    previous: pb.IndexMetadata | None = None,
) -> CreateIndex:
    """Write the index file over ``fragments`` (plus what ``previous`` covers that is
    still present) and return its ``CreateIndex``, planned on ``manifest``."""
    schema = schema_of(manifest)
    present = {f.id for f in manifest.fragments}
    keep: set[int] = set()
    old = None
    if previous is not None:
        keep = set(previous.fragment_ids) & present
        old = (list(previous.files), previous.kind, keep)
    entries = collect_entries(storage, schema, fragments, column, old, kind)
    covered = keep | {f.id for f in fragments}
    return finish_build(
        storage, manifest, column, kind, name, uuidlib.uuid4().hex, entries, covered
    )


def finish_build(
    storage: TableStorage,
    manifest: pb.Manifest,
    column: str,
    kind: str,
    name: str,
    build: str,
    entries: pa.Table,
    covered: set[int],
) -> CreateIndex:
    """Write the files of build ``build`` holding ``entries`` and return the
    ``CreateIndex`` covering ``covered``, planned on ``manifest``."""
    paths, size = write_index_file(storage, build, kind, entries)
    index = pb.IndexMetadata(
        uuid=build, name=name, kind=kind, field_ids=[schema_of(manifest).id_of(column)],
        fragment_ids=sorted(covered), dataset_version=manifest.version, files=paths,
        index_version=INDEX_LAYOUT_VERSION, num_entries=entries.num_rows, size_bytes=size,
    )  # fmt: skip
    return CreateIndex(index)


def narrowed(op: CreateIndex, manifest: pb.Manifest | None) -> CreateIndex:
    """``op`` re-planned on a newer manifest: it covers only fragments still there."""
    present = {f.id for f in manifest.fragments} if manifest is not None else set()
    index = pb.IndexMetadata()
    index.CopyFrom(op.index)
    del index.fragment_ids[:]
    index.fragment_ids.extend(i for i in op.index.fragment_ids if i in present)
    return CreateIndex(index)


def create_index(
    storage: TableStorage,
    manifest: pb.Manifest,
    column: str,
    kind: str,
    *,
    name: str | None = None,
    replace: bool = False,
    config: CommitConfig | None = None,
) -> CommitResult:
    """Build a ``kind`` index on ``column`` over every fragment of ``manifest``, commit it.

    Raises:
        ColumnNotFoundError: No such top-level column.
        InvalidArgumentError: An unknown kind, a column type the kind cannot key, or an
            index of that name already exists and ``replace`` is false.
    """
    schema = schema_of(manifest)
    if not isinstance(column, str) or schema.arrow.get_field_index(column) < 0:
        raise ColumnNotFoundError(f"no column named {column!r}")
    kind = kind.upper() if isinstance(kind, str) else kind
    check_key_type(kind, column, schema.arrow.field(column).type)
    name = name if name is not None else f"{column}_idx"
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError("an index name must be a non-empty string")
    if not replace and any(i.name == name for i in manifest.indices):
        raise InvalidArgumentError(f"index {name!r} exists; pass replace=True to rebuild it")
    op = build_index(storage, manifest, column, kind, name, list(manifest.fragments))
    return commit_operation(
        storage, op, read_version=manifest.version, config=config,
        planner=lambda latest: narrowed(op, latest),
    )  # fmt: skip


def drop_index(
    storage: TableStorage, manifest: pb.Manifest, name: str, *, config: CommitConfig | None = None
) -> CommitResult:
    """Commit a ``DropIndex``.

    Raises:
        DatasetError: The version has no index of that name.
    """
    if not any(i.name == name for i in manifest.indices):
        raise DatasetError(f"version {manifest.version} has no index named {name!r}")
    return commit_operation(storage, DropIndex(name), read_version=manifest.version, config=config)


def optimize_indices(
    storage: TableStorage, manifest: pb.Manifest, *, config: CommitConfig | None = None
) -> list[CommitResult]:
    """Index the fragments each scalar index does not cover yet (one commit per index
    that had some); the latest manifest is the last result's."""
    results: list[CommitResult] = []
    names = [i.name for i in manifest.indices if is_scalar_index(i)]
    for name in names:
        current = results[-1].manifest if results else manifest
        index = next((i for i in current.indices if i.name == name), None)
        schema = schema_of(current)
        column = index_column(index, schema) if index is not None else None
        if index is None or column is None:
            continue
        covered = set(index.fragment_ids)
        todo = [f for f in current.fragments if f.id not in covered]
        if not todo:
            continue
        op = build_index(storage, current, column, index.kind, name, todo, previous=index)
        results.append(
            commit_operation(
                storage,
                op,
                read_version=current.version,
                config=config,
                planner=lambda latest, op=op: narrowed(op, latest),  # type: ignore[misc]
            )  # fmt: skip
        )
    return results
