"""The Fermion reader.

Open costs one speculative tail read (``prefetch_bytes``) that normally holds the footer,
CIT and schema index; nothing on the open path touches every column. Projecting k columns
then reads k CIT entries, k schema entries and k CMBs (lazily, coalesced, or the whole
CMB area at once when it is small and the projection broad), then only the pages the
request needs: statistics prune stripes and pages before any data IO, nearby ranges are
coalesced, and pages are checksummed and decompressed on a thread pool.

Example:
    >>> import pyarrow as pa, pyarrow.compute as pc, tempfile, os
    >>> from fermion.format.writer import write_table
    >>> path = os.path.join(tempfile.mkdtemp(), "r.fermion")
    >>> write_table(pa.table({"k": list(range(10)), "v": list("abcdefghij")}), path)
    >>> r = FileReader(path)
    >>> r.num_rows, r.read(columns=["v"], filter=pc.field("k") >= 8).to_pydict()
    (10, {'v': ['i', 'j']})
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import (
    ChecksumError,
    ColumnNotFoundError,
    InvalidArgumentError,
    InvalidFileError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from fermion.format.assemble import (
    StripeContext,
    assemble_flat,
    assemble_node,
    pruned_type,
    validity_of,
)
from fermion.format.cmb import ColumnMeta, parse_cmb
from fermion.format.layout import Kind, Node, build_tree
from fermion.format.options import ReadOptions, split_options
from fermion.format.pages import decode_page
from fermion.format.pruning import guarantee_for, referenced_fields, segments_that_may_match
from fermion.format.schema import ColumnInfo, SchemaIndex
from fermion.format.stats import bound_scalars, stats_kind
from fermion.format.structs import (
    CHUNK_ALL_NULL,
    CIT_DTYPE,
    FILE_HEADER_DTYPE,
    FOOTER_DTYPE,
    FORMAT_VERSION_MAJOR,
    MAGIC,
    DescType,
    StreamType,
)
from fermion.format.threads import pool
from fermion.io.source import ByteSource, open_source

__all__ = ["FileMetadata", "FileReader", "read_table"]

_KNOWN_REQUIRED = 0  # no required feature is defined by format 1.0 readers yet
_FLAT = (Kind.FIXED, Kind.BOOL, Kind.BINARY)
_PARALLEL_DECODE_BYTES = 1 << 20  # below this, handing pages to threads costs more than it saves
Ranges = list[tuple[int, int]]


@dataclass(frozen=True)
class FileMetadata:
    """File-level facts from the footer."""

    file_size: int
    num_rows: int
    num_columns: int
    num_stripes: int
    format_version: str
    required_features: int
    optional_features: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Projection:
    """One output column: the file column, its node tree and the nodes to materialise."""

    info: ColumnInfo
    tree: Node
    selected: set[int] | None  # None: the whole column

    @property
    def flat(self) -> bool:
        return self.tree.kind in _FLAT and not isinstance(self.tree.type, pa.ExtensionType)

    @property
    def field(self) -> pa.Field:
        f = self.info.field
        return pa.field(f.name, pruned_type(self.tree, self.selected), f.nullable, f.metadata)


@dataclass
class _Selection:
    """Rows wanted from one stripe: sorted disjoint ranges, or sorted unique points."""

    ranges: Ranges | None = None
    points: np.ndarray | None = None

    def span_pages(self, page_starts: np.ndarray, page_ends: np.ndarray) -> np.ndarray:
        """Indices of the pages (given their row spans) that hold wanted rows."""
        if self.points is not None:
            ids = np.searchsorted(page_ends, self.points, side="right")
            return np.unique(ids)
        assert self.ranges is not None
        keep = np.zeros(len(page_starts), dtype=bool)
        for a, b in self.ranges:
            keep |= (page_starts < b) & (page_ends > a)
        return np.nonzero(keep)[0]


class FileReader:
    """Read a Fermion file: projection, filters with pruning, batches and random access.

    Args:
        source: local path, fsspec URL, ``(filesystem, path)`` or a ``ByteSource``.
        **options: :class:`~fermion.format.options.ReadOptions` fields.

    Example:
        >>> import pyarrow as pa, tempfile, os
        >>> from fermion.format.writer import write_table
        >>> path = os.path.join(tempfile.mkdtemp(), "f.fermion")
        >>> write_table(pa.table({"a": [1, 2, 3]}), path)
        >>> with FileReader(path) as r:
        ...     r.take([2, 0]).to_pydict()
        {'a': [3, 1]}
    """

    def __init__(self, source: Any, **options: Any) -> None:
        self.options: ReadOptions = split_options(ReadOptions, options)
        self.source: ByteSource = open_source(source)
        try:
            self._open()
        except BaseException:
            self.source.close()
            raise
        self._cmbs: dict[int, ColumnMeta] = {}
        self._trees: dict[int, Node] = {}
        self._cmb_area: memoryview | None = None
        self._schema: pa.Schema | None = None

    # -- open -------------------------------------------------------------------------
    def _open(self) -> None:
        size = self.source.size
        fsize = FOOTER_DTYPE.itemsize
        name = self.source.name
        if size < FILE_HEADER_DTYPE.itemsize + fsize:
            raise TruncatedFileError(f"{name}: {size} bytes is too small for a Fermion file")
        tail_len = min(size, max(self.options.prefetch_bytes, fsize))
        self._tail_start = size - tail_len
        self._tail = self.source.read(self._tail_start, tail_len)
        raw = self._tail[tail_len - fsize :]
        footer = np.frombuffer(raw, dtype=FOOTER_DTYPE, count=1)[0]
        if bytes(footer["magic"]) != MAGIC:
            raise InvalidFileError(f"{name}: not a Fermion file (bad footer magic)")
        if int(footer["version_major"]) != FORMAT_VERSION_MAJOR:
            raise UnsupportedVersionError(
                f"{name}: format version {int(footer['version_major'])}."
                f"{int(footer['version_minor'])} is not supported (this reader: "
                f"{FORMAT_VERSION_MAJOR}.x)"
            )
        if zlib.crc32(bytes(raw[:40])) != int(footer["footer_crc"]):
            raise ChecksumError(f"{name}: footer CRC32 mismatch")
        unknown = int(footer["required_features"]) & ~_KNOWN_REQUIRED
        if unknown:
            raise UnsupportedVersionError(f"{name}: unknown required feature flags {unknown:#x}")
        self._footer = footer
        self.num_rows = int(footer["num_rows"])
        self.num_columns = int(footer["num_columns"])
        self.num_stripes = int(footer["num_stripes"])
        self._data_start = FILE_HEADER_DTYPE.itemsize
        self._cmb_offset = int(footer["cmb_offset"])
        self._schema_offset = int(footer["schema_offset"])
        self._cit_offset = int(footer["cit_offset"])
        schema_size = int(footer["schema_size"])
        cit_end = self._cit_offset + 8 * (self.num_columns + 1)
        if not (
            self._data_start <= self._cmb_offset <= self._schema_offset
            and self._schema_offset + schema_size == self._cit_offset
            and cit_end == size - fsize
        ):
            raise InvalidFileError(f"{name}: footer offsets are inconsistent with the file size")
        self._index = SchemaIndex(
            self._fetch_meta, self._schema_offset, schema_size, num_columns=self.num_columns
        )

    def _fetch_meta(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        """Metadata ranges: served from the tail buffer or the CMB area cache when possible."""
        out: list[memoryview | None] = [None] * len(ranges)
        missing: list[int] = []
        area = getattr(self, "_cmb_area", None)
        for i, (off, n) in enumerate(ranges):
            if off >= self._tail_start and off + n <= self._tail_start + len(self._tail):
                rel = off - self._tail_start
                out[i] = self._tail[rel : rel + n]
            elif area is not None and self._cmb_offset <= off and off + n <= self._schema_offset:
                rel = off - self._cmb_offset
                out[i] = area[rel : rel + n]
            else:
                missing.append(i)
        if missing:
            got = self.source.read_ranges(
                [ranges[i] for i in missing], max_gap=self.options.metadata_coalesce_gap
            )
            for i, view in zip(missing, got, strict=True):
                out[i] = view
        return out  # type: ignore[return-value]

    # -- public properties ------------------------------------------------------------
    @property
    def schema(self) -> pa.Schema:
        """The file's Arrow schema (parsed on first access: O(columns))."""
        if self._schema is None:
            self._schema = self._index.full_schema()
        return self._schema

    @property
    def metadata(self) -> FileMetadata:
        """Footer facts (no IO)."""
        f = self._footer
        return FileMetadata(
            file_size=self.source.size,
            num_rows=self.num_rows,
            num_columns=self.num_columns,
            num_stripes=self.num_stripes,
            format_version=f"{int(f['version_major'])}.{int(f['version_minor'])}",
            required_features=int(f["required_features"]),
            optional_features=int(f["optional_features"]),
        )

    @property
    def field_ids(self) -> list[int]:
        """Field id of every storage node, pre-order over all columns."""
        h = self._index._h
        (raw,) = self._fetch_meta(
            [(self._schema_offset + int(h["node_ids_offset"]), 4 * int(h["num_nodes"]))]
        )
        return np.frombuffer(raw, dtype="<i4").tolist()

    def close(self) -> None:
        """Release the file handle and worker threads."""
        self.source.close()

    def __enter__(self) -> FileReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- columns and CMBs -------------------------------------------------------------
    def _tree(self, info: ColumnInfo) -> Node:
        tree = self._trees.get(info.index)
        if tree is None:
            tree = self._trees[info.index] = build_tree(info.field)
            if len(tree.all_streams()) != info.num_streams:
                raise InvalidFileError(f"column {info.field.name!r}: stream count mismatch")
            if sum(1 for _ in tree.walk()) != len(info.field_ids):
                raise InvalidFileError(f"column {info.field.name!r}: field id count mismatch")
        return tree

    def _resolve(self, columns: Sequence[str] | None) -> list[_Projection]:
        if columns is None:
            infos = self._index.columns(range(self.num_columns))
            return [_Projection(i, self._tree(i), None) for i in infos]
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise InvalidArgumentError("columns must be a list of column names")
        found = self._index.lookup(list(columns))
        cols: list[int] = []
        paths: list[list[str]] = []
        for name, col in zip(columns, found, strict=True):
            if col is not None:
                cols.append(col)
                paths.append([])
                continue
            parts = name.split(".")
            for cut in range(len(parts) - 1, 0, -1):
                (col,) = self._index.lookup([".".join(parts[:cut])])
                if col is not None:
                    cols.append(col)
                    paths.append(parts[cut:])
                    break
            else:
                raise ColumnNotFoundError(f"column {name!r} is not in the file")
        infos = self._index.columns(cols)
        out: dict[int, _Projection] = {}
        order: list[int] = []
        for info, path, name in zip(infos, paths, columns, strict=True):
            tree = self._tree(info)
            proj = out.get(info.index)
            if proj is None:
                proj = out[info.index] = _Projection(info, tree, set() if path else None)
                order.append(info.index)
            if not path:
                proj.selected = None
            elif proj.selected is not None:
                proj.selected |= _select_path(tree, path, name)
        return [out[i] for i in order]

    def _column_metas(self, projs: Sequence[_Projection]) -> list[ColumnMeta]:
        need = [p for p in dict.fromkeys(p.info.index for p in projs) if p not in self._cmbs]
        if need:
            cit_raw = self._fetch_meta([(self._cit_offset + 8 * c, 16) for c in need])
            spans = []
            for c, raw in zip(need, cit_raw, strict=True):
                start, end = (int(x) for x in np.frombuffer(raw, dtype=CIT_DTYPE, count=2))
                if not self._cmb_offset <= start <= end <= self._schema_offset:
                    raise InvalidFileError(f"CIT entry of column {c} points outside the CMB area")
                spans.append((start, end - start))
            self._maybe_load_cmb_area(sum(n for _, n in spans))
            present = [(c, s) for c, s in zip(need, spans, strict=True) if s[1] > 0]
            raws = self._fetch_meta([s for _, s in present])
            by_col = dict(zip((c for c, _ in present), raws, strict=True))
            infos = {p.info.index: p for p in projs}
            for c in need:
                tree = infos[c].tree
                if c not in by_col:
                    self._cmbs[c] = ColumnMeta.all_null(len(tree.all_streams()))
                    continue
                meta = parse_cmb(
                    by_col[c],
                    tree,
                    num_stripes=self.num_stripes,
                    num_rows=self.num_rows,
                    column_index=c,
                    data_start=self._data_start,
                    data_end=self._cmb_offset,
                    column=infos[c].info.field.name,
                )
                self._cmbs[c] = meta
        return [self._cmbs[p.info.index] for p in projs]

    def _maybe_load_cmb_area(self, requested: int) -> None:
        """Eager strategy (seed 001): one read of the whole CMB area when it is small and the
        request needs a good share of it; otherwise CMBs are read lazily one by one."""
        if self._cmb_area is not None or self._cmb_offset >= self._tail_start:
            return  # loaded already, or the tail read holds the whole area
        area = self._schema_offset - self._cmb_offset
        if area <= self.options.eager_load_threshold and requested * 4 >= area:
            self._cmb_area = self.source.read(self._cmb_offset, area) if area else memoryview(b"")

    def _stripe_rows(self, metas: Sequence[ColumnMeta]) -> np.ndarray:
        for m in metas:
            if m.present and m.stripe_rows is not None:
                return m.stripe_rows.astype(np.int64)
        # every projected column is all-null: ask the first column that has a CMB
        if self.num_stripes == 0:
            return np.zeros(0, dtype=np.int64)
        (cit_raw,) = self._fetch_meta([(self._cit_offset, 8 * (self.num_columns + 1))])
        cit = np.frombuffer(cit_raw, dtype=CIT_DTYPE)
        sizes = np.diff(cit)
        nonzero = np.nonzero(sizes)[0]
        if len(nonzero) == 0:
            return np.array([self.num_rows], dtype=np.int64)  # all columns all-null
        (info,) = self._index.columns([int(nonzero[0])])
        (meta,) = self._column_metas([_Projection(info, self._tree(info), None)])
        assert meta.stripe_rows is not None
        return meta.stripe_rows.astype(np.int64)

    # -- reading ----------------------------------------------------------------------
    def read(
        self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None
    ) -> pa.Table:
        """Read the projected columns of the rows matching ``filter`` into a Table."""
        projs = self._resolve(columns)
        schema = self._output_schema(projs, columns is None)
        batches = list(self._iter(projs, filter, None))
        return pa.Table.from_batches(batches, schema=schema)

    def iter_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        *,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Yield record batches stripe by stripe (split to ``batch_size`` rows if given)."""
        if batch_size is not None and batch_size <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        projs = self._resolve(columns)
        return self._iter(projs, filter, batch_size, columns is None)

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
        projs = self._resolve(columns)
        schema = self._output_schema(projs, columns is None)
        unique, inverse = np.unique(idx, return_inverse=True)
        metas = self._column_metas(projs)
        rows = self._stripe_rows(metas)
        starts = np.concatenate([[0], np.cumsum(rows)])
        stripe_of = np.searchsorted(starts, unique, side="right") - 1
        parts = []
        for s in np.unique(stripe_of):
            local = unique[stripe_of == s] - starts[s]
            parts.append(
                self._read_stripe(projs, metas, int(s), int(rows[s]), _Selection(points=local))
            )
        table = pa.Table.from_batches(parts, schema=schema) if parts else schema.empty_table()
        return table.take(pa.array(inverse, type=pa.int64()))

    def _output_schema(self, projs: Sequence[_Projection], full: bool) -> pa.Schema:
        fields = [p.field for p in projs]
        return pa.schema(fields, metadata=self.schema.metadata if full else None)

    def _iter(
        self,
        projs: list[_Projection],
        filter: pc.Expression | None,
        batch_size: int | None,
        full: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        out_schema = self._output_schema(projs, full)
        filter_projs: list[_Projection] = []
        if filter is not None:
            names = sorted(referenced_fields(filter))
            have = {p.info.field.name for p in projs if p.selected is None}
            extra = [n for n in names if n not in have]
            if extra:
                filter_projs = self._resolve(extra)
        all_projs = projs + filter_projs
        metas = self._column_metas(all_projs)
        rows = self._stripe_rows(metas)
        stripes: Sequence[int] = range(len(rows))
        if filter is not None:
            stripes = self._prune_stripes(all_projs, metas, rows, filter)
        for s in stripes:
            n = int(rows[s])
            selection = _Selection(ranges=[(0, n)])
            if filter is not None:
                selection = _Selection(ranges=self._prune_pages(all_projs, metas, s, n, filter))
                if not selection.ranges:
                    continue
            batch = self._read_stripe(all_projs, metas, s, n, selection)
            if filter is not None:
                try:
                    table = pa.Table.from_batches([batch]).filter(filter)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                    raise InvalidArgumentError(f"cannot apply filter {filter}: {exc}") from None
                table = table.select(list(range(len(projs))))
                batch = table.combine_chunks().to_batches()[0] if table.num_rows else None
                if batch is None:
                    continue
            batch = pa.RecordBatch.from_arrays(batch.columns[: len(projs)], schema=out_schema)
            if batch_size is None:
                yield batch
            else:
                for start in range(0, batch.num_rows, batch_size):
                    yield batch.slice(start, batch_size)

    # -- pruning ----------------------------------------------------------------------
    def _stats_columns(
        self, projs: Sequence[_Projection], metas: Sequence[ColumnMeta], filter_names: set[str]
    ) -> list[tuple[_Projection, ColumnMeta]]:
        seen: set[int] = set()
        out = []
        for p, m in zip(projs, metas, strict=True):
            if p.info.field.name in filter_names and p.info.index not in seen and p.flat:
                seen.add(p.info.index)
                out.append((p, m))
        return out

    def _prune_stripes(
        self,
        projs: Sequence[_Projection],
        metas: Sequence[ColumnMeta],
        rows: np.ndarray,
        filter: pc.Expression,
    ) -> list[int]:
        names = referenced_fields(filter)
        cols = self._stats_columns(projs, metas, names)
        if not cols:
            return list(range(len(rows)))
        schema = pa.schema([p.info.field for p, _ in cols])
        guarantees = []
        for s in range(len(rows)):
            parts = [self._chunk_guarantee(p, m, s, int(rows[s])) for p, m in cols]
            guarantees.append(_and(parts))
        return segments_that_may_match(schema, guarantees, filter)

    def _chunk_guarantee(
        self, p: _Projection, m: ColumnMeta, s: int, n: int
    ) -> pc.Expression | None:
        name, t = p.info.field.name, p.info.field.type
        if not m.present:
            return guarantee_for(name, t, None, n, n)
        vk = p.tree.stream(StreamType.VALIDITY)
        dk = p.tree.stream(StreamType.DATA)
        assert vk is not None and dk is not None
        vdesc, ddesc = m.streams[vk.index], m.streams[dk.index]
        if ddesc.full is None:
            nulls = n if vdesc.desc_type == DescType.FORCE_NULL else 0
            if vdesc.simple is not None and int(vdesc.simple[s]["length"]) == CHUNK_ALL_NULL:
                nulls = n
            return guarantee_for(name, t, None, nulls, n) if nulls in (0, n) else None
        d = ddesc.full[s]
        bounds = bound_scalars(
            t, stats_kind(t), int(d["chunk_min"]), int(d["chunk_max"]), int(d["stats_flags"])
        )
        return guarantee_for(name, t, bounds, int(d["null_count"]), n)

    def _prune_pages(
        self,
        projs: Sequence[_Projection],
        metas: Sequence[ColumnMeta],
        s: int,
        n: int,
        filter: pc.Expression,
    ) -> Ranges:
        names = referenced_fields(filter)
        cols = [
            (p, m)
            for p, m in self._stats_columns(projs, metas, names)
            if m.present and m.streams[p.tree.stream(StreamType.DATA).index].full is not None  # type: ignore[union-attr]
        ]
        if not cols:
            return [(0, n)]
        per_col = []
        cuts = {0, n}
        for p, m in cols:
            desc = m.streams[p.tree.stream(StreamType.DATA).index]  # type: ignore[union-attr]
            pages = desc.pages(s)
            if int(desc.full[s]["num_pages"]) == 0:  # type: ignore[index]
                continue
            ends = np.cumsum(pages["row_count"].astype(np.int64))
            cuts.update(int(e) for e in ends)
            per_col.append((p, pages, ends))
        if not per_col:
            return [(0, n)]
        bounds = np.array(sorted(cuts), dtype=np.int64)
        seg_starts, seg_ends = bounds[:-1], bounds[1:]
        guarantees: list[pc.Expression | None] = [None] * len(seg_starts)
        parts: list[list[pc.Expression | None]] = [[] for _ in seg_starts]
        for p, pages, ends in per_col:
            t = p.info.field.type
            kind = stats_kind(t)
            page_of = np.searchsorted(ends, seg_starts, side="right")
            cache: dict[int, pc.Expression | None] = {}
            for i, pg in enumerate(page_of):
                g = cache.get(int(pg), False)
                if g is False:
                    meta = pages[int(pg)]
                    bounds_s = bound_scalars(
                        t,
                        kind,
                        int(meta["min_val"]),
                        int(meta["max_val"]),
                        int(meta["stats_flags"]),
                    )
                    g = guarantee_for(
                        p.info.field.name,
                        t,
                        bounds_s,
                        int(meta["null_count"]),
                        int(meta["row_count"]),
                    )
                    cache[int(pg)] = g
                parts[i].append(g)
        guarantees = [_and(ps) for ps in parts]
        schema = pa.schema([p.info.field for p, _, _ in per_col])
        kept = segments_that_may_match(schema, guarantees, filter)
        ranges: Ranges = []
        for i in sorted(kept):
            a, b = int(seg_starts[i]), int(seg_ends[i])
            if ranges and ranges[-1][1] == a:
                ranges[-1] = (ranges[-1][0], b)
            else:
                ranges.append((a, b))
        return ranges

    # -- one stripe -------------------------------------------------------------------
    def _read_stripe(
        self,
        projs: Sequence[_Projection],
        metas: Sequence[ColumnMeta],
        s: int,
        n: int,
        sel: _Selection,
    ) -> pa.RecordBatch:
        """Plan page IO for the selection, fetch coalesced, decode in parallel, assemble."""
        requests: list[tuple[int, _PageRequest]] = []  # (projection, page request)
        plans: list[_ColumnPlan | None] = []
        for j, (p, m) in enumerate(zip(projs, metas, strict=True)):
            if not m.present:
                plans.append(None)
                continue
            plan = _plan_column(p, m, s, n, sel)
            plans.append(plan)
            requests.extend((j, req) for req in plan.pages)
        views = self.source.read_ranges(
            [(req[2], req[3]) for _, req in requests], max_gap=self.options.coalesce_gap
        )
        verify = self.options.verify_checksums
        name = self.source.name

        def decode(i: int) -> bytes | memoryview:
            _, (_, _, off, _, values, size) = requests[i]
            return decode_page(
                views[i],
                expected_values=values,
                expected_size=size,
                where=f"{name}: page at offset {off}",
                verify_crc=verify,
            )

        total = sum(req[3] for _, req in requests)
        if (
            len(requests) > 1
            and total >= _PARALLEL_DECODE_BYTES
            and self.options.worker_threads > 1
        ):
            decoded = list(pool().map(decode, range(len(requests))))
        else:
            decoded = [decode(i) for i in range(len(requests))]
        per_proj: list[dict[tuple[int, int], bytes | memoryview]] = [{} for _ in projs]
        for (j, (k, page, *_)), payload in zip(requests, decoded, strict=True):
            per_proj[j][(k, page)] = payload
        arrays = []
        for j, (p, m) in enumerate(zip(projs, metas, strict=True)):
            if not m.present:
                arrays.append(_select(pa.nulls(n, p.field.type), [(0, n)], sel))
                continue
            ctx = StripeContext(p.info.field.name, m, s, per_proj[j], p.selected)
            column_plan = plans[j]
            assert column_plan is not None
            arrays.append(column_plan.assemble(ctx, n, sel))
        fields = [p.field for p in projs]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    # -- inspection -------------------------------------------------------------------
    def describe(self, columns: Sequence[str] | None = None) -> dict[str, Any]:
        """A JSON-able description of the file (for ``fermion inspect``)."""
        from fermion.format.describe import describe_file

        return describe_file(self, columns)


def _and(parts: Sequence[pc.Expression | None]) -> pc.Expression | None:
    out: pc.Expression | None = None
    for p in parts:
        if p is not None:
            out = p if out is None else out & p
    return out


def _select_path(tree: Node, path: list[str], full_name: str) -> set[int]:
    """Node indices kept by a nested path projection (the path and the leaf's subtree)."""
    keep = {tree.index}
    node = tree
    for part in path:
        while node.kind in (Kind.LIST, Kind.FIXED_LIST) and node.children[0].kind == Kind.STRUCT:
            node = node.children[0]
            keep.add(node.index)
        if node.kind != Kind.STRUCT:
            raise ColumnNotFoundError(f"column {full_name!r} is not in the file")
        match = [c for c in node.children if c.name == part]
        if not match:
            raise ColumnNotFoundError(f"column {full_name!r} is not in the file")
        node = match[0]
        keep.add(node.index)
    keep.update(n.index for n in node.walk())
    return keep


def _select(arr: pa.Array, covered: Ranges, sel: _Selection) -> pa.Array:
    """Pick the selected rows out of ``arr``, which holds the rows of ``covered`` in order."""
    starts = np.array([a for a, _ in covered], dtype=np.int64)
    lens = np.array([b - a for a, b in covered], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(lens)[:-1]]) if len(lens) else lens
    if sel.points is not None:
        run = np.searchsorted(starts, sel.points, side="right") - 1
        pos = base[run] + (sel.points - starts[run])
        if len(covered) == 1 and covered[0][0] == 0 and len(pos) == len(arr):
            return arr
        return arr.take(pa.array(pos, type=pa.int64()))
    assert sel.ranges is not None
    pieces = []
    for a, b in sel.ranges:
        r = int(np.searchsorted(starts, a, side="right") - 1)
        pieces.append(arr.slice(int(base[r] + a - starts[r]), b - a))
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_arrays(pieces)


@dataclass
class _ColumnPlan:
    """Pages to read for one column in one stripe, and how to assemble them."""

    proj: _Projection
    pages: list[_PageRequest]
    runs: list[tuple[tuple[int, int], tuple[int, int]]] | None  # flat: (page run, row run)

    def assemble(self, ctx: StripeContext, n: int, sel: _Selection) -> pa.Array:
        if self.runs is None:
            return _select(assemble_node(ctx, self.proj.tree, n), [(0, n)], sel)
        tree = self.proj.tree
        cache: list[tuple[object | None, int]] = []

        def validity() -> tuple[object | None, int]:
            if not cache:
                cache.append(validity_of(ctx, tree, n))
            return cache[0]

        pieces = [assemble_flat(ctx, tree, n, run, rows, validity) for run, rows in self.runs]
        arr = pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)
        return _select(arr, [rows for _, rows in self.runs], sel)


def _expected_size(node: Node, stream_type: StreamType, values: int) -> int | None:
    """Decoded bytes a page must have, when the metadata implies it (bounds allocation)."""
    if stream_type == StreamType.VALIDITY:
        return (values + 7) // 8
    if stream_type == StreamType.OFFSETS:
        return (values + 1) * node.byte_width
    if node.kind == Kind.BOOL:
        return (values + 7) // 8
    if node.kind in (Kind.FIXED, Kind.DICTIONARY):
        return values * node.byte_width
    return None  # binary data: checked against the offsets after decoding


# (stream index, page index, file offset, bytes on disk, values, exact decoded bytes or None)
_PageRequest = tuple[int, int, int, int, int, int | None]


def _all_pages(m: ColumnMeta, tree: Node, s: int, selected: set[int] | None) -> list[_PageRequest]:
    out: list[_PageRequest] = []
    for node in tree.walk():
        if selected is not None and node.index not in selected:
            continue
        for spec in node.streams:
            desc = m.streams[spec.index]
            if desc.desc_type == DescType.SIMPLE:
                assert desc.simple is not None
                d = desc.simple[s]
                length = int(d["length"])
                if 0 < length != CHUNK_ALL_NULL:
                    values = int(d["num_values"])
                    size = _expected_size(node, spec.stream_type, values)
                    out.append((spec.index, 0, int(d["offset"]), length, values, size))
            elif desc.desc_type == DescType.FULL:
                pages = desc.pages(s)
                offs = desc.page_offsets(s)
                for i in range(len(pages)):
                    values = int(pages[i]["row_count"])
                    size = _expected_size(node, spec.stream_type, values)
                    out.append(
                        (spec.index, i, int(offs[i]), int(pages[i]["page_size"]), values, size)
                    )
    return out


def _plan_column(p: _Projection, m: ColumnMeta, s: int, n: int, sel: _Selection) -> _ColumnPlan:
    tree = p.tree
    if not p.flat:
        return _ColumnPlan(p, _all_pages(m, tree, s, p.selected), None)
    pages: list[_PageRequest] = []
    vspec = tree.stream(StreamType.VALIDITY)
    dspec = tree.stream(StreamType.DATA)
    assert vspec is not None and dspec is not None
    vdesc = m.streams[vspec.index]
    if vdesc.desc_type == DescType.SIMPLE:
        assert vdesc.simple is not None
        d = vdesc.simple[s]
        length = int(d["length"])
        if 0 < length != CHUNK_ALL_NULL:
            values = int(d["num_values"])
            pages.append((vspec.index, 0, int(d["offset"]), length, values, (values + 7) // 8))
    ddesc = m.streams[dspec.index]
    if ddesc.desc_type != DescType.FULL or int(ddesc.full[s]["num_pages"]) == 0:  # type: ignore[index]
        return _ColumnPlan(p, pages, [((0, 0), (0, n))])
    metas = ddesc.pages(s)
    ends = np.cumsum(metas["row_count"].astype(np.int64))
    starts = ends - metas["row_count"].astype(np.int64)
    if int(ends[-1]) != n:
        raise InvalidFileError(
            f"column {p.info.field.name!r}: pages hold {int(ends[-1])} rows, stripe has {n}"
        )
    wanted = sel.span_pages(starts, ends)
    streams = [(dspec.index, ddesc, StreamType.DATA)]
    ospec = tree.stream(StreamType.OFFSETS)
    if ospec is not None:
        odesc = m.streams[ospec.index]
        if odesc.desc_type == DescType.FULL and int(odesc.full[s]["num_pages"]):  # type: ignore[index]
            if not np.array_equal(odesc.pages(s)["row_count"], metas["row_count"]):
                raise InvalidFileError(
                    f"column {p.info.field.name!r}: offsets and data pages are not aligned"
                )
            streams.insert(0, (ospec.index, odesc, StreamType.OFFSETS))
        else:
            return _ColumnPlan(p, _all_pages(m, tree, s, None), None)
    for k, desc, stream_type in streams:
        offs = desc.page_offsets(s)
        pm = desc.pages(s)
        for i in wanted:
            values = int(pm[i]["row_count"])
            size = _expected_size(tree, stream_type, values)
            pages.append((k, int(i), int(offs[i]), int(pm[i]["page_size"]), values, size))
    w = [int(x) for x in wanted]
    runs = []
    i = 0
    while i < len(w):
        j = i
        while j + 1 < len(w) and w[j + 1] == w[j] + 1:
            j += 1
        runs.append(((w[i], w[j] + 1), (int(starts[w[i]]), int(ends[w[j]]))))
        i = j + 1
    return _ColumnPlan(p, pages, runs)


def read_table(
    source: Any,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
    **options: Any,
) -> pa.Table:
    """Read a Fermion file into a ``pyarrow.Table``.

    Args:
        source: local path, fsspec URL or ``(filesystem, path)``.
        columns: names to project (nested fields as ``"struct.child"``); None for all.
        filter: a ``pyarrow.compute`` expression; stripes and pages whose statistics rule it
            out are skipped before any data IO, the rest is filtered exactly.
        **options: :class:`~fermion.format.options.ReadOptions` fields.

    Example:
        >>> import pyarrow as pa, tempfile, os
        >>> from fermion.format.writer import write_table
        >>> path = os.path.join(tempfile.mkdtemp(), "rt.fermion")
        >>> write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), path)
        >>> read_table(path, columns=["b"]).to_pydict()
        {'b': ['x', 'y']}
    """
    with FileReader(source, **options) as reader:
        return reader.read(columns=columns, filter=filter)
