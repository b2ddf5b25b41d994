"""``evaluate`` and ``filter_table`` hand Acero aligned columns without copying them, and
copy only the misaligned ones (data read from files may sit at any offset)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import fermion
from fermion.format.encoding.arrow_ops import aligned_for_acero, filter_table
from fermion.table.row_edits import evaluate


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
    out = aligned_for_acero(table)
    assert out.equals(table)
    assert _data_address(out, "a") % 64 == 0
    assert _data_address(out, "b") == _data_address(table, "b")  # not copied


def test_aligned_table_is_returned_as_is() -> None:
    table = pa.table({"b": pa.array([4, 5, 6], pa.int64()), "c": ["x", None, "z"]})
    assert aligned_for_acero(table) is table


def test_evaluate_over_misaligned_and_aligned_columns() -> None:
    table = pa.table({"a": _off_by_one([1, 2, 3]), "b": pa.array([4, 5, None], pa.int64())})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = evaluate(table, {"g": pc.field("a") * 2 + pc.field("b")})
    assert out.column("g").to_pylist() == [6, 9, None]


ACERO_WARNING = "poorly aligned"  # what Acero prints on stderr (C++, not a Python warning)


def test_filter_over_a_misaligned_column_keeps_acero_quiet(capfd: Any) -> None:
    table = pa.table({"a": _off_by_one([1, 2, 3, 4]), "b": pa.array([4, 5, 6, 7], pa.int64())})
    want = pa.table({"a": [1, 2, 3, 4], "b": [4, 5, 6, 7]}).filter(pc.field("b") > 4)
    for used in (None, {"b"}):  # the named columns known, or not
        got = filter_table(table, pc.field("b") > 4, used)
        assert got.equals(want)
    assert filter_table(table, pc.field("a") >= 3).equals(want.slice(1))  # a misaligned one
    assert ACERO_WARNING not in capfd.readouterr().err


def test_a_filtered_read_of_values_read_in_place_keeps_acero_quiet(
    tmp_path: Path, capfd: Any
) -> None:
    # random float64 values: their pages are PLAIN, read in place at any offset
    # (docs/FORMAT.md, 5.2); the filter names another column
    rng = np.random.default_rng(7)
    table = pa.table({"k": np.arange(50_000), "v": rng.random(50_000)})
    path = str(tmp_path / "t.fermion")
    fermion.write_table(table, path)
    got = fermion.read_table(path, filter=pc.field("k") >= 49_000)
    assert got.equals(table.slice(49_000))
    ds = fermion.write_dataset(table, str(tmp_path / "d"))
    assert ds.to_table(filter="k < 1000").equals(table.slice(0, 1000))
    assert ACERO_WARNING not in capfd.readouterr().err


def _shifted(array: pa.Array, by: int) -> pa.Array:
    """``array`` (flat, no nulls) with its values (offsets) buffer at ``by`` bytes past a
    64-byte boundary, its other buffers as they are."""
    buffers = array.buffers()
    raw = np.frombuffer(buffers[1], dtype=np.uint8)
    room = np.zeros(len(raw) + 128, dtype=np.uint8)
    start = (-room.ctypes.data) % 64 + by
    room[start : start + len(raw)] = raw
    values = pa.py_buffer(room[start : start + len(raw)])
    assert values.address % 64 == by
    return pa.Array.from_buffers(array.type, len(array), [None, values, *buffers[2:]])


def test_columns_at_their_natural_alignment_go_to_acero_uncopied(capfd: Any) -> None:
    # values read in place at a multiple of their width but not of 64 bytes (a string's
    # offsets at 16 bytes past a boundary, an int64's at 8): Acero takes them as they are,
    # so neither is copied and Acero stays quiet
    strings = _shifted(pa.array(["MAIL", "SHIP", "AIR", "RAIL"]), 16)
    ints = _shifted(pa.array([1, 2, 3, 4], pa.int64()), 8)
    table = pa.table({"s": strings, "i": ints})
    out = aligned_for_acero(table)
    assert out.column("s").chunk(0).buffers()[1].address == strings.buffers()[1].address
    assert _data_address(out, "i") == ints.buffers()[1].address
    got = filter_table(table, pc.field("s").isin(["MAIL", "SHIP"]) & (pc.field("i") > 1))
    assert got.to_pydict() == {"s": ["SHIP"], "i": [2]}
    assert ACERO_WARNING not in capfd.readouterr().err
