"""The table handle: everything a process needs to open a table, in one picklable value.

A :class:`TableRef` names a table (its URI), the filesystem options to reach it
(``storage_options``: an S3 key and secret, an endpoint, a region, ...) and the external
manifest store its commits go through (docs/TABLE_FORMAT.md, "put-if-absent per backend").
Plans and tasks (:mod:`fermion.table.tasks`) carry one; a worker calls :meth:`TableRef.open`
and gets the table's :class:`~fermion.table.storage.TableStorage` without reading any
environment variable.

Where the environment still counts: :meth:`TableRef.of`, called by the entry points on the
driver (``fermion.dataset``, ``write_dataset``, ``plan_*`` given a URI, the Spark data
source's options, the jobs, the CLI), takes the ``FERMION_MANIFEST_STORE`` environment
variable as the manifest store of a table on a filesystem without an atomic create when
none is given. The ref it returns carries that store; :meth:`TableRef.open` never looks at
the environment.

Credentials (docs/ARCHITECTURE.md, "The table handle"):

* ``repr`` and ``str`` show the option names, never their values, and a PostgreSQL
  manifest store without its password.
* The JSON form (:meth:`TableRef.to_dict`, used by the plans' ``to_json``) leaves out every
  option whose name looks like a credential (``key``, ``secret``, ``token``, ``password``,
  ...), at any depth, and the password of a PostgreSQL DSN: a ref read back from JSON gets
  them from the worker's environment (``AWS_*`` variables, an instance profile,
  ``PGPASSWORD``) or :meth:`TableRef.with_storage_options`.
* A pickle carries the options whole: that is how they reach Spark executors (inside the
  task's closure; enable ``spark.network.crypto.enabled`` to encrypt it on the wire). To keep
  credentials out of pickles, give none in ``storage_options`` and let the executors find
  them in their environment.

Example:
    >>> import pickle, tempfile, pyarrow as pa
    >>> from fermion.table import write_dataset
    >>> uri = tempfile.mkdtemp()
    >>> _ = write_dataset(pa.table({"x": [1]}), uri)
    >>> ref = TableRef.of(uri)
    >>> ref.open().latest_version()
    1
    >>> pickle.loads(pickle.dumps(ref)) == ref
    True
    >>> TableRef("s3://b/t", storage_options={"key": "AKIA", "secret": "s3cr3t"})
    TableRef('s3://b/t', storage_options=<key, secret>)
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import fsspec

from fermion.errors import InvalidArgumentError
from fermion.io.store import open_store
from fermion.table.manifest_store import (
    ENV_VAR,
    ManifestStore,
    PostgresManifestStore,
    SQLiteManifestStore,
)
from fermion.table.storage import TableStorage

__all__ = ["TableRef", "is_credential", "open_ref", "parse_storage_option", "ref_of"]

#: Option names that hold credentials: never shown, never in the JSON form.
_CREDENTIAL = re.compile(
    r"key|secret|token|password|passwd|credential|session|signature|sas|auth", re.IGNORECASE
)
_DSN_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


def is_credential(name: str) -> bool:
    """Whether a storage option name looks like a credential.

    Example:
        >>> is_credential("secret"), is_credential("aws_access_key_id"), is_credential("region")
        (True, True, False)
    """
    return _CREDENTIAL.search(name) is not None


def parse_storage_option(text: str) -> tuple[str, str]:
    """A ``KEY=VALUE`` setting (the CLI's ``--storage-option``) as a pair.

    Raises:
        InvalidArgumentError: No ``=`` or an empty key.

    Example:
        >>> parse_storage_option("endpoint_url=http://localhost:9000")
        ('endpoint_url', 'http://localhost:9000')
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise InvalidArgumentError(f"a storage option is KEY=VALUE, not {text!r}")
    return key.strip(), value


def _redacted(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` without credential-like entries, at any depth."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if is_credential(str(name)):
            continue
        out[name] = _redacted(value) if isinstance(value, Mapping) else value
    return out


def _store_text(store: ManifestStore | str | None, *, public: bool) -> str | None:
    """A manifest store as a setting string (``public``: without a password)."""
    if store is None:
        return None
    if isinstance(store, SQLiteManifestStore):
        return f"sqlite://{store.db_path}"
    if isinstance(store, PostgresManifestStore):
        store = store.dsn
    if isinstance(store, ManifestStore):
        if public:
            return repr(store)
        raise InvalidArgumentError(
            f"manifest store {type(store).__name__} has no text form: pass a URL or path"
        )
    if not public:
        return store
    if "://" in store:
        parts = urlsplit(store)
        if parts.password is not None:
            host = parts.netloc.rpartition("@")[2]
            user = parts.username or ""
            netloc = f"{user}@{host}"
            return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        return store
    return _DSN_PASSWORD.sub(r"\1***", store)


@dataclass(frozen=True)
class TableRef:
    """A frozen, picklable handle of one table: URI, filesystem options, manifest store.

    Attributes:
        uri: A local path or fsspec URL (``s3://bucket/t``, ``memory://t``, ...).
        storage_options: Keyword arguments of the URL's fsspec filesystem (for
            ``s3://``: ``key``, ``secret``, ``endpoint_url``, ``client_kwargs``, ...).
            Shown by name only; see the module docstring for how they travel.
        manifest_store: The table's external manifest store: a ``postgresql://`` URL, an
            SQLite file path (``sqlite://...``), a
            :class:`~fermion.table.manifest_store.ManifestStore`, or ``None`` (commits use
            the filesystem's put-if-absent).

    Raises:
        InvalidArgumentError: An empty URI, or options that are not a mapping with string
            keys.

    Example:
        >>> ref = TableRef("memory://doc-ref/t", manifest_store="postgresql://u:pw@db/meta")
        >>> ref
        TableRef('memory://doc-ref/t', manifest_store='postgresql://u@db/meta')
        >>> ref.to_dict()["manifest_store"]
        'postgresql://u@db/meta'
    """

    uri: str
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    manifest_store: ManifestStore | str | None = None
    #: A filesystem given by the caller, used by :meth:`open` in this process only (a
    #: pickle rebuilds it from ``uri`` and ``storage_options``).
    filesystem: fsspec.AbstractFileSystem | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.uri, Path):
            object.__setattr__(self, "uri", str(self.uri))
        if not isinstance(self.uri, str) or not self.uri:
            raise InvalidArgumentError(f"a table URI is a non-empty string, not {self.uri!r}")
        options = self.storage_options
        if options is None:
            options = {}
        if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
            raise InvalidArgumentError("storage_options is a mapping of option names to values")
        object.__setattr__(self, "storage_options", dict(options))

    @classmethod
    def of(
        cls,
        where: Any,
        *,
        storage_options: Mapping[str, Any] | None = None,
        manifest_store: ManifestStore | str | None = None,
    ) -> TableRef:
        """The ref of a table given as a ref, path, URL or ``(filesystem, path)`` pair (on
        the driver: this is where ``FERMION_MANIFEST_STORE`` is read, see the module).

        A ref given with ``storage_options`` or ``manifest_store`` gets them in place of its
        own. A filesystem's own ``storage_options`` become the ref's, so a worker rebuilds it.

        Raises:
            InvalidArgumentError: Not a table location.

        Example:
            >>> import fsspec
            >>> TableRef.of((fsspec.filesystem("memory"), "/t")).uri
            'memory:///t'
        """
        if isinstance(where, TableRef):
            ref = where
            if storage_options is not None:
                ref = ref.with_storage_options(storage_options)
            if manifest_store is not None:
                ref = replace(ref, manifest_store=manifest_store)
            return ref
        if isinstance(where, TableStorage):
            raise InvalidArgumentError("pass a URI or TableRef, not a TableStorage")
        filesystem = None
        if isinstance(where, tuple) and len(where) == 2:
            filesystem, path = where
            store, root = open_store(where)
            uri = store.uri(root)
            if storage_options is None:
                storage_options = dict(getattr(filesystem, "storage_options", None) or {})
        elif isinstance(where, str | Path):
            uri = str(where)
        else:
            raise InvalidArgumentError(f"expected a table path or URL, got {type(where).__name__}")
        ref = cls(uri, storage_options or {}, manifest_store, filesystem)
        if manifest_store is None and os.environ.get(ENV_VAR):
            if not ref.open_store_only().supports_put_if_absent:
                ref = replace(ref, manifest_store=os.environ[ENV_VAR])
        return ref

    def with_storage_options(self, options: Mapping[str, Any]) -> TableRef:
        """This ref with ``options`` over its storage options (a JSON form read back gets
        its credentials so)."""
        return replace(self, storage_options={**self.storage_options, **options}, filesystem=None)

    def _location(self) -> Any:
        """What :func:`~fermion.io.store.open_store` takes for this table."""
        if self.filesystem is not None:
            return (self.filesystem, self.filesystem._strip_protocol(self.uri))
        if not self.storage_options:
            return self.uri
        try:
            return fsspec.core.url_to_fs(self.uri, **self.storage_options)
        except Exception as exc:  # noqa: BLE001 - any backend's constructor; values unshown
            names = ", ".join(sorted(self.storage_options))
            raise InvalidArgumentError(
                f"{self.uri}: cannot open the filesystem with storage options <{names}>: "
                f"{type(exc).__name__}"
            ) from None

    def open_store_only(self) -> Any:
        """The :class:`~fermion.io.store.Store` of the table's filesystem."""
        return open_store(self._location())[0]

    def open(self) -> TableStorage:
        """The table's storage (no environment variable is read).

        Raises:
            InvalidArgumentError: The filesystem has no atomic create and the ref names no
                manifest store.
        """
        storage = TableStorage(
            self._location(), manifest_store=self.manifest_store, from_environment=False
        )
        storage.opened_from = self
        return storage

    def bound(self, storage: TableStorage) -> TableRef:
        """This ref with the normalised URI and the manifest store ``storage`` uses (what
        plans carry)."""
        store = self.manifest_store if self.manifest_store is not None else storage.manifest_store
        if self.filesystem is not None:
            return replace(self, manifest_store=store)
        return replace(self, uri=storage.uri, manifest_store=store)

    def manifest_text(self) -> str | None:
        """The manifest store as a setting string, password included (for an engine's
        options; ``None``: no store).

        Raises:
            InvalidArgumentError: A store object without a text form (a custom one).
        """
        return _store_text(self.manifest_store, public=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, without credentials (see the module docstring).

        Raises:
            InvalidArgumentError: The manifest store is an object other than the SQLite and
                PostgreSQL ones (it has no text form to read back).
        """
        store = self.manifest_store
        if isinstance(store, ManifestStore) and not isinstance(
            store, SQLiteManifestStore | PostgresManifestStore
        ):
            raise InvalidArgumentError(
                f"manifest store {type(store).__name__} has no JSON form: give it as a URL or path"
            )
        return {
            "uri": self.uri,
            "storage_options": _redacted(self.storage_options),
            "manifest_store": _store_text(self.manifest_store, public=True),
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | str) -> TableRef:
        """Inverse of :meth:`to_dict` (a plain URI string is accepted too)."""
        if isinstance(value, str):
            return cls(value)
        try:
            return cls(
                value["uri"],
                dict(value.get("storage_options") or {}),
                value.get("manifest_store"),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidArgumentError(f"not a TableRef: {exc}") from exc

    def __reduce__(self) -> tuple[Any, ...]:
        store = self.manifest_store
        return (TableRef, (self.uri, copy.deepcopy(dict(self.storage_options)), store))

    def __hash__(self) -> int:
        return hash((self.uri, tuple(sorted(self.storage_options)), repr(self.manifest_store)))

    def __repr__(self) -> str:
        parts = [repr(self.uri)]
        if self.storage_options:
            parts.append(f"storage_options=<{', '.join(sorted(self.storage_options))}>")
        if self.manifest_store is not None:
            parts.append(f"manifest_store={_store_text(self.manifest_store, public=True)!r}")
        return f"TableRef({', '.join(parts)})"

    __str__ = __repr__


def ref_of(storage: TableStorage) -> TableRef:
    """The ref of an open table: the one it was opened from, else one naming its URI, its
    filesystem (and that filesystem's options) and its manifest store.

    Example:
        >>> import tempfile
        >>> storage = TableStorage(tempfile.mkdtemp())
        >>> ref_of(storage).uri == storage.uri
        True
    """
    opened = getattr(storage, "opened_from", None)
    if isinstance(opened, TableRef):
        return opened.bound(storage)
    fs = storage.fs
    options = dict(getattr(fs, "storage_options", None) or {}) if fs is not None else {}
    return TableRef(storage.uri, options, storage.manifest_store, fs)


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
