"""Reading one stripe: plan its page IO, fetch it coalesced, decode pages in parallel,
assemble the columns; and a pipeline over many stripes that reads the next stripe's pages
on the IO pool while the current one decodes (prefetch).

:class:`~fermion.format.read.reader.FileReader` decides *which* stripes and rows to read
(pruning, ``take``, batch lookups); this module reads them.

Example:
    >>> import pyarrow as pa, tempfile, os
    >>> from fermion.format.read.metadata import MetadataReader
    >>> from fermion.format.options import ReadOptions
    >>> from fermion.format.write.writer import write_table
    >>> from fermion.io.source import open_source
    >>> path = os.path.join(tempfile.mkdtemp(), "s.fermion")
    >>> write_table(pa.table({"a": list(range(10)), "b": list("abcdefghij")}), path)
    >>> source, options = open_source(path), ReadOptions()
    >>> meta = MetadataReader(source, options)
    >>> projs = meta.projections(["b"])
    >>> batch = StripeReader(source, options).read_stripe(
    ...     projs, meta.column_metas(projs), 0, 10, Selection(ranges=[(2, 4)]))
    >>> batch.column(0).to_pylist()
    ['c', 'd']
    >>> source.close()
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from fermion.errors import InvalidFileError
from fermion.format.encoding.pages import (
    PAGE_HEADER_SIZE,
    Decoded,
    decode_offsets_into,
    decode_page,
    decode_page_into,
    is_derived,
    plain_size_hint,
)
from fermion.format.metadata.cmb import ColumnMeta
from fermion.format.metadata.structs import Compression, Encoding, RequiredFeature
from fermion.format.options import ReadOptions
from fermion.format.read.assemble import StripeContext, null_column
from fermion.format.read.plan import (
    ColumnPlan,
    PageRequest,
    Projection,
    Selection,
    plan_column,
    select_rows,
)
from fermion.format.read.points import SparsePage
from fermion.format.threads import io_pool, pool
from fermion.io.source import ByteSource

__all__ = ["StripeRead", "StripeReader", "merge_targets"]

_PARALLEL_DECODE_BYTES = 1 << 20  # below this, handing pages to threads costs more than it saves


@dataclass
class StripeRead:
    """One stripe's planned page requests and their bytes (or the read in flight)."""

    s: int
    n: int
    sel: Selection
    requests: list[tuple[int, PageRequest]]
    plans: list[ColumnPlan | None]
    views: Future[list[memoryview]] | list[memoryview]


class StripeReader:
    """Reads stripes of one file with the reader's options."""

    def __init__(self, source: ByteSource, options: ReadOptions) -> None:
        self.source = source
        self.options = options
        self.required_features = 0  # the footer's, set once the file is open

    def read_stripe(
        self,
        projs: Sequence[Projection],
        metas: Sequence[ColumnMeta],
        s: int,
        n: int,
        sel: Selection,
    ) -> pa.RecordBatch:
        """Plan page IO for the selection, fetch coalesced, decode in parallel, assemble."""
        return self.finish(projs, metas, self.start(projs, metas, s, n, sel))

    def read_stripes(
        self,
        projs: Sequence[Projection],
        metas: Sequence[ColumnMeta],
        jobs: Iterable[tuple[int, int, Selection]],
    ) -> Iterator[tuple[int, int, Selection, pa.RecordBatch]]:
        """:meth:`read_stripe` for each ``(stripe, rows, selection)``, with the next
        stripe's pages being read on the IO pool while this one decodes (prefetch)."""
        pending = iter(jobs)
        ahead: StripeRead | None = None
        try:
            job = next(pending, None)
            if job is not None:
                ahead = self.start(projs, metas, *job, prefetch=True)
            while ahead is not None:
                current = ahead
                job = next(pending, None)
                ahead = None if job is None else self.start(projs, metas, *job, True)
                yield current.s, current.n, current.sel, self.finish(projs, metas, current)
        finally:  # abandoned early (or failed): let a read in flight finish before returning
            if ahead is not None and isinstance(ahead.views, Future):
                wait([ahead.views])

    def start(
        self,
        projs: Sequence[Projection],
        metas: Sequence[ColumnMeta],
        s: int,
        n: int,
        sel: Selection,
        prefetch: bool = False,
    ) -> StripeRead:
        """Plan the stripe's page IO and start it (on the IO pool with ``prefetch``, unless
        the source is memory-mapped: its ranges are views, there is no IO to overlap)."""
        requests: list[tuple[int, PageRequest]] = []  # (projection, page request)
        plans: list[ColumnPlan | None] = []
        for j, (p, m) in enumerate(zip(projs, metas, strict=True)):
            if not m.present:
                plans.append(None)
                continue
            plan = plan_column(p, m, s, n, sel, self.options.point_reads)
            if plan.dictionary is not None and not (
                self.required_features & RequiredFeature.STRIPE_DICTIONARY
            ):
                raise InvalidFileError(
                    f"{self.source.name}: column {p.info.field.name!r}, stripe {s} has a stripe "
                    "dictionary, but the footer does not require STRIPE_DICTIONARY"
                )
            plans.append(plan)
            requests.extend((j, req) for req in plan.pages)
        # sub-page IO: of a source that is not memory-mapped, a point read fetches only the
        # first bytes of the pages it reads value by value, then what those need (SparsePage)
        sparse = not self.source.mapped
        ranges = [
            (req.offset, min(req.size, SparsePage.GRAIN))
            if sparse and plans[j].undecoded(req)  # type: ignore[union-attr]
            else (req.offset, req.size)
            for j, req in requests
        ]
        gap = self.options.coalesce_gap
        if sparse and any(plan is not None and plan.points is not None for plan in plans):
            gap = min(gap, SparsePage.MAX_GAP)  # never fill the holes between pages
        if prefetch and ranges and not self.source.mapped:
            views: Future[list[memoryview]] | list[memoryview] = io_pool().submit(
                self.source.read_ranges, ranges, max_gap=gap
            )
        else:
            views = self.source.read_ranges(ranges, max_gap=gap)
        return StripeRead(s, n, sel, requests, plans, views)

    def finish(
        self, projs: Sequence[Projection], metas: Sequence[ColumnMeta], read: StripeRead
    ) -> pa.RecordBatch:
        """Decode the stripe's fetched pages in parallel and assemble its columns."""
        s, n, sel, requests, plans = read.s, read.n, read.sel, read.requests, read.plans
        views = read.views.result() if isinstance(read.views, Future) else read.views
        verify = self.options.verify_checksums
        name = self.source.name
        sizes = [_run_size(req, views[i]) for i, (_, req) in enumerate(requests)]
        allocates = [
            size is not None and _allocates(v) for size, v in zip(sizes, views, strict=True)
        ]
        targets, merged = merge_targets(requests, sizes, len(projs), allocates)

        def decode(i: int) -> Decoded | None:
            j, req = requests[i]
            where = f"{name}: page at offset {req.offset}"
            target = targets.get(i)
            if target is None:
                return decode_page(
                    views[i],
                    expected_values=req.values,
                    expected_size=req.plain_size,
                    where=where,
                    verify_crc=verify,
                )
            if req.offsets_width:
                decode_offsets_into(
                    views[i], target, expected_values=req.values, where=where, verify_crc=verify
                )
                return None
            decode_page_into(  # into the run's buffer, on the worker thread
                views[i],
                target,
                expected_values=req.values,
                expected_size=req.plain_size,
                where=where,
                verify_crc=verify,
            )
            return None

        total = sum(req.size for _, req in requests)
        parallel = total >= _PARALLEL_DECODE_BYTES and self.options.worker_threads > 1
        # pages a point read decodes value by value at assembly are handed over as they are
        work = [i for i, (j, req) in enumerate(requests) if not plans[j].undecoded(req)]  # type: ignore[union-attr]
        decoded: list[Decoded | SparsePage | None] = list(views)
        if not self.source.mapped:  # see start(): the pages point reads fetch as needed
            for i, (j, req) in enumerate(requests):
                if plans[j].undecoded(req):  # type: ignore[union-attr]
                    decoded[i] = SparsePage(
                        self.source,
                        req.offset,
                        req.size,
                        views[i],
                        min(self.options.coalesce_gap, SparsePage.MAX_GAP),
                    )
        if parallel and len(work) > 1:
            for i, payload in zip(work, pool().map(decode, work), strict=True):
                decoded[i] = payload
        else:
            for i in work:
                decoded[i] = decode(i)
        per_proj: list[dict[tuple[int, int], Any]] = [{} for _ in projs]
        for (j, req), got in zip(requests, decoded, strict=True):
            if got is not None:
                per_proj[j][(req.stream, req.page)] = got

        def assemble(j: int) -> pa.Array:
            p, m = projs[j], metas[j]
            if not m.present:
                return select_rows(null_column(n, p.field.type), [(0, n)], sel)
            ctx = StripeContext(
                p.info.field.name, m, s, per_proj[j], p.selected, merged[j], verify=verify
            )
            column_plan = plans[j]
            assert column_plan is not None
            return column_plan.assemble(ctx, n, sel)

        # numpy and Arrow release the GIL while assembling whole pages; point reads are many
        # small calls that hold it, so two threads assembling them only queue for it (take
        # of 1,000 lineitem rows: 95 ms in one thread, 103 ms in two)
        points = any(plan is not None and plan.points is not None for plan in plans)
        if parallel and len(projs) > 1 and not points:
            # the columns with the most bytes first, so that the longest task never starts last
            weight = [0] * len(projs)
            for j, req in requests:
                weight[j] += req.size
            order = sorted(range(len(projs)), key=lambda j: -weight[j])
            arrays = [pa.nulls(0)] * len(projs)
            for j, arr in zip(order, pool().map(assemble, order), strict=True):
                arrays[j] = arr
        else:
            arrays = [assemble(j) for j in range(len(projs))]
        fields = [p.field for p in projs]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _alloc(n: int, dtype: Any) -> np.ndarray:
    """``np.empty(n, dtype)`` from Arrow's memory pool (as Arrow's own readers allocate):
    its allocator keeps freed memory mapped, so the run buffers of one read reuse the
    pages of the previous one instead of faulting fresh pages in, which cost more than
    decoding into them on some virtual machines."""
    d = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(n * d.itemsize), dtype=d)


def _allocates(page: memoryview) -> bool:
    """Whether decoding the page makes a new buffer (it is encoded or compressed; a PLAIN
    uncompressed page is used in place)."""
    return len(page) >= PAGE_HEADER_SIZE and (page[4] != _PLAIN or page[5] not in _IN_PLACE)


_PLAIN = int(Encoding.PLAIN)  # (IntEnum compares are slow)
_IN_PLACE = (int(Compression.NONE), int(Compression.CRC_BLOCKS))  # payloads stored as they are


def _run_size(req: PageRequest, page: memoryview) -> int | None:
    """Bytes the request's page takes in a run buffer (None: it cannot join a run)."""
    if not req.contiguous:
        return None
    if req.offsets_width:  # a DERIVED page's offsets come from its DATA page
        return None if is_derived(page) else req.values * req.offsets_width
    if req.plain_size is not None:
        return req.plain_size
    return plain_size_hint(page)  # binary DATA: from the page header


def merge_targets(
    requests: Sequence[tuple[int, PageRequest]],
    sizes: Sequence[int | None],
    num_projections: int,
    allocates: Sequence[bool] | None = None,
) -> tuple[dict[int, np.ndarray], list[dict[tuple[int, int], tuple[Any, int]]]]:
    """Preallocate one buffer per run of adjacent contiguous pages of one stream.

    ``sizes[i]`` is the plain size of request ``i`` (None: it cannot join a run). Returns
    (request index -> its slice of the run's buffer) for the decoders, which write there
    directly, and per projection ((stream, first page) -> (buffer, end page)) for assembly,
    which then uses the buffer as is instead of concatenating the pages. A run of OFFSETS
    pages (even of one page) is a typed array of a leading 0 then each page's entries
    (:mod:`fermion.format.encoding.offsets`); other runs have two pages or more, or are one page
    whose decoding ``allocates[i]`` (an encoded or compressed page: its buffer then comes
    from Arrow's pool like a run's, not from a fresh allocation that faults its pages in).
    """
    targets: dict[int, np.ndarray] = {}
    merged: list[dict[tuple[int, int], tuple[Any, int]]] = [{} for _ in range(num_projections)]
    i = 0
    while i < len(requests):
        j, req = requests[i]
        end = i + 1
        if req.contiguous and sizes[i] is not None:
            while end < len(requests):
                nj, nreq = requests[end]
                prev = requests[end - 1][1]
                if not (
                    nj == j
                    and nreq.stream == req.stream
                    and nreq.page == prev.page + 1
                    and nreq.contiguous
                    and sizes[end] is not None
                ):
                    break
                end += 1
        width = req.offsets_width
        single = width or (allocates is not None and allocates[i])
        if end - i > 1 or (single and sizes[i] is not None):
            if width:
                counts = [requests[r][1].values for r in range(i, end)]
                buf = _alloc(1 + sum(counts), f"<i{width}")
                buf[0] = 0
            else:
                counts = [sizes[r] or 0 for r in range(i, end)]
                buf = _alloc(sum(counts), np.uint8)
            at = 1 if width else 0
            for r, count in zip(range(i, end), counts, strict=True):
                targets[r] = buf[at : at + count]
                at += count
            merged[j][(req.stream, req.page)] = (buf, requests[end - 1][1].page + 1)
        i = end
    return targets, merged
