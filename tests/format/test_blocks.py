"""ZSTD_BLOCKS pages (format 1.2): the blocked body, the writer's choice, corrupt pages.

Corrupt blocked pages are read through the full-decode path (``read_table`` and ``take``
with ``point_reads=False``) and the point path (``take``), in files written with page
CRCs (the lie keeps the stale CRC: the full path reports a ChecksumError, the point path,
which never checks the CRC, meets the lie itself) and without (``page_crc=False``: both
paths meet the lie). Each must raise a ``fermion.FermionError`` subclass
(InvalidFileError or ChecksumError), never another exception, never crash.

Bad inputs tried here, on a fixed-width PLAIN data page and on a string data page:

- block table lies: block_size 0, doubled, halved; num_blocks 0, one too few, one too
  many, 0xFFFFFFFF; one-byte blocks (a table that agrees with the page size but whose
  frame ends would run past the page); frame ends decreasing
  (first two swapped), the first end past the body, the last end one short of and one
  past the body length, a middle end moved one byte either way (frames overlap or are cut)
- zstd frames that lie about their content size: a middle or the last frame declaring
  one byte more than its block holds; the last frame and the page header both claiming one
  more byte (sizes agree, the content does not); a frame declaring no content size
- flipped bytes in a frame: its magic, its compressed data, its content checksum; the
  tail of the body zeroed; the page header claiming ZSTD (one frame) or NONE for the
  blocked body
- a body truncated at every length (``decode_page`` and the point readers); a body
  shorter than its block table; a zero-block table followed by stray bytes (was accepted)
- random byte flips (1..6 per file, mostly in the pages) in a small blocked file, 200
  iterations, read with ``read_table``, ``take`` and ``take(point_reads=False)``
- lying EncodingHeaders on uncompressed pages written with ``page_crc=False`` and read by
  ``take`` (and ``read_table``): FOR count +-1, width +-1, width 0 and 57, BITS cleared,
  out_width 4 for int64 and LENGTHS set on a data page (both were accepted by ``take``);
  the page header claiming PLAIN, DELTA, CONSTANT, BYTE_SPLIT or RLE for a FOR payload and
  FOR for a PLAIN one; DELTA count and width; INT_DICTIONARY with 0 entries or more
  entries than values, and another aux_width; BYTE_SPLIT out_width, LENGTHS (was
  accepted) and count; string DICTIONARY with 0 or one more entries and another index
  width, and claimed PLAIN; FOR string lengths with another count, width, out_width (was
  accepted), a negative base and a huge base; page headers with a wrong value count or
  decoded size
- function-level point reads of forged pages: FOR value lengths whose prefix sums wrap
  around int64 (raised ValueError), and 64-bit dictionary indices above 2**63 - 1 in
  string DICTIONARY (raised ValueError) and decimal INT_DICTIONARY pages (returned a wrong
  value); each is now an InvalidFileError
- the header fast path of the frame checks (``_check_frame``) against zstd's own parser
  (``_check_frame_slow``) on 6,000 mutated frames: every byte of the header and first
  block header set to random values, stray bytes appended, bytes cut, frames of
  several zstd blocks, frames without a content size or checksum, with a dictionary id
  field and with a window descriptor; 1-, 2- and 4-byte content size fields as written
  (8-byte ones and reserved bits only from the mutated descriptor byte)
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import zstandard

import fermion
from fermion.format import native
from fermion.format.encoding import bitpack, pages, zstd_blocks
from fermion.format.encoding.encodings import encoding_header as _header
from fermion.format.encoding.pages import (
    PAGE_HEADER_SIZE,
    BlockedBody,
    decode_page,
    encode_page,
)
from fermion.format.encoding.zstd_blocks import (
    _check_frame,
    _check_frame_slow,
    _check_frames,
)
from fermion.format.encoding.zstd_blocks import compress_blocks as _compress_blocks
from fermion.format.metadata.structs import (
    BLOCK_TABLE_DTYPE,
    ENCODING_HEADER_DTYPE,
    PAGE_HEADER_DTYPE,
    Compression,
    Encoding,
    EncodingFlag,
    RequiredFeature,
    StreamType,
)
from fermion.format.read.points import binary_values, fixed_values
from tests.format.test_points import (
    compressions_of,
    floats_as_1_3_writers_wrote_them,
    page_spans,
)

ALWAYS_BLOCKS = float("inf")  # keep zstd blocks even where one frame is smaller

TYPED = (fermion.FermionError,)
_T = BLOCK_TABLE_DTYPE.itemsize

# -- BlockedBody ------------------------------------------------------------------------


def _payload(n: int, seed: int = 0) -> bytes:
    """Compressible bytes (a small alphabet), different in every block."""
    rng = np.random.default_rng(seed)
    return rng.choice(np.frombuffer(b"abcd", np.uint8), n).tobytes()


@pytest.mark.parametrize("size,block", [(1000, 256), (1024, 256), (257, 256), (5000, 4096)])
def test_blocked_body_round_trip(size: int, block: int) -> None:
    payload = _payload(size)
    body = BlockedBody(memoryview(_compress_blocks(payload, 3, block)), size, "p")
    assert body.block_size == block and body.num_blocks == -(-size // block)
    assert [body.block_bytes(k) for k in range(body.num_blocks)][-1] == size - (
        body.num_blocks - 1
    ) * block
    assert body.decompress_all() == payload
    for k in range(body.num_blocks):
        assert body.decompress(k) == payload[k * block : (k + 1) * block]
    # every frame carries its content size and zstd's content checksum
    for k in range(body.num_blocks):
        frame = bytes(body.frames[int(body.starts[k]) : int(body.ends[k])])
        params = zstandard.get_frame_parameters(frame)
        assert params.content_size == body.block_bytes(k) and params.has_checksum


def test_blocks_for_across_boundaries() -> None:
    body = BlockedBody(memoryview(_compress_blocks(_payload(1000), 3, 256)), 1000, "p")

    def blocks(*ranges: tuple[int, int]) -> list[int]:
        b = np.array([a for a, _ in ranges], dtype=np.int64)
        e = np.array([z for _, z in ranges], dtype=np.int64)
        return body.blocks_for(b, e).tolist()

    assert blocks() == []
    assert blocks((0, 1)) == [0]
    assert blocks((0, 256)) == [0]  # ends exactly at the boundary
    assert blocks((255, 257)) == [0, 1]  # straddles it
    assert blocks((256, 257)) == [1]
    assert blocks((10, 1000)) == [0, 1, 2, 3]
    assert blocks((999, 1000)) == [3]  # the short last block
    assert blocks((900, 910), (5, 6), (300, 700)) == [0, 1, 2, 3]
    assert blocks((700, 710), (700, 710), (5, 6)) == [0, 2]
    rng = np.random.default_rng(1)
    for i in range(400):  # against a brute force; sorted (as point reads ask) or not
        begins = rng.integers(0, 999, rng.integers(1, 40))
        if i % 2:
            begins = np.sort(begins)
        ends = begins + rng.integers(1, 300 if i % 4 < 2 else 4, len(begins))
        ends = np.minimum(ends, 1000)
        want = sorted({k // 256 for b, e in zip(begins, ends, strict=True) for k in range(b, e)})
        assert body.blocks_for(begins, ends).tolist() == want


def test_decompress_into_fills_only_the_given_blocks() -> None:
    payload = _payload(1000, seed=2)
    body = BlockedBody(memoryview(_compress_blocks(payload, 3, 256)), 1000, "p")
    out = np.zeros(1000, dtype=np.uint8)
    body.decompress_into(out, np.array([1, 3]))
    assert bytes(out[256:512]) == payload[256:512]
    assert bytes(out[768:]) == payload[768:]
    assert not out[:256].any() and not out[512:768].any()
    body.decompress_into(out, np.array([0, 2]))
    assert bytes(out) == payload


# -- the writer's choice ----------------------------------------------------------------


def _codec_of(page: bytes) -> Compression:
    return Compression(np.frombuffer(page, PAGE_HEADER_DTYPE, count=1)[0]["compression"])


def _round_trip(page: bytes, payload: bytes) -> None:
    got = decode_page(memoryview(page), expected_values=10, expected_size=len(payload), where="p")
    assert bytes(got) == payload


def test_encode_page_uses_blocks_only_above_one_block() -> None:
    for size, block, codec in [
        (256, 256, Compression.ZSTD),  # one block: a single frame
        (200, 256, Compression.ZSTD),
        (257, 256, Compression.ZSTD),  # a 1-byte second frame costs more than 10%
        (4096, 1024, Compression.ZSTD_BLOCKS),
        (4096, 0, Compression.ZSTD),  # block_size 0: always one frame
    ]:
        payload = _payload(size, seed=size)
        page = encode_page(payload, num_values=10, codec=Compression.ZSTD, block_size=block)
        assert _codec_of(page) == codec, (size, block)
        _round_trip(page, payload)
    none = encode_page(_payload(4096), num_values=10, codec=Compression.NONE, block_size=256)
    assert _codec_of(none) == Compression.NONE


def test_blocks_are_kept_only_within_ten_percent_of_one_frame() -> None:
    """Redundancy spanning more than a block (a long text repeated) is lost by independent
    blocks: such a page stays one frame; text whose redundancy is local stays blocked."""
    rng = np.random.default_rng(8)
    chunk = rng.choice(np.frombuffer(b"abcdefghijklmnop", np.uint8), 20_000).tobytes()
    repeated = chunk * 6  # 120 KB repeating every 20,000 bytes: 8 KiB blocks lose that
    local = _payload(120_000, seed=2)
    for payload, want in ((repeated, Compression.ZSTD), (local, Compression.ZSTD_BLOCKS)):
        page = encode_page(payload, num_values=10, codec=Compression.ZSTD, block_size=8192)
        one_frame = encode_page(payload, num_values=10, codec=Compression.ZSTD, block_size=0)
        assert _codec_of(page) == want
        assert len(page) <= len(one_frame) * 1.1 + PAGE_HEADER_DTYPE.itemsize
        _round_trip(page, payload)


def test_sampled_block_choice_matches_the_whole_page_comparison() -> None:
    """Batch mode decides blocks vs one frame on 4 blocks spread over the page: the long
    repeated text still stays one frame, local redundancy stays blocked, noise is NONE, and
    a page of at most 4 blocks gets exactly the bytes of the whole-page comparison."""
    rng = np.random.default_rng(8)
    chunk = rng.choice(np.frombuffer(b"abcdefghijklmnop", np.uint8), 20_000).tobytes()
    noise = np.random.default_rng(3).integers(0, 256, 120_000, dtype=np.uint8).tobytes()
    cases = [
        (chunk * 6, Compression.ZSTD),
        (_payload(120_000, seed=2), Compression.ZSTD_BLOCKS),
        (noise, Compression.NONE),
    ]
    for payload, want in cases:
        whole = encode_page(payload, num_values=10, codec=Compression.ZSTD, block_size=8192)
        sampled = encode_page(
            payload, num_values=10, codec=Compression.ZSTD, block_size=8192, block_sample=4
        )
        assert _codec_of(sampled) == _codec_of(whole) == want
        assert sampled == whole  # same choice, same bytes
        _round_trip(sampled, payload)
    for size in (8192 * 4, 8192 * 3 + 5, 9000):  # at most 4 blocks: decided exactly
        for payload in (_payload(size, seed=size), (chunk * 2)[:size]):
            whole = encode_page(payload, num_values=10, codec=Compression.ZSTD, block_size=8192)
            sampled = encode_page(
                payload, num_values=10, codec=Compression.ZSTD, block_size=8192, block_sample=4
            )
            assert sampled == whole


def _level_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The zstd level of every block frame compressed from now on."""
    calls: list[int] = []
    real = zstd_blocks.zstd_compressor

    class Counting:
        def __init__(self, level: int, comp: zstandard.ZstdCompressor) -> None:
            self.level, self.comp = level, comp

        def compress(self, data: bytes | memoryview) -> bytes:
            calls.append(self.level)
            return self.comp.compress(data)

    def counted(level: int, checksum: bool = False) -> Counting:
        return Counting(level, real(level, checksum))

    monkeypatch.setattr(zstd_blocks, "zstd_compressor", counted)
    return calls


def test_blocks_that_do_not_compress_go_through_zstd_fast_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a block at the page's level saves under 2%, the next blocks are compressed
    at zstd level -5 until one saves again, with a block at the page's level every 4th;
    every frame still decodes to its block (docs/FORMAT.md §5.2)."""
    block = 2048
    noise = np.random.default_rng(5).integers(0, 256, 16 * block, dtype=np.uint8).tobytes()
    rng = np.random.default_rng(6)  # a few symbols in random order: entropy coding saves
    skewed = rng.choice(np.frombuffer(b"abcdefghijklmnop", np.uint8), 8 * block).tobytes()
    runs = np.repeat(np.frombuffer(noise[:512], np.uint8), 16).tobytes()  # matches
    calls = _level_calls(monkeypatch)
    fast = zstd_blocks._STORE_LEVEL
    for payload, want in [
        (noise, [3, fast, fast, fast] * 4),
        # a fast frame saved: that block is compressed again at level 3
        (noise[: 2 * block] + runs, [3, fast, fast, 3, 3, 3, 3]),
        # fast mode finds nothing in these: they wait for the 4th block's probe
        (noise[: 2 * block] + skewed, [3, fast, fast, fast, 3, 3, 3, 3, 3, 3]),
        (runs + noise[: 4 * block], [3, 3, 3, 3, 3, fast, fast, fast]),
    ]:
        calls.clear()
        body = BlockedBody(memoryview(_compress_blocks(payload, 3, block)), len(payload), "p")
        assert calls == want
        assert body.decompress_all() == payload
        for k in range(body.num_blocks):
            assert body.decompress(k) == payload[k * block : (k + 1) * block]
    # what it costs on disk: each fast frame of the noise is zstd's raw block, as at level
    # 3; the skewed blocks compressed fast lose their entropy coding until the probe
    level3 = [
        len(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(payload[k : k + block]))
        for payload in (noise,)
        for k in range(0, len(noise), block)
    ]
    assert len(_compress_blocks(noise, 3, block)) == 8 + 4 * 16 + sum(level3)
    mixed = noise[: 2 * block] + runs  # and the blocks that compress are level 3 frames
    body = BlockedBody(memoryview(_compress_blocks(mixed, 3, block)), len(mixed), "p")
    level = zstandard.ZstdCompressor(level=3, write_checksum=True)
    for k in range(2, body.num_blocks):
        frame = bytes(body.frames[int(body.starts[k]) : int(body.ends[k])])
        assert frame == level.compress(mixed[k * block : (k + 1) * block])


def test_byte_split_planes_are_probed_at_their_first_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A BYTE_SPLIT page of float64 in [0, 1): planes 0-5 do not compress, plane 6
    compresses by entropy coding only. Each plane's first block is compressed at the
    page's level, so the body is the all-level-3 body byte for byte; the same bytes
    given as PLAIN (no planes known) lose two blocks to fast mode."""
    from fermion.format.encoding.encodings import encode_byte_split

    values = np.random.default_rng(0).random(125_000)
    payload = encode_byte_split(values.tobytes(), 8, sampled=False)
    assert payload is not None
    block = 2048
    level3 = zstandard.ZstdCompressor(level=3, write_checksum=True)
    want = [level3.compress(payload[k : k + block]) for k in range(0, len(payload), block)]

    def frames(encoding: Encoding) -> list[bytes]:
        page = encode_page(
            payload,
            num_values=len(values),
            codec=Compression.ZSTD,
            block_size=block,
            block_overhead=float("inf"),
            encoding=encoding,
        )
        body = BlockedBody(memoryview(page)[PAGE_HEADER_SIZE:], len(payload), "p")
        return [
            bytes(body.frames[int(a) : int(b)]) for a, b in zip(body.starts, body.ends, strict=True)
        ]

    calls = _level_calls(monkeypatch)
    assert frames(Encoding.BYTE_SPLIT) == want
    assert calls.count(zstd_blocks._STORE_LEVEL) > len(want) // 2  # most blocks still fast
    plain = frames(Encoding.PLAIN)
    assert [k for k in range(len(want)) if plain[k] != want[k]] == [366, 367]


def test_encode_page_falls_back_to_none_when_compression_does_not_pay() -> None:
    noise = np.random.default_rng(3).integers(0, 256, 8192, dtype=np.uint8).tobytes()
    for block in (0, 256, 1024):
        page = encode_page(noise, num_values=10, codec=Compression.ZSTD, block_size=block)
        assert _codec_of(page) == Compression.NONE
        assert len(page) == PAGE_HEADER_SIZE + len(noise)
        _round_trip(page, noise)
    # the 10% saving is asked of the whole body: noisy blocks may ride along (1 KiB blocks:
    # their frame overhead stays within the 10% that blocks may cost over one frame)
    half = noise[:4096] + bytes(4096)
    for block, codec in ((0, Compression.ZSTD), (1024, Compression.ZSTD_BLOCKS)):
        page = encode_page(half, num_values=10, codec=Compression.ZSTD, block_size=block)
        assert _codec_of(page) == codec
        _round_trip(page, half)


def _uses_blocks(path: Path) -> bool:
    return "ZSTD_BLOCKS" in compressions_of(path)


def _required(path: Path) -> int:
    with fermion.FileReader(path) as r:
        return r.metadata.required_features


@pytest.mark.parametrize(
    "options,blocks",
    [
        (
            {
                "page_size": 8192,
                "compression_block_size": 256,
                "compression_block_overhead": ALWAYS_BLOCKS,
            },
            True,
        ),
        # 8 KiB blocks: every page fits one block (string pages: 8x the page size, 1.3)
        ({"page_size": 1024}, False),
        ({"page_size": 1 << 20, "compression_block_overhead": ALWAYS_BLOCKS}, True),
        ({"page_size": 8192, "compression_block_size": 0}, False),
        (
            {
                "page_size": 8192,
                "compression_block_size": 256,
                "compression": "none",
                "compression_block_overhead": ALWAYS_BLOCKS,
            },
            False,
        ),
    ],
)
def test_blocks_feature_is_set_exactly_when_a_page_uses_blocks(
    tmp_path: Path, options: dict, blocks: bool
) -> None:
    n = 20_000
    table = pa.table({"x": np.arange(n) % 1000, "s": [f"v{i % 300}-{i}" for i in range(n)]})
    path = tmp_path / "f.fermion"
    fermion.write_table(table, path, column_encodings={"x": "plain"}, **options)
    assert _uses_blocks(path) is blocks
    assert bool(_required(path) & RequiredFeature.BLOCKS) is blocks
    assert fermion.read_table(path).equals(table)


def test_later_pages_of_a_chunk_follow_its_first_pages_block_choice(tmp_path: Path) -> None:
    """The one-frame comparison (a second zstd pass) is made on a chunk's first blockable
    page; later pages of that encoding keep blocks without it. Here the first page is
    short random words (blocks about as small as one frame), the rest one long phrase
    repeated (one frame far smaller): alone they would be ZSTD, in this chunk they follow
    the first page. A second stripe decides afresh: its first page is the repeated phrase."""
    rng = np.random.default_rng(5)
    words = ["".join(rng.choice(list("abcdefghij"), 12)) for _ in range(2_000)]
    phrase = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz "), 20_000))
    repeated = [phrase[i % 1000 : i % 1000 + 40] for i in range(8_000)]
    table = pa.table({"s": words + repeated})
    path = tmp_path / "f.fermion"
    # pages of 16 KiB of text; PLAIN pages (no stripe dictionary for these few distinct)
    opts = {"page_size": 2048, "compression_block_size": 1024, "column_encodings": {"s": "plain"}}
    fermion.write_table(table, path, **opts)
    pages = page_spans(path, "s")
    assert len(pages) > 4 and pages[-1]["size"] < 1024  # the last page: less than a block
    assert {p["compression"] for p in pages[:-1]} == {Compression.ZSTD_BLOCKS}
    assert fermion.read_table(path).equals(table)
    alone = tmp_path / "alone.fermion"  # the repeated phrase alone: one frame per page
    fermion.write_table(pa.table({"s": repeated}), alone, **opts)
    assert {p["compression"] for p in page_spans(alone, "s")[:-1]} == {Compression.ZSTD}
    two = tmp_path / "two.fermion"  # stripe 2 starts with the phrase: it decides afresh
    fermion.write_table(table, two, max_stripe_rows=2_000, **opts)
    by_stripe = {(p["stripe"], p["compression"]) for p in page_spans(two, "s")}
    assert (0, Compression.ZSTD_BLOCKS) in by_stripe and (1, Compression.ZSTD) in by_stripe
    assert (1, Compression.ZSTD_BLOCKS) not in by_stripe


def test_blocks_feature_not_set_when_blocked_pages_fall_back(tmp_path: Path) -> None:
    """Incompressible pages larger than a block are stored NONE: no BLOCKS needed."""
    noise = np.random.default_rng(4).integers(-(2**63), 2**63 - 1, 20_000, dtype=np.int64)
    path = tmp_path / "noise.fermion"
    fermion.write_table(
        pa.table({"x": noise}),
        path,
        page_size=8192,
        compression_block_size=256,
        compression_block_overhead=ALWAYS_BLOCKS,
    )
    assert not _uses_blocks(path)
    assert not _required(path) & RequiredFeature.BLOCKS
    # one compressible column among them sets it
    table = pa.table({"x": noise, "y": np.arange(20_000) % 7})
    fermion.write_table(
        table,
        path,
        page_size=8192,
        compression_block_size=256,
        compression_block_overhead=ALWAYS_BLOCKS,
        column_encodings={"y": "plain"},
    )
    assert _uses_blocks(path) and _required(path) & RequiredFeature.BLOCKS


# -- corrupt blocked pages in files -----------------------------------------------------

N = 4000


def _table() -> pa.Table:
    words = [f"{i:05d}:" + "abcab" * (i % 9) for i in range(N)]
    return pa.table({"x": np.arange(N, dtype=np.int64) % 1000, "s": pa.array(words)})


@pytest.fixture(scope="module", params=[True, False], ids=["stale-crc", "no-crc"])
def blocked_file(request, tmp_path_factory) -> tuple[Path, bool]:
    crc = request.param
    path = tmp_path_factory.mktemp("blocks") / f"blocked-{crc}.fermion"
    fermion.write_table(
        _table(),
        path,
        page_size=8192,
        max_stripe_rows=2500,
        compression_block_size=256,
        compression_block_overhead=ALWAYS_BLOCKS,
        column_encodings={"x": "plain", "s": "plain"},
        page_crc=crc,
    )
    for column in ("x", "s"):
        spans = page_spans(path, column)
        assert len(spans) >= 2
        assert all(p["compression"] == Compression.ZSTD_BLOCKS for p in spans[:2])
    return path, crc


def _second_page(path: Path, column: str) -> dict:
    return page_spans(path, column)[1]


def _u32(body: bytearray, at: int) -> int:
    return int(np.frombuffer(bytes(body[at : at + 4]), "<u4")[0])


def _set_u32(body: bytearray, at: int, value: int) -> None:
    body[at : at + 4] = np.uint32(value % (1 << 32)).astype("<u4").tobytes()


class Parsed:
    """A ZSTD_BLOCKS body being edited in place."""

    def __init__(self, body: bytes, size: int) -> None:
        self.size = size  # decoded bytes, from the page header
        self.body = bytearray(body)
        self.block_size, self.num_blocks = _u32(self.body, 0), _u32(self.body, 4)
        self.first = _T + 4 * self.num_blocks  # first frame
        self.ends = [_u32(self.body, _T + 4 * k) for k in range(self.num_blocks)]
        self.size_delta = 0  # added to the page header's decoded_size
        self.codec: Compression | None = None  # a new page header compression

    def set_end(self, k: int, value: int) -> None:
        _set_u32(self.body, _T + 4 * k, value)

    def frame(self, k: int) -> tuple[int, int]:
        """Body offsets of frame ``k``."""
        start = self.first + (self.ends[k - 1] if k else 0)
        return start, self.first + self.ends[k]

    def set_content_size(self, k: int, value: int) -> None:
        """Rewrite the Frame_Content_Size field of frame ``k``'s header."""
        start, _ = self.frame(k)
        fhd = self.body[start + 4]
        single = (fhd >> 5) & 1
        at = start + 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
        nbytes = (1 if single else 0, 2, 4, 8)[fhd >> 6]
        stored = value - 256 if nbytes == 2 else value
        self.body[at : at + nbytes] = int(stored).to_bytes(nbytes, "little")
        frame = bytes(self.body[start : self.frame(k)[1]])
        assert zstandard.frame_content_size(frame) == value


def _bs0(p: Parsed) -> None:
    _set_u32(p.body, 0, 0)


def _bs_double(p: Parsed) -> None:
    _set_u32(p.body, 0, p.block_size * 2)


def _bs_half(p: Parsed) -> None:
    _set_u32(p.body, 0, p.block_size // 2)


def _nb(delta: int | None, value: int | None = None) -> Callable[[Parsed], None]:
    def edit(p: Parsed) -> None:
        _set_u32(p.body, 4, value if value is not None else p.num_blocks + (delta or 0))

    return edit


def _one_byte_blocks(p: Parsed) -> None:
    """A consistent table of ``size`` one-byte blocks: its frame ends run past the page."""
    _set_u32(p.body, 0, 1)
    _set_u32(p.body, 4, p.size)


def _ends_swapped(p: Parsed) -> None:
    p.set_end(0, p.ends[1])
    p.set_end(1, p.ends[0])


def _first_end_past(p: Parsed) -> None:
    p.set_end(0, len(p.body) + 100)


def _last_end(delta: int) -> Callable[[Parsed], None]:
    return lambda p: p.set_end(p.num_blocks - 1, p.ends[-1] + delta)


def _middle_end(delta: int) -> Callable[[Parsed], None]:
    return lambda p: p.set_end(p.num_blocks // 2, p.ends[p.num_blocks // 2] + delta)


def _middle_declares_more(p: Parsed) -> None:
    p.set_content_size(p.num_blocks // 2, p.block_size + 1)


def _last_declares_more(p: Parsed) -> None:
    last = p.num_blocks - 1
    start, end = p.frame(last)
    p.set_content_size(last, zstandard.frame_content_size(bytes(p.body[start:end])) + 1)


def _last_and_header_declare_more(p: Parsed) -> None:
    _last_declares_more(p)
    p.size_delta = 1


def _no_content_size(p: Parsed) -> None:
    """Frame 0 re-compressed without a content size (same length kept by padding)."""
    start, end = p.frame(0)
    raw = zstandard.ZstdDecompressor().decompress(bytes(p.body[start:end]))
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(raw)
    assert zstandard.frame_content_size(frame) == -1 and len(frame) <= end - start
    p.body[start:end] = frame + bytes(end - start - len(frame))


def _flip(where: Callable[[Parsed], int]) -> Callable[[Parsed], None]:
    def edit(p: Parsed) -> None:
        p.body[where(p)] ^= 0x5A

    return edit


def _zero_tail(p: Parsed) -> None:
    p.body[-16:] = bytes(16)


def _codec(codec: Compression) -> Callable[[Parsed], None]:
    def edit(p: Parsed) -> None:
        p.codec = codec

    return edit


MUTATIONS: dict[str, Callable[[Parsed], None]] = {
    "block_size 0": _bs0,
    "block_size doubled": _bs_double,
    "block_size halved": _bs_half,
    "num_blocks 0": _nb(None, 0),
    "num_blocks - 1": _nb(-1),
    "num_blocks + 1": _nb(+1),
    "num_blocks 0xFFFFFFFF": _nb(None, 0xFFFFFFFF),
    "one-byte blocks": _one_byte_blocks,
    "frame ends decreasing": _ends_swapped,
    "first end past the body": _first_end_past,
    "last end short": _last_end(-1),
    "last end past": _last_end(+1),
    "middle end + 1": _middle_end(+1),
    "middle end - 1": _middle_end(-1),
    "middle frame declares more": _middle_declares_more,
    "last frame declares more": _last_declares_more,
    "last frame and header declare more": _last_and_header_declare_more,
    "frame without content size": _no_content_size,
    "flipped frame magic": _flip(lambda p: p.frame(1)[0]),
    "flipped frame data": _flip(lambda p: sum(p.frame(p.num_blocks // 2)) // 2),
    "flipped frame checksum": _flip(lambda p: p.frame(2)[1] - 2),
    "zeroed body tail": _zero_tail,
    "header says ZSTD": _codec(Compression.ZSTD),
    "header says NONE": _codec(Compression.NONE),
}


def _mutated(tmp_path: Path, path: Path, column: str, mutate: Callable[[Parsed], None]):
    data = path.read_bytes()
    page = _second_page(path, column)
    off, size = page["offset"], page["size"]
    head = np.frombuffer(data, PAGE_HEADER_DTYPE, count=1, offset=off).copy()
    p = Parsed(data[off + PAGE_HEADER_SIZE : off + size], int(head["decoded_size"][0]))
    mutate(p)
    assert len(p.body) == size - PAGE_HEADER_SIZE
    head["decoded_size"] += p.size_delta  # the CRC, if any, is left stale
    if p.codec is not None:
        head["compression"] = p.codec
    bad = data[:off] + head.tobytes() + bytes(p.body) + data[off + size :]
    assert bad != data
    out = tmp_path / "bad.fermion"
    out.write_bytes(bad)
    return out, page["rows"]


@pytest.mark.parametrize("column", ["x", "s"])
@pytest.mark.parametrize("name", list(MUTATIONS))
def test_corrupt_blocked_pages(tmp_path: Path, blocked_file, column: str, name: str) -> None:
    path, crc = blocked_file
    bad, (a, b) = _mutated(tmp_path, path, column, MUTATIONS[name])
    full_error = fermion.ChecksumError if crc else fermion.InvalidFileError
    with pytest.raises(full_error):
        fermion.read_table(bad)
    with fermion.FileReader(bad, point_reads=False) as r, pytest.raises(full_error):
        r.take([b - 1, a], columns=[column])
    rows = np.arange(a, b)  # every block of the page
    with fermion.FileReader(bad) as r:
        with pytest.raises(fermion.InvalidFileError):
            r.take(rows, columns=[column])
        with pytest.raises(fermion.InvalidFileError):
            r.take(rows[::-3])
        # the other pages still read
        assert r.take([0, a - 1], columns=[column]).num_rows == 2


@pytest.mark.parametrize("column", ["x", "s"])
def test_table_lies_fail_any_point_read_of_the_page(
    tmp_path: Path, blocked_file, column: str
) -> None:
    """The block table is validated before any block is decompressed."""
    path, _ = blocked_file
    for name in ("block_size 0", "num_blocks + 1", "frame ends decreasing", "last end short"):
        bad, (a, _) = _mutated(tmp_path, path, column, MUTATIONS[name])
        with fermion.FileReader(bad) as r, pytest.raises(fermion.InvalidFileError):
            r.take([a], columns=[column])


def test_a_corrupt_block_fails_only_the_reads_that_need_it(tmp_path: Path, blocked_file) -> None:
    """Point reads decompress only their blocks: a read elsewhere in the page succeeds
    (no CRC is checked), a read of the damaged block raises."""
    path, _ = blocked_file
    bad, (a, b) = _mutated(tmp_path, path, "x", MUTATIONS["flipped frame data"])
    table = _table()
    damaged = (b - a) * 8 // 256 // 2  # the page's middle block: 256 bytes, 32 int64 values
    with fermion.FileReader(bad) as r:
        got = r.take([a, a + 1, b - 1], columns=["x"])
        assert got.column("x").to_pylist() == table.column("x").take([a, a + 1, b - 1]).to_pylist()
        with pytest.raises(fermion.InvalidFileError, match="zstd"):
            r.take([a + damaged * 32 + 3], columns=["x"])


# -- truncated bodies -------------------------------------------------------------------


def test_truncated_blocked_pages_at_every_length() -> None:
    values = (np.arange(600, dtype=np.int64) % 100).tobytes()
    page = encode_page(
        values, num_values=600, codec=Compression.ZSTD, block_size=256, block_overhead=ALWAYS_BLOCKS
    )
    assert _codec_of(page) == Compression.ZSTD_BLOCKS
    words = [b"w%04d" % i * (i % 4) for i in range(300)]
    data = b"".join(words)
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype("<i4")
    offs_page = encode_page(offsets.tobytes(), num_values=300, codec=Compression.NONE)
    data_page = encode_page(
        data, num_values=300, codec=Compression.ZSTD, block_size=256, block_overhead=ALWAYS_BLOCKS
    )
    assert _codec_of(data_page) == Compression.ZSTD_BLOCKS
    for cut in range(len(page) - 1, -1, -1):
        short = memoryview(page[:cut])
        for crc in (True, False):
            with pytest.raises(fermion.InvalidFileError):
                decode_page(
                    short, expected_values=600, expected_size=4800, where="p", verify_crc=crc
                )
        with pytest.raises(fermion.InvalidFileError):
            fixed_values(short, np.array([0, 599]), 600, 8, (8, True), "p")
    offs = memoryview(offs_page)
    for cut in range(len(data_page) - 1, -1, -1):
        with pytest.raises(fermion.InvalidFileError):
            binary_values(offs, memoryview(data_page[:cut]), np.array([1, 299]), 300, 4, "p")


def test_bodies_shorter_than_their_table_or_with_stray_bytes() -> None:
    with pytest.raises(fermion.InvalidFileError, match="block table"):
        BlockedBody(memoryview(b"\x00\x01\x00\x00"), 1000, "p")
    table = np.zeros(1, BLOCK_TABLE_DTYPE)
    table["block_size"] = 256
    empty = table.tobytes()
    assert BlockedBody(memoryview(empty), 0, "p").decompress_all() == b""
    with pytest.raises(fermion.InvalidFileError):
        BlockedBody(memoryview(empty + b"stray"), 0, "p")


# -- fuzz -------------------------------------------------------------------------------


def test_fuzzed_blocked_file_raises_only_typed_errors(tmp_path: Path) -> None:
    table = _table().slice(0, 1500)
    table = table.append_column("f", pa.array(np.arange(1500) / 8, pa.float64()))
    path = tmp_path / "fuzz.fermion"
    fermion.write_table(
        table,
        path,
        page_size=2048,
        max_stripe_rows=700,
        compression_block_size=256,
        compression_block_overhead=ALWAYS_BLOCKS,
        page_crc=False,
    )
    assert _uses_blocks(path)
    data = path.read_bytes()
    pages_end = fermion.FileReader(path).describe()["footer"]["cmb_offset"]
    rng = random.Random(2024)
    outcomes = {"read": [0, 0], "take": [0, 0], "take-whole": [0, 0]}  # [ok, typed error]
    for i in range(200):
        b = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            # mostly inside the pages; sometimes anywhere (metadata included)
            pos = rng.randrange(8, pages_end) if rng.random() < 0.85 else rng.randrange(len(b))
            b[pos] = rng.randrange(256)
        bad = tmp_path / f"fuzz{i % 3}.fermion"
        bad.write_bytes(bytes(b))
        idx = [rng.randrange(1500) for _ in range(rng.randint(1, 40))]
        for name, options in (("read", None), ("take", {}), ("take-whole", {"point_reads": False})):
            try:
                if options is None:
                    fermion.read_table(bad)
                else:
                    with fermion.FileReader(bad, **options) as r:
                        r.take(idx)
                outcomes[name][0] += 1
            except TYPED:
                outcomes[name][1] += 1
    assert outcomes["read"][1] > 150  # nearly every flip is caught by a full read
    assert all(ok + err == 200 and err > 50 for ok, err in outcomes.values()), outcomes


# -- lying encoding headers on point reads ----------------------------------------------


@pytest.fixture(scope="module")
def encoded_file(tmp_path_factory) -> tuple[Path, pa.Table]:
    n = 3000
    rng = np.random.default_rng(6)
    table = pa.table(
        {
            "for": pa.array(rng.integers(0, 1 << 20, n)),
            "delta": pa.array(np.cumsum(rng.integers(0, 9, n))),
            "intdict": pa.array(rng.choice(np.array([7, 300, 70_000, 999_999]), n)),
            "split": pa.array(rng.random(n).astype(np.float32)),
            "lengths": pa.array(
                [f"{i}" + "z" * int(k) for i, k in enumerate(rng.integers(0, 30, n))]
            ),
            "cat": pa.array(rng.choice(["alpha", "beta", "gamma"], n)),
            "plain": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
        }
    )
    path = tmp_path_factory.mktemp("lies") / "encoded.fermion"
    with pytest.MonkeyPatch.context() as mp:  # uncompressed BYTE_SPLIT pages
        floats_as_1_3_writers_wrote_them(mp)
        fermion.write_table(
            table, path, page_size=8192, max_stripe_rows=n, compression="none", page_crc=False
        )
    return path, table


# column, stream, expected page encoding, header field edits (field -> function of value)
def _add(d: int) -> Callable[[int], int]:
    return lambda v: v + d


def _const(c: int) -> Callable[[int], int]:
    return lambda v: c


_BITS = int(EncodingFlag.BITS)
_LENGTHS = int(EncodingFlag.LENGTHS)
HEADER_LIES: dict[str, tuple[str, StreamType, Encoding, dict]] = {
    "FOR count + 1": ("for", StreamType.DATA, Encoding.FOR, {"count": _add(1)}),
    "FOR count - 1": ("for", StreamType.DATA, Encoding.FOR, {"count": _add(-1)}),
    "FOR width + 1": ("for", StreamType.DATA, Encoding.FOR, {"width": _add(1)}),
    "FOR width - 1": ("for", StreamType.DATA, Encoding.FOR, {"width": _add(-1)}),
    "FOR width 0": ("for", StreamType.DATA, Encoding.FOR, {"width": _const(0)}),
    "FOR width 57": ("for", StreamType.DATA, Encoding.FOR, {"width": _const(57)}),
    "FOR BITS cleared": ("for", StreamType.DATA, Encoding.FOR, {"flags": lambda f: f & ~_BITS}),
    "FOR out_width 4": ("for", StreamType.DATA, Encoding.FOR, {"out_width": _const(4)}),
    "FOR LENGTHS set": ("for", StreamType.DATA, Encoding.FOR, {"flags": lambda f: f | _LENGTHS}),
    "DELTA count - 1": ("delta", StreamType.DATA, Encoding.DELTA, {"count": _add(-1)}),
    "DELTA width + 1": ("delta", StreamType.DATA, Encoding.DELTA, {"width": _add(1)}),
    "INT_DICTIONARY 0 entries": (
        "intdict",
        StreamType.DATA,
        Encoding.INT_DICTIONARY,
        {"aux": _const(0)},
    ),
    "INT_DICTIONARY more entries than values": (
        "intdict",
        StreamType.DATA,
        Encoding.INT_DICTIONARY,
        {"aux": lambda v: 10**6},
    ),
    "INT_DICTIONARY aux_width + 1": (
        "intdict",
        StreamType.DATA,
        Encoding.INT_DICTIONARY,
        {"aux_width": _add(1)},
    ),
    "BYTE_SPLIT out_width 8": (
        "split",
        StreamType.DATA,
        Encoding.BYTE_SPLIT,
        {"out_width": _const(8)},
    ),
    "BYTE_SPLIT LENGTHS set": (
        "split",
        StreamType.DATA,
        Encoding.BYTE_SPLIT,
        {"flags": lambda f: f | _LENGTHS},
    ),
    "BYTE_SPLIT count - 1": ("split", StreamType.DATA, Encoding.BYTE_SPLIT, {"count": _add(-1)}),
    "DICTIONARY 0 entries": ("cat", StreamType.DATA, Encoding.DICTIONARY, {"aux": _const(0)}),
    "DICTIONARY one more entry": ("cat", StreamType.DATA, Encoding.DICTIONARY, {"aux": _add(1)}),
    "DICTIONARY width + 1": ("cat", StreamType.DATA, Encoding.DICTIONARY, {"width": _add(1)}),
    "lengths count + 1": ("lengths", StreamType.OFFSETS, Encoding.FOR, {"count": _add(1)}),
    "lengths width + 1": ("lengths", StreamType.OFFSETS, Encoding.FOR, {"width": _add(1)}),
    "lengths out_width 8": ("lengths", StreamType.OFFSETS, Encoding.FOR, {"out_width": _const(8)}),
    "lengths negative base": ("lengths", StreamType.OFFSETS, Encoding.FOR, {"base": _const(-40)}),
    "lengths huge base": ("lengths", StreamType.OFFSETS, Encoding.FOR, {"base": _const(2**62)}),
}


def _rewrite(data: bytes, page: dict, header: dict, encoding: dict) -> bytes:
    off, size = page["offset"], page["size"]
    head = np.frombuffer(data, PAGE_HEADER_DTYPE, count=1, offset=off).copy()
    for k, f in header.items():
        head[k] = f(int(head[k][0]))
    body = bytearray(data[off + PAGE_HEADER_SIZE : off + size])
    if encoding:
        h = np.frombuffer(bytes(body[: ENCODING_HEADER_DTYPE.itemsize]), ENCODING_HEADER_DTYPE)
        h = h.copy()
        for k, f in encoding.items():
            h[k] = f(int(h[k][0]))
        body[: ENCODING_HEADER_DTYPE.itemsize] = h.tobytes()
    return data[:off] + head.tobytes() + bytes(body) + data[off + size :]


def _expect_typed(tmp_path: Path, bad: bytes, rows: tuple[int, int], column: str) -> None:
    path = tmp_path / "lie.fermion"
    path.write_bytes(bad)
    a, b = rows
    with fermion.FileReader(path) as r:
        for idx in ([a], [b - 1, a + 7], list(range(a, b))):
            with pytest.raises(fermion.InvalidFileError):
                r.take(idx, columns=[column])
    with pytest.raises(fermion.InvalidFileError):
        fermion.read_table(path)


@pytest.mark.parametrize("name", list(HEADER_LIES))
def test_lying_encoding_headers_on_point_reads(tmp_path: Path, encoded_file, name: str) -> None:
    path, _ = encoded_file
    column, stream, encoding, edits = HEADER_LIES[name]
    page = page_spans(path, column, stream)[0]
    assert (page["encoding"], page["compression"]) == (encoding, Compression.NONE)
    rows = page_spans(path, column)[0]["rows"]
    bad = _rewrite(path.read_bytes(), page, {}, edits)
    _expect_typed(tmp_path, bad, rows, column)


@pytest.mark.parametrize(
    "column,header",
    [
        ("for", {"encoding": _const(Encoding.PLAIN)}),
        ("for", {"encoding": _const(Encoding.DELTA)}),
        ("for", {"encoding": _const(Encoding.CONSTANT)}),
        ("for", {"encoding": _const(Encoding.BYTE_SPLIT)}),
        ("for", {"encoding": _const(Encoding.RLE)}),
        ("plain", {"encoding": _const(Encoding.FOR)}),
        ("plain", {"decoded_size": _add(8)}),
        ("plain", {"num_values": _add(1)}),
        ("for", {"num_values": _add(-1)}),
        ("cat", {"encoding": _const(Encoding.PLAIN)}),
    ],
)
def test_lying_page_headers_on_point_reads(
    tmp_path: Path, encoded_file, column: str, header: dict
) -> None:
    path, _ = encoded_file
    page = page_spans(path, column)[0]
    assert page["compression"] == Compression.NONE
    bad = _rewrite(path.read_bytes(), page, header, {})
    _expect_typed(tmp_path, bad, page["rows"], column)


# -- forged pages the point readers once mishandled -------------------------------------


def _page(payload: bytes, encoding: Encoding, n: int, blocked: bool = False) -> memoryview:
    codec = Compression.ZSTD if blocked else Compression.NONE
    page = encode_page(
        payload, num_values=n, codec=codec, encoding=encoding, crc=False, block_size=256
    )
    return memoryview(page)


@pytest.mark.parametrize("blocked", [False, True])
def test_lengths_whose_sums_wrap_around_int64(blocked: bool) -> None:
    """Regression: lengths of 2**62 wrap the prefix sums; a range ending before it begins
    reached ``gather_ranges`` and raised ValueError (array too big)."""
    n = 64
    flags = _BITS | _LENGTHS | int(EncodingFlag.SIGNED)
    lengths = _header(Encoding.FOR, count=n, out_width=4, base=2**62, width=1, flags=flags)
    lengths += bitpack.pack(np.zeros(n, np.uint64), 1)
    data = _page(b"x" * 3000, Encoding.PLAIN, n, blocked)
    for rows in ([1], [2], [3], [0, 1, 2], [5, 63]):
        with pytest.raises(fermion.InvalidFileError):
            binary_values(_page(lengths, Encoding.FOR, n), data, np.array(rows), n, 4, "p")


@pytest.mark.parametrize("blocked", [False, True])
def test_dictionary_indices_above_int64(blocked: bool) -> None:
    """Regression: a 64-bit index of 2**64 - 1 is -1 in int64: the string dictionary raised
    ValueError, the decimal INT_DICTIONARY returned the last entry."""
    n = 64
    indices = np.zeros(n, np.uint64)
    indices[2] = 2**64 - 1
    packed = bitpack.pack(indices, 64)
    strings = _header(Encoding.DICTIONARY, count=n, out_width=4, aux=2, width=64, flags=_BITS)
    strings += packed + np.array([0, 2, 5], "<i8").tobytes() + b"aabbb"
    derived = _page(b"", Encoding.DERIVED, n)
    good = binary_values(
        derived, _page(strings, Encoding.DICTIONARY, n, blocked), np.array([0]), n, 4, "p"
    )
    assert good[1] == b"aa"
    with pytest.raises(fermion.InvalidFileError, match="dictionary"):
        binary_values(
            derived, _page(strings, Encoding.DICTIONARY, n, blocked), np.array([2]), n, 4, "p"
        )
    flags = _BITS | int(EncodingFlag.SIGNED)
    ints = _header(
        Encoding.INT_DICTIONARY, count=n, out_width=16, aux=2, width=64, aux_width=4, flags=flags
    )
    ints += packed + bitpack.pack(np.array([5, 9], np.uint64), 4)
    page = _page(ints, Encoding.INT_DICTIONARY, n, blocked)
    got = np.frombuffer(fixed_values(page, np.array([0, 1]), n, 16, (16, True), "p"), "<i8")
    assert got.tolist() == [5, 0, 5, 0]
    with pytest.raises(fermion.InvalidFileError, match="dictionary"):
        fixed_values(page, np.array([2]), n, 16, (16, True), "p")


def test_untouched_blocked_files_read_in_every_path(blocked_file) -> None:
    """Sanity for the corruption tests: the files read, and carry a CRC when asked."""
    path, _ = blocked_file
    table = _table()
    assert fermion.read_table(path).equals(table)
    idx = [0, N - 1, 1234, 1234]
    for point_reads in (True, False):
        with fermion.FileReader(path, point_reads=point_reads) as r:
            assert r.take(idx).equals(table.take(idx))
    data = path.read_bytes()
    page = _second_page(path, "x")
    head = np.frombuffer(data, PAGE_HEADER_DTYPE, count=1, offset=page["offset"])[0]
    body = data[page["offset"] + 4 : page["offset"] + page["size"]]
    path_crc = blocked_file[1]
    assert bool(int(head["flags"]) & 1) is path_crc
    if path_crc:
        assert zlib.crc32(body) == int(head["crc"])


@pytest.mark.parametrize("overhead", [-0.1, float("nan")])
def test_block_overhead_must_be_a_non_negative_fraction(tmp_path: Path, overhead: float) -> None:
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.write_table(
            pa.table({"x": [1, 2]}), tmp_path / "o.fermion", compression_block_overhead=overhead
        )


def _page_compressions(path: Path) -> dict[str, set[str]]:
    d = fermion.FileReader(path).describe()
    return {
        s["path"] + "/" + s["stream_type"]: {c for ch in s["chunks"] for c in ch["compressions"]}
        for col in d["columns"]
        for s in col["streams"]
        if any(ch.get("compressions") for ch in s["chunks"])
    }


def test_which_pages_are_blocked_and_which_keep_zstd(tmp_path: Path) -> None:
    """Format 1.3 writers block only pages of at least 8 payload bytes per value (a block
    then holds at most 4,096 values), and keep zstd on an encoded page of a point-read
    column only if it saves a quarter (other pages: a tenth)."""
    n = 400_000
    rng = np.random.default_rng(21)
    nine = rng.integers(0, 9, n)  # FOR at 4 bits: zstd saves about a fifth, not a quarter
    table = pa.table(
        {
            "packed": pa.array(nine),
            "plain": pa.array(nine),  # 8 bytes per value, PLAIN
            "sorted": pa.array(np.cumsum(np.tile([0, 0, 1, 0, 3], n // 5))),  # DELTA
            "text": pa.array([f"row {i} " + "x" * int(k) for i, k in enumerate(nine)]),  # unique
            "nested": pa.array([[int(v)] for v in nine], pa.list_(pa.int64())),
        }
    )
    path = tmp_path / "mixed.fermion"
    fermion.write_table(
        table, path, column_encodings={"plain": "plain"}, compression_block_overhead=ALWAYS_BLOCKS
    )
    got = _page_compressions(path)
    # encoded, saves < 25%: stored as is, with a CRC32 per KiB block (format 1.5)
    assert got["packed/DATA"] == {"CRC_BLOCKS"}
    assert got["plain/DATA"] == {"ZSTD_BLOCKS"}  # 8 bytes per value
    assert got["sorted/DATA"] == {"ZSTD"}  # one frame: a block would hold ~100k deltas
    assert got["text/DATA"] == {"ZSTD_BLOCKS"}
    assert got["text/OFFSETS"] <= {"ZSTD", "NONE", "CRC_BLOCKS"}  # lengths: never zstd blocks
    assert got["nested.item/DATA"] == {"ZSTD"}  # not a point-read column: the 10% rule
    # the quarter rule at the page level: the same payload, kept or not by keep_ratio
    payload = np.repeat(np.arange(4096, dtype=np.uint16), 4).tobytes()
    for ratio, kept in ((0.9, True), (0.01, False)):
        page = encode_page(payload, num_values=16384, codec=Compression.ZSTD, keep_ratio=ratio)
        assert (page[5] == Compression.ZSTD) is kept
    assert fermion.read_table(path).equals(table)


def _two_block_body(first: bytes, second: bytes, block: int) -> memoryview:
    table = np.zeros(1, dtype=BLOCK_TABLE_DTYPE)
    table["block_size"], table["num_blocks"] = block, 2
    ends = np.array([len(first), len(first) + len(second)], dtype="<u4")
    return memoryview(table.tobytes() + ends.tobytes() + first + second)


_BLOCK = 4096
_TWO_BLOCKS = bytes(range(256)) * 32  # 2 blocks of _BLOCK bytes
_COMP = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)


def _lying_frames(lie: str) -> tuple[bytes, bytes]:
    """The two frames of :data:`_TWO_BLOCKS`, the first (or, for "too few bytes", the
    second) made to lie as ``lie`` says."""
    first = _COMP.compress(_TWO_BLOCKS[:_BLOCK])
    second = _COMP.compress(_TWO_BLOCKS[_BLOCK:])
    if lie == "honest":
        pass
    elif lie == "stray bytes after a frame":
        first += b"\x00\x01\x02"
    elif lie == "no content checksum":
        plain = zstandard.ZstdCompressor(level=3, write_checksum=False, write_content_size=True)
        first = plain.compress(_TWO_BLOCKS[:_BLOCK])
    elif lie == "reserved block type":
        at = zstandard.frame_header_size(first)
        first = first[:at] + bytes([first[at] | 0b110]) + first[at + 1 :]
    elif lie == "cut short":
        first = first[:-5]
    elif lie == "not a frame":
        first = b"\x00" + first[1:]
    elif lie == "corrupt content":  # the last byte of the frame's content checksum
        first = first[:-1] + bytes([first[-1] ^ 0xFF])
    else:  # "too few bytes": the frames hold one byte less than the page size declared
        second = _COMP.compress(_TWO_BLOCKS[_BLOCK:-1])
    return first, second


def _two_blocks(lie: str) -> BlockedBody:
    return BlockedBody(_two_block_body(*_lying_frames(lie), _BLOCK), len(_TWO_BLOCKS), "p")


@pytest.mark.parametrize(
    "lie",
    ["stray bytes after a frame", "no content checksum", "reserved block type", "cut short"],
)
def test_batched_block_decompression_keeps_every_frame_check(lie: str) -> None:
    """``decompress_many`` (several blocks in one GIL-free call) refuses what one-block
    decompression refuses."""
    good = _two_blocks("honest")
    assert b"".join(bytes(x) for x in good.decompress_many([0, 1])) == _TWO_BLOCKS
    body = _two_blocks(lie)
    with pytest.raises(fermion.InvalidFileError):
        body.decompress_many([0, 1])
    with pytest.raises(fermion.InvalidFileError):
        body.decompress(0)


@pytest.mark.parametrize(
    "lie",
    [
        "stray bytes after a frame",
        "no content checksum",
        "reserved block type",
        "cut short",
        "not a frame",
        "corrupt content",
        "too few bytes",
    ],
)
def test_whole_page_block_decompression_refuses_what_block_reads_refuse(lie: str) -> None:
    """``decompress_whole_into`` (a full read: one streaming pass over every frame) raises
    a typed error for each lying body, and decodes the honest one exactly."""
    good = _two_blocks("honest")
    size = len(_TWO_BLOCKS)
    out = np.zeros(size, dtype=np.uint8)
    good.decompress_whole_into(out)
    assert out.tobytes() == _TWO_BLOCKS and bytes(good.decompress_all()) == _TWO_BLOCKS
    body = _two_blocks(lie)
    with pytest.raises(fermion.InvalidFileError):
        body.decompress_whole_into(np.zeros(size, dtype=np.uint8))
    with pytest.raises(fermion.InvalidFileError):
        body.decompress_all()
    with pytest.raises(fermion.InvalidFileError, match="decodes to"):
        good.decompress_whole_into(np.zeros(size + 1, dtype=np.uint8))


def _frame_verdict(check: Callable[[memoryview, int, str], None], frame: bytes, size: int) -> str:
    try:
        check(memoryview(frame), size, "p")
    except fermion.InvalidFileError as exc:
        return type(exc).__name__
    return "ok"


def test_frame_header_fast_path_agrees_with_zstd_parser() -> None:
    """``_check_frame`` reads a one-block frame's header fields itself; on honest and on
    mutated frames of every header layout it accepts and refuses exactly what zstd's own
    parser (``_check_frame_slow``) does."""
    rng = random.Random(7)
    raw = bytes(range(256)) * 600
    frames: list[tuple[bytes, int]] = []
    for size in (1, 200, 255, 256, 300, 4096, 65_791, 65_792, 70_000, 150_000):
        data = raw[:size]
        for kwargs in (
            {"write_checksum": True, "write_content_size": True},
            {"write_checksum": True, "write_content_size": False},
            {"write_checksum": False, "write_content_size": True},
            {"write_checksum": True, "write_content_size": True, "write_dict_id": True},
        ):
            level = rng.choice([1, 3, 19])
            comp = zstandard.ZstdCompressor(level=level, **kwargs)  # type: ignore[arg-type]
            frames.append((comp.compress(data), size))
        # a not single-segment frame (a window descriptor byte), streamed without a size
        out = zstandard.ZstdCompressor(write_checksum=True).compressobj()
        frames.append((out.compress(data) + out.flush(), size))
    checked = 0
    for frame, size in frames:
        mutants = [frame, frame + b"\x00", frame[:-1], frame[:6]]
        for at in range(min(len(frame), 20)):  # every single-bit flip of the header bytes
            for bit in range(8):
                flipped = bytearray(frame)
                flipped[at] ^= 1 << bit
                mutants.append(bytes(flipped))
        for _ in range(120):
            bad = bytearray(frame)
            at = rng.randrange(min(len(bad), 24))
            bad[at] = rng.randrange(256)
            mutants.append(bytes(bad))
        for m in mutants:
            for declared in (size, size + 1):
                expected = _frame_verdict(_check_frame_slow, m, declared)
                assert _frame_verdict(_check_frame, m, declared) == expected, (
                    m[:24].hex(),
                    declared,
                )
                for kernels in (native.KERNELS, None):  # the compiled checks, and Python
                    assert _frames_verdict(m, declared, kernels) == expected, (
                        m[:24].hex(),
                        declared,
                        kernels,
                    )
                checked += 1
    assert checked > 20_000


def _frames_verdict(frame: bytes, declared: int, kernels) -> str:
    """The verdict of ``_check_frames`` on ``frame`` between two honest frames (so that a
    kernel must find it among others), with ``native.KERNELS`` set to ``kernels``."""
    comp = zstandard.ZstdCompressor(write_checksum=True, write_content_size=True)
    good = comp.compress(b"fermion" * 10)
    view = memoryview(good + frame + good)
    begins = np.array([0, len(good), len(good) + len(frame)], dtype=np.int64)
    ends = np.array([len(good), len(good) + len(frame), len(view)], dtype=np.int64)
    saved, native.KERNELS = native.KERNELS, kernels
    try:
        _check_frames(view, begins, ends, np.array([70, declared, 70]), "p")
    except fermion.ChecksumError as exc:
        return type(exc).__name__
    except fermion.InvalidFileError as exc:
        return type(exc).__name__
    finally:
        native.KERNELS = saved
    return "ok"


def test_decompress_frames_refuses_frames_of_another_size() -> None:
    """``decompress_frames`` (one call for the frames of many pages) gives the frames'
    bytes back to back, and refuses a frame that decodes to more or fewer bytes than its
    block holds, or a truncated or corrupt frame, with a typed error."""
    comp = zstd_blocks.zstd_compressor(3, checksum=True)
    blocks = [bytes(range(256)) * 8, b"xyz" * 100, bytes(1000)]
    frames = [comp.compress(b) for b in blocks]
    sizes = [len(b) for b in blocks]
    assert pages.decompress_frames(frames, sizes, "p") == b"".join(blocks)
    assert pages.decompress_frames([], [], "p") == b""
    for bad in ([sizes[0], sizes[1] + 1, sizes[2]], [sizes[0] - 1, sizes[1], sizes[2]]):
        with pytest.raises(fermion.InvalidFileError, match="zstd block"):
            pages.decompress_frames(frames, bad, "p")
    cut = [frames[0], frames[1][:-3], frames[2]]
    with pytest.raises(fermion.FermionError):
        pages.decompress_frames(cut, sizes, "p")
    flipped = bytearray(frames[1])
    flipped[-1] ^= 0xFF  # the content checksum
    with pytest.raises(fermion.ChecksumError):
        pages.decompress_frames([frames[0], bytes(flipped), frames[2]], sizes, "p")
