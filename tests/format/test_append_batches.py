"""``FileWriter.append_batches``: many batches in one call, the same file as one
``append_batch`` per run of equal ids.

Proofs independent of the code under test: with fixed-width and string columns without
nulls the file is byte-for-byte the file written by ``append_batch`` per run (same stripe
cuts, same pages). With nulls, a stripe cut from the middle of one input carries that
input's bits past the stripe's last row in its validity page's last byte, where a stripe
joined from several inputs has zeros, so only the read-back is compared. With list columns
(whose bytes per batch are shared out by rows) the file reads back the same rows and every
page holds whole batches (``prove_aligned`` from test_batch.py).

Bad inputs tried: ids not increasing from run to run, equal ids that are not adjacent, a
first id not above the last appended, nulls in the ids, float ids, too few ids, uint64 ids
above int64, a mismatched schema, mixing with ``write()``. Each raises and appends nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion
from fermion.errors import BatchModeError, SchemaMismatchError
from tests.format.test_batch import prove_aligned
from tests.support.budget import examples

SMALL = {"page_size": 64, "max_stripe_rows": 300, "max_stripe_bytes": 6_000}


def _table(lengths: list[int], with_list: bool, nulls: bool = True) -> tuple[pa.Table, np.ndarray]:
    rows = sum(lengths)
    ids = np.repeat(np.arange(len(lengths), dtype=np.int64) * 3 + 5, lengths)
    columns = {
        "i": pa.array(np.arange(rows, dtype=np.int64)),
        "f": pa.array(np.arange(rows, dtype=np.float32) / 7),
        "s": pa.array([None if nulls and k % 5 == 0 else "v" * (k % 13) for k in range(rows)]),
    }
    if with_list:
        columns["l"] = pa.array([[k] * (k % 4) for k in range(rows)], pa.list_(pa.int32()))
    return pa.table(columns), ids


def _one_by_one(path: Path, table: pa.Table, ids: np.ndarray) -> None:
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], len(ids)]
    with fermion.FileWriter(path, table.schema, **SMALL) as w:
        for a, b in zip(starts, ends, strict=True):
            w.append_batch(int(ids[a]), table.slice(int(a), int(b - a)))


def _bulk(path: Path, table: pa.Table, ids: np.ndarray, pieces: int) -> None:
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    cuts = sorted({int(starts[k]) for k in np.linspace(0, len(starts) - 1, pieces).astype(int)})
    cuts = [c for c in cuts if c > 0]
    with fermion.FileWriter(path, table.schema, **SMALL) as w:
        for a, b in zip([0, *cuts], [*cuts, len(ids)], strict=True):
            w.append_batches(table.slice(a, b - a), ids[a:b])


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    lengths=st.lists(st.integers(1, 120), min_size=1, max_size=60),
    pieces=st.integers(1, 4),
)
def test_bulk_file_is_the_file_of_one_call_per_batch(
    tmp_path: Path, lengths: list[int], pieces: int
) -> None:
    table, ids = _table(lengths, with_list=False, nulls=False)
    _one_by_one(tmp_path / "a.fermion", table, ids)
    _bulk(tmp_path / "b.fermion", table, ids, pieces)
    assert (tmp_path / "a.fermion").read_bytes() == (tmp_path / "b.fermion").read_bytes()


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(lengths=st.lists(st.integers(1, 90), min_size=1, max_size=50))
def test_bulk_with_lists_reads_back_and_keeps_batches_whole(
    tmp_path: Path, lengths: list[int]
) -> None:
    table, ids = _table(lengths, with_list=True)
    path = tmp_path / "c.fermion"
    _bulk(path, table, ids, 2)
    with fermion.FileReader(path) as r:
        assert r.read().equals(table)
        some = sorted({int(ids[0]), int(ids[-1]), int(ids[len(ids) // 2])})
        got = r.read_batches(some)
    want = table.filter(pa.array(np.isin(ids, some)))
    assert got.select(table.column_names).equals(want)
    prove_aligned(path, SMALL["page_size"])


def test_bulk_after_single_batches_and_before_them(tmp_path: Path) -> None:
    table, ids = _table([3, 4, 5, 6], with_list=False)
    path = tmp_path / "d.fermion"
    with fermion.FileWriter(path, table.schema, **SMALL) as w:
        w.append_batch(1, table.slice(0, 2))
        w.append_batches(table.slice(0, 12), ids[:12])  # ids 5, 8, 11
        w.append_batch(12, table.slice(12, 6))
        assert (w.num_batches, w._last_batch_id) == (5, 12)
    with fermion.FileReader(path) as r:
        assert r.read_batches([8])["i"].to_pylist() == [3, 4, 5, 6]
        assert r.read().num_rows == 20


@pytest.mark.parametrize(
    ("ids", "error"),
    [
        ([5, 5, 4, 6], "not greater than the previous id 5"),
        ([5, 6, 5, 7], "not greater than the previous id 6"),
        ([1, 1, 2, 2], "not greater than the previous id 2"),  # after id 2 was appended
        (pa.array([5, None, 6, 7]), "nulls"),
        (np.array([5.0, 6.0, 7.0, 8.0]), "integer"),
        ([5, 6, 7], "3 batch ids for 4 rows"),
        (np.array([2**63, 2**63, 2**63 + 1, 2**63 + 2], dtype=np.uint64), "does not fit in int64"),
    ],
)
def test_bad_ids_raise_and_append_nothing(tmp_path: Path, ids: object, error: str) -> None:
    table = pa.table({"x": [1, 2, 3, 4]})
    path = tmp_path / "e.fermion"
    with fermion.FileWriter(path, table.schema) as w:
        w.append_batch(2, table.slice(0, 1))
        with pytest.raises(BatchModeError, match=error):
            w.append_batches(table, ids)
        assert (w.num_batches, w._last_batch_id) == (1, 2)
    with fermion.FileReader(path) as r:
        assert r.read()["x"].to_pylist() == [1]


def test_schema_mismatch_and_mixing_with_write(tmp_path: Path) -> None:
    with fermion.FileWriter(tmp_path / "f.fermion", pa.schema([("x", pa.int64())])) as w:
        with pytest.raises(SchemaMismatchError):
            w.append_batches(pa.table({"y": [1]}), [1])
        w.write(pa.table({"x": [1]}))
        with pytest.raises(BatchModeError, match="written with write"):
            w.append_batches(pa.table({"x": [1]}), [1])
