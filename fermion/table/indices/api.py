"""Create, list, drop and refresh scalar indices (what the ``Dataset`` methods call).

A build reads the indexed column of the fragments, writes one index file under
``_indices/<uuid>/`` and commits a ``CreateIndex`` covering those fragments. If a concurrent
compaction removes some of them first, the commit is re-planned with a narrower coverage
(the file keeps their entries, which no scan uses: a scan only looks at covered fragments).
:func:`optimize_indices` indexes the fragments an index does not cover (appended, or written
by a compaction since the build) in a new build of the same name: a build of those
fragments alone that keeps the old build's files (:func:`extend_index`, while the index
has one entries file, mostly of fragments it still covers), else one merging the old
files' entries of still-covered fragments with the new ones (docs/TABLE_FORMAT.md,
"Coverage").

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
from fermion.format import FileReader
from fermion.table.codec import fragments_from_messages
from fermion.table.commit import CommitConfig, CommitResult, commit_operation
from fermion.table.indices.build import (
    collect_entries,
    fences_path,
    is_fences_path,
    write_index_file,
)
from fermion.table.indices.lookup import INDEX_READ_OPTIONS, index_column
from fermion.table.indices.model import (
    BITMAP,
    BTREE,
    INDEX_LAYOUT_VERSION,
    KEY,
    ROW_ADDRESS,
    IndexInfo,
    check_key_type,
    is_scalar_index,
    key_type_of,
)
from fermion.table.operations import CreateIndex, DropIndex
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.storage import TableStorage
from fermion.table.versions import schema_of

__all__ = [
    "MAX_ENTRIES_FILES",
    "build_index",
    "create_index",
    "drop_index",
    "extend_index",
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
    entries = collect_entries(
        storage, schema, fragments_from_messages(fragments), column, old, kind
    )
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


#: Entries files an index may have: an ``optimize_indices`` that would make more merges
#: them all into one build instead (a lookup searches each of them).
MAX_ENTRIES_FILES = 2


def _can_extend(
    storage: TableStorage, manifest: pb.Manifest, index: pb.IndexMetadata, key_type: pa.DataType
) -> bool:
    """Whether an ``optimize_indices`` on ``manifest`` may keep ``index``'s files and add a
    build of the uncovered fragments: a BTREE or BITMAP index (an entry per row) with fewer
    than :data:`MAX_ENTRIES_FILES` entries files, at least half of whose entries are of
    fragments it still covers (the others, of fragments a compaction or delete removed,
    are dropped by a full merge), each file (a BTREE's with its fences file) keyed by
    ``key_type`` (a column widened since a build needs its entries widened: a full merge)."""
    if index.kind not in (BTREE, BITMAP):
        return False
    entries = [p for p in index.files if not is_fences_path(p)]
    if not entries or len(entries) >= MAX_ENTRIES_FILES:
        return False
    covered = set(index.fragment_ids)
    live = sum(f.physical_rows for f in manifest.fragments if f.id in covered)
    if not live or 2 * live < index.num_entries:
        return False
    if index.kind == BTREE and any(fences_path(p) not in index.files for p in entries):
        return False
    for path in entries:
        with FileReader(storage.target(path), **INDEX_READ_OPTIONS) as reader:
            names = reader.schema.names
            if names[:2] != [KEY, ROW_ADDRESS]:
                return False
            if not reader.schema.field(KEY).type.equals(key_type):
                return False
    return True


def extend_index(
    storage: TableStorage,
    manifest: pb.Manifest,
    column: str,
    previous: pb.IndexMetadata,
    fragments: Sequence[pb.Fragment],
) -> CreateIndex:
    """A build of ``fragments`` alone (not covered by ``previous``) whose ``CreateIndex``
    keeps ``previous``'s files too: the index then covers what ``previous`` covers that is
    still present and ``fragments``, through the entries files of both builds.

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"k": [1, 2]}), tempfile.mkdtemp())
        >>> ds.create_index("k", "BTREE")
        >>> ds.append(pa.table({"k": [2]}))
        >>> op = extend_index(ds.storage, ds.manifest, "k", ds.manifest.indices[0],
        ...                   [ds.manifest.fragments[1]])
        >>> len(op.index.files), op.index.num_entries, list(op.index.fragment_ids)
        (4, 3, [0, 1])
    """
    present = {f.id for f in manifest.fragments}
    entries = collect_entries(
        storage, schema_of(manifest), fragments_from_messages(fragments), column, None,
        previous.kind,
    )  # fmt: skip
    build = uuidlib.uuid4().hex
    paths, size = write_index_file(storage, build, previous.kind, entries)
    covered = (set(previous.fragment_ids) & present) | {f.id for f in fragments}
    index = pb.IndexMetadata(
        uuid=build, name=previous.name, kind=previous.kind, field_ids=list(previous.field_ids),
        fragment_ids=sorted(covered), dataset_version=manifest.version,
        files=[*previous.files, *paths], index_version=INDEX_LAYOUT_VERSION,
        num_entries=previous.num_entries + entries.num_rows,
        size_bytes=previous.size_bytes + size,
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
    that had some): a build of them alone keeping the index's files when
    :func:`_can_extend` allows, else a merge of every live entry into one build; the
    latest manifest is the last result's."""
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
        key_type = key_type_of(index.kind, schema.arrow.field(column).type)
        if _can_extend(storage, current, index, key_type):
            op = extend_index(storage, current, column, index, todo)
        else:
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
