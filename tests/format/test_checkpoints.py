"""Checkpoints (format 1.3): running sums in DELTA pages and FOR length pages.

Round trips at and around every checkpoint boundary (0, 1, 255, 256, 257, 511, 512, ...
packed integers) and at widths up to 64 bits (sums that wrap modulo 2**64), the byte
layout of FORMAT.md §5.1 (its worked example), the writer's rule (which pages carry them,
the CHECKPOINTS footer bit), and point reads that agree with whole-page decoding.

Bad inputs tried: a changed checkpoint behind a valid CRC (full decoding rejects it; a
point read with the CRC skipped may return wrong values but never reads outside the page,
and with checksums on the page CRC rejects it), the flag on FOR pages without LENGTHS and
on CONSTANT, RLE and INT_DICTIONARY pages, a truncated or extended checkpoint section,
the flag cleared (the section then makes the payload size wrong), and a 1.2 reader's view
(an unknown required bit). Each raises ``fermion.InvalidFileError`` (or
``UnsupportedVersionError`` for the unknown bit).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.format.encoding import bitpack, encodings, int_codec
from fermion.format.encoding.encodings import CHECKPOINT_INTERVAL, HEADER_SIZE
from fermion.format.encoding.pages import (
    PAGE_HEADER_SIZE,
    decode_page,
    decode_page_into,
    decompress_body,
    encode_page,
    read_page_head,
)
from fermion.format.metadata.structs import (
    ENCODING_HEADER_DTYPE,
    Encoding,
    EncodingFlag,
    RequiredFeature,
    StreamType,
)
from tests.format.test_points import check_take, page_spans
from tests.support.budget import examples

C = CHECKPOINT_INTERVAL
SIZES = [0, 1, 2, 255, 256, 257, 511, 512, 513, 1000, 4096, 5000]


def delta_values(n: int, step_bits: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if step_bits >= 63:  # any int64: deltas need 64 bits and their sums wrap
        return rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    steps = rng.integers(0, 1 << step_bits, n, dtype=np.int64)
    return np.cumsum(steps) - 17


def encode(values: np.ndarray, **kw) -> tuple[Encoding, bytes]:
    return encodings.encode_ints(values, out_width=8, compressed=False, checkpoints=True, **kw)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("step_bits", [1, 5, 20, 63])
def test_delta_pages_round_trip_with_checkpoints(n: int, step_bits: int) -> None:
    values = delta_values(n, step_bits, n)  # sorted, or any int64 (deltas wrap)
    flags = EncodingFlag.BITS | EncodingFlag.SIGNED | EncodingFlag.CHECKPOINTS
    if n == 0:
        return  # no page of zero values is ever written
    payload = int_codec._encode_as(Encoding.DELTA, values, 8, int(flags), 0, None)
    h = encodings.read_header(payload)
    flagged = bool(int(h["flags"]) & EncodingFlag.CHECKPOINTS)
    assert flagged == (n - 1 >= C)  # only pages with at least one checkpoint carry the flag
    assert len(payload) == encodings.int_payload_size(Encoding.DELTA, h)
    assert np.array_equal(encodings.decode_ints(payload, Encoding.DELTA), values)
    m, bits, at = encodings.checkpoint_layout(Encoding.DELTA, h)
    assert m == ((n - 1) // C if flagged else 0)
    if m:
        deltas = np.diff(values).view(np.uint64) - np.uint64(int(h["aux"]) % 2**64)
        expected = [int(deltas[: j * C].sum(dtype=np.uint64)) for j in range(1, m + 1)]
        assert bitpack.unpack(payload, at, bits, m).tolist() == expected


@pytest.mark.parametrize("n", [n for n in SIZES if n >= 64])  # smaller: PLAIN
def test_for_length_pages_round_trip_with_checkpoints(n: int) -> None:
    rng = np.random.default_rng(n)
    lengths = rng.integers(3, 40, n).astype(np.int64)
    enc, payload = encode(lengths, lengths=True)
    assert enc == Encoding.FOR
    h = encodings.read_header(payload)
    assert bool(int(h["flags"]) & EncodingFlag.CHECKPOINTS) == (n >= C)
    assert len(payload) == encodings.int_payload_size(Encoding.FOR, h)
    assert np.array_equal(encodings.decode_ints(payload, Encoding.FOR), lengths)


def test_only_delta_and_length_pages_get_checkpoints() -> None:
    rng = np.random.default_rng(1)
    wide = rng.integers(0, 1 << 20, 4096).astype(np.int64)  # FOR, not lengths
    enc, payload = encode(wide)
    assert enc == Encoding.FOR and not encodings.has_checkpoints(payload)
    enc, payload = encode(np.full(4096, 9, dtype=np.int64))
    assert enc == Encoding.CONSTANT and not encodings.has_checkpoints(payload)
    enc, payload = encode(np.repeat(np.arange(100, dtype=np.int64) * 1000, 40))
    assert enc == Encoding.RLE and not encodings.has_checkpoints(payload)
    enc, payload = encode(np.arange(4096, dtype=np.int64) * 3)
    assert enc == Encoding.DELTA and encodings.has_checkpoints(payload)
    enc, payload = encodings.encode_ints(np.arange(4096, dtype=np.int64) * 3, out_width=8)
    assert enc == Encoding.DELTA and not encodings.has_checkpoints(payload)  # not asked for


def test_point_read_length_pages_are_for_only() -> None:
    """Lengths with few distinct values would be INT_DICTIONARY; with checkpoints (a
    point-read string column) they are FOR, whose offsets point reads compute."""
    lengths = np.random.default_rng(2).choice(np.array([3, 900, 70_000]), 5000).astype(np.int64)
    enc, _ = encodings.encode_ints(lengths, out_width=8, lengths=True, compressed=False)
    assert enc == Encoding.INT_DICTIONARY
    enc, payload = encode(lengths, lengths=True)
    assert enc == Encoding.FOR and encodings.has_checkpoints(payload)
    assert np.array_equal(encodings.decode_ints(payload, enc), lengths)


def test_the_format_md_example_layout() -> None:
    """FORMAT.md §5.1: a DELTA page of 1,000 values at w = 3 is exactly 404 bytes."""
    deltas = np.tile(np.array([0, 7, 3, 5], dtype=np.int64), 250)[:999]
    values = np.concatenate([[100], 100 + np.cumsum(deltas)])
    enc, payload = encode(values)
    assert enc == Encoding.DELTA
    h = encodings.read_header(payload)
    assert int(h["width"]) == 3 and int(h["aux"]) == 0
    assert encodings.checkpoint_layout(enc, h) == (3, 13, 399)
    assert len(payload) == 404
    sums = bitpack.unpack(payload, 399, 13, 3).tolist()
    assert sums == [int(deltas[: j * C].sum()) for j in (1, 2, 3)]


@settings(max_examples=examples(40))
@given(
    n=st.integers(1, 3000),
    step_bits=st.sampled_from([1, 3, 12, 40, 63]),
    seed=st.integers(0, 2**32 - 1),
)
def test_checkpointed_pages_round_trip(n: int, step_bits: int, seed: int) -> None:
    values = delta_values(n, step_bits, seed)
    for kw in ({}, {"lengths": True}):
        v = np.abs(values % 1000) if kw else values
        enc, payload = encode(v, **kw)
        if enc == Encoding.PLAIN:
            continue
        assert np.array_equal(encodings.decode_ints(payload, enc), v)
        assert len(payload) == encodings.int_payload_size(enc, encodings.read_header(payload))
        if enc == Encoding.DELTA:  # a scan's path: summed in place in its run buffer
            into = np.full(n, -1, dtype=np.int64)
            encodings.decode_delta_into(payload, into)
            assert np.array_equal(into, v)


# -- corrupt checkpoints ----------------------------------------------------------------


def checkpointed_delta() -> tuple[np.ndarray, bytes]:
    values = np.cumsum(np.random.default_rng(3).integers(0, 30, 2000)).astype(np.int64)
    enc, payload = encode(values)
    assert enc == Encoding.DELTA and encodings.has_checkpoints(payload)
    return values, payload


def page_of(payload: bytes, enc: Encoding, n: int) -> memoryview:
    return memoryview(encode_page(payload, num_values=n, codec=0, encoding=enc))


def test_a_changed_checkpoint_fails_full_decoding() -> None:
    values, payload = checkpointed_delta()
    h = encodings.read_header(payload)
    m, bits, at = encodings.checkpoint_layout(Encoding.DELTA, h)
    sums = bitpack.unpack(payload, at, bits, m)
    sums[2] += np.uint64(1)
    bad = payload[:at] + bitpack.pack(sums, bits)
    with pytest.raises(fermion.InvalidFileError, match="checkpoints"):
        encodings.decode_ints(bad, Encoding.DELTA)
    with pytest.raises(fermion.InvalidFileError, match="checkpoints"):
        encodings.decode_delta_into(bad, np.zeros(2000, dtype=np.int64))
    with pytest.raises(fermion.InvalidFileError, match="checkpoints"):
        decode_page(
            page_of(bad, Encoding.DELTA, 2000), expected_values=2000, expected_size=16000, where="p"
        )


@pytest.mark.parametrize(
    "change",
    [
        "truncated",
        "extended",
        "flag cleared",
        "flag on FOR values",
        "flag on constant",
        "flag on RLE",
        "flag on dictionary",
    ],
)
def test_misplaced_or_mis_sized_checkpoints_raise(change: str) -> None:
    _, payload = checkpointed_delta()
    enc = Encoding.DELTA
    flags_at = HEADER_SIZE - 1
    if change == "truncated":
        payload = payload[:-1]
    elif change == "extended":
        payload = payload + b"\0"
    elif change == "flag cleared":
        payload = (
            payload[:flags_at]
            + bytes([payload[flags_at] & ~EncodingFlag.CHECKPOINTS])
            + payload[HEADER_SIZE:]
        )
    else:
        rng = np.random.default_rng(5)
        source = {
            "flag on FOR values": rng.integers(0, 1 << 20, 2000),
            "flag on constant": np.full(2000, 3),
            "flag on RLE": np.repeat(np.arange(50) * 1000, 40),
            "flag on dictionary": rng.choice(np.array([5, 70_000, 900_000]), 2000),
        }[change].astype(np.int64)
        enc, payload = encodings.encode_ints(source, out_width=8, compressed=False)
        assert enc != Encoding.DELTA and not encodings.has_checkpoints(payload)
        payload = (
            payload[:flags_at]
            + bytes([payload[flags_at] | EncodingFlag.CHECKPOINTS])
            + payload[HEADER_SIZE:]
        )
    with pytest.raises(fermion.InvalidFileError):
        encodings.decode_ints(payload, enc)
    with pytest.raises(fermion.InvalidFileError):
        decode_page(
            page_of(payload, enc, 2000), expected_values=2000, expected_size=16000, where="p"
        )
    with pytest.raises(fermion.InvalidFileError):  # a scan's path
        decode_page_into(
            page_of(payload, enc, 2000),
            np.zeros(16000, np.uint8),
            expected_values=2000,
            expected_size=16000,
            where="p",
        )


# -- files: the writer's rule, the footer bit, point reads --------------------------------


def shapes(n: int) -> pa.Table:
    rng = np.random.default_rng(11)
    return pa.table(
        {
            "sorted": pa.array(np.cumsum(rng.integers(0, 9, n))),  # DELTA
            "random": pa.array(rng.integers(0, 1 << 20, n)),  # FOR: random access already
            "text": pa.array(
                [f"v{i}" + "x" * int(k) for i, k in enumerate(rng.integers(0, 30, n))]
            ),
            "nested": pa.array([[int(i)] * (i % 3) for i in range(n)], pa.list_(pa.int64())),
        }
    )


def test_the_writer_checkpoints_point_readable_delta_and_length_pages(tmp_path: Path) -> None:
    n = 60_000
    table = shapes(n)
    path = tmp_path / "ck.fermion"
    fermion.write_table(table, path, page_size=64 << 10)
    data = path.read_bytes()

    def flags(column: str, stream: str) -> set[bool]:
        out = set()
        for page in page_spans(path, column, StreamType[stream]):
            if page["encoding"] in (Encoding.DELTA, Encoding.FOR):
                page_bytes = memoryview(data)[page["offset"] : page["offset"] + page["size"]]
                head = read_page_head(
                    page_bytes,
                    expected_values=int(np.frombuffer(page_bytes, "<u4", 1, 12)[0]),
                    expected_size=None,
                    where="p",
                )
                payload = decompress_body(head, "p")
                out.add(encodings.has_checkpoints(payload))
        return out

    assert flags("sorted", "DATA") == {True}
    assert flags("text", "OFFSETS") == {True}
    assert flags("random", "DATA") == {False}
    with fermion.FileReader(path) as r:
        assert "CHECKPOINTS" in r.describe()["features"]
    plain = tmp_path / "plain.fermion"
    fermion.write_table(table, plain, encodings=False)
    with fermion.FileReader(plain) as r:
        assert "CHECKPOINTS" not in r.describe()["features"]
    assert fermion.read_table(path).equals(table)


@settings(max_examples=examples(15))
@given(idx=st.lists(st.integers(0, 59_999), max_size=80))
def test_point_reads_through_checkpoints_agree(tmp_path_factory, idx: list[int]) -> None:
    path = tmp_path_factory.getbasetemp() / "ck_points.fermion"
    table = shapes(60_000)
    if not path.exists():
        fermion.write_table(table, path, page_size=64 << 10)
    check_take(path, table, idx)


def test_a_reader_that_does_not_know_checkpoints_refuses_the_file(
    tmp_path: Path, monkeypatch
) -> None:
    from fermion.format.metadata import footer

    path = tmp_path / "ck.fermion"
    fermion.write_table(shapes(5000), path)
    monkeypatch.setattr(
        footer,
        "KNOWN_REQUIRED_FEATURES",
        footer.KNOWN_REQUIRED_FEATURES & ~RequiredFeature.CHECKPOINTS,
    )
    with pytest.raises(fermion.UnsupportedVersionError):
        fermion.FileReader(path)


def test_checkpoint_page_payload_offsets() -> None:
    """A page header's decoded size is the whole payload, checkpoints included."""
    _, payload = checkpointed_delta()
    page = page_of(payload, Encoding.DELTA, 2000)
    assert int(np.frombuffer(page, dtype="<u4", count=1, offset=8)[0]) == len(payload)
    assert len(page) == PAGE_HEADER_SIZE + len(payload)


@settings(max_examples=examples(40))
@given(
    n=st.integers(1, 3000),
    width=st.sampled_from([0, 1, 5, 17, 40]),
    base=st.integers(0, 1000),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_length_ranges_from_checkpoints_equal_the_running_sum(
    n: int, width: int, base: int, seed: int, data
) -> None:
    """``list_value_ranges`` of a FOR lengths page with checkpoints (each row's length and
    the sum before it, from its segment and the checkpoint before that) equals the running
    sum of the whole-decoded lengths, for rows in any segment, the short last one too."""
    from fermion.format.read.points import PagePayload, list_value_ranges

    lengths = base + np.random.default_rng(seed).integers(0, 1 << width, n, dtype=np.int64)
    enc, payload = encode(lengths, lengths=True)
    if enc != Encoding.FOR:
        return  # a CONSTANT page, say: no point-read ranges
    rows = np.array(sorted(set(data.draw(st.lists(st.integers(0, n - 1), max_size=40)))))
    rows = rows.astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    p = PagePayload(page_of(payload, enc, n), n, (n + 1) * 8, "p")
    got = list_value_ranges(p, rows, n, 8)
    assert got is not None
    assert got[0].tolist() == offsets[rows].tolist()
    assert got[1].tolist() == offsets[rows + 1].tolist()


def test_a_negative_length_minimum_is_refused_by_point_reads() -> None:
    """A FOR lengths page whose minimum (header ``base``) was changed to a negative value,
    behind a recomputed CRC, is refused: no value range before its page's start."""
    from fermion.format.read.points import PagePayload, list_value_ranges

    lengths = np.random.default_rng(4).integers(0, 9, 2000).astype(np.int64)
    enc, payload = encode(lengths, lengths=True)
    assert enc == Encoding.FOR and encodings.has_checkpoints(payload)
    header = np.frombuffer(payload, dtype=ENCODING_HEADER_DTYPE, count=1).copy()
    header["base"] = -50
    bad = header.tobytes() + payload[HEADER_SIZE:]
    p = PagePayload(page_of(bad, enc, 2000), 2000, 2001 * 8, "p")
    with pytest.raises(fermion.InvalidFileError, match="negative value lengths"):
        list_value_ranges(p, np.array([3, 700, 1999]), 2000, 8)
