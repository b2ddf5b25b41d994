"""ZSTD_DICT_BLOCKS pages (format 1.7, docs/FORMAT.md §5.2): zstd blocks sharing a
dictionary stored in the page.

What is held here: the writer keeps them only when they are no larger than plain blocks
(or always, with a block overhead of infinity), and otherwise writes exactly the page it
wrote without them; every way of decompressing a body (whole, streamed, one block, many
blocks) gives the payload back; a corrupt dictionary or table is a typed error, never
different bytes; and files with such pages read back through every read path and source
(memory map, ``os.pread``, fsspec), fetching only the blocks a point read needs.

Bad inputs tried: every byte of a dictionary flipped; ``dict_size`` 0, past the body, and
a nonzero ``reserved``; a body cut inside its dictionary; ``dictionary_block_size`` 0 <
size < 256, negative and above 1 GiB.
"""

from __future__ import annotations

from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pytest

import fermion
from fermion.errors import ChecksumError, InvalidArgumentError, InvalidFileError
from fermion.format import native
from fermion.format.encoding import pages, zstd_blocks
from fermion.format.encoding.pages import BlockedBody, encode_page, read_page_head
from fermion.format.metadata.structs import DICT_BLOCK_TABLE_DTYPE, Compression, RequiredFeature

HEADER = pages.PAGE_HEADER_SIZE


def pool_text(rows: int, pool_words: int = 150_000, seed: int = 0) -> list[str]:
    """Strings cut from one long text of 300 words, as TPC-H's comments are cut from its
    text pool: what blocks have in common is what a dictionary holds."""
    rng = np.random.default_rng(seed)
    words = np.array([f"{w:x}" for w in rng.integers(1 << 8, 1 << 20, 300)], dtype=object)
    pool = " ".join(rng.choice(words, pool_words))
    starts = rng.integers(0, len(pool) - 60, rows).tolist()
    lengths = rng.integers(10, 60, rows).tolist()
    return [pool[a : a + k] for a, k in zip(starts, lengths, strict=True)]


def hex_words(nbytes: int, seed: int = 1) -> bytes:
    """Random words from a large vocabulary: one frame wins, a dictionary does not."""
    rng = np.random.default_rng(seed)
    words = [f"{w:x}" for w in rng.integers(1 << 20, 1 << 28, 10_000)]
    out = " ".join(words[i] for i in rng.integers(0, len(words), nbytes // 7))
    return out.encode()[:nbytes]


def _page(payload: bytes, **options) -> bytes:
    defaults = {"block_size": 8192, "block_overhead": 0.25, "dictionary_block_size": 2048}
    return encode_page(payload, num_values=1, codec=Compression.ZSTD, **{**defaults, **options})


def _body(page: bytes, verify_crc: bool = True) -> BlockedBody:
    head = read_page_head(
        memoryview(page), expected_values=1, expected_size=None, where="p", verify_crc=verify_crc
    )
    return BlockedBody.of(head, "p")


@pytest.fixture(scope="module")
def text() -> bytes:
    return "".join(pool_text(20_000)).encode()


def test_writer_keeps_dictionary_blocks_when_no_larger_than_plain_blocks(text: bytes) -> None:
    shared = _page(text)
    plain = _page(text, dictionary_block_size=0)
    assert (shared[5], plain[5]) == (Compression.ZSTD_DICT_BLOCKS, Compression.ZSTD_BLOCKS)
    assert len(shared) <= len(plain)
    body = _body(shared)
    assert (body.block_size, len(body.dictionary or b"")) == (2048, pages.DICTIONARY_SIZE)
    assert bytes(body.decompress_all()) == text


@pytest.mark.parametrize(
    "payload",
    [hex_words(300_000), hex_words(60_000), b"z" * 200_000, np.arange(40_000).tobytes()],
    ids=["one-frame-wins", "below-32-blocks", "constant", "integers"],
)
def test_writer_without_a_winning_dictionary_writes_the_page_it_wrote_before(
    payload: bytes,
) -> None:
    """Where the dictionary loses (or is not tried), the page is byte for byte the page
    of a writer without dictionaries."""
    assert _page(payload) == _page(payload, dictionary_block_size=0)


def test_dictionary_only_keeps_dictionary_blocks() -> None:
    """Where the dictionary loses on size, ``dictionary_only`` (a chunk whose first page
    won) keeps it; an overhead of infinity (blocks at any cost) keeps plain blocks."""
    payload = hex_words(300_000)
    page = _page(payload, dictionary_only=True)
    assert page[5] == Compression.ZSTD_DICT_BLOCKS
    assert bytes(_body(page).decompress_all()) == payload
    assert _page(payload, block_overhead=float("inf"))[5] == Compression.ZSTD_BLOCKS


@pytest.mark.parametrize("size", [65_536, 65_537, 100_003, 262_144])
@pytest.mark.parametrize("block", [256, 1024, 2048])
def test_every_way_of_decompressing_gives_the_payload(text: bytes, size: int, block: int) -> None:
    payload = text[:size]
    body = _body(_page(payload, dictionary_block_size=block, dictionary_only=True))
    assert body.block_size == block and body.num_blocks == -(-size // block)
    assert bytes(body.decompress_all()) == payload
    out = np.empty(size, dtype=np.uint8)
    body.decompress_whole_into(out)
    assert out.tobytes() == payload
    picks = [0, 1, body.num_blocks // 2, body.num_blocks - 1]
    for k, part in zip(picks, body.decompress_many(picks), strict=True):
        assert bytes(part) == payload[k * block : (k + 1) * block]
        assert bytes(body.decompress(k)) == bytes(part)
    into = np.zeros(size, dtype=np.uint8)
    body.decompress_into(into, np.array(picks))
    for k in picks:
        assert into[k * block : (k + 1) * block].tobytes() == payload[k * block : (k + 1) * block]


def test_a_flipped_dictionary_byte_is_caught_or_changes_nothing(text: bytes) -> None:
    """Every byte of the dictionary, flipped in turn: decompressing every block, as a point
    read does (no page CRC), raises ChecksumError or InvalidFileError, or gives exactly
    the payload (a byte no frame uses); never other bytes."""
    payload = text[:65_536]
    page = bytearray(_page(payload, dictionary_only=True))
    body = _body(bytes(page))
    at = HEADER + DICT_BLOCK_TABLE_DTYPE.itemsize + 4 * body.num_blocks
    size = len(body.dictionary or b"")
    blocks = list(range(body.num_blocks))
    outcomes = {"checksum": 0, "structural": 0, "same": 0}
    for pos in range(at, at + size):
        page[pos] ^= 0xFF
        try:
            parts = _body(bytes(page), verify_crc=False).decompress_many(blocks)
            got = b"".join(bytes(p) for p in parts)
        except ChecksumError:
            outcomes["checksum"] += 1
        except InvalidFileError:
            outcomes["structural"] += 1
        else:
            assert got == payload, pos
            outcomes["same"] += 1
        page[pos] ^= 0xFF
    assert sum(outcomes.values()) == size
    assert outcomes["checksum"] + outcomes["structural"] > size // 2, outcomes


def _with_table(page: bytes, **fields: int) -> bytes:
    body = bytearray(page)
    table = np.frombuffer(body, DICT_BLOCK_TABLE_DTYPE, count=1, offset=HEADER).copy()
    for name, value in fields.items():
        table[name] = value
    body[HEADER : HEADER + DICT_BLOCK_TABLE_DTYPE.itemsize] = table.tobytes()
    return bytes(body)


def test_bad_dictionary_tables_are_invalid(text: bytes) -> None:
    page = _page(text[:65_536], dictionary_only=True)
    bad = [
        _with_table(page, dict_size=0),
        _with_table(page, reserved=1),
        _with_table(page, dict_size=len(page)),
        _with_table(page, dict_size=pages.DICTIONARY_SIZE - 1),  # the frames then misalign
        page[: HEADER + DICT_BLOCK_TABLE_DTYPE.itemsize + 4 * 32 + 100],  # cut in the dictionary
    ]
    for case in bad:
        with pytest.raises(InvalidFileError):
            _body(case, verify_crc=False).decompress_all()


@pytest.mark.parametrize("size", [1, 255, -1, (1 << 30) + 1])
def test_bad_dictionary_block_sizes_are_refused(size: int) -> None:
    with pytest.raises(InvalidArgumentError, match="dictionary_block_size"):
        fermion.write_table(
            pa.table({"a": [1]}), pa.BufferOutputStream(), dictionary_block_size=size
        )


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, pa.Table]:
    rng = np.random.default_rng(5)
    n = 60_000
    table = pa.table(
        {
            "comment": pa.array(pool_text(n, seed=2), mask=rng.random(n) < 0.03),
            "key": pa.array(np.arange(n)),
        }
    )
    path = tmp_path_factory.mktemp("dict_blocks") / "t.fermion"
    fermion.write_table(table, path, max_stripe_rows=30_000)
    return path, table


def test_file_with_dictionary_blocks_is_version_1_7_and_reads_back(written) -> None:
    path, table = written
    with fermion.FileReader(path) as r:
        assert r.metadata.format_version == "1.7"
        chunks = r.describe()["columns"][0]["streams"][2]["chunks"]
        assert all(c["compressions"] == ["ZSTD_DICT_BLOCKS"] for c in chunks), chunks
        assert r.read().equals(table)
    # without dictionaries: a 1.6 (or older) file with the same values
    plain = path.with_name("plain.fermion")
    fermion.write_table(table, plain, max_stripe_rows=30_000, dictionary_block_size=0)
    with fermion.FileReader(plain) as r:
        assert r.metadata.format_version in ("1.3", "1.4", "1.5", "1.6")
        assert not RequiredFeature.DICT_BLOCKS & RequiredFeature(r.metadata.required_features)
        assert r.read().equals(table)


def _opened(where: str, path: Path) -> fermion.FileReader:
    if where == "fsspec":
        fs = fsspec.filesystem("memory")
        fs.pipe(f"/dict_blocks/{path.name}", path.read_bytes())
        return fermion.FileReader((fs, f"/dict_blocks/{path.name}"))
    return fermion.FileReader(path, memory_map=where == "mmap")


@pytest.mark.parametrize("kernels", ["built", "python"])
@pytest.mark.parametrize("where", ["mmap", "pread", "fsspec"])
def test_take_from_every_source(written, where: str, kernels: str, monkeypatch) -> None:
    """The same values from each source, with the compiled frame checks and without
    them (as in the zip shipped to Spark executors, fermion.format.native)."""
    if kernels == "python":
        monkeypatch.setattr(native, "KERNELS", None)
    path, table = written
    idx = np.array([0, 1, 2_047, 29_999, 30_000, 45_123, 45_123, 59_999, 7])
    with _opened(where, path) as r:
        opened = r.source.stats.bytes_read
        assert r.take(idx).equals(table.take(idx))
        read = r.source.stats.bytes_read - opened
    if where != "mmap":  # sub-page IO: headers, tables, dictionaries and a block per row
        assert read < 0.25 * path.stat().st_size, read


def test_take_of_a_corrupt_block_raises(written) -> None:
    """A byte flipped inside a frame a take decompresses: ChecksumError or
    InvalidFileError, from every source (the page CRC is not read by a point read)."""
    path, table = written
    with fermion.FileReader(path) as r:
        chunk = r.describe()["columns"][0]["streams"][2]["chunks"][0]
    data = bytearray(path.read_bytes())
    page = memoryview(bytes(data[chunk["offset"] : chunk["offset"] + chunk["length"]]))
    head = read_page_head(page, expected_values=30_000, expected_size=None, where="p")
    body = BlockedBody.of(head, "p")
    flipped = chunk["offset"] + HEADER + body.frames_at + int(body.starts[3]) + 20
    data[flipped] ^= 0xFF
    bad = path.with_name("bad.fermion")
    bad.write_bytes(bytes(data))
    first = int(
        np.searchsorted(
            np.cumsum([len(s or "") for s in table.column(0).to_pylist()]),
            3 * body.block_size,
            side="right",
        )
    )
    for where in ("mmap", "pread", "fsspec"):
        with _opened(where, bad) as r, pytest.raises(InvalidFileError):
            r.take([first], columns=["comment"])


@pytest.fixture
def trainings(monkeypatch) -> list[int]:
    """The payload sizes the writer tries as dictionary blocks (trains a dictionary for),
    in order."""
    calls: list[int] = []
    real = zstd_blocks.compress_dict_blocks

    def counting(payload, level, block_size):  # type: ignore[no-untyped-def]
        calls.append(len(payload))
        return real(payload, level, block_size)

    monkeypatch.setattr(zstd_blocks, "compress_dict_blocks", counting)
    return calls


def test_a_chunk_tries_the_dictionary_on_its_first_page_only_when_it_lost(
    trainings: list[int],
) -> None:
    """The first eligible page of a chunk decides: when its dictionary lost, the later
    pages are not tried (one training per chunk); when it won, every later page is
    tried as dictionary blocks only."""
    loses = hex_words(3_000_000).decode()
    table = pa.table({"s": pa.array([loses[i : i + 40] for i in range(0, len(loses), 40)])})
    sink = pa.BufferOutputStream()
    fermion.write_table(table, sink, page_size=128 << 10)  # string pages of about 1 MiB
    r = fermion.FileReader(pa.BufferReader(sink.getvalue()))
    chunks = r.describe()["columns"][0]["streams"][2]["chunks"]
    assert len(chunks) == 1 and chunks[0]["num_pages"] >= 3
    assert len(trainings) == 1 and "ZSTD_DICT_BLOCKS" not in chunks[0]["compressions"]
    trainings.clear()
    wins = pa.table({"s": pa.array(pool_text(60_000, seed=4))})
    sink = pa.BufferOutputStream()
    fermion.write_table(wins, sink, page_size=128 << 10)
    r = fermion.FileReader(pa.BufferReader(sink.getvalue()))
    chunks = r.describe()["columns"][0]["streams"][2]["chunks"]
    assert chunks[0]["num_pages"] >= 2 and chunks[0]["compressions"] == ["ZSTD_DICT_BLOCKS"]
    assert len(trainings) == chunks[0]["num_pages"]
    assert r.read().equals(wins)


def test_the_first_page_that_tries_a_dictionary_decides_not_the_first_blocked_one(
    trainings: list[int],
) -> None:
    """A chunk whose first blocked page is too small to try a dictionary decides on its
    first page that does try one; later pages then follow it (one training when it lost)."""
    from fermion.format.options import WriteOptions
    from fermion.format.write.shred import _Encoder

    enc = _Encoder(WriteOptions(), True, blocks=True)
    small, large = hex_words(40_000), hex_words(400_000)  # under and over 32 x 4 KiB
    kinds = [enc.page(p, 1_000, blocks=True).data[5] for p in (small, large, large, large)]
    assert trainings == [len(large)]  # the dictionary lost on the first large page
    assert Compression.ZSTD_DICT_BLOCKS not in kinds


def _float_planes(n: int, seed: int) -> bytes:
    """A BYTE_SPLIT payload of ``n`` random float64 values: the exponent planes compress,
    the others do not, and blocks lose nothing to one frame."""
    from fermion.format.encoding.byte_split import encode_byte_split

    planes = encode_byte_split(np.random.default_rng(seed).random(n).tobytes(), 8)
    assert planes is not None
    return planes


@pytest.mark.parametrize(
    "payload",
    [
        _float_planes(40_000, 0),
        _float_planes(65_536, 1),
        np.random.default_rng(2).integers(0, 1 << 40, 40_000).tobytes(),
    ],
    ids=["float-planes-320k", "float-planes-512k", "random-int64"],
)
def test_blocks_that_lose_nothing_to_one_frame_do_not_try_a_dictionary(
    payload: bytes, trainings: list[int]
) -> None:
    """A page whose blocks are at most DICTIONARY_SKIP_RATIO times one frame trains no
    dictionary, and is byte for byte the page of a writer without dictionaries."""
    page = _page(payload, dictionary_block_size=4096)
    assert trainings == []
    assert page == _page(payload, dictionary_block_size=0)
    assert page[5] == Compression.ZSTD_BLOCKS
    assert bytes(_body(page).decompress_all()) == payload


def test_random_float_columns_train_no_dictionary_and_read_back_bit_exact(
    trainings: list[int],
) -> None:
    """A file of random float64 columns (one page each) is the file of a writer without
    dictionaries, and reads back bit for bit."""
    rng = np.random.default_rng(3)
    table = pa.table({f"f{i}": rng.random(40_000) for i in range(3)})
    sinks = [pa.BufferOutputStream(), pa.BufferOutputStream()]
    fermion.write_table(table, sinks[0])
    assert trainings == []
    fermion.write_table(table, sinks[1], dictionary_block_size=0)
    assert sinks[0].getvalue().equals(sinks[1].getvalue())
    got = fermion.FileReader(pa.BufferReader(sinks[0].getvalue())).read()
    for name in table.column_names:
        want = table.column(name).to_numpy().view(np.uint64)
        assert np.array_equal(got.column(name).to_numpy().view(np.uint64), want)


def test_later_stripes_follow_the_choices_of_the_first_and_make_them_again_every_fourth(
    monkeypatch,
) -> None:
    """The writer keeps a column's choices from stripe to stripe: only the first stripe's
    first DATA page is compressed as ZSTD_BLOCKS to compare with one frame and dictionary
    blocks; the next three stripes are dictionary blocks at once, and the fifth decides
    again. The pages are the ones a writer deciding on every stripe writes."""
    from fermion.format.write import shred

    compared: list[int] = []
    real = zstd_blocks.compress_blocks

    def counting(payload, level, block_size, sections=()):  # type: ignore[no-untyped-def]
        compared.append(len(payload))
        return real(payload, level, block_size, sections)

    monkeypatch.setattr(zstd_blocks, "compress_blocks", counting)
    table = pa.table({"s": pa.array(pool_text(50_000, seed=5))})
    options = {"max_stripe_rows": 10_000, "page_size": 64 << 10}
    sink = pa.BufferOutputStream()
    fermion.write_table(table, sink, **options)
    assert len(compared) == 2  # stripes 0 and 4 of 5
    r = fermion.FileReader(pa.BufferReader(sink.getvalue()))
    chunks = r.describe()["columns"][0]["streams"][2]["chunks"]
    assert len(chunks) == 5 and all(c["compressions"] == ["ZSTD_DICT_BLOCKS"] for c in chunks)
    assert r.read().equals(table)
    compared.clear()
    monkeypatch.setattr(shred, "CHOICE_STRIPES", 1)  # choices made on every stripe
    every = pa.BufferOutputStream()
    fermion.write_table(table, every, **options)
    assert len(compared) == 5
    assert every.getvalue().equals(sink.getvalue())


def test_batch_mode_keeps_no_choices_across_stripes(monkeypatch) -> None:
    """Batch mode decides blocks on a sample of each stripe's first page already: no kept
    choice is checked (that would sample the page twice), and the file reads back."""
    from fermion.format.write import shred

    checks: list[int] = []
    real = shred.blocks_win_sample

    def counting(payload, *args):  # type: ignore[no-untyped-def]
        checks.append(len(payload))
        return real(payload, *args)

    monkeypatch.setattr(shred, "blocks_win_sample", counting)
    rows = pool_text(70_000, seed=6)  # stripes of 8 * page_size = 32,768 rows
    sink = pa.BufferOutputStream()
    schema = pa.schema([("s", pa.string())])
    with fermion.FileWriter(sink, schema, page_size=4096) as w:
        for k in range(0, len(rows), 5_000):
            w.append_batch(k, pa.table({"s": rows[k : k + 5_000]}, schema=schema))
    r = fermion.FileReader(pa.BufferReader(sink.getvalue()))
    assert r.num_stripes == 3
    assert checks == []
    assert r.read().column("s").to_pylist() == rows
