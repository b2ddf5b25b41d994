"""Issue 14, item 4 leftovers: the types the issue lists, through ``write_table`` and the
Parquet converter.

Stored and read back exactly: intervals (month-day-nano), string and binary views, Python
extension types and pyarrow's canonical extension types (``arrow.uuid``, ``arrow.json``;
they were refused before). Unions, run-end encoded arrays and list views are covered by
``test_encoded_types.py``. Parquet cannot hold month-day-nano intervals, so they only reach
``write_table``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion


class _Celsius(pa.ExtensionType):
    def __init__(self) -> None:
        super().__init__(pa.float64(), "test.celsius")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> _Celsius:
        return cls()


@pytest.fixture(scope="module", autouse=True)
def _registered() -> object:
    pa.register_extension_type(_Celsius())
    yield
    pa.unregister_extension_type("test.celsius")


def _kept() -> dict[str, pa.Array]:
    return {
        "interval": pa.array(
            [pa.MonthDayNano([1, 2, 3]), None, pa.MonthDayNano([-1, 0, 5])],
            pa.month_day_nano_interval(),
        ),
        "string_view": pa.array(["a", None, "a longer string than twelve bytes"], pa.string_view()),
        "binary_view": pa.array([b"a", None, b"b" * 40], pa.binary_view()),
        "uuid": pa.ExtensionArray.from_storage(
            pa.uuid(), pa.array([b"0" * 16, None, b"1" * 16], pa.binary(16))
        ),
        "json": pa.ExtensionArray.from_storage(pa.json_(), pa.array(['{"a": 1}', None, "[]"])),
        "celsius": pa.ExtensionArray.from_storage(_Celsius(), pa.array([1.5, None, -3.0])),
    }


@pytest.mark.parametrize("name", list(_kept()))
def test_stored_and_read_back_exactly(tmp_path: Path, name: str) -> None:
    table = pa.table({name: _kept()[name]})
    path = tmp_path / "k.fermion"
    fermion.write_table(table, str(path))
    got = fermion.read_table(str(path))
    got.validate(full=True)
    assert got.schema == table.schema and got.equals(table)
    with fermion.FileReader(str(path)) as reader:
        taken = reader.take([2, 0])
    rows = table.to_pylist()
    assert taken.schema == table.schema and taken.to_pylist() == [rows[2], rows[0]]


@pytest.mark.parametrize("name", [n for n in _kept() if n != "interval"])
def test_parquet_with_the_type_converts_exactly(tmp_path: Path, name: str) -> None:
    table = pa.table({name: _kept()[name]})
    pq.write_table(table, tmp_path / "k.parquet")
    expected = pq.read_table(tmp_path / "k.parquet")  # what pyarrow reads
    fermion.parquet_to_fermion(str(tmp_path / "k.parquet"), str(tmp_path / "k.fermion"))
    got = fermion.read_table(str(tmp_path / "k.fermion"))
    assert got.schema == expected.schema and got.equals(expected)
    fermion.fermion_to_parquet(str(tmp_path / "k.fermion"), str(tmp_path / "back.parquet"))
    assert pq.read_table(tmp_path / "back.parquet").equals(expected)
