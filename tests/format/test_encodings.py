"""Encodings: kernel round trips, the writer's choices, overrides and corrupt encoded pages.

Bad inputs tried here: encoded payloads whose EncodingHeader lies (count, widths, number
of runs or dictionary entries, run lengths that do not add up, dictionary indices out of
range) behind a valid page CRC; each must raise a typed error. Lies only bit-packing
(format 1.2) makes possible: a BITS page claiming any other valid bit width (1..56, 64)
for its values or indices (FOR, DELTA, RLE, INT_DICTIONARY, string DICTIONARY), RLE and
INT_DICTIONARY pages claiming any other ``aux_width``, the BITS flag cleared (bit widths
then read as byte widths, including pages whose bit widths are 1, 2, 4 or 8 so that only
the payload size gives them away), BITS set on a 1.1 payload (byte widths read as bits),
widths 57, 63, 65 and 255, and 64-bit RLE run lengths or dictionary indices that wrap
around in int64. Every one must raise ``fermion.InvalidFileError``. A lie is caught by
the exact payload size whenever it changes that size, which every width change does once
a packed section holds at least 8 integers (the pages used here hold 16 or more).
"""

from __future__ import annotations

import decimal
import functools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.format.encoding import bitpack, byte_split, encodings, int_codec
from fermion.format.encoding.pages import PAGE_HEADER_SIZE, decode_page, encode_page
from fermion.format.metadata.structs import (
    ENCODING_HEADER_DTYPE,
    Compression,
    Encoding,
    EncodingFlag,
    RequiredFeature,
    StreamType,
)
from tests.format.test_roundtrip import assert_same
from tests.support.budget import examples

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


@settings(max_examples=examples(120))
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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_byte_split_planes_and_decoding_into_a_buffer(dtype) -> None:
    """The planes are byte j of every value in turn; decoding writes into a given buffer
    (a run's slice) or a new one, the same bytes either way."""
    v = np.random.default_rng(4).standard_normal(4099).astype(dtype)
    width = v.itemsize
    planes = encodings.split_planes(v.tobytes(), width)
    raw = np.frombuffer(v.tobytes(), dtype=np.uint8).reshape(-1, width)
    assert planes == b"".join(raw[:, j].tobytes() for j in range(width))
    payload = encodings.encode_byte_split(v.tobytes(), width, sampled=False)
    assert payload is not None and payload[encodings.HEADER_SIZE :] == planes
    assert bytes(encodings.decode_byte_split(payload) or b"") == v.tobytes()
    run = np.full(v.nbytes + 16, 7, dtype=np.uint8)
    assert encodings.decode_byte_split(payload, into=run[8 : 8 + v.nbytes]) is None
    assert run[8 : 8 + v.nbytes].tobytes() == v.tobytes()
    assert (run[:8] == 7).all() and (run[-8:] == 7).all()  # nothing written outside it


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
            "reading": pa.array(_readings(rng, n)),  # FLOAT_DECIMAL (1.3), with exceptions
        }
    )


def _readings(rng: np.random.Generator, n: int) -> np.ndarray:
    """Two-decimal float64 readings with a NaN, an infinity or -0.0 in 1 value of 200."""
    values = np.round(rng.normal(50, 10, n), 2)
    values[::200] = np.array([np.nan, np.inf, -0.0])[np.arange(len(values[::200])) % 3]
    return values


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
    # random floats: the planes save less than a quarter, so a point-read column keeps
    # them PLAIN, read in place (test_point_read_float_planes_save_a_quarter)
    assert enc[("feature", "DATA")] == {"PLAIN"}
    assert enc[("huge", "DATA")] == {"PLAIN"}
    assert fermion.FileReader(path).metadata.required_features & RequiredFeature.ENCODINGS
    plain = tmp_path / "p.fermion"
    fermion.write_table(table, plain, page_size=64 << 10, encodings=False)
    assert path.stat().st_size < 0.8 * plain.stat().st_size


def test_point_read_float_planes_save_a_quarter(tmp_path: Path) -> None:
    """BYTE_SPLIT pages of a point-read column are kept only if zstd saves a quarter of
    them (docs/FORMAT.md §5.2: a point read decompresses a block per plane); columns that
    are not point-read keep the usual 10%."""
    rng = np.random.default_rng(4)
    n = 20_000
    table = pa.table({
        "random": rng.random(n),  # the planes save about 15%
        "smooth": 20 + np.cumsum(rng.normal(0, 1e-3, n)),  # they save more than a quarter
        "nested": pa.array([[x] for x in rng.random(n)]),  # not point-read
    })  # fmt: skip
    path = tmp_path / "f.fermion"
    fermion.write_table(table, path, page_size=64 << 10)
    assert_same(fermion.read_table(path), table)
    enc = encodings_of(path)
    assert enc[("random", "DATA")] == {"PLAIN"}
    assert enc[("smooth", "DATA")] == {"BYTE_SPLIT"}
    assert enc[("nested.item", "DATA")] == {"BYTE_SPLIT"}
    rows = [5, 17_000, 9_999]
    assert fermion.FileReader(path).take(rows).equals(table.take(rows))


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_byte_split_pages_only_where_zstd_keeps_them(tmp_path: Path, compression: str) -> None:
    """The planes only help zstd: a float page zstd does not keep is stored PLAIN (same size
    less a header, read in place). Normal float32 at 64 KiB pages, the second half with the
    low 16 bits of their mantissas cleared: zstd saves the quarter a point-read column asks
    (docs/FORMAT.md §5.2) of the later pages' planes and not of the first ones (before:
    8 of 13 pages of normal float32 uncompressed BYTE_SPLIT)."""
    from tests.format.test_points import page_spans

    rng = np.random.default_rng(11)
    x = rng.standard_normal(200_000).astype(np.float32)
    x[100_000:] = (x[100_000:].view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    table = pa.table({"x": pa.array(x)})
    path = tmp_path / "f.fermion"
    fermion.write_table(table, path, page_size=64 << 10, compression=compression)
    pages = page_spans(path, "x")
    kinds = {(p["encoding"], p["compression"]) for p in pages}
    assert (Encoding.BYTE_SPLIT, Compression.NONE) not in kinds
    assert (Encoding.BYTE_SPLIT, Compression.CRC_BLOCKS) not in kinds
    assert (Encoding.PLAIN, Compression.CRC_BLOCKS) in kinds  # as is, a CRC32 per block
    if compression == "zstd":
        assert (Encoding.BYTE_SPLIT, Compression.ZSTD) in kinds
    assert_same(fermion.read_table(path), table)
    idx = [0, 1, 4_097, 199_999]
    assert_same(fermion.FileReader(path).take(idx), table.take(idx))


def test_float_pages_sample_byte_split_on_every_8th_page(tmp_path: Path, monkeypatch) -> None:
    """A chunk's float pages run the zstd sample (plain vs planes) on its first page and
    every 8th after it; the pages between follow the last sample. Without zstd no sample
    is taken: BYTE_SPLIT only helps zstd."""
    calls: list[int] = []
    sizes = byte_split.byte_split_sizes

    def counted(data, width):
        calls.append(len(data))
        return sizes(data, width)

    monkeypatch.setattr(byte_split, "byte_split_sizes", counted)
    rng = np.random.default_rng(12)
    # uniform, the low 16 mantissa bits cleared: the planes win, zstd keeps them (it saves
    # the quarter a point-read column asks, docs/FORMAT.md §5.2)
    x = rng.random(20 * 2048, dtype=np.float32)
    x = (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    table = pa.table({"x": x})
    path = tmp_path / "f.fermion"
    fermion.write_table(table, path, page_size=8 << 10, max_stripe_rows=10 * 2048)
    from tests.format.test_points import page_spans

    pages = page_spans(path, "x")
    assert len(pages) == 20 and {p["encoding"] for p in pages} == {Encoding.BYTE_SPLIT}
    assert len(calls) == 4  # two stripes of 10 pages: pages 0 and 8 of each
    assert_same(fermion.read_table(path), table)
    calls.clear()
    fermion.write_table(table, tmp_path / "n.fermion", page_size=8 << 10, compression="none")
    assert calls == []


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_encoded_reads_take_and_filters(tmp_path: Path, compression: str) -> None:
    import pyarrow.compute as pc

    table = shapes_table(20_000)
    path = tmp_path / "f.fermion"
    fermion.write_table(table, path, page_size=16 << 10, compression=compression)
    idx = [19_999, 0, 777, 777, 12_345]
    assert_same(fermion.FileReader(path).take(idx), table.take(idx))  # NaN: bit for bit
    expr = (pc.field("sorted") < 10**10 + 300) & (pc.field("flag") == "A")
    assert_same(fermion.read_table(path, filter=expr), table.filter(expr))


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


# -- bit-packed payloads (format 1.2) ---------------------------------------------------

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
VALID_BITS = [*range(1, 57), 64]
shapes64 = st.sampled_from(
    ["random", "narrow", "sorted", "runs", "few", "few_narrow", "negative"]
    + ["near_min", "near_max", "min_max", "constant"]
)


def make_int64(shape: str, n: int, seed: int) -> np.ndarray:
    """int64 values of a shape, covering the whole int64 range and its two ends."""
    rng = np.random.default_rng(seed)
    if shape == "random":
        return rng.integers(INT64_MIN, INT64_MAX, n, dtype=np.int64, endpoint=True)
    if shape == "narrow":  # a random span of 1..62 bits anywhere in the int64 range
        bits = int(rng.integers(1, 63))
        base = int(rng.integers(INT64_MIN, INT64_MAX - 2**bits, endpoint=True))
        return base + rng.integers(0, 2**bits, n, dtype=np.int64)
    if shape == "sorted":
        step = int(rng.integers(1, 10**6))
        return int(rng.integers(-(2**62), 2**62)) + np.cumsum(rng.integers(0, step, n))
    if shape == "runs":
        k = n // 4 + 1
        runs = np.repeat(rng.integers(-(2**40), 2**40, k), rng.integers(1, 30, k))
        return np.resize(runs, n).astype(np.int64)
    if shape == "few":
        distinct = rng.integers(INT64_MIN, INT64_MAX, int(rng.integers(2, 20)), dtype=np.int64)
        return rng.choice(distinct, n)
    if shape == "few_narrow":
        base = int(rng.integers(INT64_MIN, INT64_MAX - 2**19))
        return base + rng.choice(rng.integers(0, 2**19, int(rng.integers(2, 40))), n)
    if shape == "negative":
        return -rng.integers(1, 2 ** int(rng.integers(1, 63)), n, dtype=np.int64)
    if shape == "near_min":
        return INT64_MIN + rng.integers(0, 2 ** int(rng.integers(1, 40)), n, dtype=np.int64)
    if shape == "near_max":
        return INT64_MAX - rng.integers(0, 2 ** int(rng.integers(1, 40)), n, dtype=np.int64)
    if shape == "min_max":  # int64 differences wrap around: DELTA must still round-trip
        ends = np.array([INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX], dtype=np.int64)
        return rng.choice(ends, n)
    return np.full(n, int(rng.integers(INT64_MIN, INT64_MAX, endpoint=True)), dtype=np.int64)


def header_of(payload: bytes) -> np.void:
    return np.frombuffer(payload, ENCODING_HEADER_DTYPE, count=1)[0]


def packed_sections(payload: bytes, enc: Encoding) -> list[np.ndarray]:
    """The unsigned integers of each packed section of an integer-codec payload."""
    h = header_of(payload)
    n, aux, w, aw = (int(h[k]) for k in ("count", "aux", "width", "aux_width"))
    at = encodings.HEADER_SIZE
    if enc == Encoding.FOR:
        return [bitpack.unpack(payload, at, w, n)]
    if enc == Encoding.DELTA:
        return [bitpack.unpack(payload, at, w, n - 1)]
    first = aux if enc == Encoding.RLE else n
    second = at + bitpack.packed_size(first, w)
    return [bitpack.unpack(payload, at, w, first), bitpack.unpack(payload, second, aw, aux)]


def aligned_for_width(bits: int) -> int:
    """FOR widths 15 and 29-31 are rounded up to 16 and 32 (FORMAT.md §5.1, writers)."""
    return {15: 16, 29: 32, 30: 32, 31: 32}.get(bits, bits)


@pytest.mark.parametrize(
    "span_bits,width", [(14, 14), (15, 16), (16, 16), (28, 28), (29, 32), (31, 32), (33, 33)]
)
def test_for_rounds_widths_just_below_16_and_32_bits_up(span_bits: int, width: int) -> None:
    """A span needing 15 or 29-31 bits is packed byte-aligned (one cast to decode), for at
    most an eighth more bits; other widths stay the smallest."""
    rng = np.random.default_rng(span_bits)
    values = rng.integers(0, 2**span_bits, 5000, dtype=np.int64)
    values[:2] = 0, 2**span_bits - 1
    payload = int_codec._encode_as(Encoding.FOR, values, 8, EncodingFlag.BITS, 0, None)
    assert int(header_of(payload)["width"]) == width
    np.testing.assert_array_equal(encodings.decode_ints(payload, Encoding.FOR), values)


@settings(max_examples=examples(250))
@given(
    shape=shapes64,
    n=st.integers(0, 3000),
    seed=st.integers(0, 2**32),
    out_width=st.sampled_from([1, 2, 4, 8]),
    compressed=st.booleans(),
)
def test_int64_shapes_round_trip_bit_packed_at_minimal_widths(
    shape: str, n: int, seed: int, out_width: int, compressed: bool
) -> None:
    values = make_int64(shape, n, seed).astype(f"<i{out_width}").astype(np.int64)
    enc, payload = encodings.encode_ints(values, out_width=out_width, compressed=compressed)
    if enc == Encoding.PLAIN:
        assert payload == b""
        return
    assert len(payload) < n * out_width
    np.testing.assert_array_equal(encodings.decode_ints(payload, enc), values)
    h = header_of(payload)
    assert int(h["flags"]) == EncodingFlag.BITS | EncodingFlag.SIGNED
    assert (int(h["count"]), int(h["out_width"])) == (n, out_width)
    if enc == Encoding.CONSTANT:
        assert len(payload) == encodings.HEADER_SIZE and int(h["base"]) == int(values[0])
        return
    sections = packed_sections(payload, enc)
    widths = [int(h["width"]), int(h["aux_width"])]
    for section, w in zip(sections, widths, strict=False):
        # the width is the smallest valid one for what is packed (FOR: or byte-aligned) ...
        smallest = bitpack.bits_for(int(section.max()) if len(section) else 0)
        assert w == (aligned_for_width(smallest) if enc == Encoding.FOR else smallest)
    if enc != Encoding.RLE:  # RLE may keep full-width run values: it saves on the runs
        assert widths[0] < 8 * out_width
    lo, hi = int(values.min()), int(values.max())
    if enc == Encoding.FOR:  # ... and a FOR page packs value - min at bits_for(max - min)
        assert int(h["base"]) == lo
        assert widths[0] == aligned_for_width(bitpack.bits_for(hi - lo))
    if enc == Encoding.DELTA:
        assert int(sections[0].min()) == 0
    if enc == Encoding.RLE:
        assert int(h["base"]) == lo and int(sections[0].min()) == 0
        assert int(sections[1].sum()) == n and int(sections[1].min()) >= 1
    if enc == Encoding.INT_DICTIONARY:
        distinct = np.unique(values)
        assert int(h["aux"]) == len(distinct) and int(h["base"]) == lo
        assert widths[0] == bitpack.bits_for(len(distinct) - 1)
        np.testing.assert_array_equal(sections[1].astype(np.int64) + lo, distinct)


def for_payload(values: np.ndarray, out_width: int, flags: int = 0) -> bytes:
    """A FOR payload built by hand (FORMAT.md §5.1): ``values - min`` at their width."""
    lo = int(values.min()) if len(values) else 0
    packed = (values.astype(object) - lo).astype(np.uint64)  # exact: no int64 wrapping
    w = bitpack.bits_for(int(packed.max()) if len(values) else 0)
    h = np.zeros(1, dtype=ENCODING_HEADER_DTYPE)
    h["base"], h["count"], h["width"], h["out_width"] = lo, len(values), w, out_width
    h["flags"] = EncodingFlag.BITS | flags
    return h.tobytes() + bitpack.pack(packed, w)


@settings(max_examples=examples(200))
@given(
    shape=shapes64,
    n=st.integers(0, 2000),
    seed=st.integers(0, 2**32),
    out_width=st.sampled_from([1, 2, 4, 8]),
)
def test_for_straight_into_plain_bytes_equals_decoding_to_int64(
    shape: str, n: int, seed: int, out_width: int
) -> None:
    """``decode_for_into`` (what a run buffer gets) writes exactly the plain bytes of
    ``decode_ints`` cut to the value width, for bases and spans anywhere in int64."""
    values = make_int64(shape, n, seed)
    payload = for_payload(values, out_width, EncodingFlag.SIGNED)
    out = np.full(n, 0xA5, dtype=f"<u{out_width}")
    encodings.decode_for_into(payload, out, "p")
    expected = encodings.ints_to_plain(
        encodings.decode_ints(payload, Encoding.FOR), out_width, signed=True
    )
    assert out.tobytes() == expected.tobytes()
    with pytest.raises(fermion.InvalidFileError):
        encodings.decode_for_into(payload, np.empty(n + 1, dtype=out.dtype), "p")
    with pytest.raises(fermion.InvalidFileError):
        encodings.decode_for_into(payload[:-1] if n else payload + b"x", out, "p")


@settings(max_examples=examples(200))
@given(
    n=st.integers(1, 3000),
    distinct=st.integers(1, 40),
    base=st.integers(-(2**63), 2**63 - 2**21),
    out_width=st.sampled_from([1, 2, 4, 8]),
    signed=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_int_dictionary_straight_into_plain_bytes_equals_decoding_to_int64(
    n: int, distinct: int, base: int, out_width: int, signed: bool, seed: int
) -> None:
    """``decode_int_dictionary_into`` (what a run buffer gets) writes exactly the plain
    bytes of ``decode_ints`` cast to the value width (wrapping), for any base."""
    rng = np.random.default_rng(seed)
    choices = base + rng.choice(1 << 20, size=distinct, replace=False).astype(np.int64)
    values = rng.choice(choices, size=n)
    mn = int(values.min())
    present = np.zeros(int(values.max()) - mn + 1, dtype=bool)
    present[values - mn] = True
    flags = EncodingFlag.BITS | (EncodingFlag.SIGNED if signed else 0)
    payload = int_codec._encode_as(
        Encoding.INT_DICTIONARY, values, out_width, int(flags), mn, (present, int(present.sum()))
    )
    out = np.full(n, 0x25, dtype=f"<{'i' if signed else 'u'}{out_width}")
    encodings.decode_int_dictionary_into(payload, out, "p")
    expected = encodings.ints_to_plain(
        encodings.decode_ints(payload, Encoding.INT_DICTIONARY), out_width, signed
    )
    assert out.tobytes() == expected.tobytes()
    with pytest.raises(fermion.InvalidFileError):
        encodings.decode_int_dictionary_into(payload, np.empty(n + 1, dtype=out.dtype), "p")
    with pytest.raises(fermion.InvalidFileError):
        encodings.decode_int_dictionary_into(payload[:-1], out, "p")


def test_string_dictionary_indices_are_bit_packed() -> None:
    values = pa.array(["x", "yy", "", "zzz", "x"] * 200)
    payload = encodings.encode_dictionary(values)
    assert payload is not None
    h = header_of(payload)
    assert int(h["flags"]) & EncodingFlag.BITS
    assert (int(h["aux"]), int(h["width"])) == (4, 2)  # 4 entries: 2-bit indices
    assert len(payload) == 24 + bitpack.packed_size(1000, 2) + 8 * 5 + 6
    offsets, data = encodings.decode_dictionary(payload)
    assert offsets[-1] == len(data.to_pybytes()) == 1400


def test_writer_sets_bit_packing_with_encodings(tmp_path: Path) -> None:
    path = tmp_path / "b.fermion"
    fermion.write_table(shapes_table(5_000), path)
    required = fermion.FileReader(path).metadata.required_features
    assert required & RequiredFeature.ENCODINGS and required & RequiredFeature.BIT_PACKING


def _header_1_1(**fields: int) -> bytes:
    h = np.zeros(1, dtype=ENCODING_HEADER_DTYPE)
    for k, v in fields.items():
        h[k] = v
    return h.tobytes()


def payloads_1_1(values: np.ndarray) -> dict[Encoding, bytes]:
    """Format 1.1 payloads built by hand: no BITS flag, widths in bytes (1, 2, 4, 8)."""
    n, lo = len(values), int(values.min())
    signed = int(EncodingFlag.SIGNED)
    distinct, indices = np.unique(values, return_inverse=True)
    starts = np.flatnonzero(np.concatenate(([True], np.diff(values) != 0)))
    lengths = np.diff(np.append(starts, n))
    run_lo = int(values[starts].min())
    deltas = np.diff(values)
    return {
        Encoding.FOR: _header_1_1(base=lo, count=n, width=4, out_width=8, flags=signed)
        + (values - lo).astype("<u4").tobytes(),
        Encoding.INT_DICTIONARY: _header_1_1(
            base=lo, aux=len(distinct), count=n, width=1, aux_width=4, out_width=8, flags=signed
        )
        + indices.astype("<u1").tobytes()
        + (distinct - lo).astype("<u4").tobytes(),
        Encoding.DELTA: _header_1_1(
            base=int(values[0]), aux=int(deltas.min()), count=n, width=8, out_width=8
        )
        + (deltas - deltas.min()).astype("<u8").tobytes(),
        Encoding.RLE: _header_1_1(
            base=run_lo, aux=len(starts), count=n, width=4, aux_width=1, out_width=8, flags=1
        )
        + (values[starts] - run_lo).astype("<u4").tobytes()
        + lengths.astype("<u1").tobytes(),
    }


def test_format_1_1_payloads_still_decode() -> None:
    rng = np.random.default_rng(11)
    values = np.repeat(rng.choice(np.array([-5, 17, 60_000, 250_000]), 300), 3)  # 900 values
    for enc, payload in payloads_1_1(values).items():
        assert not int(header_of(payload)["flags"]) & EncodingFlag.BITS
        np.testing.assert_array_equal(encodings.decode_ints(payload, enc), values)
        page = encode_page(payload, num_values=900, codec=Compression.ZSTD, encoding=enc)
        plain = decode_page(memoryview(page), expected_values=900, expected_size=7200, where="p")
        assert bytes(plain) == values.astype("<i8").tobytes()


def test_format_1_1_string_dictionary_still_decodes() -> None:
    offsets = np.array([0, 1, 3], dtype="<i8").tobytes()
    indices = np.array([1, 0, 1, 1], dtype="<u2").tobytes()  # 2-byte indices, no BITS
    payload = _header_1_1(aux=2, count=4, width=2, out_width=8) + indices + offsets + b"abc"
    out, data = encodings.decode_dictionary(payload)
    assert out.tolist() == [0, 2, 3, 5, 7] and data.to_pybytes() == b"bcabcbc"


# -- lies only bit-packing makes possible ------------------------------------------------


PAGE_NAMES = ["delta", "dictionary", "for", "for_2bits", "for_bytewidth", "int_dictionary"]
PAGE_NAMES += ["int_dictionary_bytewidths", "rle"]


@functools.cache
def bit_packed_pages() -> dict[str, tuple[Encoding, bytes]]:
    """One 1000-value page per encoding with bit widths that are not byte widths, and
    three whose bit widths are 1, 2, 4 or 8 (read as byte widths they pass the header
    check, so only the payload size can give them away)."""
    rng = np.random.default_rng(21)
    few = rng.choice(rng.choice(np.arange(10**6), 16, replace=False), 1000)
    byte_few = rng.choice(rng.choice(256, 16, replace=False), 1000)
    cases = {
        "for": (Encoding.FOR, rng.integers(0, 5000, 1000)),  # 13 bits
        "for_bytewidth": (Encoding.FOR, rng.integers(0, 256, 1000)),  # 8 bits
        "for_2bits": (Encoding.FOR, rng.integers(0, 4, 1000)),
        "delta": (Encoding.DELTA, 10**12 + np.cumsum(rng.integers(0, 5, 1000))),  # 3 bits
        "rle": (Encoding.RLE, np.repeat(rng.integers(-1000, 1000, 100), 10)),  # 11 + 4 bits
        "int_dictionary": (Encoding.INT_DICTIONARY, few),  # 4-bit indices, 20-bit values
        "int_dictionary_bytewidths": (Encoding.INT_DICTIONARY, byte_few),  # 4 + 8 bits
    }
    pages = {}
    for name, (expected, values) in cases.items():
        enc, payload = _encoded_page(values.astype(np.int64))
        assert enc == expected, name
        pages[name] = (enc, payload)
    strings = pa.array(rng.choice(["a", "bb", "ccc", "", "ee"], 1000))
    pages["dictionary"] = (Encoding.DICTIONARY, encodings.encode_dictionary(strings))
    assert sorted(pages) == PAGE_NAMES
    return pages


def _decode(enc: Encoding, payload: bytes, expected_size: int = 8000) -> None:
    """Decode a 1000-value page as the reader does (string DICTIONARY: size unknown)."""
    page = encode_page(payload, num_values=1000, codec=Compression.NONE, encoding=enc)
    size = None if enc == Encoding.DICTIONARY else expected_size
    decode_page(memoryview(page), expected_values=1000, expected_size=size, where="p")


def test_bit_packed_pages_decode_as_written() -> None:
    pages = bit_packed_pages()
    for name, (enc, payload) in pages.items():
        h = header_of(payload)
        assert int(h["flags"]) & EncodingFlag.BITS, name
        _decode(enc, payload)  # the honest pages are fine
    assert int(header_of(pages["for"][1])["width"]) == 13
    assert int(header_of(pages["for_bytewidth"][1])["width"]) == 8
    assert int(header_of(pages["for_2bits"][1])["width"]) == 2
    assert int(header_of(pages["int_dictionary_bytewidths"][1])["aux_width"]) == 8
    # the example of docs/FORMAT.md §5.1: distinct values start at 24 + ceil(1000 * 4 / 8)
    enc, payload = pages["int_dictionary"]
    h = header_of(payload)
    assert (int(h["aux"]), int(h["width"]), int(h["aux_width"]), len(payload)) == (16, 4, 20, 564)
    distinct = bitpack.unpack(payload, 524, 20, 16).astype(np.int64) + int(h["base"])
    np.testing.assert_array_equal(distinct, np.unique(encodings.decode_ints(payload, enc)))


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_claiming_another_bit_width_raises(name: str) -> None:
    enc, payload = bit_packed_pages()[name]
    honest = int(header_of(payload)["width"])
    for w in VALID_BITS:
        if w != honest:
            with pytest.raises(fermion.InvalidFileError):
                _decode(enc, _with_header(payload, width=w))


@pytest.mark.parametrize("name", ["rle", "int_dictionary", "int_dictionary_bytewidths"])
def test_claiming_another_aux_width_raises(name: str) -> None:
    enc, payload = bit_packed_pages()[name]
    honest = int(header_of(payload)["aux_width"])
    for w in [0, *VALID_BITS]:
        if w != honest:
            with pytest.raises(fermion.InvalidFileError):
                _decode(enc, _with_header(payload, aux_width=w))


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_clearing_the_bits_flag_raises(name: str) -> None:
    enc, payload = bit_packed_pages()[name]
    flags = int(header_of(payload)["flags"])
    with pytest.raises(fermion.InvalidFileError):
        _decode(enc, _with_header(payload, flags=flags & ~EncodingFlag.BITS))


@pytest.mark.parametrize("name", PAGE_NAMES)
@pytest.mark.parametrize("field", ["width", "aux_width"])
@pytest.mark.parametrize("w", [57, 63, 65, 255])
def test_invalid_bit_widths_raise(name: str, field: str, w: int) -> None:
    enc, payload = bit_packed_pages()[name]
    with pytest.raises(fermion.InvalidFileError, match="invalid encoding widths"):
        _decode(enc, _with_header(payload, **{field: w}))


def test_setting_the_bits_flag_on_a_1_1_payload_raises() -> None:
    values = np.repeat(np.array([-5, 17, 60_000, 250_000]), 250)
    for enc, payload in payloads_1_1(values).items():
        _decode(enc, payload)  # honest
        flags = int(header_of(payload)["flags"])
        with pytest.raises(fermion.InvalidFileError):
            _decode(enc, _with_header(payload, flags=flags | EncodingFlag.BITS))


def test_64_bit_lengths_and_indices_that_wrap_in_int64_raise() -> None:
    """Regression: 64-bit RLE run lengths summing to ``count`` modulo 2**64 passed the
    check and made ``np.repeat`` write out of bounds (a segfault); 64-bit dictionary
    indices of 2**63 or more became negative and picked values from the end silently
    (INT_DICTIONARY) or raised Arrow/numpy errors (DICTIONARY). Format 1.1 pages with
    8-byte widths had the same holes."""
    bits, signed = int(EncodingFlag.BITS), int(EncodingFlag.SIGNED)
    lengths = np.array([2**63 - 1, 2**63 - 1, 501, 501], dtype=np.uint64)  # sum wraps to 1000
    rle = (
        _header_1_1(aux=4, count=1000, width=2, aux_width=64, out_width=8, flags=bits | signed)
        + bitpack.pack(np.array([0, 1, 2, 3], dtype=np.uint64), 2)
        + lengths.tobytes()
    )
    rle_1_1 = (
        _header_1_1(aux=4, count=1000, width=1, aux_width=8, out_width=8, flags=signed)
        + bytes([0, 1, 2, 3])
        + lengths.tobytes()
    )
    indices = np.zeros(1000, dtype=np.uint64)
    indices[7] = 2**64 - 1  # -1 as int64
    int_dict = (  # 16-byte decoded values (decimals): 8-byte indices fit the size bound
        _header_1_1(aux=2, count=1000, width=64, aux_width=8, out_width=16, flags=bits | signed)
        + indices.tobytes()
        + bytes([3, 9])
    )
    strings = (
        _header_1_1(aux=2, count=1000, width=64, out_width=8, flags=bits)
        + indices.tobytes()
        + np.array([0, 1, 3], dtype="<i8").tobytes()
        + b"abc"
    )
    for payload in (rle, rle_1_1):
        with pytest.raises(fermion.InvalidFileError, match="RLE run lengths"):
            encodings.decode_ints(payload, Encoding.RLE)
        with pytest.raises(fermion.InvalidFileError, match="RLE run lengths"):
            _decode(Encoding.RLE, payload)
    with pytest.raises(fermion.InvalidFileError, match="index out of range"):
        encodings.decode_ints(int_dict, Encoding.INT_DICTIONARY)
    with pytest.raises(fermion.InvalidFileError, match="index out of range"):
        _decode(Encoding.INT_DICTIONARY, int_dict, expected_size=16_000)
    with pytest.raises(fermion.InvalidFileError, match="corrupt dictionary page"):
        encodings.decode_dictionary(strings)
    with pytest.raises(fermion.InvalidFileError, match="corrupt dictionary page"):
        _decode(Encoding.DICTIONARY, strings)


def _data_page_rows(path: Path, column: str) -> list[int]:
    with fermion.FileReader(path) as r:
        (meta,) = r.file_meta.column_metas(r.file_meta.projections([column]))
        desc = [d for d in meta.streams if d.full is not None][0]
        return desc.pages(0)["row_count"].astype(int).tolist()


def test_integer_pages_are_sized_by_their_bit_packed_width(tmp_path: Path) -> None:
    """values per page = page_size * 8 // bits of the stripe's value range, between the
    plain count (page_size // width) and 8x it; floats and encodings=False stay plain."""
    n, page_size = 40_000, 4096
    rng = np.random.default_rng(12)
    table = pa.table(
        {
            "b12": pa.array(rng.integers(0, 4096, n)),  # 12 bits: 4096*8/12 = 2730 per page
            "b3": pa.array(rng.integers(0, 8, n)),  # 3 bits: capped at 8 * 512 = 4096
            "b40": pa.array(rng.integers(0, 2**40, n)),  # 40 bits: 819 per page
            "wide": pa.array(rng.integers(-(2**62), 2**62, n)),  # 64 bits: plain, 512
            "f": pa.array(rng.random(n)),
        }
    )
    path = tmp_path / "sized.fermion"
    fermion.write_table(table, path, page_size=page_size)
    expected = {"b12": 2730, "b3": 4096, "b40": 819, "wide": 512, "f": 512}
    for column, per_page in expected.items():
        rows = _data_page_rows(path, column)
        assert rows[:-1] == [per_page] * (len(rows) - 1), column
        assert sum(rows) == n
    plain = tmp_path / "plain.fermion"
    fermion.write_table(table, plain, page_size=page_size, encodings=False)
    assert set(_data_page_rows(plain, "b12")[:-1]) == {512}
    assert_same(fermion.read_table(path), table)


def _stream_page_rows(path: Path, column: str, node: int, stream: StreamType) -> list[int]:
    with fermion.FileReader(path) as r:
        (proj,) = r.file_meta.projections([column])
        (meta,) = r.file_meta.column_metas([proj])
        spec = next(s for s in proj.tree.all_streams() if (s.node, s.stream_type) == (node, stream))
        return meta.streams[spec.index].pages(0)["row_count"].astype(int).tolist()


def test_columns_read_whole_get_four_times_the_page_size(tmp_path: Path) -> None:
    """Readers select pages only of flat columns (pruning, point reads); the streams of any
    other column (lists, structs, dictionaries) are cut at 4 * page_size."""
    n, page_size = 20_000, 4096
    rng = np.random.default_rng(14)
    wide = rng.integers(-(2**62), 2**62, n)  # 64 bits: plain-sized int64 pages
    lists = pa.ListArray.from_arrays(
        pa.array(np.arange(0, 2 * n + 1, 2, dtype=np.int32)), pa.array(np.repeat(wide, 2))
    )
    table = pa.table(
        {
            "flat": pa.array(wide),
            "list": lists,
            "struct": pa.StructArray.from_arrays([pa.array(wide)], names=["x"]),
            "dict": pa.array(wide % 7).dictionary_encode(),
        }
    )
    path = tmp_path / "whole.fermion"
    fermion.write_table(table, path, page_size=page_size, encodings=False)
    plain = page_size // 8
    assert set(_stream_page_rows(path, "flat", 0, StreamType.DATA)[:-1]) == {plain}
    assert set(_stream_page_rows(path, "list", 0, StreamType.OFFSETS)[:-1]) == {
        4 * page_size // 4 - 1
    }
    assert set(_stream_page_rows(path, "list", 1, StreamType.DATA)[:-1]) == {4 * plain}
    assert set(_stream_page_rows(path, "struct", 1, StreamType.DATA)[:-1]) == {4 * plain}
    assert set(_stream_page_rows(path, "dict", 0, StreamType.DATA)[:-1]) == {4 * page_size // 4}
    assert_same(fermion.read_table(path), table)


def test_string_pages_are_sized_by_how_they_are_read(tmp_path: Path) -> None:
    """A string column whose sample has few distinct values gets up to 8x the plain bytes per
    page (its pages are DICTIONARY pages of a few bits per value); so does one whose pages
    are blocked zstd pages (point reads decompress only the blocks they need); others stay
    plain-sized."""
    n, page_size = 60_000, 4096
    rng = np.random.default_rng(13)
    words = np.array(["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"])
    table = pa.table(
        {
            "few": pa.array(words[rng.integers(0, 4, n)]),
            "many": pa.array([f"id-{x:012d}" for x in rng.integers(0, 10**12, n)]),
        }
    )
    path = tmp_path / "strings.fermion"
    fermion.write_table(table, path, page_size=page_size)
    few, many = _data_page_rows(path, "few"), _data_page_rows(path, "many")
    assert all(r <= 8 * page_size // 4 - 1 for r in few)  # offsets page bound at 8x
    lengths = np.array([len(w) for w in table.column("few").to_pylist()])
    first = int(np.searchsorted(np.cumsum(lengths), 8 * page_size, side="right"))
    assert few[0] == min(first, 8 * page_size // 4 - 1)
    # 15-byte values in blocked zstd pages (format 1.3): 8x the page size
    assert max(many) * 15 <= 8 * page_size and sum(many[:-1]) / len(many[:-1]) * 15 > 7 * page_size
    assert encodings_of(path)[("few", "DATA")] == {"DICTIONARY"}
    assert encodings_of(path)[("many", "DATA")] == {"PLAIN"}
    for name, options in {
        "plain": {"encodings": False},
        "one_frame": {"compression_block_size": 0},
        "uncompressed": {"compression": "none"},
    }.items():
        other = tmp_path / f"{name}.fermion"
        fermion.write_table(table, other, page_size=page_size, **options)
        assert max(_data_page_rows(other, "many")) * 15 <= page_size  # plain-sized
        if name == "plain":
            assert max(_data_page_rows(other, "few")) * 4 <= page_size  # >= 4 bytes per value
        assert_same(fermion.read_table(other), table)
    assert_same(fermion.read_table(path), table)


def _hashed_dictionary_page(values: pa.Array, monkeypatch) -> tuple[bytes, pa.Array] | None:
    """``dictionary_page`` through Arrow's hashing (``dictionary_encode``) only."""
    from fermion.format.encoding import page_dictionary

    with monkeypatch.context() as m:
        m.setattr(page_dictionary, "_short_codes_dictionary", lambda v: None)
        return page_dictionary.dictionary_page(values)


@settings(max_examples=examples(150), deadline=None)
@given(
    width=st.sampled_from([1, 2, 3]),
    distinct=st.integers(1, 20),
    n=st.integers(64, 3000),
    at=st.integers(0, 40),
    kind=st.sampled_from([pa.string(), pa.binary(), pa.large_string(), pa.large_binary()]),
    nulls=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_short_code_pages_are_the_dictionary_pages_arrow_hashing_gives(
    width: int, distinct: int, n: int, at: int, kind: pa.DataType, nulls: bool, seed: int
) -> None:
    """Pages of 1- and 2-byte codes (counted with NumPy, not hashed) get the payload and
    distinct values Arrow's ``dictionary_encode`` gives: the same bytes on disk; other
    widths, nulls and pages of more distinct values take the hashing path."""
    from fermion.format.encoding import page_dictionary

    rng = np.random.default_rng(seed)
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    pool = ["".join(rng.choice(list(letters), width)) for _ in range(distinct)]
    rows = [pool[i] for i in rng.integers(0, distinct, n + at)]
    if nulls:
        rows[rng.integers(0, n + at)] = None
    values = pa.array(rows, kind).slice(at)  # an offset into the buffers
    short = page_dictionary._short_codes_dictionary(values)
    found = len(set(values.to_pylist()))
    assert (short is not None) == (width < 3 and not values.null_count and found <= 16)
    got = page_dictionary.dictionary_page(values)
    with pytest.MonkeyPatch.context() as mp:
        want = _hashed_dictionary_page(values, mp)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert got[0] == want[0]
    assert got[1].equals(want[1])
    assert got[1].type == kind
