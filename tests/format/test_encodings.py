"""Encodings: kernel round trips, the writer's choices, overrides and corrupt encoded pages.

Bad inputs tried here: encoded payloads whose EncodingHeader lies (count, widths, number
of runs or dictionary entries, run lengths that do not add up, dictionary indices out of
range) behind a valid page CRC; each must raise a typed error.
"""

from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.format import encodings
from fermion.format.pages import PAGE_HEADER_SIZE, decode_page, encode_page
from fermion.format.structs import (
    ENCODING_HEADER_DTYPE,
    Compression,
    Encoding,
    RequiredFeature,
)
from tests.format.test_roundtrip import assert_same

# -- kernels ----------------------------------------------------------------------------

shapes = st.sampled_from(["constant", "runs", "sorted", "small", "wide", "few"])


def make_ints(shape: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if shape == "constant":
        return np.full(n, int(rng.integers(-(2**62), 2**62)), dtype=np.int64)
    if shape == "runs":
        return np.repeat(rng.integers(-1000, 1000, n // 10 + 1), 10)[:n].astype(np.int64)
    if shape == "sorted":
        return np.cumsum(rng.integers(0, 5, n)).astype(np.int64) + 10**12
    if shape == "small":
        return rng.integers(-100, 100, n).astype(np.int64)
    if shape == "few":
        return rng.choice(np.array([7, 300, 70_000, 999_999]), n).astype(np.int64)
    return rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)


@settings(max_examples=120, deadline=None)
@given(shape=shapes, n=st.integers(1, 3000), seed=st.integers(0, 10**6), compressed=st.booleans())
def test_integer_codec_round_trips(shape: str, n: int, seed: int, compressed: bool) -> None:
    values = make_ints(shape, n, seed)
    enc, payload = encodings.encode_ints(values, out_width=8, compressed=compressed)
    if enc == Encoding.PLAIN:
        assert payload == b""
        return
    assert len(payload) < n * 8
    assert (encodings.decode_ints(payload, enc) == values).all()


def test_integer_codec_picks_the_shape() -> None:
    n = 20_000
    assert encodings.encode_ints(make_ints("constant", n, 1), out_width=8)[0] == Encoding.CONSTANT
    assert encodings.encode_ints(make_ints("sorted", n, 1), out_width=8)[0] == Encoding.DELTA
    assert encodings.encode_ints(make_ints("runs", n, 1) * 10**6, out_width=8)[0] in (
        Encoding.RLE,
        Encoding.INT_DICTIONARY,
    )
    assert encodings.encode_ints(make_ints("small", n, 1), out_width=8)[0] == Encoding.FOR
    few = make_ints("few", n, 1)
    assert encodings.encode_ints(few, out_width=8, compressed=False)[0] == Encoding.INT_DICTIONARY
    assert encodings.encode_ints(make_ints("wide", n, 1), out_width=8)[0] == Encoding.PLAIN


def test_wide_values_through_int64() -> None:
    dec = pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.50")], pa.decimal128(10, 2))
    ints = encodings.ints_from_plain(dec.buffers()[1], 16, True)
    assert ints is not None and ints.tolist() == [125, -350]
    assert encodings.ints_to_plain(ints, 16, True).tobytes() == dec.buffers()[1].to_pybytes()
    huge = pa.array([decimal.Decimal(10) ** 30], pa.decimal128(38, 0))
    assert encodings.ints_from_plain(huge.buffers()[1], 16, True) is None


def test_string_dictionary_round_trip() -> None:
    values = pa.array(["a", None, "bb", "", "a"] * 100, pa.large_string())
    payload = encodings.encode_dictionary(values)
    assert payload is not None
    offsets, data = encodings.decode_dictionary(payload)
    rebuilt = pa.Array.from_buffers(
        pa.large_binary(), len(values), [None, pa.py_buffer(offsets), data]
    )
    expected = values.cast(pa.large_binary()).fill_null(b"a")  # null slots read as entry 0
    assert rebuilt.equals(expected)
    assert encodings.encode_dictionary(pa.array([str(i) for i in range(500)])) is None


def test_byte_split_round_trip() -> None:
    v = np.random.default_rng(3).random(5000).astype(np.float32)
    payload = encodings.encode_byte_split(v.tobytes(), 4)
    assert payload is not None
    assert encodings.decode_byte_split(payload) == v.tobytes()
    quantised = np.round(np.random.default_rng(3).random(5000) * 100, 1)
    assert encodings.encode_byte_split(quantised.tobytes(), 8) is None


# -- the writer's choices ---------------------------------------------------------------


def shapes_table(n: int = 40_000) -> pa.Table:
    rng = np.random.default_rng(5)
    with_nulls = pa.array(rng.integers(0, 50, n), pa.int32()).to_pylist()
    for i in range(0, n, 7):
        with_nulls[i] = None
    return pa.table(
        {
            "constant": pa.array(np.full(n, 42, dtype=np.int64)),
            "sorted": pa.array(np.arange(n, dtype=np.int64) * 3 + 10**10),
            "runs": pa.array(np.repeat(np.arange(n // 1000), 1000).astype(np.int64) * 10**7),
            "rle": pa.array(np.repeat(rng.integers(-(2**40), 2**40, n // 500), 500)),
            "few": pa.array(rng.choice(np.array([7, 300, 70_000, 999_999]), n)),
            "small_nulls": pa.array(with_nulls, pa.int32()),
            "price": pa.array(
                [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(100, 5000, n)],
                pa.decimal128(15, 2),
            ),
            "day": pa.array(rng.integers(8000, 10500, n).astype(np.int32), pa.date32()),
            "flag": pa.array(rng.choice(["A", "N", "R"], n)),
            "comment": pa.array([f"note {i} {'x' * (i % 17)}" for i in range(n)]),
            "feature": pa.array(rng.random(n).astype(np.float32)),
            "huge": pa.array(rng.integers(0, 2**64 - 1, n, dtype=np.uint64)),
            "lists": pa.array([[i % 3] * (i % 4) for i in range(n)], pa.list_(pa.int64())),
        }
    )


def encodings_of(path: Path) -> dict[tuple[str, str], set[str]]:
    d = fermion.FileReader(path).describe()
    out = {}
    for c in d["columns"]:
        for s in c["streams"]:
            out[(s["path"], s["stream_type"])] = {e for ch in s["chunks"] for e in ch["encodings"]}
    return out


def test_writer_chooses_encodings_and_round_trips(tmp_path: Path) -> None:
    table = shapes_table()
    path = tmp_path / "s.fermion"
    fermion.write_table(table, path, page_size=64 << 10)
    assert_same(fermion.read_table(path), table)
    enc = encodings_of(path)
    assert enc[("constant", "DATA")] == {"CONSTANT"}
    assert enc[("sorted", "DATA")] == {"DELTA"}
    assert enc[("runs", "DATA")] <= {"RLE", "INT_DICTIONARY", "DELTA"}
    assert enc[("rle", "DATA")] == {"RLE"}
    assert enc[("few", "DATA")] == {"INT_DICTIONARY"}
    assert enc[("small_nulls", "DATA")] <= {"FOR", "INT_DICTIONARY"}
    assert enc[("price", "DATA")] <= {"FOR", "INT_DICTIONARY", "DELTA"}
    assert enc[("flag", "DATA")] == {"DICTIONARY"} and enc[("flag", "OFFSETS")] == {"DERIVED"}
    assert enc[("comment", "OFFSETS")] - {"PLAIN"}
    assert enc[("feature", "DATA")] == {"BYTE_SPLIT"}
    assert enc[("huge", "DATA")] == {"PLAIN"}
    assert fermion.FileReader(path).metadata.required_features & RequiredFeature.ENCODINGS
    plain = tmp_path / "p.fermion"
    fermion.write_table(table, plain, page_size=64 << 10, encodings=False)
    assert path.stat().st_size < 0.8 * plain.stat().st_size


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_encoded_reads_take_and_filters(tmp_path: Path, compression: str) -> None:
    import pyarrow.compute as pc

    table = shapes_table(20_000)
    path = tmp_path / "f.fermion"
    fermion.write_table(table, path, page_size=16 << 10, compression=compression)
    idx = [19_999, 0, 777, 777, 12_345]
    assert fermion.FileReader(path).take(idx).equals(table.take(idx))
    expr = (pc.field("sorted") < 10**10 + 300) & (pc.field("flag") == "A")
    assert fermion.read_table(path, filter=expr).equals(table.filter(expr))


def test_overrides_keep_files_readable_by_1_0(tmp_path: Path) -> None:
    table = shapes_table(5_000)
    path = tmp_path / "o.fermion"
    fermion.write_table(table, path, column_encodings={"flag": "plain", "sorted": "plain"})
    enc = encodings_of(path)
    assert enc[("flag", "DATA")] == {"PLAIN"} and enc[("sorted", "DATA")] == {"PLAIN"}
    assert enc[("constant", "DATA")] == {"CONSTANT"}
    off = tmp_path / "off.fermion"
    fermion.write_table(table, off, encodings=False)  # plain pages, zstd still blocked
    assert fermion.FileReader(off).metadata.required_features == RequiredFeature.BLOCKS
    assert_same(fermion.read_table(off), table)
    fermion.write_table(table, off, encodings=False, compression_block_size=0)
    assert fermion.FileReader(off).metadata.required_features == 0  # what 1.0 readers accept
    assert_same(fermion.read_table(off), table)
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.write_table(table, off, column_encodings={"flag": "zip"})


def test_threaded_writes_share_no_codec_state(tmp_path: Path) -> None:
    """Regression: a compressor shared between writer threads crashed the process."""
    rng = np.random.default_rng(9)
    table = pa.table(
        {f"c{i}": pa.array(rng.integers(0, 2 ** (i * 2 + 2), 60_000)) for i in range(24)}
    )
    for round_ in range(3):
        path = tmp_path / f"t{round_}.fermion"
        fermion.write_table(table, path, page_size=16 << 10, threads=4)
        assert fermion.read_table(path, threads=4).equals(table)


# -- corrupt encoded pages --------------------------------------------------------------


def _encoded_page(values: np.ndarray) -> tuple[Encoding, bytes]:
    enc, payload = encodings.encode_ints(values, out_width=8, compressed=False)
    return enc, payload


def _with_header(payload: bytes, **fields: int) -> bytes:
    h = np.frombuffer(payload[: ENCODING_HEADER_DTYPE.itemsize], ENCODING_HEADER_DTYPE).copy()
    for k, v in fields.items():
        h[k] = v
    return h.tobytes() + payload[ENCODING_HEADER_DTYPE.itemsize :]


@pytest.mark.parametrize(
    "shape,fields",
    [
        ("small", {"count": 999}),
        ("small", {"width": 3}),
        ("small", {"out_width": 5}),
        ("runs", {"aux": 10**6}),
        ("runs", {"aux_width": 8}),
        ("few", {"aux": 0}),
        ("few", {"aux": 1}),
        ("sorted", {"count": 0}),
    ],
)
def test_lying_encoding_headers_raise_typed_errors(shape: str, fields: dict) -> None:
    values = make_ints(shape, 1000, 0)
    enc, payload = _encoded_page(values)
    assert enc != Encoding.PLAIN
    page = encode_page(
        _with_header(payload, **fields), num_values=1000, codec=Compression.NONE, encoding=enc
    )
    with pytest.raises(fermion.InvalidFileError):
        decode_page(memoryview(page), expected_values=1000, expected_size=8000, where="p")


def test_page_crc_covers_encoded_payloads() -> None:
    enc, payload = _encoded_page(make_ints("small", 1000, 0))
    page = bytearray(encode_page(payload, num_values=1000, codec=Compression.ZSTD, encoding=enc))
    page[PAGE_HEADER_SIZE + 3] ^= 1
    with pytest.raises(fermion.ChecksumError):
        decode_page(memoryview(bytes(page)), expected_values=1000, expected_size=8000, where="p")
