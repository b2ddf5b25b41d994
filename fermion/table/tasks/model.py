"""Plain data that crosses process boundaries: fragments, commit summaries, JSON helpers.

A Spark executor (or any worker process) returns what it wrote as :class:`FragmentInfo`
values inside a task result; the driver commits them. Every type here is a frozen
dataclass that pickles, and has a stable bytes form (protobuf, for fragments) and a JSON
form, so a result can travel through Spark rows, files or a queue.

Example:
    >>> from fermion.table.proto import manifest_pb2 as pb
    >>> message = pb.Fragment(physical_rows=3)
    >>> _ = message.files.add(path="data/a.fermion", field_ids=[0, 1], size_bytes=99)
    >>> info = FragmentInfo.from_proto(message)
    >>> info.files[0].path, info.physical_rows, info.live_rows
    ('data/a.fermion', 3, 3)
    >>> FragmentInfo.from_json(info.to_json()) == info
    True
    >>> FragmentInfo.from_bytes(info.to_bytes()) == info
    True
"""

from __future__ import annotations

import base64
import json
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import json_format
from google.protobuf.message import DecodeError

from fermion.errors import InvalidArgumentError
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.ref import TableRef
from fermion.table.schema import TableSchema
from fermion.table.write_properties import WriteProperties

__all__ = [
    "CommitSummary",
    "DataFileInfo",
    "FragmentInfo",
    "JsonMixin",
    "OnTable",
    "check_arrow_schema",
    "decode_expression",
    "decode_schema",
    "encode_expression",
    "encode_schema",
    "fragments_from_json",
    "fragments_to_json",
    "loads_json",
    "tasks_codec",
]


@dataclass(frozen=True)
class DataFileInfo:
    """One data file of a fragment (path relative to the table root)."""

    path: str
    field_ids: tuple[int, ...]
    size_bytes: int
    file_format: str = "fermion"


@dataclass(frozen=True)
class FragmentInfo:
    """A fragment as plain data: what a worker wrote, or what the manifest holds.

    Attributes:
        id: The fragment id (``None`` for a fragment not committed yet: ids are assigned
            by the commit).
        files: Its data files.
        physical_rows: Rows in the data files, deleted ones included.
        deleted_rows: Rows marked deleted by its deletion file (0 without one).
        message: The exact manifest message (statistics, deletion file, ...); the fields
            above are read from it.
    """

    id: int | None
    files: tuple[DataFileInfo, ...]
    physical_rows: int
    deleted_rows: int
    message: bytes = field(repr=False)

    @classmethod
    def from_proto(cls, message: pb.Fragment, *, committed: bool | None = None) -> FragmentInfo:
        """Wrap a manifest ``Fragment`` message (copied).

        ``committed`` says whether ``message.id`` is meaningful (default: it is when the
        id is non-zero or the message has a deletion file).
        """
        if committed is None:
            committed = message.id != 0 or message.HasField("deletion_file")
        files = tuple(
            DataFileInfo(f.path, tuple(f.field_ids), f.size_bytes, f.file_format or "fermion")
            for f in message.files
        )
        deleted = message.deletion_file.num_deleted_rows if message.HasField("deletion_file") else 0
        return cls(
            id=message.id if committed else None,
            files=files,
            physical_rows=message.physical_rows,
            deleted_rows=deleted,
            message=message.SerializeToString(deterministic=True),
        )

    def to_proto(self) -> pb.Fragment:
        """The manifest ``Fragment`` message."""
        message = pb.Fragment()
        message.ParseFromString(self.message)
        return message

    @property
    def live_rows(self) -> int:
        """Rows not deleted."""
        return self.physical_rows - self.deleted_rows

    @property
    def stats(self) -> list[pb.FieldStats]:
        """Per-field statistics recorded when the fragment was written (or rebuilt)."""
        return list(self.to_proto().stats)

    def to_bytes(self) -> bytes:
        """Stable binary form: the protobuf ``Fragment`` message plus the committed flag."""
        return (b"C" if self.id is not None else b"N") + self.message

    @classmethod
    def from_bytes(cls, data: bytes) -> FragmentInfo:
        """Inverse of :meth:`to_bytes`.

        Raises:
            InvalidArgumentError: Not the bytes of a fragment.
        """
        if not data or data[:1] not in (b"C", b"N"):
            raise InvalidArgumentError("not the bytes of a FragmentInfo")
        message = pb.Fragment()
        try:
            message.ParseFromString(data[1:])
        except DecodeError as exc:
            raise InvalidArgumentError(f"not the bytes of a FragmentInfo: {exc}") from exc
        return cls.from_proto(message, committed=data[:1] == b"C")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (protobuf's canonical JSON mapping of the message)."""
        return {
            "committed": self.id is not None,
            "fragment": json_format.MessageToDict(self.to_proto()),
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> FragmentInfo:
        """Inverse of :meth:`to_dict`."""
        try:
            message = json_format.ParseDict(value["fragment"], pb.Fragment())
            committed = bool(value["committed"])
        except (KeyError, TypeError, json_format.ParseError) as exc:
            raise InvalidArgumentError(f"not a FragmentInfo dict: {exc}") from exc
        return cls.from_proto(message, committed=committed)

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> FragmentInfo:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(loads_json(text))


def fragments_to_json(fragments: Sequence[FragmentInfo]) -> list[dict[str, Any]]:
    """Fragments as JSON-ready dicts."""
    return [f.to_dict() for f in fragments]


def fragments_from_json(values: Sequence[Mapping[str, Any]]) -> tuple[FragmentInfo, ...]:
    """Inverse of :func:`fragments_to_json`."""
    return tuple(FragmentInfo.from_dict(v) for v in values)


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` with a typed error."""
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"not valid JSON: {exc}") from exc


def encode_schema(schema: TableSchema) -> dict[str, Any]:
    """A table schema (with field ids) as a JSON-ready dict."""
    return {
        "schema": base64.b64encode(schema.to_proto().SerializeToString()).decode(),
        "max_field_id": schema.max_field_id,
    }


def decode_schema(value: Mapping[str, Any]) -> TableSchema:
    """Inverse of :func:`encode_schema`."""
    message = pb.Schema()
    try:
        message.ParseFromString(base64.b64decode(value["schema"]))
        return TableSchema.from_proto(message, int(value["max_field_id"]))
    except (KeyError, TypeError, ValueError, DecodeError) as exc:
        raise InvalidArgumentError(f"not an encoded table schema: {exc}") from exc


def encode_expression(expression: pc.Expression | None) -> str | None:
    """A pyarrow compute expression as text (base64 of its pickle; ``None`` stays None)."""
    if expression is None:
        return None
    return base64.b64encode(pickle.dumps(expression)).decode()


def decode_expression(text: str | None) -> pc.Expression | None:
    """Inverse of :func:`encode_expression` (only ever fed text this library wrote)."""
    if text is None:
        return None
    try:
        value = pickle.loads(base64.b64decode(text))
    except Exception as exc:
        raise InvalidArgumentError(f"not an encoded expression: {exc}") from exc
    if not isinstance(value, pc.Expression):
        raise InvalidArgumentError("not an encoded expression")
    return value


Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]

#: Codecs of field kinds that JSON does not carry as they are.
SCHEMA: Codec = (encode_schema, decode_schema)
FRAGMENTS: Codec = (fragments_to_json, fragments_from_json)
EXPRESSION: Codec = (encode_expression, decode_expression)
INTS: Codec = (list, lambda v: tuple(int(i) for i in v))
STRS: Codec = (list, lambda v: tuple(str(i) for i in v))
#: A table handle as its credential-free JSON form (a bare URI string is read too).
REF: Codec = (lambda r: r.to_dict(), TableRef.from_dict)
#: Write properties as their table configuration entries.
PROPERTIES: Codec = (
    lambda p: p.to_config(),
    lambda v: WriteProperties.from_config(v, strict=False),
)


def tasks_codec(cls: Any) -> Codec:
    """The codec of a field holding a tuple of ``cls`` values (a plan's tasks)."""
    return (
        lambda tasks: [t.to_dict() for t in tasks],
        lambda values: tuple(cls.from_dict(v) for v in values),
    )


class JsonMixin:
    """``to_dict``/``from_dict``/``to_json``/``from_json`` for a frozen dataclass.

    Fields named in ``_codecs`` go through their (encode, decode) pair; the others must be
    JSON values already.
    """

    _codecs: ClassVar[dict[str, Codec]] = {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        out = {}
        for item in fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            codec = self._codecs.get(item.name)
            out[item.name] = codec[0](value) if codec is not None else value
        return out

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Any:
        """Inverse of :meth:`to_dict`."""
        try:
            kwargs = {}
            for item in fields(cls):  # type: ignore[arg-type]
                if item.name == "table" and "table" not in value and "uri" in value:
                    raw = value["uri"]  # the JSON form before plans carried a TableRef
                else:
                    raw = value[item.name]
                codec = cls._codecs.get(item.name)
                kwargs[item.name] = codec[1](raw) if codec is not None else raw
            return cls(**kwargs)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"not a {cls.__name__}: {exc}") from exc

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Any:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(loads_json(text))


class OnTable:
    """For a plan or task dataclass whose field ``table`` is the :class:`TableRef` of its
    table: a URI string given there becomes a ref, and ``uri`` is the ref's."""

    table: TableRef

    def __post_init__(self) -> None:
        if not isinstance(self.table, TableRef):
            object.__setattr__(self, "table", TableRef(self.table))

    @property
    def uri(self) -> str:
        """The table location (``table.uri``)."""
        return self.table.uri


@dataclass(frozen=True)
class CommitSummary:
    """What a ``commit_*`` call did.

    Attributes:
        committed: Whether a new version was made (``False``: nothing to commit).
        version: The table version after the call (the new one when ``committed``).
        read_version: The version the work was planned on (0: no table yet).
        attempts: Manifest puts tried.
        operation: ``append``, ``overwrite``, ``rewrite``, ``delete`` or ``create_index``.
        fragments_added / fragments_removed / rows_added / rows_removed / rows_deleted:
            From the new version's summary.
        skipped_tasks: Task ids dropped because a concurrent commit made them wrong (they
            can be planned again on the new version).
        recognised: An earlier attempt whose outcome was unknown had in fact committed.
        rebased / replanned: How often the commit merged concurrent deletes / planned the
            operation again on a newer version.
    """

    committed: bool
    version: int
    read_version: int
    attempts: int = 0
    operation: str = ""
    fragments_added: int = 0
    fragments_removed: int = 0
    rows_added: int = 0
    rows_removed: int = 0
    rows_deleted: int = 0
    skipped_tasks: tuple[str, ...] = ()
    recognised: bool = False
    rebased: int = 0
    replanned: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        out = dict(self.__dict__)
        out["skipped_tasks"] = list(self.skipped_tasks)
        return out


def check_arrow_schema(value: Any) -> pa.Schema:
    """``value`` if it is an Arrow schema, else a typed error."""
    if not isinstance(value, pa.Schema):
        raise InvalidArgumentError(f"expected a pyarrow.Schema, got {type(value).__name__}")
    return value
