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
from typing import Any

import pyarrow as pa

from fermion.errors import ColumnNotFoundError, DatasetError, InvalidArgumentError
from fermion.format import FileReader
from fermion.table.codec import as_fragment, as_table_version
from fermion.table.commit import CommitConfig, CommitResult, commit_operation, on_versions
from fermion.table.domain import Fragment, TableVersion
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
    IndexEntry,
    IndexInfo,
    as_index_entry,
    check_key_type,
    create_index_op,
    entry_of,
    index_info,
    indices_of,
    is_scalar_index,
    key_type_of,
)
from fermion.table.operations import CreateIndex, DropIndex
from fermion.table.storage import TableStorage

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


def list_indices(version: TableVersion | Any) -> list[IndexInfo]:
    """The indices of a version (scalar indices and the statistics rebuild).

    ``version`` is a :class:`~fermion.table.domain.TableVersion` (its manifest message
    is still accepted).

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"k": [1, 2]}), tempfile.mkdtemp())
        >>> ds.create_index("k", "BITMAP")
        >>> [(i.name, i.columns) for i in list_indices(ds.table_version)]
        [('k_idx', ('k',))]
    """
    version = as_table_version(version)
    schema = version.schema
    out = []
    for index in indices_of(version):
        column = index_column(index, schema)
        out.append(index_info(index, (column,) if column else ()))
    return out


def _committed(fragments: Sequence[Fragment | Any]) -> list[Fragment]:
    """Domain fragments of a version's ``fragments`` (manifest messages converted)."""
    return [as_fragment(f, committed=True) for f in fragments]


def build_index(
    storage: TableStorage,
    version: TableVersion | Any,
    column: str,
    kind: str,
    name: str,
    fragments: Sequence[Fragment | Any],
    previous: IndexEntry | Any | None = None,
) -> CreateIndex:
    """Write the index file over ``fragments`` (plus what ``previous`` covers that is
    still present) and return its ``CreateIndex``, planned on ``version`` (a
    :class:`~fermion.table.domain.TableVersion`, its fragments and index entry; manifest
    messages are still accepted)."""
    version = as_table_version(version)
    todo = _committed(fragments)
    present = {f.id for f in version.fragments}
    keep: set[int] = set()
    old = None
    if previous is not None:
        previous = as_index_entry(previous)
        keep = set(previous.fragment_ids) & present
        old = (list(previous.files), previous.kind, keep)
    entries = collect_entries(storage, version.schema, todo, column, old, kind)
    covered = keep | {f.id for f in todo if f.id is not None}
    return finish_build(storage, version, column, kind, name, uuidlib.uuid4().hex, entries, covered)


def finish_build(
    storage: TableStorage,
    version: TableVersion | Any,
    column: str,
    kind: str,
    name: str,
    build: str,
    entries: pa.Table,
    covered: set[int],
) -> CreateIndex:
    """Write the files of build ``build`` holding ``entries`` and return the
    ``CreateIndex`` covering ``covered``, planned on ``version`` (a
    :class:`~fermion.table.domain.TableVersion`; its manifest is still accepted)."""
    version = as_table_version(version)
    paths, size = write_index_file(storage, build, kind, entries)
    index = IndexEntry(
        uuid=build, name=name, kind=kind, field_ids=(version.schema.id_of(column),),
        fragment_ids=tuple(sorted(covered)), dataset_version=version.version,
        files=tuple(paths), index_version=INDEX_LAYOUT_VERSION,
        num_entries=entries.num_rows, size_bytes=size,
    )  # fmt: skip
    return create_index_op(index)


#: Entries files an index may have: an ``optimize_indices`` that would make more merges
#: them all into one build instead (a lookup searches each of them).
MAX_ENTRIES_FILES = 2


def _can_extend(
    storage: TableStorage, version: TableVersion, index: IndexEntry, key_type: pa.DataType
) -> bool:
    """Whether an ``optimize_indices`` on ``version`` may keep ``index``'s files and add a
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
    live = sum(f.physical_rows for f in version.fragments if f.id in covered)
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
    version: TableVersion | Any,
    column: str,
    previous: IndexEntry | Any,
    fragments: Sequence[Fragment | Any],
) -> CreateIndex:
    """A build of ``fragments`` alone (not covered by ``previous``) whose ``CreateIndex``
    keeps ``previous``'s files too: the index then covers what ``previous`` covers that is
    still present and ``fragments``, through the entries files of both builds.

    ``version`` is a :class:`~fermion.table.domain.TableVersion`, ``previous`` an
    :class:`~fermion.table.indices.model.IndexEntry` of it, ``fragments`` domain values
    (manifest messages are still accepted).

    Example:
        >>> import tempfile, pyarrow as pa, fermion.table as ft
        >>> ds = ft.write_dataset(pa.table({"k": [1, 2]}), tempfile.mkdtemp())
        >>> ds.create_index("k", "BTREE")
        >>> ds.append(pa.table({"k": [2]}))
        >>> version = ds.table_version
        >>> op = extend_index(ds.storage, version, "k", indices_of(version)[0],
        ...                   [ds.fragments[1]])
        >>> entry = entry_of(op)
        >>> len(entry.files), entry.num_entries, entry.fragment_ids
        (4, 3, (0, 1))
    """
    version = as_table_version(version)
    previous = as_index_entry(previous)
    todo = _committed(fragments)
    present = {f.id for f in version.fragments}
    entries = collect_entries(storage, version.schema, todo, column, None, previous.kind)
    build = uuidlib.uuid4().hex
    paths, size = write_index_file(storage, build, previous.kind, entries)
    covered = (set(previous.fragment_ids) & present) | {f.id for f in todo if f.id is not None}
    index = IndexEntry(
        uuid=build, name=previous.name, kind=previous.kind, field_ids=previous.field_ids,
        fragment_ids=tuple(sorted(covered)), dataset_version=version.version,
        files=(*previous.files, *paths), index_version=INDEX_LAYOUT_VERSION,
        num_entries=previous.num_entries + entries.num_rows,
        size_bytes=previous.size_bytes + size,
    )  # fmt: skip
    return create_index_op(index)


def narrowed(op: CreateIndex, version: TableVersion | Any | None) -> CreateIndex:
    """``op`` re-planned on a newer version (a
    :class:`~fermion.table.domain.TableVersion`; its manifest is still accepted): it covers
    only fragments still there.

    Example:
        >>> op = create_index_op(IndexEntry("a", "BTREE", (0,), (1, 2), uuid="u"))
        >>> entry_of(narrowed(op, None)).fragment_ids
        ()
    """
    present = {f.id for f in as_table_version(version).fragments} if version is not None else ()
    return create_index_op(entry_of(op).covering(present))


def create_index(
    storage: TableStorage,
    version: TableVersion | Any,
    column: str,
    kind: str,
    *,
    name: str | None = None,
    replace: bool = False,
    config: CommitConfig | None = None,
) -> CommitResult:
    """Build a ``kind`` index on ``column`` over every fragment of ``version`` (a
    :class:`~fermion.table.domain.TableVersion`; its manifest is still accepted), commit it.

    Raises:
        ColumnNotFoundError: No such top-level column.
        InvalidArgumentError: An unknown kind, a column type the kind cannot key, or an
            index of that name already exists and ``replace`` is false.
    """
    version = as_table_version(version)
    schema = version.schema
    if not isinstance(column, str) or schema.arrow.get_field_index(column) < 0:
        raise ColumnNotFoundError(f"no column named {column!r}")
    kind = kind.upper() if isinstance(kind, str) else kind
    check_key_type(kind, column, schema.arrow.field(column).type)
    name = name if name is not None else f"{column}_idx"
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError("an index name must be a non-empty string")
    if not replace and name in version.index_names:
        raise InvalidArgumentError(f"index {name!r} exists; pass replace=True to rebuild it")
    op = build_index(storage, version, column, kind, name, list(version.fragments))
    return commit_operation(
        storage, op, read_version=version.version, config=config,
        planner=on_versions(lambda latest: narrowed(op, latest)),
    )  # fmt: skip


def drop_index(
    storage: TableStorage,
    version: TableVersion | Any,
    name: str,
    *,
    config: CommitConfig | None = None,
) -> CommitResult:
    """Commit a ``DropIndex`` on ``version`` (a :class:`~fermion.table.domain.TableVersion`;
    its manifest is still accepted).

    Raises:
        DatasetError: The version has no index of that name.
    """
    version = as_table_version(version)
    if name not in version.index_names:
        raise DatasetError(f"version {version.version} has no index named {name!r}")
    return commit_operation(storage, DropIndex(name), read_version=version.version, config=config)


def optimize_indices(
    storage: TableStorage, version: TableVersion | Any, *, config: CommitConfig | None = None
) -> list[CommitResult]:
    """Index the fragments each scalar index does not cover yet (one commit per index
    that had some): a build of them alone keeping the index's files when
    :func:`_can_extend` allows, else a merge of every live entry into one build; the
    latest version is the last result's. ``version`` is a
    :class:`~fermion.table.domain.TableVersion` (its manifest is still accepted)."""
    version = as_table_version(version)
    results: list[CommitResult] = []
    names = [i.name for i in indices_of(version) if is_scalar_index(i)]
    for name in names:
        current = results[-1].table_version if results else version
        index = next((i for i in indices_of(current) if i.name == name), None)
        schema = current.schema
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
                planner=on_versions(lambda latest, op=op: narrowed(op, latest)),  # type: ignore[misc]
            )  # fmt: skip
        )
    return results
