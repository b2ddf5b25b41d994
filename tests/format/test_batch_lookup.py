"""Batch lookups of flat fixed-width columns read together (fermion.format.read.batch_lookup).

Checked against a full read of the same file: random batch files (hypothesis) of numeric
and temporal columns, with and without nulls (columns with nulls take the general path),
ids asked in any order with repeats, through a memory map and through ``os.pread``; the
IO a lookup does; the batch-mode block size; and corruption of the bytes this path reads:
every byte of a column's pages flipped in turn, frames without a content checksum, a
frame table pointing outside the page.

Bad inputs tried here: flipped bytes in page headers, block tables, zstd frames and the
encoding header of a BYTE_SPLIT page (flipped, and a value count rewritten in a
recompressed block); a frame whose Content_Checksum_flag is cleared; a
block table entry beyond the frames; an id not in the file.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion
from fermion.format.metadata.structs import Compression, Encoding, StreamType
from fermion.format.options import BATCH_BLOCK_SIZE
from fermion.format.read import batch_lookup
from fermion.format.read.batch_lookup import fast_columns
from tests.support.budget import examples

TYPES = [
    pa.float32(),
    pa.float64(),
    pa.int64(),
    pa.int32(),
    pa.int8(),
    pa.uint16(),
    pa.timestamp("us"),
    pa.date32(),
]


def _column(rng: np.random.Generator, t: pa.DataType, n: int, nulls: bool) -> pa.Array:
    if pa.types.is_floating(t):
        values = rng.random(n).astype(t.to_pandas_dtype())
        arr = pa.array(values, t)
    elif pa.types.is_timestamp(t) or pa.types.is_date(t):
        arr = pa.array(rng.integers(0, 1 << 30, n), pa.int64()).cast(
            pa.int32() if t == pa.date32() else pa.int64()
        )
        arr = arr.view(t) if t != pa.date32() else arr.cast(t)
    else:
        info = np.iinfo(t.to_pandas_dtype())
        arr = pa.array(rng.integers(max(info.min, -(1 << 40)), min(info.max, 1 << 40), n), t)
    if nulls:
        mask = pa.array(rng.random(n) < 0.2)
        arr = pc.if_else(mask, pa.nulls(n, t), arr)
    return arr


def write_batches(
    path: Path, table: pa.Table, sizes: list[int], ids: list[int], **options: object
) -> None:
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    with fermion.FileWriter(path, table.schema, **options) as w:
        for bid, a, size in zip(ids, starts, sizes, strict=False):
            w.append_batch(bid, table.slice(a, size))


def expected_rows(table: pa.Table, sizes: list[int], ids: list[int], asked: list[int]) -> pa.Table:
    starts = np.concatenate([[0], np.cumsum(sizes)])
    where = {bid: k for k, bid in enumerate(ids)}
    rows = np.concatenate(
        [np.arange(starts[where[b]], starts[where[b]] + sizes[where[b]]) for b in asked]
    )
    return table.take(pa.array(rows, pa.int64()))


@settings(max_examples=examples(25), suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31),
    batches=st.integers(1, 60),
    max_rows=st.integers(1, 300),
    types=st.lists(st.sampled_from(TYPES), min_size=1, max_size=5),
    nulls=st.lists(st.booleans(), min_size=5, max_size=5),
    block=st.sampled_from([256, 2048]),
    stripe_rows=st.sampled_from([1_000, 1 << 20]),
    memory_map=st.booleans(),
)
def test_lookup_matches_full_read(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    batches: int,
    max_rows: int,
    types: list[pa.DataType],
    nulls: list[bool],
    block: int,
    stripe_rows: int,
    memory_map: bool,
) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_rows + 1, batches).tolist()
    ids = np.cumsum(rng.integers(1, 5, batches)).tolist()
    n = int(sum(sizes))
    table = pa.table({f"c{i}": _column(rng, t, n, nulls[i]) for i, t in enumerate(types)})
    path = tmp_path_factory.mktemp("bl") / "t.fermion"
    write_batches(
        path,
        table,
        sizes,
        ids,
        compression_block_size=block,
        max_stripe_rows=stripe_rows,
        page_size=4096,
    )
    asked = rng.choice(ids, size=int(rng.integers(1, 6)), replace=True).tolist()
    columns = list(rng.permutation(table.column_names))
    with fermion.FileReader(path, memory_map=memory_map) as r:
        got = r.read_batches(asked, columns=columns)
    assert got.equals(expected_rows(table, sizes, ids, asked).select(columns))


def _batch_file(tmp_path: Path, **options: object) -> tuple[Path, pa.Table, list[int], list[int]]:
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 65, 400).tolist()
    ids = (np.arange(400) * 3 + 100).tolist()
    n = int(sum(sizes))
    cols = {f"f{i}": pa.array(rng.random(n).astype(np.float32)) for i in range(6)}
    cols["k"] = pa.array(np.arange(n, dtype=np.int64) * 7)
    table = pa.table(cols)
    path = tmp_path / "b.fermion"
    write_batches(path, table, sizes, ids, **options)
    return path, table, sizes, ids


def test_fast_columns_are_the_flat_fixed_width_ones(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            ("x", pa.float32()),
            ("n", pa.int64()),  # nulls stored: general path
            ("s", pa.string()),
            ("l", pa.list_(pa.int64())),
            ("t", pa.timestamp("ms")),
        ]
    )
    table = pa.table(
        {
            "x": pa.array([1.0, 2.0], pa.float32()),
            "n": pa.array([1, None], pa.int64()),
            "s": ["a", "b"],
            "l": [[1], []],
            "t": pa.array([1, 2], pa.timestamp("ms")),
        },
        schema=schema,
    )
    path = tmp_path / "f.fermion"
    write_batches(path, table, [2], [1])
    with fermion.FileReader(path) as r:
        projs = r.file_meta.projections(schema.names)
        assert fast_columns(projs, r.file_meta.column_metas(projs)) == [0, 4]
        assert r.read_batches([1]).equals(table)


def test_batch_mode_blocks_are_small_and_lookups_read_only_them(tmp_path: Path) -> None:
    path, table, sizes, ids = _batch_file(tmp_path)
    with fermion.FileReader(path, memory_map=False) as r:
        opened = r.source.stats.bytes_read
        (proj,) = r.file_meta.projections(["f0"])
        (meta,) = r.file_meta.column_metas([proj])
        spec = proj.tree.stream(StreamType.DATA)
        assert spec is not None
        lay = meta.streams[spec.index].layout(0)
        page = r.source.read(int(lay.offsets[0]), 24)
        assert page[5] == Compression.ZSTD_BLOCKS
        block_size, _ = struct.unpack_from("<II", page, 16)
        assert block_size == BATCH_BLOCK_SIZE
        before = r.source.stats.bytes_read
        got = r.read_batches([ids[200]], columns=["f0", "f3", "k"])
        used = r.source.stats.bytes_read - before
    assert got.equals(expected_rows(table, sizes, ids, [ids[200]]).select(["f0", "f3", "k"]))
    assert opened > 0
    # headers, block tables and a few 2 KiB blocks of 3 columns out of 7
    assert 0 < used < path.stat().st_size / 10


def test_lookup_uses_the_shared_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, table, sizes, ids = _batch_file(tmp_path)
    calls: list[int] = []
    real = batch_lookup.read_points

    def counting(*args: object, **kwargs: object) -> list[pa.Array]:
        calls.append(len(args[1]))  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("fermion.format.read.reader.read_points", counting)
    with fermion.FileReader(path) as r:
        got = r.read_batches([ids[5], ids[399], ids[5]])
    assert calls and sum(calls) == 7 * len(calls)  # every column, one call per stripe
    assert got.equals(expected_rows(table, sizes, ids, [ids[5], ids[399], ids[5]]))


def _page_span(path: Path, column: str, stream: StreamType = StreamType.DATA) -> tuple[int, int]:
    with fermion.FileReader(path) as r:
        (proj,) = r.file_meta.projections([column])
        (meta,) = r.file_meta.column_metas([proj])
        spec = proj.tree.stream(stream)
        assert spec is not None
        lay = meta.streams[spec.index].layout(0)
        return int(lay.offsets[0]), int(lay.offsets[-1] + lay.sizes[-1])


def _flips_caught(
    path: Path,
    begin: int,
    end: int,
    samples: int,
    read: Callable[[Path], pa.Table],
    expected: pa.Table,
) -> dict[str, int]:
    """Flip about ``samples`` bytes of ``[begin, end)`` one at a time and ``read(path)``:
    how many raised ``ChecksumError``, another ``FermionError``, or read ``expected``
    (anything else fails the test)."""
    original = path.read_bytes()
    caught = {"checksum": 0, "structural": 0, "same": 0}
    for pos in range(begin, end, max(1, (end - begin) // samples)):
        data = bytearray(original)
        data[pos] ^= 0xFF
        path.write_bytes(bytes(data))
        try:
            got = read(path)
        except fermion.ChecksumError:
            caught["checksum"] += 1
        except fermion.FermionError:
            caught["structural"] += 1
        else:
            assert got.equals(expected), f"silently different values after flipping {pos}"
            caught["same"] += 1
    return caught


@pytest.mark.parametrize("memory_map", [True, False])
def test_flipped_bytes_of_the_pages_read_are_caught_or_harmless(
    tmp_path: Path, memory_map: bool
) -> None:
    path, table, sizes, ids = _batch_file(tmp_path, max_stripe_rows=4_000)
    asked = [ids[0], ids[30]]
    expected = expected_rows(table, sizes, ids, asked).select(["f2"])
    begin, end = _page_span(path, "f2")

    def read(p: Path) -> pa.Table:
        with fermion.FileReader(p, memory_map=memory_map) as r:
            return r.read_batches(asked, columns=["f2"])

    caught = _flips_caught(path, begin, end, 600, read, expected)
    assert caught["checksum"] > 0 and caught["same"] > 0  # blocks not read are not used


def _first_frame(data: bytes, begin: int) -> tuple[int, int, int]:
    """(frames start, num blocks, table start) of the ZSTD_BLOCKS page at ``begin``."""
    assert data[begin + 5] == Compression.ZSTD_BLOCKS
    _, num_blocks = struct.unpack_from("<II", data, begin + 16)
    return begin + 24 + 4 * num_blocks, num_blocks, begin + 24


def _clear_checksum_flag(data: bytearray, begin: int) -> None:
    frames, _, _ = _first_frame(bytes(data), begin)
    assert data[frames : frames + 4] == b"\x28\xb5\x2f\xfd"
    data[frames + 4] &= ~4 & 0xFF  # Content_Checksum_flag of block 0 (holds the header)


def _end_past_the_frames(data: bytearray, begin: int) -> None:
    _, _, table_at = _first_frame(bytes(data), begin)
    struct.pack_into("<I", data, table_at, 1 << 30)  # the end of block 0


@pytest.mark.parametrize(
    ("corrupt", "message", "columns"),
    [
        (_clear_checksum_flag, "zstd block frame carries no content checksum", ["f0", "f1", "f2"]),
        (_end_past_the_frames, "block frame ends are inconsistent", ["f2", "f0", "f1"]),
    ],
)
def test_a_corrupt_frame_table_or_frame_is_refused(
    tmp_path: Path, corrupt, message: str, columns: list[str]
) -> None:
    """f0, f1 and f2 are pages alike, planned together: the message names f1's page."""
    path, table, sizes, ids = _batch_file(tmp_path)
    begin, _ = _page_span(path, "f1")
    data = bytearray(path.read_bytes())
    corrupt(data, begin)
    path.write_bytes(bytes(data))
    where = f"column 'f1', stripe 0, page at offset {begin}: {message}"
    with fermion.FileReader(path) as r, pytest.raises(fermion.InvalidFileError, match=where):
        r.read_batches([ids[0]], columns=columns)


def _rewrite_header_count(path: Path) -> None:
    """Add 1 to the value count of the EncodingHeader of f1's BYTE_SPLIT page, in its
    block 0, and recompress the block (to the same size, so the page's frame table and
    the metadata still hold)."""
    import zstandard

    begin, _ = _page_span(path, "f1")
    data = bytearray(path.read_bytes())
    frames, num_blocks, table_at = _first_frame(bytes(data), begin)
    assert data[begin + 4] == Encoding.BYTE_SPLIT
    size = struct.unpack_from("<I", data, table_at)[0]  # the end of block 0's frame
    block0 = bytearray(zstandard.ZstdDecompressor().decompress(bytes(data[frames : frames + size])))
    struct.pack_into("<I", block0, 16, struct.unpack_from("<I", block0, 16)[0] + 1)
    frame = zstandard.ZstdCompressor(write_checksum=True).compress(bytes(block0))
    assert len(frame) == size  # (the data is seeded: this holds)
    data[frames : frames + size] = frame
    path.write_bytes(bytes(data))


def test_a_wrong_encoding_header_is_refused(tmp_path: Path) -> None:
    """The EncodingHeader of a BYTE_SPLIT page sits in its block 0, with the first values
    of its first plane: a lookup of the first batch reads it, and only the page of f1,
    whose header is wrong, is refused."""
    path, table, sizes, ids = _batch_file(tmp_path)
    _rewrite_header_count(path)
    with fermion.FileReader(path) as r:
        with pytest.raises(fermion.InvalidFileError, match="'f1', .*holds .* values"):
            r.read_batches([ids[0]], columns=["f0", "f1", "f2"])
        assert r.read_batches([ids[0]], columns=["f0", "f2"]).num_rows == sizes[0]


def test_the_header_block_is_read_only_when_it_holds_wanted_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose values lie past block 0 of each BYTE_SPLIT page decompresses only
    the blocks of its planes' bytes (docs/FORMAT.md §9): one or two per plane, never the
    header's block 0. Its values do not depend on the header (the page header fixes
    where the planes lie), so even with f1's header wrong they are right."""
    path, table, sizes, ids = _batch_file(tmp_path)
    _rewrite_header_count(path)
    decoded: list[int] = []
    real = batch_lookup.decompress_blocks

    def counting(frames: list[memoryview], block_sizes: list[int], where: str) -> list[bytes]:
        decoded.append(len(frames))
        return real(frames, block_sizes, where)

    monkeypatch.setattr(batch_lookup, "decompress_blocks", counting)
    late = 300  # rows past block 0's (2,048 bytes hold the header and 2,024 plane bytes)
    first = int(sum(sizes[:late]))
    last = first + sizes[late] - 1
    assert first > BATCH_BLOCK_SIZE
    columns = ["f0", "f1", "f2"]
    with fermion.FileReader(path) as r:
        got = r.read_batches([ids[late]], columns=columns)
        (proj,) = r.file_meta.projections(["f1"])
        (meta,) = r.file_meta.column_metas([proj])
        spec = proj.tree.stream(StreamType.DATA)
        assert spec is not None
        values = int(meta.streams[spec.index].layout(0).counts[0])  # one page per column
    assert got.equals(expected_rows(table, sizes, ids, [ids[late]]).select(columns))
    bs = BATCH_BLOCK_SIZE
    blocks = {
        k
        for plane in range(4)  # float32: four planes after the 24-byte header
        for k in range((24 + plane * values + first) // bs, (24 + plane * values + last) // bs + 1)
    }
    assert 0 not in blocks and 4 <= len(blocks) <= 8
    assert decoded == [len(blocks) * len(columns)]
    with fermion.FileReader(path) as r, pytest.raises(fermion.InvalidFileError, match="'f1'"):
        r.read_batches([ids[0]], columns=columns)  # block 0 read: the header is checked


def test_unknown_id_raises(tmp_path: Path) -> None:
    path, _, _, ids = _batch_file(tmp_path)
    with fermion.FileReader(path) as r, pytest.raises(fermion.BatchModeError):
        r.read_batches([ids[3], 1], columns=["f0"])


@settings(max_examples=examples(20), suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31),
    batches=st.integers(1, 50),
    max_rows=st.integers(1, 200),
    max_len=st.integers(0, 12),
    large=st.booleans(),
    child=st.sampled_from([pa.int64(), pa.float32(), pa.int16()]),
    page_size=st.sampled_from([512, 1 << 20]),
    memory_map=st.booleans(),
)
def test_list_lookup_matches_full_read(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    batches: int,
    max_rows: int,
    max_len: int,
    large: bool,
    child: pa.DataType,
    page_size: int,
    memory_map: bool,
) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_rows + 1, batches).tolist()
    ids = np.cumsum(rng.integers(1, 5, batches)).tolist()
    n = int(sum(sizes))
    lengths = rng.integers(0, max_len + 1, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    values = _column(rng, child, int(offsets[-1]), False)
    list_type = pa.large_list(child) if large else pa.list_(child)
    offs = pa.array(offsets, pa.int64() if large else pa.int32())
    array = (pa.LargeListArray if large else pa.ListArray).from_arrays(offs, values)
    table = pa.table({"x": pa.array(rng.random(n)), "l": array.cast(list_type)})
    path = tmp_path_factory.mktemp("ll") / "t.fermion"
    write_batches(path, table, sizes, ids, page_size=page_size, max_stripe_rows=2_000)
    asked = rng.choice(ids, size=int(rng.integers(1, 5)), replace=True).tolist()
    with fermion.FileReader(path, memory_map=memory_map) as r:
        got = r.read_batches(asked, columns=["l", "x"])
    assert got.equals(expected_rows(table, sizes, ids, asked).select(["l", "x"]))


def _tags_batches(
    seed: int, batches: int, max_batch: int, max_length: int
) -> tuple[pa.Table, list[int], list[int]]:
    """(a ``tags: list<int64>`` table, batch sizes, batch ids 0..batches-1)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_batch, batches).tolist()
    lengths = rng.integers(0, max_length, int(sum(sizes)))
    values = pa.array(rng.integers(0, 1 << 40, int(lengths.sum())))
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    return (
        pa.table({"tags": pa.ListArray.from_arrays(offsets, values)}),
        sizes,
        list(range(batches)),
    )


def test_list_lookup_reads_a_small_part_of_the_column(tmp_path: Path) -> None:
    table, sizes, ids = _tags_batches(4, 600, 65, 9)
    path = tmp_path / "l.fermion"
    write_batches(path, table, sizes, ids)
    with fermion.FileReader(path, memory_map=False) as r:
        projs = r.file_meta.projections(["tags"])
        assert batch_lookup.list_columns(projs, r.file_meta.column_metas(projs)) == [0]
        before = r.source.stats.bytes_read
        got = r.read_batches([ids[300]])
        used = r.source.stats.bytes_read - before
    assert got.equals(expected_rows(table, sizes, ids, [ids[300]]))
    assert 0 < used < path.stat().st_size / 10  # not the stripe's whole chunk


def test_flipped_bytes_of_a_list_column_are_caught_or_harmless(tmp_path: Path) -> None:
    table, sizes, ids = _tags_batches(6, 80, 30, 6)
    path = tmp_path / "l.fermion"
    write_batches(path, table, sizes, ids, checksum_block_size=256)
    asked = [ids[2], ids[60]]
    expected = expected_rows(table, sizes, ids, asked)
    with fermion.FileReader(path) as r:
        (proj,) = r.file_meta.projections(["tags"])
        (meta,) = r.file_meta.column_metas([proj])
        spans = [
            (int(lay.offsets[0]), int(lay.offsets[-1] + lay.sizes[-1]))
            for lay in (
                meta.streams[spec.index].layout(0)
                for spec in proj.tree.all_streams()
                if meta.streams[spec.index].full is not None
            )
        ]
    original = path.read_bytes()
    caught = {"checksum": 0, "structural": 0, "same": 0}
    for begin, end in spans:
        for pos in range(begin, end, max(1, (end - begin) // 300)):
            data = bytearray(original)
            data[pos] ^= 0xFF
            path.write_bytes(bytes(data))
            try:
                with fermion.FileReader(path, memory_map=False) as r:
                    got = r.read_batches(asked)
            except fermion.ChecksumError:
                caught["checksum"] += 1
            except fermion.FermionError:
                caught["structural"] += 1
            else:
                assert got.equals(expected), f"silently different values after flipping {pos}"
                caught["same"] += 1
    assert caught["checksum"] > 0


def _tracked_after_lookup(path: Path, columns: list[str], batch_id: int) -> int:
    """Objects the garbage collector tracks that a fresh reader's lookup holds alive."""
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects(generation=0))
        with fermion.FileReader(path) as r:
            got = r.read_batches([batch_id], columns=columns)
            alive = len(gc.get_objects(generation=0)) - before
        assert got.num_columns == len(columns)
        return alive
    finally:
        gc.enable()


def test_a_lookup_keeps_few_tracked_objects_per_column(tmp_path: Path) -> None:
    """Each tracked object a lookup keeps alive makes the collector run sooner, and
    survivors of young collections make full ones more frequent: a lookup keeps a few
    objects per column it opens (field, node, column info, projection, CMB, stream
    descriptor, output array: 9 on this file), none per stripe or page (27 on this file
    before CMB descriptors kept their chunks as bytes)."""
    rng = np.random.default_rng(5)
    n, width = 4_000, 41
    table = pa.table({f"c{i}": rng.random(n).astype(np.float32) for i in range(width)})
    path = tmp_path / "w.fermion"
    write_batches(path, table, [40] * 100, list(range(100)), max_stripe_rows=1_000, page_size=1_024)
    with fermion.FileReader(path) as r:
        assert r.num_stripes == 4
        (meta,) = r.file_meta.column_metas(r.file_meta.projections(["c0"]))
        assert len(meta.streams[1].pages(2)) > 1  # several pages a stripe
    names = table.column_names
    _tracked_after_lookup(path, names, 57)  # imports and caches of a first lookup
    one = _tracked_after_lookup(path, names[:1], 57)
    many = _tracked_after_lookup(path, names, 57)
    per_column = (many - one) / (width - 1)
    assert 5 <= per_column <= 10, per_column


def _scattered_file(tmp_path: Path) -> tuple[Path, pa.Table, list[int]]:
    """A file of several pages a column (random float64 with 24 low mantissa bits cleared,
    whose planes zstd keeps in blocks: BYTE_SPLIT, random float32, an int64 sequence), and
    rows at page and block boundaries and scattered between them."""
    rng = np.random.default_rng(11)
    n = 40_000
    d = (rng.random(n).view(np.uint64) & np.uint64(~0xFFFFFF & (2**64 - 1))).view(np.float64)
    table = pa.table({
        "d": pa.array(d),
        "f": pa.array(rng.random(n).astype(np.float32)),
        "k": pa.array(np.arange(n, dtype=np.int64) * 3 - 5),
    })  # fmt: skip
    path = tmp_path / "s.fermion"
    with fermion.FileWriter(path, table.schema, page_size=16 << 10) as w:
        w.write(table)
    with fermion.FileReader(path) as r:
        (proj,) = r.file_meta.projections(["d"])
        (meta,) = r.file_meta.column_metas([proj])
        spec = proj.tree.stream(StreamType.DATA)
        assert spec is not None
        lay = meta.streams[spec.index].layout(0)
        assert len(lay.starts) > 4  # several pages
        page = r.source.read(int(lay.offsets[1]), 6)
        assert (page[4], page[5]) == (Encoding.BYTE_SPLIT, Compression.ZSTD_BLOCKS)
        edges = np.concatenate([lay.starts, lay.ends - 1])
    inside = rng.choice(n, 30, replace=False)
    rows = np.unique(np.concatenate([edges, edges + 1, inside, [0, n - 1]]))
    return path, table, rows[rows < n].tolist()


@pytest.mark.parametrize("sparse", [True, False])
def test_scattered_points_are_picked_from_the_blocks_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sparse: bool
) -> None:
    """The values of scattered rows come from their decoded blocks byte by byte (few
    wanted bytes) or from the blocks joined (many): both give the rows, at page and
    block boundaries too."""
    path, table, rows = _scattered_file(tmp_path)
    monkeypatch.setattr(batch_lookup, "_SPARSE_PICK", 0 if sparse else 1 << 40)
    picked: list[bool] = []
    real = batch_lookup._Decoded.take

    def spying(self: batch_lookup._Decoded, at: np.ndarray) -> np.ndarray:
        picked.append(self._whole is None and at.size * batch_lookup._SPARSE_PICK < self.bases[-1])
        return real(self, at)

    monkeypatch.setattr(batch_lookup._Decoded, "take", spying)
    for memory_map in (True, False):
        with fermion.FileReader(path, memory_map=memory_map) as r:
            got = r.take(rows)
        assert got.equals(table.take(pa.array(rows)))
    assert picked and all(p == sparse for p in picked)


def test_decompress_blocks_refuses_bad_frames() -> None:
    import zstandard

    comp = zstandard.ZstdCompressor(write_checksum=True)
    good = comp.compress(b"abcdefgh" * 100)
    assert (
        batch_lookup.decompress_blocks([good, memoryview(good)], [800, 800], "p")
        == [b"abcdefgh" * 100] * 2
    )
    unsized = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False)
    assert batch_lookup.decompress_blocks([unsized.compress(b"xy" * 9)], [18], "p") == [b"xy" * 9]
    with pytest.raises(fermion.InvalidFileError, match="p: corrupt zstd block"):
        batch_lookup.decompress_blocks([good + b"\0"], [800], "p")  # trailing bytes
    with pytest.raises(fermion.InvalidFileError, match="p: .*wrong size"):
        batch_lookup.decompress_blocks([good], [801], "p")
    with pytest.raises(fermion.InvalidFileError, match="p: corrupt zstd block"):
        batch_lookup.decompress_blocks([unsized.compress(b"xy" * 9)], [17], "p")
    flipped = bytearray(good)
    flipped[-1] ^= 1  # the content checksum
    with pytest.raises(fermion.ChecksumError, match="p: zstd content checksum mismatch"):
        batch_lookup.decompress_blocks([bytes(flipped)], [800], "p")


def _strings_file(tmp_path: Path) -> tuple[Path, pa.Table]:
    """Strings of several pages a stripe, in 3 stripes: PLAIN values with FOR lengths,
    page and stripe dictionaries, large strings, binaries, and a column with nulls."""
    rng = np.random.default_rng(5)
    n = 30_000
    words = np.array(
        ["".join(rng.choice(list("abcdefghij"), rng.integers(0, 30))) for _ in range(5000)]
    )
    labels = np.array([f"l{i:03d}" for i in range(100)])
    table = pa.table({
        "hi": pa.array([f"{w}-{i}" for i, w in enumerate(words[rng.integers(0, 5000, n)])]),
        "lo": pa.array(labels[rng.integers(0, 100, n)]),
        "big": pa.array(words[rng.integers(0, 5000, n)], pa.large_string()),
        "bin": pa.array([w.encode() for w in words[rng.integers(0, 5000, n)]], pa.binary()),
        "nul": pa.array([None if i % 7 == 0 else str(i) for i in range(n)]),
        "x": pa.array(np.arange(n, dtype=np.int64)),
    })  # fmt: skip
    path = tmp_path / "str.fermion"
    with fermion.FileWriter(path, table.schema, page_size=8 << 10, max_stripe_rows=12_000) as w:
        w.write(table)
    return path, table


@pytest.mark.parametrize("memory_map", [True, False])
def test_string_points_are_read_page_by_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_map: bool
) -> None:
    """Flat string and binary columns without nulls are read value by value from their
    page pairs (batch_lookup.read_binary_points), at page and stripe edges too; a chunk
    with a stripe dictionary, and a column with nulls, take the stripe reader."""
    path, table = _strings_file(tmp_path)
    edges = [0, table.num_rows - 1]
    with fermion.FileReader(path) as r:
        for name in ("hi", "big", "lo"):
            (proj,) = r.file_meta.projections([name])
            (meta,) = r.file_meta.column_metas([proj])
            spec = proj.tree.stream(StreamType.DATA)
            assert spec is not None
            for s in range(r.num_stripes):
                lay = meta.streams[spec.index].layout(s)
                base = 12_000 * s
                edges += (base + lay.starts).tolist() + (base + lay.ends - 1).tolist()
        projs = r.file_meta.projections(table.column_names)
        assert batch_lookup.binary_columns(projs, r.file_meta.column_metas(projs)) == [0, 1, 2, 3]
    rows = np.unique(np.clip(np.array(edges + [e + 1 for e in edges]), 0, table.num_rows - 1))
    rows = np.union1d(rows, np.random.default_rng(2).choice(table.num_rows, 40, replace=False))
    results: list[bool] = []
    real = batch_lookup.read_binary_points

    def spying(*args: object) -> pa.Array | None:
        got = real(*args)  # type: ignore[arg-type]
        results.append(got is not None)
        return got

    monkeypatch.setattr("fermion.format.read.reader.read_binary_points", spying)
    with fermion.FileReader(path, memory_map=memory_map) as r:
        got = r.take(rows[::-1])
    assert got.equals(table.take(pa.array(rows[::-1])))
    if memory_map:  # (point reads of a mapped file; another source keeps the stripe reader)
        assert True in results and False in results  # page by page, and a stripe dictionary


def test_flipped_bytes_of_string_pages_are_caught_or_harmless(tmp_path: Path) -> None:
    """Every byte a string point read uses is verified: a flip in the pages of ``hi``
    (PLAIN values in zstd blocks, FOR lengths in CRC blocks) raises or leaves the rows
    read unchanged (the byte was not read)."""
    path, table = _strings_file(tmp_path)
    rows = [5, 4_000, 11_999, 12_000, 29_999]
    expected = table.take(pa.array(rows)).select(["hi"])
    begin, end = _page_span(path, "hi")
    begin = min(begin, _page_span(path, "hi", StreamType.OFFSETS)[0])

    def read(p: Path) -> pa.Table:
        with fermion.FileReader(p) as r:
            return r.take(rows, columns=["hi"])

    caught = _flips_caught(path, begin, end, 400, read, expected)
    assert caught["checksum"] > 0 and caught["same"] > 0


def test_take_returns_rows_in_the_order_asked(tmp_path: Path) -> None:
    """Rows asked in increasing order come back as read; in any other order, or with
    repeats, they are put in the order asked (across stripes, both sources)."""
    path, table = _strings_file(tmp_path)
    increasing = [0, 3, 11_999, 12_000, 20_000, 29_999]
    for asked in (increasing, increasing[::-1], [12_000, 3, 12_000, 0], [7], [5, 5], []):
        for memory_map in (True, False):
            with fermion.FileReader(path, memory_map=memory_map) as r:
                got = r.take(asked)
            assert got.equals(table.take(pa.array(asked, pa.int64()))), (asked, memory_map)
