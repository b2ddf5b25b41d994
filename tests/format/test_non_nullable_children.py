"""A non-nullable child under null parents (issue 14: ``alltypes-java.parquet``).

pyarrow reads some Parquet files (the Java ``DatasetWriter``'s among them) into structs whose
non-nullable children hold nulls in the slots of null parents. Arrow allows any child value
there, but such an array cannot be written to Parquet ("declared non-nullable but contains
nulls"). The reader gives those children no validity instead: the slots under null parents
read as defaults (0, "", false, an empty list), the arrays pass ``validate(full=True)`` and
write back to Parquet; rows with a valid parent are unchanged.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion


def _nn(name: str, t: pa.DataType) -> pa.Field:
    return pa.field(name, t, nullable=False)


MASK = pa.array([False, True, False])  # the middle parent is null


def _struct(children: dict[str, pa.Array], mask: pa.Array = MASK) -> pa.StructArray:
    fields = [_nn(name, a.type) for name, a in children.items()]
    return pa.StructArray.from_arrays(list(children.values()), fields=fields, mask=mask)


def _java_like() -> pa.Table:
    """Non-nullable children with nulls exactly under the null parents."""
    ints = pa.array([1, None, 3], pa.int32())
    strings = pa.array(["a", None, "c"])
    flat = _struct({"int-child": ints, "str-child": strings, "b": pa.array([True, None, False])})
    inner = _struct({"v": pa.array([1, None, 3], pa.int64())})
    nested = _struct(
        {"inner": inner, "lst": pa.array([[1], None, [2, 3]], pa.list_(_nn("e", pa.int64())))}
    )
    elements = _struct({"int-child": ints, "str-child": strings})
    listed = pa.ListArray.from_arrays(pa.array([0, 2, 3, 3], pa.int32()), elements)
    return pa.table({"flat": flat, "nested": nested, "listed": listed})


def test_java_like_nulls_read_back_as_defaults_and_write_to_parquet(tmp_path: Path) -> None:
    table = _java_like()
    with pytest.raises(pa.ArrowInvalid, match="non-nullable but contains nulls"):
        pq.write_table(table, io.BytesIO())  # what the issue saw, from pyarrow itself
    path = tmp_path / "j.fermion"
    fermion.write_table(table, str(path))
    got = fermion.read_table(str(path))
    got.validate(full=True)
    assert got.schema == table.schema
    assert got.to_pylist() == table.to_pylist()  # null parents stay null, the rest equal
    flat = got.column("flat").chunk(0)
    assert flat.field(0).to_pylist() == [1, 0, 3] and flat.field(0).null_count == 0
    assert flat.field(1).to_pylist() == ["a", "", "c"]
    assert flat.field(2).to_pylist() == [True, False, False]
    nested = got.column("nested").chunk(0)
    assert nested.field(0).field(0).null_count == 0 and nested.field(1).to_pylist()[1] == []
    sink = io.BytesIO()
    pq.write_table(got, sink)
    assert pq.read_table(pa.BufferReader(sink.getvalue())).to_pylist() == table.to_pylist()
    fermion.fermion_to_parquet(str(path), str(tmp_path / "j.parquet"))  # `fermion convert`
    assert pq.read_table(tmp_path / "j.parquet").to_pylist() == table.to_pylist()
    for take in ([1], [0, 2], [2, 1, 0]):  # and through a point read
        with fermion.FileReader(str(path)) as reader:
            rows = reader.take(take)
        rows.validate(full=True)
        assert rows.to_pylist() == table.take(take).to_pylist()


def test_a_fixed_size_list_child_under_a_null_parent_is_valid(tmp_path: Path) -> None:
    values = pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int8(), 2))
    table = pa.table({"s": _struct({"fl": values})})
    fermion.write_table(table, str(tmp_path / "f.fermion"))
    got = fermion.read_table(str(tmp_path / "f.fermion"))
    got.validate(full=True)
    assert got.column("s").chunk(0).field(0).null_count == 0
    assert got.to_pylist() == table.to_pylist()
    pq.write_table(got, io.BytesIO())  # (pyarrow cannot read such a column back itself)


def test_a_null_under_a_valid_parent_is_not_papered_over(tmp_path: Path) -> None:
    child = pa.array([1, None, 3], pa.int32())
    table = pa.table({"s": _struct({"c": child}, mask=pa.array([False, False, True]))})
    fermion.write_table(table, str(tmp_path / "b.fermion"))
    got = fermion.read_table(str(tmp_path / "b.fermion"))
    assert got.column("s").chunk(0).field(0).null_count == 1  # no value made up
    assert got.to_pylist() == table.to_pylist()


def _all_null_column(rows: int) -> pa.Table:
    """The real ``alltypes-java.parquet`` shape: a struct column whose every row is null, so
    the writer stores no data for it (no CMB), with non-nullable children at every depth."""
    t = pa.struct([
        _nn("int-child", pa.int32()),
        _nn("str-child", pa.string()),
        pa.field("maybe", pa.float64()),
        _nn("inner", pa.struct([_nn("v", pa.int64()), _nn("l", pa.list_(pa.int8()))])),
        _nn("when", pa.timestamp("ms", tz="UTC")),
    ])  # fmt: skip
    return pa.table({"id": pa.array(range(rows), pa.int64()), "struct": pa.nulls(rows, t)})


@pytest.mark.parametrize("rows", [1, 2, 9])
def test_an_all_null_struct_column_reads_valid_and_writes_to_parquet(
    tmp_path: Path, rows: int
) -> None:
    table = _all_null_column(rows)
    with pytest.raises(pa.ArrowInvalid, match="non-nullable but contains nulls"):
        pq.write_table(table, io.BytesIO())  # pa.nulls gives every child nulls
    path = tmp_path / "all-null.fermion"
    fermion.write_table(table, str(path))
    (described,) = fermion.FileReader(str(path)).describe(["struct"])["columns"]
    assert described["has_cmb"] is False  # every value null: no data stored for the column
    reader = fermion.FileReader(str(path))
    for got in (reader.read(), reader.take(list(range(rows))[::-1]), reader.read(["struct"])):
        column = got.column("struct").combine_chunks()
        column.validate(full=True)
        assert column.type == table.schema.field("struct").type
        assert column.null_count == rows and column.to_pylist() == [None] * rows
        assert column.field("int-child").null_count == 0
        assert column.field("int-child").to_pylist() == [0] * rows
        assert column.field("str-child").to_pylist() == [""] * rows
        assert column.field("maybe").null_count == rows  # nullable: stays null
        assert column.field("inner").field("l").to_pylist() == [[]] * rows
        out = io.BytesIO()
        pq.write_table(got, out)
        assert (
            pq.read_table(io.BytesIO(out.getvalue())).column("struct").to_pylist() == [None] * rows
        )


def test_null_column_fills_non_nullable_fixed_size_list_values() -> None:
    from fermion.format.read.assemble import null_column

    t = pa.struct([
        _nn("pair", pa.list_(pa.field("e", pa.int16(), nullable=False), 2)),
        _nn("m", pa.map_(pa.string(), pa.int32())),
        _nn("big", pa.large_list(pa.int8())),
        _nn("bytes", pa.large_binary()),
    ])  # fmt: skip
    column = null_column(3, t)
    column.validate(full=True)
    assert column.null_count == 3 and column.field("pair").null_count == 0
    assert column.field("pair").to_pylist() == [[0, 0]] * 3
    assert column.field("pair").values.null_count == 0
    assert column.field("m").to_pylist() == [[]] * 3 and column.field("m").null_count == 0
    assert column.field("big").to_pylist() == [[]] * 3
    assert column.field("bytes").to_pylist() == [b""] * 3
    pq.write_table(pa.table({"s": column}), io.BytesIO())  # no "contains nulls"
