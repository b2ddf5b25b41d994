"""Fragment statistics prune nullable columns: ``(min <= x <= max) or x is null``.

A fragment whose column has some nulls keeps the range of its non-null values; a filter
that no non-null value of the range can satisfy, and that a null never satisfies, skips
the fragment. Filters a null can satisfy (``is_null``, ``NOT``-wrapped comparisons under
SQL's three-valued logic, ``coalesce``) keep it. Property tests in
tests/table/test_pruning_properties.py compare pruned scans with unpruned ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion.table as ft

FRAGMENTS = 10
ROWS = 1_000


def _nullable_table(tmp_path: Path) -> tuple[ft.Dataset, pa.Table]:
    """10 fragments; fragment i holds x in [10,000 i, 10,000 i + 9,999] and every 7th x null."""
    parts = []
    for i in range(FRAGMENTS):
        x = np.linspace(10_000 * i, 10_000 * i + 9_999, ROWS).astype(np.int64)
        mask = np.arange(ROWS) % 7 == 3
        parts.append(
            pa.table(
                {
                    "id": pa.array(np.arange(ROWS) + i * ROWS, pa.int64()),
                    "x": pa.array(x, pa.int64(), mask=mask),
                }
            )
        )
    whole = pa.concat_tables(parts)
    ds = ft.write_dataset(whole, tmp_path / "t", max_rows_per_file=ROWS)
    assert len(ds.manifest.fragments) == FRAGMENTS
    for fragment in ds.manifest.fragments:  # every fragment really has nulls in x
        (x_stats,) = [s for s in fragment.stats if s.field_id == 1]
        assert 0 < x_stats.null_count < ROWS
    return ds, whole


def test_filter_on_nullable_column_opens_one_of_ten_fragments(tmp_path: Path) -> None:
    ds, whole = _nullable_table(tmp_path)
    expr = pc.field("x") > 95_000
    scanner = ds.scanner(filter=expr)
    got = scanner.to_table()
    assert got.equals(whole.filter(expr))
    assert scanner.stats.fragments_total == FRAGMENTS
    assert scanner.stats.files_opened == 1
    assert scanner.stats.fragments_pruned == FRAGMENTS - 1


@pytest.mark.parametrize(
    ("expr", "opened"),
    [
        (pc.field("x") > 95_000, 1),
        ((pc.field("x") >= 20_000) & (pc.field("x") < 30_000), 1),
        (pc.field("x") == 45_000, 1),
        (pc.field("x").is_null(), FRAGMENTS),  # every fragment has nulls
        (pc.field("x").is_valid() & (pc.field("x") < 5_000), 1),
        (~(pc.field("x") > 95_000), FRAGMENTS),  # true for non-null x <= 95,000
        (~(pc.field("x") >= 0), 0),  # false or null on every row: nothing opens
        (pc.field("x").is_null() | (pc.field("x") > 95_000), FRAGMENTS),
        # no row can match; Arrow's simplifier does not combine the conjuncts, so the one
        # fragment whose range overlaps x > 95,000 opens and yields nothing (never wrong)
        (pc.field("x").is_null() & (pc.field("x") > 95_000), 1),
        (pc.coalesce(pc.field("x"), pc.scalar(10**6)) > 95_000, FRAGMENTS),
        ("x > 95000", 1),
        ("NOT (x > 95000)", FRAGMENTS),
        ("x IS NULL AND id < 3000", 3),
        ("x NOT BETWEEN 0 AND 89999", 1),
    ],
)
def test_nullable_pruning_follows_three_valued_logic(
    tmp_path: Path, expr: pc.Expression | str, opened: int
) -> None:
    ds, whole = _nullable_table(tmp_path)
    scanner = ds.scanner(filter=expr)
    got = scanner.to_table()
    want = whole.filter(scanner.filter)
    assert got.equals(want)
    assert scanner.stats.files_opened == opened


def test_all_null_fragment_is_skipped_by_comparisons_and_kept_by_is_null(tmp_path: Path) -> None:
    ds = ft.write_dataset(pa.table({"x": pa.array([1, 2, None], pa.int64())}), tmp_path / "t")
    ds = ft.write_dataset(
        pa.table({"x": pa.array([None, None], pa.int64())}), tmp_path / "t", mode="append"
    )
    for expr, opened in [
        (pc.field("x") > 0, 1),
        (pc.field("x") != 5, 1),
        (pc.field("x").is_null(), 2),
        (~(pc.field("x") > 0), 0),  # false on 1 and 2, null on the nulls
        (~(pc.field("x") > 1), 1),
    ]:
        scanner = ds.scanner(filter=expr)
        assert scanner.to_table().equals(ds.to_table().filter(expr))
        assert scanner.stats.files_opened == opened, expr


def _values(table: pa.Table) -> list[object]:
    """The column's values, NaN spelt out (NaN != NaN would fail an equality)."""
    return ["nan" if v != v else v for v in table.column(0).to_pylist()]


def test_nan_in_a_nullable_float_column_keeps_its_fragment(tmp_path: Path) -> None:
    t = pa.table({"f": pa.array([1.0, None, float("nan")], pa.float64())})
    ds = ft.write_dataset(t, tmp_path / "t")
    ds = ft.write_dataset(
        pa.table({"f": pa.array([5.0, None, 6.0], pa.float64())}), tmp_path / "t", mode="append"
    )
    for expr, opened in [
        (pc.field("f") > 3.0, 2),  # NaN > 3 is false, but no bounds: opened, never wrong
        (pc.field("f") > 100.0, 1),  # the NaN fragment has no bounds; [5, 6] is skipped
        (pc.field("f") != 1.0, 2),
        (pc.field("f").is_nan(), 2),
        (pc.field("f") < 2.0, 1),
    ]:
        scanner = ds.scanner(filter=expr)
        assert _values(scanner.to_table()) == _values(ds.to_table().filter(expr)), expr
        assert scanner.stats.files_opened == opened, expr
