"""Stripe and page statistics prune nullable columns: ``(min <= x <= max) or x is null``.

Bounds cover the non-null values (docs/FORMAT.md §7), in every format version, so a stripe
or page whose non-null values all fail ``x > c`` is skipped even when it has nulls; filters
a null can satisfy keep it. NaN keeps its own rule: a float chunk or page with a NaN has no
bounds. Checked on counts of kept stripes and pages, exhaustively on small cases, on every
golden file, and by hypothesis against Arrow's filter over all the rows.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.format.read.filters import FilterInfo
from fermion.format.read.pruning import guarantee_for, segments_that_may_match
from tests.support.budget import examples
from tests.support.filters import filters, same_rows, segments

N = 100_000
STRIPE = 25_000


@pytest.fixture
def nullable_file(tmp_path: Path) -> tuple[Path, pa.Table]:
    """x = row number, every 5th null; four stripes of 25,000 rows, 8 KiB pages."""
    x = np.arange(N, dtype=np.int64)
    table = pa.table(
        {
            "x": pa.array(x, mask=x % 5 == 2),
            "f": pa.array(x.astype(np.float64), mask=x % 3 == 1),
            "s": pa.array([f"k{i:06d}" for i in range(N)], mask=x % 4 == 0),
        }
    )
    path = tmp_path / "nullable.fermion"
    fermion.write_table(table, path, page_size=8192, max_stripe_rows=STRIPE)
    return path, table


def _kept(path: Path, expr: pc.Expression) -> tuple[list[int], int]:
    """The stripes a filtered read keeps, and the rows of the pages it would read in them."""
    with fermion.FileReader(path) as r:
        names = sorted(FilterInfo(expr).names)
        projs = r.file_meta.projections(names)
        metas = r.file_meta.column_metas(projs)
        rows = r.file_meta.stripe_rows(metas)
        info = FilterInfo(expr)
        stripes = r._pruner.stripes(projs, metas, rows, info)
        page_rows = 0
        for s in stripes:
            for a, b in r._pruner.pages(projs, metas, s, int(rows[s]), info):
                page_rows += b - a
        return stripes, page_rows


@pytest.mark.parametrize(
    ("expr", "stripes", "max_rows"),
    [
        (pc.field("x") > 95_000, [3], 8_000),  # pages of ~4,000 rows: the last two pages
        (pc.field("x") < 1_000, [0], 5_000),
        (pc.field("f") >= 99_000.0, [3], 5_000),
        (pc.field("s") == "k050001", [2], 15_000),  # string pages hold more rows
        (pc.field("s") == "k050000", [], 0),  # row 50,000 is null: the range starts after it
        ((pc.field("x") >= 30_000) & (pc.field("x") < 31_000), [1], 5_000),
        (~(pc.field("x") >= 0), [], 0),  # false or null on every row
        (pc.field("x").is_null(), [0, 1, 2, 3], N),
        (~(pc.field("x") > 95_000), [0, 1, 2, 3], N),
    ],
)
def test_nullable_columns_prune_stripes_and_pages(
    nullable_file, expr: pc.Expression, stripes: list[int], max_rows: int
) -> None:
    path, table = nullable_file
    kept, page_rows = _kept(path, expr)
    assert kept == stripes
    assert page_rows <= max_rows
    assert fermion.read_table(path, filter=expr).equals(table.filter(expr))


def test_nullable_pruning_reads_few_bytes(nullable_file) -> None:
    path, table = nullable_file
    expr = pc.field("x") > 99_900
    with fermion.FileReader(path, coalesce_gap=0) as r:
        r.read(columns=["x"], filter=pc.field("x") < 0)  # warm metadata only
        r.source.stats.reset()
        got = r.read(columns=["x"], filter=expr)
        assert got.equals(table.select(["x"]).filter(expr))
        assert r.source.stats.bytes_read < r.source.size / 20


# -- exhaustive small cases ---------------------------------------------------------------

_SITUATIONS: list[tuple[str, pa.Array]] = [
    ("no nulls", pa.array([0.0, 5.0, 10.0])),
    ("some nulls", pa.array([0.0, None, 10.0])),
    ("infinite bounds", pa.array([-math.inf, None, math.inf])),
    ("zeros", pa.array([-0.0, None, 0.0])),
    ("all null", pa.nulls(3, pa.float64())),
    ("nan", pa.array([1.0, None, math.nan])),
]
_LITERALS = [math.nan, -math.inf, -1.0, -0.0, 0.0, 5.0, 10.0, 11.0, math.inf]
_OPS = [pc.equal, pc.not_equal, pc.less, pc.less_equal, pc.greater, pc.greater_equal]
_WRAPS = [
    lambda e: e,
    lambda e: ~e,
    lambda e: e.is_null(),
    lambda e: e.is_valid(),
    lambda e: ~e | pc.field("x").is_null(),
    lambda e: pc.coalesce(e, pc.scalar(True)),
]


def _guarantee(values: pa.Array) -> pc.Expression | None:
    """The guarantee the writer's statistics of ``values`` give (as a page or chunk)."""
    with_nan = pc.any(pc.is_nan(values)).as_py()
    live = values.drop_null()
    bounds = None
    if len(live) and not with_nan:
        bounds = (pc.min(live).as_py(), pc.max(live).as_py())
    return guarantee_for("x", pa.float64(), bounds, values.null_count, len(values))


@pytest.mark.parametrize(("situation", "values"), _SITUATIONS, ids=[s for s, _ in _SITUATIONS])
def test_no_comparison_prunes_a_segment_with_a_match(situation: str, values: pa.Array) -> None:
    """Every comparison with every literal (NaN, ±inf, ±0 included; literal on either
    side), plain, negated, under ``is_null``/``is_valid``/``coalesce``: a segment is
    dropped only if none of its rows matches."""
    table = pa.table({"x": values})
    schema = table.schema
    guarantee = _guarantee(values)
    dropped = 0
    for op, literal, wrap, flip in itertools.product(_OPS, _LITERALS, _WRAPS, (False, True)):
        lit = pc.scalar(literal)
        expr = wrap(op(lit, pc.field("x")) if flip else op(pc.field("x"), lit))
        kept = segments_that_may_match(schema, [guarantee], expr)
        matches = table.filter(expr).num_rows
        assert kept or matches == 0, f"{situation}: {expr} dropped {matches} matching rows"
        dropped += not kept
    if situation in ("no nulls", "some nulls", "all null"):
        assert dropped > 0  # the statistics do prune


def test_a_nan_literal_prunes_nothing() -> None:
    """Arrow's simplifier orders NaN above every bound: ``NOT (x <= NaN)`` would be pruned
    although it holds on every non-null row; filters with a NaN literal are not pruned."""
    guarantee = guarantee_for("x", pa.float64(), (0.0, 10.0), 0, 3)
    schema = pa.schema([("x", pa.float64())])
    expr = ~(pc.field("x") <= math.nan)
    assert pa.table({"x": [0.0, 5.0, 10.0]}).filter(expr).num_rows == 3
    assert segments_that_may_match(schema, [guarantee], expr) == [0]
    assert segments_that_may_match(schema, [guarantee], pc.field("x") > 11.0) == []


# -- golden files: what older writers' statistics mean ----------------------------------

GOLDEN = sorted((Path(__file__).parent / "golden").glob("v*/*.fermion"))
_GOLDEN_COLUMNS = 12  # per file: the wide files have thousands of columns


def _probe_filters(column: pa.ChunkedArray, name: str) -> list[pc.Expression]:
    """Comparisons against values of the column (and around them), plain and negated."""
    field = pc.field(name)
    live = column.drop_null()
    if pa.types.is_floating(column.type):
        live = live.filter(pc.invert(pc.is_nan(live)))
    out = [field.is_null(), field.is_valid()]
    if not len(live):
        return out
    for value in (live[len(live) // 2], pc.min(live), pc.max(live)):
        for op in (pc.less, pc.greater):
            expr = op(field, pc.scalar(value))
            out += [expr, ~expr]
    return out


def _flat_ordered(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_temporal(t)
        or pa.types.is_boolean(t)
        or pa.types.is_decimal(t)
    ) and not (pa.types.is_float16(t) or pa.types.is_interval(t) or pa.types.is_duration(t))


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_file_statistics_prune_nullable_columns_correctly(path: Path) -> None:
    """Older writers' bounds cover the non-null values too: pruned reads of every golden
    file equal Arrow's filter over all its rows, nullable columns included."""
    with fermion.FileReader(path) as r:
        columns = [c for c in r.schema.names if not c.startswith("_")]
        whole = r.read(columns=columns) if r.batch_mode else r.read()
        checked = 0
        eligible = [n for n in columns if _flat_ordered(whole.column(n).type)]
        for name in eligible[:_GOLDEN_COLUMNS]:
            column = whole.column(name)
            for expr in _probe_filters(column, name):
                try:
                    want = whole.select([name]).filter(expr)
                except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
                    continue  # Arrow itself cannot compare these values
                got = r.read(columns=[name], filter=expr)
                assert same_rows(got, want), f"{name}: {expr}"
                checked += 1
    assert checked or whole.num_rows == 0 or not columns


# -- hypothesis: stripes and pages --------------------------------------------------------


@settings(max_examples=examples(40), deadline=None)
@given(
    segments(max_segments=5, max_rows=40),
    st.lists(filters(), min_size=1, max_size=6),
    st.sampled_from([3, 8, 64]),
    st.booleans(),
)
def test_pruned_file_read_equals_unpruned(
    parts: list[pa.Table], exprs: list[pc.Expression], stripe_rows: int, batch_mode: bool
) -> None:
    import tempfile

    whole = pa.concat_tables(parts).combine_chunks()
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "p.fermion"
        options: dict[str, Any] = {"page_size": 64, "max_stripe_rows": stripe_rows}
        if batch_mode:  # each segment one batch: batches never split across pages
            with fermion.FileWriter(path, whole.schema, **options) as w:
                for batch_id, part in enumerate(parts):
                    w.append_batch(batch_id, part)
        else:
            fermion.write_table(whole, path, **options)
        with fermion.FileReader(path) as r:
            names = list(whole.column_names)
            assert same_rows(r.read(columns=names), whole)
            for expr in exprs:
                assert same_rows(r.read(columns=names, filter=expr), whole.filter(expr)), expr


def test_expressions_read_once_are_not_confused() -> None:
    """The serialisation of an expression is kept by expression object: expressions made
    and dropped one after another (whose ids Python reuses) each give their own fields,
    literals and pruning."""
    from fermion.format.read import pruning

    schema = pa.schema([(f"c{i}", pa.int64()) for i in range(40)])
    guarantee = guarantee_for("c0", pa.int64(), (0, 9), 0, 10)
    for i in range(40):
        expr = pc.field(f"c{i}") == i
        assert pruning.referenced_fields(expr) == {f"c{i}"}
        assert pruning.equality_constraints(expr)[f"c{i}"].to_pylist() == [i]
        assert segments_that_may_match(schema, [guarantee], expr) == [0]
        assert segments_that_may_match(schema, [guarantee], pc.field("c0") == 10 + i) == []
        del expr
    nan = pc.field("c0") <= float("nan")
    assert segments_that_may_match(schema, [guarantee], nan) == [0]  # NaN: nothing pruned
