"""The table directory: paths, plain reads/writes, the atomic put, version manifests.

A table lives in one directory (local path, fsspec URL or ``(filesystem, path)``)::

    data/{uuid}.fermion                                  data files
    _versions/{version}.manifest                         one framed Manifest per version
    _transactions/{read_version}-{uuid}.txn              one framed Transaction per commit
    _deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}
    _indices/{uuid}/...                                  index / statistics files
    _refs/tags/{name}.json                               tags

Manifests are committed with put-if-absent (:mod:`fermion.io.atomic`) or, for object stores
without a conditional put, through an external manifest store
(:mod:`fermion.io.manifest_store`).

Example:
    >>> import tempfile
    >>> st = TableStorage(tempfile.mkdtemp())
    >>> st.latest_version() is None
    True
    >>> st.put_manifest(1, b"bytes")
    >>> st.latest_version(), st.read_manifest_bytes(1)
    (1, b'bytes')
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.io.atomic import put_if_absent, supports_put_if_absent
from fermion.io.manifest_store import ManifestStore, commit_external, resolve_external
from fermion.io.source import resolve
from fermion.table import _failpoints

__all__ = ["DIRECTORIES", "TableStorage", "manifest_name"]

DIRECTORIES = ("data", "_versions", "_transactions", "_deletions", "_indices", "_refs/tags")
_MANIFEST = re.compile(r"^(\d+)\.manifest$")


def manifest_name(version: int) -> str:
    """Relative path of a version's manifest.

    Example:
        >>> manifest_name(12)
        '_versions/12.manifest'
    """
    return f"_versions/{version}.manifest"


class TableStorage:
    """File operations relative to a table root, on the local disk or any fsspec store.

    Args:
        uri: Local path, fsspec URL, or ``(filesystem, path)``.
        manifest_store: Commit manifests through this external store instead of
            put-if-absent (required for stores without an atomic create).
    """

    def __init__(self, uri: Any, *, manifest_store: ManifestStore | None = None) -> None:
        if isinstance(uri, TableStorage):
            raise InvalidArgumentError("pass a URI, not a TableStorage")
        if isinstance(uri, tuple) and len(uri) == 2:
            fs, root = uri
        else:
            fs, root = resolve(uri if not isinstance(uri, Path) else str(uri))
        if isinstance(fs, LocalFileSystem):
            fs = None
        self.fs: fsspec.AbstractFileSystem | None = fs
        self.root: str = os.path.abspath(root) if fs is None else root.rstrip("/")
        self.uri: str = self.root if fs is None else f"{_protocol(fs)}://{self.root}"
        self.manifest_store = manifest_store
        if manifest_store is None and not supports_put_if_absent(fs):
            raise InvalidArgumentError(
                f"{self.uri}: this filesystem has no atomic put-if-absent; "
                "pass manifest_store=SQLiteManifestStore(...)"
            )
        self._dirs_ready = False

    # -- paths ------------------------------------------------------------------------------

    def path(self, relative: str) -> str:
        """Absolute path of ``relative`` (which uses ``/`` separators)."""
        if self.fs is None:
            return os.path.join(self.root, *relative.split("/"))
        return posixpath.join(self.root, relative)

    def target(self, relative: str) -> Any:
        """What :func:`fermion.format.write_table` / ``FileReader`` accept for ``relative``."""
        return self.path(relative) if self.fs is None else (self.fs, self.path(relative))

    def ensure_directories(self) -> None:
        """Create the table's sub-directories (idempotent, local filesystem only)."""
        if self._dirs_ready:
            return
        if self.fs is None:
            for name in DIRECTORIES:
                os.makedirs(self.path(name), exist_ok=True)
        self._dirs_ready = True

    def ensure_directory(self, relative: str) -> None:
        """Create a directory below the root (idempotent; object stores need none)."""
        self.ensure_directories()
        if self.fs is None:
            os.makedirs(self.path(relative), exist_ok=True)

    # -- plain file operations ----------------------------------------------------------------

    def read_bytes(self, relative: str) -> bytes:
        """Whole-file read; ``FileNotFoundError`` if absent."""
        if self.fs is None:
            with open(self.path(relative), "rb") as f:
                return f.read()
        return bytes(self.fs.cat_file(self.path(relative)))

    def write_bytes(self, relative: str, data: bytes) -> None:
        """Write a uniquely named file (not atomic: only for names nobody else uses)."""
        self.ensure_directories()
        if self.fs is None:
            with open(self.path(relative), "wb") as f:
                f.write(data)
        else:
            self.fs.pipe_file(self.path(relative), bytes(data))

    def exists(self, relative: str) -> bool:
        """Whether ``relative`` exists."""
        if self.fs is None:
            return os.path.exists(self.path(relative))
        return bool(self.fs.exists(self.path(relative)))

    def list_dir(self, relative: str) -> list[str]:
        """Base names in a directory (empty if it does not exist)."""
        if self.fs is None:
            try:
                return os.listdir(self.path(relative))
            except FileNotFoundError:
                return []
        try:
            return [
                posixpath.basename(p.rstrip("/"))
                for p in self.fs.ls(self.path(relative), detail=False)
            ]
        except FileNotFoundError:
            return []

    def list_tree(self, relative: str) -> list[str]:
        """Every file below a directory, as paths relative to the table root."""
        out: list[str] = []
        if self.fs is None:
            base = self.path(relative)
            for directory, _, files in os.walk(base):
                rel_dir = os.path.relpath(directory, self.root).replace(os.sep, "/")
                out.extend(f"{rel_dir}/{name}" for name in files)
            return out
        try:
            found = self.fs.find(self.path(relative))
        except FileNotFoundError:
            return []
        prefix = self.root.rstrip("/") + "/"
        return [p[len(prefix) :] if p.startswith(prefix) else p for p in found]

    def remove(self, relative: str) -> None:
        """Delete a file; a missing file is not an error."""
        try:
            if self.fs is None:
                os.unlink(self.path(relative))
            else:
                self.fs.rm_file(self.path(relative))
        except FileNotFoundError:
            pass

    def modified(self, relative: str) -> float:
        """Modification (or creation) time as seconds since the epoch."""
        if self.fs is None:
            return os.stat(self.path(relative)).st_mtime
        info = self.fs.info(self.path(relative))
        for key in ("mtime", "created", "LastModified"):
            value = info.get(key)
            if value is not None:
                return value.timestamp() if hasattr(value, "timestamp") else float(value)
        return float(self.fs.modified(self.path(relative)).timestamp())

    def size(self, relative: str) -> int:
        """Size in bytes."""
        if self.fs is None:
            return os.stat(self.path(relative)).st_size
        return int(self.fs.size(self.path(relative)))

    # -- versions -------------------------------------------------------------------------------

    def versions(self) -> list[int]:
        """Every version with a manifest in ``_versions/``, ascending."""
        found = []
        for name in self.list_dir("_versions"):
            match = _MANIFEST.match(name)
            if match:
                found.append(int(match.group(1)))
        return sorted(found)

    def latest_version(self) -> int | None:
        """The highest committed version, or ``None`` for a table without versions."""
        if self.manifest_store is not None:
            latest = self.manifest_store.latest_version(self.uri)
            if latest is not None:
                return latest
        versions = self.versions()
        return versions[-1] if versions else None

    def read_manifest_bytes(self, version: int) -> bytes:
        """The framed manifest of ``version`` (repairing an external-store commit first).

        Raises:
            DatasetError: The version does not exist.
        """
        if self.manifest_store is not None:
            resolve_external(self.manifest_store, self.uri, version, self._copy)
        try:
            return self.read_bytes(manifest_name(version))
        except FileNotFoundError:
            raise DatasetError(f"{self.uri}: version {version} does not exist") from None

    def put_manifest(self, version: int, data: bytes) -> None:
        """Commit point: make ``data`` the manifest of ``version``, or ``FileExistsError``."""
        self.ensure_directories()
        _failpoints.hit("before_manifest_put")
        if self.manifest_store is None:
            put_if_absent(self.fs, self.path(manifest_name(version)), data)
        else:
            commit_external(
                self.manifest_store,
                self.uri,
                version,
                self.path(manifest_name(version)),
                data,
                self._write_absolute,
                self._copy,
            )
        _failpoints.hit("after_manifest_put")

    def _write_absolute(self, path: str, data: bytes) -> None:
        if self.fs is None:
            with open(path, "wb") as f:
                f.write(data)
        else:
            self.fs.pipe_file(path, bytes(data))

    def _copy(self, source: str, destination: str) -> None:
        """Finalise a staged manifest; atomic where put-if-absent exists.

        Writer and repairing readers may finalise the same version at once; both copy the
        same staged bytes, so "already exists" is success. A plain copy would let one of them
        truncate the file while another reads it.
        """
        if supports_put_if_absent(self.fs):
            if self.fs is None:
                with open(source, "rb") as f:
                    data = f.read()
            else:
                data = bytes(self.fs.cat_file(source))
            try:
                put_if_absent(self.fs, destination, data)
            except FileExistsError:
                pass
        elif self.fs is not None:
            self.fs.copy(source, destination)


def _protocol(fs: fsspec.AbstractFileSystem) -> str:
    protocol = fs.protocol
    return protocol if isinstance(protocol, str) else protocol[0]
