"""Fermion tables: ``write_dataset``, ``dataset`` and the :class:`Dataset` class.

Example:
    >>> import tempfile, pyarrow as pa, pyarrow.compute as pc
    >>> uri = tempfile.mkdtemp()
    >>> ds = write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), uri)
    >>> ds = write_dataset(pa.table({"id": [4], "v": ["d"]}), uri, mode="append")
    >>> ds.delete(pc.field("id") == 2)
    >>> ds.version, ds.count_rows(), ds.to_table(filter=pc.field("id") > 2)["v"].to_pylist()
    (3, 3, ['c', 'd'])
    >>> dataset(uri, version=1).count_rows()
    3
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import DatasetError, InvalidArgumentError
from fermion.format.encoding.arrow_ops import cast_table, take_table
from fermion.format.streams import export_stream
from fermion.table.batches import (
    BatchLookup,
    OnMissing,
)
from fermion.table.codec import copy_manifest, table_version
from fermion.table.column_join import JoinUnmatched, add_joined_columns
from fermion.table.column_values import BATCH_SIZE_DEFAULT, ColumnValues, add_column_values
from fermion.table.commit import MAX_RETRIES_DEFAULT, CommitConfig, CommitResult, commit_operation
from fermion.table.dataset_batches import BatchReads
from fermion.table.dataset_history import Tags, version_history
from fermion.table.dataset_maintenance import compact_files as compact_fragments
from fermion.table.dataset_maintenance import rebuild_stats as rebuild_fragment_stats
from fermion.table.display import schema_preview
from fermion.table.domain import Fragment, TableVersion
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT, as_batches
from fermion.table.indices.lookup import indexed_scan
from fermion.table.indices.model import IndexInfo, IndexKind
from fermion.table.maintenance import RETENTION_DEFAULT, cleanup_old_versions
from fermion.table.manifest_store import ManifestStore
from fermion.table.merge_insert import MergeInsertBuilder
from fermion.table.operations import Operation, Restore, SchemaChange
from fermion.table.operations.update_config import plan_update_config
from fermion.table.readers import ReaderCache
from fermion.table.ref import TableRef, ref_of
from fermion.table.scan import Scanner, take_fragment
from fermion.table.schema import TableSchema
from fermion.table.storage import TableStorage, deferred_syncs
from fermion.table.tasks import (
    MATERIALIZE_THRESHOLD_DEFAULT,
    CommitSummary,
    WriteResult,
    abort_write,
    commit_delete,
    commit_write,
    execute_delete,
    execute_write,
    plan_delete,
    plan_properties,
    plan_write,
)
from fermion.table.update import replace_where as replace_rows_where
from fermion.table.update import update_rows
from fermion.table.versions import (
    VersionInfo,
    create_tag,
    delete_tag,
    latest_manifest,
    load_manifest,
    resolve_tag,
    schema_of,
)
from fermion.table.write_properties import WriteProperties, write_properties_of

__all__ = ["Dataset", "Tags", "WriteMode", "dataset", "write_dataset"]

WriteMode = Literal["create", "append", "overwrite"]


@deferred_syncs()  # (its data files' fsyncs overlap at the commit point)
def write_dataset(
    data: Any,
    uri: Any,
    *,
    mode: WriteMode = "create",
    max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
    commit_config: CommitConfig | None = None,
    manifest_store: ManifestStore | str | None = None,
    replace_where: str | pc.Expression | None = None,
    write_properties: WriteProperties | Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Dataset:
    """Write ``data`` as a new version of the table at ``uri``.

    Args:
        data: ``pa.Table``, ``RecordBatch``, ``RecordBatchReader``, pandas DataFrame, any
            object with ``__arrow_c_stream__`` (Polars, DuckDB) or a list of batches. A
            stream is written as it is read: memory holds a stripe, not the input.
        uri: Table location: local path, fsspec URL, ``(filesystem, path)`` or
            :class:`~fermion.table.ref.TableRef`.
        mode: ``"create"`` (the table must not exist), ``"append"`` (creates it if absent;
            the data must have the table's columns and types), ``"overwrite"`` (replace all
            rows; a different schema gets fresh field ids).
        max_rows_per_file: Rows per data file / fragment.
        commit_config: Retry attempts, backoff and timeout of the commit.
        manifest_store: External manifest store for stores without an atomic put: a
            ``ManifestStore``, a ``postgresql://`` URL or an SQLite file path
            (docs/TABLE_FORMAT.md, "External manifest stores").
        replace_where: With ``mode="overwrite"``: replace only the rows matching this
            predicate (SQL text or an Arrow expression) by ``data``, in one version; every
            row of ``data`` must match it (see :mod:`fermion.table.update`).
        write_properties: The table's write properties (bloom filter columns,
            compression, page and stripe sizes, batch mode; see
            :mod:`fermion.table.write_properties`), recorded when the table is created or
            overwritten; every later writer uses them. Not with an append to an existing
            table: change those with :meth:`Dataset.update_write_properties`.
        storage_options: Options of the URL's fsspec filesystem (S3 ``key``, ``secret``,
            ``endpoint_url``, ...; :class:`~fermion.table.ref.TableRef`).

    Raises:
        DatasetError: ``create`` on an existing table, unknown ``mode``, ``replace_where``
            without ``mode="overwrite"`` or without a table.
        InvalidArgumentError: A row of ``data`` does not match ``replace_where`` (nothing
            is committed).
        SchemaMismatchError: ``append`` with other columns or types (nothing is written).

    Example:
        >>> import tempfile, pyarrow as pa
        >>> write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp()).version
        1
    """
    if mode not in ("create", "append", "overwrite"):
        raise DatasetError(f"unknown mode {mode!r}")
    ref = TableRef.of(uri, storage_options=storage_options, manifest_store=manifest_store)
    if replace_where is not None:
        return _replace_where(ref, data, replace_where, mode, max_rows_per_file,
                              commit_config, write_properties)  # fmt: skip
    # plan -> execute -> commit (docs/TASKS.md), the steps a distributed write takes
    data_schema, batches = as_batches(data)
    plan = plan_write(
        ref, data_schema, mode="overwrite" if mode == "overwrite" else "append",
        max_rows_per_file=max_rows_per_file, write_properties=write_properties,
    )  # fmt: skip
    storage = ref.open()
    if mode == "create" and plan.read_version:
        raise DatasetError(f"{storage.uri}: table already exists (version {plan.read_version})")
    results: list[WriteResult] = []
    try:
        results.append(execute_write(plan, pa.RecordBatchReader.from_batches(data_schema, batches)))
        summary = commit_write(plan, results, config=commit_config, exclusive=mode == "create")
    except BaseException:
        # nothing of this write stays unless a version references it (a commit whose
        # outcome was unknown keeps its files); the write's own error is the one raised,
        # and files an abort could not remove are orphans the vacuum job removes
        with contextlib.suppress(Exception):
            abort_write(plan, results)
        raise
    ds = Dataset(storage, load_manifest(storage, summary.version))
    ds.last_commit = summary
    return ds


def _replace_where(
    ref: TableRef,
    data: Any,
    predicate: str | pc.Expression,
    mode: str,
    max_rows_per_file: int,
    config: CommitConfig | None,
    write_properties: WriteProperties | Mapping[str, Any] | None,
) -> Dataset:
    storage = ref.open()
    latest = latest_manifest(storage)
    if mode != "overwrite" or latest is None:
        raise DatasetError(f"{storage.uri}: replace_where needs mode='overwrite' on a table")
    plan_properties(latest, write_properties, mode="append")  # refuses other properties
    replaced = replace_rows_where(
        storage, latest, data, predicate, max_rows_per_file=max_rows_per_file, config=config
    )
    ds = Dataset(storage, replaced.manifest if replaced is not None else latest)
    ds.last_commit = replaced
    return ds


def dataset(
    uri: Any,
    version: int | None = None,
    *,
    tag: str | None = None,
    manifest_store: ManifestStore | str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Dataset:
    """Open a table at its latest version, a given ``version``, or a ``tag``.

    ``uri`` is a local path, fsspec URL, ``(filesystem, path)`` or
    :class:`~fermion.table.ref.TableRef`; ``storage_options`` are the options of the URL's
    fsspec filesystem (S3 ``key``, ``secret``, ``endpoint_url``, ...).

    Raises:
        DatasetError: No table at ``uri``, or the version / tag does not exist.
        InvalidFileError: The manifest is damaged (never silently an older version).
        UnsupportedVersionError: The table needs features this library lacks.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> uri = tempfile.mkdtemp()
        >>> _ = write_dataset(pa.table({"x": [1, 2]}), uri)
        >>> dataset(uri).count_rows()
        2
    """
    ref = TableRef.of(uri, storage_options=storage_options, manifest_store=manifest_store)
    storage = ref.open()
    if version is not None and tag is not None:
        raise InvalidArgumentError("give a version or a tag, not both")
    if tag is not None:
        version = resolve_tag(storage, tag)
    if version is None:
        version = storage.latest_version()
        if version is None:
            raise DatasetError(f"{storage.uri}: not a Fermion table (no versions)")
    return Dataset(storage, load_manifest(storage, version))


class Dataset:
    """One version of a Fermion table.

    Mutating methods (``delete``, ``restore``, schema changes, compaction) commit a new
    version and move this object to it.

    It speaks the ``pyarrow.dataset`` read API (``scanner``, ``to_batches``, ``to_table``,
    ``head``, ``count_rows``, ``take``) and ``__arrow_c_stream__``:
    ``polars.scan_pyarrow_dataset(ds)`` hands :meth:`to_batches` the query's columns and
    filter; DuckDB does the same with :meth:`arrow_dataset` (``duckdb.sql("select ... from
    ads")``) and streams ``ds`` itself without pushdown.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> ds = write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
        >>> ds.head(2).to_pydict(), pa.table(ds).num_rows
        ({'x': [1, 2]}, 3)
    """

    def __init__(self, storage: TableStorage, manifest: Any) -> None:
        self._storage = storage
        self._manifest = manifest
        # (the message it copies, the copy) behind the ``manifest`` property
        self._manifest_copy: tuple[Any, Any] | None = None
        self._handle: tuple[Any, TableVersion] | None = None
        self._schema = schema_of(manifest)
        self.last_commit: CommitResult | CommitSummary | None = None
        # data files kept open between batch lookups (fermion.table.readers)
        self._readers = ReaderCache()
        self._batch_reads = BatchReads(storage, self._readers)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_handle"] = None  # made again from the manifest (not pickled twice)
        return state

    def close(self) -> None:
        """Close the data files this object keeps open between lookups
        (:meth:`read_batches`, :meth:`epoch_batches`, :meth:`take`; at most
        :data:`~fermion.table.readers.READER_CACHE_SIZE`). Reading afterwards still
        works; it opens each file for the read only.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> from fermion.table.tasks import plan_write, execute_write, commit_write
            >>> uri = tempfile.mkdtemp()
            >>> data = pa.table({"b": [1, 2], "x": [10, 20]})
            >>> plan = plan_write(uri, data.schema, batch_id_column="b")
            >>> _ = commit_write(plan, [execute_write(plan, data)])
            >>> with dataset(uri) as ds:
            ...     ds.read_batches([2])["x"].to_pylist()
            [20]
        """
        self._readers.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def arrow_dataset(self) -> Any:
        """This version as a ``pyarrow.dataset.Dataset`` subclass (see
        :class:`fermion.table.arrow_dataset.ArrowDataset`): DuckDB then passes the query's
        columns and filter to :meth:`scanner`. (``Dataset`` itself is not one: importing
        ``pyarrow.dataset`` loads pandas, half a second at every start.)

        Example:
            >>> import tempfile, duckdb, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
            >>> ads = ds.arrow_dataset()
            >>> duckdb.sql("select sum(x) from ads where x > 1").fetchall()
            [(5,)]
        """
        from fermion.table.arrow_dataset import ArrowDataset  # loads pyarrow.dataset

        return ArrowDataset(self)

    # -- identity --------------------------------------------------------------------------

    @property
    def uri(self) -> str:
        """The table location."""
        return self._storage.uri

    @property
    def ref(self) -> TableRef:
        """The table's handle (:class:`~fermion.table.ref.TableRef`): what plans and Spark
        tasks carry to open it elsewhere."""
        return ref_of(self.storage)

    @property
    def storage(self) -> TableStorage:
        """The table directory."""
        return self._storage

    @property
    def version(self) -> int:
        """The version this object reads."""
        return self.table_version.version

    @property
    def latest_version(self) -> int:
        """The newest version of the table right now."""
        return self._storage.latest_version() or 0

    @property
    def manifest(self) -> Any:
        """This version's manifest message, as a copy: the table's own message stays private.

        The copy is made on the first access and the same copy is returned on later ones
        until this object moves to another version (a commit through it, ``restore``...),
        so reading fields in a loop costs no copy. Changing the returned message changes
        neither the table nor what this object reads or commits; later accesses return
        the changed message, so copy it (``CopyFrom``) before changing it.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
            >>> ds.manifest is ds.manifest, ds.manifest.version
            (True, 1)
            >>> ds.append(pa.table({"x": [3]}))
            >>> ds.manifest.version, len(ds.manifest.fragments)
            (2, 2)
        """
        cached = self._manifest_copy
        if cached is not None and cached[0] is self._manifest:
            return cached[1]
        copy = copy_manifest(self._manifest)
        self._manifest_copy = (self._manifest, copy)
        return copy

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of this version."""
        return self._schema.arrow

    @property
    def table_schema(self) -> TableSchema:
        """The schema with field ids."""
        return self._schema

    @property
    def table_version(self) -> TableVersion:
        """The :class:`~fermion.table.domain.TableVersion` this object reads (made once
        per version, by :func:`~fermion.table.codec.table_version`).

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
            >>> v = ds.table_version
            >>> v.version, v.live_rows, v is ds.table_version
            (1, 2, True)
        """
        cached = self._handle
        if cached is None or cached[0] is not self._manifest:
            cached = (self._manifest, table_version(self._manifest))
            self._handle = cached
        return cached[1]

    @property
    def fragments(self) -> list[Fragment]:
        """This version's fragments (:class:`~fermion.table.domain.Fragment` values).

        They are made once per version this object reads, each read from its manifest
        message when first used (:func:`~fermion.table.codec.fragment_views`: those of
        :attr:`table_version`); the
        manifest's ``Fragment`` messages themselves are ``manifest.fragments``.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
            >>> [(f.id, f.physical_rows, f.live_rows) for f in ds.fragments]
            [(0, 2, 2)]
        """
        return list(self.table_version.fragments)

    def __repr__(self) -> str:
        columns = schema_preview(self.schema)  # the first 10 columns, then how many more
        handle = self.table_version
        return (
            f"Dataset({self.uri!r}, version={self.version}, rows={handle.live_rows}, "
            f"fragments={len(handle.fragments)}, schema=({columns}))"
        )

    def _moved(self, result: CommitResult) -> None:
        self._manifest = result.manifest
        self._schema = schema_of(result.manifest)
        self.last_commit = result

    # -- reading -------------------------------------------------------------------------------

    def scanner(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        with_row_offsets: bool = False,
        batch_size: int | None = None,
        use_indices: bool = True,
    ) -> Scanner:
        """A scan of this version (see :mod:`fermion.table.scan`); ``filter`` is an
        expression or a SQL predicate (:mod:`fermion.table.predicate`). DuckDB calls this
        with the query's columns and filter, then reads ``scanner.to_reader()``. A scalar
        index answers the conjuncts on its column unless ``use_indices`` is false
        (:mod:`fermion.table.indices.lookup`).

        Raises:
            ColumnNotFoundError: a projected or filtered column is not in the table.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
            >>> ds.scanner(["x"], "x >= 2").to_table().num_rows
            2
        """
        return Scanner(
            self._storage, self.table_version, self._schema, columns, filter,
            with_row_offsets=with_row_offsets, batch_size=batch_size,
            indices=indexed_scan if use_indices else None,
            readers=self._readers,
        )  # fmt: skip

    def to_table(
        self, columns: Sequence[str] | None = None, filter: pc.Expression | str | None = None
    ) -> pa.Table:
        """The rows of this version (projected, filtered, deletions applied).

        ``filter`` is a ``pyarrow.compute.Expression`` or a SQL predicate such as
        ``"x > 1"`` (see :mod:`fermion.table.predicate`).

        Example:
            >>> import tempfile, pyarrow as pa, pyarrow.compute as pc
            >>> ds = write_dataset(pa.table({"x": [1, 2, 3], "y": [4, 5, 6]}), tempfile.mkdtemp())
            >>> ds.to_table(["y"], filter=pc.field("x") > 1).to_pydict()
            {'y': [5, 6]}
            >>> ds.to_table(["y"], filter="x = 3").to_pydict()
            {'y': [6]}
        """
        return self.scanner(columns, filter).to_table()

    def count_rows(self, filter: pc.Expression | str | None = None) -> int:
        """Row count; without a filter it comes from the manifest alone.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
            >>> ds.count_rows(), ds.count_rows("x > 1")
            (3, 2)
        """
        return self.scanner([], filter).count_rows()

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The rows as record batches, read fragment by fragment as they are consumed
        (a few fragments ahead at most): memory holds fragments, not the table.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": list(range(5))}), tempfile.mkdtemp(),
            ...                    max_rows_per_file=2)
            >>> [b.num_rows for b in ds.to_batches(filter="x > 0")]
            [1, 2, 1]
        """
        return self.scanner(columns, filter).to_batches(batch_size)

    def to_reader(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        batch_size: int | None = None,
    ) -> pa.RecordBatchReader:
        """A ``pa.RecordBatchReader`` over the rows, read as it is consumed: hand it to
        DuckDB (``duckdb.sql("select ... from reader")``), Polars
        (``pl.scan_arrow_c_stream(reader)``) or pyarrow.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2], "y": ["a", "b"]}), tempfile.mkdtemp())
            >>> ds.to_reader(["y"], "x = 2").read_all().to_pydict()
            {'y': ['b']}
        """
        return self.scanner(columns, filter).to_reader(batch_size)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream of this version (``pa.table(ds)``,
        ``polars.DataFrame(ds)``, DuckDB); a ``requested_schema`` projects to its columns
        before anything is read.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
            >>> pa.RecordBatchReader.from_stream(ds).read_all().num_rows
            2
        """
        return export_stream(lambda columns: self.to_reader(columns), requested_schema)

    def to_pandas(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        **to_pandas_options: Any,
    ) -> Any:
        """The rows as a pandas DataFrame (``to_pandas_options`` go to
        ``pa.Table.to_pandas``).

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
            >>> ds.to_pandas(filter="x > 1")["x"].tolist()
            [2]
        """
        return self.to_table(columns, filter).to_pandas(**to_pandas_options)

    def head(
        self,
        num_rows: int = 5,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
    ) -> pa.Table:
        """The first ``num_rows`` rows (in scan order); reading stops once they are found.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": list(range(10))}), tempfile.mkdtemp(),
            ...                    max_rows_per_file=3)
            >>> ds.head(4, filter="x > 2")["x"].to_pylist()
            [3, 4, 5, 6]
        """
        if isinstance(num_rows, bool) or not isinstance(num_rows, int) or num_rows < 0:
            raise InvalidArgumentError(f"num_rows must be a non-negative integer, got {num_rows!r}")
        scanner = self.scanner(columns, filter)
        schema = scanner.projected_schema
        batches: list[pa.RecordBatch] = []
        got = 0
        if num_rows:
            stream = scanner.to_batches()  # a generator
            for batch in stream:
                batches.append(batch.slice(0, num_rows - got))
                got += batches[-1].num_rows
                if got >= num_rows:
                    break
            stream.close()  # stops the fragments read ahead
        return pa.Table.from_batches(batches, schema=schema)

    def take(
        self, indices: Sequence[int] | np.ndarray, columns: Sequence[str] | None = None
    ) -> pa.Table:
        """Rows at logical positions ``indices`` of this version (in scan order; any order,
        repeats allowed). Only the pages holding the rows of a one-file fragment are read,
        and its file is kept open for the next lookups (:meth:`close`).

        Raises:
            InvalidArgumentError: positions that are not integers, or out of range.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [10, 11, 12]}), tempfile.mkdtemp())
            >>> ds.take([2, 0]).to_pydict()
            {'x': [12, 10]}
        """
        try:
            wanted = np.asarray(indices)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"indices must be integers, got {indices!r}") from None
        if wanted.ndim != 1 or (wanted.size and not np.issubdtype(wanted.dtype, np.integer)):
            raise InvalidArgumentError(
                f"indices must be integers (a one-dimensional list), got {indices!r}"
            )
        wanted = wanted.astype(np.int64)
        fragments = [f for f in self.table_version.fragments if f.live_rows > 0]
        starts = np.cumsum([0] + [f.live_rows for f in fragments])
        if wanted.size and (wanted.min() < 0 or wanted.max() >= starts[-1]):
            raise InvalidArgumentError(f"indices out of range [0, {int(starts[-1])})")
        names = list(self.schema.names) if columns is None else list(columns)
        owner = np.searchsorted(starts, wanted, side="right") - 1
        pieces, order = [], []
        for position in np.unique(owner):
            fragment = fragments[position]
            picked = np.flatnonzero(owner == position)
            positions = wanted[picked] - starts[position]
            pieces.append(
                take_fragment(
                    self._storage, self._schema, fragment, names, positions, self._readers
                )
            )
            order.append(picked)
        if not pieces:
            return self.scanner(names).to_table().slice(0, 0)
        combined = pa.concat_tables([cast_table(p, pieces[0].schema) for p in pieces])
        inverse = np.empty(wanted.size, dtype=np.int64)
        inverse[np.concatenate(order)] = np.arange(wanted.size)
        return take_table(combined, inverse)

    def take_rowids(
        self,
        ids: Sequence[int] | np.ndarray | pa.Array,
        columns: Sequence[str] | None = None,
        *,
        missing: Literal["error", "skip"] = "error",
    ) -> pa.Table:
        """Rows of this version by stable row id, in the order asked (``_rowid`` may be
        one of ``columns``); see :mod:`fermion.table.row_id_take`.

        Raises:
            DatasetError: The table has no row ids (created before they existed).
            InvalidArgumentError: Ids that are not non-negative integers; with
                ``missing="error"``, ids no live row has (``"skip"`` leaves them out).

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [10, 11, 12]}), tempfile.mkdtemp())
            >>> ds.take_rowids([1], columns=["_rowid", "x"]).to_pydict()
            {'_rowid': [1], 'x': [11]}
        """
        from fermion.table.row_id_take import take_rowids
        from fermion.table.row_ids import VersionRowIds

        version = VersionRowIds(self._storage.uri, self._manifest)
        return take_rowids(
            self._storage, self._schema, version, ids, columns,
            missing=missing, readers=self._readers,
        )  # fmt: skip

    # -- batches (batch mode, see fermion.table.batches) --------------------------------------

    def batch_lookup(
        self,
        batch_ids: Sequence[int] | np.ndarray | pa.Array,
        columns: Sequence[str] | None = None,
        *,
        on_missing: OnMissing = "raise",
        batch_id_column: str | None = None,
    ) -> BatchLookup:
        """A planned lookup of batch ids (see :meth:`read_batches`); its ``stats`` count the
        fragments pruned and the data files opened.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> from fermion.table.tasks import plan_write, execute_write, commit_write
            >>> uri = tempfile.mkdtemp()
            >>> data = pa.table({"b": [1, 2, 3, 4], "x": [10, 20, 30, 40]})
            >>> plan = plan_write(uri, data.schema, batch_id_column="b", max_rows_per_file=2)
            >>> _ = commit_write(plan, [execute_write(plan, data)])
            >>> lookup = dataset(uri).batch_lookup([4])
            >>> lookup.to_table()["x"].to_pylist(), lookup.stats.fragments_pruned
            ([40], 1)
        """
        return self._batch_reads.lookup(
            self.table_version, self._schema, batch_ids, columns,
            on_missing=on_missing, batch_id_column=batch_id_column,
        )  # fmt: skip

    def read_batches(
        self,
        batch_ids: Sequence[int] | np.ndarray | pa.Array,
        columns: Sequence[str] | None = None,
        *,
        on_missing: OnMissing = "raise",
        batch_id_column: str | None = None,
    ) -> pa.Table:
        """The rows of the batches ``batch_ids`` of a batch-mode table, in the order asked.

        A batch is the live rows sharing one value of the table's batch-id column (recorded
        by ``plan_write(..., batch_id_column=...)``; ``batch_id_column`` overrides it). Only
        the fragments whose batch-id range (manifest statistics) can hold an id are opened
        (in parallel from a remote store); batch-mode data files read only the pages
        holding the batches. Rows come grouped by batch in the order of ``batch_ids`` (a
        repeated id repeats its rows); deleted rows never come back; columns are read by
        field id through this version's schema.

        Args:
            batch_ids: integer ids (list, NumPy or Arrow array).
            columns: column names (default: all).
            on_missing: ``"raise"`` (default) or ``"skip"`` ids without a live row
                (never written, or every row deleted).
            batch_id_column: the batch-id column, if the table does not record one.

        Raises:
            BatchModeError: no batch-id column, or a missing id with ``on_missing="raise"``.
            ColumnNotFoundError: a column not in this version's schema.
            InvalidArgumentError: ids that are not integers.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> from fermion.table.tasks import plan_write, execute_write, commit_write
            >>> uri = tempfile.mkdtemp()
            >>> data = pa.table({"b": [7, 7, 8, 9], "x": ["a", "b", "c", "d"]})
            >>> plan = plan_write(uri, data.schema, batch_id_column="b")
            >>> _ = commit_write(plan, [execute_write(plan, data)])
            >>> dataset(uri).read_batches([9, 7], columns=["x"]).to_pydict()
            {'x': ['d', 'a', 'b']}
            >>> dataset(uri).read_batches([9, 5], on_missing="skip").num_rows
            1
        """
        return self.batch_lookup(
            batch_ids, columns, on_missing=on_missing, batch_id_column=batch_id_column
        ).to_table()

    def batch_ids(self, *, batch_id_column: str | None = None) -> np.ndarray:
        """The distinct batch ids with live rows in this version, sorted (reads only the
        batch-id column).

        Example:
            >>> import tempfile, pyarrow as pa
            >>> from fermion.table.tasks import plan_write, execute_write, commit_write
            >>> uri = tempfile.mkdtemp()
            >>> data = pa.table({"b": [3, 3, 5], "x": [1, 2, 3]})
            >>> plan = plan_write(uri, data.schema, batch_id_column="b")
            >>> _ = commit_write(plan, [execute_write(plan, data)])
            >>> dataset(uri).batch_ids().tolist()
            [3, 5]
        """
        column = self._batch_reads.column(self.table_version, self._schema, batch_id_column)
        values = self.to_table([column]).column(column).to_numpy()
        return np.unique(values.astype(np.int64))

    def epoch_batches(
        self,
        columns: Sequence[str] | None = None,
        *,
        seed: int | None = None,
        shuffle: bool = True,
        read_ahead: int = 64,
        batch_id_column: str | None = None,
    ) -> Iterator[tuple[int, pa.Table]]:
        """One epoch over the batches of this version: ``(batch_id, rows)`` for every batch
        exactly once, in an order shuffled by ``seed`` (the same seed gives the same order;
        ``shuffle=False``: increasing ids).

        The ids are listed once (:meth:`batch_ids`), permuted with
        ``numpy.random.default_rng(seed)``, then looked up ``read_ahead`` at a time with
        :meth:`read_batches` (one planning pass and one read per group). A batch
        deleted while the epoch runs is left out; this object's version never changes under
        it, so that happens only through another ``Dataset`` object.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> from fermion.table.tasks import plan_write, execute_write, commit_write
            >>> uri = tempfile.mkdtemp()
            >>> data = pa.table({"b": [1, 2, 2, 3], "x": [10, 20, 21, 30]})
            >>> plan = plan_write(uri, data.schema, batch_id_column="b")
            >>> _ = commit_write(plan, [execute_write(plan, data)])
            >>> [(i, t["x"].to_pylist()) for i, t in dataset(uri).epoch_batches(shuffle=False)]
            [(1, [10]), (2, [20, 21]), (3, [30])]
        """
        column = self._batch_reads.column(self.table_version, self._schema, batch_id_column)
        ids = self.batch_ids(batch_id_column=column)
        return self._batch_reads.epoch(
            self.table_version, self._schema, column, ids, columns,
            seed=seed, shuffle=shuffle, read_ahead=read_ahead,
        )  # fmt: skip

    # -- history -----------------------------------------------------------------------------------

    def versions(self) -> list[VersionInfo]:
        """Every version still on disk, oldest first, with operation summaries."""
        return version_history(self._storage)

    def checkout(self, version: int | None = None, *, tag: str | None = None) -> Dataset:
        """Another version (default: the latest) of the same table."""
        if tag is not None:
            version = resolve_tag(self._storage, tag)
        if version is None:
            version = self.latest_version
        return Dataset(self._storage, load_manifest(self._storage, version))

    def create_tag(self, name: str, version: int | None = None) -> None:
        """Pin ``version`` (default: this one) as ``name``; tagged versions survive cleanup."""
        create_tag(self._storage, name, self.version if version is None else version)

    def delete_tag(self, name: str) -> None:
        """Remove a tag (the version becomes eligible for cleanup)."""
        delete_tag(self._storage, name)

    @property
    def tags(self) -> Tags:
        """The table's tags: a mapping ``name -> version`` with ``create`` / ``delete``
        (``ds.tags()`` still returns a dict)."""
        return Tags(self._storage, lambda: self.version)

    # -- writing --------------------------------------------------------------------------------

    def _commit(self, op: Operation, planner: Any = None, max_retries: int | None = None) -> None:
        config = CommitConfig(max_retries=max_retries or MAX_RETRIES_DEFAULT)
        result = commit_operation(
            self._storage, op, read_version=self.version, config=config, planner=planner
        )
        self._moved(result)

    def append(self, data: Any, *, max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT) -> None:
        """Append ``data`` (any input :func:`write_dataset` takes; a stream is written as
        it is read) as a new version, and move this object to it.

        Raises:
            SchemaMismatchError: the data has other columns or types (nothing is written).

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
            >>> ds.append(pa.record_batch({"x": [2, 3]}))
            >>> ds.version, ds.count_rows()
            (2, 3)
        """
        # the table's handle: its storage options and manifest store go with it
        result = write_dataset(data, self.ref, mode="append", max_rows_per_file=max_rows_per_file)
        self._manifest = result._manifest
        self._schema = result._schema
        self.last_commit = result.last_commit

    def restore(self, version: int | None = None, *, tag: str | None = None) -> None:
        """Commit an old version's content as the newest version (default: the version
        this object reads), and move this object to it.

        Raises:
            DatasetError: the version or tag does not exist.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> uri = tempfile.mkdtemp()
            >>> _ = write_dataset(pa.table({"x": [1]}), uri)
            >>> ds = write_dataset(pa.table({"x": [2, 3]}), uri, mode="overwrite")
            >>> ds.restore(1)
            >>> ds.version, ds.to_table()["x"].to_pylist()
            (3, [1])
        """
        if version is not None and tag is not None:
            raise InvalidArgumentError("give a version or a tag, not both")
        if tag is not None:
            version = resolve_tag(self._storage, tag)
        if version is None:
            version = self.version
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgumentError(f"version must be an integer, got {version!r}")
        load_manifest(self._storage, version)  # DatasetError if it does not exist
        self._commit(Restore(version))

    def delete(self, filter: pc.Expression | str, *, max_retries: int | None = None) -> None:
        """Mark the rows matching ``filter`` deleted (writes deletion files, no data copy).

        ``filter`` is a ``pyarrow.compute.Expression`` or a SQL predicate (see
        :mod:`fermion.table.predicate`). Concurrent deletes of other rows of the same
        fragments are merged; if they delete the same rows the delete is re-planned on the
        newer version.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
            >>> ds.delete("x >= 2")
            >>> ds.to_table()["x"].to_pylist()
            [1]
        """
        plan = plan_delete(self._storage.uri, filter, **self._at_this_version())
        summary = commit_delete(
            plan, [execute_delete(t) for t in plan.tasks], **self._commit_options(max_retries)
        )
        self._follow(summary)

    def merge_insert(self, on: str | Sequence[str]) -> MergeInsertBuilder:
        """Upsert by key columns in one version: chain ``when_matched_update_all()`` /
        ``when_matched_update(columns)``, ``when_not_matched_insert_all()``,
        ``when_not_matched_by_source_delete(predicate)``, then ``execute(source)``
        (see :mod:`fermion.table.merge_insert`); the commit moves this object.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"id": [1], "v": [0]}), tempfile.mkdtemp())
            >>> r = ds.merge_insert("id").when_not_matched_insert_all().execute(
            ...     pa.table({"id": [1, 2], "v": [5, 6]}))
            >>> r.num_inserted_rows, ds.count_rows()
            (1, 2)
        """
        return MergeInsertBuilder(self._storage, self.table_version, on, on_commit=self._moved)

    def update(
        self,
        where: pc.Expression | str | None = None,
        *,
        set: Mapping[str, str | pc.Expression],
        max_rows_per_file: int = MAX_ROWS_PER_FILE_DEFAULT,
        max_retries: int | None = None,
    ) -> int:
        """Set columns of the rows matching ``where`` (``None``: all rows) to SQL
        expressions over the row, in one version (see :mod:`fermion.table.update`); returns
        the number of rows updated.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp())
            >>> ds.update("x > 1", set={"x": "x * 10"})
            2
            >>> sorted(ds.to_table()["x"].to_pylist())
            [1, 20, 30]
        """
        result, rows = update_rows(
            self._storage, self.table_version, where, set, max_rows_per_file=max_rows_per_file,
            config=CommitConfig(max_retries=max_retries or MAX_RETRIES_DEFAULT),
        )  # fmt: skip
        if result is not None:
            self._moved(result)
        return int(rows)

    def _at_this_version(self) -> dict[str, Any]:
        return {"version": self.version, "manifest_store": self._storage.manifest_store}

    def _commit_options(self, max_retries: int | None) -> dict[str, Any]:
        config = CommitConfig(max_retries=max_retries or MAX_RETRIES_DEFAULT)
        return {"config": config, "manifest_store": self._storage.manifest_store}

    def _follow(self, summary: CommitSummary) -> None:
        """Move to the version a task commit made (or found)."""
        self.last_commit = summary
        if summary.version != self.version:
            self._manifest = load_manifest(self._storage, summary.version)
            self._schema = schema_of(self._manifest)

    def _change_schema(self, change: Any) -> None:
        def plan(manifest: Any) -> SchemaChange:
            return SchemaChange(change(schema_of(manifest)))

        self._commit(plan(self._manifest), plan)

    def add_columns(
        self,
        fields: Iterable[pa.Field] | ColumnValues | pa.Table,
        *,
        read_columns: Sequence[str] | None = None,
        batch_size: int = BATCH_SIZE_DEFAULT,
        max_retries: int | None = None,
        on: str | Sequence[str] | None = None,
        unmatched: JoinUnmatched = "null",
    ) -> None:
        """Add columns: ``pa.Field`` s (nullable; existing rows read nulls, metadata only),
        or with values, ``{name: SQL expression}`` or a function of a record batch (of
        ``read_columns``, default all) returning the new columns for its rows. Values are
        written as one new data file per fragment holding only the new columns; no other
        file is rewritten (see :mod:`fermion.table.column_values`).

        With ``on`` (key columns, or ``"_rowid"``), ``fields`` is a table of new values
        (any Arrow input) joined to the rows on those keys: rows whose key the values lack
        read nulls, or with ``unmatched="error"`` the add is refused; duplicate, null or
        mistyped keys are errors (see :mod:`fermion.table.column_join`).

        Example:
            >>> import tempfile, pyarrow as pa, pyarrow.compute as pc
            >>> ds = write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
            >>> ds.add_columns(lambda b: pa.table({"y": pc.multiply(b["x"], 10)}))
            >>> ds.to_table()["y"].to_pylist()
            [10, 20]
        """
        if on is not None:
            joined = add_joined_columns(
                self._storage, self.table_version, fields, on=on, unmatched=unmatched,
                config=CommitConfig(max_retries=max_retries or MAX_RETRIES_DEFAULT),
            )  # fmt: skip
            if joined is not None:
                self._moved(joined)
            return
        if isinstance(fields, Mapping) or callable(fields):
            result = add_column_values(
                self._storage, self.table_version, fields, read_columns=read_columns,
                batch_size=batch_size,
                config=CommitConfig(max_retries=max_retries or MAX_RETRIES_DEFAULT),
            )  # fmt: skip
            if result is not None:
                self._moved(result)
            return
        fields = list(fields)
        self._change_schema(lambda s: s.add_columns(fields))

    def drop_columns(self, names: Iterable[str]) -> None:
        """Drop columns (metadata only; their field ids are retired)."""
        names = list(names)
        self._change_schema(lambda s: s.drop_columns(names))

    def rename_columns(self, mapping: Mapping[str, str]) -> None:
        """Rename columns (field ids are kept, old files stay readable)."""
        mapping = dict(mapping)
        self._change_schema(lambda s: s.rename_columns(mapping))

    def alter_columns(self, types: Mapping[str, pa.DataType]) -> None:
        """Widen column types (int -> long, float -> double); old files are cast on read."""
        types = dict(types)
        self._change_schema(lambda s: s.widen_columns(types))

    @property
    def write_properties(self) -> WriteProperties:
        """The write properties this version records (``fermion.write.*``; see
        :mod:`fermion.table.write_properties`): every writer of the table uses them."""
        return write_properties_of(self.table_version.config)

    def update_write_properties(
        self,
        values: WriteProperties | Mapping[str, Any] | None = None,
        *,
        unset: Sequence[str] = (),
        max_retries: int | None = None,
    ) -> None:
        """Set write properties (``values``: names or ``fermion.write.*`` keys to values)
        and remove those named in ``unset`` (back to the format's defaults), in one
        configuration commit (an ``UpdateConfig``); files already written keep theirs.

        Raises:
            InvalidArgumentError: An unknown property, a bad value, or a bloom filter
                column that is not in the table.
            UnsupportedTypeError: A bloom filter column of a type without bloom filters.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"id": [1, 2]}), tempfile.mkdtemp())
            >>> ds.update_write_properties({"bloom_filter_columns": ["id"], "page_size": 4096})
            >>> ds.version, ds.write_properties.bloom_filter_columns
            (2, ('id',))
            >>> ds.update_write_properties(unset=["page_size"])
            >>> ds.write_properties.page_size is None
            True
        """

        def plan(manifest: Any) -> Operation:
            return plan_update_config(manifest, values, unset)

        self._commit(plan(self._manifest), plan, max_retries)

    def compact_files(
        self,
        *,
        target_rows_per_fragment: int = MAX_ROWS_PER_FILE_DEFAULT,
        materialize_deletions_threshold: float = MATERIALIZE_THRESHOLD_DEFAULT,
        max_retries: int | None = None,
    ) -> dict[str, int]:
        """Merge small fragments and rewrite ones with many deleted rows.

        Runs :func:`~fermion.table.tasks.plan_compaction`, executes every group in this
        process and commits them; groups a concurrent delete or rewrite made stale are
        planned again on the newer version (at most ``max_retries`` rounds), so deleted
        rows never come back. If a round fails, the files it wrote are removed
        (:func:`~fermion.table.tasks.abort_rewrite`: never one a version references).

        Returns:
            ``fragments_removed``, ``fragments_added``, ``rows_rewritten``.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> uri = tempfile.mkdtemp()
            >>> ds = write_dataset(pa.table({"x": list(range(6))}), uri, max_rows_per_file=2)
            >>> ds.compact_files(target_rows_per_fragment=10)["fragments_removed"]
            3
            >>> len(ds.fragments)
            1
        """
        return compact_fragments(
            self._storage,
            target_rows_per_fragment=target_rows_per_fragment,
            materialize_deletions_threshold=materialize_deletions_threshold,
            at_version=self._at_this_version,
            options=self._commit_options(max_retries),
            follow=self._follow,
            follow_latest=self._follow_latest,
        )

    def _follow_latest(self) -> None:
        self._manifest = load_manifest(self._storage, self.latest_version)
        self._schema = schema_of(self._manifest)

    def rebuild_stats(self, columns: Sequence[str] | None = None) -> None:
        """Recompute per-fragment statistics from the live rows and register a zone map.

        Commits a ``CreateIndex`` named ``fermion.stats``; a concurrent compaction of
        covered fragments makes it re-plan, so the statistics never point at removed
        fragments.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
            >>> ds.rebuild_stats()
            >>> [i.name for i in ds.manifest.indices]
            ['fermion.stats']
        """
        summary = rebuild_fragment_stats(
            self._storage, columns, self._at_this_version(), self._commit_options(None)
        )
        self._follow(summary)

    # -- scalar indices (fermion.table.indices) ------------------------------------------------

    def create_index(
        self,
        column: str,
        kind: IndexKind = "BTREE",
        *,
        name: str | None = None,
        replace: bool = False,
    ) -> None:
        """Build a scalar index on ``column`` over every fragment and commit it (named
        ``{column}_idx`` unless ``name`` is given). Scans use it for the filter conjuncts
        on that column; fragments written later are scanned as usual until
        :meth:`optimize_indices`.

        Raises:
            ColumnNotFoundError: No such column.
            InvalidArgumentError: An unknown kind, a type it cannot key, or the name is
                taken and ``replace`` is false.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"k": [4, 2, 9]}), tempfile.mkdtemp())
            >>> ds.create_index("k", "BTREE")
            >>> ds.to_table(filter="k IN (2, 9)")["k"].to_pylist()
            [2, 9]
        """
        from fermion.table.indices.api import create_index

        self._moved(create_index(self._storage, self.table_version, column, kind, name=name,
                                 replace=replace))  # fmt: skip

    def indices(self) -> list[IndexInfo]:
        """The indices of this version (scalar indices and the statistics rebuild).

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"k": [1]}), tempfile.mkdtemp())
            >>> ds.create_index("k", "BITMAP", name="by_k")
            >>> [(i.name, i.kind, i.columns, i.fragment_ids) for i in ds.indices()]
            [('by_k', 'BITMAP', ('k',), (0,))]
        """
        from fermion.table.indices.api import list_indices

        return list_indices(self.table_version)

    def drop_index(self, name: str) -> None:
        """Remove the index ``name`` (its files go with the versions listing it, at cleanup).

        Raises:
            DatasetError: This version has no index of that name.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"k": [1]}), tempfile.mkdtemp())
            >>> ds.create_index("k")
            >>> ds.drop_index("k_idx")
            >>> ds.indices()
            []
        """
        from fermion.table.indices.api import drop_index

        self._moved(drop_index(self._storage, self.table_version, name))

    def optimize_indices(self) -> None:
        """Add the fragments each scalar index does not cover (appended, or rewritten by
        a compaction, since its build) to it: one commit per index that had some.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> ds = write_dataset(pa.table({"k": [1]}), tempfile.mkdtemp())
            >>> ds.create_index("k")
            >>> ds.append(pa.table({"k": [2]}))
            >>> ds.optimize_indices()
            >>> ds.indices()[0].fragment_ids
            (0, 1)
        """
        from fermion.table.indices.api import optimize_indices

        results = optimize_indices(self._storage, self.table_version)
        if results:
            self._moved(results[-1])

    def cleanup_old_versions(
        self,
        older_than: timedelta | datetime = RETENTION_DEFAULT,
        *,
        keep_tags: bool = True,
        orphan_older_than: timedelta | datetime | None = None,
    ) -> dict[str, int]:
        """Remove versions older than ``older_than`` (default 14 days) and unreferenced
        files (see :mod:`fermion.table.maintenance`); the latest and tagged versions stay.

        Example:
            >>> import tempfile, pyarrow as pa
            >>> from datetime import timedelta
            >>> uri = tempfile.mkdtemp()
            >>> _ = write_dataset(pa.table({"x": [1]}), uri)
            >>> ds = write_dataset(pa.table({"x": [2]}), uri, mode="append")
            >>> ds.cleanup_old_versions()["versions_removed"]
            0
            >>> ds.cleanup_old_versions(timedelta(0))["versions_removed"]
            1
        """
        return cleanup_old_versions(
            self._storage, older_than, keep_tags=keep_tags, orphan_older_than=orphan_older_than
        )

    @staticmethod
    def commit(
        uri: Any,
        operation: Operation,
        read_version: int | None = None,
        *,
        max_retries: int = MAX_RETRIES_DEFAULT,
        timeout: float | None = None,
        manifest_store: ManifestStore | str | None = None,
    ) -> Dataset:
        """Commit an operation built from :func:`write_fragments` output (the driver side).

        Example:
            >>> import tempfile, pyarrow as pa
            >>> from fermion.table import write_fragments, Append
            >>> uri = tempfile.mkdtemp()
            >>> ds = write_dataset(pa.table({"x": [1]}), uri)
            >>> frags = write_fragments(pa.table({"x": [2, 3]}), uri)
            >>> Dataset.commit(uri, Append(frags), read_version=ds.version).count_rows()
            3
        """
        storage = TableRef.of(uri, manifest_store=manifest_store).open()
        config = CommitConfig(max_retries=max_retries, timeout=timeout)
        result = commit_operation(storage, operation, read_version=read_version, config=config)
        ds = Dataset(storage, result.manifest)
        ds.last_commit = result
        return ds
