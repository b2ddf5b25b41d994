"""Reading versions, transactions and tags of a table.

Example:
    >>> import tempfile
    >>> from fermion.table.storage import TableStorage
    >>> st = TableStorage(tempfile.mkdtemp())
    >>> latest_manifest(st) is None
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fermion.errors import DatasetError, InvalidArgumentError, InvalidFileError
from fermion.table.codec import (
    check_writer_flags,
    decode_manifest,
    decode_transaction,
    encode_transaction,
    table_version,
)
from fermion.table.deletions import deletion_path
from fermion.table.domain import TableVersion
from fermion.table.manifest_store import ManifestStore
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.proto import transaction_pb2 as txpb
from fermion.table.ref import TableRef, open_ref
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage, manifest_name

__all__ = [
    "VersionInfo",
    "VersionSummary",
    "create_tag",
    "data_file_paths",
    "delete_tag",
    "latest_manifest",
    "latest_table_version",
    "list_tags",
    "load_manifest",
    "load_table_version",
    "load_transaction",
    "manifests_after",
    "open_planned",
    "open_planned_version",
    "open_version",
    "referenced_files",
    "resolve_tag",
    "schema_of",
    "transaction_name",
    "version_info",
    "version_summary",
    "write_transaction",
]

_TAG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def load_manifest(storage: TableStorage, version: int) -> pb.Manifest:
    """Read and validate the manifest of ``version``.

    Raises:
        DatasetError: The version does not exist.
        InvalidFileError: The manifest is damaged (truncated, bad CRC, ...).
        UnsupportedVersionError: It needs reader features this library lacks.
    """
    data = storage.read_manifest_bytes(version)
    manifest = decode_manifest(data, storage.path(manifest_name(version)))
    if manifest.version != version:
        raise InvalidFileError(
            f"{storage.path(manifest_name(version))}: holds version {manifest.version}"
        )
    return manifest


def latest_manifest(storage: TableStorage) -> pb.Manifest | None:
    """The latest manifest, or ``None`` when the table has no version yet."""
    version = storage.latest_version()
    return None if version is None else load_manifest(storage, version)


def load_table_version(storage: TableStorage, version: int) -> TableVersion:
    """The :class:`~fermion.table.domain.TableVersion` of ``version``
    (:func:`load_manifest`, then :func:`~fermion.table.codec.table_version`).

    Raises:
        DatasetError: The version does not exist.
        InvalidFileError: The manifest is damaged.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> load_table_version(ds.storage, 1).live_rows
        1
    """
    return table_version(load_manifest(storage, version))


def latest_table_version(storage: TableStorage) -> TableVersion | None:
    """The latest :class:`~fermion.table.domain.TableVersion`, or ``None`` when the table
    has no version yet.

    Example:
        >>> import tempfile
        >>> latest_table_version(TableStorage(tempfile.mkdtemp())) is None
        True
    """
    manifest = latest_manifest(storage)
    return None if manifest is None else table_version(manifest)


def referenced_files(manifest: pb.Manifest) -> set[str]:
    """Every file of the table a version needs, relative to the table root: its
    transaction file, its fragments' data and deletion files, its indices' files.

    Example:
        >>> m = pb.Manifest(version=2, transaction_file="2-t.txn")
        >>> _ = m.fragments.add(id=0).files.add(path="data/a.fermion")
        >>> sorted(referenced_files(m))
        ['_transactions/2-t.txn', 'data/a.fermion']
    """
    files = {f"_transactions/{manifest.transaction_file}"} if manifest.transaction_file else set()
    for fragment in manifest.fragments:
        files.update(d.path for d in fragment.files)
        if fragment.HasField("deletion_file"):
            files.add(deletion_path(fragment.id, fragment.deletion_file))
    for index in manifest.indices:
        files.update(index.files)
    return files


def open_version(
    uri: Any, version: int | None = None, manifest_store: ManifestStore | None = None
) -> tuple[TableStorage, pb.Manifest]:
    """The table's storage and the manifest of ``version`` (default: the latest), checked
    writable by this library (``open_table`` before; not a ``Dataset``: see
    :func:`fermion.table.dataset`). Also :func:`fermion.table.tasks.open_version`.

    Args:
        uri: A :class:`TableRef`, path or URL.
        version: The version (default: the latest).
        manifest_store: Overrides the ref's manifest store.

    Raises:
        DatasetError: No table at ``uri``, or no such version.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> open_version(ds.uri)[1].version
        1
    """
    _, storage, manifest = open_planned(uri, version, manifest_store)
    return storage, manifest


def open_planned(
    where: Any, version: int | None = None, manifest_store: ManifestStore | str | None = None
) -> tuple[TableRef, TableStorage, pb.Manifest]:
    """:func:`open_version` with the bound ref a plan carries.

    Raises:
        DatasetError: No table at ``where``, or no such version.

    Example:
        >>> import tempfile
        >>> open_planned(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        fermion.errors.DatasetError: ...: not a Fermion table (no versions)
    """
    ref, storage = open_ref(where, manifest_store)
    manifest = load_manifest(storage, version) if version else latest_manifest(storage)
    if manifest is None:
        raise DatasetError(f"{storage.uri}: not a Fermion table (no versions)")
    check_writer_flags(manifest)
    return ref, storage, manifest


def open_planned_version(
    where: Any, version: int | None = None, manifest_store: ManifestStore | str | None = None
) -> tuple[TableRef, TableStorage, TableVersion]:
    """:func:`open_planned` with the version as a :class:`~fermion.table.domain.TableVersion`
    (what planners take).

    Raises:
        DatasetError: No table at ``where``, or no such version.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> open_planned_version(ds.uri)[2].version
        1
    """
    ref, storage, manifest = open_planned(where, version, manifest_store)
    return ref, storage, table_version(manifest)


def manifests_after(storage: TableStorage, after: int) -> Iterator[pb.Manifest]:
    """The manifest of every retained version above ``after``, ascending.

    A version listed in ``_versions/`` and removed before it is read (a concurrent cleanup)
    is skipped; the versions an external manifest store holds beyond the listed ones are
    read through it.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> ds.append(pa.table({"x": [2]}))
        >>> [m.version for m in manifests_after(ds.storage, 1)]
        [2]
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


def data_file_paths(manifest: pb.Manifest) -> set[str]:
    """The data files of a version's fragments, relative to the table root (no deletion,
    index or transaction files: see :func:`referenced_files` for those).

    Example:
        >>> m = pb.Manifest(version=2)
        >>> _ = m.fragments.add(id=0).files.add(path="data/a.fermion")
        >>> data_file_paths(m)
        {'data/a.fermion'}
    """
    return {d.path for f in manifest.fragments for d in f.files}


@dataclass(frozen=True)
class VersionSummary:
    """A version's number and what its manifest's summary records of the operation that
    made it (the counts are zero and the operation empty when not given).

    Attributes:
        version: The version.
        operation: ``append``, ``overwrite``, ``rewrite``, ``delete``, ...
        fragments_added / fragments_removed / rows_added / rows_removed / rows_deleted:
            The summary's counts.
    """

    version: int
    operation: str = ""
    fragments_added: int = 0
    fragments_removed: int = 0
    rows_added: int = 0
    rows_removed: int = 0
    rows_deleted: int = 0


def version_summary(manifest: pb.Manifest) -> VersionSummary:
    """The :class:`VersionSummary` of a manifest (no fragment is read: cheap on every
    commit, unlike :func:`version_info`).

    Example:
        >>> m = pb.Manifest(version=3)
        >>> m.summary.operation, m.summary.added_rows = "append", 5
        >>> s = version_summary(m)
        >>> s.version, s.operation, s.rows_added, s.rows_deleted
        (3, 'append', 5, 0)
    """
    s = manifest.summary
    return VersionSummary(
        version=manifest.version,
        operation=s.operation,
        fragments_added=s.added_fragments,
        fragments_removed=s.removed_fragments,
        rows_added=s.added_rows,
        rows_removed=s.removed_rows,
        rows_deleted=s.deleted_rows,
    )


def schema_of(manifest: pb.Manifest) -> TableSchema:
    """The table schema stored in a manifest."""
    return TableSchema.from_proto(manifest.schema, manifest.max_field_id)


def transaction_name(read_version: int, uuid: str) -> str:
    """File name of a transaction, relative to ``_transactions/``.

    Example:
        >>> transaction_name(4, "0f")
        '4-0f.txn'
    """
    return f"{read_version}-{uuid}.txn"


def write_transaction(storage: TableStorage, txn: txpb.Transaction) -> str:
    """Write a transaction file; returns its name relative to ``_transactions/``."""
    name = transaction_name(txn.read_version, txn.uuid)
    storage.write_bytes(f"_transactions/{name}", encode_transaction(txn))
    return name


def load_transaction(storage: TableStorage, name: str) -> txpb.Transaction:
    """Read a transaction file (``FileNotFoundError`` / ``InvalidFileError`` on failure)."""
    if not name:
        raise FileNotFoundError("the manifest names no transaction file")
    path = f"_transactions/{name}"
    return decode_transaction(storage.read_bytes(path), storage.path(path))


@dataclass(frozen=True)
class VersionInfo:
    """One line of a table's history."""

    version: int
    timestamp: datetime
    operation: str
    num_fragments: int
    num_rows: int
    summary: dict[str, int | str]
    tags: tuple[str, ...] = ()


def version_info(manifest: pb.Manifest, tags: tuple[str, ...] = ()) -> VersionInfo:
    """Summarise a manifest for ``versions()`` and ``fermion log``."""
    from fermion.table.transition import live_rows

    s = manifest.summary
    summary: dict[str, int | str] = {
        "added_fragments": s.added_fragments,
        "removed_fragments": s.removed_fragments,
        "added_files": s.added_files,
        "removed_files": s.removed_files,
        "added_rows": s.added_rows,
        "removed_rows": s.removed_rows,
        "deleted_rows": s.deleted_rows,
    }
    summary.update(dict(s.properties))
    return VersionInfo(
        version=manifest.version,
        timestamp=datetime.fromtimestamp(manifest.timestamp_us / 1e6, tz=UTC),
        operation=s.operation,
        num_fragments=len(manifest.fragments),
        num_rows=sum(live_rows(f) for f in manifest.fragments),
        summary=summary,
        tags=tags,
    )


# -- tags ---------------------------------------------------------------------------------------


def _tag_path(name: str) -> str:
    if not _TAG_NAME.match(name):
        raise InvalidArgumentError(f"invalid tag name {name!r}")
    return f"_refs/tags/{name}.json"


def create_tag(storage: TableStorage, name: str, version: int) -> None:
    """Pin ``version`` under ``name`` (atomic; an existing tag is an error)."""
    load_manifest(storage, version)  # the version must exist and be readable
    storage.ensure_directories()
    data = json.dumps({"version": version}).encode()
    try:
        storage.create_bytes(_tag_path(name), data)
    except FileExistsError:
        raise DatasetError(f"tag {name!r} already exists") from None


def delete_tag(storage: TableStorage, name: str) -> None:
    """Remove a tag."""
    if not storage.exists(_tag_path(name)):
        raise DatasetError(f"no tag named {name!r}")
    storage.remove(_tag_path(name))


def resolve_tag(storage: TableStorage, name: str) -> int:
    """The version a tag pins."""
    try:
        data = storage.read_bytes(_tag_path(name))
    except FileNotFoundError:
        raise DatasetError(f"no tag named {name!r}") from None
    try:
        version = json.loads(data)["version"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"tag {name!r} is damaged: {exc}") from exc
    if not isinstance(version, int) or version < 1:
        raise DatasetError(f"tag {name!r} is damaged: version {version!r}")
    return version


def list_tags(storage: TableStorage) -> dict[str, int]:
    """Every tag and the version it pins."""
    out = {}
    for file in storage.list_dir("_refs/tags"):
        if file.endswith(".json") and not file.startswith("."):
            out[file[: -len(".json")]] = resolve_tag(storage, file[: -len(".json")])
    return dict(sorted(out.items()))
