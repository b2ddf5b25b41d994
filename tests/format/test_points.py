"""Point reads for ``take``: the same answer as whole-page decoding, for less work.

Every comparison here checks three answers for the same indices: ``take`` with point reads
(the default), ``take`` with ``point_reads=False`` (whole pages decoded, CRCs verified) and
Arrow's own take of the table that was written. Files cover every type (with nulls) in
multi-stripe multi-page layouts, every encoding the writer chooses, no compression, one
zstd frame per page and blocked zstd pages of 256 and 1024 bytes (so that pages hold many
blocks), unsorted indices with repeats, first and last rows, whole pages, empty indices,
projections, all-null columns and chunks, decimals that only fit PLAIN pages, empty and
very long strings, and batch-mode files. The last tests count work: blocks decompressed,
integers unpacked and pages decoded whole.
"""

from __future__ import annotations

import decimal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion
from fermion.format import native
from fermion.format.encoding import bitpack, encodings
from fermion.format.encoding.encodings import CHECKPOINT_INTERVAL, HEADER_SIZE
from fermion.format.encoding.pages import BlockedBody, encode_page
from fermion.format.metadata.structs import PAGE_HEADER_DTYPE, Compression, Encoding, StreamType
from fermion.format.read import batch_lookup
from fermion.format.read.points import PagePayload, binary_values
from fermion.format.write import shred
from tests.format.conftest import all_types_table
from tests.format.test_batch import assert_same as assert_same_decoded
from tests.format.test_batch import decoded, write_batches
from tests.format.test_encodings import encodings_of, shapes_table
from tests.format.test_roundtrip import assert_same
from tests.support.budget import examples

ALWAYS_BLOCKS = float("inf")  # keep zstd blocks even where one frame is smaller

# (compression, compression_block_size): none, one zstd frame per page, blocked zstd, and
# blocked zstd whose pages of 32 blocks or more share a dictionary (DICT_BLOCKS, 1.7)
DICT_BLOCKS = 512
CODECS = [("none", 0), ("zstd", 0), ("zstd", 256), ("zstd", 1024), ("zstd", DICT_BLOCKS)]
CODEC_IDS = ["none", "zstd-frame", "blocks-256", "blocks-1024", "dict-blocks"]
_PLAIN_OF_VIEW = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}

KERNELS_BUILT = native.KERNELS is not None  # the compiled kernels (fermion.format.native)


# -- helpers ----------------------------------------------------------------------------


@contextmanager
def codec_options(block: int) -> Iterator[dict]:
    """The blocking write options of codec ``block``. For DICT_BLOCKS: blocks of 256 bytes
    sharing a dictionary on every page of at least 32 of them, where the writer would keep
    that only if no larger (``dictionary_only``, as on a chunk's later pages once its first
    page won); the other codecs write no dictionaries (they hold plain ZSTD_BLOCKS)."""
    with pytest.MonkeyPatch.context() as mp:
        if block == DICT_BLOCKS:
            real = shred.encode_page

            def shared(payload, **options):  # type: ignore[no-untyped-def]
                return real(payload, **{**options, "dictionary_only": True})

            mp.setattr(shred, "encode_page", shared)
        yield {
            "compression_block_size": block,
            "dictionary_block_size": 256 if block == DICT_BLOCKS else 0,
        }


def arrow_take(table: pa.Table, indices) -> pa.Table:
    """Arrow's take (view columns through their plain types: Arrow has no kernel)."""
    idx = pa.array(np.asarray(indices, dtype=np.int64), pa.int64())
    cols = []
    for col in table.columns:
        plain = _PLAIN_OF_VIEW.get(col.type)
        cols.append(col.cast(plain).take(idx).cast(col.type) if plain else col.take(idx))
    return pa.Table.from_arrays(cols, schema=table.schema)


def check_take(path: Path, table: pa.Table, indices, columns: list[str] | None = None) -> None:
    """Point reads, whole-page reads and Arrow agree on ``take(indices, columns)``."""
    expected = arrow_take(table, indices)
    if columns is not None:  # a projection carries no schema metadata
        expected = expected.select(columns).replace_schema_metadata(None)
    with fermion.FileReader(path) as r, fermion.FileReader(path, point_reads=False) as whole:
        assert r.options.point_reads
        points = r.take(indices, columns=columns)
        pages = whole.take(indices, columns=columns)
    assert_same(points, expected)
    assert_same(pages, expected)


def page_spans(path: Path, column: str, stream: StreamType = StreamType.DATA) -> list[dict]:
    """Every page of a flat column's stream: its file rows, offset, size and header."""
    data = path.read_bytes()
    out = []
    with fermion.FileReader(path) as r:
        (proj,) = r.file_meta.projections([column])
        (meta,) = r.file_meta.column_metas([proj])
        spec = proj.tree.stream(stream)
        assert spec is not None
        desc = meta.streams[spec.index]
        stripe_rows = r.file_meta.stripe_rows([meta])
        first_row = 0
        for s, n in enumerate(stripe_rows.tolist()):
            if desc.full is not None and int(desc.full[s]["num_pages"]):
                counts = desc.pages(s)["row_count"].astype(np.int64)
                sizes = desc.pages(s)["page_size"].astype(np.int64)
                ends = np.cumsum(counts)
                for i, off in enumerate(desc.page_offsets(s).tolist()):
                    head = np.frombuffer(data, PAGE_HEADER_DTYPE, count=1, offset=off)[0]
                    out.append(
                        {
                            "stripe": s,
                            "rows": (
                                first_row + int(ends[i] - counts[i]),
                                first_row + int(ends[i]),
                            ),
                            "offset": off,
                            "size": int(sizes[i]),
                            "encoding": Encoding(int(head["encoding"])),
                            "compression": Compression(int(head["compression"])),
                        }
                    )
            first_row += n
    return out


def compressions_of(path: Path) -> set[str]:
    d = fermion.FileReader(path).describe()
    return {
        c
        for col in d["columns"]
        for s in col["streams"]
        for ch in s["chunks"]
        for c in ch.get("compressions", [])
    }


# -- every type, every codec ------------------------------------------------------------

N_ALL = 1200


@pytest.fixture(scope="module", params=CODECS, ids=CODEC_IDS)
def all_types_file(request, tmp_path_factory) -> tuple[Path, pa.Table]:
    compression, block = request.param
    table = all_types_table(n=N_ALL, seed=11)
    path = tmp_path_factory.mktemp("points") / f"all-{compression}-{block}.fermion"
    with codec_options(block) as blocking:
        fermion.write_table(
            table,
            path,
            # blocked string pages get 8x the page size (format 1.3): 2 KiB for them too
            page_size=256 if block else 2048,
            max_stripe_rows=500,
            compression=compression,
            compression_block_overhead=ALWAYS_BLOCKS,
            **blocking,
        )
    with fermion.FileReader(path) as r:
        assert r.num_stripes == 3
    used = compressions_of(path)
    if block:
        assert "ZSTD_BLOCKS" in used  # the string pages (2 KiB) hold several blocks
        spans = page_spans(path, "string")
        assert any(p["compression"] == Compression.ZSTD_BLOCKS for p in spans)
    elif compression == "zstd":
        assert "ZSTD" in used and "ZSTD_BLOCKS" not in used
    else:  # uncompressed: pages over 1 KiB of point-read columns get block CRCs (1.5)
        assert used == {"NONE", "CRC_BLOCKS"}
    return path, table


def test_all_types_unsorted_with_repeats(all_types_file) -> None:
    path, table = all_types_file
    rng = np.random.default_rng(1)
    idx = rng.integers(0, N_ALL, 150)
    idx = np.concatenate([idx, idx[:20], [7, 7, 7]])
    check_take(path, table, idx)


def test_all_types_first_last_and_empty(all_types_file) -> None:
    path, table = all_types_file
    check_take(path, table, [N_ALL - 1, 0, N_ALL - 1, 0, 499, 500, 999, 1000])
    check_take(path, table, [])
    check_take(path, table, np.array([], dtype=np.int32))
    check_take(path, table, [N_ALL - 1])


def test_all_types_whole_pages(all_types_file) -> None:
    path, table = all_types_file
    for column in ("string", "int64", "float64", "decimal256"):
        spans = page_spans(path, column)
        assert len(spans) > 3  # several pages in every stripe
        a, b = spans[len(spans) // 2]["rows"]
        check_take(path, table, np.arange(a, b)[::-1])  # a whole page, backwards
    check_take(path, table, np.arange(500, 1000))  # a whole stripe


def test_all_types_projection(all_types_file) -> None:
    path, table = all_types_file
    idx = np.random.default_rng(2).integers(0, N_ALL, 60)
    columns = ["large_binary", "int8", "all_null_int", "decimal128", "ts_ns_tz", "string_view"]
    check_take(path, table, idx, columns=columns)
    check_take(path, table, idx, columns=["fixed_binary"])
    check_take(path, table, [], columns=["string"])


# -- every encoding ---------------------------------------------------------------------

N_SHAPES = 20_000


def floats_as_1_3_writers_wrote_them(mp: pytest.MonkeyPatch) -> None:
    """Float pages as 1.2-1.3 writers wrote them: BYTE_SPLIT chosen on the zstd sample
    even without zstd, and kept where zstd did not keep it (this writer stores those
    pages PLAIN), so that tests still cover reading uncompressed BYTE_SPLIT pages."""
    mp.setattr(shred, "_planes_pay", lambda page: True)
    encode_floats = shred.encode_floats
    mp.setattr(
        shred, "encode_floats", lambda *a, **k: encode_floats(*a, **(k | {"compressed": True}))
    )


@pytest.fixture(scope="module", params=CODECS, ids=CODEC_IDS)
def shapes_file(request, tmp_path_factory) -> tuple[Path, pa.Table]:
    compression, block = request.param
    table = shapes_table(N_SHAPES)
    path = tmp_path_factory.mktemp("shapes") / f"shapes-{compression}-{block}.fermion"
    with pytest.MonkeyPatch.context() as mp, codec_options(block) as blocking:
        floats_as_1_3_writers_wrote_them(mp)  # uncompressed planes are read value by value
        fermion.write_table(
            table,
            path,
            page_size=16 << 10,
            max_stripe_rows=7_000,
            compression=compression,
            compression_block_overhead=ALWAYS_BLOCKS,
            **blocking,
        )
    enc = encodings_of(path)
    assert enc[("constant", "DATA")] == {"CONSTANT"}
    assert "DELTA" in enc[("sorted", "DATA")]
    assert enc[("rle", "DATA")] == {"RLE"}
    assert enc[("few", "DATA")] == {"INT_DICTIONARY"}
    assert enc[("small_nulls", "DATA")] & {"FOR", "INT_DICTIONARY"}
    assert enc[("flag", "DATA")] == {"DICTIONARY"}
    assert enc[("comment", "OFFSETS")] - {"PLAIN"}
    assert enc[("feature", "DATA")] == {"BYTE_SPLIT"}
    assert enc[("huge", "DATA")] == {"PLAIN"}
    if block:
        kinds = compressions_of(path) & {"ZSTD_BLOCKS", "ZSTD_DICT_BLOCKS"}
        assert kinds == {"ZSTD_DICT_BLOCKS" if block == DICT_BLOCKS else "ZSTD_BLOCKS"}
    return path, table


def test_every_encoding(shapes_file) -> None:
    path, table = shapes_file
    rng = np.random.default_rng(3)
    idx = np.concatenate([rng.integers(0, N_SHAPES, 300), [0, N_SHAPES - 1, 6_999, 7_000, 0]])
    check_take(path, table, idx)
    check_take(path, table, [])


def test_every_encoding_whole_pages(shapes_file) -> None:
    path, table = shapes_file
    for column in ("sorted", "small_nulls", "feature", "comment", "few", "huge"):
        spans = page_spans(path, column)
        a, b = spans[-1]["rows"]
        check_take(path, table, np.arange(a, b)[::-1], columns=[column])
        a, b = spans[0]["rows"]
        check_take(path, table, [b - 1, a, b - 1], columns=[column])


# -- special columns --------------------------------------------------------------------


@pytest.mark.parametrize("compression,block", CODECS, ids=CODEC_IDS)
def test_null_columns_and_null_chunks(tmp_path: Path, compression: str, block: int) -> None:
    n = 3000
    ints = np.arange(n, dtype=np.int64) * 7 % 1001
    some = pa.array(ints, mask=np.arange(n) < 1000)  # stripe 0 holds only nulls
    words = pa.array([f"w{i % 50}" * (i % 9) for i in range(n)], mask=np.arange(n) >= 2000)
    table = pa.table(
        {
            "all_null_int": pa.nulls(n, pa.int64()),
            "all_null_str": pa.nulls(n, pa.string()),
            "nulls_in_stripe0": some,
            "nulls_in_stripe2": words,
            "mostly_null": pa.array(ints, mask=np.arange(n) % 97 != 0),
        }
    )
    path = tmp_path / "nulls.fermion"
    with codec_options(block) as blocking:
        fermion.write_table(
            table,
            path,
            page_size=1024,
            max_stripe_rows=1000,
            compression=compression,
            compression_block_overhead=ALWAYS_BLOCKS,
            **blocking,
        )
    rng = np.random.default_rng(4)
    check_take(path, table, rng.integers(0, n, 200))
    check_take(path, table, [999, 1000, 1999, 2000, 0, n - 1])
    check_take(path, table, [5, 5], columns=["all_null_str", "nulls_in_stripe0"])


@pytest.mark.parametrize("compression,block", CODECS, ids=CODEC_IDS)
def test_decimals_beyond_int64(tmp_path: Path, compression: str, block: int) -> None:
    n = 4000
    rng = np.random.default_rng(5)
    big = [
        decimal.Decimal(int(x) * 10**25 + i).scaleb(-3)
        for i, x in enumerate(rng.integers(-9, 9, n))
    ]
    small = [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(0, 500, n)]
    table = pa.table(
        {
            "wide128": pa.array(big, pa.decimal128(38, 3), mask=np.arange(n) % 11 == 0),
            "wide256": pa.array(big, pa.decimal256(60, 3)),
            "narrow256": pa.array(small, pa.decimal256(40, 2)),
        }
    )
    path = tmp_path / "dec.fermion"
    with codec_options(block) as blocking:
        fermion.write_table(
            table,
            path,
            page_size=4096,
            max_stripe_rows=1500,
            compression=compression,
            compression_block_overhead=ALWAYS_BLOCKS,
            **blocking,
        )
    enc = encodings_of(path)
    assert enc[("wide128", "DATA")] == {"PLAIN"} and enc[("wide256", "DATA")] == {"PLAIN"}
    assert enc[("narrow256", "DATA")] - {"PLAIN"}  # fits int64: integer-encoded
    check_take(path, table, rng.integers(0, n, 150))
    check_take(path, table, np.arange(n)[::-7])


@pytest.mark.parametrize("block", [256, 1024])
def test_empty_and_very_long_strings(tmp_path: Path, block: int) -> None:
    rng = np.random.default_rng(6)
    n = 600
    alphabet = np.frombuffer(b"acgt", dtype=np.uint8)

    def text(k: int) -> str:
        return rng.choice(alphabet, k).tobytes().decode()  # compresses about 4x

    values: list[str | None] = []
    for i in range(n):
        if i % 5 == 0:
            values.append("")
        elif i % 13 == 0:
            values.append(None)
        elif i % 50 == 7:
            values.append(text(int(rng.integers(3 * block, 12 * block))))  # spans blocks
        else:
            values.append(text(int(rng.integers(0, 40))))
    table = pa.table(
        {
            "s": pa.array(values, pa.string()),
            "ls": pa.array(values, pa.large_string()),
            "b": pa.array([None if v is None else v.encode() for v in values], pa.binary()),
            "empty": pa.array([""] * n, pa.string()),
        }
    )
    path = tmp_path / "long.fermion"
    fermion.write_table(
        table,
        path,
        page_size=64 << 10,
        max_stripe_rows=250,
        compression_block_size=block,
        compression_block_overhead=ALWAYS_BLOCKS,
        dictionary_block_size=0,  # plain ZSTD_BLOCKS (tests/format/test_dict_blocks.py)
    )
    blocked = [p for p in page_spans(path, "s") if p["compression"] == Compression.ZSTD_BLOCKS]
    assert blocked  # data pages of many blocks
    longs = [i for i, v in enumerate(values) if v is not None and len(v) > 3 * block]
    empties = [i for i, v in enumerate(values) if v == ""]
    check_take(path, table, longs[::-1] + longs[:2])
    check_take(path, table, empties[:30] + longs[:3] + [13, 26])
    check_take(path, table, rng.integers(0, n, 200))
    check_take(path, table, np.arange(n))


def test_batch_mode_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 80, 120).tolist()
    path = tmp_path / "batches.fermion"
    tables = write_batches(
        path,
        sizes,
        page_size=2048,
        max_stripe_rows=2000,
        compression_block_size=256,
        compression_block_overhead=ALWAYS_BLOCKS,
    )
    table = pa.concat_tables(tables)
    n = table.num_rows
    with fermion.FileReader(path) as r:
        assert r.batch_mode and r.num_stripes >= 2
    assert "ZSTD_BLOCKS" in compressions_of(path)
    idx = np.concatenate([rng.integers(0, n, 200), [0, n - 1, 0]])
    expected = decoded(table).take(pa.array(idx))  # batches carry different dictionaries
    with fermion.FileReader(path) as r, fermion.FileReader(path, point_reads=False) as whole:
        assert_same_decoded(r.take(idx), expected)
        assert_same_decoded(whole.take(idx), expected)
        cols = ["name", "score", "id"]
        assert_same_decoded(r.take(idx, columns=cols), expected.select(cols))
        assert r.take([]).num_rows == 0


# -- property: random tables, layouts and indices ---------------------------------------


@st.composite
def small_tables(draw) -> pa.Table:
    n = draw(st.integers(1, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    span = draw(st.sampled_from([1, 3, 1000, 2**40]))
    null_p = draw(st.sampled_from([0.0, 0.1, 0.9, 1.0]))

    def mask() -> np.ndarray:
        return rng.random(n) < null_p

    ints = rng.integers(-span, span + 1, n)
    if draw(st.booleans()):
        ints = np.sort(ints)
    lengths = rng.integers(0, draw(st.sampled_from([1, 8, 300])), n)
    text = [("ab" * 200)[: int(k)] + str(i % 7) for i, k in enumerate(lengths)]
    return pa.table(
        {
            "i64": pa.array(ints, pa.int64(), mask=mask()),
            "i16": pa.array(ints % 30_000, pa.int16(), mask=mask()),
            "u32": pa.array(np.abs(ints) % 2**32, pa.uint32(), mask=mask()),
            "f64": pa.array(
                rng.random(n).round(int(rng.integers(0, 6))), pa.float64(), mask=mask()
            ),
            "f32": pa.array(rng.random(n).astype(np.float32), mask=mask()),
            "s": pa.array(text, pa.string(), mask=mask()),
            "cat": pa.array([("x", "yy", "")[int(k) % 3] for k in ints], pa.large_string()),
        }
    )


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    table=small_tables(),
    page_size=st.sampled_from([64, 300, 1024, 8192]),
    block=st.sampled_from([0, 256, 512]),
    compression=st.sampled_from(["zstd", "none"]),
    stripe_rows=st.integers(1, 500),
    data=st.data(),
)
def test_property_points_equal_whole_pages(
    tmp_path: Path,
    table: pa.Table,
    page_size: int,
    block: int,
    compression: str,
    stripe_rows: int,
    data,
) -> None:
    path = tmp_path / "prop.fermion"
    with codec_options(block) as blocking:  # 512: DICT_BLOCKS
        fermion.write_table(
            table,
            path,
            page_size=page_size,
            max_stripe_rows=stripe_rows,
            compression=compression,
            compression_block_overhead=ALWAYS_BLOCKS,
            **blocking,
        )
    n = table.num_rows
    idx = data.draw(st.lists(st.integers(0, n - 1), max_size=60))
    check_take(path, table, idx)


# -- the work point reads save ----------------------------------------------------------


@pytest.fixture
def count_blocks(monkeypatch) -> Counter:
    """Counts blocks decompressed by (decoded page size, block): some blocks go through
    ``BlockedBody.decompress_many``, a whole page through ``decompress_whole_into``, the
    blocks of flat fixed-width columns that ``take`` reads together through
    ``batch_lookup.read_points`` (which decompresses every block it plans)."""
    calls: Counter = Counter()
    original, whole = BlockedBody.decompress_many, BlockedBody.decompress_whole_into
    plan = batch_lookup._plan_group

    def counted_plan(group, heads, width) -> list:
        spans = plan(group, heads, width)
        for pg in group:  # every block planned is decompressed
            for k in pg.blocks:
                calls[(pg.decoded, int(k))] += 1
        return spans

    monkeypatch.setattr(batch_lookup, "_plan_group", counted_plan)

    def counted(self: BlockedBody, blocks) -> list:
        for k in blocks:
            calls[(self.size, int(k))] += 1
        return original(self, blocks)

    def counted_whole(self: BlockedBody, out) -> None:
        for k in range(self.num_blocks):
            calls[(self.size, k)] += 1
        whole(self, out)

    monkeypatch.setattr(BlockedBody, "decompress_many", counted)
    monkeypatch.setattr(BlockedBody, "decompress_whole_into", counted_whole)
    return calls


def test_take_decompresses_only_the_blocks_holding_the_rows(tmp_path: Path, count_blocks) -> None:
    n = 200_000
    block = 4096
    values = np.arange(n, dtype=np.int64) % 1000  # compressible PLAIN bytes
    words = [f"row-{i % 977:04d}-" + "q" * (i % 20) for i in range(n)]
    table = pa.table({"x": values, "s": pa.array(words)})
    path = tmp_path / "big.fermion"
    fermion.write_table(
        table,
        path,
        page_size=4 << 20,
        compression_block_size=block,
        compression_block_overhead=ALWAYS_BLOCKS,
        dictionary_block_size=0,  # plain ZSTD_BLOCKS (tests/format/test_dict_blocks.py)
        column_encodings={"x": "plain"},
    )
    (xpage,) = page_spans(path, "x")  # one page of 1.6 MB: 391 blocks
    assert (xpage["encoding"], xpage["compression"]) == (Encoding.PLAIN, Compression.ZSTD_BLOCKS)
    idx = [150_000, 3, 150_001, 77_777, 3]
    with fermion.FileReader(path) as r:
        got = r.take(idx, columns=["x"])
    assert got.column("x").to_pylist() == values[idx].tolist()
    wanted = {i * 8 // block for i in idx}  # the blocks holding the wanted values
    assert count_blocks == Counter({(n * 8, k): 1 for k in wanted})  # each once
    count_blocks.clear()
    with fermion.FileReader(path, point_reads=False) as r:
        r.take(idx, columns=["x"])
    assert sum(count_blocks.values()) == -(-n * 8 // block)  # whole page: every block

    # strings: the data blocks holding the values; the lengths page (under a byte per
    # value) is one zstd frame, as blocks of tens of thousands of lengths would not pay
    (spage,) = page_spans(path, "s")
    (opage,) = page_spans(path, "s", StreamType.OFFSETS)
    assert (spage["encoding"], spage["compression"]) == (Encoding.PLAIN, Compression.ZSTD_BLOCKS)
    assert (opage["encoding"], opage["compression"]) == (Encoding.FOR, Compression.ZSTD)
    count_blocks.clear()
    with fermion.FileReader(path) as r:
        got = r.take(idx, columns=["s"])
    assert got.column("s").to_pylist() == [words[i] for i in idx]
    offs = np.concatenate([[0], np.cumsum([len(w) for w in words])])
    data_size = int(offs[-1])
    wanted = set()
    for i in idx:
        wanted.update(range(int(offs[i]) // block, (int(offs[i + 1]) - 1) // block + 1))
    assert count_blocks == Counter({(data_size, k): 1 for k in wanted})


def test_blocked_length_pages_decompress_only_the_checkpoint_segments(count_blocks) -> None:
    """A blocked FOR length page (as 1.2 writers wrote them, or any writer may): a take
    decompresses the blocks of each wanted row's length, its checkpoint segment (whole)
    and its checkpoint, nothing else."""
    n, block = 200_000, 4096
    rng = np.random.default_rng(4)
    lengths = rng.integers(10, 30, n).astype(np.int64)
    enc, payload = encodings.encode_ints(
        lengths, out_width=4, lengths=True, compressed=False, checkpoints=True
    )
    assert enc == Encoding.FOR and encodings.has_checkpoints(payload)
    offsets_page = memoryview(
        encode_page(
            payload,
            num_values=n,
            codec=Compression.ZSTD,
            encoding=enc,
            block_size=block,
            block_overhead=ALWAYS_BLOCKS,
            keep_ratio=ALWAYS_BLOCKS,  # random lengths: zstd saves nothing, keep it anyway
        )
    )
    assert offsets_page[5] == Compression.ZSTD_BLOCKS
    offs = np.concatenate([[0], np.cumsum(lengths)])
    data = (np.arange(int(offs[-1])) % 251).astype(np.uint8).tobytes()
    data_page = memoryview(encode_page(data, num_values=n, codec=Compression.NONE))
    idx = np.array([3, 77_777, 150_000, 150_001])
    got_lengths, got = binary_values(offsets_page, data_page, idx, n, 4, "p")
    assert got_lengths.tolist() == lengths[idx].tolist()
    assert got == b"".join(data[offs[i] : offs[i + 1]] for i in idx)
    bits = bitpack.bits_for(int(lengths.max() - lengths.min()))
    interval = CHECKPOINT_INTERVAL
    ck_bits = bitpack.bits_for((n // interval) * interval * ((1 << bits) - 1))
    ck_at = HEADER_SIZE + bitpack.packed_size(n, bits)
    wanted_bytes = set(range(HEADER_SIZE))  # the EncodingHeader
    for i in idx.tolist():
        seg = i // interval
        wanted_bytes.add(HEADER_SIZE + i * bits // 8)
        first = HEADER_SIZE + seg * interval * bits // 8
        wanted_bytes.update(range(first, min(first + interval * bits // 8, ck_at)))
        if seg:
            wanted_bytes.update(
                range(ck_at + (seg - 1) * ck_bits // 8, ck_at + (seg * ck_bits + 7) // 8)
            )
    assert count_blocks == Counter({(len(payload), b // block): 1 for b in wanted_bytes})
    assert len(count_blocks) < 8  # of 31 blocks of lengths


def test_take_reads_a_blocked_page_block_by_block(tmp_path: Path) -> None:
    """PagePayload fills only the blocks asked for, and each once."""
    payload = (np.arange(10_000, dtype=np.int64) % 251).tobytes()
    page = memoryview(
        encode_page(
            payload,
            num_values=10_000,
            codec=Compression.ZSTD,
            block_size=1024,
            block_overhead=ALWAYS_BLOCKS,
        )
    )
    assert page[5] == Compression.ZSTD_BLOCKS
    p = PagePayload(page, 10_000, 80_000, "p")
    p.need(np.array([2048 + 5]), np.array([2048 + 13]))
    done = np.flatnonzero(p._done).tolist()
    assert done == [2]
    assert bytes(p.buf[2048:3072]) == payload[2048:3072]  # the other blocks: never decompressed
    p.need(np.array([1020, 2050]), np.array([1030, 2060]))  # straddles blocks 0 and 1
    assert np.flatnonzero(p._done).tolist() == [0, 1, 2]
    assert bytes(p.buf[:3072]) == payload[:3072]


@pytest.fixture
def count_unpacks(monkeypatch) -> list[tuple[int, int]]:
    """Records ``bitpack.unpack_into`` calls (which every ``unpack`` makes) as
    (width, count); ``gather`` as (width, -rows)."""
    calls: list[tuple[int, int]] = []
    unpack_into, gather = bitpack.unpack_into, bitpack.gather

    def counted_unpack_into(buf, offset, w, out, where="page"):
        calls.append((w, len(out)))
        return unpack_into(buf, offset, w, out, where)

    def counted_gather(buf, offset, w, indices, where="page"):
        calls.append((w, -len(indices)))
        return gather(buf, offset, w, indices, where)

    monkeypatch.setattr(bitpack, "unpack_into", counted_unpack_into)
    monkeypatch.setattr(bitpack, "gather", counted_gather)
    kernels = native.KERNELS
    if kernels is not None:  # the compiled segment sums, as (width, values read)

        class Counted:
            def __getattr__(self, name: str) -> object:
                return getattr(kernels, name)

            def segment_sums(self, buf, offset, end, w, interval, rows, before, value):
                calls.append((w, int((rows % interval + 1).sum())))
                return kernels.segment_sums(buf, offset, end, w, interval, rows, before, value)

        monkeypatch.setattr(native, "KERNELS", Counted())
    return calls


@pytest.fixture
def no_whole_pages(monkeypatch) -> list[str]:
    """Records every page a point read decodes whole."""
    calls: list[str] = []
    original = PagePayload.decode_whole

    def counted(self: PagePayload) -> object:
        calls.append(self.encoding.name)
        return original(self)

    monkeypatch.setattr(PagePayload, "decode_whole", counted)
    return calls


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_encoded_pages_decode_only_the_gathered_values(
    tmp_path: Path, compression: str, count_unpacks, no_whole_pages
) -> None:
    n = 50_000
    rng = np.random.default_rng(8)
    # BYTE_SPLIT: uniform float32 with the low 16 mantissa bits cleared, whose planes zstd
    # saves the quarter a point-read column asks of them (docs/FORMAT.md §5.2)
    floats = rng.random(n).astype(np.float32)
    floats = (floats.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    table = pa.table(
        {
            "for": pa.array(rng.integers(0, 1 << 20, n)),  # FOR at 20 bits
            "plain": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
            "float": pa.array(floats),
            "const": pa.array(np.full(n, 5, dtype=np.int64)),
            "sorted": pa.array(np.cumsum(rng.integers(0, 9, n))),  # DELTA
            "lengths": pa.array(
                [f"{i}" + "z" * int(k) for i, k in enumerate(rng.integers(0, 30, n))]
            ),
        }
    )
    path = tmp_path / "enc.fermion"
    fermion.write_table(table, path, page_size=1 << 20, compression=compression)
    enc = encodings_of(path)
    assert enc[("for", "DATA")] == {"FOR"} and enc[("plain", "DATA")] == {"PLAIN"}
    # without zstd, float planes would not pay: PLAIN
    assert enc[("float", "DATA")] == {"BYTE_SPLIT" if compression == "zstd" else "PLAIN"}
    assert enc[("const", "DATA")] == {"CONSTANT"}
    assert enc[("sorted", "DATA")] == {"DELTA"} and enc[("lengths", "OFFSETS")] == {"FOR"}
    idx = [40_000, 12, 40_000, 49_999]
    with fermion.FileReader(path) as r:
        r.take([0], columns=["const"])  # metadata warm-up
        count_unpacks.clear()
        for col in ("for", "plain", "float", "const"):
            got = r.take(idx, columns=[col])
            assert_same(got, arrow_take(table.select([col]), idx))
        assert no_whole_pages == []
        # FOR: one gather of the 3 distinct rows, nothing unpacked
        assert count_unpacks == [(20, -3)]
        count_unpacks.clear()
        got = r.take([10, 5], columns=["sorted"])
        assert_same(got, arrow_take(table.select(["sorted"]), [10, 5]))
        # both rows in the first checkpoint segment: its 256 deltas, nothing else, or with
        # the compiled kernel the deltas before each row only (5 + 10)
        assert [c for _, c in count_unpacks] == ([15] if KERNELS_BUILT else [256])
        count_unpacks.clear()
        got = r.take([40_000, 1_000], columns=["sorted"])
        assert_same(got, arrow_take(table.select(["sorted"]), [40_000, 1_000]))
        # two checkpoints gathered, then the two rows' segments of 256 deltas (with the
        # kernel, the deltas of each segment before the row: 1,000 % 256 + 40,000 % 256)
        assert [c for _, c in count_unpacks] == ([-2, 296] if KERNELS_BUILT else [-2, 512])
        count_unpacks.clear()
        got = r.take([20, 3], columns=["lengths"])
        assert_same(got, arrow_take(table.select(["lengths"]), [20, 3]))
        # their segment (the first: no checkpoint), which holds their lengths too: all of
        # it unpacked, or with the compiled kernel its values up to each row (21 + 4)
        assert [c for _, c in count_unpacks] == ([25] if KERNELS_BUILT else [256])
        assert no_whole_pages == []
    count_unpacks.clear()
    with fermion.FileReader(path, point_reads=False) as r:
        r.take(idx, columns=["for"])
    assert count_unpacks == [(20, n)]  # the whole page


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.binary()])
@pytest.mark.parametrize("mmap", [True, False])
def test_take_from_a_stripe_of_only_empty_values(tmp_path: Path, kind, mmap: bool) -> None:
    """A stripe whose values are all empty has OFFSETS pages but no DATA page; a take of
    its rows reads it through the stripe reader, not as page pairs (found by
    test_property_points_equal_whole_pages: it raised InvalidFileError)."""
    values = (
        [b"", b"x", b"", b"", b"yy", b""] if kind == pa.binary() else ["", "x", "", "", "yy", ""]
    )
    table = pa.table({"v": pa.array(values, kind)})
    path = tmp_path / "empty.fermion"
    fermion.write_table(table, path, page_size=64, max_stripe_rows=2, compression="zstd")
    for indices in ([0], [2, 3], [0, 1, 2, 3, 4, 5], [5, 0, 3]):
        check_take(path, table, indices)
    with fermion.FileReader(path, memory_map=mmap) as r:
        assert r.take([2, 3, 4]).column("v").to_pylist() == values[2:5]
