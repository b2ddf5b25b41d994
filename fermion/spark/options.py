"""The options of the ``fermion`` data source, parsed and checked once.

Spark hands a Python data source its options as a case-insensitive dict of strings
(``load(uri)`` / ``save(uri)`` put the location under ``path``). Unknown options are
errors, so a misspelt ``verison`` never silently reads the latest version.

The table's filesystem options (:class:`~fermion.table.ref.TableRef`) are given as
``option("storage_options.<name>", value)`` (string values; Spark lowercases option names)
or all at once as ``option("storage_options", '{"key": ..., "client_kwargs": {...}}')``, a
JSON object (any value types and case; the ``storage_options.<name>`` ones win). The
external manifest store is ``option("manifest_store", "postgresql://..." or a file path)``.
Both reach the executors inside the plan's ref: they never need an environment variable.

Example:
    >>> options = ReadOptions.parse({"path": "/t", "version": "3", "columns": "a, b"})
    >>> options.version, options.columns, options.filter
    (3, ('a', 'b'), None)
    >>> WriteOptions.parse({"path": "/t", "max_rows_per_file": "1000"}).max_rows_per_file
    1000
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fermion.errors import InvalidArgumentError
from fermion.spark.packing import MAX_PARTITION_BYTES_DEFAULT
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT
from fermion.table.ref import TableRef
from fermion.table.write_properties import WRITE_KEY_PREFIX, WriteProperties

__all__ = [
    "ROWS_PER_PARTITION_DEFAULT",
    "STORAGE_PREFIX",
    "ReadOptions",
    "WriteOptions",
    "table_options",
]

#: Options ``storage_options.<name>`` are options of the table's fsspec filesystem.
STORAGE_PREFIX = "storage_options."
_TABLE_KEYS = frozenset({"storage_options", "manifest_store"})

#: A fragment with more rows than this is read by several tasks, split between stripes.
ROWS_PER_PARTITION_DEFAULT = MAX_ROWS_PER_FILE_DEFAULT


def _uri(options: Mapping[str, str]) -> str:
    uri = options.get("path")
    if not uri:
        raise InvalidArgumentError("no table location: pass it to load(uri) / save(uri)")
    return uri


def _positive(options: Mapping[str, str], key: str, default: int) -> int:
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgumentError(f"option {key}={text!r} is not an integer") from None
    if value < 1:
        raise InvalidArgumentError(f"option {key}={text!r} must be at least 1")
    return value


def _storage_options(options: Mapping[str, str]) -> dict[str, Any]:
    """The filesystem options: the JSON object ``storage_options`` under the
    ``storage_options.<name>`` ones."""
    out: dict[str, Any] = {}
    text = options.get("storage_options")
    if text is not None:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise InvalidArgumentError(
                "option storage_options must be a JSON object (its text is not shown: it may "
                "hold credentials)"
            ) from None
        out.update(value)
    for key, value in options.items():
        if key.lower().startswith(STORAGE_PREFIX):
            name = key[len(STORAGE_PREFIX) :]
            if not name:
                raise InvalidArgumentError("option storage_options. needs a name after the dot")
            out[name] = value
    return out


def table_options(ref: TableRef) -> dict[str, str]:
    """The data source options that name ``ref``'s filesystem options and manifest store
    (none for a ref with neither).

    Example:
        >>> table_options(TableRef("/t", {"anon": True}, "/tmp/m.db"))
        {'storage_options': '{"anon": true}', 'manifest_store': '/tmp/m.db'}
    """
    out: dict[str, str] = {}
    if ref.storage_options:
        try:
            out["storage_options"] = json.dumps(dict(ref.storage_options), sort_keys=True)
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                "storage_options for Spark must be JSON values (strings, numbers, booleans, "
                "lists, objects)"
            ) from None
    store = ref.manifest_text()
    if store is not None:
        out["manifest_store"] = store
    return out


def _manifest_store(options: Mapping[str, str]) -> str | None:
    text = options.get("manifest_store")
    if text is not None and not text.strip():
        raise InvalidArgumentError("option manifest_store is empty: give a URL or a file path")
    return text


def _check_keys(options: Mapping[str, str], known: set[str], kind: str) -> None:
    known = known | _TABLE_KEYS
    unknown = sorted(
        k for k in options if k.lower() not in known and not k.lower().startswith(STORAGE_PREFIX)
    )
    if unknown:
        raise InvalidArgumentError(
            f"unknown {kind} option(s) {unknown}; the fermion source takes {sorted(known)} "
            f"and {STORAGE_PREFIX}<name>"
        )


class _OnTable:
    """The table handle of parsed options (driver side: the ``FERMION_MANIFEST_STORE``
    default is read here, never on an executor)."""

    uri: str
    storage_options: Mapping[str, Any]
    manifest_store: str | None

    @property
    def ref(self) -> TableRef:
        """The :class:`TableRef` of the table the options name."""
        return TableRef.of(
            self.uri, storage_options=self.storage_options, manifest_store=self.manifest_store
        )


@dataclass(frozen=True)
class ReadOptions(_OnTable):
    """``spark.read.format("fermion")`` options.

    Attributes:
        uri: The table location (``load(uri)``).
        version: Read this version (default: the latest).
        tag: Read the version this tag names.
        columns: Read only these columns (``columns="a,b"``), in this order; ``_rowid``
            among them reads each row's stable row id (a LongType; tables with row ids).
        rows_per_partition: Fragments with more rows are split between stripes into
            partitions of about this many rows.
        filter: A row condition in Spark SQL syntax, evaluated by Fermion
            (:func:`fermion.table.predicate.parse_predicate`) for every scan of this
            ``load()``: the frame holds only the rows where it is TRUE, and fragments,
            stripes, pages and bloom filters that rule it out are never read.
        max_partition_bytes: Small fragments are packed into partitions of up to about
            this many bytes (estimated; :mod:`fermion.spark.packing`).
        min_partitions: The parallelism packing aims for (default: the session's
            default parallelism when the source was registered by
            :func:`fermion.spark.register`, else no packing).
        unscaled_decimals: Decimal columns of at most 18 digits are read as LongType
            holding their unscaled values (``12.34`` in a ``decimal(15,2)`` as ``1234``):
            Spark turns every decimal the reader hands it into a Java ``BigDecimal``,
            which a long does not cost (docs/SPARK.md; :func:`fermion.spark.sql` uses
            it and restores the decimals in Spark).
        storage_options: The filesystem's options (see the module; hidden from ``repr``).
        manifest_store: The table's external manifest store.
    """

    uri: str
    version: int | None = None
    tag: str | None = None
    columns: tuple[str, ...] | None = None
    rows_per_partition: int = ROWS_PER_PARTITION_DEFAULT
    filter: str | None = None
    max_partition_bytes: int = MAX_PARTITION_BYTES_DEFAULT
    min_partitions: int | None = None
    unscaled_decimals: bool = False
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    manifest_store: str | None = field(default=None, repr=False)

    KEYS = frozenset({
        "path", "version", "tag", "columns", "rows_per_partition", "filter",
        "max_partition_bytes", "min_partitions", "unscaled_decimals",
    })  # fmt: skip

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Check and convert the options Spark passed.

        Raises:
            InvalidArgumentError: An unknown option, a bad version, both a version and a
                tag, an empty or repeated column name, an empty filter, an
                ``unscaled_decimals`` other than ``true`` or ``false``.
        """
        _check_keys(options, set(cls.KEYS), "read")
        version = None
        if options.get("version") is not None:
            version = _positive(options, "version", 0)
        tag = options.get("tag") or None
        if version is not None and tag is not None:
            raise InvalidArgumentError("give the option version or tag, not both")
        columns = None
        if options.get("columns") is not None:
            columns = tuple(c.strip() for c in options["columns"].split(","))
            if not all(columns):
                raise InvalidArgumentError(
                    f"option columns={options['columns']!r} has an empty name"
                )
            if len(set(columns)) != len(columns):
                raise InvalidArgumentError(f"option columns={options['columns']!r} repeats a name")
        unscaled = str(options.get("unscaled_decimals", "false")).strip().lower()
        if unscaled not in ("true", "false"):
            raise InvalidArgumentError(
                f"option unscaled_decimals={options['unscaled_decimals']!r}: give true or false"
            )
        text = options.get("filter")
        if text is not None and not text.strip():
            raise InvalidArgumentError("option filter is empty: give a SQL condition or none")
        return cls(
            uri=_uri(options),
            version=version,
            tag=tag,
            columns=columns,
            rows_per_partition=_positive(options, "rows_per_partition", ROWS_PER_PARTITION_DEFAULT),
            filter=text,
            max_partition_bytes=_positive(
                options, "max_partition_bytes", MAX_PARTITION_BYTES_DEFAULT
            ),
            min_partitions=(
                _positive(options, "min_partitions", 1)
                if options.get("min_partitions") is not None
                else None
            ),
            unscaled_decimals=unscaled == "true",
            storage_options=_storage_options(options),
            manifest_store=_manifest_store(options),
        )


@dataclass(frozen=True)
class WriteOptions(_OnTable):
    """``df.write.format("fermion")`` options.

    Attributes:
        uri: The table location (``save(uri)``).
        max_rows_per_file: Rows per data file (one fragment each).
        write_properties: Options ``fermion.write.<name>``: the table's write properties
            (docs/TABLE_FORMAT.md, "Write properties"), recorded when the write creates
            or overwrites the table; an append must give the table's own values.
        replace_where: With ``mode("overwrite")``: replace only the rows matching this
            Spark SQL condition, in one version (:mod:`fermion.table.update`); every new
            row must match it, or the write fails and commits nothing.
        storage_options: The filesystem's options (see the module; hidden from ``repr``).
        manifest_store: The table's external manifest store.
    """

    uri: str
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT
    write_properties: dict[str, str] = field(default_factory=dict)
    replace_where: str | None = None
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    manifest_store: str | None = field(default=None, repr=False)

    KEYS = frozenset({"path", "max_rows_per_file", "replace_where"})

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        """Check and convert the options Spark passed.

        Raises:
            InvalidArgumentError: An unknown option, a bad row count or an empty
                replace_where.
        """
        properties = {k: v for k, v in options.items() if k.lower().startswith(WRITE_KEY_PREFIX)}
        rest = {k: v for k, v in options.items() if k not in properties}
        _check_keys(rest, set(cls.KEYS), "write")
        WriteProperties.parse(properties)  # unknown names, bad values: before any task runs
        replace_where = options.get("replace_where")
        if replace_where is not None and not replace_where.strip():
            raise InvalidArgumentError("option replace_where is empty: give a SQL condition")
        return cls(
            uri=_uri(options),
            max_rows_per_file=_positive(options, "max_rows_per_file", MAX_ROWS_PER_FILE_DEFAULT),
            write_properties=properties,
            replace_where=replace_where,
            storage_options=_storage_options(options),
            manifest_store=_manifest_store(options),
        )
