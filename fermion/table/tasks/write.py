"""Distributed writes: plan on the driver, write fragments anywhere, commit on the driver.

``plan_write`` reads the table once and fixes the write: mode, schema with field ids, and
a write id. Workers call ``execute_write`` with the plan and their share of the data; the
files land under ``data/{write_id}/`` and come back as a :class:`WriteResult`. The driver
commits every result in one transaction with ``commit_write`` (Append or Overwrite, with
retries), or removes the files with ``abort_write`` — which also finds the files of a
worker that died before it could report, by the write id, and leaves every file a version
references. ``write_committed`` answers whether the write committed after all (a commit
whose outcome its caller did not learn); ``input_recorded`` whether an input a write
records in the table configuration (``fermion.input.*``) was loaded already.

Example:
    >>> import tempfile, pyarrow as pa
    >>> uri = tempfile.mkdtemp()
    >>> data = pa.table({"x": [1, 2, 3]})
    >>> plan = plan_write(uri, data.schema, mode="append")
    >>> results = [execute_write(plan, data.slice(0, 2), task_id="0"),
    ...            execute_write(plan, data.slice(2), task_id="1")]
    >>> summary = commit_write(plan, results)
    >>> summary.committed, summary.version, summary.rows_added
    (True, 1, 3)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pyarrow as pa

from fermion.errors import (
    DatasetError,
    IncompatibleTransactionError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from fermion.table.codec import as_table_version, check_writable, fragment_messages
from fermion.table.commit import CommitConfig, CommitResult, commit_operation
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT, write_fragment_values
from fermion.table.manifest_store import ManifestStore
from fermion.table.operations import INPUT_KEY_PREFIX, Append, Operation, Overwrite
from fermion.table.ref import TableRef
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage
from fermion.table.tasks.common import (
    data_files_of_versions,
    open_ref,
    remove_unreferenced,
    summarise,
)
from fermion.table.tasks.model import (
    FRAGMENTS,
    PROPERTIES,
    REF,
    SCHEMA,
    Codec,
    CommitSummary,
    JsonMixin,
    OnTable,
    check_arrow_schema,
)
from fermion.table.versions import latest_table_version
from fermion.table.write_properties import (
    WRITE_KEY_PREFIX,
    WriteProperties,
    write_properties_of,
)

__all__ = [
    "BATCH_ID_COLUMN_KEY",
    "WriteMode",
    "WritePlan",
    "WriteResult",
    "abort_write",
    "commit_write",
    "default_batch_column",
    "execute_write",
    "input_recorded",
    "plan_properties",
    "plan_write",
    "resolve_write_schema",
    "write_committed",
]

WriteMode = Literal["append", "overwrite"]

#: Table configuration key naming the batch-id column of a table written in batch mode.
BATCH_ID_COLUMN_KEY = "fermion.batch_id_column"


@dataclass(frozen=True)
class WritePlan(OnTable, JsonMixin):
    """A write fixed on the driver; hand it to every worker.

    Attributes:
        uri: The table location (a path or fsspec URL every worker can reach).
        mode: ``append`` (creates the table if absent) or ``overwrite``.
        write_id: Names the directory ``data/{write_id}/`` of this write's files.
        read_version: The version planned on (0: the table did not exist).
        schema: The table schema the files are written with (field ids included).
        max_rows_per_file: Rows per data file (one fragment per file).
        batch_id_column: Write in batch mode, grouping rows by this integer column.
        properties: The table's write properties every worker writes its files with
            (those of the read version; a plan creating or overwriting the table records
            them in the new version).
    """

    table: TableRef
    mode: WriteMode
    write_id: str
    read_version: int
    schema: TableSchema
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT
    batch_id_column: str | None = None
    properties: WriteProperties = WriteProperties()

    @property
    def prefix(self) -> str:
        """Where this write's files go, relative to the table root."""
        return f"data/{self.write_id}"

    _codecs: ClassVar[dict[str, Codec]] = {"table": REF, "schema": SCHEMA, "properties": PROPERTIES}


@dataclass(frozen=True)
class WriteResult(JsonMixin):
    """What one worker wrote: fragments not committed yet."""

    task_id: str
    write_id: str
    fragments: tuple[Fragment, ...] = ()

    @property
    def rows(self) -> int:
        """Rows written."""
        return sum(f.physical_rows for f in self.fragments)

    @property
    def bytes_written(self) -> int:
        """Bytes of the data files written."""
        return sum(d.size_bytes for f in self.fragments for d in f.files)

    _codecs: ClassVar[dict[str, Codec]] = {"fragments": FRAGMENTS}


def _same_columns(table: pa.Schema, data: pa.Schema) -> bool:
    return set(table.names) == set(data.names) and all(
        table.field(n).type.equals(data.field(n).type) for n in data.names
    )


def resolve_write_schema(
    latest: TableVersion | None, data: pa.Schema, *, mode: WriteMode = "append"
) -> TableSchema:
    """The table schema (field ids included) a write of data with Arrow schema ``data``
    writes its files with, given the table's ``latest`` version (``None``: no table yet;
    its manifest message is still accepted).

    A new table gets fresh field ids for ``data``. An ``append`` keeps the table's schema
    and its data must fit it. An ``overwrite`` keeps the table's schema when the data has
    its columns and types, else gets fresh field ids above every id the table ever used
    (ids are never reused).

    Raises:
        SchemaMismatchError: ``append`` of data that does not fit the table.
        UnsupportedVersionError: The table needs writer features this library lacks.
        InvalidArgumentError: ``mode`` is not ``append`` or ``overwrite``.

    Example:
        >>> data = pa.schema([("x", pa.int64())])
        >>> resolve_write_schema(None, data).field_ids
        (0,)
    """
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if latest is None:
        return TableSchema.from_arrow(data)
    latest = as_table_version(latest)
    check_writable(latest)
    table_schema = latest.schema
    if mode == "append":
        table_schema.check_data(data)
    elif not _same_columns(table_schema.arrow, data):
        table_schema = TableSchema.from_arrow(data, first_id=table_schema.max_field_id + 1)
    return table_schema


def plan_write(
    uri: Any,
    schema: pa.Schema,
    *,
    mode: WriteMode = "append",
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
    batch_id_column: str | None = None,
    write_id: str | None = None,
    manifest_store: ManifestStore | None = None,
    write_properties: WriteProperties | Mapping[str, Any] | None = None,
) -> WritePlan:
    """Plan a write of data with Arrow schema ``schema`` (driver side; reads one manifest).

    Args:
        uri: Table location.
        schema: The Arrow schema of the data the workers will write.
        mode: ``append`` (the data must have the table's columns and types; creates the
            table if absent) or ``overwrite`` (replace every row; new columns get fresh
            field ids).
        max_rows_per_file: Rows per data file.
        batch_id_column: Write in batch mode grouped by this integer column.
        write_id: Name of the write (default: a random one).
        manifest_store: The table's external manifest store, if it uses one.
        write_properties: Write properties (:mod:`fermion.table.write_properties`) the
            new version records when the write creates the table or overwrites it (over
            the table's own); an append to an existing table writes with the table's and
            refuses other values (change them with ``Dataset.update_write_properties``). With
            the table's ``batch_mode`` property and no ``batch_id_column``, the write is
            in batch mode by the table's recorded batch-id column.

    Raises:
        SchemaMismatchError: ``append`` of data that does not fit the table (raised here,
            before any worker writes a byte).
        InvalidArgumentError: Bad mode, row count, batch id column or write properties.
    """
    check_arrow_schema(schema)
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if max_rows_per_file < 1:
        raise InvalidArgumentError(f"max_rows_per_file must be >= 1, got {max_rows_per_file}")
    if batch_id_column is not None:
        index = schema.get_field_index(batch_id_column)
        if index < 0 or not pa.types.is_integer(schema.field(index).type):
            raise InvalidArgumentError(
                f"batch_id_column {batch_id_column!r} must name an integer column of the data"
            )
    ref, storage = open_ref(uri, manifest_store)
    latest = latest_table_version(storage)
    table_schema = resolve_write_schema(latest, schema, mode=mode)
    properties = plan_properties(latest, write_properties, mode=mode)
    properties.check_schema(table_schema.arrow)
    if batch_id_column is None:
        batch_id_column = default_batch_column(latest, properties, schema)
    return WritePlan(
        table=ref,
        mode=mode,
        write_id=write_id or uuid.uuid4().hex,
        read_version=0 if latest is None else latest.version,
        schema=table_schema,
        max_rows_per_file=max_rows_per_file,
        batch_id_column=batch_id_column,
        properties=properties,
    )


def plan_properties(
    latest: TableVersion | None,
    given: WriteProperties | Mapping[str, Any] | None,
    *,
    mode: str = "append",
) -> WriteProperties:
    """The write properties a write planned on ``latest`` writes its files with: the
    table's, with ``given`` over them when the write creates or overwrites the table.
    ``latest`` is a :class:`~fermion.table.domain.TableVersion` (or its manifest message).

    Raises:
        InvalidArgumentError: ``given`` has unknown properties or bad values, or, for an
            append to an existing table, values the table does not record already (a job
            that creates its table with them may keep them in its configuration).

    Example:
        >>> plan_properties(None, {"compression": "none"}).compression
        'none'
    """
    latest = as_table_version(latest) if latest is not None else None
    table = write_properties_of(latest.config) if latest is not None else WriteProperties()
    if given is None:
        return table
    wanted = table.updated(WriteProperties.parse(given))
    if latest is not None and mode == "append" and wanted != table:
        raise InvalidArgumentError(
            f"write properties {given} differ from the table's ({table.to_config()}): they "
            "are set when a table is created or overwritten; change an existing table's "
            "with Dataset.update_write_properties"
        )
    return wanted


def default_batch_column(
    latest: TableVersion | None, properties: WriteProperties, data: pa.Schema
) -> str | None:
    """The batch-id column a write naming none uses: with the ``batch_mode`` write
    property, the table's recorded one (``fermion.batch_id_column``) if the data has it
    as an integer column; else ``None`` (rows mode).

    Example:
        >>> default_batch_column(None, WriteProperties(batch_mode=True), pa.schema([]))
    """
    if latest is None or not properties.batch_mode:
        return None
    recorded = as_table_version(latest).config.get(BATCH_ID_COLUMN_KEY)
    index = data.get_field_index(recorded) if recorded else -1
    if index < 0 or not pa.types.is_integer(data.field(index).type):
        return None
    return recorded


def execute_write(plan: WritePlan, data: Any, *, task_id: str | int = "0") -> WriteResult:
    """Write ``data`` as data files of ``plan`` (any process; commits nothing).

    Args:
        plan: From :func:`plan_write`.
        data: ``pa.Table``, ``RecordBatch``, ``RecordBatchReader`` or list of batches.
        task_id: Names this worker's share in the result.

    Raises:
        SchemaMismatchError: The data does not fit the planned schema.
        BatchModeError: Bad batch ids (nulls, a missing column).
    """
    fragments = write_fragment_values(
        data,
        plan.table,
        schema=plan.schema,
        max_rows_per_file=plan.max_rows_per_file,
        prefix=plan.prefix,
        batch_id_column=plan.batch_id_column,
        properties=plan.properties,
    )
    return WriteResult(str(task_id), plan.write_id, tuple(fragments))


def _operation(
    plan: WritePlan, fragments: tuple[Fragment, ...], config: dict[str, str]
) -> Operation:
    if plan.read_version == 0 or plan.mode == "overwrite":
        return Overwrite(fragment_messages(fragments), plan.schema, config)
    return Append(fragment_messages(fragments), config)


def commit_write(
    plan: WritePlan,
    results: Sequence[WriteResult],
    *,
    config: CommitConfig | None = None,
    table_config: Mapping[str, str] | None = None,
    properties: Mapping[str, str] | None = None,
    manifest_store: ManifestStore | None = None,
    exclusive: bool = False,
) -> CommitSummary:
    """Commit every result of ``plan`` as one new version (driver side, with retries).

    A plan made before the table existed creates it; if another writer created it in the
    meantime with the same schema and field ids, the write becomes an append to it.

    Args:
        plan: The plan the results were written for.
        results: One result per worker (every one of them: a missing result's files are
            never committed and stay as orphans until :func:`abort_write` or cleanup).
            Recorded inputs are looked up with :func:`input_recorded`.
        config: Commit attempts, backoff, timeout.
        table_config: Table configuration entries this commit sets (e.g. the inputs an
            ingest loaded; two concurrent appends setting the same key are incompatible).
        properties: Informational entries of the new version's summary.
        manifest_store: The table's external manifest store, if it uses one.
        exclusive: A plan made before the table existed must create it: a table created
            in the meantime is a ``DatasetError`` instead of an append to it.

    Raises:
        CommitConflictError / IncompatibleTransactionError: See the commit protocol.
        DatasetError: ``exclusive`` and the table was created since the plan.
        InvalidArgumentError: A result of another write.
    """
    for each in results:
        if each.write_id != plan.write_id:
            raise InvalidArgumentError(
                f"result of task {each.task_id} belongs to write {each.write_id}, "
                f"not {plan.write_id}"
            )
    storage = open_ref(plan.table, manifest_store)[1]
    fragments = tuple(f for r in results for f in r.fragments)
    entries = dict(table_config or {})
    if plan.read_version == 0 or plan.mode == "overwrite":
        for key, value in plan.properties.to_config().items():
            entries.setdefault(key, value)
    if plan.batch_id_column is not None and (plan.read_version == 0 or plan.mode == "overwrite"):
        entries.setdefault(BATCH_ID_COLUMN_KEY, plan.batch_id_column)
    elif plan.batch_id_column is not None and fragments:
        # a batch-mode append to a table that records no batch-id column records it (a
        # table's recorded column is never replaced by an append)
        latest = latest_table_version(storage)
        if latest is not None and not latest.config.get(BATCH_ID_COLUMN_KEY):
            entries.setdefault(BATCH_ID_COLUMN_KEY, plan.batch_id_column)
    if plan.mode == "append" and plan.read_version and not fragments:
        return CommitSummary(False, plan.read_version, plan.read_version, operation="append")
    create = plan.read_version == 0 and plan.mode == "append"
    try:
        result = commit_operation(
            storage,
            _operation(plan, fragments, entries),
            read_version=plan.read_version or None,
            config=config,
            create_only=create,
            properties=properties,
        )
    except DatasetError:
        if not create or exclusive or storage.latest_version() is None:
            raise
        appended = _append_to_created(storage, plan, fragments, entries, config, properties)
        if appended is None:
            version = storage.latest_version() or 0
            return CommitSummary(False, version, plan.read_version, operation="append")
        result = appended
    return summarise(result, plan.read_version, committed=result.committed)


def _append_to_created(
    storage: TableStorage,
    plan: WritePlan,
    fragments: tuple[Fragment, ...],
    entries: dict[str, str],
    config: CommitConfig | None,
    properties: Mapping[str, str] | None,
) -> CommitResult | None:
    """The table appeared after planning: append if it has exactly the planned schema."""
    latest = latest_table_version(storage)
    assert latest is not None  # the caller saw a version
    theirs = latest.schema
    if not (theirs.arrow.equals(plan.schema.arrow) and theirs.field_ids == plan.schema.field_ids):
        raise SchemaMismatchError(
            f"{storage.uri}: the table was created concurrently with another schema"
        )
    recorded = sorted(k for k in entries if k.startswith(INPUT_KEY_PREFIX) and k in latest.config)
    if recorded:  # the concurrent creator loaded the same input
        raise IncompatibleTransactionError(
            f"{storage.uri}: input {recorded[0]} was loaded concurrently (version {latest.version})"
        )
    if not fragments:
        return None
    entries.pop(BATCH_ID_COLUMN_KEY, None)  # set by whoever created the table
    for key in [k for k in entries if k.startswith(WRITE_KEY_PREFIX)]:
        del entries[key]  # so are the write properties
    return commit_operation(
        storage,
        Append(fragment_messages(fragments), entries),
        read_version=latest.version,
        config=config,
        properties=properties,
    )


def write_committed(plan: WritePlan, *, manifest_store: ManifestStore | None = None) -> bool:
    """Whether the write of ``plan`` committed: a version after its read version holds a file
    of it.

    Every version after ``plan.read_version`` is read, not only the latest: a compaction
    committed after the write may have rewritten its fragments away from the latest version.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> uri = tempfile.mkdtemp()
        >>> plan = plan_write(uri, pa.schema([("x", pa.int64())]))
        >>> result = execute_write(plan, pa.table({"x": [1]}))
        >>> write_committed(plan)
        False
        >>> _ = commit_write(plan, [result])
        >>> write_committed(plan)
        True
    """
    storage = open_ref(plan.table, manifest_store)[1]
    prefix = f"{plan.prefix}/"
    return any(
        any(path.startswith(prefix) for path in files)
        for files in data_files_of_versions(storage, after=plan.read_version)
    )


def abort_write(
    plan: WritePlan,
    results: Sequence[WriteResult | None] = (),
    *,
    manifest_store: ManifestStore | None = None,
) -> int:
    """Remove every file of the write that no version references; returns how many.

    The files named in ``results`` and every file under ``data/{write_id}/`` (which
    includes those of workers that failed before reporting: ``None`` entries) are removed
    unless a retained version references them. So an abort is safe even when the write
    committed after all — including when a compaction has since rewritten its fragments
    and only an older version still names its files (time travel to it keeps working).

    Example:
        >>> import tempfile, pyarrow as pa
        >>> uri = tempfile.mkdtemp()
        >>> plan = plan_write(uri, pa.schema([("x", pa.int64())]))
        >>> abort_write(plan, [execute_write(plan, pa.table({"x": [1]}))])
        1
    """
    storage = open_ref(plan.table, manifest_store)[1]
    paths = {d.path for r in results if r is not None for f in r.fragments for d in f.files}
    paths.update(storage.list_tree(plan.prefix))
    return remove_unreferenced(storage, paths)


def input_recorded(
    uri: Any, key: str, *, manifest_store: ManifestStore | None = None
) -> int | None:
    """The latest version if it records the input ``key`` (it was loaded), else ``None``.

    A write records an input by setting ``key`` in the table configuration of its commit
    (``commit_write(..., table_config={key: ...})``); the configuration carries over to
    later versions, so the latest one tells whether the input was loaded. ``None`` too when
    there is no table yet.

    Raises:
        InvalidArgumentError: ``key`` does not start with ``fermion.input.``.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> uri = tempfile.mkdtemp()
        >>> key = INPUT_KEY_PREFIX + "day=1"
        >>> input_recorded(uri, key) is None
        True
        >>> plan = plan_write(uri, pa.schema([("x", pa.int64())]))
        >>> results = [execute_write(plan, pa.table({"x": [1]}))]
        >>> _ = commit_write(plan, results, table_config={key: "{}"})
        >>> input_recorded(uri, key)
        1
    """
    if not key.startswith(INPUT_KEY_PREFIX) or key == INPUT_KEY_PREFIX:
        raise InvalidArgumentError(f"an input key starts with {INPUT_KEY_PREFIX!r}, not {key!r}")
    latest = latest_table_version(open_ref(uri, manifest_store)[1])
    return latest.version if latest is not None and key in latest.config else None
