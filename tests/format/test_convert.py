"""Parquet <-> Fermion conversion: exact round trips of Parquet as other writers produce it,
bounded-memory streaming, and typed errors on bad input.

The "foreign writer" fixtures are generated with pyarrow, configured to produce what those
writers put on disk (the Parquet schema printed by ``pq.ParquetFile(...).schema`` shows it):

- Spark: ``flavor="spark"`` (INT96 timestamps, sanitised names), no Arrow schema stored,
  snappy, legacy 3-level lists (``use_compliant_nested_type=False``, element ``item``).
- Impala: INT96 timestamps, strings as un-annotated BYTE_ARRAY (Arrow ``binary``),
  FIXED_LEN_BYTE_ARRAY decimals, gzip, no Arrow schema.
- parquet-cpp (modern pyarrow): format 2.6, data page v2, dictionary columns, DELTA and
  BYTE_STREAM_SPLIT encodings, page index and page checksums, decimal256, zstd.
- parquet-rs style: data page v2, INT32/INT64 decimals (``store_decimal_as_integer``),
  LZ4_RAW, tiny pages, no Arrow schema.

Not covered, because pyarrow cannot write it: true 2-level legacy lists (a ``repeated``
primitive without the middle group). pyarrow reads those files; the converter only sees the
Arrow table pyarrow returns, so nothing in the converter depends on the list layout.

Bad inputs tried (each must raise a typed ``FermionError`` and leave no destination):
junk bytes, an empty file, Parquet truncated by half and by 3 bytes, Parquet with corrupt
page data, Parquet with a corrupt footer, a missing source, a directory as source, a missing
destination folder, a directory as destination, source == destination, a non-positive
batch size, unknown writer options, a Parquet file given to ``fermion_to_parquet``, a
truncated Fermion file, a missing Fermion file.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion.format as fmt
import fermion.format.convert.parquet
from fermion.errors import (
    FermionError,
    InvalidArgumentError,
    InvalidFileError,
    TruncatedFileError,
)
from fermion.format.convert import ConversionSummary, fermion_to_parquet, parquet_to_fermion

N = 257  # rows per fixture: not a multiple of any row group or page size used below


# --------------------------------------------------------------------------------------
# data


def _rng() -> np.random.Generator:
    return np.random.default_rng(20261122)


def _mask(n: int, rate: float = 0.2) -> np.ndarray:
    return _rng().random(n) < rate


def _ints(n: int) -> pa.Array:
    return pa.array(_rng().integers(-(10**12), 10**12, n), pa.int64(), mask=_mask(n))


def _timestamps(n: int, unit: str, tz: str | None = None) -> pa.Array:
    base = np.datetime64("2021-03-04T05:06:07.123456", "us").astype(np.int64)
    values = base + _rng().integers(0, 10**12, n)
    if unit == "ns":
        values = values * 1000
    return pa.array(values, pa.timestamp(unit, tz=tz), mask=_mask(n))


def _strings(n: int, cardinality: int = 7) -> pa.Array:
    words = np.array([f"city-{i}-é" for i in range(cardinality)], dtype=object)
    return pa.array(words[_rng().integers(0, cardinality, n)], pa.string(), mask=_mask(n))


def _decimals(n: int, precision: int, scale: int) -> pa.Array:
    limit = 10 ** min(precision - 1, 17)
    values = [decimal.Decimal(int(v)).scaleb(-scale) for v in _rng().integers(-limit, limit, n)]
    type_ = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    return pa.array(values, type_, mask=_mask(n))


def _int_lists(n: int) -> pa.Array:
    rng = _rng()
    rows: list[Any] = []
    for i in range(n):
        if i % 11 == 0:
            rows.append(None)
        else:
            rows.append([None if j % 5 == 3 else int(j * i) for j in range(rng.integers(0, 4))])
    return pa.array(rows, pa.list_(pa.int32()))


def _nested_lists(n: int) -> pa.Array:
    rows: list[Any] = []
    for i in range(n):
        if i % 13 == 0:
            rows.append(None)
        else:
            rows.append([None if j == 1 else [i, None, j] for j in range(i % 4)])
    return pa.array(rows, pa.list_(pa.list_(pa.int64())))


def _maps(n: int) -> pa.Array:
    rows: list[Any] = [
        None if i % 9 == 0 else [(f"k{j}", None if j == 2 else i + j) for j in range(i % 4)]
        for i in range(n)
    ]
    return pa.array(rows, pa.map_(pa.string(), pa.int32()))


def _structs(n: int) -> pa.Array:
    rows: list[Any] = [
        None if i % 7 == 0 else {"a": None if i % 3 == 0 else i, "b": f"s{i}"} for i in range(n)
    ]
    return pa.array(rows, pa.struct([("a", pa.int32()), ("b", pa.string())]))


def _list_of_structs(n: int) -> pa.Array:
    rows: list[Any] = [
        None if i % 10 == 0 else [{"a": j, "b": None if j else "x"} for j in range(i % 3)]
        for i in range(n)
    ]
    return pa.array(rows, pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])))


def _dates(n: int) -> pa.Array:
    return pa.array(_rng().integers(-1000, 30000, n).astype(np.int32), pa.date32(), mask=_mask(n))


# --------------------------------------------------------------------------------------
# the foreign-writer fixtures: (table, pq.write_table options, pq read options)

Fixture = tuple[pa.Table, dict[str, Any], dict[str, Any]]


def spark_like(n: int = N) -> Fixture:
    table = pa.table(
        {
            "id": _ints(n),
            "event time": _timestamps(n, "us"),  # the space is sanitised by flavor="spark"
            "day": _dates(n),
            "price": _decimals(n, 10, 2),
            "big": _decimals(n, 38, 9),
            "city": _strings(n),
            "tags": _int_lists(n),
            "attrs": _maps(n),
            "info": _structs(n),
        }
    )
    write = {
        "flavor": "spark",
        "store_schema": False,
        "compression": "snappy",
        "use_compliant_nested_type": False,
        "row_group_size": 100,
    }
    return table, write, {"coerce_int96_timestamp_unit": "us"}


def impala_like(n: int = N) -> Fixture:
    table = pa.table(
        {
            "id": _ints(n),
            "ts": _timestamps(n, "ns"),
            "name": _strings(n).cast(pa.binary()),  # Impala: BYTE_ARRAY without UTF8
            "amount": _decimals(n, 18, 4),
            "flag": pa.array([None if i % 6 == 0 else i % 2 == 0 for i in range(n)]),
        }
    )
    write = {
        "use_deprecated_int96_timestamps": True,
        "store_schema": False,
        "compression": "gzip",
        "version": "1.0",
        "row_group_size": 64,
    }
    return table, write, {}


def parquet_cpp_like(n: int = N) -> Fixture:
    table = pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "u8": pa.array(np.arange(n) % 256, pa.uint8()),
            "u64": pa.array(np.arange(n, dtype=np.uint64) * 2**40, pa.uint64()),
            "f32": pa.array(_rng().random(n).astype(np.float32), mask=_mask(n)),
            "f64": pa.array(_rng().standard_normal(n)),
            "ts_tz": _timestamps(n, "ns", tz="Europe/Paris"),
            "city": _strings(n).dictionary_encode(),
            "label": _strings(n, cardinality=3),
            "d256": _decimals(n, 50, 10),
            "nested": _nested_lists(n),
            "items": _list_of_structs(n),
            "attrs": _maps(n),
            "nothing": pa.nulls(n, pa.int64()),
        }
    )
    write = {
        "version": "2.6",
        "data_page_version": "2.0",
        "compression": "zstd",
        "use_dictionary": ["city", "label"],
        "column_encoding": {"id": "DELTA_BINARY_PACKED", "f64": "BYTE_STREAM_SPLIT"},
        "write_page_index": True,
        "write_page_checksum": True,
        "row_group_size": 120,
    }
    return table, write, {}


def parquet_rs_like(n: int = N) -> Fixture:
    table = pa.table(
        {
            "id": _ints(n),
            "small_dec": _decimals(n, 9, 3),  # INT32 on disk
            "mid_dec": _decimals(n, 18, 6),  # INT64 on disk
            "ts": _timestamps(n, "us", tz="UTC"),
            "name": _strings(n),
            "tags": _int_lists(n),
        }
    )
    write = {
        "store_schema": False,
        "store_decimal_as_integer": True,
        "data_page_version": "2.0",
        "compression": "lz4",
        "max_rows_per_page": 16,
        "write_page_index": True,
    }
    return table, write, {}


def legacy_lists(n: int = N) -> Fixture:
    table = pa.table(
        {"ints": _int_lists(n), "nested": _nested_lists(n), "items": _list_of_structs(n)}
    )
    write = {"use_compliant_nested_type": False, "store_schema": False, "row_group_size": 50}
    return table, write, {}


def foreign_dictionary(n: int = N) -> Fixture:
    table = pa.table({"city": _strings(n), "id": _ints(n)})
    return table, {"store_schema": False}, {"read_dictionary": ["city"]}


def empty_table(n: int = N) -> Fixture:
    table = pa.table({"id": pa.array([], pa.int64()), "tags": _int_lists(0)})
    return table, {}, {}


FIXTURES: dict[str, Callable[[], Fixture]] = {
    "spark": spark_like,
    "impala": impala_like,
    "parquet-cpp": parquet_cpp_like,
    "parquet-rs": parquet_rs_like,
    "legacy-lists": legacy_lists,
    "foreign-dictionary": foreign_dictionary,
    "empty": empty_table,
}


def _write_fixture(tmp_path: Path, name: str) -> tuple[Path, pa.Table, dict[str, Any]]:
    table, write, read = FIXTURES[name]()
    path = tmp_path / f"{name}.parquet"
    pq.write_table(table, path, **write)
    return path, table, read


# --------------------------------------------------------------------------------------
# the fixtures are what they claim to be


def test_fixtures_have_the_foreign_physical_layouts(tmp_path: Path) -> None:
    spark, _, _ = _write_fixture(tmp_path, "spark")
    schema = pq.ParquetFile(spark).schema
    assert schema.column(1).physical_type == "INT96"
    assert schema.column(1).name == "event_time"
    assert b"ARROW:schema" not in (pq.ParquetFile(spark).metadata.metadata or {})
    assert "item" in str(schema)  # legacy 3-level list element name

    impala, _, _ = _write_fixture(tmp_path, "impala")
    schema = pq.ParquetFile(impala).schema
    assert schema.column(1).physical_type == "INT96"
    assert schema.column(2).logical_type.type == "NONE"  # un-annotated BYTE_ARRAY

    rs, _, _ = _write_fixture(tmp_path, "parquet-rs")
    schema = pq.ParquetFile(rs).schema
    assert schema.column(1).physical_type == "INT32"
    assert schema.column(2).physical_type == "INT64"

    cpp, _, _ = _write_fixture(tmp_path, "parquet-cpp")
    meta = pq.ParquetFile(cpp).metadata
    encodings = {
        enc
        for rg in range(meta.num_row_groups)
        for col in range(meta.num_columns)
        for enc in meta.row_group(rg).column(col).encodings
    }
    assert {"DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", "RLE_DICTIONARY"} <= encodings


def test_int96_fixture_reads_back_the_original_instants(tmp_path: Path) -> None:
    path, table, read = _write_fixture(tmp_path, "spark")
    got = pq.read_table(path, **read)
    assert got.column("event_time").equals(table.column("event time"))


# --------------------------------------------------------------------------------------
# round trips


def assert_same_schema(got: pa.Schema, expected: pa.Schema) -> None:
    """Names, types, nullability and all metadata equal.

    Types compare with ``==``, which ignores the name of a map's entries field: pyarrow's
    Parquet reader names it after the column (``map<string, int32 ('attrs')>``), Fermion
    stores the standard ``entries``.
    """
    assert got.metadata == expected.metadata
    assert got.names == expected.names
    for g, e in zip(got, expected, strict=True):
        assert g.type == e.type, (g, e)
        assert g.nullable == e.nullable, (g, e)
        assert g.metadata == e.metadata, (g, e)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_parquet_to_fermion_to_parquet_is_exact(tmp_path: Path, name: str) -> None:
    src, _, read = _write_fixture(tmp_path, name)
    expected = pq.read_table(src, **read)

    summary = parquet_to_fermion(src, tmp_path / "x.fermion", **read)
    assert isinstance(summary, ConversionSummary)
    assert (summary.num_rows, summary.num_columns) == (expected.num_rows, expected.num_columns)
    assert summary.source_units == pq.ParquetFile(src).num_row_groups
    assert summary.dst_bytes == os.path.getsize(tmp_path / "x.fermion")

    as_fermion = fmt.read_table(str(tmp_path / "x.fermion"))
    assert_same_schema(as_fermion.schema, expected.schema)
    assert as_fermion.equals(expected), name

    back = fermion_to_parquet(tmp_path / "x.fermion", tmp_path / "back.parquet")
    assert back.num_rows == expected.num_rows
    again = pq.read_table(tmp_path / "back.parquet")
    assert again.equals(expected), name


def test_dictionary_columns_stay_dictionaries(tmp_path: Path) -> None:
    src, _, read = _write_fixture(tmp_path, "foreign-dictionary")
    parquet_to_fermion(src, tmp_path / "x.fermion", **read)
    schema = fmt.FileReader(str(tmp_path / "x.fermion")).schema
    assert pa.types.is_dictionary(schema.field("city").type)

    src, _, _ = _write_fixture(tmp_path, "parquet-cpp")  # Arrow schema stored in the file
    parquet_to_fermion(src, tmp_path / "y.fermion")
    schema = fmt.FileReader(str(tmp_path / "y.fermion")).schema
    assert pa.types.is_dictionary(schema.field("city").type)


def test_fsspec_urls_on_both_sides(tmp_path: Path) -> None:
    src, table, _ = _write_fixture(tmp_path, "legacy-lists")
    fs = fsspec.filesystem("memory")
    fs.pipe("/convert/in.parquet", src.read_bytes())
    try:
        parquet_to_fermion("memory:///convert/in.parquet", "memory:///convert/out.fermion")
        assert fmt.read_table("memory:///convert/out.fermion").equals(pq.read_table(src))
        fermion_to_parquet("memory:///convert/out.fermion", "memory:///convert/back.parquet")
        with fs.open("/convert/back.parquet", "rb") as f:
            assert pq.read_table(f).equals(pq.read_table(src))
    finally:
        fs.rm("/convert", recursive=True)


def test_replaces_an_existing_destination(tmp_path: Path) -> None:
    src, _, _ = _write_fixture(tmp_path, "legacy-lists")
    dst = tmp_path / "x.fermion"
    dst.write_bytes(b"old contents")
    parquet_to_fermion(src, dst)
    assert fmt.read_table(str(dst)).equals(pq.read_table(src))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["legacy-lists.parquet", "x.fermion"]


# --------------------------------------------------------------------------------------
# streaming: the converter never holds more than one row group / one stripe


def test_parquet_side_streams_row_group_by_row_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = pa.table({"x": np.arange(10_000, dtype=np.int64), "y": np.ones(10_000)})
    src = tmp_path / "in.parquet"
    pq.write_table(table, src, row_group_size=1_000)
    seen: list[int] = []

    class SpyWriter(fmt.FileWriter):
        def write(self, data: Any) -> None:
            seen.append(data.num_rows)
            super().write(data)

    monkeypatch.setattr(fermion.format.convert.parquet, "FileWriter", SpyWriter)
    summary = parquet_to_fermion(src, tmp_path / "x.fermion", batch_rows=400)
    assert max(seen) <= 400
    assert sum(seen) == 10_000
    assert len(seen) == summary.batches == 10 * 3  # 400 + 400 + 200 per row group
    assert fmt.read_table(str(tmp_path / "x.fermion")).equals(table)


def test_fermion_side_streams_stripe_by_stripe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = pa.table({"x": np.arange(10_000, dtype=np.int64)})
    src = tmp_path / "in.fermion"
    fmt.write_table(table, str(src), max_stripe_rows=2_500)

    def no_full_read(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("fermion_to_parquet must not read the whole file at once")

    monkeypatch.setattr(fmt.FileReader, "read", no_full_read)
    summary = fermion_to_parquet(src, tmp_path / "out.parquet")
    assert (summary.num_rows, summary.source_units, summary.batches) == (10_000, 4, 4)
    assert pq.ParquetFile(tmp_path / "out.parquet").num_row_groups == 4
    assert pq.read_table(tmp_path / "out.parquet").equals(table)


# --------------------------------------------------------------------------------------
# bad input: typed errors, nothing left behind


def _only(tmp_path: Path, *names: str) -> None:
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


@pytest.fixture()
def good_parquet(tmp_path: Path) -> bytes:
    table = pa.table({"x": np.arange(5_000, dtype=np.int64), "s": _strings(5_000)})
    path = tmp_path / "good.parquet"
    pq.write_table(table, path, row_group_size=1_000, compression="none")
    data = path.read_bytes()
    path.unlink()
    return data


def _corrupt_pages(data: bytes) -> bytes:
    out = bytearray(data)
    for i in range(4, 600):  # page headers and values of the first column chunk
        out[i] ^= 0x5A
    return bytes(out)


def _corrupt_footer(data: bytes) -> bytes:
    out = bytearray(data)
    footer_len = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer_len
    for i in range(start, start + min(footer_len, 40)):
        out[i] = 0xFF
    return bytes(out)


BAD_PARQUET: dict[str, tuple[Callable[[bytes], bytes], type[FermionError]]] = {
    "junk": (lambda d: b"this is not parquet at all\n" * 20, InvalidFileError),
    "empty": (lambda d: b"", InvalidFileError),
    "truncated-half": (lambda d: d[: len(d) // 2], TruncatedFileError),
    "truncated-3-bytes": (lambda d: d[:-3], TruncatedFileError),
    "corrupt-pages": (_corrupt_pages, InvalidFileError),
    "corrupt-footer": (_corrupt_footer, InvalidFileError),
}


@pytest.mark.parametrize("case", sorted(BAD_PARQUET))
def test_bad_parquet_raises_typed_error_and_leaves_nothing(
    tmp_path: Path, good_parquet: bytes, case: str
) -> None:
    mutate, error = BAD_PARQUET[case]
    (tmp_path / "bad.parquet").write_bytes(mutate(good_parquet))
    with pytest.raises(error) as info:
        parquet_to_fermion(tmp_path / "bad.parquet", tmp_path / "out.fermion")
    assert "bad.parquet" in str(info.value)
    _only(tmp_path, "bad.parquet")


def test_failed_conversion_keeps_the_previous_destination(
    tmp_path: Path, good_parquet: bytes
) -> None:
    (tmp_path / "bad.parquet").write_bytes(_corrupt_pages(good_parquet))
    (tmp_path / "out.fermion").write_bytes(b"previous")
    with pytest.raises(InvalidFileError):
        parquet_to_fermion(tmp_path / "bad.parquet", tmp_path / "out.fermion")
    assert (tmp_path / "out.fermion").read_bytes() == b"previous"
    _only(tmp_path, "bad.parquet", "out.fermion")


def test_failed_fsspec_conversion_leaves_nothing(good_parquet: bytes) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/badconv/bad.parquet", _corrupt_pages(good_parquet))
    try:
        with pytest.raises(InvalidFileError):
            parquet_to_fermion("memory:///badconv/bad.parquet", "memory:///badconv/out.fermion")
        assert not fs.exists("/badconv/out.fermion")
    finally:
        fs.rm("/badconv", recursive=True)


def test_missing_and_misplaced_paths(tmp_path: Path, good_parquet: bytes) -> None:
    src = tmp_path / "good.parquet"
    src.write_bytes(good_parquet)
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        parquet_to_fermion(tmp_path / "missing.parquet", tmp_path / "out.fermion")
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        parquet_to_fermion("memory:///nowhere/missing.parquet", tmp_path / "out.fermion")
    with pytest.raises(InvalidArgumentError, match="directory"):
        parquet_to_fermion(tmp_path, tmp_path / "out.fermion")
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        parquet_to_fermion(src, tmp_path / "no" / "such" / "dir" / "out.fermion")
    (tmp_path / "adir.fermion").mkdir()
    with pytest.raises(InvalidArgumentError, match="directory"):
        parquet_to_fermion(src, tmp_path / "adir.fermion")
    with pytest.raises(InvalidArgumentError, match="same file"):
        parquet_to_fermion(src, src)
    with pytest.raises(InvalidArgumentError, match="batch_rows"):
        parquet_to_fermion(src, tmp_path / "out.fermion", batch_rows=0)
    _only(tmp_path, "good.parquet", "adir.fermion")


def test_unknown_options_are_typed_errors(tmp_path: Path, good_parquet: bytes) -> None:
    src = tmp_path / "good.parquet"
    src.write_bytes(good_parquet)
    with pytest.raises(InvalidArgumentError):
        parquet_to_fermion(src, tmp_path / "out.fermion", no_such_option=1)
    parquet_to_fermion(src, tmp_path / "out.fermion")
    with pytest.raises(InvalidArgumentError):
        fermion_to_parquet(tmp_path / "out.fermion", tmp_path / "out.parquet", no_such=1)
    _only(tmp_path, "good.parquet", "out.fermion")


def test_bad_fermion_sources(tmp_path: Path, good_parquet: bytes) -> None:
    (tmp_path / "really-parquet.fermion").write_bytes(good_parquet)
    with pytest.raises(InvalidFileError):
        fermion_to_parquet(tmp_path / "really-parquet.fermion", tmp_path / "out.parquet")

    fmt.write_table(pa.table({"x": np.arange(1000)}), str(tmp_path / "ok.fermion"))
    data = (tmp_path / "ok.fermion").read_bytes()
    (tmp_path / "cut.fermion").write_bytes(data[: len(data) - 5])
    with pytest.raises(InvalidFileError):  # TruncatedFileError or another InvalidFileError
        fermion_to_parquet(tmp_path / "cut.fermion", tmp_path / "out.parquet")

    with pytest.raises(InvalidArgumentError, match="does not exist"):
        fermion_to_parquet(tmp_path / "missing.fermion", tmp_path / "out.parquet")
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        fermion_to_parquet(tmp_path / "ok.fermion", tmp_path / "nodir" / "out.parquet")
    _only(tmp_path, "really-parquet.fermion", "ok.fermion", "cut.fermion")


def test_summary_is_jsonable() -> None:
    import json

    s = ConversionSummary("a", "b", "fermion->parquet", 3, 2, 1, 1, 100, 90, 0.01)
    assert json.loads(json.dumps(s.to_dict()))["num_rows"] == 3


def test_int96_dates_outside_the_nanosecond_range(tmp_path: Path) -> None:
    old = pa.table({"t": pa.array([dt.datetime(1500, 1, 1), dt.datetime(2999, 12, 31)])})
    src = tmp_path / "old.parquet"
    pq.write_table(old, src, use_deprecated_int96_timestamps=True, store_schema=False)
    parquet_to_fermion(src, tmp_path / "old.fermion", coerce_int96_timestamp_unit="us")
    assert fmt.read_table(str(tmp_path / "old.fermion")).equals(old)


def test_contract_names_are_exported() -> None:
    import fermion

    assert fermion.parquet_to_fermion is parquet_to_fermion
    assert fermion.fermion_to_parquet is fermion_to_parquet
    assert fermion.ConversionSummary is ConversionSummary
