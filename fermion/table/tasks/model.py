"""Plain data that crosses process boundaries: commit summaries, JSON helpers.

A Spark executor (or any worker process) returns what it wrote as
:class:`~fermion.table.domain.Fragment` values inside a task result; the driver commits
them. Every type here is a frozen dataclass that pickles and has a JSON form (fragments
through :mod:`fermion.table.codec`), so a result can travel through Spark rows, files or a
queue. ``DataFileInfo`` is the older name of ``DataFile``; ``FragmentInfo`` (deprecated,
:class:`fermion.table.codec.FragmentInfo`) is the ``Fragment`` subclass that keeps the
methods the class had before the domain model.

Example:
    >>> from fermion.table.domain import DataFile, Fragment
    >>> info = Fragment(None, (DataFile("data/a.fermion", (0, 1), 99),), physical_rows=3)
    >>> fragments_from_json(fragments_to_json([info]))[0].files == info.files
    True
"""

from __future__ import annotations

import base64
import json
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidArgumentError
from fermion.table.codec import (
    FragmentInfo,
    fragment_from_dict,
    fragment_to_dict,
    schema_from_bytes,
    schema_to_bytes,
)
from fermion.table.domain import DataFile, Fragment
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


#: The name plans used before :mod:`fermion.table.domain` (same class).
DataFileInfo = DataFile


def fragments_to_json(fragments: Sequence[Fragment]) -> list[dict[str, Any]]:
    """Fragments as JSON-ready dicts (:func:`~fermion.table.codec.fragment_to_dict`)."""
    return [fragment_to_dict(f) for f in fragments]


def fragments_from_json(values: Sequence[Mapping[str, Any]]) -> tuple[Fragment, ...]:
    """Inverse of :func:`fragments_to_json`."""
    return tuple(fragment_from_dict(v) for v in values)


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` with a typed error."""
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"not valid JSON: {exc}") from exc


def encode_schema(schema: TableSchema) -> dict[str, Any]:
    """A table schema (with field ids) as a JSON-ready dict."""
    return {
        "schema": base64.b64encode(schema_to_bytes(schema)).decode(),
        "max_field_id": schema.max_field_id,
    }


def decode_schema(value: Mapping[str, Any]) -> TableSchema:
    """Inverse of :func:`encode_schema`."""
    try:
        return schema_from_bytes(base64.b64decode(value["schema"]), int(value["max_field_id"]))
    except (KeyError, TypeError, ValueError) as exc:
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
