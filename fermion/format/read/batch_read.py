"""Reader side of batch mode: the BATCH_META index, lookups and virtual-column pruning.

:class:`BatchIndex` reads the system column's CMB (CIT entry ``num_columns``) once: its
FullChunkDescs give every stripe's min/max batch id and longest batch without data IO, so
a batch id is located to its stripe by binary search. The ids and lengths of a stripe
(two small BATCH_META chunks, adjacent in the file, so one coalesced request) are read on
first use and cached; they give each batch's first row, from which the reader picks the
pages by their row counts. Every inconsistency raises :class:`InvalidFileError`.

Example:
    >>> import pyarrow as pa, tempfile, os
    >>> from fermion.format.write.writer import FileWriter
    >>> from fermion.format.read.reader import FileReader
    >>> path = os.path.join(tempfile.mkdtemp(), "bi.fermion")
    >>> with FileWriter(path, pa.schema([("x", pa.int64())])) as w:
    ...     for i in range(4):
    ...         w.append_batch(10 * i, pa.table({"x": [i] * (i + 1)}))
    >>> r = FileReader(path)
    >>> r.read_batches([30, 10], columns=["_batch_id", "_batch_index", "x"]).to_pydict()
    {'_batch_id': [30, 30, 30, 30, 10, 10], '_batch_index': [0, 1, 2, 3, 0, 1], \
'x': [3, 3, 3, 3, 1, 1]}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidFileError
from fermion.format.encoding.pages import decode_page
from fermion.format.metadata.batch import (
    BATCH_ID,
    BATCH_INDEX,
    StripeBatches,
    virtual_field,
)
from fermion.format.metadata.cmb import ColumnMeta
from fermion.format.metadata.structs import DescType, StatsFlag
from fermion.format.read.pruning import and_all, guarantee_for
from fermion.io.source import ByteSource

__all__ = ["BatchIndex", "output_order"]

_WIDTHS = (8, 4)  # batch ids: i64, batch lengths: u32
_DTYPES = ("<i8", "<u4")


class BatchIndex:
    """The BATCH_META system column of one open file.

    Args:
        meta: the system column's parsed CMB (see
            :meth:`~fermion.format.read.metadata.MetadataReader.batches`).
        source: the file, for the ids and lengths pages.
        coalesce_gap: ranges closer than this are read in one request.
        verify_checksums: verify page CRC32s.
    """

    def __init__(
        self,
        meta: ColumnMeta,
        source: ByteSource,
        *,
        coalesce_gap: int,
        verify_checksums: bool,
    ) -> None:
        self.source = source
        self.coalesce_gap = coalesce_gap
        self.verify_checksums = verify_checksums
        self._where = f"{source.name}: BATCH_META"
        self.meta = meta
        ids, lengths = self.meta.streams
        # the descriptor tuples, unpacked once (a few stripes: numpy calls on arrays of two
        # values cost more than these Python loops; this runs on every open for a lookup)
        id_chunks, length_chunks = ids.chunks, lengths.chunks
        if ids.desc_type != DescType.FULL or lengths.desc_type != DescType.FULL:
            raise InvalidFileError(f"{self._where}: streams must have FULL descriptors")
        assert id_chunks is not None and length_chunks is not None
        rows = self.meta.stripe_rows
        rows_list = rows.tolist() if rows is not None else []
        minmax = int(StatsFlag.HAS_MINMAX)
        counts = [c[2] for c in id_chunks]
        mins = [c[3] for c in id_chunks]
        maxs = [c[4] for c in id_chunks]
        if (
            counts != [c[2] for c in length_chunks]
            or len(rows_list) != len(counts)
            or any((c == 0) != (n == 0) or c > n for c, n in zip(counts, rows_list, strict=True))
            or any(not c[8] & minmax for c in id_chunks)
            or any(not c[8] & minmax for c in length_chunks)
        ):
            raise InvalidFileError(f"{self._where}: batch counts or statistics are inconsistent")
        if any(lo > hi for lo, hi in zip(mins, maxs, strict=True)) or any(
            lo <= hi for lo, hi in zip(mins[1:], maxs[:-1], strict=False)
        ):
            raise InvalidFileError(f"{self._where}: stripe batch id ranges are not increasing")
        self.stripe_rows = np.array(rows_list, dtype=np.int64)
        self.batches_per_stripe = np.array(counts, dtype=np.int64)
        self.min_ids = np.array(mins, dtype=np.int64)
        self.max_ids = np.array(maxs, dtype=np.int64)
        self.max_lengths = np.array([c[4] for c in length_chunks], dtype=np.int64)
        self._cache: dict[int, StripeBatches] = {}

    @property
    def num_batches(self) -> int:
        return int(self.batches_per_stripe.sum())

    def locate(self, batch_ids: np.ndarray) -> np.ndarray:
        """Stripe of each id from the per-stripe min/max (metadata only); -1 if none."""
        s = np.searchsorted(self.max_ids, batch_ids, side="left")
        inside = s < len(self.max_ids)
        s = np.where(inside, s, 0)
        ok = inside & (self.min_ids[s] <= batch_ids) if len(self.max_ids) else inside
        return np.where(ok, s, -1)

    def stripe(self, s: int) -> StripeBatches:
        """Decoded ids and lengths of stripe ``s`` (one coalesced read, then cached)."""
        got = self._cache.get(s)
        if got is not None:
            return got
        where = f"{self._where}, stripe {s}"
        plan: list[tuple[int, int, int, int]] = []  # (stream, offset, size, values)
        for k, desc in enumerate(self.meta.streams):
            one = desc.single_page(s)  # the usual case: the chunk's descriptor is its page's
            if one is not None:
                plan.append((k, *one))
                continue
            lay = desc.layout(s)
            for off, size, values in zip(lay.offsets, lay.sizes, lay.counts, strict=True):
                plan.append((k, int(off), int(size), int(values)))
        views = self.source.read_ranges(
            [(off, size) for _, off, size, _ in plan], max_gap=self.coalesce_gap
        )
        parts: list[list[np.ndarray]] = [[], []]
        for (k, off, _, values), view in zip(plan, views, strict=True):
            payload = decode_page(
                view,
                expected_values=values,
                expected_size=values * _WIDTHS[k],
                where=f"{where}: page at offset {off}",
                verify_crc=self.verify_checksums,
            )
            if not isinstance(payload, bytes | memoryview):
                raise InvalidFileError(f"{where}: a batch metadata page must be plain")
            parts[k].append(np.frombuffer(payload, dtype=_DTYPES[k]))
        ids, lengths = (_joined(p) for p in parts)
        got = StripeBatches.build(ids, lengths, int(self.stripe_rows[s]), where)
        if int(got.ids[0]) != int(self.min_ids[s]) or int(got.ids[-1]) != int(self.max_ids[s]):
            raise InvalidFileError(f"{where}: batch ids disagree with the chunk statistics")
        self._cache[s] = got
        return got

    # -- pruning ----------------------------------------------------------------------
    def stripe_guarantee(self, s: int, names: set[str]) -> pc.Expression | None:
        """What the CMB alone guarantees about the virtual columns in stripe ``s``."""
        n = int(self.stripe_rows[s])
        parts = []
        if BATCH_ID in names:
            bounds = (int(self.min_ids[s]), int(self.max_ids[s]))
            parts.append(guarantee_for(BATCH_ID, pa.int64(), bounds, 0, n))
        if BATCH_INDEX in names:
            bounds = (0, max(0, int(self.max_lengths[s]) - 1))
            parts.append(guarantee_for(BATCH_INDEX, pa.int32(), bounds, 0, n))
        return and_all(parts)

    def segment_guarantees(
        self, s: int, starts: np.ndarray, ends: np.ndarray, names: set[str]
    ) -> list[pc.Expression | None]:
        """Guarantees for row segments ``[starts[i], ends[i])`` of stripe ``s``."""
        b = self.stripe(s)
        first = np.searchsorted(b.starts, starts, side="right") - 1
        last = np.searchsorted(b.starts, ends - 1, side="right") - 1
        out = []
        for i, j, a, e in zip(first.tolist(), last.tolist(), starts, ends, strict=True):
            parts = []
            if BATCH_ID in names:
                ids = (int(b.ids[i]), int(b.ids[j]))
                parts.append(guarantee_for(BATCH_ID, pa.int64(), ids, 0, int(e - a)))
            if BATCH_INDEX in names:
                hi = int(b.lengths[i : j + 1].max()) - 1
                parts.append(guarantee_for(BATCH_INDEX, pa.int32(), (0, hi), 0, int(e - a)))
            out.append(and_all(parts))
        return out


def output_order(
    requested: Sequence[str], user_names: Sequence[str], virtual: Sequence[str]
) -> list[int]:
    """Positions, in ``[user columns..., virtual columns...]``, of the output columns in the
    order the caller asked for them (a nested path ``"s.a"`` stands for its column ``s``).

    Example:
        >>> output_order(["_batch_id", "s.a", "x", "s.b"], ["s", "x"], ["_batch_id"])
        [2, 0, 1]
    """
    order: list[int] = []
    for name in requested:
        if name in virtual:
            pos = len(user_names) + list(virtual).index(name)
        else:
            matches = [
                (len(u), k)
                for k, u in enumerate(user_names)
                if name == u or name.startswith(u + ".")
            ]
            pos = max(matches)[1] if matches else -1
        if pos >= 0 and pos not in order:
            order.append(pos)
    for k in range(len(user_names) + len(virtual)):  # anything not matched keeps its place
        if k not in order:
            order.append(k)
    return order


def virtual_fields(names: Sequence[str]) -> list[pa.Field]:
    """Fields of the virtual columns ``names``."""
    return [virtual_field(n) for n in names]


def describe_batches(
    index: BatchIndex, streams: dict[str, tuple[bool, list[np.ndarray]]]
) -> dict[str, object]:
    """Batch-mode facts for ``fermion inspect``: batches per stripe, pages per batch.

    ``streams`` maps a stream path to (is a top-level stream, page row counts per stripe).
    For top-level streams the pages each batch touches are counted exactly (from the page
    row counts and the batch lengths); for nested streams pages / batches is reported.
    """
    total = int(index.num_batches)
    per_stream: dict[str, dict[str, float]] = {}
    for path, (top, counts) in sorted(streams.items()):
        if not top:
            pages = sum(len(c) for c in counts)
            per_stream[path] = {"pages_over_batches": round(pages / max(1, total), 4)}
            continue
        touched: list[np.ndarray] = []
        for s, rows in enumerate(counts):
            if len(rows) == 0 or index.batches_per_stripe[s] == 0:
                continue
            b = index.stripe(s)
            ends = np.cumsum(rows.astype(np.int64))
            first = np.searchsorted(ends, b.starts, side="right")
            last = np.searchsorted(ends, b.starts + b.lengths - 1, side="right")
            touched.append(last - first + 1)
        if touched:
            t = np.concatenate(touched)
            per_stream[path] = {"max": int(t.max()), "mean": round(float(t.mean()), 4)}
    return {
        "num_batches": total,
        "batches_per_stripe": index.batches_per_stripe.tolist(),
        "min_batch_id": [int(x) for x in index.min_ids],
        "max_batch_id": [int(x) for x in index.max_ids],
        "max_batch_length": [int(x) for x in index.max_lengths],
        "pages_per_batch": per_stream,
    }


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The pages' values of one stream as one array (the only page's, without a copy)."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)
