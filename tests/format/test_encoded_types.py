"""Issue 14, item 4: unions, run-end encoded arrays and list views are stored as other
types (docs/FORMAT.md §3.1) and read back as what was written, on every read path.

Each case is one column type; every test runs it through one path: ``write_table`` /
``read_table``, ``FileReader.take``, a filter, a projection, slices, chunked input, empty
tables, several stripes, the table layer and (for list views, the only ones Parquet can
hold) the Parquet converter both ways. Every array read back passes ``validate(full=True)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion
from fermion.errors import ColumnNotFoundError, UnsupportedTypeError
from tests.support.budget import examples

N = 9  # rows of every case


def _dense() -> pa.Array:
    # type codes 5 and 2, named members, a non-nullable member, nulls inside a member,
    # an unreferenced child value and a child value referenced twice
    t = pa.dense_union(
        [pa.field("num", pa.int64()), pa.field("txt", pa.string(), nullable=False)], [5, 2]
    )
    ids = pa.array([5, 2, 5, 5, 2, 2, 5, 2, 5], pa.int8())
    offsets = pa.array([0, 0, 1, 2, 1, 2, 3, 0, 0], pa.int32())
    children = [pa.array([10, None, 30, 40, 99]), pa.array(["a", "b", "c"])]
    return pa.Array.from_buffers(
        t, N, [None, ids.buffers()[1], offsets.buffers()[1]], children=children
    )


def _sparse() -> pa.Array:
    t = pa.sparse_union(
        [
            pa.field("i", pa.int32()),
            pa.field("s", pa.struct([("a", pa.int8()), ("b", pa.string())])),
            pa.field("l", pa.list_(pa.float64()), metadata={b"k": b"v"}),
        ],
        [0, 7, 3],
    )
    ids = pa.array([0, 7, 3, 3, 0, 7, 7, 0, 3], pa.int8())
    children = [
        pa.array([1, 2, 3, None, 5, 6, 7, 8, 9], pa.int32()),
        pa.array([{"a": i, "b": str(i)} if i != 5 else None for i in range(N)], t.field(1).type),
        pa.array([[float(i)] * (i % 3) if i != 3 else None for i in range(N)], t.field(2).type),
    ]
    return pa.Array.from_buffers(t, N, [None, ids.buffers()[1]], children=children)


def _ree(run_ends: pa.DataType, values: pa.Array, ends: list[int]) -> pa.Array:
    return pa.RunEndEncodedArray.from_arrays(pa.array(ends, run_ends), values)


def _cases() -> dict[str, pa.Array]:
    lv_values = pa.array([0, 1, 2, 3, 4, 5, None])
    lv = pa.ListViewArray.from_arrays(  # overlapping, out-of-order views and a null
        pa.array([4, 0, 1, 0, 6, 2, 0, 3, 5], pa.int32()),
        pa.array([2, 3, 0, 1, 1, 2, 0, 4, 2], pa.int32()),
        lv_values,
        mask=pa.array([False, False, False, True, False, False, False, False, False]),
    )
    return {
        "dense_union": _dense(),
        "sparse_union": _sparse(),
        "ree_int16": _ree(pa.int16(), pa.array(["x", None, "zz"]), [2, 5, 9]),
        "ree_int32": _ree(pa.int32(), pa.array([1.5, None, -2.0, 4.0]), [1, 2, 8, 9]),
        "ree_int64_struct": _ree(pa.int64(), pa.array([{"a": 1}, None, {"a": None}]), [3, 6, 9]),
        "list_view": lv,
        "large_list_view": pa.array(
            [[1], None, [], [2, 3], [None], [4, 5, 6], [], None, [7]],
            pa.large_list_view(pa.field("e", pa.int16(), nullable=True)),
        ),
        "union_in_struct": pa.StructArray.from_arrays(
            [_sparse(), pa.array(range(N))], ["u", "n"], mask=pa.array([i == 4 for i in range(N)])
        ),
        "dense_union_in_list": pa.ListArray.from_arrays(
            pa.array([0, 2, 2, 5, 9], pa.int32()),
            _dense(),
            mask=pa.array([False, True, False, False]),
        ).take(pa.array([0, 1, 2, 3, 0, 1, 2, 3, 0])),
        "ree_in_struct": pa.StructArray.from_arrays(
            [_ree(pa.int32(), pa.array([7, None]), [4, 9])], ["r"]
        ),
        "ree_in_list": pa.ListArray.from_arrays(
            pa.array([0, 3, 3, 5, 9, 9, 9, 10, 12, 18], pa.int32()),
            _ree(pa.int32(), pa.array(["p", None, "q"]), [6, 10, 18]),
        ),
        "list_view_in_union": pa.UnionArray.from_sparse(
            pa.array([0, 1] * 4 + [0], pa.int8()),
            [lv, pa.array(range(N), pa.int64())],
            ["lv", "n"],
        ),
        "union_of_ree": pa.UnionArray.from_sparse(
            pa.array([0, 1] * 4 + [1], pa.int8()),
            [_ree(pa.int32(), pa.array([1, 2, 3]), [2, 3, 9]), pa.array(["s"] * N)],
        ),
    }


CASES = list(_cases())


def _table(name: str) -> pa.Table:
    return pa.table({"k": pa.array(range(N), pa.int64()), name: _cases()[name]})


def _valid(table: pa.Table) -> pa.Table:
    table.validate(full=True)
    for column in table.columns:
        for chunk in column.chunks:
            chunk.validate(full=True)
    return table


def _same(got: pa.Table, expected: pa.Table) -> None:
    _valid(got)
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()
    assert got.equals(expected)


def _rows(table: pa.Table, rows: list[int]) -> list[dict[str, object]]:
    pylist = table.to_pylist()
    return [pylist[r] for r in rows]


@pytest.mark.parametrize("name", CASES)
def test_written_and_read_back_exactly(tmp_path: Path, name: str) -> None:
    table = _table(name)
    path = str(tmp_path / "t.fermion")
    fermion.write_table(table, path)
    _same(fermion.read_table(path), table)
    with fermion.FileReader(path) as reader:
        assert reader.schema == table.schema
        _same(reader.read(columns=[name]), table.select([name]))


@pytest.mark.parametrize("name", CASES)
def test_several_stripes_and_chunked_input(tmp_path: Path, name: str) -> None:
    table = _table(name)
    chunked = pa.concat_tables([table.slice(0, 4), table.slice(4)])
    assert chunked.column(name).num_chunks == 2
    path = str(tmp_path / "t.fermion")
    fermion.write_table(chunked, path, max_stripe_rows=2)
    _same(fermion.read_table(path), table)
    with fermion.FileReader(path) as reader:
        batches = list(reader.iter_batches())
        assert len(batches) >= 4
        _same(pa.Table.from_batches(batches), table)


@pytest.mark.parametrize(("offset", "length"), [(2, 5), (0, 0)], ids=["sliced", "empty"])
@pytest.mark.parametrize("name", CASES)
def test_sliced_and_empty_input(tmp_path: Path, name: str, offset: int, length: int) -> None:
    table = _table(name).slice(offset, length)
    path = str(tmp_path / "t.fermion")
    fermion.write_table(table, path)
    _same(fermion.read_table(path), table)


@pytest.mark.parametrize("name", CASES)
def test_take(tmp_path: Path, name: str) -> None:
    table = _table(name)
    path = str(tmp_path / "t.fermion")
    fermion.write_table(table, path, max_stripe_rows=4)
    rows = [8, 0, 3, 4, 4, 1]
    with fermion.FileReader(path) as reader:
        got = _valid(reader.take(rows))
    assert got.schema == table.schema and got.to_pylist() == _rows(table, rows)


@pytest.mark.parametrize("name", CASES)
def test_filter_on_another_column(tmp_path: Path, name: str) -> None:
    table = _table(name)
    path = str(tmp_path / "t.fermion")
    fermion.write_table(table, path, max_stripe_rows=4)
    got = _valid(fermion.read_table(path, filter=pc.field("k").isin([1, 4, 7])))
    assert got.schema == table.schema and got.to_pylist() == _rows(table, [1, 4, 7])
    got = _valid(fermion.read_table(path, filter=pc.field("k") >= 6))
    assert got.to_pylist() == _rows(table, [6, 7, 8])


def test_filter_on_run_end_encoded_values(tmp_path: Path) -> None:
    table = _table("ree_int16")
    path = str(tmp_path / "t.fermion")
    fermion.write_table(table, path, max_stripe_rows=4)
    got = _valid(fermion.read_table(path, filter=pc.field("ree_int16") == "zz"))
    assert got.to_pylist() == _rows(table, [5, 6, 7, 8])
    assert fermion.read_table(path, filter=pc.field("ree_int16").is_null()).num_rows == 3


def test_a_union_is_projected_whole(tmp_path: Path) -> None:
    table = _table("union_in_struct")
    path = str(tmp_path / "t.fermion")
    fermion.write_table(table, path)
    got = _valid(fermion.read_table(path, columns=["union_in_struct.u"]))
    union = table.schema.field("union_in_struct").type.field("u")
    assert got.column(0).type == pa.struct([union])
    expected = [None if r is None else {"u": r["u"]} for r in table.column(1).to_pylist()]
    assert got.column(0).to_pylist() == expected
    for inside in ("union_in_struct.u.type_ids", "union_in_struct.u.i"):
        with pytest.raises(ColumnNotFoundError, match="is not in the file"):
            fermion.read_table(path, columns=[inside])


@pytest.mark.parametrize("name", CASES)
def test_table_layer_write_append_read(tmp_path: Path, name: str) -> None:
    table = _table(name)
    uri = str(tmp_path / "tbl")
    fermion.write_dataset(table.slice(0, 5), uri)
    ds = fermion.write_dataset(table.slice(5), uri, mode="append")
    assert ds.schema == table.schema
    got = _valid(ds.to_table())
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == table.to_pylist()
    got = _valid(fermion.dataset(uri).to_table(filter=pc.field("k") >= 7))
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == _rows(table, [7, 8])
    taken = _valid(fermion.dataset(uri).take([8, 2]))
    assert taken.to_pylist() == _rows(table, [8, 2])


@pytest.mark.parametrize("name", ["list_view", "large_list_view"])
def test_parquet_list_views_convert_both_ways(tmp_path: Path, name: str) -> None:
    pq.write_table(_table(name), tmp_path / "v.parquet")
    expected = pq.read_table(tmp_path / "v.parquet")  # what pyarrow reads: a list view
    assert pa.types.is_list_view(expected.schema.field(name).type) or pa.types.is_large_list_view(
        expected.schema.field(name).type
    )
    fermion.parquet_to_fermion(str(tmp_path / "v.parquet"), str(tmp_path / "v.fermion"))
    _same(fermion.read_table(str(tmp_path / "v.fermion")), expected)
    fermion.fermion_to_parquet(str(tmp_path / "v.fermion"), str(tmp_path / "back.parquet"))
    assert pq.read_table(tmp_path / "back.parquet").equals(expected)


@pytest.mark.parametrize("name", ["dense_union", "ree_int32", "ree_in_struct"])
def test_fermion_to_parquet_of_a_type_parquet_cannot_hold(tmp_path: Path, name: str) -> None:
    path = str(tmp_path / "t.fermion")
    fermion.write_table(_table(name), path)
    with pytest.raises(UnsupportedTypeError, match="Parquet cannot store") as info:
        fermion.fermion_to_parquet(path, str(tmp_path / "t.parquet"))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "t.parquet").exists()


def test_the_file_schema_holds_the_real_type(tmp_path: Path) -> None:
    """The marker is the type in the schema area: the footer alone rebuilds the column."""
    table = _table("dense_union")
    path = str(tmp_path / "t.fermion")
    fermion.write_table(table, path)
    with fermion.FileReader(path) as reader:
        field = reader.schema.field("dense_union")
    assert field.type.mode == "dense" and field.type.type_codes == [5, 2]
    assert field.type.field(1) == pa.field("txt", pa.string(), nullable=False)


def test_int16_run_ends_over_their_limit_are_refused_naming_the_column(tmp_path: Path) -> None:
    ree = _ree(pa.int16(), pa.array([1, 2]), [30000, 30001])
    table = pa.table({"r": pa.chunked_array([ree, ree])})  # 60002 rows, valid in Arrow
    with pytest.raises(UnsupportedTypeError, match="column 'r': .*int16") as info:
        fermion.write_table(table, str(tmp_path / "r.fermion"))
    assert "\n" not in str(info.value)
    path = str(tmp_path / "ok.fermion")  # stripes small enough for int16 run ends
    fermion.write_table(table, path, max_stripe_rows=30000)
    got = _valid(fermion.read_table(path))
    assert got.schema == table.schema and got.equals(table)


def test_a_dense_union_member_with_run_ends_is_refused(tmp_path: Path) -> None:
    union = pa.UnionArray.from_dense(
        pa.array([0, 1], pa.int8()),
        pa.array([0, 0], pa.int32()),
        [_ree(pa.int32(), pa.array([1]), [1]), pa.array(["a"])],
    )
    with pytest.raises(UnsupportedTypeError, match="column 'u': .*dense union member") as info:
        fermion.write_table(pa.table({"u": union}), str(tmp_path / "u.fermion"))
    assert "\n" not in str(info.value)


def test_an_unregistered_extension_type_from_parquet_is_kept_as_it_comes(tmp_path: Path) -> None:
    class _Tagged(pa.ExtensionType):
        def __init__(self) -> None:
            super().__init__(pa.int32(), "test.unregistered")

        def __arrow_ext_serialize__(self) -> bytes:
            return b"params"

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, s: bytes) -> _Tagged:
            return cls()

    pa.register_extension_type(_Tagged())
    try:
        arr = pa.ExtensionArray.from_storage(_Tagged(), pa.array([1, None, 3], pa.int32()))
        pq.write_table(pa.table({"e": arr}), tmp_path / "e.parquet")
    finally:
        pa.unregister_extension_type("test.unregistered")
    expected = pq.read_table(tmp_path / "e.parquet")  # storage type plus the metadata
    field = expected.schema.field("e")
    assert field.type == pa.int32()
    assert field.metadata[b"ARROW:extension:name"] == b"test.unregistered"
    assert field.metadata[b"ARROW:extension:metadata"] == b"params"
    fermion.parquet_to_fermion(str(tmp_path / "e.parquet"), str(tmp_path / "e.fermion"))
    got = _valid(fermion.read_table(str(tmp_path / "e.fermion")))
    assert got.schema == expected.schema and got.equals(expected)
    assert got.schema.field("e").metadata == field.metadata
    fermion.fermion_to_parquet(str(tmp_path / "e.fermion"), str(tmp_path / "back.parquet"))
    pa.register_extension_type(_Tagged())  # registered again, the round trip is whole
    try:
        back = pq.read_table(tmp_path / "back.parquet")
        assert isinstance(back.schema.field("e").type, _Tagged)
        assert back.column("e").chunk(0).storage.to_pylist() == [1, None, 3]
    finally:
        pa.unregister_extension_type("test.unregistered")


_SETTINGS = settings(
    max_examples=examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(
    ids=st.lists(st.sampled_from([3, 9, 4]), max_size=40),
    dense=st.booleans(),
    start=st.integers(0, 5),
    data=st.data(),
)
def test_unions_round_trip(tmp_path: Path, ids: list[int], dense: bool, start: int, data) -> None:
    fields = [pa.field("a", pa.int64()), pa.field("b", pa.string()), pa.field("c", pa.bool_())]
    makers = [
        st.one_of(st.none(), st.integers(-(2**62), 2**62)),
        st.one_of(st.none(), st.text(max_size=5)),
        st.one_of(st.none(), st.booleans()),
    ]
    codes = [3, 9, 4]
    n = len(ids)
    if dense:
        per = [[data.draw(makers[k]) for _ in range(ids.count(c))] for k, c in enumerate(codes)]
        offsets = np.zeros(n, np.int32)
        for c in codes:
            rows = [i for i, x in enumerate(ids) if x == c]
            offsets[rows] = np.arange(len(rows))
        children = [pa.array(v, f.type) for v, f in zip(per, fields, strict=True)]
        t = pa.dense_union(fields, codes)
        buffers = [None, pa.array(ids, pa.int8()).buffers()[1], pa.py_buffer(offsets.tobytes())]
    else:
        children = [
            pa.array([data.draw(m) for _ in range(n)], f.type)
            for m, f in zip(makers, fields, strict=True)
        ]
        t = pa.sparse_union(fields, codes)
        buffers = [None, pa.array(ids, pa.int8()).buffers()[1]]
    union = pa.Array.from_buffers(t, n, buffers, children=children)
    table = pa.table({"u": union}).slice(min(start, n))
    path = str(tmp_path / "h.fermion")
    fermion.write_table(table, path, max_stripe_rows=7)
    _same(fermion.read_table(path), table)


@_SETTINGS
@given(
    runs=st.lists(
        st.tuples(st.integers(1, 5), st.one_of(st.none(), st.integers(-5, 5))), max_size=20
    ),
    start=st.integers(0, 4),
    stripe=st.integers(1, 12),
)
def test_run_end_encoded_round_trip(
    tmp_path: Path, runs: list[tuple[int, int | None]], start: int, stripe: int
) -> None:
    ends = np.cumsum([r for r, _ in runs]).tolist()
    ree = _ree(pa.int32(), pa.array([v for _, v in runs], pa.int64()), ends)
    table = pa.table({"r": ree}).slice(min(start, len(ree)))
    path = str(tmp_path / "h.fermion")
    fermion.write_table(table, path, max_stripe_rows=stripe)
    got = fermion.read_table(path)
    _same(got, table)


GOLDEN = Path(__file__).parent / "golden" / "encoded"


def test_golden_file_reads_exactly() -> None:
    """``golden/encoded/encoded_types.fermion`` (two stripes, every case) pins the mapping."""
    expected = pa.ipc.open_file(str(GOLDEN / "encoded_types.arrow")).read_all()
    assert expected.column_names == ["k", *CASES]
    with fermion.FileReader(GOLDEN / "encoded_types.fermion") as reader:
        assert reader.metadata.num_stripes == 2
        _same(reader.read(), expected)
        rows = [8, 0, 5]
        assert _valid(reader.take(rows)).to_pylist() == _rows(expected, rows)


def test_fermion_convert_cli_both_ways_for_list_views(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fermion.cli import main

    table = pa.table({"lv": _cases()["list_view"], "llv": _cases()["large_list_view"]})
    pq.write_table(table, tmp_path / "in.parquet")
    expected = pq.read_table(tmp_path / "in.parquet")
    assert main(["convert", str(tmp_path / "in.parquet"), str(tmp_path / "x.fermion")]) == 0
    _same(fermion.read_table(str(tmp_path / "x.fermion")), expected)
    assert main(["convert", str(tmp_path / "x.fermion"), str(tmp_path / "back.parquet")]) == 0
    assert pq.read_table(tmp_path / "back.parquet").equals(expected)
    union = pa.table({"u": _cases()["dense_union"]})
    fermion.write_table(union, str(tmp_path / "u.fermion"))
    assert main(["convert", str(tmp_path / "u.fermion"), str(tmp_path / "u.parquet")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Parquet cannot store" in err


@pytest.mark.parametrize(
    "bad",
    [
        pa.array([5, 2, 1], pa.int8()),  # 1 is not a type code
        pa.array([5, 2], pa.int8()),  # fewer type ids than rows
    ],
)
def test_stored_union_values_that_cannot_form_the_union_are_invalid_file_errors(
    bad: pa.Array,
) -> None:
    from fermion.errors import InvalidFileError
    from fermion.format.encoding.encoded import from_storage

    t = _dense().type
    members = [pa.array([1, None, 3]), pa.array([None, "b", None])]
    fields = [pa.field("type_ids", pa.int8(), nullable=False)] + [
        t.field(i).with_nullable(True) for i in range(2)
    ]
    if len(bad) == 3:
        storage = pa.StructArray.from_arrays([bad, *members], fields=fields)
    else:  # a struct whose children disagree in length is refused by Arrow itself
        storage = pa.StructArray.from_arrays([pa.array([5, 2, 5], pa.int8())], ["type_ids"])
    with pytest.raises(InvalidFileError, match="do not match"):
        from_storage(t, storage)


@pytest.mark.parametrize(
    ("column", "type_name"),
    [
        (pa.DictionaryArray.from_arrays(pa.array([0, 0]), pa.array([{"a": 1}])), "struct"),
        (pa.DictionaryArray.from_arrays(pa.array([0]), pa.array([[1]])), "list"),
        (pa.DictionaryArray.from_arrays(pa.array([0, None]), pa.nulls(1)), "null"),
    ],
)
def test_types_still_refused_name_column_and_type(
    tmp_path: Path, column: pa.Array, type_name: str
) -> None:
    with pytest.raises(UnsupportedTypeError) as info:
        fermion.write_table(pa.table({"c": column}), str(tmp_path / "c.fermion"))
    message = str(info.value)
    assert "'c'" in message and type_name in message and "\n" not in message
    assert not (tmp_path / "c.fermion").exists()


def _c_imported_type(format_string: bytes) -> pa.DataType:
    """A type pyarrow offers no constructor for, imported through the Arrow C data
    interface (pyarrow 26 has no array class for day_time or month intervals either)."""
    from pyarrow.cffi import ffi

    schema = ffi.new("struct ArrowSchema*")
    fmt, name = ffi.new("char[]", format_string), ffi.new("char[]", b"")
    schema.format, schema.name, schema.metadata = fmt, name, ffi.NULL
    schema.flags, schema.n_children = 2, 0
    schema.children, schema.dictionary = ffi.NULL, ffi.NULL

    @ffi.callback("void(struct ArrowSchema*)")
    def release(p: object) -> None:
        p.release = ffi.NULL  # type: ignore[attr-defined]

    schema.release = release
    return pa.DataType._import_from_c(int(ffi.cast("uintptr_t", schema)))


@pytest.mark.parametrize(
    ("fmt", "name"), [(b"tiD", "day_time_interval"), (b"tiM", "month_interval")]
)
def test_day_time_and_month_intervals_are_refused_naming_column_and_type(
    tmp_path: Path, fmt: bytes, name: str
) -> None:
    t = _c_imported_type(fmt)
    assert str(t) == name
    with pytest.raises(KeyError):  # no array of the type can be built in Python
        pa.Array.from_buffers(t, 1, [None, pa.py_buffer(bytes(8))])
    schema = pa.schema([("k", pa.int64()), ("iv", t)])
    with pytest.raises(UnsupportedTypeError) as info:
        fermion.FileWriter(str(tmp_path / "iv.fermion"), schema)
    message = str(info.value)
    assert message.startswith("column 'iv': ") and name in message and "\n" not in message


@pytest.mark.parametrize("name", CASES)
def test_table_delete_and_compaction(tmp_path: Path, name: str) -> None:
    table = _table(name)
    uri = str(tmp_path / "tbl")
    fermion.write_dataset(table.slice(0, 4), uri)
    ds = fermion.write_dataset(table.slice(4), uri, mode="append")
    ds.delete(pc.field("k").isin([1, 5, 6]))
    kept = [0, 2, 3, 4, 7, 8]
    got = _valid(ds.to_table())
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == _rows(table, kept)
    ds.compact_files(materialize_deletions_threshold=0.0)
    assert len(ds.fragments) == 1
    got = _valid(fermion.dataset(uri).to_table())
    assert got.schema == table.schema
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == _rows(table, kept)


@pytest.mark.parametrize("name", CASES)
def test_batch_mode_file(tmp_path: Path, name: str) -> None:
    table = _table(name)
    path = str(tmp_path / "b.fermion")
    with fermion.FileWriter(path, table.schema, max_stripe_rows=4) as writer:
        for batch_id, (a, b) in enumerate([(0, 3), (3, 4), (4, 9)]):
            writer.append_batch(10 + batch_id, table.slice(a, b - a))
    with fermion.FileReader(path) as reader:
        got = _valid(reader.read_batches([12, 10], columns=["k", name]))
    assert got.select(["k", name]).to_pylist() == _rows(table, [4, 5, 6, 7, 8, 0, 1, 2])


@pytest.mark.parametrize(
    "values",
    [
        pa.array(["a", "a", None, "b"]).dictionary_encode(),
        pa.array(["a", "a", None, "a longer value than twelve"], pa.string_view()),
        pa.array([b"a", None, b"b", b"b"], pa.binary_view()),
        pa.ExtensionArray.from_storage(
            pa.uuid(), pa.array([b"0" * 16, b"0" * 16, None, b"1" * 16], pa.binary(16))
        ),
    ],
    ids=["dictionary", "string_view", "binary_view", "uuid"],
)
def test_run_end_encoded_values_without_arrow_kernels(tmp_path: Path, values: pa.Array) -> None:
    """Arrow has no run_end_encode/decode kernel for these value types: they are decoded
    by run index and, read back, get one run per row (same values, same type)."""
    ree = _ree(pa.int16(), values, [2, 3, 5, 9])
    table = pa.table({"k": pa.array(range(9)), "r": ree}).slice(1)
    path = str(tmp_path / "r.fermion")
    fermion.write_table(table, path, max_stripe_rows=3)
    got = _valid(fermion.read_table(path))
    assert got.schema == table.schema and got.to_pylist() == table.to_pylist()
    with fermion.FileReader(path) as reader:
        assert _valid(reader.take([7, 0])).to_pylist() == _rows(table, [7, 0])


def _view_members() -> dict[str, pa.Array]:
    sv = pa.array(["a", None, "a longer value than twelve"], pa.string_view())
    uu = pa.ExtensionArray.from_storage(
        pa.uuid(), pa.array([b"0" * 16, None, b"1" * 16], pa.binary(16))
    )
    dic = pa.array(["x", None, "y"]).dictionary_encode()
    return {
        "dense": pa.UnionArray.from_dense(
            pa.array([0, 1, 0, 2, 1, 2], pa.int8()),
            pa.array([0, 0, 2, 0, 1, 2], pa.int32()),
            [sv, uu, dic],
        ),
        "sparse": pa.UnionArray.from_sparse(
            pa.array([0, 1, 2, 2, 0, 1], pa.int8()),
            [pa.concat_arrays([sv, sv]), pa.concat_arrays([uu, uu]), pa.concat_arrays([dic, dic])],
        ),
        "list_view": pa.ListViewArray.from_arrays(
            pa.array([1, 0, 2, 0, 1, 0], pa.int32()), pa.array([2, 1, 1, 3, 0, 2], pa.int32()), sv
        ),
    }


@pytest.mark.parametrize("name", list(_view_members()))
def test_members_arrow_cannot_take_or_filter(tmp_path: Path, name: str) -> None:
    """Unions and list views of views, dictionaries and extension types: Arrow has no take
    or filter kernel for some of them, the reader slices rows out instead."""
    table = pa.table({"k": pa.array(range(6)), name: _view_members()[name]})
    path = str(tmp_path / "v.fermion")
    fermion.write_table(table, path, max_stripe_rows=4)
    _same(fermion.read_table(path), table)
    with fermion.FileReader(path) as reader:
        assert _valid(reader.take([5, 1, 2])).to_pylist() == _rows(table, [5, 1, 2])
    got = _valid(fermion.read_table(path, filter=pc.field("k").isin([0, 3, 5])))
    assert got.to_pylist() == _rows(table, [0, 3, 5])
    uri = str(tmp_path / "tbl")
    ds = fermion.write_dataset(table, uri)
    ds.delete(pc.field("k") == 2)
    assert sorted(_valid(ds.to_table()).to_pylist(), key=lambda r: r["k"]) == _rows(
        table, [0, 1, 3, 4, 5]
    )
    assert _valid(ds.take([4, 0])).to_pylist() == _rows(table, [5, 0])


def test_a_filter_on_a_union_column_is_a_typed_error(tmp_path: Path) -> None:
    table = _table("ree_in_struct").append_column("u", _cases()["sparse_union"])
    path = str(tmp_path / "u.fermion")
    fermion.write_table(table, path)
    with pytest.raises(UnsupportedTypeError, match="filter .*cannot be evaluated") as info:
        fermion.read_table(path, filter=pc.field("u") == 3)
    assert "\n" not in str(info.value)
