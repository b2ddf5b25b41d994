"""Exact round trips: every type, nulls at every level, stripes and pages of many sizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion
from tests.format.conftest import all_types_table
from tests.support.budget import examples

_FLOAT_AS_INT = {pa.float16(): pa.int16(), pa.float32(): pa.int32(), pa.float64(): pa.int64()}


def _comparable(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Floats compared bit for bit, so NaN == NaN (values are stored as raw bytes)."""
    view = _FLOAT_AS_INT.get(col.type)
    return pa.chunked_array([c.view(view) for c in col.chunks], view) if view else col


def assert_same(actual: pa.Table, expected: pa.Table) -> None:
    assert actual.schema.equals(expected.schema, check_metadata=True), (
        f"{actual.schema}\n!=\n{expected.schema}"
    )
    assert actual.num_rows == expected.num_rows
    for name in expected.column_names:
        a, e = _comparable(actual.column(name)), _comparable(expected.column(name))
        assert a.equals(e), f"column {name} differs:\n{a}\n!=\n{e}"


def test_every_type_round_trips(all_types: pa.Table, write_read) -> None:
    assert_same(write_read(all_types), all_types)


@pytest.mark.parametrize("compression", ["zstd", "none"])
@pytest.mark.parametrize("page_size,stripe_rows", [(64, 7), (256, 50), (4096, 3), (1 << 20, 10**6)])
def test_many_stripes_and_pages(
    write_read, compression: str, page_size: int, stripe_rows: int
) -> None:
    table = all_types_table(n=300, seed=page_size)
    out = write_read(
        table, page_size=page_size, max_stripe_rows=stripe_rows, compression=compression
    )
    assert_same(out, table)


def test_empty_table(write_read, all_types: pa.Table) -> None:
    empty = all_types.slice(0, 0)
    assert_same(write_read(empty), empty)


def test_single_row(write_read, all_types: pa.Table) -> None:
    one = all_types.slice(17, 1)
    assert_same(write_read(one), one)


def test_sliced_input_arrays(write_read, all_types: pa.Table) -> None:
    """Slices that start mid-byte exercise bitmap shifting and offset rebasing."""
    part = all_types.slice(3, 41)
    assert_same(write_read(part, max_stripe_rows=5, page_size=64), part)


def test_chunked_input_with_different_dictionaries(write_read) -> None:
    a = pa.array(["x", "y", None]).dictionary_encode()
    b = pa.array(["z", "x"]).dictionary_encode()
    table = pa.table({"d": pa.chunked_array([a, b])})
    out = write_read(table)
    assert out.column("d").type == table.column("d").type
    assert out.column("d").to_pylist() == ["x", "y", None, "z", "x"]


def test_large_values_get_their_own_pages(write_read) -> None:
    big = "x" * 10_000
    table = pa.table({"s": [big, "a", big + "y", None, "b"]})
    assert_same(write_read(table, page_size=1024), table)


def test_writer_accepts_batches_and_readers(tmp_path: Path, all_types: pa.Table) -> None:
    path = tmp_path / "b.fermion"
    with fermion.FileWriter(path, all_types.schema, max_stripe_rows=16) as w:
        for batch in all_types.to_batches(max_chunksize=7):
            w.write(batch)
    assert_same(fermion.read_table(path), all_types)
    path2 = tmp_path / "r.fermion"
    fermion.write_table(
        pa.RecordBatchReader.from_batches(all_types.schema, all_types.to_batches()), path2
    )
    assert_same(fermion.read_table(path2), all_types)


def test_iter_batches_follows_stripes(tmp_path: Path) -> None:
    table = pa.table({"a": np.arange(1000)})
    path = tmp_path / "i.fermion"
    fermion.write_table(table, path, max_stripe_rows=300)
    r = fermion.FileReader(path)
    sizes = [b.num_rows for b in r.iter_batches()]
    assert sizes == [300, 300, 300, 100]
    assert [b.num_rows for b in r.iter_batches(batch_size=128)][:3] == [128, 128, 44]
    assert r.metadata.num_stripes == 4


def test_fsspec_memory_filesystem(all_types: pa.Table) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    fermion.write_table(all_types, (fs, "/t/a.fermion"))
    assert_same(fermion.read_table((fs, "/t/a.fermion")), all_types)
    assert_same(fermion.read_table("memory://t/a.fermion"), all_types)


def test_field_ids_are_stored(tmp_path: Path) -> None:
    schema = pa.schema(
        [("a", pa.int64()), ("s", pa.struct([("x", pa.int8()), ("y", pa.list_(pa.int8()))]))]
    )
    table = pa.table({"a": [1], "s": [{"x": 1, "y": [2]}]}, schema=schema)
    path = tmp_path / "ids.fermion"
    ids = [10, 20, 21, 22, 23]
    fermion.write_table(table, path, field_ids=ids)
    assert fermion.FileReader(path).field_ids == ids
    with pytest.raises(fermion.SchemaMismatchError):
        fermion.write_table(table, tmp_path / "bad.fermion", field_ids=[1, 2])


# -- property-based round trips ---------------------------------------------------------

_leaf = st.sampled_from(
    [
        pa.int8(),
        pa.int64(),
        pa.uint32(),
        pa.float32(),
        pa.float64(),
        pa.bool_(),
        pa.string(),
        pa.binary(),
        pa.large_string(),
        pa.date32(),
        pa.timestamp("us", tz="UTC"),
        pa.decimal128(10, 3),
        pa.binary(3),
    ]
)


def _types():
    return st.recursive(
        _leaf,
        lambda inner: st.one_of(
            inner.map(pa.list_),
            inner.map(pa.large_list),
            inner.map(lambda t: pa.list_(t, 2)),
            st.lists(inner, min_size=1, max_size=3).map(
                lambda ts: pa.struct([(f"f{i}", t) for i, t in enumerate(ts)])
            ),
            inner.map(lambda t: pa.map_(pa.string(), t)),
        ),
        max_leaves=4,
    )


@st.composite
def tables(draw) -> pa.Table:
    import hypothesis.extra.numpy  # noqa: F401  (ensures the extra is importable)
    from pyarrow import types as pat

    n_cols = draw(st.integers(1, 4))
    n_rows = draw(st.integers(0, 60))
    cols = {}
    for i in range(n_cols):
        t = draw(_types())
        cols[f"c{i}"] = _random_array(t, n_rows, draw(st.integers(0, 2**32 - 1)), pat)
    return pa.table(cols)


def _random_array(t: pa.DataType, n: int, seed: int, pat) -> pa.Array:
    """Random values of type ``t`` with nulls at every level (pyarrow builds them)."""
    import datetime as dt
    import decimal

    rng = np.random.default_rng(seed)

    def value(t: pa.DataType):
        if rng.random() < 0.2:
            return None
        if pat.is_boolean(t):
            return bool(rng.integers(2))
        if pat.is_integer(t):
            info = np.iinfo(t.to_pandas_dtype())
            return int(
                rng.integers(info.min, info.max, dtype=np.int64 if info.min < 0 else np.uint64)
            )
        if pat.is_floating(t):
            return float(rng.normal() * 1e3)
        if pat.is_string(t) or pat.is_large_string(t):
            return "".join(rng.choice(list("abcé€z "), size=int(rng.integers(0, 12))))
        if pat.is_fixed_size_binary(t):
            return rng.bytes(t.byte_width)
        if pat.is_binary(t):
            return rng.bytes(int(rng.integers(0, 10)))
        if pat.is_date(t):
            return dt.date(2000, 1, 1) + dt.timedelta(days=int(rng.integers(0, 20000)))
        if pat.is_timestamp(t):
            return dt.datetime(2020, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
                seconds=int(rng.integers(0, 10**8))
            )
        if pat.is_decimal(t):
            return decimal.Decimal(int(rng.integers(-(10**9), 10**9))).scaleb(-t.scale)
        if pat.is_fixed_size_list(t):
            return [value(t.value_type) for _ in range(t.list_size)]
        if pat.is_map(t):
            return [(f"k{i}", value(t.item_type)) for i in range(int(rng.integers(0, 3)))]
        if pat.is_list(t) or pat.is_large_list(t):
            return [value(t.value_type) for _ in range(int(rng.integers(0, 4)))]
        if pat.is_struct(t):
            return {t.field(i).name: value(t.field(i).type) for i in range(t.num_fields)}
        raise AssertionError(t)

    return pa.array([value(t) for _ in range(n)], type=t)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    table=tables(),
    page_size=st.sampled_from([64, 200, 4096]),
    stripe_rows=st.integers(1, 70),
    encodings=st.booleans(),
)
def test_property_round_trip(
    tmp_path: Path, table: pa.Table, page_size: int, stripe_rows: int, encodings: bool
) -> None:
    """Also with plain pages only (``encodings=False``): OFFSETS runs then take the plain
    page path (offsets rebased to each page's first) instead of value lengths."""
    path = tmp_path / "p.fermion"
    fermion.write_table(
        table, path, page_size=page_size, max_stripe_rows=stripe_rows, encodings=encodings
    )
    assert_same(fermion.read_table(path), table)
    if table.num_rows:
        idx = np.random.default_rng(0).integers(0, table.num_rows, 10)
        assert fermion.FileReader(path).take(idx).equals(table.take(idx))


def test_dictionary_edge_cases(write_read) -> None:
    """Dictionaries whose values are all null, unused entries, and all-null indices."""
    all_null_values = pa.DictionaryArray.from_arrays(
        pa.array([0, 0, None], pa.int8()), pa.array([None], pa.string())
    )
    unused = pa.DictionaryArray.from_arrays(pa.array([1, 1], pa.int32()), pa.array(["a", "b", "c"]))
    null_indices = pa.DictionaryArray.from_arrays(
        pa.array([None, None], pa.int16()), pa.array(["x"])
    )
    for arr in (all_null_values, unused, null_indices):
        table = pa.table({"d": arr})
        assert_same(write_read(table), table)
    with pytest.raises(fermion.UnsupportedTypeError):
        write_read(pa.table({"d": pa.DictionaryArray.from_arrays(pa.array([0]), pa.nulls(1))}))


def test_view_types_nested_and_take(tmp_path: Path) -> None:
    table = pa.table(
        {
            "sv": pa.array(["a", None, "ccc" * 50], pa.string_view()),
            "st": pa.array([{"v": "x"}, None, {"v": None}], pa.struct([("v", pa.string_view())])),
            "lv": pa.array([[b"q"], [], None], pa.list_(pa.binary_view())),
        }
    )
    path = tmp_path / "v.fermion"
    fermion.write_table(table, path, page_size=64)
    assert_same(fermion.read_table(path), table)
    got = fermion.FileReader(path).take([2, 0, 2])
    assert got.to_pylist() == [table.slice(i, 1).to_pylist()[0] for i in (2, 0, 2)]
    assert got.schema == table.schema
