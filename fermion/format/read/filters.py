"""Pruning a filtered read before any data page is read: the stripes, and the row ranges
of a stripe, that may hold rows a filter keeps, from chunk and page statistics, bloom
filters (``==`` / ``isin``) and, in batch mode, the batch index.

:class:`~fermion.format.read.reader.FileReader` asks; the filter itself is applied exactly to
the rows read.

Example:
    >>> import pyarrow.compute as pc
    >>> sorted(FilterInfo(pc.field("a") == 1).names)
    ['a']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidFileError
from fermion.format.encoding.bloom import hash_values, may_contain
from fermion.format.encoding.pages import decode_page
from fermion.format.metadata.batch import VIRTUAL_COLUMNS
from fermion.format.metadata.cmb import ColumnMeta, StreamDesc
from fermion.format.metadata.stats import bound_scalars, stats_kind
from fermion.format.metadata.structs import CHUNK_ALL_NULL, DescType, StreamType
from fermion.format.read.batch_read import BatchIndex, virtual_fields
from fermion.format.read.plan import Projection, Ranges
from fermion.format.read.pruning import (
    and_all,
    equality_constraints,
    guarantee_for,
    referenced_fields,
    segments_that_may_match,
)
from fermion.io.source import ByteSource

__all__ = ["FilterInfo", "Pruner"]


class FilterInfo:
    """One read's filter, analysed once: referenced columns now, ``==``/``isin`` constraints
    (for bloom filters) on first use."""

    def __init__(self, expr: pc.Expression) -> None:
        self.expr = expr
        self.names = referenced_fields(expr)
        self._constraints: dict[str, pa.Array] | None = None

    @property
    def constraints(self) -> dict[str, pa.Array]:
        if self._constraints is None:
            self._constraints = equality_constraints(self.expr)
        return self._constraints


class Pruner:
    """Stripe and page pruning for one file.

    ``batches`` gives the file's batch index (batch mode), None for other files.
    """

    def __init__(
        self,
        source: ByteSource,
        verify_checksums: bool,
        batches: Callable[[], BatchIndex] | None = None,
    ) -> None:
        self.source = source
        self.verify_checksums = verify_checksums
        self._batches = batches

    def _batch_index(self) -> BatchIndex:
        assert self._batches is not None
        return self._batches()

    def _stats_columns(
        self, projs: Sequence[Projection], metas: Sequence[ColumnMeta], filter_names: set[str]
    ) -> list[tuple[Projection, ColumnMeta]]:
        seen: set[int] = set()
        out = []
        for p, m in zip(projs, metas, strict=True):
            if p.info.field.name in filter_names and p.info.index not in seen and p.flat:
                seen.add(p.info.index)
                out.append((p, m))
        return out

    def stripes(
        self,
        projs: Sequence[Projection],
        metas: Sequence[ColumnMeta],
        rows: np.ndarray,
        info: FilterInfo,
    ) -> list[int]:
        names = info.names
        cols = self._stats_columns(projs, metas, names)
        vnames = self._virtual_names(names)
        if not cols and not vnames:
            return list(range(len(rows)))
        fields = self._filter_fields(projs, [p for p, _ in cols], names, vnames)
        guarantees = []
        for s in range(len(rows)):
            parts = [self._chunk_guarantee(p, m, s, int(rows[s])) for p, m in cols]
            if vnames:
                parts.append(self._batch_index().stripe_guarantee(s, vnames))
            guarantees.append(and_all(parts))
        return segments_that_may_match(pa.schema(fields), guarantees, info.expr)

    @staticmethod
    def _filter_fields(
        projs: Sequence[Projection],
        with_stats: Sequence[Projection],
        names: set[str],
        vnames: set[str],
    ) -> list[pa.Field]:
        """Fields to bind the filter to: those with statistics, every other referenced
        column (no guarantee), then the virtual columns."""
        fields = [p.info.field for p in with_stats]
        seen = {f.name for f in fields}
        for p in projs:
            name = p.info.field.name
            if name in names and name not in seen:
                seen.add(name)
                fields.append(p.info.field)
        return fields + virtual_fields(sorted(vnames))

    def _virtual_names(self, names: set[str]) -> set[str]:
        return names & set(VIRTUAL_COLUMNS) if self._batches is not None else set()

    def _chunk_guarantee(
        self, p: Projection, m: ColumnMeta, s: int, n: int
    ) -> pc.Expression | None:
        name, t = p.info.field.name, p.info.field.type
        if not m.present:
            return guarantee_for(name, t, None, n, n)
        vk = p.tree.stream(StreamType.VALIDITY)
        dk = p.tree.stream(StreamType.DATA)
        assert vk is not None and dk is not None
        vdesc, ddesc = m.streams[vk.index], m.streams[dk.index]
        if ddesc.full is None:  # no DATA chunk: every value null or empty (docs/FORMAT.md §6)
            return (
                guarantee_for(name, t, None, nulls, n)
                if (nulls := _known_nulls(vdesc, s, n)) is not None
                else None
            )
        d = ddesc.full[s]
        bounds = bound_scalars(
            t, stats_kind(t), int(d["chunk_min"]), int(d["chunk_max"]), int(d["stats_flags"])
        )
        return guarantee_for(name, t, bounds, int(d["null_count"]), n)

    def pages(
        self,
        projs: Sequence[Projection],
        metas: Sequence[ColumnMeta],
        s: int,
        n: int,
        info: FilterInfo,
    ) -> Ranges:
        names = info.names
        cols = [
            (p, m)
            for p, m in self._stats_columns(projs, metas, names)
            if m.present and m.streams[p.tree.stream(StreamType.DATA).index].full is not None  # type: ignore[union-attr]
        ]
        vnames = self._virtual_names(names)
        if not cols and not vnames:
            return [(0, n)]
        per_col = []
        cuts = {0, n}
        metas_by_index = {p.info.index: m for p, m in cols}
        if vnames:  # batch mode: segments as fine as the pages the projection would read
            for p, m in zip(projs, metas, strict=True):
                dspec = p.tree.stream(StreamType.DATA)
                if p.flat and m.present and dspec is not None:
                    desc = m.streams[dspec.index]
                    if desc.full is not None and int(desc.full[s]["num_pages"]):
                        ends = desc.layout(s).ends
                        cuts.update(int(e) for e in ends if 0 < e < n)
        for p, m in cols:
            desc = m.streams[p.tree.stream(StreamType.DATA).index]  # type: ignore[union-attr]
            pages = desc.pages(s)
            if int(desc.full[s]["num_pages"]) == 0:  # type: ignore[index]
                continue
            ends = desc.layout(s).ends
            cuts.update(int(e) for e in ends)
            per_col.append((p, pages, ends))
        if not per_col and not vnames:
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
        if vnames:
            vg = self._batch_index().segment_guarantees(s, seg_starts, seg_ends, vnames)
            for i, g in enumerate(vg):
                parts[i].append(g)
        guarantees = [and_all(ps) for ps in parts]
        fields = self._filter_fields(projs, [p for p, _, _ in per_col], names, vnames)
        kept = segments_that_may_match(pa.schema(fields), guarantees, info.expr)
        excluded = self._bloom_excluded(per_col, metas_by_index, s, seg_starts, info)
        kept = [i for i in kept if i not in excluded]
        ranges: Ranges = []
        for i in sorted(kept):
            a, b = int(seg_starts[i]), int(seg_ends[i])
            if ranges and ranges[-1][1] == a:
                ranges[-1] = (ranges[-1][0], b)
            else:
                ranges.append((a, b))
        return ranges

    def _bloom_excluded(
        self,
        per_col: Sequence[tuple[Projection, np.ndarray, np.ndarray]],
        metas: dict[int, ColumnMeta],
        s: int,
        seg_starts: np.ndarray,
        info: FilterInfo,
    ) -> set[int]:
        """Segments whose page of some ``==``/``isin`` column cannot hold a wanted value."""
        excluded: set[int] = set()
        for p, pages, ends in per_col:
            if p.tree.bloom is None:
                continue
            values = info.constraints.get(p.info.field.name)
            if values is None:
                continue
            desc = metas[p.info.index].streams[p.tree.bloom.index]
            if desc.simple is None:
                continue
            d = desc.simple[s]
            length = int(d["length"])
            if length == 0:
                continue
            if int(d["num_values"]) != len(pages):
                raise InvalidFileError(f"column {p.info.field.name!r}: bloom page count mismatch")
            try:
                wanted = values.cast(p.info.field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue  # the filter itself will report the type mismatch
            raw = self.source.read(int(d["offset"]), length)
            payload = decode_page(
                raw,
                expected_values=len(pages),
                expected_size=None,
                where=f"{self.source.name}: bloom page at {int(d['offset'])}",
                verify_crc=self.verify_checksums,
            )
            if not isinstance(payload, bytes | memoryview):
                raise InvalidFileError("a bloom page must be plain")
            maybe = may_contain(payload, hash_values(wanted), len(pages))
            page_of = np.searchsorted(ends, seg_starts, side="right")
            excluded.update(i for i, pg in enumerate(page_of) if not maybe[int(pg)])
        return excluded


def _known_nulls(vdesc: StreamDesc, s: int, n: int) -> int | None:
    """Nulls among stripe ``s``'s ``n`` values when its VALIDITY descriptor alone tells
    (all valid: 0, all null: ``n``); ``None`` when a bitmap is stored (some nulls, count
    unknown without reading it), so no guarantee may be drawn.

    A stripe of empty strings and nulls has no DATA chunk: taking it for null-free
    pruned every row of ``IS NULL``.
    """
    if vdesc.desc_type == DescType.FORCE_NULL:
        return n
    if vdesc.desc_type == DescType.USE_DEFAULT:
        return 0
    if vdesc.simple is not None:
        length = int(vdesc.simple[s]["length"])
        return n if length == CHUNK_ALL_NULL else 0 if length == 0 else None
    return None
