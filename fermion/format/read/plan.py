"""Planning one stripe's page IO and assembling the answer from decoded pages.

Pure functions of metadata: given a column's CMB and the rows wanted from a stripe (ranges
after pruning, or points for ``take``), :func:`plan_column` lists the pages to fetch — for
a flat column only the DATA (and OFFSETS) pages holding those rows, for a nested column
every page of the selected nodes — and :class:`ColumnPlan` assembles and selects the rows
once the pages are decoded.

Example:
    >>> import numpy as np
    >>> Selection(points=np.array([5, 70])).span_pages(np.array([0, 64]), np.array([64, 128]))
    array([0, 1])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from fermion.errors import InvalidFileError
from fermion.format.encoding.arrow_ops import cast_table, filter_table, take_table, take_values
from fermion.format.encoding.stripe_dictionary import is_dictionary_chunk
from fermion.format.metadata.cmb import ColumnMeta, StreamDesc
from fermion.format.metadata.layout import (
    Kind,
    Node,
    StreamSpec,
    without_views,
)
from fermion.format.metadata.schema import ColumnInfo
from fermion.format.metadata.structs import CHUNK_ALL_NULL, DescType, StreamType
from fermion.format.read.assemble import (
    StripeContext,
    assemble_dictionary,
    assemble_flat,
    assemble_node,
    assemble_points,
    dictionary_encoded,
    pruned_type,
    validity_of,
)

__all__ = [
    "ColumnPlan",
    "PageRequest",
    "Projection",
    "Ranges",
    "Selection",
    "all_pages",
    "cast_table",
    "expected_size",
    "filter_table",
    "plan_column",
    "select_rows",
    "take_table",
    "take_values",
]

Ranges = list[tuple[int, int]]


@dataclass(slots=True)
class Projection:
    """One output column: the file column, its node tree and the nodes to materialise."""

    info: ColumnInfo
    tree: Node
    selected: set[int] | None  # None: the whole column
    dictionary: bool = False  # a BINARY column returned dictionary-encoded (read_dictionary)

    @property
    def flat(self) -> bool:
        return self.tree.flat

    @property
    def field(self) -> pa.Field:
        f = self.info.field
        if self.selected is None and not self.dictionary:
            return f  # the whole column as stored (a lookup asks this of every column)
        t = pruned_type(self.tree, self.selected)
        if self.dictionary:
            t = pa.dictionary(pa.int32(), without_views(t))
        return pa.field(f.name, t, f.nullable, f.metadata)


@dataclass
class Selection:
    """Rows wanted from one stripe: sorted disjoint ranges, or sorted unique points."""

    ranges: Ranges | None = None
    points: np.ndarray | None = None

    def span_pages(self, page_starts: np.ndarray, page_ends: np.ndarray) -> np.ndarray:
        """Indices of the pages (given their row spans) that hold wanted rows."""
        if self.points is not None:
            return self.point_pages(page_ends)[0]
        assert self.ranges is not None
        keep = np.zeros(len(page_starts), dtype=bool)
        for a, b in self.ranges:
            keep |= (page_starts < b) & (page_ends > a)
        return np.nonzero(keep)[0]

    def point_pages(self, page_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For points: (the pages holding them, each point's page, the positions where a
        new page's points begin after the first). A page of no rows is never chosen."""
        assert self.points is not None
        page_of = page_ends.searchsorted(self.points, side="right")
        cut = np.flatnonzero(page_of[1:] != page_of[:-1]) + 1
        wanted = page_of[np.concatenate(([0], cut))] if len(page_of) else page_of
        return wanted, page_of, cut


def select_rows(arr: pa.Array, covered: Ranges, sel: Selection) -> pa.Array:
    """Pick the selected rows out of ``arr``, which holds the rows of ``covered`` in order."""
    starts = np.array([a for a, _ in covered], dtype=np.int64)
    lens = np.array([b - a for a, b in covered], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(lens)[:-1]]) if len(lens) else lens
    if sel.points is not None:
        run = np.searchsorted(starts, sel.points, side="right") - 1
        pos = base[run] + (sel.points - starts[run])
        if len(covered) == 1 and covered[0][0] == 0 and len(pos) == len(arr):
            return arr
        return take_values(arr, pa.array(pos, type=pa.int64()))
    assert sel.ranges is not None
    pieces = []
    for a, b in sel.ranges:
        r = int(np.searchsorted(starts, a, side="right") - 1)
        pieces.append(arr.slice(int(base[r] + a - starts[r]), b - a))
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_arrays(pieces)


@dataclass
class ColumnPlan:
    """Pages to read for one column in one stripe, and how to assemble them."""

    proj: Projection
    pages: list[PageRequest]
    runs: list[tuple[tuple[int, int], tuple[int, int]]] | None  # flat: (page run, row run)
    # point reads (take): DATA page index -> the wanted rows within that page, in order;
    # those pages (and their OFFSETS pages) are handed over undecoded
    points: dict[int, np.ndarray] | None = None
    dictionary: PageRequest | None = None  # the stripe dictionary page (1.4), when read

    def undecoded(self, req: PageRequest) -> bool:
        """Whether the point reader, not the page decoder, handles this page."""
        validity = self.proj.tree.stream(StreamType.VALIDITY)
        return (
            self.points is not None
            and (validity is None or req.stream != validity.index)
            and req != self.dictionary
        )

    def assemble(self, ctx: StripeContext, n: int, sel: Selection) -> pa.Array:
        if self.points is not None and sel.points is not None:
            bitmap = validity_of(ctx, self.proj.tree, n)
            return assemble_points(ctx, self.proj.tree, self.points, sel.points, bitmap)
        if self.runs is None:
            arr = assemble_node(ctx, self.proj.tree, n)
            if self.proj.dictionary:
                arr = dictionary_encoded(arr)
            return select_rows(arr, [(0, n)], sel)
        tree = self.proj.tree
        cache: list[tuple[object | None, int]] = []

        def validity() -> tuple[object | None, int]:
            if not cache:
                cache.append(validity_of(ctx, tree, n))
            return cache[0]

        build = assemble_dictionary if self.proj.dictionary else assemble_flat
        pieces = [build(ctx, tree, n, run, rows, validity) for run, rows in self.runs]
        arr = pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)
        return select_rows(arr, [rows for _, rows in self.runs], sel)


def expected_size(node: Node, stream_type: StreamType, values: int) -> int | None:
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


class PageRequest(NamedTuple):
    """One page to fetch and decode."""

    stream: int  # stream index within the column
    page: int  # page index within the stripe's chunk
    offset: int  # file offset
    size: int  # bytes on disk
    values: int
    plain_size: int | None  # exact decoded bytes, when the metadata implies it
    contiguous: bool = False  # joins a run: adjacent pages decoded into one buffer
    offsets_width: int = 0  # an OFFSETS page's offset width: its run holds rebased offsets


def _run_fields(node: Node, stream_type: StreamType) -> tuple[bool, int]:
    """``(contiguous, offsets_width)`` of the node's pages of ``stream_type``.

    DATA pages of fixed-width values, dictionary indices and binary values are byte runs
    end to end (a binary page's size is known from its header once it has been read);
    OFFSETS pages join runs of rebased offsets (:mod:`fermion.format.encoding.offsets`).
    """
    if stream_type == StreamType.OFFSETS:
        return True, node.byte_width
    kinds = (Kind.FIXED, Kind.DICTIONARY, Kind.BINARY)
    return stream_type == StreamType.DATA and node.kind in kinds, 0


def _simple_page(node: Node, spec: StreamSpec, desc: StreamDesc, s: int) -> PageRequest | None:
    """The single page of a SIMPLE chunk in stripe ``s`` (None: nothing stored)."""
    assert desc.simple is not None
    d = desc.simple[s]
    length = int(d["length"])
    if not 0 < length != CHUNK_ALL_NULL:
        return None
    values = int(d["num_values"])
    size = expected_size(node, spec.stream_type, values)
    return PageRequest(spec.index, 0, int(d["offset"]), length, values, size)


def all_pages(m: ColumnMeta, tree: Node, s: int, selected: set[int] | None) -> list[PageRequest]:
    out: list[PageRequest] = []
    for node in tree.walk():
        if selected is not None and node.index not in selected:
            continue
        for spec in node.streams:
            desc = m.streams[spec.index]
            if desc.desc_type == DescType.SIMPLE:
                page = _simple_page(node, spec, desc, s)
                if page is not None:
                    out.append(page)
            elif desc.desc_type == DescType.FULL:
                pages = desc.pages(s)
                offs = desc.page_offsets(s)
                for i in range(len(pages)):
                    values = int(pages[i]["row_count"])
                    size = expected_size(node, spec.stream_type, values)
                    out.append(
                        PageRequest(
                            spec.index,
                            i,
                            int(offs[i]),
                            int(pages[i]["page_size"]),
                            values,
                            size,
                            *_run_fields(node, spec.stream_type),
                        )
                    )
    return out


def plan_column(
    p: Projection, m: ColumnMeta, s: int, n: int, sel: Selection, point_reads: bool = False
) -> ColumnPlan:
    """The pages of column ``p`` that stripe ``s`` must read for ``sel``.

    With ``point_reads`` and a selection of points (``take``), a flat fixed-width or
    binary column is planned for value-level decoding (:mod:`fermion.format.read.points`).
    """
    tree = p.tree
    if not p.flat:
        return ColumnPlan(p, all_pages(m, tree, s, p.selected), None)
    pages: list[PageRequest] = []
    vspec = tree.stream(StreamType.VALIDITY)
    dspec = tree.stream(StreamType.DATA)
    assert vspec is not None and dspec is not None
    vdesc = m.streams[vspec.index]
    if vdesc.desc_type == DescType.SIMPLE:
        page = _simple_page(tree, vspec, vdesc, s)
        if page is not None:
            pages.append(page)
    ddesc = m.streams[dspec.index]
    if ddesc.desc_type != DescType.FULL or int(ddesc.full["num_pages"][s]) == 0:  # type: ignore[index]
        return ColumnPlan(p, pages, [((0, 0), (0, n))])
    lay = ddesc.layout(s)
    starts, ends = lay.starts, lay.ends
    if int(ends[-1]) != n:
        raise InvalidFileError(
            f"column {p.info.field.name!r}: pages hold {int(ends[-1])} rows, stripe has {n}"
        )
    page_of = cut = None
    if sel.points is not None:
        wanted, page_of, cut = sel.point_pages(ends)
    else:
        wanted = sel.span_pages(starts, ends)
    streams = [(dspec.index, lay, StreamType.DATA)]
    ospec = tree.stream(StreamType.OFFSETS)
    if ospec is not None:
        odesc = m.streams[ospec.index]
        if odesc.desc_type == DescType.FULL and int(odesc.full["num_pages"][s]):  # type: ignore[index]
            olay = odesc.layout(s)
            if not np.array_equal(olay.counts, lay.counts):
                raise InvalidFileError(
                    f"column {p.info.field.name!r}: offsets and data pages are not aligned"
                )
            streams.insert(0, (ospec.index, olay, StreamType.OFFSETS))
        else:
            return ColumnPlan(p, all_pages(m, tree, s, None), None)
    by_points = (
        point_reads
        and sel.points is not None
        and tree.kind in (Kind.FIXED, Kind.BINARY)
        and not p.dictionary  # its DICTIONARY pages are kept whole, not gathered
    )
    wanted_list = wanted.tolist()
    dictionary = None
    if tree.kind == Kind.BINARY and len(wanted_list) and is_dictionary_chunk(lay.counts):
        # its pages are indices into the stripe dictionary: DATA page 0, of no rows, which
        # no selection covers (§5.4); read in the same coalesced IO, decoded whole
        offset0, size0 = int(lay.offsets[0]), int(lay.sizes[0])
        dictionary = PageRequest(dspec.index, 0, offset0, size0, 0, None)
    for k, stream_lay, stream_type in streams:
        # point reads hand pages over undecoded: never decoded into a run buffer
        # nor is a dictionary-encoded read's: each of its pages is encoded on its own
        contiguous, offsets_width = _run_fields(tree, stream_type)
        contiguous = contiguous and not by_points and not p.dictionary
        for i, offset, size, values in zip(
            wanted_list,
            stream_lay.offsets[wanted].tolist(),
            stream_lay.sizes[wanted].tolist(),
            stream_lay.counts[wanted].tolist(),
            strict=True,
        ):
            plain = expected_size(tree, stream_type, values)
            pages.append(PageRequest(k, i, offset, size, values, plain, contiguous, offsets_width))
    if dictionary is not None:
        pages.append(dictionary)
    if by_points:
        assert sel.points is not None and page_of is not None and cut is not None
        rel = sel.points - starts[page_of]
        bounds = [0, *cut.tolist(), len(rel)]
        points = {
            page: rel[a:b] for page, a, b in zip(wanted_list, bounds, bounds[1:], strict=False)
        }
        return ColumnPlan(p, pages, None, points, dictionary)
    w = [int(x) for x in wanted]
    runs = []
    i = 0
    while i < len(w):
        j = i
        while j + 1 < len(w) and w[j + 1] == w[j] + 1:
            j += 1
        runs.append(((w[i], w[j] + 1), (int(starts[w[i]]), int(ends[w[j]]))))
        i = j + 1
    return ColumnPlan(p, pages, runs, dictionary=dictionary)
