"""Reading a file's metadata: footer, Column Index Table (CIT), Column Metadata Blocks and
schema.

This module does every read of the metadata areas; the structs it reads are built and
parsed in :mod:`fermion.format.metadata` (the footer in
:mod:`~fermion.format.metadata.footer`). :class:`MetadataReader` is what the reader,
``describe`` and the batch index use: opening costs one speculative tail read
(``prefetch_bytes``) that normally holds the footer, CIT and schema index; nothing here
touches every column. Resolving k columns reads k CIT entries, k schema entries and k CMBs
(lazily and coalesced, or the whole CMB area in one read when it is small and the request
needs a good share of it).

Example:
    >>> import pyarrow as pa, tempfile, os
    >>> from fermion.format.options import ReadOptions
    >>> from fermion.format.write.writer import write_table
    >>> from fermion.io.source import open_source
    >>> path = os.path.join(tempfile.mkdtemp(), "m.fermion")
    >>> write_table(pa.table({"a": [1, None, 3], "b": ["x", "y", "z"]}), path)
    >>> meta = MetadataReader(open_source(path), ReadOptions())
    >>> (proj,) = meta.projections(["b"])
    >>> (cmb,) = meta.column_metas([proj])
    >>> meta.num_rows, proj.info.index, meta.stripe_rows([cmb]).tolist()
    (3, 1, [3])
    >>> meta.source.close()
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from fermion.errors import (
    BatchModeError,
    ColumnNotFoundError,
    InvalidArgumentError,
    InvalidFileError,
    TruncatedFileError,
    UnsupportedTypeError,
)
from fermion.format.metadata.batch import system_tree
from fermion.format.metadata.cit import (
    cit_size,
    entry_range,
    parse_entries,
    parse_entry,
    parse_span,
    span_range,
)
from fermion.format.metadata.cmb import ColumnMeta, parse_cmb
from fermion.format.metadata.footer import FileMetadata, parse_footer
from fermion.format.metadata.layout import Kind, Node, build_tree
from fermion.format.metadata.schema import ColumnInfo, SchemaIndex
from fermion.format.metadata.structs import (
    FILE_HEADER_DTYPE,
    FOOTER_DTYPE,
    MAGIC,
    RequiredFeature,
)
from fermion.format.options import ReadOptions
from fermion.format.read.batch_read import BatchIndex
from fermion.format.read.plan import Projection
from fermion.io.source import ByteSource

__all__ = ["MetadataReader"]


def _weak_fetch(meta: MetadataReader) -> Callable[[Sequence[tuple[int, int]]], list[memoryview]]:
    """``meta.fetch`` without a strong reference to ``meta``: the schema index it is given
    to would otherwise close a reference cycle, and every reader (closed or not) would be
    left to the garbage collector with all it built, not freed by reference counting."""
    ref = weakref.ref(meta)

    def fetch(ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        owner = ref()
        if owner is None:
            raise InvalidArgumentError("the file's metadata reader is gone")
        return owner.fetch(ranges)

    return fetch


class MetadataReader:
    """The metadata of one open file, read lazily and cached.

    Args:
        source: the open file.
        options: ``prefetch_bytes``, ``metadata_coalesce_gap`` and ``eager_load_threshold``
            steer the metadata reads; ``coalesce_gap`` and ``verify_checksums`` the batch
            index's reads.

    Raises:
        TruncatedFileError, InvalidFileError, ChecksumError, UnsupportedVersionError: the
            footer or schema header is damaged or from an unsupported format version
            (``TruncatedFileError`` when the header is a Fermion one but the footer is gone).

    Example:
        >>> import pyarrow as pa, tempfile, os
        >>> from fermion.format.write.writer import write_table
        >>> from fermion.io.source import open_source
        >>> path = os.path.join(tempfile.mkdtemp(), "mr.fermion")
        >>> write_table(pa.table({"a": [1, 2]}), path)
        >>> meta = MetadataReader(open_source(path), ReadOptions())
        >>> meta.file_metadata.num_columns, meta.schema.names
        (1, ['a'])
        >>> meta.cmb_offsets([0])[0] == meta.cmb_offset
        True
        >>> meta.close(); meta.source.close()
    """

    def __init__(self, source: ByteSource, options: ReadOptions) -> None:
        self.source = source
        self.options = options
        self.cmbs: dict[int, ColumnMeta] = {}  # parsed CMBs by column index
        self._trees: dict[int, Node] = {}
        self._cmb_area: memoryview | None = None
        self._schema: pa.Schema | None = None
        self._batch_index: BatchIndex | None = None
        size = source.size
        fsize = FOOTER_DTYPE.itemsize
        name = source.name
        if size < FILE_HEADER_DTYPE.itemsize + fsize:
            raise TruncatedFileError(f"{name}: {size} bytes is too small for a Fermion file")
        tail_len = min(size, max(options.prefetch_bytes, fsize))
        self._tail_start = size - tail_len
        self._tail = source.read(self._tail_start, tail_len)
        raw = bytes(self._tail[tail_len - fsize :])  # a copy: it outlives close()
        if bytes(raw[-len(MAGIC) :]) != MAGIC:
            if self._starts_like_fermion():
                raise TruncatedFileError(
                    f"{name}: a Fermion header but no footer magic at the end: the file is "
                    f"truncated (cut short at {size} bytes?)"
                )
            if bytes(raw[-4:]) == b"PAR1":
                raise InvalidFileError(
                    f"{name}: a Parquet file, not a Fermion file; convert it with "
                    "fermion.parquet_to_fermion (or `fermion convert`)"
                )
        self.footer = parse_footer(raw, name)
        footer = self.footer
        self.required_features = int(footer["required_features"])
        self.num_rows = int(footer["num_rows"])
        self.num_columns = int(footer["num_columns"])
        self.num_stripes = int(footer["num_stripes"])
        self.data_start = FILE_HEADER_DTYPE.itemsize
        self.cmb_offset = int(footer["cmb_offset"])
        self.schema_offset = int(footer["schema_offset"])
        self.cit_offset = int(footer["cit_offset"])
        schema_size = int(footer["schema_size"])
        self.batch_mode = bool(self.required_features & RequiredFeature.BATCH_MODE)
        # batch mode: CIT entry num_columns is the BATCH_META system column's CMB
        cit_end = self.cit_offset + cit_size(self.num_columns, self.batch_mode)
        if not (
            self.data_start <= self.cmb_offset <= self.schema_offset
            and self.schema_offset + schema_size == self.cit_offset
            and cit_end == size - fsize
        ):
            raise InvalidFileError(f"{name}: footer offsets are inconsistent with the file size")
        rel = self.schema_offset - self._tail_start
        self.index = SchemaIndex(
            _weak_fetch(self),
            self.schema_offset,
            schema_size,
            num_columns=self.num_columns,
            resident=self._tail[rel : rel + schema_size] if rel >= 0 else None,
        )

    def _starts_like_fermion(self) -> bool:
        """Whether the file header carries the Fermion magic (the tail buffer may hold it)."""
        n = len(MAGIC)
        head = self._tail[:n] if self._tail_start == 0 else self.source.read(0, n)
        return bytes(head) == MAGIC

    # -- raw metadata ranges ----------------------------------------------------------
    def fetch(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        """Metadata ranges: served from the tail buffer or the CMB area cache when possible,
        the rest in one coalesced request."""
        tail, start = self._tail, self._tail_start
        end = start + len(tail)
        if all(start <= off and off + n <= end for off, n in ranges):  # the usual case
            return [tail[off - start : off - start + n] for off, n in ranges]
        out: list[memoryview | None] = [None] * len(ranges)
        missing: list[int] = []
        area = self._cmb_area
        for i, (off, n) in enumerate(ranges):
            if off >= self._tail_start and off + n <= self._tail_start + len(self._tail):
                rel = off - self._tail_start
                out[i] = self._tail[rel : rel + n]
            elif area is not None and self.cmb_offset <= off and off + n <= self.schema_offset:
                rel = off - self.cmb_offset
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

    def close(self) -> None:
        """Drop the metadata buffers (views into a memory map among them); the parsed
        schema stays. The source is the caller's to close."""
        self._tail = memoryview(b"")
        self.index.release()
        self._cmb_area = None
        self.cmbs.clear()
        self._batch_index = None

    # -- footer and schema ------------------------------------------------------------
    @property
    def file_metadata(self) -> FileMetadata:
        """Footer facts (no IO)."""
        f = self.footer
        return FileMetadata(
            file_size=self.source.size,
            num_rows=self.num_rows,
            num_columns=self.num_columns,
            num_stripes=self.num_stripes,
            format_version=f"{int(f['version_major'])}.{int(f['version_minor'])}",
            required_features=self.required_features,
            optional_features=int(f["optional_features"]),
        )

    @property
    def schema(self) -> pa.Schema:
        """The file's Arrow schema (parsed on first access: O(columns))."""
        if self._schema is None:
            self._schema = self.index.full_schema()
        return self._schema

    def tree(self, info: ColumnInfo) -> Node:
        """The storage node tree of a column (built once, checked against the schema entry)."""
        tree = self._trees.get(info.index)
        if tree is None:
            try:
                tree = build_tree(info.field, bloom=info.has_bloom)
            except UnsupportedTypeError as exc:
                raise InvalidFileError(f"column {info.field.name!r}: {exc}") from None
            self._trees[info.index] = tree
            if len(tree.all_streams()) != info.num_streams:
                raise InvalidFileError(f"column {info.field.name!r}: stream count mismatch")
            nodes = sum(1 for _ in tree.walk()) if tree.children else 1
            if nodes != len(info.field_ids):
                raise InvalidFileError(f"column {info.field.name!r}: field id count mismatch")
        return tree

    def projections(self, columns: Sequence[str] | None) -> list[Projection]:
        """One projection per file column named (all columns for None): a dotted name
        ``"s.a"`` selects that nested path of column ``s``; names of one column merge.

        Raises:
            ColumnNotFoundError: a name is not in the file.
            InvalidArgumentError: ``columns`` is not a list of strings.
        """
        if columns is None:
            infos = self.index.columns(range(self.num_columns))
            return [Projection(i, self.tree(i), None) for i in infos]
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise InvalidArgumentError("columns must be a list of column names")
        found = self.index.lookup(list(columns))
        cols: list[int] = []
        paths: list[list[str]] = []
        for name, col in zip(columns, found, strict=True):
            if col is not None:
                cols.append(col)
                paths.append([])
                continue
            parts = name.split(".")
            for cut in range(len(parts) - 1, 0, -1):
                (col,) = self.index.lookup([".".join(parts[:cut])])
                if col is not None:
                    cols.append(col)
                    paths.append(parts[cut:])
                    break
            else:
                raise ColumnNotFoundError(f"column {name!r} is not in the file")
        infos = self.index.columns(cols)
        out: dict[int, Projection] = {}
        order: list[int] = []
        for info, path, name in zip(infos, paths, columns, strict=True):
            tree = self.tree(info)
            proj = out.get(info.index)
            if proj is None:
                proj = out[info.index] = Projection(info, tree, set() if path else None)
                order.append(info.index)
            if not path:
                proj.selected = None
            elif proj.selected is not None:
                proj.selected |= _select_path(tree, path, name)
        return [out[i] for i in order]

    # -- CIT and CMBs -----------------------------------------------------------------
    def cmb_offsets(self, columns: Sequence[int]) -> list[int]:
        """The CIT entries (absolute CMB offsets) of ``columns``."""
        raws = self.fetch([entry_range(self.cit_offset, c) for c in columns])
        return [parse_entry(raw) for raw in raws]

    def column_metas(self, projs: Sequence[Projection]) -> list[ColumnMeta]:
        """The parsed CMB of each projection's column (read once, then cached)."""
        need = [p for p in dict.fromkeys(p.info.index for p in projs) if p not in self.cmbs]
        if need:
            cit_raw = self.fetch([span_range(self.cit_offset, c) for c in need])
            spans = []
            for c, raw in zip(need, cit_raw, strict=True):
                start, end = parse_span(
                    raw, self.cmb_offset, self.schema_offset, what=f"CIT entry of column {c}"
                )
                spans.append((start, end - start))
            self._maybe_load_cmb_area(sum(n for _, n in spans))
            present = [(c, s) for c, s in zip(need, spans, strict=True) if s[1] > 0]
            raws = self.fetch([s for _, s in present])
            by_col = dict(zip((c for c, _ in present), raws, strict=True))
            infos = {p.info.index: p for p in projs}
            for c in need:
                tree = infos[c].tree
                if c not in by_col:
                    self.cmbs[c] = ColumnMeta.all_null(len(tree.all_streams()))
                    continue
                self.cmbs[c] = self._parse_cmb(by_col[c], tree, c, infos[c].info.field.name)
        return [self.cmbs[p.info.index] for p in projs]

    def _parse_cmb(self, raw: memoryview, tree: Node, column: int, name: str) -> ColumnMeta:
        return parse_cmb(
            raw,
            tree,
            num_stripes=self.num_stripes,
            num_rows=self.num_rows,
            column_index=column,
            data_start=self.data_start,
            data_end=self.cmb_offset,
            column=name,
        )

    def _maybe_load_cmb_area(self, requested: int) -> None:
        """Eager strategy (docs/FORMAT.md): one read of the whole CMB area when it is small
        and the request needs a good share of it; otherwise CMBs are read lazily one by one."""
        if self._cmb_area is not None or self.cmb_offset >= self._tail_start:
            return  # loaded already, or the tail read holds the whole area
        area = self.schema_offset - self.cmb_offset
        if area <= self.options.eager_load_threshold and requested * 4 >= area:
            self._cmb_area = self.source.read(self.cmb_offset, area) if area else memoryview(b"")

    def stripe_rows(self, metas: Sequence[ColumnMeta]) -> np.ndarray:
        """Rows per stripe, from the first of ``metas`` that has a CMB (else from the batch
        index, else from the first column of the file that has one)."""
        for m in metas:
            if m.present and m.stripe_rows is not None:
                return m.stripe_rows.astype(np.int64)
        # every projected column is all-null: ask the first column that has a CMB
        if self.num_stripes == 0:
            return np.zeros(0, dtype=np.int64)
        if self.batch_mode:
            return self.batches().stripe_rows
        (cit_raw,) = self.fetch([(self.cit_offset, cit_size(self.num_columns, False))])
        cit = parse_entries(cit_raw)
        sizes = np.diff(cit)
        nonzero = np.nonzero(sizes)[0]
        if len(nonzero) == 0:
            return np.array([self.num_rows], dtype=np.int64)  # all columns all-null
        (info,) = self.index.columns([int(nonzero[0])])
        (meta,) = self.column_metas([Projection(info, self.tree(info), None)])
        if meta.stripe_rows is None:
            raise InvalidFileError(f"{self.source.name}: column {info.index} has no stripe rows")
        return meta.stripe_rows.astype(np.int64)

    # -- batch mode -------------------------------------------------------------------
    def batches(self) -> BatchIndex:
        """The BATCH_META index of a batch-mode file (loaded on first use).

        Raises:
            BatchModeError: the file was not written in batch mode.
        """
        if not self.batch_mode:
            raise BatchModeError(f"{self.source.name} was not written in batch mode")
        if self._batch_index is None:
            self._batch_index = BatchIndex(
                self._system_meta(),
                self.source,
                coalesce_gap=self.options.coalesce_gap,
                verify_checksums=self.options.verify_checksums,
            )
        return self._batch_index

    def _system_meta(self) -> ColumnMeta:
        """The CMB of the BATCH_META system column (CIT entry ``num_columns``)."""
        c = self.num_columns
        (cit_raw,) = self.fetch([span_range(self.cit_offset, c)])
        start, end = parse_span(
            cit_raw,
            self.cmb_offset,
            self.schema_offset,
            what=f"{self.source.name}: BATCH_META: CIT entry",
            nonempty=True,
        )
        (raw,) = self.fetch([(start, end - start)])
        return self._parse_cmb(raw, system_tree(), c, "BATCH_META")


def _select_path(tree: Node, path: list[str], full_name: str) -> set[int]:
    """Node indices kept by a nested path projection (the path and the leaf's subtree)."""
    keep = {tree.index}
    node = tree
    for part in path:
        while (
            node.kind in (Kind.LIST, Kind.FIXED_LIST)
            and not node.encoded
            and node.children[0].kind == Kind.STRUCT
        ):
            node = node.children[0]
            keep.add(node.index)
        if node.kind != Kind.STRUCT or node.encoded:  # a union is read whole
            raise ColumnNotFoundError(f"column {full_name!r} is not in the file")
        match = [c for c in node.children if c.name == part]
        if not match:
            raise ColumnNotFoundError(f"column {full_name!r} is not in the file")
        node = match[0]
        keep.add(node.index)
    keep.update(n.index for n in node.walk())
    return keep
