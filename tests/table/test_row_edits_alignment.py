"""``evaluate`` hands Acero aligned columns without copying them, and copies only the
misaligned ones (data read from files may sit at any offset)."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pyarrow.compute as pc

from fermion.table.row_edits import _aligned_for_acero, evaluate


def _off_by_one(values: list[int]) -> pa.Array:
    """An int64 array whose data buffer starts one byte past an aligned address."""
    raw = pa.array(values, pa.int64()).buffers()[1].to_pybytes()
    data = pa.py_buffer(b"\0" + raw).slice(1)
    assert data.address % 8
    return pa.Array.from_buffers(pa.int64(), len(values), [None, data])


def _data_address(table: pa.Table, name: str) -> int:
    return int(table.column(name).chunk(0).buffers()[1].address)


def test_only_misaligned_columns_are_copied() -> None:
    table = pa.table({"a": _off_by_one([1, 2, 3]), "b": pa.array([4, 5, 6], pa.int64())})
    out = _aligned_for_acero(table)
    assert out.equals(table)
    assert _data_address(out, "a") % 64 == 0
    assert _data_address(out, "b") == _data_address(table, "b")  # not copied


def test_aligned_table_is_returned_as_is() -> None:
    table = pa.table({"b": pa.array([4, 5, 6], pa.int64()), "c": ["x", None, "z"]})
    assert _aligned_for_acero(table) is table


def test_evaluate_over_misaligned_and_aligned_columns() -> None:
    table = pa.table({"a": _off_by_one([1, 2, 3]), "b": pa.array([4, 5, None], pa.int64())})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = evaluate(table, {"g": pc.field("a") * 2 + pc.field("b")})
    assert out.column("g").to_pylist() == [6, 9, None]
