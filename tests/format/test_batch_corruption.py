"""Corrupt batch-mode metadata raises only typed errors.

Bad inputs tried here:
- the BATCH_MODE footer bit cleared on a batch file, and set on a plain file (valid CRC)
- truncation at many positions of a batch-mode file
- a flipped bit in the BATCH_META CMB (ChecksumError) and in a BATCH_META data page
- the BATCH_META CMB rewritten with a valid CRC: stripe min/max ids swapped, min/max of
  two stripes overlapping, batch counts of the two streams disagreeing, a stream's desc
  type changed to USE_DEFAULT, the column id of the header changed, a stripe's lengths
  chunk without min/max statistics, more batches than rows in a stripe
- the BATCH_META CIT entry pointing before the CMB area or at a user column's CMB
- BATCH_META pages rewritten with valid CRCs: a zero length, lengths not adding up to the
  stripe rows, decreasing ids, ids disagreeing with the chunk statistics
- random byte mutations in the metadata tail, with and without checksum verification
"""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fermion
from fermion.format.encoding.pages import encode_page
from fermion.format.metadata.structs import (
    CMB_HEADER_DTYPE,
    FOOTER_DTYPE,
    FULL_CHUNK_DESC_DTYPE,
    STREAM_META_DTYPE,
    Compression,
    DescType,
)
from tests.format.test_corruption import footer_of, with_footer, write_variant

NUM_STRIPES = 3


def read_everything(path: Path, **options) -> tuple[pa.Table, pa.Table, pa.Table, dict]:
    """Every read path once: the results (the description without the file's path)."""
    with fermion.FileReader(path, **options) as r:
        described = r.describe()
        described.pop("path")
        return (
            r.read(),
            r.read(columns=["_batch_id", "x"]),
            r.read_batches([1, 41, 77]),
            described,
        )


@pytest.fixture(scope="module")
def batch_file(tmp_path_factory) -> tuple[Path, bytes]:
    path = tmp_path_factory.mktemp("bcorrupt") / "good.fermion"
    schema = pa.schema([("x", pa.int64()), ("s", pa.string())])
    with fermion.FileWriter(
        path, schema, page_size=64, max_stripe_rows=60, compression="none"
    ) as w:
        for i in range(40):
            n = 1 + i % 7
            w.append_batch(2 * i + 1, pa.table({"x": list(range(n)), "s": ["v" * i] * n}))
    read_everything(path)
    with fermion.FileReader(path) as r:
        assert r.num_stripes == NUM_STRIPES
    return path, path.read_bytes()


def system_cmb(data: bytes) -> tuple[int, int]:
    f = footer_of(data)[0]
    cit = np.frombuffer(
        data, dtype="<i8", count=int(f["num_columns"]) + 2, offset=int(f["cit_offset"])
    )
    n = int(f["num_columns"])
    return int(cit[n]), int(cit[n + 1])


def rewrite_cmb(data: bytes, edit) -> bytes:
    """Apply ``edit(header, stream_metas, [ids descs, lengths descs])`` and fix the CRC."""
    start, end = system_cmb(data)
    cmb = bytearray(data[start:end])
    header = np.frombuffer(cmb, dtype=CMB_HEADER_DTYPE, count=1)
    stripes = int(header[0]["num_stripes"])
    meta_at = CMB_HEADER_DTYPE.itemsize + 4 * stripes
    metas = np.frombuffer(cmb, dtype=STREAM_META_DTYPE, count=2, offset=meta_at)
    descs = [
        np.frombuffer(cmb, FULL_CHUNK_DESC_DTYPE, count=stripes, offset=int(m["chunks_offset"]))
        for m in metas
    ]
    edit(header, metas, descs)
    header[0]["crc"] = zlib.crc32(bytes(cmb[CMB_HEADER_DTYPE.itemsize :]))
    return data[:start] + bytes(cmb) + data[end:]


def expect(tmp_path: Path, data: bytes, error: type = fermion.InvalidFileError) -> None:
    with pytest.raises(error):
        read_everything(write_variant(tmp_path, data))


def test_feature_bit_must_match_the_cit(tmp_path: Path, batch_file) -> None:
    _, data = batch_file
    f = footer_of(data)
    f["required_features"] = 0
    expect(tmp_path, with_footer(data, f))
    plain = tmp_path / "plain.fermion"
    fermion.write_table(pa.table({"x": [1, 2]}), plain)
    pdata = plain.read_bytes()
    f = footer_of(pdata)
    f["required_features"] = 1
    expect(tmp_path, with_footer(pdata, f))


def test_truncated_batch_file(tmp_path: Path, batch_file) -> None:
    _, data = batch_file
    for cut in sorted({1, 7, 63, 64, 65, 200, len(data) // 2, len(data) - 100}):
        expect(tmp_path, data[: len(data) - cut])


def test_bit_flip_in_batch_meta_cmb_and_pages(tmp_path: Path, batch_file) -> None:
    _, data = batch_file
    start, end = system_cmb(data)
    for pos in (start + 2, start + 20, (start + end) // 2, end - 1):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        expect(tmp_path, bytes(bad))
    with fermion.FileReader(write_variant(tmp_path, data, "ok.fermion")) as r:
        idx = r.batches()
        off = int(idx.meta.streams[1].page_offsets(2)[0])
    bad = bytearray(data)
    bad[off + 20] ^= 0x01
    expect(tmp_path, bytes(bad), fermion.ChecksumError)


def _swap_minmax(h, m, d) -> None:
    d[0]["chunk_min"][1], d[0]["chunk_max"][1] = (
        int(d[0]["chunk_max"][1]),
        int(d[0]["chunk_min"][1]),
    )


def _overlap(h, m, d) -> None:
    d[0]["chunk_min"][2] = int(d[0]["chunk_max"][1])


def _counts(h, m, d) -> None:
    d[1]["num_values"][0] = int(d[1]["num_values"][0]) + 1


def _desc_type(h, m, d) -> None:
    m[1]["desc_type"] = DescType.USE_DEFAULT


def _column(h, m, d) -> None:
    h[0]["column"] = 0


def _max_id(h, m, d) -> None:
    d[0]["chunk_max"][2] = int(d[0]["chunk_max"][2]) + 1


def _no_minmax(h, m, d) -> None:
    d[1]["stats_flags"][1] = 0


def _more_batches_than_rows(h, m, d) -> None:
    for desc in d:
        desc["num_values"][0] = 10**6


@pytest.mark.parametrize(
    "edit",
    [
        _swap_minmax,
        _overlap,
        _counts,
        _desc_type,
        _column,
        _max_id,
        _no_minmax,
        _more_batches_than_rows,
    ],
)
def test_lying_batch_meta_cmb(tmp_path: Path, batch_file, edit) -> None:
    _, data = batch_file
    expect(tmp_path, rewrite_cmb(data, edit))


def test_batch_meta_cit_entry(tmp_path: Path, batch_file) -> None:
    _, data = batch_file
    f = footer_of(data)[0]
    n = int(f["num_columns"])
    at = int(f["cit_offset"]) + 8 * n
    cit = np.frombuffer(data, dtype="<i8", count=n + 2, offset=int(f["cit_offset"]))
    for value in (0, int(cit[0]), int(f["schema_offset"]) + 8):
        bad = data[:at] + np.int64(value).tobytes() + data[at + 8 :]
        expect(tmp_path, bad)


def _rewrite_page(tmp_path: Path, data: bytes, stream: int, stripe: int, change) -> bytes:
    """Page 0 of a BATCH_META chunk with ``change``d values and a valid CRC."""
    with fermion.FileReader(write_variant(tmp_path, data, "page.fermion")) as r:
        desc = r.batches().meta.streams[stream]
        off = int(desc.page_offsets(stripe)[0])
        size = int(desc.pages(stripe)[0]["page_size"])
        count = int(desc.pages(stripe)[0]["row_count"])
    dtype = "<i8" if stream == 0 else "<u4"
    values = np.frombuffer(data, dtype=dtype, count=count, offset=off + 16).copy()
    change(values)
    page = encode_page(values.tobytes(), num_values=count, codec=Compression.NONE, level=0)
    assert len(page) == size
    return data[:off] + page + data[off + size :]


def _zero(v) -> None:
    v[0] = 0


def _bigger(v) -> None:
    v[-1] += 1


def _decreasing(v) -> None:
    v[0], v[-1] = v[-1], v[0]


def _shift(v) -> None:
    v[:] = v + 1


@pytest.mark.parametrize("stream,change", [(1, _zero), (1, _bigger), (0, _decreasing), (0, _shift)])
def test_lying_batch_meta_pages(tmp_path: Path, batch_file, stream: int, change) -> None:
    _, data = batch_file
    bad = _rewrite_page(tmp_path, data, stream, 1, change)
    with pytest.raises(fermion.InvalidFileError):
        with fermion.FileReader(write_variant(tmp_path, bad)) as r:
            r.read_batches([int(r.batches().min_ids[1])])


@pytest.mark.parametrize("verify", [True, False])
def test_fuzzed_batch_metadata(tmp_path: Path, batch_file, verify: bool) -> None:
    """A mutated metadata tail raises a typed error or reads exactly what the file holds."""
    good_path, data = batch_file
    expected = read_everything(good_path)
    start, _ = system_cmb(data)
    rnd = random.Random(4 + verify)
    errors = 0
    for _ in range(60):
        bad = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            pos = rnd.randrange(start, len(data) - FOOTER_DTYPE.itemsize)
            bad[pos] = rnd.randrange(256)
        path = write_variant(tmp_path, bytes(bad))
        try:
            got = read_everything(path, verify_checksums=verify)
        except fermion.FermionError:
            errors += 1
            continue
        for g, e in zip(got[:3], expected[:3], strict=True):
            assert g.equals(e)
        assert got[3] == expected[3]
    assert errors > 0  # the mutations do reach checked metadata
