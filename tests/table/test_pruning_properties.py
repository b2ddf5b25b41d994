"""Pruned table scans equal unpruned ones: fragments with random nulls, NaN, ±inf, -0.0,
empty strings and all-null columns, under random filters (tests/support/filters.py).

The unpruned answer is Arrow's filter over every row of the table; the pruned one is a
scan that skips fragments by their manifest statistics and, inside the files it opens,
stripes and pages by theirs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion.table as ft
from tests.support.budget import examples
from tests.support.filters import filters, same_rows, segments


@settings(max_examples=examples(60), deadline=None)
@given(segments(max_segments=4), st.lists(filters(), min_size=1, max_size=5))
def test_pruned_scan_equals_unpruned_scan(
    parts: list[pa.Table], exprs: list[pc.Expression]
) -> None:
    with tempfile.TemporaryDirectory() as root:
        uri = Path(root) / "t"
        ds = ft.write_dataset(parts[0], uri)
        for part in parts[1:]:
            ds = ft.write_dataset(part, uri, mode="append")
        assert len(ds.manifest.fragments) == len(parts)
        everything = pa.concat_tables(parts)
        for expr in exprs:
            scanner = ds.scanner(filter=expr)
            got = scanner.to_table()
            assert same_rows(got, everything.filter(expr)), expr
            assert scanner.stats.files_opened + scanner.stats.fragments_pruned == len(parts)
