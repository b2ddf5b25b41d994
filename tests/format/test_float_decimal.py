"""FLOAT_DECIMAL (format 1.3): kernels, the writer's choice, reads, point reads, corruption.

Bad inputs tried here (each must raise ``fermion.InvalidFileError``, on a full page decode
and on a point read of every row; never a numpy, Arrow or other exception):

- the EncodingHeader of the page lying: exponent 19, 63, 255, 2**40 and -1; exception
  count -1, one more, one fewer, ``count + 1``, 2**31 and so many that the sections run
  past the payload; ``count`` one more or one fewer than the page's values;
  ``out_width`` 2, 16 and the other float width (4 on a float64 page, 8 on a float32
  one); ``width`` or ``aux_width`` not 0; flags SIGNED, LENGTHS or BITS set;
- the FloatDecimalHeader lying: nested encoding 0 (PLAIN), 5 (DICTIONARY), 6
  (BYTE_SPLIT), 7 (DERIVED), 9 (FLOAT_DECIMAL itself), 10 and 255; each other nested
  integer encoding than the one written (CONSTANT, FOR, DELTA, RLE, INT_DICTIONARY);
  a reserved byte not 0;
- exception positions out of range (``n``, 2**32 - 1), unsorted (two swapped) and
  duplicated;
- the nested payload lying: its ``count`` one more or one fewer, ``out_width`` 4,
  flags without SIGNED or BITS or with LENGTHS, another bit width, and integers beyond
  2**53 (a CONSTANT of 2**53, a FOR base of 2**60) that the kernel could not decode
  exactly;
- payloads truncated at every length and with one byte appended;
- in a written file, with the page CRC recomputed so that only the decoder can tell: the
  exponent, an exception position and the nested encoding rewritten (``read_table``,
  ``take`` with and without point reads), and every single byte of a page payload
  replaced (only typed errors or a successful read are allowed).

The 1.2 reader is simulated by the set of required bits it knows: it refuses files with
FLOAT_DECIMAL pages (UnsupportedVersionError) and still reads 1.3 files without them.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion
from fermion.format.encoding import bitpack, decimal_floats, encodings
from fermion.format.encoding.pages import (
    PAGE_HEADER_SIZE,
    decode_page,
    decode_page_into,
    encode_page,
)
from fermion.format.metadata import footer
from fermion.format.metadata.structs import (
    ENCODING_HEADER_DTYPE,
    FLOAT_DECIMAL_HEADER_DTYPE,
    PAGE_HEADER_DTYPE,
    Compression,
    Encoding,
    RequiredFeature,
    StatsFlag,
    StreamType,
)
from fermion.format.read import points
from tests.format.test_encodings import encodings_of
from tests.format.test_points import check_take, page_spans
from tests.format.test_roundtrip import assert_same
from tests.support.budget import examples

_H = ENCODING_HEADER_DTYPE.itemsize
_FLOATS = {4: np.float32, 8: np.float64}
_UINTS = {4: np.uint32, 8: np.uint64}
_SPECIAL_BITS = {
    8: [
        0x7FF8000000000000,  # NaN
        0xFFF8000000000000,  # -NaN
        0x7FF0000000000001,  # signalling NaN with a payload
        0x7FF0000000000000,  # inf
        0xFFF0000000000000,  # -inf
        0x8000000000000000,  # -0.0
        0x0000000000000001,  # the smallest subnormal
        0x800FFFFFFFFFFFFF,  # the largest negative subnormal
        0x7FEFFFFFFFFFFFFF,  # the largest float64
    ],
    4: [
        0x7FC00000,  # NaN
        0xFFC00000,  # -NaN
        0x7F800001,  # signalling NaN with a payload
        0x7F800000,  # inf
        0xFF800000,  # -inf
        0x80000000,  # -0.0
        0x00000001,  # the smallest subnormal
        0x807FFFFF,  # the largest negative subnormal
        0x7F7FFFFF,  # the largest float32
    ],
}


def specials(width: int) -> np.ndarray:
    return np.array(_SPECIAL_BITS[width], dtype=_UINTS[width]).view(_FLOATS[width])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and bool(
        (a.view(_UINTS[a.itemsize]) == b.view(_UINTS[b.itemsize])).all()
    )


def decode(payload: bytes, n: int) -> np.ndarray:
    out = decimal_floats.decode_float_decimal(payload, n, "p")
    assert out is not None
    width = decimal_floats.read_layout(payload, len(payload), n, "p").width
    return np.frombuffer(out, dtype=_FLOATS[width])


# -- the kernel -------------------------------------------------------------------------


def test_kernel_is_the_documented_ieee_arithmetic() -> None:
    """float64(k) / float64(10**e), then float32: Python floats are IEEE binary64."""
    rng = np.random.default_rng(1)
    for e in range(19):
        k = rng.integers(-(2**53) + 1, 2**53, 300)
        k[:3] = [0, 2**53 - 1, -(2**53) + 1]
        want = np.array([float(int(x)) / float(10**e) for x in k])
        assert same_bits(decimal_floats.decimal_kernel(k, e, 8), want)
        assert same_bits(decimal_floats.decimal_kernel(k, e, 4), want.astype(np.float32))


def test_format_md_example() -> None:
    """FORMAT.md §5.3: 1,000 prices with 3 exceptions, e = 2, FOR at 17 bits: 2,217 bytes."""
    rng = np.random.default_rng(4)
    v = np.round(rng.random(1000) * 1000, 2)
    v[[10, 500, 999]] = [np.nan, np.inf, -0.0]
    payload = decimal_floats.encode_float_decimal(v, None, 2, 8, compressed=False)
    assert payload is not None and len(payload) == 2217
    layout = decimal_floats.read_layout(payload, len(payload), 1000, "p")
    assert layout == (2, 3, 8, Encoding.FOR, 44, 68, decimal_floats.KERNEL_DIVIDE)
    nested = encodings.read_header(payload[68:])
    assert int(nested["width"]) == 17 and len(payload) - 68 == 24 + bitpack.packed_size(1000, 17)
    assert np.frombuffer(payload, "<u4", 3, 32).tolist() == [10, 500, 999]
    assert same_bits(decode(payload, 1000), v)


@pytest.mark.parametrize(
    "values,width,exponent",
    [
        (np.round(np.linspace(-1000, 1000, 5000), 2), 8, 2),
        (np.arange(-2500, 2500, dtype=np.float64) * 4, 8, 0),
        (np.round(np.linspace(0, 1, 5000), 6), 8, 6),
        (np.round(np.linspace(0, 10, 5000), 5), 8, 5),
        (np.round(np.linspace(0, 1e-12, 5000), 18), 8, 18),
        (np.round(np.linspace(-50, 50, 5000), 3).astype(np.float32), 4, 3),
        (np.full(5000, 0.5, dtype=np.float32), 4, 1),
    ],
)
def test_exponent_search_finds_the_smallest_exponent(values, width, exponent) -> None:
    assert decimal_floats.find_exponent(values, None, width) == (exponent, 0)
    payload = decimal_floats.encode_float_decimal(values, None, exponent, width, compressed=True)
    assert payload is not None and decimal_floats.read_layout(payload, len(payload), 5000, "p")[
        :2
    ] == (exponent, 0)
    assert same_bits(decode(payload, 5000), values)


def test_exponent_search_gives_up_on_non_decimals() -> None:
    rng = np.random.default_rng(2)
    assert decimal_floats.find_exponent(rng.random(5000), None, 8) is None
    assert decimal_floats.find_exponent(rng.normal(0, 1e10, 5000), None, 8) is None
    assert decimal_floats.find_exponent(np.full(5000, np.nan), None, 8) is None
    prices = np.round(rng.random(5000) * 100, 2)
    prices[::20] = np.nan  # 1 value in 20: more than 1 in 32 can never round-trip
    assert decimal_floats.find_exponent(prices, None, 8) is None
    prices[::20] = 1.0
    prices[rng.choice(5000, 50, replace=False)] = np.nan  # 1 in 100: exceptions
    assert decimal_floats.find_exponent(prices, None, 8) == (2, 0)
    # the nulls are not sampled: all-NaN null slots do not count
    valid = np.ones(5000, dtype=bool)
    prices[::3], valid[::3] = np.nan, False
    assert decimal_floats.find_exponent(prices, valid, 8) == (2, 0)


def _exponent_all_at_once(sample: np.ndarray, width: int, slack: int, kernel: int) -> int | None:
    """The exponent search as written before exponents were tried in groups: every
    exponent's k and round-trips computed at once, then the same walk from 0 up."""
    m = len(sample)
    allowed = m * slack // 32
    every = np.arange(decimal_floats.MAX_EXPONENT + 1)[:, None]
    k, ok, fits = decimal_floats._to_decimal(sample, every, width, kernel)
    unfit, misses = m - fits.sum(axis=1), m - ok.sum(axis=1)
    best, best_cost = None, 0
    for e in range(decimal_floats.MAX_EXPONENT + 1):
        if unfit[e] > allowed:
            break
        if misses[e] > allowed:
            continue
        good = k[e][ok[e]]
        span = int(good.max()) - int(good.min()) if len(good) else 0
        cost = m * bitpack.bits_for(span) + int(misses[e]) * (32 + 8 * width)
        if best is None or cost < best_cost:
            best, best_cost = e, cost
        if misses[e] == 0:
            break
    return None if best is not None and best_cost > 0.9 * m * 8 * width else best


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(
    places=st.integers(0, 18),
    scale=st.sampled_from([1e-9, 1e-3, 1.0, 1e3, 1e9, 1e15]),
    noise=st.sampled_from([0.0, 0.01, 0.03, 0.2, 1.0]),
    width=st.sampled_from([4, 8]),
    slack=st.sampled_from([1, 8]),
    kernel=st.sampled_from([decimal_floats.KERNEL_DIVIDE, decimal_floats.KERNEL_MULTIPLY]),
    size=st.sampled_from([17, 200, 1033]),
    seed=st.integers(0, 2**32 - 1),
)
def test_exponent_search_in_groups_agrees_with_every_exponent_at_once(
    places, scale, noise, width, slack, kernel, size, seed
) -> None:
    """The grouped search (a second group of exponents computed only when the first has no
    answer) picks what computing every exponent at once picked: decimals with ``places``
    places at several magnitudes, a fraction ``noise`` of random values mixed in, both
    widths and kernels, both slacks, and the quick and full sample sizes."""
    rng = np.random.default_rng(seed)
    values = np.round(rng.random(size) * scale, places)
    mixed = rng.random(size) < noise
    values[mixed] = rng.random(int(mixed.sum())) * scale
    values = values.astype(np.float32 if width == 4 else np.float64)
    expected = _exponent_all_at_once(values, width, slack, kernel)
    for split in (0, 4):  # the quick sample's one group, and the full sample's two
        trials = decimal_floats._Trials(values, width, split=split)
        assert decimal_floats._best_exponent(trials, slack, kernel) == expected


@pytest.mark.parametrize("width", [4, 8])
def test_special_values_are_exceptions_and_round_trip_bit_for_bit(width: int) -> None:
    rng = np.random.default_rng(width)
    n = 32 * 40
    values = np.round(rng.random(n) * 100, 2).astype(_FLOATS[width])
    at = rng.choice(n, 36, replace=False)
    values[at] = np.tile(specials(width), 4)
    values[at[0]] = 0.0  # +0.0 is no exception
    payload = decimal_floats.encode_float_decimal(values, None, 2, width, compressed=True)
    assert payload is not None
    layout = decimal_floats.read_layout(payload, len(payload), n, "p")
    assert layout.exceptions == 35
    positions = decimal_floats.exception_positions(payload, layout, n, "p")
    assert positions.tolist() == sorted(at[1:].tolist())
    assert same_bits(decode(payload, n), values)


def test_more_than_one_exception_in_32_falls_back() -> None:
    rng = np.random.default_rng(6)
    values = np.round(rng.random(3200) * 100, 2)
    at = rng.permutation(3200)
    values[at[:101]] = np.nan  # 101 > 3200 // 32
    assert decimal_floats.encode_float_decimal(values, None, 2, 8, compressed=False) is None
    values[at[100]] = 1.5  # exactly 100 == 3200 // 32
    assert decimal_floats.encode_float_decimal(values, None, 2, 8, compressed=False)
    values[at[80:100]] = 2.5  # 1 in 40 (also in the 16 KiB the writer samples)
    enc, _ = decimal_floats.encode_floats(values.tobytes(), 8, None, compressed=True)
    assert enc == Encoding.FLOAT_DECIMAL
    values[at[:200]] = np.nan
    enc, _ = decimal_floats.encode_floats(values.tobytes(), 8, None, compressed=True)
    assert enc in (Encoding.PLAIN, Encoding.BYTE_SPLIT)


def test_null_slots_are_free() -> None:
    """Null slots holding NaN or huge values are no exceptions and do not widen k."""
    n = 4096
    values = np.round(np.linspace(10, 20, n), 2)
    valid = np.ones(n, dtype=bool)
    valid[::2] = False
    garbage = values.copy()
    garbage[::2] = np.tile([np.nan, 1e300, -0.0, 1 / 3], n // 8)
    with_nulls = decimal_floats.encode_float_decimal(garbage, valid, 2, 8, compressed=False)
    assert with_nulls is not None
    layout = decimal_floats.read_layout(with_nulls, len(with_nulls), n, "p")
    assert layout.exceptions == 0
    nested = encodings.read_header(with_nulls[layout.nested_at :])
    assert int(nested["width"]) == bitpack.bits_for(2000 - 1000)
    got = decode(with_nulls, n)
    assert same_bits(got[valid], values[valid])


def test_savings_under_10_percent_and_tiny_pages_are_not_chosen() -> None:
    rng = np.random.default_rng(3)
    # random float32 are decimals of about 9 digits: k needs 30 of 32 bits, so the
    # exponent search gives up (cheaply) although exponent 9 round-trips
    r32 = rng.random(4096, dtype=np.float32)
    assert decimal_floats.find_exponent(r32, None, 4) is None
    payload = decimal_floats.encode_float_decimal(r32, None, 9, 4, compressed=False)
    assert payload is not None and 0.9 * r32.nbytes < len(payload) < r32.nbytes
    for compressed in (True, False):
        enc, _ = decimal_floats.encode_floats(r32.tobytes(), 4, None, compressed=compressed)
        assert enc != Encoding.FLOAT_DECIMAL
    # 15 significant digits in float64: k has 50 bits, still 22% smaller
    wide = np.round(rng.random(4096) * 1e13, 2)
    enc, _ = decimal_floats.encode_floats(wide.tobytes(), 8, None, compressed=False)
    assert enc == Encoding.FLOAT_DECIMAL
    enc, _ = decimal_floats.encode_floats(wide[:63].tobytes(), 8, None, compressed=False)
    assert enc == Encoding.PLAIN  # fewer than 64 values


# -- property round trips ---------------------------------------------------------------


@st.composite
def decimal_values(
    draw, n: int | None = None, kernels: tuple[int, ...] = (0,)
) -> tuple[np.ndarray, np.ndarray | None, int, int, int]:
    """(values, validity or None, width, the exponent and the kernel they were made with):
    decimals mixed with NaN, -0.0, infinities, subnormals and extreme values."""
    width = draw(st.sampled_from([4, 8]))
    e = draw(st.integers(0, 18))
    kernel = draw(st.sampled_from(kernels))
    n = n if n is not None else draw(st.integers(1, 2000))
    digits = draw(st.integers(1, 6 if width == 4 else 15))  # so that k is recovered
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = rng.integers(-(10**digits) + 1, 10**digits, n)
    values = decimal_floats.decimal_kernel(k, e, width, kernel)
    share = draw(st.sampled_from([0.0, 0.01, 1 / 32, 0.2]))
    at = np.flatnonzero(rng.random(n) < share)
    values[at] = rng.choice(specials(width), len(at))
    valid = None
    if draw(st.booleans()):
        valid = rng.random(n) >= draw(st.sampled_from([0.1, 0.9, 1.0]))
        values[~valid] = rng.choice(specials(width), int((~valid).sum()))
    return values, valid, width, e, kernel


@settings(max_examples=examples(300))
@given(drawn=decimal_values(kernels=(0, 1)), compressed=st.booleans())
def test_property_kernel_round_trips(drawn, compressed: bool) -> None:
    values, valid, width, e, kernel = drawn
    n = len(values)
    keep = np.ones(n, dtype=bool) if valid is None else valid
    payload = decimal_floats.encode_float_decimal(
        values, valid, e, width, compressed=compressed, kernel=kernel
    )
    misses = int((~decimal_floats._to_decimal(values, e, width, kernel)[1] & keep).sum())
    if n >= 64 and misses <= n // 32:  # at the generating exponent every decimal has its k
        assert payload is not None
    if payload is not None:
        layout = decimal_floats.read_layout(payload, len(payload), n, "p")
        assert layout.exceptions == misses and layout.kernel == kernel
        assert same_bits(decode(payload, n)[keep], values[keep])
        assert decimal_floats.uses_multiply(payload) == (kernel == 1)
    found = decimal_floats.find_exponent(values, valid, width)
    if misses == 0:  # the smallest exponent that works is at most the generating one
        assert found is not None
        assert found[0] <= e or found[1] != kernel  # DIVIDE may fit MULTIPLY's values too
    enc, chosen = decimal_floats.encode_floats(
        values.tobytes(), width, valid, compressed=compressed
    )
    page = encode_page(chosen, num_values=n, codec=Compression.NONE, encoding=enc)
    plain = decode_page(memoryview(page), expected_values=n, expected_size=n * width, where="p")
    assert same_bits(np.frombuffer(plain, _FLOATS[width])[keep], values[keep])
    into = np.full(n * width, 0xA5, np.uint8)  # a scan's run buffer (float64: in place)
    decode_page_into(memoryview(page), into, expected_values=n, expected_size=n * width, where="p")
    assert into.tobytes() == bytes(plain)
    if enc == Encoding.FLOAT_DECIMAL:
        rows = np.unique(np.random.default_rng(n).integers(0, n, 50))
        got = points.fixed_values(memoryview(page), rows, n, width, None, "p")
        assert same_bits(np.frombuffer(got, _FLOATS[width])[keep[rows]], values[rows][keep[rows]])


@st.composite
def decimal_tables(draw) -> pa.Table:
    n = draw(st.integers(1, 2000))
    columns = {}
    for i in range(3):
        values, valid, width, _, _ = draw(decimal_values(n, (0, 1)))
        columns[f"c{i}_f{width * 8}"] = pa.array(values, mask=None if valid is None else ~valid)
    return pa.table(columns)


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    table=decimal_tables(),
    page_size=st.sampled_from([512, 2048, 8192]),
    codec=st.sampled_from([("none", 0), ("zstd", 0), ("zstd", 256)]),
    stripe_rows=st.integers(100, 3000),
    data=st.data(),
)
def test_property_files_round_trip_and_points_equal_whole_pages(
    tmp_path: Path, table: pa.Table, page_size: int, codec, stripe_rows: int, data
) -> None:
    path = tmp_path / "prop.fermion"
    compression, block = codec
    fermion.write_table(
        table,
        path,
        page_size=page_size,
        max_stripe_rows=stripe_rows,
        compression=compression,
        compression_block_size=block,
        compression_block_overhead=float("inf"),
    )
    assert_same(fermion.read_table(path), table)
    n = table.num_rows
    idx = data.draw(st.lists(st.integers(0, n - 1), max_size=80))
    check_take(path, table, idx)
    decimal = any("FLOAT_DECIMAL" in e for e in encodings_of(path).values())
    required = fermion.FileReader(path).metadata.required_features
    assert bool(required & RequiredFeature.DECIMAL_FLOATS) == decimal


# -- the writer -------------------------------------------------------------------------


def float_table(n: int = 30_000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    price = np.round(rng.random(n) * 1000, 2)
    price[::250] = np.nan
    return pa.table(
        {
            "price": pa.array(price, mask=rng.random(n) < 0.1),
            "temp32": pa.array(np.round(rng.normal(20, 5, n), 1).astype(np.float32)),
            "sorted": pa.array(np.round(np.cumsum(rng.integers(0, 5, n)) * 0.05, 2)),
            "runs": pa.array(np.repeat(np.round(rng.random(n // 100 + 1) * 1e4, 1), 100)[:n]),
            "random": pa.array(rng.random(n)),
            "random32": pa.array(rng.random(n, dtype=np.float32)),
        }
    )


def _page_rows(path: Path, column: str) -> list[int]:
    """Rows of every DATA page of a flat column."""
    return [b - a for (a, b), *_ in _page_stats(path, column)]


def test_decimal_pages_are_sized_by_their_encoded_width(tmp_path: Path) -> None:
    """Like integer pages, a decimal float chunk's pages hold about page_size bytes
    encoded: 2-decimal prices below 1,000 (17-bit integers) get 64 * 8 // 17 = 3 times the
    values of a plain page, at most 8 times (1-bit integers); other floats keep plain pages."""
    n = 40_000
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "price": np.round(rng.random(n) * 1000, 2),
            "flag": rng.integers(0, 2, n).astype(np.float64),  # k in 0..1: 1 bit
            "random": rng.random(n),
        }
    )
    path = tmp_path / "p.fermion"
    fermion.write_table(table, path, page_size=8 << 10)  # plain pages: 1,024 float64
    assert_same(fermion.read_table(path), table)
    enc = encodings_of(path)
    assert enc[("price", "DATA")] == enc[("flag", "DATA")] == {"FLOAT_DECIMAL"}
    assert max(_page_rows(path, "random")) == 1024
    assert max(_page_rows(path, "price")) == (8 << 10) * 8 // 17
    assert max(_page_rows(path, "flag")) == 8 * 1024
    idx = np.sort(rng.choice(n, 300, replace=False))
    assert_same(fermion.FileReader(path).take(idx), table.take(idx))


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_writer_chooses_float_decimal_for_decimals_only(tmp_path: Path, compression: str) -> None:
    table = float_table()
    path = tmp_path / "f.fermion"
    fermion.write_table(table, path, page_size=64 << 10, compression=compression)
    assert_same(fermion.read_table(path), table)
    enc = encodings_of(path)
    for column in ("price", "temp32", "sorted"):
        assert enc[(column, "DATA")] == {"FLOAT_DECIMAL"}, column
    assert enc[("random", "DATA")] <= {"PLAIN", "BYTE_SPLIT"}
    assert enc[("random32", "DATA")] <= {"PLAIN", "BYTE_SPLIT"}
    required = RequiredFeature(fermion.FileReader(path).metadata.required_features)
    assert RequiredFeature.DECIMAL_FLOATS in required and RequiredFeature.ENCODINGS in required
    plain = tmp_path / "p.fermion"
    fermion.write_table(
        table.select(["price", "sorted"]),
        plain,
        page_size=64 << 10,
        compression=compression,
        column_encodings={"price": "plain", "sorted": "plain"},
    )
    both = tmp_path / "b.fermion"
    fermion.write_table(
        table.select(["price", "sorted"]), both, page_size=64 << 10, compression=compression
    )
    assert both.stat().st_size < 0.8 * plain.stat().st_size


def test_files_without_decimal_pages_do_not_require_the_feature(tmp_path: Path) -> None:
    table = float_table(5_000)
    for name, options in {
        "random": {"columns": ["random", "random32"]},
        "off": {"encodings": False},
        "plain": {"column_encodings": {c: "plain" for c in table.column_names}},
    }.items():
        data = table.select(options.pop("columns")) if "columns" in options else table
        path = tmp_path / f"{name}.fermion"
        fermion.write_table(data, path, **options)
        assert not any("FLOAT_DECIMAL" in e for e in encodings_of(path).values())
        required = fermion.FileReader(path).metadata.required_features
        assert not required & RequiredFeature.DECIMAL_FLOATS, name
        assert_same(fermion.read_table(path), data)


def test_a_1_2_reader_refuses_decimal_floats_only(tmp_path: Path, monkeypatch) -> None:
    table = float_table(5_000)
    with_decimals, without = tmp_path / "d.fermion", tmp_path / "r.fermion"
    fermion.write_table(table, with_decimals)
    fermion.write_table(table.select(["random"]), without)
    known_1_2 = footer.KNOWN_REQUIRED_FEATURES & ~RequiredFeature.DECIMAL_FLOATS
    monkeypatch.setattr(footer, "KNOWN_REQUIRED_FEATURES", int(known_1_2))
    with pytest.raises(fermion.UnsupportedVersionError):
        fermion.FileReader(with_decimals)
    assert_same(fermion.read_table(without), table.select(["random"]))


def _cast_prices(n: int, seed: int) -> pa.Table:
    """Two-decimal prices as Arrow casts decimal128 to float64 (k * 0.01, kernel MULTIPLY;
    about one value in seven is not k / 100), with nulls, next to quantities that DIVIDE
    encodes."""
    from decimal import Decimal

    rng = np.random.default_rng(seed)
    cents = rng.integers(90_000, 10_500_000, n).tolist()
    dec = pa.array([Decimal(c).scaleb(-2) for c in cents], pa.decimal128(12, 2))
    price = dec.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return pa.table(
        {
            "price": pa.array(price, mask=rng.random(n) < 0.05),
            "qty": pa.array(np.round(rng.random(n) * 50, 1)),
        }
    )


def test_arrow_cast_decimals_use_the_multiply_kernel(tmp_path: Path) -> None:
    """Arrow's decimal -> float64 cast (k * 0.01): too many values for DIVIDE's exceptions,
    so the writer picks MULTIPLY (format 1.6, required bit DECIMAL_MULTIPLY) and every
    read path returns the same bits."""
    table = _cast_prices(30_000, 5)
    values = table.column("price").to_numpy(zero_copy_only=False)
    k = np.rint(values * 100)
    ok = ~np.isnan(values)
    assert np.mean(k[ok] / 100 != values[ok]) > 1 / 32  # DIVIDE cannot encode them
    path = tmp_path / "m.fermion"
    fermion.write_table(table, path, page_size=16 << 10, max_stripe_rows=20_000)
    assert encodings_of(path)[("price", "DATA")] == {"FLOAT_DECIMAL"}
    with fermion.FileReader(path) as r:
        assert r.metadata.format_version == "1.6"
        assert r.metadata.required_features & RequiredFeature.DECIMAL_MULTIPLY
        assert_same(r.read(), table)
        idx = np.sort(np.random.default_rng(1).choice(30_000, 500, replace=False))
        assert_same(r.take(idx), table.take(idx))
    for options in ({"point_reads": False}, {"verify_checksums": False}):
        with fermion.FileReader(path, **options) as r:
            assert_same(r.take(idx), table.take(idx))
    check_take(path, table, idx)


def test_divide_kernel_files_stay_1_5_and_a_1_5_reader_refuses_multiply(
    tmp_path: Path, monkeypatch
) -> None:
    """Without MULTIPLY pages a 1.6 writer writes exactly what a 1.5 writer did (no
    DECIMAL_MULTIPLY bit, footer minor 5 or lower); a 1.5 reader refuses a file with them
    from the footer."""
    divide, multiply = tmp_path / "d.fermion", tmp_path / "m.fermion"
    fermion.write_table(float_table(5_000), divide)
    fermion.write_table(_cast_prices(5_000, 2), multiply)
    with fermion.FileReader(divide) as r:
        assert not r.metadata.required_features & RequiredFeature.DECIMAL_MULTIPLY
        assert r.metadata.format_version in ("1.3", "1.4", "1.5")
    known_1_5 = footer.KNOWN_REQUIRED_FEATURES & ~RequiredFeature.DECIMAL_MULTIPLY
    monkeypatch.setattr(footer, "KNOWN_REQUIRED_FEATURES", int(known_1_5))
    with pytest.raises(fermion.UnsupportedVersionError):
        fermion.FileReader(multiply)
    assert_same(fermion.read_table(divide), float_table(5_000))


def test_inspect_shows_the_encoding(tmp_path: Path, capsys) -> None:
    from fermion.cli import main

    path = tmp_path / "i.fermion"
    fermion.write_table(float_table(5_000), path)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "DECIMAL_FLOATS" in out
    price = [
        line for line in out.splitlines() if line.strip().startswith("price") and "DATA" in line
    ]
    assert len(price) == 1 and "FLOAT_DECIMAL" in price[0]


def _page_stats(path: Path, column: str) -> list[tuple[tuple[int, int], float, float, int]]:
    """(rows, min, max, stats flags) of every DATA page of a flat float column."""
    out = []
    with fermion.FileReader(path) as r:
        (proj,) = r.file_meta.projections([column])
        (meta,) = r.file_meta.column_metas([proj])
        spec = proj.tree.stream(StreamType.DATA)
        assert spec is not None
        desc = meta.streams[spec.index]
        first = 0
        for s, n in enumerate(r.file_meta.stripe_rows([meta]).tolist()):
            pages = desc.pages(s)
            ends = np.cumsum(pages["row_count"].astype(np.int64))
            for j, page in enumerate(pages):
                rows = (first + int(ends[j] - page["row_count"]), first + int(ends[j]))
                lo, hi = (np.array([page[f]], "<i8").view("<f8")[0] for f in ("min_val", "max_val"))
                out.append((rows, float(lo), float(hi), int(page["stats_flags"])))
            first += n
    return out


def test_page_statistics_and_filters_stay_exact(tmp_path: Path) -> None:
    table = float_table(20_000)
    path = tmp_path / "s.fermion"
    # decimal pages hold up to 8x the plain values (sized by their encoded width): 1 KiB
    # pages still cut every stripe into several
    fermion.write_table(table, path, page_size=1 << 10, max_stripe_rows=7_000)
    assert encodings_of(path)[("temp32", "DATA")] == {"FLOAT_DECIMAL"}
    for column in ("price", "temp32", "sorted"):
        stats = _page_stats(path, column)
        assert len(stats) > 3
        values = table.column(column)
        for (a, b), lo, hi, flags in stats:
            page = values.slice(a, b - a).drop_null().to_numpy().astype(np.float64)
            if np.isnan(page).any():
                assert flags & StatsFlag.HAS_NAN
                continue
            assert flags & StatsFlag.HAS_MINMAX
            assert (lo, hi) == (page.min(), page.max())
    for expr in (
        (pc.field("temp32") > 30) & (pc.field("temp32") <= 31.5),
        pc.field("sorted") < 100.25,
        pc.field("price") == 500.5,
    ):
        assert_same(fermion.read_table(path, filter=expr), table.filter(expr))


# -- point reads ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [("none", 0), ("zstd", 0), ("zstd", 512)])
def test_take_agrees_with_full_reads(tmp_path: Path, codec) -> None:
    table = float_table(20_000)
    path = tmp_path / "t.fermion"
    compression, block = codec
    fermion.write_table(
        table,
        path,
        page_size=16 << 10,
        max_stripe_rows=9_000,
        compression=compression,
        compression_block_size=block,
        compression_block_overhead=float("inf"),
    )
    rng = np.random.default_rng(5)
    exceptions = np.arange(0, 20_000, 250)  # the NaN rows of "price"
    idx = np.concatenate([rng.integers(0, 20_000, 400), exceptions[:40], [0, 19_999, 8_999, 9_000]])
    check_take(path, table, idx)
    check_take(path, table, [])
    for column in ("price", "sorted", "runs"):
        span = page_spans(path, column)[1]
        assert span["encoding"] == Encoding.FLOAT_DECIMAL, column
        a, b = span["rows"]
        check_take(path, table, np.arange(a, b)[::-1], columns=[column])


def _nested_of(path: Path, column: str) -> set[str]:
    data = path.read_bytes()
    out = set()
    for span in page_spans(path, column):
        if span["encoding"] == Encoding.FLOAT_DECIMAL and span["compression"] == Compression.NONE:
            payload = data[span["offset"] + PAGE_HEADER_SIZE : span["offset"] + span["size"]]
            n = span["rows"][1] - span["rows"][0]
            out.add(decimal_floats.read_layout(payload, len(payload), n, "p").int_encoding.name)
    return out


def test_point_reads_gather_only_the_wanted_integers(tmp_path: Path, monkeypatch) -> None:
    table = float_table(50_000)
    path = tmp_path / "g.fermion"
    # checksum_block_size=0: pages stored NONE, whose payloads _nested_of parses
    fermion.write_table(table, path, page_size=1 << 20, compression="none", checksum_block_size=0)
    assert _nested_of(path, "price") == {"FOR"} and _nested_of(path, "runs") == {"RLE"}
    assert _nested_of(path, "sorted") == {"DELTA"}
    whole: list[str] = []
    gathered: list[int] = []
    unpacked: list[int] = []
    decode_whole, gather, unpack = points.PagePayload.decode_whole, bitpack.gather, bitpack.unpack
    monkeypatch.setattr(
        points.PagePayload,
        "decode_whole",
        lambda p: whole.append(p.encoding.name) or decode_whole(p),
    )
    monkeypatch.setattr(
        bitpack,
        "gather",
        lambda b, o, w, i, where="page": gathered.append(len(i)) or gather(b, o, w, i, where),
    )
    monkeypatch.setattr(
        bitpack,
        "unpack",
        lambda b, o, w, n, where="page": unpacked.append(n) or unpack(b, o, w, n, where),
    )
    idx = [40_000, 12, 40_000, 49_999, 250]  # 250: a NaN exception
    with fermion.FileReader(path) as r:
        r.take([0], columns=["random"])  # metadata warm-up
        gathered.clear()
        unpacked.clear()
        assert_same(r.take(idx, columns=["price"]), table.select(["price"]).take(idx))
        assert whole == [] and gathered == [4] and unpacked == []
        gathered.clear()
        assert_same(r.take([10, 5], columns=["sorted"]), table.select(["sorted"]).take([10, 5]))
        assert whole == [] and unpacked == [10]  # DELTA: deltas up to the last wanted row
        assert_same(r.take(idx, columns=["runs"]), table.select(["runs"]).take(idx))
        assert whole == ["FLOAT_DECIMAL"]  # RLE: the page is decoded whole


# -- corrupt pages ----------------------------------------------------------------------


def _pages() -> dict[str, tuple[bytes, int, int]]:
    """Valid FLOAT_DECIMAL payloads of each nested encoding: (payload, values, width)."""
    rng = np.random.default_rng(11)
    n = 1024
    prices = np.round(rng.random(n) * 1000, 2)
    prices[[3, 100, 1000]] = [np.nan, -0.0, np.inf]
    shapes = {
        "FOR": (prices, 8, 2),
        "FOR32": (np.round(rng.random(n) * 100, 1).astype(np.float32), 4, 1),
        "CONSTANT": (np.full(n, 2.5), 8, 1),
        "DELTA": (np.round(np.cumsum(rng.integers(0, 1000, n)) * 0.01, 2), 8, 2),
        "RLE": (np.repeat(np.round(rng.random(n // 64) * 1e6, 1), 64), 8, 1),
        "INT_DICTIONARY": (rng.choice(np.array([0.001, 1.5, 300.25, 700.125]), n), 8, 3),
    }
    out = {}
    for name, (values, width, e) in shapes.items():
        payload = decimal_floats.encode_float_decimal(values, None, e, width, compressed=False)
        assert payload is not None
        layout = decimal_floats.read_layout(payload, len(payload), n, name)
        assert layout.int_encoding.name == name.rstrip("32"), name
        assert same_bits(decode(payload, n), values)
        out[name] = (payload, n, width)
    return out


PAGES = _pages()


def _both_reads_raise(payload: bytes, n: int, width: int) -> None:
    page = memoryview(
        encode_page(payload, num_values=n, codec=Compression.NONE, encoding=Encoding.FLOAT_DECIMAL)
    )
    with pytest.raises(fermion.InvalidFileError):
        decode_page(page, expected_values=n, expected_size=n * width, where="p")
    with pytest.raises(fermion.InvalidFileError):
        points.fixed_values(page, np.arange(n), n, width, None, "p")
    with pytest.raises(fermion.InvalidFileError):  # a scan decodes into its run buffer
        decode_page_into(
            page,
            np.zeros(n * width, np.uint8),
            expected_values=n,
            expected_size=n * width,
            where="p",
        )


def _with_fields(payload: bytes, at: int, dtype: np.dtype, **fields: int) -> bytes:
    h = np.frombuffer(payload, dtype, count=1, offset=at).copy()
    for k, v in fields.items():
        h[k] = v
    return payload[:at] + h.tobytes() + payload[at + dtype.itemsize :]


def _outer(payload: bytes, **fields: int) -> bytes:
    return _with_fields(payload, 0, ENCODING_HEADER_DTYPE, **fields)


def _sub(payload: bytes, **fields: int) -> bytes:
    return _with_fields(payload, _H, FLOAT_DECIMAL_HEADER_DTYPE, **fields)


def _nested(payload: bytes, n: int, **fields: int) -> bytes:
    at = decimal_floats.read_layout(payload, len(payload), n, "p").nested_at
    return _with_fields(payload, at, ENCODING_HEADER_DTYPE, **fields)


def test_reference_pages_decode_on_both_paths() -> None:
    for payload, n, width in PAGES.values():
        page = memoryview(
            encode_page(
                payload, num_values=n, codec=Compression.NONE, encoding=Encoding.FLOAT_DECIMAL
            )
        )
        whole = decode_page(page, expected_values=n, expected_size=n * width, where="p")
        assert bytes(whole) == points.fixed_values(page, np.arange(n), n, width, None, "p")
        into = np.zeros(n * width, np.uint8)
        decode_page_into(page, into, expected_values=n, expected_size=n * width, where="p")
        assert into.tobytes() == bytes(whole)


OUTER_LIES = {
    "exponent 19": {"base": 19},
    "exponent 63": {"base": 63},
    "exponent 255": {"base": 255},
    "exponent 2**40": {"base": 2**40},
    "exponent -1": {"base": -1},
    "exceptions -1": {"aux": -1},
    "exceptions count + 1": {"aux": 1025},
    "exceptions 2**31": {"aux": 2**31},
    "exceptions 1000": {"aux": 1000},
    "count + 1": {"count": 1025},
    "count - 1": {"count": 1023},
    "out_width 2": {"out_width": 2},
    "out_width 16": {"out_width": 16},
    "width 1": {"width": 1},
    "aux_width 8": {"aux_width": 8},
    "flags SIGNED": {"flags": 1},
    "flags LENGTHS": {"flags": 2},
    "flags BITS": {"flags": 4},
}


@pytest.mark.parametrize("name", sorted(PAGES))
@pytest.mark.parametrize("lie", sorted(OUTER_LIES))
def test_lying_float_decimal_headers_raise(name: str, lie: str) -> None:
    payload, n, width = PAGES[name]
    _both_reads_raise(_outer(payload, **OUTER_LIES[lie]), n, width)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_lying_exception_counts_and_other_widths_raise(name: str) -> None:
    payload, n, width = PAGES[name]
    x = decimal_floats.read_layout(payload, len(payload), n, "p").exceptions
    for lie in (x + 1, x - 1) if x else (1,):
        _both_reads_raise(_outer(payload, aux=lie), n, width)
    _both_reads_raise(_outer(payload, out_width=12 - width), n, width)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_lying_nested_encodings_raise(name: str) -> None:
    payload, n, width = PAGES[name]
    written = decimal_floats.read_layout(payload, len(payload), n, "p").int_encoding
    for lie in (0, 5, 6, 7, 9, 10, 255, *(e for e in decimal_floats.INT_ENCODINGS if e != written)):
        _both_reads_raise(_sub(payload, int_encoding=lie), n, width)
    for field in ("reserved2", "reserved4"):
        _both_reads_raise(_sub(payload, **{field: 1}), n, width)
    for kernel in (2, 3, 255):  # 0 DIVIDE and 1 MULTIPLY are the only kernels
        _both_reads_raise(_sub(payload, kernel=kernel), n, width)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_lying_nested_headers_raise(name: str) -> None:
    payload, n, width = PAGES[name]
    at = decimal_floats.read_layout(payload, len(payload), n, "p").nested_at
    h = encodings.read_header(payload[at:])
    lies: list[dict[str, int]] = [
        {"count": n + 1},
        {"count": n - 1},
        {"out_width": 4},
        {"flags": 4},  # BITS without SIGNED
        {"flags": 1},  # SIGNED without BITS
        {"flags": 7},  # LENGTHS
    ]
    if int(h["width"]):
        lies += [{"width": w} for w in (int(h["width"]) + 1, int(h["width"]) - 1, 64) if w]
    for lie in lies:
        _both_reads_raise(_nested(payload, n, **lie), n, width)


def test_nested_integers_beyond_2_53_raise() -> None:
    payload, n, width = PAGES["CONSTANT"]
    _both_reads_raise(_nested(payload, n, base=2**53), n, width)
    _both_reads_raise(_nested(payload, n, base=-(2**53)), n, width)
    assert decode(_nested(payload, n, base=2**53 - 1), n)[0] == (2**53 - 1) / 10
    payload, n, width = PAGES["FOR"]
    _both_reads_raise(_nested(payload, n, base=2**60), n, width)


@pytest.mark.parametrize("where", ["out of range", "max u32", "unsorted", "duplicate"])
def test_lying_exception_positions_raise(where: str) -> None:
    payload, n, width = PAGES["FOR"]
    positions = np.frombuffer(payload, "<u4", 3, 32).copy()
    if where == "out of range":
        positions[-1] = n
    elif where == "max u32":
        positions[-1] = 2**32 - 1
    elif where == "unsorted":
        positions[[0, 1]] = positions[[1, 0]]
    else:
        positions[1] = positions[0]
    _both_reads_raise(payload[:32] + positions.tobytes() + payload[44:], n, width)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_truncated_and_extended_payloads_raise(name: str) -> None:
    payload, n, width = PAGES[name]
    step = max(1, len(payload) // 200)
    for cut in [*range(0, len(payload), step), len(payload) - 1]:
        _both_reads_raise(payload[:cut], n, width)
    _both_reads_raise(payload + b"\0", n, width)


# -- corrupt files ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def decimal_file(tmp_path_factory) -> tuple[Path, pa.Table, dict]:
    table = float_table(6_000).select(["price"])
    path = tmp_path_factory.mktemp("fd") / "good.fermion"
    # checksum_block_size=0: pages stored NONE, so that the payloads can be rewritten here
    fermion.write_table(table, path, page_size=16 << 10, compression="none", checksum_block_size=0)
    span = next(s for s in page_spans(path, "price") if s["encoding"] == Encoding.FLOAT_DECIMAL)
    return path, table, span


def _rewrite_payload(data: bytes, span: dict, payload: bytes) -> bytes:
    """The file with one page's payload replaced (same size) and its CRC recomputed."""
    start = span["offset"]
    page = bytearray(data[start : start + span["size"]])
    page[PAGE_HEADER_SIZE:] = payload
    head = np.frombuffer(bytes(page[:PAGE_HEADER_SIZE]), PAGE_HEADER_DTYPE).copy()
    head["crc"] = zlib.crc32(bytes(page[4:]))
    page[:PAGE_HEADER_SIZE] = head.tobytes()
    return data[:start] + bytes(page) + data[start + span["size"] :]


def _payload_of(data: bytes, span: dict) -> bytes:
    return data[span["offset"] + PAGE_HEADER_SIZE : span["offset"] + span["size"]]


@pytest.mark.parametrize("lie", ["exponent", "position", "nested"])
def test_lying_pages_in_a_file_raise(tmp_path: Path, decimal_file, lie: str) -> None:
    path, table, span = decimal_file
    data = path.read_bytes()
    payload = _payload_of(data, span)
    n = span["rows"][1] - span["rows"][0]
    if lie == "exponent":
        bad = _outer(payload, base=19)
    elif lie == "position":
        layout = decimal_floats.read_layout(payload, len(payload), n, "p")
        assert layout.exceptions > 0
        bad = payload[:32] + np.uint32(n).tobytes() + payload[36:]
    else:
        bad = _sub(payload, int_encoding=Encoding.DELTA)
    out = tmp_path / "bad.fermion"
    out.write_bytes(_rewrite_payload(data, span, bad))
    rows = list(range(*span["rows"]))
    for options in ({"point_reads": True}, {"point_reads": False}):
        with pytest.raises(fermion.InvalidFileError):
            fermion.read_table(out, **options)
        with fermion.FileReader(out, **options) as r, pytest.raises(fermion.InvalidFileError):
            r.take(rows)


def test_every_byte_of_a_page_replaced_raises_only_typed_errors(
    tmp_path: Path, decimal_file
) -> None:
    path, table, span = decimal_file
    data = path.read_bytes()
    payload = _payload_of(data, span)
    rng = np.random.default_rng(0)
    out = tmp_path / "fuzz.fermion"
    rows = list(range(*span["rows"]))[::7]
    layout = decimal_floats.read_layout(
        payload, len(payload), span["rows"][1] - span["rows"][0], "p"
    )
    # every byte of the headers and exceptions, and a sample of the packed integers
    positions = [
        *range(layout.nested_at + _H),
        *rng.integers(layout.nested_at + _H, len(payload), 40),
    ]
    errors = 0
    for pos in positions:
        bad = bytearray(payload)
        bad[int(pos)] ^= int(rng.integers(1, 256))
        out.write_bytes(_rewrite_payload(data, span, bytes(bad)))
        for options in ({"point_reads": True}, {"point_reads": False}):
            try:
                with fermion.FileReader(out, **options) as r:
                    r.read()
                    r.take(rows)
            except fermion.FermionError:
                errors += 1
    assert errors > 0


def test_a_chunk_stops_searching_after_two_pages_that_are_not_decimals(
    tmp_path: Path, monkeypatch
) -> None:
    """The exponent search runs on a chunk's pages until two in a row are not decimals;
    a decimal page resets the count. (The first call, on the whole chunk, estimates the
    integers' width that decimal pages are sized by.)"""
    calls: list[int] = []
    real = decimal_floats.find_exponent
    monkeypatch.setattr(
        decimal_floats, "find_exponent", lambda v, m, w: calls.append(len(v)) or real(v, m, w)
    )
    rng = np.random.default_rng(9)
    random = rng.random(8 * 1024)  # 8 pages of 1,024 float64 at page_size 8 KiB
    fermion.write_table(pa.table({"r": random}), tmp_path / "r.fermion", page_size=8 << 10)
    assert calls == [8 * 1024, 1024, 1024]
    calls.clear()
    prices = np.round(rng.random(14 * 585) * 100, 2)  # 14-bit integers: 585 per 1 KiB page
    path = tmp_path / "p.fermion"
    fermion.write_table(pa.table({"p": prices}), path, page_size=1 << 10)
    pages = _page_rows(path, "p")
    assert pages == [585] * 14
    assert len(calls) == 1 + 14  # every page a decimal page: the search never stops
    assert encodings_of(path)[("p", "DATA")] == {"FLOAT_DECIMAL"}


@pytest.mark.parametrize("kernel", [decimal_floats.KERNEL_DIVIDE, decimal_floats.KERNEL_MULTIPLY])
@pytest.mark.parametrize("bits", list(range(1, decimal_floats.TABLE_MAX_BITS + 3)))
def test_narrow_for_pages_decode_through_the_table(monkeypatch, bits: int, kernel: int) -> None:
    """A scan decodes a FLOAT_DECIMAL page whose FOR integers are at most TABLE_MAX_BITS
    wide by looking each one up in a table of the kernel's floats: the same bits as the
    page decoded whole (kernel applied per value), exceptions included, for widths that
    divide a byte (a table row per packed byte), other widths, and a value count that
    leaves a partly filled last byte; wider pages take the kernel path."""
    rng = np.random.default_rng(bits)
    n = 5_003  # not a multiple of 8: the last packed byte is partly filled
    base = -(10**6) + bits
    k = base + rng.integers(0, 1 << bits, n)
    k[:2] = base, base + (1 << bits) - 1  # the page's packed width is exactly ``bits``
    values = decimal_floats.decimal_kernel(k, 3, 8, kernel)
    values[[7, 100, n - 1]] = [np.nan, np.inf, 1e300]  # exceptions
    payload = decimal_floats.encode_float_decimal(
        values, None, 3, 8, compressed=False, kernel=kernel
    )
    assert payload is not None
    layout = decimal_floats.read_layout(payload, len(payload), n, "p")
    nested = encodings.read_header(memoryview(payload)[layout.nested_at :], "p")
    assert layout.int_encoding == Encoding.FOR and encodings.packed_bits(nested) == bits
    assert layout.exceptions == 3
    tabled = []
    real = decimal_floats._decode_table_into
    monkeypatch.setattr(
        decimal_floats,
        "_decode_table_into",
        lambda *a: tabled.append(real(*a)) or tabled[-1],
    )
    page = memoryview(
        encode_page(payload, num_values=n, codec=Compression.NONE, encoding=Encoding.FLOAT_DECIMAL)
    )
    whole = decode_page(page, expected_values=n, expected_size=8 * n, where="p")
    into = np.full(8 * n, 0xA5, np.uint8)
    decode_page_into(page, into, expected_values=n, expected_size=8 * n, where="p")
    assert tabled == [bits <= decimal_floats.TABLE_MAX_BITS]
    assert into.tobytes() == bytes(whole)
    assert same_bits(np.frombuffer(bytes(whole), np.float64), values)


def test_table_decode_refuses_lying_nested_headers() -> None:
    """The table path checks the nested FOR header as the kernel path does: a value count
    or a payload size that disagrees with it is an InvalidFileError, never a short read;
    a FOR range reaching 2**53 is left to the per-value check."""
    n = 4_000
    k = np.arange(n) % 9
    payload = decimal_floats.encode_float_decimal(
        decimal_floats.decimal_kernel(k, 2, 8), None, 2, 8, compressed=False
    )
    assert payload is not None
    for lie in ({"count": n + 1}, {"count": n - 1}, {"width": 3}, {"base": (1 << 53) - 4}):
        bad = _nested(payload, n, **lie)
        page = memoryview(
            encode_page(bad, num_values=n, codec=Compression.NONE, encoding=Encoding.FLOAT_DECIMAL)
        )
        with pytest.raises(fermion.InvalidFileError):
            decode_page_into(
                page, np.zeros(8 * n, np.uint8), expected_values=n, expected_size=8 * n, where="p"
            )
    with pytest.raises(fermion.InvalidFileError):
        decode_page_into(
            memoryview(
                encode_page(
                    payload[:-1],
                    num_values=n,
                    codec=Compression.NONE,
                    encoding=Encoding.FLOAT_DECIMAL,
                )
            ),
            np.zeros(8 * n, np.uint8),
            expected_values=n,
            expected_size=8 * n,
            where="p",
        )


def test_random_float32_pages_rarely_reach_the_whole_sample_search(monkeypatch) -> None:
    """The first pass (64 sampled values) rejects most random float32 pages in [0, 1):
    with 16 values, 44 of these 100 searches (50 pages, both kernels) went on to the whole
    sample, with 64, 10 (docs/FORMAT.md §5.3). The choice itself is the same."""
    sizes: list[int] = []
    real = decimal_floats._best_exponent

    def counted(trials, slack=1, kernel=0):
        sizes.append(len(trials.values))
        return real(trials, slack, kernel)

    monkeypatch.setattr(decimal_floats, "_best_exponent", counted)
    rng = np.random.default_rng(0)
    for _ in range(50):
        assert decimal_floats.find_exponent(rng.random(32000, dtype=np.float32), None, 4) is None
    assert sum(1 for m in sizes if 60 <= m < 100) == 100  # the first pass, both kernels
    assert sum(1 for m in sizes if m > 1000) <= 12
