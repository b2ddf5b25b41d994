"""The Fermion reader.

Open costs one speculative tail read (``prefetch_bytes``) that normally holds the footer,
CIT and schema index; nothing on the open path touches every column. Projecting k columns
then reads k CIT entries, k schema entries and k CMBs (lazily, coalesced, or the whole
CMB area at once when it is small and the projection broad), then only the pages the
request needs: statistics prune stripes and pages before any data IO, nearby ranges are
coalesced, and pages are checksummed and decompressed on a thread pool.

Example:
    >>> import pyarrow as pa, pyarrow.compute as pc, tempfile, os
    >>> from fermion.format.write.writer import write_table
    >>> path = os.path.join(tempfile.mkdtemp(), "r.fermion")
    >>> write_table(pa.table({"k": list(range(10)), "v": list("abcdefghij")}), path)
    >>> r = FileReader(path)
    >>> r.num_rows, r.read(columns=["v"], filter=pc.field("k") >= 8).to_pydict()
    (10, {'v': ['i', 'j']})
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import (
    BatchModeError,
    ColumnNotFoundError,
    InvalidArgumentError,
)
from fermion.format.encoding.arrow_ops import filter_table, take_values
from fermion.format.metadata.batch import VIRTUAL_COLUMNS, virtual_array
from fermion.format.metadata.cmb import ColumnMeta
from fermion.format.metadata.footer import FileMetadata
from fermion.format.metadata.layout import Kind, is_wrapped
from fermion.format.options import ReadOptions, split_options
from fermion.format.read.batch_lookup import (
    binary_columns,
    fast_columns,
    list_columns,
    read_binary_points,
    read_list_points,
    read_points,
)
from fermion.format.read.batch_read import BatchIndex, output_order, virtual_fields
from fermion.format.read.describe import describe_file
from fermion.format.read.filters import FilterInfo, Pruner
from fermion.format.read.metadata import MetadataReader
from fermion.format.read.plan import (
    Projection,
    Ranges,
    Selection,
    select_rows,
)
from fermion.format.read.pruning import arrow_reason
from fermion.format.read.stripes import StripeReader
from fermion.format.streams import export_stream
from fermion.io.source import ByteSource, open_source

__all__ = ["FileMetadata", "FileReader", "read_table"]


class FileReader:
    """Read a Fermion file: projection, filters with pruning, batches and random access.

    Args:
        source: local path, fsspec URL, ``(filesystem, path)``, a ``ByteSource``, a
            seekable binary file object (``open(path, "rb")``, ``io.BytesIO``, a
            ``pa.NativeFile`` such as ``pa.BufferReader``; left open) or in-memory bytes.
        **options: :class:`~fermion.format.options.ReadOptions` fields.

    Example:
        >>> import pyarrow as pa, tempfile, os
        >>> from fermion.format.write.writer import write_table
        >>> path = os.path.join(tempfile.mkdtemp(), "f.fermion")
        >>> write_table(pa.table({"a": [1, 2, 3]}), path)
        >>> with FileReader(path) as r:
        ...     r.take([2, 0]).to_pydict()
        {'a': [3, 1]}
    """

    def __init__(self, source: Any, **options: Any) -> None:
        self.options: ReadOptions = split_options(ReadOptions, options)
        self.source: ByteSource = open_source(source, memory_map=self.options.memory_map)
        try:
            self.file_meta = MetadataReader(self.source, self.options)
        except BaseException:
            self.source.close()
            raise
        self.num_rows = self.file_meta.num_rows
        self.num_columns = self.file_meta.num_columns
        self.num_stripes = self.file_meta.num_stripes
        self.batch_mode = self.file_meta.batch_mode
        self._stripes = StripeReader(self.source, self.options)
        self._stripes.required_features = self.file_meta.required_features
        self._dictionary_checked = False  # read_dictionary names validated (once)
        # read_batches: per projected column list, the plan (projections, output schema,
        # parsed CMBs, which columns go the batch_lookup way): a reader kept open for many
        # lookups (a table's data loader) resolves a column list once
        self._batch_plans: dict[tuple[str, ...] | None, _BatchPlan] = {}
        self._pruner = Pruner(
            self.source,
            self.options.verify_checksums,
            self.file_meta.batches if self.batch_mode else None,
        )

    # -- public properties ------------------------------------------------------------
    @property
    def schema(self) -> pa.Schema:
        """The file's Arrow schema (parsed on first access: O(columns))."""
        return self.file_meta.schema

    @property
    def metadata(self) -> FileMetadata:
        """Footer facts (no IO)."""
        return self.file_meta.file_metadata

    @property
    def field_ids(self) -> list[int]:
        """Field id of every storage node, pre-order over all columns."""
        return self.file_meta.index.node_field_ids()

    def close(self) -> None:
        """Release the file handle and the metadata read from the file.

        The views of a memory-mapped file this reader holds are dropped here, not when the
        garbage collector frees the reader (its helpers refer back to it): the mapping is
        unmapped as soon as no array returned by a read still uses it. Reading after
        ``close`` raises InvalidArgumentError; what is cached (the schema) stays.
        """
        self.source.close()
        self.file_meta.close()
        self._batch_plans.clear()

    def __enter__(self) -> FileReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- columns ----------------------------------------------------------------------
    def _resolve(self, columns: Sequence[str] | None) -> list[Projection]:
        projs = self.file_meta.projections(columns)
        wanted = self.options.read_dictionary
        if wanted:
            if not self._dictionary_checked:
                self._check_read_dictionary(wanted)
                self._dictionary_checked = True
            for p in projs:
                p.dictionary = p.selected is None and p.info.field.name in wanted
        return projs

    def _check_read_dictionary(self, names: Sequence[str]) -> None:
        """Every ``read_dictionary`` name is a top-level string or binary column."""
        index = self.file_meta.index
        found = index.lookup(list(names))
        missing = [n for n, c in zip(names, found, strict=True) if c is None]
        if missing:
            raise ColumnNotFoundError(f"read_dictionary: no column {missing[0]!r} in the file")
        for info in index.columns([c for c in found if c is not None]):
            tree = self.file_meta.tree(info)
            if tree.kind != Kind.BINARY or is_wrapped(tree.type):
                raise InvalidArgumentError(
                    f"read_dictionary: column {info.field.name!r} is {tree.type}, "
                    "not a string or binary column"
                )

    # -- reading ----------------------------------------------------------------------
    def read(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        *,
        stripes: Sequence[int] | None = None,
    ) -> pa.Table:
        """Read the projected columns of the rows matching ``filter`` into a Table.

        ``stripes`` restricts the read to those stripes (indices into
        :meth:`stripe_row_counts`), so a file can be split into row ranges read apart.
        """
        projs, virtual = self._resolve_all(columns)
        schema = self._output_schema(projs, columns is None, virtual, columns)
        only = self._checked_stripes(stripes)
        batches = list(self._iter(projs, filter, None, columns is None, virtual, columns, only))
        return pa.Table.from_batches(batches, schema=schema)

    def stripe_row_counts(self) -> list[int]:
        """Rows of each stripe, in file order (they sum to ``num_rows``).

        Example:
            >>> import pyarrow as pa, tempfile, os
            >>> from fermion.format.write.writer import write_table
            >>> path = os.path.join(tempfile.mkdtemp(), "s.fermion")
            >>> write_table(pa.table({"a": list(range(5))}), path, max_stripe_rows=2)
            >>> with FileReader(path) as r:
            ...     r.stripe_row_counts(), r.read(stripes=[2]).to_pydict()
            ([2, 2, 1], {'a': [4]})
        """
        return [int(n) for n in self.file_meta.stripe_rows([])]

    def _checked_stripes(self, stripes: Sequence[int] | None) -> set[int] | None:
        if stripes is None:
            return None
        only = {int(s) for s in stripes}
        if only and (min(only) < 0 or max(only) >= self.num_stripes):
            raise InvalidArgumentError(
                f"stripes {sorted(only)} out of range for {self.num_stripes} stripes"
            )
        return only

    def iter_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        *,
        batch_size: int | None = None,
        stripes: Sequence[int] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Yield record batches stripe by stripe (split to ``batch_size`` rows if given).

        ``stripes`` restricts the read to those stripes, as in :meth:`read`.
        """
        if batch_size is not None and batch_size <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        projs, virtual = self._resolve_all(columns)
        only = self._checked_stripes(stripes)
        return self._iter(projs, filter, batch_size, columns is None, virtual, columns, only)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        *,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Record batches of the projected, filtered rows, read one stripe at a time
        (the ``pyarrow.dataset`` name for :meth:`iter_batches`).

        Example:
            >>> import pyarrow as pa, pyarrow.compute as pc, tempfile, os
            >>> from fermion.format.write.writer import write_table
            >>> path = os.path.join(tempfile.mkdtemp(), "b.fermion")
            >>> write_table(pa.table({"a": [1, 2, 3]}), path, max_stripe_rows=2)
            >>> with FileReader(path) as r:
            ...     [b.num_rows for b in r.to_batches(filter=pc.field("a") > 0)]
            [2, 1]
        """
        return self.iter_batches(columns, filter, batch_size=batch_size)

    def to_reader(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        *,
        batch_size: int | None = None,
    ) -> pa.RecordBatchReader:
        """A ``pa.RecordBatchReader`` streaming the projected, filtered rows stripe by
        stripe: hand it to DuckDB, Polars or pyarrow without materialising the file.
        The reader must stay open while the stream is consumed.

        Example:
            >>> import pyarrow as pa, pyarrow.compute as pc, tempfile, os
            >>> from fermion.format.write.writer import write_table
            >>> path = os.path.join(tempfile.mkdtemp(), "s.fermion")
            >>> write_table(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}), path)
            >>> with FileReader(path) as r:
            ...     r.to_reader(["b"], pc.field("a") >= 2).read_all().to_pydict()
            {'b': ['y', 'z']}
        """
        if batch_size is not None and batch_size <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        projs, virtual = self._resolve_all(columns)
        schema = self._output_schema(projs, columns is None, virtual, columns)
        batches = self._iter(projs, filter, batch_size, columns is None, virtual, columns)
        return pa.RecordBatchReader.from_batches(schema, batches)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream of the whole file (``pa.RecordBatchReader.from_stream``,
        ``polars.from_arrow``, DuckDB); a ``requested_schema`` projects to its columns.

        Example:
            >>> import pyarrow as pa, tempfile, os
            >>> from fermion.format.write.writer import write_table
            >>> path = os.path.join(tempfile.mkdtemp(), "c.fermion")
            >>> write_table(pa.table({"a": [1, 2]}), path)
            >>> with FileReader(path) as r:
            ...     pa.table(r).to_pydict()
            {'a': [1, 2]}
        """
        return export_stream(lambda columns: self.to_reader(columns), requested_schema)

    def __repr__(self) -> str:
        return (
            f"FileReader({self.source.name!r}, rows={self.num_rows}, "
            f"columns={self.num_columns}, stripes={self.num_stripes})"
        )

    def take(self, indices: Any, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at ``indices`` (any order, repeats allowed), reading only the pages holding them."""
        try:
            idx = np.asarray(
                indices.to_numpy(zero_copy_only=False) if hasattr(indices, "to_numpy") else indices
            )
        except (TypeError, ValueError, pa.ArrowInvalid) as exc:
            raise InvalidArgumentError(f"indices must be integers: {exc}") from None
        if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
            raise InvalidArgumentError("indices must be a one-dimensional array of integers")
        idx = idx.astype(np.int64, copy=False)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self.num_rows):
            raise InvalidArgumentError(f"indices out of range for {self.num_rows} rows")
        projs, virtual, schema, metas, fast, lists = self._batch_plan(columns)
        unique, inverse = np.unique(idx, return_inverse=True)
        rows = self.file_meta.stripe_rows(metas)
        starts = np.concatenate([[0], np.cumsum(rows)])
        stripe_of = np.searchsorted(starts, unique, side="right") - 1
        jobs = [
            (int(s), int(rows[s]), Selection(points=unique[stripe_of == s] - starts[s]))
            for s in np.unique(stripe_of)
        ]
        parts = []
        if self.options.point_reads and self.source.mapped and (fast or lists):
            # of a mapped file, flat fixed-width columns read together, lists value by
            # value, stripe by stripe (fermion.format.read.batch_lookup); any other column
            # through the stripe reader within each stripe. (Another source keeps the
            # stripe reader's prefetch: the next stripe's requests wait while this one
            # decodes.)
            read: Iterable[tuple[int, int, Selection, list[pa.Array]]] = (
                (s, n, sel, self._read_points(projs, metas, fast, lists, s, n, sel))
                for s, n, sel in jobs
            )
        else:
            read = (
                (s, n, sel, part.columns)
                for s, n, sel, part in self._stripes.read_stripes(projs, metas, jobs)
            )
        for s, n, sel, cols in read:
            cols += self._virtual_columns(virtual, s, n, sel)
            parts.append(self._ordered(cols, schema, projs, virtual, columns))
        table = pa.Table.from_batches(parts, schema=schema) if parts else schema.empty_table()
        if len(unique) == len(idx) and bool(np.all(idx[1:] > idx[:-1])):
            return table  # asked in increasing order without repeats: already in place
        order = pa.array(inverse, type=pa.int64())
        columns_out = [take_values(col, order) for col in table.columns]
        return pa.Table.from_arrays(columns_out, schema=schema)

    def read_batches(self, batch_ids: Any, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows of the given batches, in the order asked (batch mode, docs/FORMAT.md §11).

        Each id is located to its stripe by the per-stripe min/max batch id of the
        BATCH_META metadata and to its rows by the stripe's batch lengths; then only the
        pages holding those rows are read: one page per projected flat stream for a batch
        that fits a page. ``columns`` may name the virtual ``_batch_id``/``_batch_index``.

        Raises:
            BatchModeError: the file is not a batch-mode file, or an id is not in it.

        Example:
            >>> import pyarrow as pa, tempfile, os
            >>> from fermion.format.write.writer import FileWriter
            >>> path = os.path.join(tempfile.mkdtemp(), "rb.fermion")
            >>> with FileWriter(path, pa.schema([("x", pa.string())])) as w:
            ...     w.append_batch(7, pa.table({"x": ["a", "b"]}))
            ...     w.append_batch(9, pa.table({"x": ["c"]}))
            >>> FileReader(path).read_batches([9, 7]).to_pydict()
            {'x': ['c', 'a', 'b']}
        """
        try:
            ids = np.asarray(
                batch_ids.to_numpy(zero_copy_only=False)
                if hasattr(batch_ids, "to_numpy")
                else batch_ids
            )
        except (TypeError, ValueError, pa.ArrowInvalid) as exc:
            raise InvalidArgumentError(f"batch_ids must be integers: {exc}") from None
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise InvalidArgumentError("batch_ids must be a one-dimensional array of integers")
        index = self.batches()
        projs, virtual, schema, metas, fast, lists = self._batch_plan(columns)
        unique, inverse = np.unique(ids.astype(np.int64), return_inverse=True)
        stripe_of = index.locate(unique)
        parts: list[pa.RecordBatch] = []
        out_start = np.zeros(len(unique), dtype=np.int64)
        out_len = np.zeros(len(unique), dtype=np.int64)
        done = 0
        for s in np.unique(stripe_of):
            mask = stripe_of == s
            b = index.stripe(int(s)) if s >= 0 else None
            pos = b.find(unique[mask]) if b is not None else np.full(int(mask.sum()), -1)
            if s < 0 or bool(np.any(pos < 0)):
                missing = unique[mask][pos < 0][:5].tolist()
                raise BatchModeError(f"batch id(s) {missing} are not in {self.source.name}")
            assert b is not None
            starts, lengths = b.starts[pos], b.lengths[pos]
            out_len[mask] = lengths
            out_start[mask] = done + np.concatenate([[0], np.cumsum(lengths)[:-1]])
            done += int(lengths.sum())
            ranges: Ranges = []
            for a, n_rows in zip(starts.tolist(), lengths.tolist(), strict=True):
                if ranges and ranges[-1][1] == a:
                    ranges[-1] = (ranges[-1][0], a + n_rows)
                else:
                    ranges.append((a, a + n_rows))
            n = int(index.stripe_rows[s])
            sel = Selection(ranges=ranges)
            wanted = sum(b - a for a, b in ranges)
            if self.options.point_reads and wanted <= max(_POINT_BATCH_ROWS, n // 8):
                # a few rows of a large stripe: read value by value (as take does), so the
                # cost grows with the batch, not with the pages that hold it
                sel = Selection(points=np.concatenate([np.arange(a, b) for a, b in ranges]))
            if sel.points is not None:
                cols = self._read_points(projs, metas, fast, lists, int(s), n, sel)
            else:
                cols = self._stripes.read_stripe(projs, metas, int(s), n, sel).columns
            cols += self._virtual_columns(virtual, int(s), n, sel)
            parts.append(self._ordered(cols, schema, projs, virtual, columns))
        table = pa.Table.from_batches(parts, schema=schema) if parts else schema.empty_table()
        if len(unique) == len(ids) and bool(np.all(inverse == np.arange(len(ids)))):
            return table  # asked in increasing order without repeats: already in place
        order = np.concatenate(
            [np.arange(out_start[u], out_start[u] + out_len[u]) for u in inverse.tolist()]
            or [np.zeros(0, dtype=np.int64)]
        )
        positions = pa.array(order, type=pa.int64())
        return pa.Table.from_arrays(
            [take_values(c, positions) for c in table.columns], schema=schema
        )

    def _batch_plan(self, columns: Sequence[str] | None) -> _BatchPlan:
        """What :meth:`read_batches` and :meth:`take` need of ``columns`` before reading:
        made once per column list (the last :data:`_BATCH_PLANS` lists are kept)."""
        key = None if columns is None else tuple(columns)
        names = key is None or all(isinstance(c, str) for c in key)  # (else raises below)
        plan = self._batch_plans.get(key) if names else None
        if plan is not None:
            return plan
        projs, virtual = self._resolve_all(columns)
        schema = self._output_schema(projs, columns is None, virtual, columns)
        metas = self.file_meta.column_metas(projs)
        fast = fast_columns(projs, metas)  # read together, not column by column
        lists = (
            sorted(list_columns(projs, metas) + binary_columns(projs, metas))
            if self.options.point_reads
            else []
        )
        plan = _BatchPlan(projs, virtual, schema, metas, fast, lists)
        if len(self._batch_plans) >= _BATCH_PLANS:
            del self._batch_plans[next(iter(self._batch_plans))]
        self._batch_plans[key] = plan  # (only names get here: anything else raised)
        return plan

    def _read_points(
        self,
        projs: Sequence[Projection],
        metas: Sequence[ColumnMeta],
        fast: Sequence[int],
        lists: Sequence[int],
        s: int,
        n: int,
        sel: Selection,
    ) -> list[pa.Array]:
        """The selected points of stripe ``s``, a column per projection: the ``fast``
        projections read together and the ``lists`` value by value
        (:mod:`fermion.format.read.batch_lookup`), the others (and lists whose offsets that
        cannot read) through the stripe reader. (Arrays, not a batch: the caller makes
        the one batch of the columns asked for.)"""
        assert sel.points is not None
        arrays: list[pa.Array | None] = [None] * len(projs)
        if fast:
            got = read_points(
                self.source,
                [projs[j] for j in fast],
                [metas[j] for j in fast],
                s,
                sel.points,
                self.options,
            )
            for j, arr in zip(fast, got, strict=True):
                arrays[j] = arr
        for j in lists:
            point_read = (
                read_binary_points if projs[j].tree.kind == Kind.BINARY else read_list_points
            )
            arrays[j] = point_read(self.source, projs[j], metas[j], s, sel.points, self.options)
        rest = [j for j in range(len(projs)) if arrays[j] is None]
        if rest:
            part = self._stripes.read_stripe(
                [projs[j] for j in rest], [metas[j] for j in rest], s, n, sel
            )
            for j, arr in zip(rest, part.columns, strict=True):
                arrays[j] = arr
        return arrays  # (every slot filled above)

    def batches(self) -> BatchIndex:
        """The BATCH_META index of a batch-mode file (loaded on first use)."""
        return self.file_meta.batches()

    def _resolve_all(self, columns: Sequence[str] | None) -> tuple[list[Projection], list[str]]:
        """User projections, and the virtual columns asked for (batch-mode files only)."""
        if columns is None or not self.batch_mode or isinstance(columns, str):
            return self._resolve(columns), []
        virtual = [c for c in dict.fromkeys(columns) if c in VIRTUAL_COLUMNS]
        return self._resolve([c for c in columns if c not in VIRTUAL_COLUMNS]), virtual

    def _output_schema(
        self,
        projs: Sequence[Projection],
        full: bool,
        virtual: Sequence[str] = (),
        columns: Sequence[str] | None = None,
    ) -> pa.Schema:
        fields = [p.field for p in projs] + virtual_fields(virtual)
        fields = [fields[k] for k in _order(projs, virtual, columns)]
        return pa.schema(fields, metadata=self.schema.metadata if full else None)

    def _with_virtual(
        self, batch: pa.RecordBatch, names: Sequence[str], s: int, n: int, sel: Selection
    ) -> pa.RecordBatch:
        """``batch`` with the virtual columns ``names`` of the selected rows appended."""
        if not names:
            return batch
        return pa.RecordBatch.from_arrays(
            batch.columns + self._virtual_columns(names, s, n, sel),
            names=batch.schema.names + list(names),
        )

    def _virtual_columns(
        self, names: Sequence[str], s: int, n: int, sel: Selection
    ) -> list[pa.Array]:
        """The virtual columns ``names`` of the selected rows of stripe ``s``."""
        if not names:
            return []
        b = self.batches().stripe(s)
        return [select_rows(virtual_array(v, b), [(0, n)], sel) for v in names]

    def _ordered(
        self,
        cols: Sequence[pa.Array],
        schema: pa.Schema,
        projs: Sequence[Projection],
        virtual: Sequence[str],
        columns: Sequence[str] | None,
    ) -> pa.RecordBatch:
        """``cols`` (the projections, then the virtual columns) in the order asked for."""
        ordered = [cols[k] for k in _order(projs, virtual, columns)]
        return pa.RecordBatch.from_arrays(ordered, schema=schema)

    def _iter(
        self,
        projs: list[Projection],
        filter: pc.Expression | None,
        batch_size: int | None,
        full: bool = False,
        virtual: Sequence[str] = (),
        columns: Sequence[str] | None = None,
        only: set[int] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        out_schema = self._output_schema(projs, full, virtual, columns)
        filter_projs: list[Projection] = []
        computed = list(virtual)  # virtual columns to compute: projected, then filter-only
        info = FilterInfo(filter) if filter is not None else None
        if info is not None:
            names = sorted(info.names)
            if self.batch_mode:
                computed += [n for n in names if n in VIRTUAL_COLUMNS and n not in computed]
                names = [n for n in names if n not in VIRTUAL_COLUMNS]
            have = {p.info.field.name for p in projs if p.selected is None}
            extra = [n for n in names if n not in have]
            if extra:
                filter_projs = self._resolve(extra)
        all_projs = projs + filter_projs
        metas = self.file_meta.column_metas(all_projs)
        rows = self.file_meta.stripe_rows(metas)
        stripes: Sequence[int] = range(len(rows))
        if info is not None:
            stripes = self._pruner.stripes(all_projs, metas, rows, info)
        if only is not None:
            stripes = [s for s in stripes if s in only]

        def jobs() -> Iterator[tuple[int, int, Selection]]:
            for s in stripes:
                n = int(rows[s])
                selection = Selection(ranges=[(0, n)])
                if info is not None:
                    selection = Selection(ranges=self._pruner.pages(all_projs, metas, s, n, info))
                    if not selection.ranges:
                        continue
                yield s, n, selection

        for s, n, selection, batch in self._stripes.read_stripes(all_projs, metas, jobs()):
            batch = self._with_virtual(batch, computed, s, n, selection)
            if filter is not None:
                try:
                    table = filter_table(
                        pa.Table.from_batches([batch]), filter, info.names if info else None
                    )
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                    raise InvalidArgumentError(
                        f"cannot apply filter {filter}: {arrow_reason(exc)}"
                    ) from None
                batch = table.combine_chunks().to_batches()[0] if table.num_rows else None
                if batch is None:
                    continue
            keep = list(range(len(projs)))
            keep += [len(all_projs) + computed.index(v) for v in virtual]
            batch = self._ordered(
                [batch.column(k) for k in keep], out_schema, projs, virtual, columns
            )
            if batch_size is None:
                yield batch
            else:
                for start in range(0, batch.num_rows, batch_size):
                    yield batch.slice(start, batch_size)

    # -- inspection -------------------------------------------------------------------
    def describe(self, columns: Sequence[str] | None = None) -> dict[str, Any]:
        """A JSON-able description of the file (for ``fermion inspect``)."""
        return describe_file(self.file_meta, self._resolve(columns))


_BATCH_PLANS = 8  # column lists whose read_batches plan a reader keeps
_POINT_BATCH_ROWS = 4_096  # read_batches reads at most this many rows of a stripe by points


class _BatchPlan(NamedTuple):
    """A column list resolved for :meth:`FileReader.read_batches`."""

    projs: list[Projection]
    virtual: list[str]
    schema: pa.Schema
    metas: list[ColumnMeta]
    fast: list[int]  # positions read together by batch_lookup.read_points
    lists: list[int]  # positions read value by value (batch_lookup.read_list_points, binary)


def _order(
    projs: Sequence[Projection], virtual: Sequence[str], columns: Sequence[str] | None
) -> list[int]:
    """Output positions in ``[projections..., virtual columns...]``."""
    if not virtual or columns is None:
        return list(range(len(projs) + len(virtual)))
    return output_order(columns, [p.info.field.name for p in projs], virtual)


def read_table(
    source: Any,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
    **options: Any,
) -> pa.Table:
    """Read a Fermion file into a ``pyarrow.Table``.

    Args:
        source: local path, fsspec URL, ``(filesystem, path)``, a seekable binary file
            object or a ``pa.NativeFile`` (see :class:`FileReader`).
        columns: names to project (nested fields as ``"struct.child"``); None for all.
        filter: a ``pyarrow.compute`` expression; stripes and pages whose statistics rule it
            out are skipped before any data IO, the rest is filtered exactly.
        **options: :class:`~fermion.format.options.ReadOptions` fields.

    Example:
        >>> import pyarrow as pa, tempfile, os
        >>> from fermion.format.write.writer import write_table
        >>> path = os.path.join(tempfile.mkdtemp(), "rt.fermion")
        >>> write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), path)
        >>> read_table(path, columns=["b"]).to_pydict()
        {'b': ['x', 'y']}
    """
    with FileReader(source, **options) as reader:
        return reader.read(columns=columns, filter=filter)
