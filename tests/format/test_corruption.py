"""Corrupt, truncated and fuzzed files raise only typed errors.

Bad inputs tried here:
- empty file, files shorter than header + footer, non-Fermion bytes (a Parquet file)
- truncation at many positions (footer gone, CIT cut, schema cut, data cut)
- bad footer magic, footer CRC mismatch, unknown major version, unknown required feature
  flag (and an unknown optional flag, which must be accepted)
- footer offsets pointing outside the file, with a valid footer CRC
- a flipped bit in: a data page, a page header, a CMB, the schema header, a column entry,
  a field blob, the CIT
- page headers rewritten (valid CRC) to claim an unknown encoding, an unknown codec, a
  wrong value count or a huge decoded size
- random byte mutations (bounded count) read with and without checksum verification
- ZSTD_BLOCKS bodies breaking each reader check of FORMAT.md §5.2, and a single zstd frame
  followed by extra bytes
"""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

import fermion
from fermion.format.encoding.pages import CODECS, PAGE_HEADER_SIZE, BlockedBody
from fermion.format.metadata.structs import (
    BLOCK_TABLE_DTYPE,
    FOOTER_DTYPE,
    PAGE_HEADER_DTYPE,
    SCHEMA_HEADER_DTYPE,
    Compression,
)
from tests.format.conftest import all_types_table

TYPED = (fermion.FermionError,)


def read_everything(path: Path, **options) -> None:
    """Touch every code path a user would: schema, full read, filter, take, describe."""
    with fermion.FileReader(path, **options) as r:
        _ = r.schema
        table = r.read()
        if table.num_rows:
            r.take([0, table.num_rows - 1])
        r.describe()


@pytest.fixture(scope="module")
def good_file(tmp_path_factory) -> tuple[Path, bytes]:
    path = tmp_path_factory.mktemp("corrupt") / "good.fermion"
    table = all_types_table(n=120, seed=3)
    fermion.write_table(table, path, page_size=256, max_stripe_rows=50)
    read_everything(path)  # sanity: the untouched file reads
    return path, path.read_bytes()


def write_variant(tmp_path: Path, data: bytes, name: str = "bad.fermion") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def footer_of(data: bytes) -> np.ndarray:
    return np.frombuffer(data[-FOOTER_DTYPE.itemsize :], dtype=FOOTER_DTYPE).copy()


def with_footer(data: bytes, footer: np.ndarray, fix_crc: bool = True) -> bytes:
    raw = bytearray(footer.tobytes())
    if fix_crc:
        footer["footer_crc"] = zlib.crc32(bytes(raw[:40]))
        raw = bytearray(footer.tobytes())
    return data[: -FOOTER_DTYPE.itemsize] + bytes(raw)


@pytest.mark.parametrize("data", [b"", b"F", b"FRMN" * 10, bytes(200)])
def test_tiny_or_foreign_bytes(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(fermion.InvalidFileError):
        read_everything(write_variant(tmp_path, data))


def test_parquet_file_is_not_fermion(tmp_path: Path) -> None:
    path = tmp_path / "x.fermion"
    pq.write_table(pa.table({"a": [1, 2]}), path)
    with pytest.raises(fermion.InvalidFileError, match="not a Fermion file"):
        fermion.FileReader(path)


def test_truncation_anywhere(tmp_path: Path, good_file) -> None:
    _, data = good_file
    cuts = sorted(
        {1, 8, 63, 64, 65, len(data) // 2, len(data) - 1, len(data) - 65}
        | set(range(9, len(data), max(1, len(data) // 40)))
    )
    for cut in cuts:
        with pytest.raises(TYPED):
            read_everything(write_variant(tmp_path, data[:cut]))


def test_footer_checks(tmp_path: Path, good_file) -> None:
    _, data = good_file
    f = footer_of(data)
    f["magic"] = b"PAR1"
    with pytest.raises(fermion.InvalidFileError, match="magic"):
        read_everything(write_variant(tmp_path, with_footer(data, f)))
    f = footer_of(data)
    f["version_major"] = 2
    with pytest.raises(fermion.UnsupportedVersionError):
        read_everything(write_variant(tmp_path, with_footer(data, f)))
    f = footer_of(data)
    f["required_features"] = 1 << 10  # the first bit no version defines yet
    with pytest.raises(fermion.UnsupportedVersionError, match="feature"):
        read_everything(write_variant(tmp_path, with_footer(data, f)))
    f = footer_of(data)
    f["optional_features"] |= 1 << 9  # unknown optional bits are informative only
    read_everything(write_variant(tmp_path, with_footer(data, f)))
    f = footer_of(data)
    f["num_rows"] += 1
    with pytest.raises(fermion.ChecksumError):
        read_everything(write_variant(tmp_path, with_footer(data, f, fix_crc=False)))
    for field, value in [
        ("cit_offset", 10**12),
        ("schema_offset", 3),
        ("cmb_offset", 2),
        ("num_columns", 10**6),
        ("schema_size", 5),
    ]:
        f = footer_of(data)
        f[field] = value
        with pytest.raises(fermion.InvalidFileError):
            read_everything(write_variant(tmp_path, with_footer(data, f)))
    f = footer_of(data)
    f["num_rows"] += 1  # valid CRC, but stripes no longer add up
    with pytest.raises(fermion.InvalidFileError):
        read_everything(write_variant(tmp_path, with_footer(data, f)))


def _flip(data: bytes, pos: int) -> bytes:
    b = bytearray(data)
    b[pos] ^= 0x10
    return bytes(b)


def test_bit_flips_in_every_region(tmp_path: Path, good_file) -> None:
    path, data = good_file
    f = footer_of(data)[0]
    cmb, schema, cit = int(f["cmb_offset"]), int(f["schema_offset"]), int(f["cit_offset"])
    schema_end = cit
    header = np.frombuffer(
        data[schema_end - SCHEMA_HEADER_DTYPE.itemsize : schema_end], dtype=SCHEMA_HEADER_DTYPE
    )[0]
    entries = schema + int(header["columns_offset"])
    regions = {
        "page body": 8 + PAGE_HEADER_SIZE + 2,
        "page header": 8 + 5,
        "cmb": cmb + 20,
        "schema header": schema_end - SCHEMA_HEADER_DTYPE.itemsize + 2,
        "column entry": entries + 40 * 5 + 20,  # column 5's blob offset
        "field blob": schema + int(header["heap_offset"]) + 3,
        "full schema": schema + 40,
        "cit": cit + 8 * 3 + 1,
    }
    for name, pos in regions.items():
        with pytest.raises(TYPED):
            read_everything(write_variant(tmp_path, _flip(data, pos), f"{name}.fermion"))


def test_hash_slot_damage_never_returns_a_wrong_column(tmp_path: Path, good_file) -> None:
    """Name-index slots are unprotected by design: a damaged slot may hide a name, but the
    name stored with the column is always compared, so no other column is ever returned."""
    _, data = good_file
    f = footer_of(data)[0]
    cit = int(f["cit_offset"])
    header = np.frombuffer(data[cit - SCHEMA_HEADER_DTYPE.itemsize : cit], SCHEMA_HEADER_DTYPE)[0]
    start = int(f["schema_offset"]) + int(header["hash_offset"])
    names = all_types_table(n=1).column_names
    for pos in range(start, start + 8 * int(header["hash_capacity"]), 37):
        path = write_variant(tmp_path, _flip(data, pos), "slot.fermion")
        with fermion.FileReader(path) as r:
            for name in names[::7]:
                try:
                    got = r.read(columns=[name])
                except (fermion.ColumnNotFoundError, fermion.InvalidFileError):
                    continue  # hidden, or detected as corrupt: both loud, neither wrong
                assert got.column_names == [name]


def _rewrite_first_page_header(data: bytes, **fields) -> bytes:
    header = np.frombuffer(data[8 : 8 + PAGE_HEADER_SIZE], dtype=PAGE_HEADER_DTYPE).copy()
    for k, v in fields.items():
        header[k] = v
    head = header.tobytes()
    first_page_len = len(data)  # recompute CRC over header rest + body of the first page
    body_end = 8 + PAGE_HEADER_SIZE
    # the first page of the file is the first column's first page; its size is in its CMB,
    # but the CRC can be recomputed over any body length the reader will use: find it by
    # trying lengths until the original CRC matches
    orig = np.frombuffer(data[8:12], dtype="<u4")[0]
    orig_head = data[12 : 8 + PAGE_HEADER_SIZE]
    for end in range(body_end, min(first_page_len, body_end + 1 << 16)):
        if zlib.crc32(data[body_end:end], zlib.crc32(orig_head)) == orig:
            crc = zlib.crc32(data[body_end:end], zlib.crc32(head[4:]))
            head = np.uint32(crc).astype("<u4").tobytes() + head[4:]
            return data[:8] + head + data[body_end:]
    raise AssertionError("first page not found")


@pytest.mark.parametrize(
    "fields,error",
    [
        ({"encoding": 77}, fermion.UnsupportedVersionError),
        ({"compression": 9}, fermion.UnsupportedVersionError),
        ({"num_values": 3}, fermion.InvalidFileError),
        ({"decoded_size": 0xFFFFFFF0}, fermion.InvalidFileError),
    ],
)
def test_page_header_lies(tmp_path: Path, good_file, fields: dict, error: type) -> None:
    _, data = good_file
    with pytest.raises(error):
        read_everything(write_variant(tmp_path, _rewrite_first_page_header(data, **fields)))


@pytest.mark.parametrize("verify", [True, False])
def test_fuzzed_files_raise_only_typed_errors(tmp_path: Path, good_file, verify: bool) -> None:
    _, data = good_file
    rng = random.Random(1234 + verify)
    failures = 0
    for i in range(150):
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(len(b))
            b[pos] = rng.randrange(256)
        path = write_variant(tmp_path, bytes(b), f"fuzz{i % 4}.fermion")
        try:
            read_everything(path, verify_checksums=verify)
        except TYPED:
            failures += 1
    assert failures > 0  # the fuzzer did hit something


# -- ZSTD_BLOCKS bodies (docs/FORMAT.md §5.2) ---------------------------------------------

_PAYLOAD = bytes(range(256)) * 40  # 10,240 bytes: 3 blocks of 4,096 (the last 2,048)


def _blocked(frames: list[bytes], block_size: int = 4096, num_blocks: int | None = None) -> bytes:
    table = np.zeros(1, dtype=BLOCK_TABLE_DTYPE)
    table["block_size"] = block_size
    table["num_blocks"] = len(frames) if num_blocks is None else num_blocks
    ends = np.cumsum([len(f) for f in frames], dtype=np.int64).astype("<u4")
    return table.tobytes() + ends.tobytes() + b"".join(frames)


def _frames(checksum: bool = True) -> list[bytes]:
    comp = zstandard.ZstdCompressor(write_content_size=True, write_checksum=checksum)
    return [comp.compress(_PAYLOAD[k : k + 4096]) for k in range(0, len(_PAYLOAD), 4096)]


def _flip_last(frame: bytes) -> bytes:  # the last byte of a checksummed frame: the checksum
    return frame[:-1] + bytes([frame[-1] ^ 1])


def _corrupt_bodies() -> dict[str, tuple[bytes, int]]:
    f = _frames()
    good = _blocked(f)
    ends_at = BLOCK_TABLE_DTYPE.itemsize
    swapped = bytearray(good)  # frame ends that decrease (first two ends swapped)
    swapped[ends_at : ends_at + 8] = good[ends_at + 4 : ends_at + 8] + good[ends_at : ends_at + 4]
    garbage = b"\x28\xb5\x2f\xfd" + b"\xff" * 30  # zstd magic, then nonsense
    return {
        "shorter than the table": (good[:5], len(_PAYLOAD)),
        "block_size 0": (_blocked(f, block_size=0), len(_PAYLOAD)),
        "too few blocks": (_blocked(f[:2], num_blocks=2), len(_PAYLOAD)),
        "too many blocks": (_blocked([*f, f[-1]]), len(_PAYLOAD)),
        "frame ends past the body": (good[: ends_at + 8], len(_PAYLOAD)),
        "decreasing frame ends": (bytes(swapped), len(_PAYLOAD)),
        "bytes after the last frame": (good + b"\0", len(_PAYLOAD)),
        "bytes after a frame inside its block": (
            _blocked([f[0] + b"\0", f[1], f[2]]),
            len(_PAYLOAD),
        ),
        "frame declares another size": (_blocked([f[2], f[1], f[2]]), len(_PAYLOAD)),
        "content checksum mismatch": (_blocked([f[0], _flip_last(f[1]), f[2]]), len(_PAYLOAD)),
        "frame without content checksum": (_blocked(_frames(checksum=False)), len(_PAYLOAD)),
        "garbage frame": (_blocked([f[0], garbage, f[2]]), len(_PAYLOAD)),
        "no blocks but frame bytes": (_blocked([], num_blocks=0) + f[0], 0),
    }


def test_blocked_body_reference_decodes() -> None:
    body = BlockedBody(memoryview(_blocked(_frames())), len(_PAYLOAD), "p")
    assert (body.block_size, body.num_blocks) == (4096, 3)
    assert body.decompress_all() == _PAYLOAD
    assert body.decompress(2) == _PAYLOAD[8192:]


@pytest.mark.parametrize("name", sorted(_corrupt_bodies()))
def test_blocked_body_checks(name: str) -> None:
    """Every reader check of a ZSTD_BLOCKS body raises InvalidFileError."""
    data, size = _corrupt_bodies()[name]
    with pytest.raises(fermion.InvalidFileError):
        BlockedBody(memoryview(data), size, "p").decompress_all()


def test_single_frame_page_refuses_bytes_after_its_frame() -> None:
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(_PAYLOAD)
    assert CODECS[Compression.ZSTD].decompress(memoryview(frame), len(_PAYLOAD)) == _PAYLOAD
    with pytest.raises(fermion.InvalidFileError):
        CODECS[Compression.ZSTD].decompress(memoryview(frame + b"\0"), len(_PAYLOAD))
