"""``Dataset.take``: rows by position in scan order, read fragment by fragment with
``FileReader.take`` (only the pages holding the rows) through the dataset's kept readers.

Every expectation comes from a full scan of the same version (``to_table().take``), never
from the code under test. Bad inputs tried: positions past the end, negative positions,
strings, floats (0.5 was silently taken as row 0 before), booleans, a nested list, a
position beyond int64.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion.table.readers as readers_module
from fermion.errors import InvalidArgumentError
from fermion.format import FileReader
from fermion.table import Dataset, dataset, write_dataset
from tests.support.budget import examples


def table_of(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "x": pa.array(rng.random(n), pa.float64()),
            "s": pa.array([f"v{int(v)}" if v % 7 else None for v in rng.integers(0, 50, n)]),
            "tags": pa.array([[int(i)] * int(i % 3) for i in range(n)], pa.list_(pa.int32())),
        }
    )


def expected(ds: Dataset, positions: list[int], columns: list[str] | None) -> pa.Table:
    whole = ds.to_table(columns).combine_chunks()
    return whole.take(pa.array(positions, pa.int64())) if positions else whole.slice(0, 0)


@settings(max_examples=examples(25), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 300),
    per_file=st.integers(7, 120),
    deleted=st.integers(0, 6),
    picks=st.lists(st.floats(0, 1, exclude_max=True), min_size=0, max_size=40),
    columns=st.sampled_from([None, ["x"], ["tags", "id"], ["s", "x", "id"]]),
    seed=st.integers(0, 5),
)
def test_take_matches_a_full_scan(
    tmp_path_factory: pytest.TempPathFactory,
    n: int,
    per_file: int,
    deleted: int,
    picks: list[float],
    columns: list[str] | None,
    seed: int,
) -> None:
    uri = tmp_path_factory.mktemp("take")
    with write_dataset(table_of(n, seed), uri, max_rows_per_file=per_file) as ds:
        if deleted:
            ds.delete(pc.field("id").isin(list(range(deleted, n, 7))))
        live = ds.count_rows()
        positions = [int(p * live) for p in picks] if live else []
        for _ in range(2):  # the second time through the kept readers
            got = ds.take(positions, columns)
            assert got.equals(expected(ds, positions, columns))


def test_take_through_schema_changes_and_deletions(tmp_path: Path) -> None:
    """Renamed, widened and added columns are read by field id; deleted rows are skipped
    by position (positions count live rows only)."""
    ds = write_dataset(table_of(100, 1), tmp_path, max_rows_per_file=30)
    ds.delete("id < 5 OR id = 40")
    ds.rename_columns({"x": "price"})
    ds.add_columns([pa.field("extra", pa.string())])
    ds.append(
        pa.table(
            {
                "id": pa.array([100, 101], pa.int64()),
                "price": [0.5, 1.5],
                "s": ["a", None],
                "tags": pa.array([[1], []], pa.list_(pa.int32())),
                "extra": ["e", "f"],
            }
        )
    )
    positions = [0, 95, 34, 35, 35, 94, 1]
    for columns in (None, ["extra", "price", "id"]):
        got = ds.take(positions, columns)
        assert got.equals(expected(ds, positions, columns))
    assert ds.take([0, 34, 35], ["id"])["id"].to_pylist() == [5, 39, 41]
    assert ds.take([94, 95], ["extra"])["extra"].to_pylist() == ["e", "f"]


def test_take_reads_rows_not_fragments_and_keeps_files_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = write_dataset(table_of(400, 2), tmp_path, max_rows_per_file=100)
    want = expected(ds, [350, 3, 120], ["id", "x"])
    taken: list[list[int]] = []
    opened: list[str] = []
    real_take, real_open = FileReader.take, readers_module.open_data_file

    def spy_take(self: FileReader, indices: Any, columns: Any = None) -> pa.Table:
        taken.append(sorted(np.asarray(indices).tolist()))
        return real_take(self, indices, columns)

    def no_read(self: FileReader, *a: Any, **k: Any) -> pa.Table:
        raise AssertionError("a fragment was read whole")

    def counting_open(target: Any) -> FileReader:
        opened.append(str(target))
        return real_open(target)

    monkeypatch.setattr(FileReader, "take", spy_take)
    monkeypatch.setattr(FileReader, "read", no_read)
    monkeypatch.setattr(readers_module, "open_data_file", counting_open)
    for _ in range(3):
        assert ds.take([350, 3, 120], ["id", "x"]).equals(want)
    assert sorted(taken[:3]) == [[3], [20], [50]] and len(taken) == 9
    assert len(opened) == 3  # each file once: kept for the next takes
    ds.close()


@pytest.mark.parametrize("bad", [[400], [-1], ["a"], [0.5], [True], [[1, 2]], [2**64]])
def test_take_bad_positions(tmp_path: Path, bad: list[Any]) -> None:
    ds = write_dataset(table_of(400, 3), tmp_path, max_rows_per_file=100)
    with pytest.raises(InvalidArgumentError):
        ds.take(bad)


def test_take_after_close_still_reads(tmp_path: Path) -> None:
    write_dataset(table_of(50, 4), tmp_path)
    ds = dataset(str(tmp_path))
    ds.take([1])
    ds.close()
    assert ds.take([2, 1], ["id"])["id"].to_pylist() == [2, 1]
