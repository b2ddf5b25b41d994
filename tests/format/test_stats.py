"""Statistics without second passes: page bounds from encoder integers, chunk bounds merged
from page bounds (``int_stats``, ``merge_stats``), checked against ``compute_stats`` over
the values themselves, for every kind, random paginations and nulls; and the writer's
chunk bounds in real files equal those of the whole stripe."""

from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.format.metadata.stats import (
    StatsKind,
    _unpack_bytes,
    compute_stats,
    int_stats,
    merge_stats,
    stats_kind,
)
from fermion.format.metadata.structs import StatsFlag
from tests.support.budget import examples


def _pages(values: pa.Array, cuts: list[int]) -> list[pa.Array]:
    bounds = [0, *sorted(set(c % (len(values) + 1) for c in cuts)), len(values)]
    return [values.slice(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _merged(values: pa.Array, cuts: list[int]) -> tuple[int, int, int]:
    kind = stats_kind(values.type)
    pages = _pages(values, cuts)
    return merge_stats(
        [compute_stats(p, kind) for p in pages], [p.null_count == len(p) for p in pages], kind
    )


def _ints(nullable: bool = True) -> st.SearchStrategy[list[int | None]]:
    value = st.integers(-(2**63), 2**63 - 1)
    return st.lists(st.one_of(st.none(), value) if nullable else value, min_size=1, max_size=60)


@settings(max_examples=examples(150))
@given(_ints(), st.lists(st.integers(0, 100), max_size=6))
def test_merged_integer_bounds_equal_whole_chunk(values: list[int | None], cuts: list[int]):
    arr = pa.array(values, type=pa.int64())
    assert _merged(arr, cuts) == compute_stats(arr, StatsKind.SIGNED)


@settings(max_examples=examples(150))
@given(
    st.lists(st.one_of(st.none(), st.integers(0, 2**64 - 1)), min_size=1, max_size=40),
    st.lists(st.integers(0, 100), max_size=6),
)
def test_merged_unsigned_bounds_equal_whole_chunk(values: list[int | None], cuts: list[int]):
    arr = pa.array(values, type=pa.uint64())
    assert _merged(arr, cuts) == compute_stats(arr, StatsKind.UNSIGNED)


@settings(max_examples=examples(150))
@given(
    st.lists(
        st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.integers(0, 100), max_size=6),
)
def test_merged_float_bounds_equal_whole_chunk(values: list[float | None], cuts: list[int]):
    arr = pa.array(values, type=pa.float64())
    merged, whole = _merged(arr, cuts), compute_stats(arr, StatsKind.FLOAT)
    assert merged[2] == whole[2]
    if whole[2] & StatsFlag.HAS_MINMAX:  # -0.0 and 0.0 are the same bound
        as_float = np.array([*merged[:2], *whole[:2]], dtype=np.int64).view(np.float64)
        assert as_float[0] == as_float[2] and as_float[1] == as_float[3]


@settings(max_examples=examples(150))
@given(
    st.lists(st.one_of(st.none(), st.text(max_size=14)), min_size=1, max_size=40),
    st.lists(st.integers(0, 100), max_size=6),
)
def test_merged_string_bounds_are_valid_and_tight(values: list[str | None], cuts: list[int]):
    arr = pa.array(values, type=pa.string())
    lo, hi, flags = _merged(arr, cuts)
    whole = compute_stats(arr, StatsKind.BYTES)
    if not whole[2] & StatsFlag.HAS_MINMAX:
        return
    assert (lo, flags & StatsFlag.MIN_INEXACT) == (whole[0], whole[2] & StatsFlag.MIN_INEXACT)
    lower = _unpack_bytes(lo).rstrip(b"\0")
    upper = _unpack_bytes(hi).rstrip(b"\0")
    for v in (x.encode() for x in values if x is not None):
        assert lower <= v
        assert v <= upper if not flags & StatsFlag.MAX_INEXACT else v < upper


def test_merge_without_bounds_on_a_live_page_gives_none() -> None:
    ok = (1, 5, int(StatsFlag.HAS_MINMAX))
    assert merge_stats([ok, (0, 0, 0)], [False, False], StatsKind.SIGNED) == (0, 0, 0)
    assert merge_stats([ok, (0, 0, 0)], [False, True], StatsKind.SIGNED)[:2] == (1, 5)
    nan = (0, 0, int(StatsFlag.HAS_NAN))
    assert merge_stats([ok, nan], [False, False], StatsKind.FLOAT) == (0, 0, StatsFlag.HAS_NAN)
    assert merge_stats([(0, 0, 0)], [True], StatsKind.BYTES) == (0, 0, 0)


def test_int_stats_match_compute_stats() -> None:
    values = pa.array([4, None, -9, 17], type=pa.int32())
    ints = np.array([4, -9, 17], dtype=np.int64)
    assert int_stats(ints, StatsKind.SIGNED) == compute_stats(values, StatsKind.SIGNED)
    dec = pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.50")], pa.decimal128(9, 2))
    unscaled = np.array([125, -350], dtype=np.int64)
    assert int_stats(unscaled, StatsKind.DECIMAL) == compute_stats(dec, StatsKind.DECIMAL)
    assert int_stats(np.zeros(0, np.int64), StatsKind.SIGNED) == (0, 0, 0)
    assert int_stats(ints, StatsKind.BYTES) is None


def test_written_chunk_bounds_equal_the_stripe(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 20_000
    words = np.array(["kiwi", "apple", "zebra-crossing-long", "mango"])
    table = pa.table(
        {
            "i": pa.array(rng.integers(-(10**6), 10**6, n), mask=rng.random(n) < 0.1),
            "d": pa.array(
                [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-9999, 9999, n)],
                pa.decimal128(12, 2),
            ),
            "s": pa.array(words[rng.integers(0, 4, n)]),
            "f": pa.array(rng.normal(size=n)),
        }
    )
    path = tmp_path / "stats.fermion"
    fermion.write_table(table, path, page_size=4096)
    described = fermion.FileReader(path).describe()
    for col in described["columns"]:
        arr = table.column(col["name"]).combine_chunks()
        kind = stats_kind(arr.type)
        data = [s for s in col["streams"] if s["stream_type"] == "DATA"][0]
        chunk = data["chunks"][0]
        assert chunk["num_pages"] > 1  # merged, not a single page's bounds
        lo, hi, _ = compute_stats(arr, kind)
        if kind == StatsKind.BYTES:
            assert chunk["min"] == "apple" and chunk["max"] == "zebra-cs"
        elif kind == StatsKind.FLOAT:
            assert (chunk["min"], chunk["max"]) == tuple(
                np.array([lo, hi], dtype=np.int64).view(np.float64).tolist()
            )
        elif kind == StatsKind.DECIMAL:
            assert (chunk["min"], chunk["max"]) == (
                str(pa.compute.min(arr)),
                str(pa.compute.max(arr)),
            )
        else:
            assert (chunk["min"], chunk["max"]) == (lo, hi)


@settings(max_examples=examples(200))
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=50),
    st.sampled_from([pa.float32(), pa.float64()]),
    st.booleans(),
)
def test_float_bounds_without_nulls_match_arrow_min_max(values, t, with_null) -> None:
    """Float pages without nulls take their bounds from two numpy reductions; the result
    is Arrow's min_max (NaN: no bounds, HAS_NAN), as for pages with nulls. Zeros of either
    sign compare equal and the two paths may pick either."""
    arr = pa.array(values + ([None] if with_null else []), t)
    got = compute_stats(arr, StatsKind.FLOAT)
    finite = [v for v in values if v == v]
    if len(finite) < len(values):
        assert got == (0, 0, StatsFlag.HAS_NAN)
        return
    as_float = [float(np.int64(x).view(np.float64)) for x in got[:2]]
    assert as_float == [min(finite), max(finite)] and got[2] == StatsFlag.HAS_MINMAX
