"""IO coalescing (``fermion.io.coalesce_ranges``) checked against its contract on random
ranges: every range served by exactly one read that covers it, reads in file order, each
read exactly the span of its members, and no two neighbouring reads that could have been
one (their gap at most ``max_gap`` and their union at most ``max_read``).

Inputs tried: empty lists, empty ranges, overlapping and duplicate ranges, ranges given out
of order, gaps of 0, and a ``max_read`` smaller than some ranges.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fermion.io import coalesce_ranges
from tests.support.budget import examples

RANGES = st.lists(st.tuples(st.integers(0, 5_000), st.integers(0, 400)), min_size=0, max_size=60)


@settings(max_examples=examples(300))
@given(
    ranges=RANGES,
    max_gap=st.sampled_from([0, 1, 16, 256]),
    max_read=st.sampled_from([64, 1000, 64 << 20]),
)
def test_every_range_is_served_by_one_read_that_covers_it(
    ranges: list[tuple[int, int]], max_gap: int, max_read: int
) -> None:
    reads = coalesce_ranges(ranges, max_gap=max_gap, max_read=max_read)
    served = sorted(i for r in reads for i in r.members)
    assert served == list(range(len(ranges)))
    for r in reads:
        spans = [ranges[i] for i in r.members]
        assert all(r.start <= off and off + n <= r.end for off, n in spans)
        assert r.start == min(off for off, _ in spans)
        assert r.end == max(off + n for off, n in spans)
        assert r.length == r.end - r.start
    for a, b in zip(reads, reads[1:], strict=False):
        assert a.start <= b.start  # file order
        # a read is cut only where the gap is too wide or the union would be too long
        assert b.start - a.end > max_gap or max(a.end, b.end) - a.start > max_read


def test_no_ranges_no_reads() -> None:
    assert coalesce_ranges([], max_gap=10) == []
