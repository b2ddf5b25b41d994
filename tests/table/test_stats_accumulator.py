"""StatsAccumulator (statistics of a streamed fragment) equals compute_field_stats of all
the rows at once, whichever way the rows arrive: its numpy path for float and integer
columns without nulls keeps Arrow's bounds exactly (NaN, uint64 extremes), and a zero bound
is +0.0 whichever sign Arrow picked (it picks by position, and differently with nulls)."""

from __future__ import annotations

from decimal import Decimal as D
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from fermion.table.predicate import parse_predicate as pc_filter
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.stats import StatsAccumulator, compute_field_stats
from tests.support.budget import examples

_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
_SPECIAL = st.sampled_from([0.0, -0.0, float("nan"), 1.5, -2.25])


def _accumulated(table: pa.Table, cuts: list[int]) -> list[pb.FieldStats]:
    """The accumulator's statistics of ``table`` added in pieces cut at ``cuts``."""
    acc = StatsAccumulator(table.schema, list(range(1, table.num_columns + 1)))
    bounds = [0, *sorted(cuts), table.num_rows]
    for start, end in zip(bounds, bounds[1:], strict=False):
        acc.add(table.slice(start, end - start).combine_chunks())
    return acc.result()


@settings(max_examples=examples(200))
@given(
    floats=st.lists(st.one_of(_FLOATS, _SPECIAL), min_size=1, max_size=40),
    ints=st.lists(st.integers(0, 2**64 - 1), min_size=40, max_size=40),
    nulls=st.lists(st.booleans(), min_size=40, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=4),
)
def test_accumulated_stats_equal_whole(
    floats: list[float], ints: list[int], nulls: list[bool], cuts: list[int]
) -> None:
    n = len(floats)
    f64 = pa.array(floats, pa.float64())
    table = pa.table(
        {
            "f64": f64,
            "f32": f64.cast(pa.float32(), safe=False),
            "u64": pa.array(ints[:n], pa.uint64()),
            "i8": pa.array([v % 256 - 128 for v in ints[:n]], pa.int8()),
            "nullable": pa.array(floats, pa.float64(), mask=np.array(nulls[:n])),
        }
    )
    whole = compute_field_stats(table, list(range(1, table.num_columns + 1)))
    parts = _accumulated(table, [c for c in cuts if c <= n])
    for mine, theirs in zip(parts, whole, strict=True):
        assert mine.SerializeToString(deterministic=True) == theirs.SerializeToString(
            deterministic=True
        ), (table.schema.field(mine.field_id - 1).name, mine, theirs)


def test_nan_drops_the_range_and_zero_bounds_are_positive() -> None:
    table = pa.table({"x": [1.0, float("nan")], "z": [-0.0, 0.0], "w": [0.0, -0.0]})
    whole = compute_field_stats(table, [1, 2, 3])
    parts = _accumulated(table, [1])
    assert not parts[0].HasField("min")
    for mine, theirs in zip(parts, whole, strict=True):
        assert mine == theirs
    for stats in (*parts[1:], *whole[1:]):
        assert str(stats.min.float_value) == str(stats.max.float_value) == "0.0"


def test_zero_bounds_do_not_depend_on_how_rows_were_cut() -> None:
    # found by test_accumulated_stats_equal_whole: Arrow's min_max gave -0.0 for the first
    # piece (with a null) and 0.0 for all the rows at once
    values = pa.array([0.0, -0.0, None, 0.0], pa.float64())
    table = pa.table({"n": values})
    whole = compute_field_stats(table, [1])
    assert _accumulated(table, [3]) == whole
    assert str(whole[0].min.float_value) == "0.0"


def test_decimal32_and_decimal64_columns_have_exact_bounds_and_tables_take_them(
    tmp_path: Path,
) -> None:
    """Arrow has no min_max kernel for decimal32/decimal64: a table with such columns used
    to fail its first write with ArrowNotImplementedError. Their bounds are now exact, the
    same streamed and at once, and filters on them answer as on decimal128."""
    import fermion

    values = [D("1.25"), None, D("-3.50"), D("999.99"), None, D("0.00")]
    table = pa.table(
        {
            "d64": pa.array(values, pa.decimal64(10, 2)),
            "d32": pa.array([None if v is None else v / 10 for v in values], pa.decimal32(6, 3)),
            "none": pa.array([None] * len(values), pa.decimal64(10, 2)),
        }
    )
    whole = compute_field_stats(table, [1, 2, 3])
    assert [(s.min.string_value, s.max.string_value) for s in whole[:2]] == [
        ("-3.50", "999.99"),
        ("-0.350", "99.999"),
    ]
    assert not whole[2].HasField("min") and whole[2].null_count == len(values)
    for cuts in ([1], [2, 3], [5]):
        assert _accumulated(table, cuts) == whole
    ds = fermion.write_dataset(table, str(tmp_path / "t"), max_rows_per_file=2)
    ds.append(table)
    wide = table.cast(pa.schema([(f.name, pa.decimal128(10, 3)) for f in table.schema]))
    for text in ("d64 > 1", "d64 < -10", "d32 >= 0", "d64 IS NULL"):
        got = ds.to_table(filter=text)
        assert got.num_rows == 2 * wide.filter(pc_filter(text, wide.schema)).num_rows, text
