"""Table write properties: how every writer of a table writes its data files.

A table records them in its configuration map (the manifest's ``config``) under keys
``fermion.write.*`` (docs/TABLE_FORMAT.md, "Write properties"). They are set when the
table is created (``write_dataset(..., write_properties=...)``,
``plan_write(..., write_properties=...)``) or later by a configuration commit
(``Dataset.update_write_properties``, the ``UpdateConfig`` operation), and every writer of
the table reads them from the manifest it planned on: appends, Spark tasks, compaction,
materialisation, merge_insert, update and add_columns. A property a table does not record
is the file format's default (:class:`fermion.format.WriteOptions`).

=================================== ========================== ===============================
key                                 value                      ``WriteOptions`` field
=================================== ========================== ===============================
``fermion.write.bloom_filter_columns`` JSON list of column names ``bloom_filter_columns``
``fermion.write.compression``       ``zstd`` or ``none``       ``compression``
``fermion.write.compression_level`` integer in [-7, 22]        ``compression_level``
``fermion.write.page_size``         bytes, in [64, 1 GiB]      ``page_size``
``fermion.write.max_stripe_rows``   rows                       ``max_stripe_rows``
``fermion.write.max_stripe_bytes``  bytes                      ``max_stripe_bytes``
``fermion.write.batch_mode``        ``true`` or ``false``      (writes default to batch mode)
=================================== ========================== ===============================

``fermion.write.batch_mode = true``: a write that names no batch-id column writes in batch
mode by the table's recorded one (``fermion.batch_id_column``), so appends keep every
batch whole in one file (docs/FORMAT.md §11).

Example:
    >>> props = WriteProperties.parse({"compression": "none", "bloom_filter_columns": ["id"]})
    >>> props.to_config()
    {'fermion.write.bloom_filter_columns': '["id"]', 'fermion.write.compression': 'none'}
    >>> WriteProperties.from_config(props.to_config()) == props
    True
    >>> props.file_options(pa.schema([("id", pa.int64())]))
    {'bloom_filter_columns': ['id'], 'compression': 'none'}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import pyarrow as pa

from fermion.errors import InvalidArgumentError, UnsupportedTypeError
from fermion.format import WriteOptions
from fermion.format.encoding.bloom import bloom_supported

__all__ = ["WRITE_KEY_PREFIX", "WriteProperties", "write_properties_of"]

#: Table configuration keys with this prefix are write properties.
WRITE_KEY_PREFIX = "fermion.write."

_INTS = ("compression_level", "page_size", "max_stripe_rows", "max_stripe_bytes")
_BOOLS = {"true": True, "false": False}


@dataclass(frozen=True)
class WriteProperties:
    """A table's write properties; ``None`` (or no bloom columns): the format's default.

    Attributes:
        bloom_filter_columns: Columns whose pages get bloom filters (``==`` / ``isin``
            filters on high-cardinality keys read only the pages that may hold the value).
        compression: ``"zstd"`` or ``"none"``.
        compression_level: The zstd level.
        page_size: Target bytes of one page before compression.
        max_stripe_rows: A stripe is cut after this many rows.
        max_stripe_bytes: ... or once this many bytes of Arrow data are buffered.
        batch_mode: Writes that name no batch-id column write in batch mode by the table's
            recorded one.

    Raises:
        InvalidArgumentError: A value the file format refuses (checked by building its
            ``WriteOptions``), or of the wrong type.

    Example:
        >>> WriteProperties(page_size=1 << 16).to_config()
        {'fermion.write.page_size': '65536'}
        >>> WriteProperties(compression="lz4")
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidArgumentError: unknown compression 'lz4'
    """

    bloom_filter_columns: tuple[str, ...] = ()
    compression: str | None = None
    compression_level: int | None = None
    page_size: int | None = None
    max_stripe_rows: int | None = None
    max_stripe_bytes: int | None = None
    batch_mode: bool | None = None

    def __post_init__(self) -> None:
        columns = self.bloom_filter_columns
        if isinstance(columns, str) or not all(isinstance(c, str) and c for c in columns):
            raise InvalidArgumentError("bloom_filter_columns must be a list of column names")
        object.__setattr__(self, "bloom_filter_columns", tuple(dict.fromkeys(columns)))
        for name in _INTS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InvalidArgumentError(f"write property {name} must be an integer: {value!r}")
        if self.compression is not None and not isinstance(self.compression, str):
            raise InvalidArgumentError(f"compression must be a string: {self.compression!r}")
        if self.batch_mode is not None and not isinstance(self.batch_mode, bool):
            raise InvalidArgumentError(f"batch_mode must be a boolean: {self.batch_mode!r}")
        WriteOptions(**self.file_options(None))  # the format's own range checks

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The property names (the config keys without ``fermion.write.``)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def parse(cls, value: WriteProperties | Mapping[str, Any] | None) -> WriteProperties:
        """Properties from a ``WriteProperties``, ``None`` (none set) or a mapping of
        property names (or full ``fermion.write.*`` keys) to values, typed or as the
        configuration's text.

        Raises:
            InvalidArgumentError: An unknown property or a bad value.

        Example:
            >>> WriteProperties.parse({"fermion.write.page_size": "4096"}).page_size
            4096
        """
        if value is None:
            return cls()
        if isinstance(value, WriteProperties):
            return value
        if not isinstance(value, Mapping):
            raise InvalidArgumentError(
                f"write properties are a mapping or WriteProperties, not {type(value).__name__}"
            )
        return cls(**{name: _typed(name, raw) for name, raw in _by_name(value).items()})

    @classmethod
    def from_config(cls, config: Mapping[str, str], *, strict: bool = True) -> WriteProperties:
        """The properties a table configuration records (its other keys are ignored).

        Args:
            config: The manifest's ``config`` map.
            strict: Refuse ``fermion.write.*`` keys this library does not know (a table
                written by a newer library is read with ``strict=False``: they are skipped).

        Raises:
            InvalidArgumentError: An unknown key (when ``strict``) or a bad value.

        Example:
            >>> WriteProperties.from_config({"fermion.write.batch_mode": "true", "x": "1"})
            WriteProperties(bloom_filter_columns=(), compression=None, \
compression_level=None, page_size=None, max_stripe_rows=None, max_stripe_bytes=None, \
batch_mode=True)
        """
        known = set(cls.names())
        ours = {
            k[len(WRITE_KEY_PREFIX) :]: v
            for k, v in config.items()
            if k.startswith(WRITE_KEY_PREFIX)
        }
        if not strict:
            ours = {k: v for k, v in ours.items() if k in known}
        return cls.parse(ours)

    def to_config(self) -> dict[str, str]:
        """The configuration entries recording these properties (unset ones are absent)."""
        out: dict[str, str] = {}
        for name in self.names():
            value = getattr(self, name)
            if value is None or value == ():
                continue
            if name == "bloom_filter_columns":
                text = json.dumps(list(value))
            elif isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = str(value)
            out[WRITE_KEY_PREFIX + name] = text
        return out

    def updated(self, other: WriteProperties) -> WriteProperties:
        """These properties with every property ``other`` sets replaced by its value."""
        changes = {
            n: getattr(other, n) for n in self.names() if getattr(other, n) not in (None, ())
        }
        return replace(self, **changes)

    def file_options(self, schema: pa.Schema | None) -> dict[str, Any]:
        """Keyword options of ``FileWriter`` / ``write_table`` for a file of ``schema``.

        Bloom columns the schema lacks (dropped or renamed since they were set) are left
        out; ``schema=None`` keeps them all.
        """
        out: dict[str, Any] = {}
        if self.bloom_filter_columns:
            names = set(schema.names) if schema is not None else None
            blooms = [c for c in self.bloom_filter_columns if names is None or c in names]
            if blooms:
                out["bloom_filter_columns"] = blooms
        for name in ("compression", *_INTS):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    def check_schema(self, schema: pa.Schema) -> None:
        """Refuse bloom columns that are not flat columns of a supported type in ``schema``.

        Raises:
            InvalidArgumentError: A bloom column is not in the schema.
            UnsupportedTypeError: Its type has no bloom filters.
        """
        for name in self.bloom_filter_columns:
            index = schema.get_field_index(name)
            if index < 0:
                raise InvalidArgumentError(f"bloom filter column {name!r} is not in the table")
            if not bloom_supported(schema.field(index).type):
                raise UnsupportedTypeError(
                    f"no bloom filters for {name!r} of type {schema.field(index).type}"
                )


def write_properties_of(config: Mapping[str, str]) -> WriteProperties:
    """The write properties a table version records (unknown ``fermion.write.*`` keys of
    a newer library skipped).

    Example:
        >>> write_properties_of({"fermion.write.compression": "none"}).compression
        'none'
    """
    return WriteProperties.from_config(config, strict=False)


def _by_name(value: Mapping[str, Any]) -> dict[str, Any]:
    known = set(WriteProperties.names())
    out: dict[str, Any] = {}
    for key, raw in value.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"a write property name is a string, not {key!r}")
        name = key[len(WRITE_KEY_PREFIX) :] if key.startswith(WRITE_KEY_PREFIX) else key
        if name not in known:
            raise InvalidArgumentError(
                f"unknown write property {key!r} (known: {', '.join(sorted(known))})"
            )
        if name in out:
            raise InvalidArgumentError(f"write property {name!r} given twice")
        out[name] = raw
    return out


def _typed(name: str, raw: Any) -> Any:
    """A property's value from its configuration text (typed values pass through)."""
    if not isinstance(raw, str):
        return tuple(raw) if name == "bloom_filter_columns" and isinstance(raw, list) else raw
    if name == "bloom_filter_columns":
        try:
            names = json.loads(raw)
        except ValueError as exc:
            raise InvalidArgumentError(f"bloom_filter_columns is not a JSON list: {raw!r}") from exc
        if not isinstance(names, list):
            raise InvalidArgumentError(f"bloom_filter_columns is not a JSON list: {raw!r}")
        return tuple(names)
    if name in _INTS:
        try:
            return int(raw)
        except ValueError as exc:
            raise InvalidArgumentError(f"write property {name} is not an integer: {raw!r}") from exc
    if name == "batch_mode":
        if raw.lower() not in _BOOLS:
            raise InvalidArgumentError(f"batch_mode must be 'true' or 'false', not {raw!r}")
        return _BOOLS[raw.lower()]
    return raw
