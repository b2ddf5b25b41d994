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
from dataclasses import dataclass
from datetime import UTC, datetime

from fermion.errors import DatasetError, InvalidArgumentError, InvalidFileError
from fermion.table.codec import decode_manifest, decode_transaction, encode_transaction
from fermion.table.deletions import deletion_path
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.proto import transaction_pb2 as txpb
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage, manifest_name

__all__ = [
    "VersionInfo",
    "create_tag",
    "delete_tag",
    "latest_manifest",
    "list_tags",
    "load_manifest",
    "load_transaction",
    "referenced_files",
    "resolve_tag",
    "schema_of",
    "transaction_name",
    "version_info",
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
