"""Batch integrity on real tables: split, scattered and null batch ids are found."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion.table as ft
from fermion.errors import ColumnNotFoundError
from fermion.quality import check_batch_integrity


def test_whole_batches_pass(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"b": [1, 1, 2, 2, 3]}), uri, max_rows_per_file=2)
    result = check_batch_integrity(uri, "b")
    assert result.success
    assert (result.fragments, result.rows, result.batches) == (3, 5, 3)
    assert result.to_json()["check"] == "batch_integrity"


def test_a_batch_across_fragments_is_split(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"b": ["x", "x", "y", "y", "y"]}), uri, max_rows_per_file=3)
    result = check_batch_integrity(uri, "b")
    assert not result.success
    assert (result.split_batches, result.split_count, result.scattered_count) == (["y"], 1, 0)


def test_a_batch_in_two_runs_is_scattered(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"b": [1, 2, 1, 3, 3]}), uri)
    result = check_batch_integrity(uri, "b")
    assert not result.success
    assert (result.scattered_batches, result.split_count) == ([1], 0)


def test_null_batch_ids_fail(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"b": pa.array([1, None, 2], pa.int64())}), uri)
    result = check_batch_integrity(uri, "b")
    assert (result.success, result.null_rows) == (False, 1)


def test_deleted_rows_do_not_count(tmp_path: Path) -> None:
    """A deleted row between two runs of a batch joins them: only live rows are checked."""
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(pa.table({"b": [1, 2, 1]}), uri)
    assert not check_batch_integrity(uri, "b").success
    ds.delete(pc.field("b") == 2)
    assert check_batch_integrity(uri, "b").success
    assert not check_batch_integrity(uri, "b", version=1).success


def test_unknown_column(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"b": [1]}), uri)
    with pytest.raises(ColumnNotFoundError, match="'nope'"):
        check_batch_integrity(uri, "nope")
