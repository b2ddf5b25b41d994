"""The table's codec: domain values (:mod:`fermion.table.domain`) <-> protobuf messages.

Fragments, table schemas and table versions are converted here, and only here, between the
frozen domain values the rest of the table layer works with and the manifest messages
(docs/ARCHITECTURE.md, "Domain model and wire format"). The framing of the manifest and
transaction files is :mod:`fermion.table.framing`; its names are re-exported here.

Example:
    >>> from fermion.table.proto import manifest_pb2 as pb
    >>> data = encode_manifest(pb.Manifest(version=3))
    >>> decode_manifest(data, "3.manifest").version
    3
    >>> fragment_from_proto(pb.Fragment(id=1, physical_rows=2)).physical_rows
    2
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from fermion.deprecation import warn_deprecated
from fermion.errors import (
    InvalidArgumentError,
)
from fermion.table.domain import DataFile, Fragment, TableVersion
from fermion.table.framing import (
    FLAG_DELETION_FILES,
    FLAG_INDICES,
    FLAG_ROW_IDS,
    FLAG_WRITE_PROPERTIES,
    KNOWN_READER_FLAGS,
    KNOWN_WRITER_FLAGS,
    check_reader_flags,
    check_writer_flags,
    decode_manifest,
    decode_transaction,
    encode_manifest,
    encode_transaction,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.schema import TableSchema

__all__ = [
    "FLAG_DELETION_FILES",
    "FLAG_INDICES",
    "FLAG_ROW_IDS",
    "FLAG_WRITE_PROPERTIES",
    "FragmentInfo",
    "KNOWN_READER_FLAGS",
    "KNOWN_WRITER_FLAGS",
    "as_fragment",
    "as_table_version",
    "check_reader_flags",
    "check_writable",
    "check_writer_flags",
    "copy_manifest",
    "decode_manifest",
    "decode_transaction",
    "encode_manifest",
    "encode_transaction",
    "fragment_from_bytes",
    "fragment_from_dict",
    "fragment_from_proto",
    "fragment_message",
    "fragment_messages",
    "fragment_stats",
    "fragment_to_bytes",
    "fragment_to_dict",
    "fragment_to_proto",
    "fragment_views",
    "fragments_from_manifest",
    "fragments_from_messages",
    "has_deletion_file",
    "manifest_of",
    "new_fragment",
    "schema_from_bytes",
    "schema_to_bytes",
    "table_version",
]

# -- fragments: manifest message <-> domain value (fermion.table.domain) -------------------


def fragment_from_proto(message: pb.Fragment, *, committed: bool | None = None) -> Fragment:
    """The :class:`~fermion.table.domain.Fragment` of a manifest ``Fragment`` message.

    The value is a :class:`FragmentInfo` (a ``Fragment`` that also answers the methods
    ``FragmentInfo`` had before the domain model, with a ``DeprecationWarning``); it
    equals, hashes and pickles as the plain ``Fragment`` of the same fields would.

    Args:
        message: The message (read, not kept).
        committed: Whether ``message.id`` is meaningful (default: it is when the id is
            non-zero or the message has a deletion file).

    Example:
        >>> m = pb.Fragment(id=2, physical_rows=3)
        >>> _ = m.files.add(path="data/a.fermion", field_ids=[0], size_bytes=9)
        >>> f = fragment_from_proto(m)
        >>> f.id, f.files[0].path, f.live_rows
        (2, 'data/a.fermion', 3)
        >>> fragment_to_proto(f) == m
        True
    """
    has_deletions = message.HasField("deletion_file")
    if committed is None:
        committed = message.id != 0 or has_deletions
    return _wire_fragment(message, message.id if committed else None, has_deletions)


# The fields of a message read straight into a new value's ``__dict__``: what the
# generated ``__init__`` of the frozen dataclasses would store, without its per-field
# ``object.__setattr__`` calls (``Dataset.fragments`` converts every fragment of a version
# at once). Neither class has ``__post_init__`` or ``__slots__``.
_new = object.__new__


def _data_files(message: pb.Fragment) -> tuple[DataFile, ...]:
    files = []
    for f in message.files:
        data_file = _new(DataFile)
        data_file.__dict__.update(
            path=f.path,
            field_ids=tuple(f.field_ids),
            size_bytes=f.size_bytes,
            file_format=f.file_format or "fermion",
        )
        files.append(data_file)
    return tuple(files)


def _wire_fragment(message: pb.Fragment, fragment_id: int | None, deletions: bool) -> Fragment:
    fragment = _new(FragmentInfo)
    fragment.__dict__.update(
        id=fragment_id,
        files=_data_files(message),
        physical_rows=message.physical_rows,
        deleted_rows=message.deletion_file.num_deleted_rows if deletions else 0,
        # Not ``deterministic=True``: that option only orders map entries, and no message
        # a Fragment holds has a map field (tests/table/test_codec_fragments.py checks), so the
        # bytes are the same and the option's slower path buys nothing.
        message=message.SerializeToString(),
    )
    return fragment


def fragment_to_proto(fragment: Fragment) -> pb.Fragment:
    """The manifest ``Fragment`` message of ``fragment`` (a new message).

    A fragment built by hand (no :attr:`~fermion.table.domain.Fragment.message`) gets
    its id, files and row count; one read from a manifest gets its exact message back.

    Example:
        >>> from fermion.table.domain import DataFile, Fragment
        >>> m = fragment_to_proto(Fragment(None, (DataFile("data/a.fermion", (0,), 9),), 3))
        >>> m.physical_rows, m.files[0].path
        (3, 'data/a.fermion')
    """
    message = pb.Fragment()
    if fragment.message:
        message.ParseFromString(fragment.message)
        return message
    message.id = fragment.id or 0
    message.physical_rows = fragment.physical_rows
    for f in fragment.files:
        message.files.add(
            path=f.path, field_ids=f.field_ids, size_bytes=f.size_bytes, file_format=f.file_format
        )
    return message


def fragment_message(fragment: pb.Fragment | Fragment) -> pb.Fragment:
    """The manifest message of a fragment given either way (a message is returned as is).

    For the functions that read a fragment's files and accept both a ``Dataset.fragments``
    value and a manifest message.

    Example:
        >>> from fermion.table.domain import Fragment
        >>> fragment_message(Fragment(id=None, files=(), physical_rows=3)).physical_rows
        3
    """
    if isinstance(fragment, pb.Fragment):
        return fragment
    wire = fragment.__dict__.get("_wire")
    if wire is not None:
        return wire
    message = fragment_to_proto(fragment)
    if isinstance(fragment, FragmentInfo):  # read once: the value never changes
        fragment.__dict__["_wire"] = message
    return message


def fragment_messages(fragments: Iterable[Fragment]) -> tuple[pb.Fragment, ...]:
    """The manifest messages of fragments, for building an operation (a transaction
    message, :mod:`fermion.table.operations`) from domain values; the operation copies
    them.

    Example:
        >>> from fermion.table.domain import Fragment
        >>> [m.physical_rows for m in fragment_messages([Fragment(None, (), 3)])]
        [3]
    """
    return tuple(fragment_message(f) for f in fragments)


def as_fragment(fragment: pb.Fragment | Fragment, *, committed: bool | None = None) -> Fragment:
    """The :class:`~fermion.table.domain.Fragment` of a fragment given either way (a
    domain value is returned as is; a message becomes a value read from it when first
    used, as :func:`fragment_views` makes them, its id ``None`` when uncommitted).

    For the readers that take both: a caller holding manifest messages pays no
    conversion up front.

    Example:
        >>> f = as_fragment(pb.Fragment(id=3, physical_rows=2))
        >>> f.id, f.live_rows, fragment_message(f).id
        (3, 2, 3)
        >>> as_fragment(f) is f, as_fragment(pb.Fragment(physical_rows=1)).id is None
        (True, True)
    """
    if not isinstance(fragment, pb.Fragment):
        return fragment
    view = _new(_FragmentView)
    view.__dict__["_wire"] = fragment
    if committed is None:
        committed = bool(fragment.id) or fragment.HasField("deletion_file")
    if not committed:
        view.__dict__["id"] = None
    return view


def has_deletion_file(fragment: Fragment) -> bool:
    """Whether the fragment has a deletion file (whose rows readers must drop).

    Example:
        >>> from fermion.table.domain import Fragment
        >>> has_deletion_file(Fragment(None, (), 3))
        False
    """
    return fragment_message(fragment).HasField("deletion_file")


def new_fragment(files: Iterable[DataFile], physical_rows: int, stats: Iterable[Any]) -> Fragment:
    """A fragment just written (not committed: no id) with its files and the per-field
    statistics (``FieldStats`` messages, :mod:`fermion.table.stats`) gathered while they
    were written.

    Example:
        >>> from fermion.table.domain import DataFile
        >>> f = new_fragment([DataFile("data/a.fermion", (0,), 9)], 3, [])
        >>> f.id, f.physical_rows, fragment_message(f).files[0].path
        (None, 3, 'data/a.fermion')
    """
    message = pb.Fragment(physical_rows=physical_rows)
    for f in files:
        message.files.add(
            path=f.path, field_ids=f.field_ids, size_bytes=f.size_bytes, file_format=f.file_format
        )
    message.stats.extend(stats)
    fragment = fragment_from_proto(message, committed=False)
    fragment.__dict__["_wire"] = message  # what fragment_message gives (not read again)
    return fragment


def with_fragment_id(fragment: Fragment, fragment_id: int) -> Fragment:
    """A new fragment's files, rows and statistics under the id of a committed fragment:
    the entry an ``AddColumns`` gives that fragment (its new columns' file).

    Example:
        >>> from fermion.table.domain import DataFile
        >>> f = with_fragment_id(new_fragment([DataFile("data/c.fermion", (2,), 9)], 3, []), 5)
        >>> f.id, f.physical_rows, fragment_message(f).id
        (5, 3, 5)
    """
    message = pb.Fragment()
    message.CopyFrom(fragment_message(fragment))
    message.id = fragment_id
    return fragment_from_proto(message, committed=True)


def fragments_from_manifest(manifest: pb.Manifest) -> tuple[Fragment, ...]:
    """The committed fragments of a manifest, in its order.

    Example:
        >>> m = pb.Manifest(version=1)
        >>> _ = m.fragments.add(id=0, physical_rows=2)
        >>> [(f.id, f.physical_rows) for f in fragments_from_manifest(m)]
        [(0, 2)]
    """
    return tuple(_wire_fragment(f, f.id, f.HasField("deletion_file")) for f in manifest.fragments)


def fragments_from_messages(messages: Iterable[pb.Fragment]) -> tuple[Fragment, ...]:
    """Committed fragments of manifest messages (a version's, or a subset a plan picked),
    in order; what :func:`fragment_from_proto` with ``committed=True`` makes of each.

    Example:
        >>> m = pb.Manifest(version=1)
        >>> _ = m.fragments.add(id=3, physical_rows=2)
        >>> [(f.id, f.physical_rows) for f in fragments_from_messages(m.fragments)]
        [(3, 2)]
    """
    return tuple(_wire_fragment(f, f.id, f.HasField("deletion_file")) for f in messages)


def fragment_views(manifest: pb.Manifest) -> tuple[Fragment, ...]:
    """The committed fragments of a manifest, each converted when first read.

    What :attr:`Dataset.fragments <fermion.table.dataset.Dataset.fragments>` holds: making
    the values costs about what listing the messages does, and a fragment's fields are
    read from its message the first time any of them is read (then kept, as
    :func:`fragments_from_manifest` would have made them). The values equal, hash, print
    and pickle as those of :func:`fragments_from_manifest`. The manifest must not be
    changed in place while they live (a ``Dataset``'s own manifest never is).

    Example:
        >>> m = pb.Manifest(version=1)
        >>> _ = m.fragments.add(id=0, physical_rows=2)
        >>> fragment_views(m) == fragments_from_manifest(m)
        True
    """
    out = []
    for message in manifest.fragments:
        fragment = _new(_FragmentView)
        fragment.__dict__["_wire"] = message
        out.append(fragment)
    return tuple(out)


def fragment_stats(fragment: Fragment) -> list[pb.FieldStats]:
    """Per-field statistics recorded when the fragment was written (or rebuilt).

    Example:
        >>> from fermion.table.domain import Fragment
        >>> fragment_stats(Fragment(None, (), 0))
        []
    """
    return list(fragment_message(fragment).stats)


def fragment_to_bytes(fragment: Fragment) -> bytes:
    """Stable binary form: the committed flag (``C``/``N``) and the ``Fragment`` message.

    Example:
        >>> from fermion.table.domain import Fragment
        >>> f = Fragment(id=None, files=(), physical_rows=3)
        >>> fragment_from_bytes(fragment_to_bytes(f)).physical_rows
        3
    """
    flag = b"C" if fragment.id is not None else b"N"
    return flag + fragment_to_proto(fragment).SerializeToString(deterministic=True)


def fragment_from_bytes(data: bytes) -> Fragment:
    """Inverse of :func:`fragment_to_bytes`.

    Raises:
        InvalidArgumentError: Not the bytes of a fragment.

    Example:
        >>> fragment_from_bytes(b"x")
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidArgumentError: not the bytes of a Fragment
    """
    if not data or data[:1] not in (b"C", b"N"):
        raise InvalidArgumentError("not the bytes of a Fragment")
    message = pb.Fragment()
    try:
        message.ParseFromString(data[1:])
    except DecodeError as exc:
        raise InvalidArgumentError(f"not the bytes of a Fragment: {exc}") from exc
    return fragment_from_proto(message, committed=data[:1] == b"C")


def fragment_to_dict(fragment: Fragment) -> dict[str, Any]:
    """JSON-ready dict (protobuf's canonical JSON mapping of the message).

    Example:
        >>> import json
        >>> from fermion.table.domain import Fragment
        >>> f = Fragment(id=None, files=(), physical_rows=3)
        >>> fragment_from_dict(json.loads(json.dumps(fragment_to_dict(f)))).physical_rows
        3
    """
    return {
        "committed": fragment.id is not None,
        "fragment": json_format.MessageToDict(fragment_to_proto(fragment)),
    }


def fragment_from_dict(value: Mapping[str, Any]) -> Fragment:
    """Inverse of :func:`fragment_to_dict`.

    Raises:
        InvalidArgumentError: Not the dict of a fragment.

    Example:
        >>> fragment_from_dict({"fragment": {}})
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidArgumentError: not a Fragment dict: 'committed'
    """
    try:
        message = json_format.ParseDict(value["fragment"], pb.Fragment())
        committed = bool(value["committed"])
    except (KeyError, TypeError, json_format.ParseError) as exc:
        raise InvalidArgumentError(f"not a Fragment dict: {exc}") from exc
    return fragment_from_proto(message, committed=committed)


# -- FragmentInfo: the fragment class before the domain model, deprecated ----------------


@dataclass(frozen=True, eq=False, repr=False)
class FragmentInfo(Fragment):
    """Deprecated: a :class:`~fermion.table.domain.Fragment` with the methods the class
    had before the domain model; each warns with a ``DeprecationWarning`` and calls the
    codec function named in the warning.

    It lives here, not in :mod:`fermion.table.domain`, because its methods need the wire
    format (the domain model imports nothing of the codec). The fragments this module
    makes from messages (``Dataset.fragments``, task results, the bytes and JSON forms)
    are ``FragmentInfo`` values, so older code calling ``fragment.to_json()`` on them
    keeps working; they compare, hash and print as the ``Fragment`` of the same fields,
    and a hand-built ``Fragment`` equals them.

    Example:
        >>> import warnings
        >>> f = fragment_from_proto(pb.Fragment(id=1, physical_rows=2))
        >>> isinstance(f, Fragment), f == Fragment(1, (), 2, 0, f.message)
        (True, True)
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     f.to_proto().physical_rows, seen[0].category.__name__
        (2, 'DeprecationWarning')
    """

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fragment):
            return NotImplemented
        return _fields(self) == _fields(other)

    def __hash__(self) -> int:
        return Fragment.__hash__(self)

    def __repr__(self) -> str:
        return "Fragment" + Fragment.__repr__(self)[len(type(self).__qualname__) :]

    def __reduce__(self) -> tuple[Any, ...]:
        # the fields only: a message :func:`fragment_message` kept does not travel
        return FragmentInfo, _fields(self)

    @classmethod
    def from_proto(cls, message: pb.Fragment, *, committed: bool | None = None) -> Fragment:
        """Deprecated: :func:`fragment_from_proto`."""
        warn_deprecated("FragmentInfo.from_proto()", "fermion.table.codec.fragment_from_proto()")
        return fragment_from_proto(message, committed=committed)

    def to_proto(self) -> pb.Fragment:
        """Deprecated: :func:`fragment_to_proto`."""
        warn_deprecated("FragmentInfo.to_proto()", "fermion.table.codec.fragment_to_proto()")
        return fragment_to_proto(self)

    @property
    def stats(self) -> list[pb.FieldStats]:
        """Deprecated: :func:`fragment_stats`."""
        warn_deprecated("FragmentInfo.stats", "fermion.table.codec.fragment_stats()")
        return fragment_stats(self)

    def to_bytes(self) -> bytes:
        """Deprecated: :func:`fragment_to_bytes`."""
        warn_deprecated("FragmentInfo.to_bytes()", "fermion.table.codec.fragment_to_bytes()")
        return fragment_to_bytes(self)

    @classmethod
    def from_bytes(cls, data: bytes) -> Fragment:
        """Deprecated: :func:`fragment_from_bytes`."""
        warn_deprecated("FragmentInfo.from_bytes()", "fermion.table.codec.fragment_from_bytes()")
        return fragment_from_bytes(data)

    def to_dict(self) -> dict[str, Any]:
        """Deprecated: :func:`fragment_to_dict`."""
        warn_deprecated("FragmentInfo.to_dict()", "fermion.table.codec.fragment_to_dict()")
        return fragment_to_dict(self)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Fragment:
        """Deprecated: :func:`fragment_from_dict`."""
        warn_deprecated("FragmentInfo.from_dict()", "fermion.table.codec.fragment_from_dict()")
        return fragment_from_dict(value)

    def to_json(self) -> str:
        """Deprecated: ``json.dumps(fragment_to_dict(fragment), sort_keys=True)``."""
        warn_deprecated(
            "FragmentInfo.to_json()", "json.dumps(fermion.table.codec.fragment_to_dict())"
        )
        return json.dumps(fragment_to_dict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Fragment:
        """Deprecated: ``fragment_from_dict(json.loads(text))``.

        Raises:
            InvalidArgumentError: Not the JSON of a fragment.
        """
        warn_deprecated(
            "FragmentInfo.from_json()", "fermion.table.codec.fragment_from_dict(json.loads())"
        )
        try:
            value = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise InvalidArgumentError(f"not valid JSON: {exc}") from exc
        return fragment_from_dict(value)


def _read_id(message: pb.Fragment) -> Any:
    return message.id


def _read_rows(message: pb.Fragment) -> Any:
    return message.physical_rows


def _read_deleted(message: pb.Fragment) -> Any:
    return message.deletion_file.num_deleted_rows if message.HasField("deletion_file") else 0


def _read_files(message: pb.Fragment) -> Any:
    return _data_files(message)


def _read_bytes(message: pb.Fragment) -> Any:
    return message.SerializeToString()


class _Unread:
    """A field of a :class:`_FragmentView` not read from its message yet.

    A non-data descriptor: each field is read from the message (kept as ``_wire``) the
    first time it is used, alone (a scan's planning reads the row counts of every
    fragment, not their files), and stored in the view's ``__dict__``, where it shadows
    the descriptor: later reads cost what a plain dataclass attribute costs.
    """

    def __init__(self, read: Callable[[pb.Fragment], Any]) -> None:
        self.read = read

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, fragment: Any, owner: type | None = None) -> Any:
        if fragment is None:
            return self
        value = self.read(fragment.__dict__["_wire"])
        fragment.__dict__[self.name] = value
        return value


class _FragmentView(FragmentInfo):
    """A fragment of a manifest read from its message on first use
    (:func:`fragment_views`); made only there, with ``_wire`` in its ``__dict__``."""

    id = _Unread(_read_id)
    files = _Unread(_read_files)
    physical_rows = _Unread(_read_rows)
    deleted_rows = _Unread(_read_deleted)
    message = _Unread(_read_bytes)

    def __reduce__(self) -> tuple[Any, ...]:
        return FragmentInfo, _fields(self)


def _fields(fragment: Fragment) -> tuple[Any, ...]:
    return (
        fragment.id,
        fragment.files,
        fragment.physical_rows,
        fragment.deleted_rows,
        fragment.message,
    )


# -- table schemas: the manifest ``Schema`` message as bytes -------------------------------


def schema_to_bytes(schema: TableSchema) -> bytes:
    """The table schema's ``Schema`` message, serialized (its ``max_field_id`` aside).

    Example:
        >>> import pyarrow as pa
        >>> schema = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
        >>> schema_from_bytes(schema_to_bytes(schema), schema.max_field_id) == schema
        True
    """
    return schema.to_proto().SerializeToString(deterministic=True)


def schema_from_bytes(data: bytes, max_field_id: int) -> TableSchema:
    """Inverse of :func:`schema_to_bytes`.

    Raises:
        InvalidArgumentError: Not the bytes of a schema message.

    Example:
        >>> schema_from_bytes(b"\\xff", 0)
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidArgumentError: not an encoded table schema: Error parsing message...
    """
    message = pb.Schema()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise InvalidArgumentError(f"not an encoded table schema: {exc}") from exc
    return TableSchema.from_proto(message, max_field_id)


# -- table versions: the manifest message <-> TableVersion (fermion.table.domain) ----------


def table_version(manifest: pb.Manifest) -> TableVersion:
    """The :class:`~fermion.table.domain.TableVersion` of a manifest.

    Its number is read now; every other field (the fragments are
    :func:`fragment_views`) when first used, then kept.
    The manifest must not be changed in place while the handle lives (a ``Dataset``'s
    manifests never are). The handle pickles as the manifest's bytes.

    Example:
        >>> m = pb.Manifest(version=2, config={"fermion.batch_id_column": "b"})
        >>> _ = m.fragments.add(id=0, physical_rows=4)
        >>> v = table_version(m)
        >>> v.version, v.config["fermion.batch_id_column"], v.live_rows, v.has_row_ids
        (2, 'b', 4, False)
        >>> manifest_of(v) is m
        True
    """
    handle = _new(_WireVersion)
    handle.__dict__.update(_wire=manifest, version=manifest.version)
    return handle


def as_table_version(version: TableVersion | pb.Manifest) -> TableVersion:
    """A table version given either way (a handle is returned as is).

    For the functions whose callers passed the manifest message before the handle
    existed.

    Example:
        >>> v = as_table_version(pb.Manifest(version=4))
        >>> v.version, as_table_version(v) is v
        (4, True)
    """
    return version if isinstance(version, TableVersion) else table_version(version)


def manifest_of(version: TableVersion) -> pb.Manifest:
    """The manifest message a handle was read from (the same object: not to be changed).

    For the modules that still take the message (docs/ARCHITECTURE.md lists them).

    Raises:
        InvalidArgumentError: A handle built by hand, not read from a manifest.

    Example:
        >>> import pyarrow as pa
        >>> schema = TableSchema.from_arrow(pa.schema([("x", pa.int64())]))
        >>> manifest_of(TableVersion(1, schema, ()))
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidArgumentError: version 1 was not read from a manifest
    """
    wire = version.__dict__.get("_wire")
    if wire is None:
        raise InvalidArgumentError(f"version {version.version} was not read from a manifest")
    return wire


def check_writable(version: TableVersion) -> None:
    """Raise ``UnsupportedVersionError`` if writing on ``version`` needs writer features
    this library lacks (:func:`check_writer_flags` of its manifest; a handle built by hand
    needs none).

    Example:
        >>> check_writable(table_version(pb.Manifest(writer_feature_flags=1 << 40)))
        Traceback (most recent call last):
        ...
        fermion.errors.UnsupportedVersionError: manifest: unknown writer feature flags 0x10000000000
    """
    wire = version.__dict__.get("_wire")
    if wire is not None:
        check_writer_flags(wire)


def copy_manifest(manifest: pb.Manifest) -> pb.Manifest:
    """A copy of a manifest message (changing it changes nothing the original backs).

    Example:
        >>> m = pb.Manifest(version=2)
        >>> c = copy_manifest(m)
        >>> c == m, c is m
        (True, False)
    """
    copy = pb.Manifest()
    copy.CopyFrom(manifest)
    return copy


def _version_from_bytes(data: bytes) -> TableVersion:
    message = pb.Manifest()
    message.ParseFromString(data)
    return table_version(message)


class _Later:
    """A field of a :class:`_WireVersion` read from its manifest when first used (a
    non-data descriptor, as :class:`_Unread` for fragments)."""

    def __init__(self, read: Callable[[pb.Manifest], Any]) -> None:
        self.read = read

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, handle: Any, owner: type | None = None) -> Any:
        if handle is None:
            return self
        value = self.read(handle.__dict__["_wire"])
        handle.__dict__[self.name] = value
        return value


class _WireVersion(TableVersion):
    """A :class:`~fermion.table.domain.TableVersion` read from a manifest
    (:func:`table_version`); made only there, with ``_wire`` in its ``__dict__``."""

    schema = _Later(lambda m: TableSchema.from_proto(m.schema, m.max_field_id))
    next_row_id = _Later(lambda m: m.next_row_id)
    has_row_ids = _Later(lambda m: bool(m.reader_feature_flags & FLAG_ROW_IDS))
    transaction_file = _Later(lambda m: m.transaction_file)
    transaction_uuid = _Later(lambda m: m.transaction_uuid)
    operation = _Later(lambda m: m.summary.operation)
    timestamp_us = _Later(lambda m: m.timestamp_us)
    fragments = _Later(fragment_views)
    config = _Later(lambda m: dict(m.config))
    index_names = _Later(lambda m: tuple(i.name for i in m.indices))

    def __reduce__(self) -> tuple[Any, ...]:
        wire: pb.Manifest = self.__dict__["_wire"]
        return _version_from_bytes, (wire.SerializeToString(deterministic=True),)

    def __repr__(self) -> str:
        return f"TableVersion(version={self.version}, fragments={len(self.fragments)})"
