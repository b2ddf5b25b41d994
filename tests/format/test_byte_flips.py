"""No read path returns corrupted values silently: every byte of small files, flipped.

Two small files hold every page kind a point read meets (docs/FORMAT.md §5, §9): PLAIN,
BYTE_SPLIT, FLOAT_DECIMAL, FOR, DELTA with checkpoints, INT_DICTIONARY, RLE, CONSTANT,
DICTIONARY, stripe dictionaries, PLAIN strings with FOR lengths; compressed NONE (stored
as CRC_BLOCKS, format 1.5), ZSTD and ZSTD_BLOCKS; a VALIDITY page; a list and a struct
column; a batch-mode file of float32 columns with a list column; and a file of strings
in ZSTD_DICT_BLOCKS pages (format 1.7). Each byte of each
file is XOR-ed with 0xFF in turn (a full sweep: every byte, no sampling) and every read
path runs on a fresh reader: ``read``, ``take``, a stats-pruned filtered read, the
nested columns, ``read_batches``. Each must either return exactly the original values or
raise a typed :class:`fermion.FermionError`; the test also counts how the flips were
caught (ChecksumError or a structural check).

Bytes no checksum covers, by design, and why a flip there cannot change a value:
- the FileHeader (bytes 0-7): informative, readers never use it (§1.1);
- the footer's ``footer_crc``, ``version_major``, ``version_minor`` and ``magic``
  (after the CRC-covered 40 bytes): checked against fixed values or ignored (minor);
- a page header's ``crc`` field (a point read of a CRC_BLOCKS or ZSTD_BLOCKS page does
  not use it; a full read then fails the CRC) and the CRC32 table of a CRC_BLOCKS page
  (a flipped entry fails that block's check: a false alarm, never a wrong value);
- the CIT and the schema's hash slots: a wrong CIT entry meets the CMB's ``column`` check
  and CRC, a wrong slot a name comparison;
- of a ZSTD_BLOCKS page read value by value, the page header and the frame table: every
  field is checked against the metadata and the frames' exact extents, and each frame
  carries zstd's content checksum; of a ZSTD_DICT_BLOCKS page, its dictionary too: a
  flipped byte either fails to load or decodes frames that fail their content checksum.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
from fermion.format.metadata.structs import RequiredFeature
from fermion.io.source import ByteSource, IOStats


class MemorySource(ByteSource):
    """A file held in a bytearray (flipped in place between reads); real reads of it."""

    def __init__(self, data: bytearray) -> None:
        self.name = "memory.fermion"
        self.data = data
        self.size = len(data)
        self.stats = IOStats()

    def _read_at(self, offset: int, length: int) -> bytes:
        return bytes(self.data[offset : offset + length])


def _words(rng: np.random.Generator, n: int, distinct: int) -> pa.Array:
    pool = np.array([f"city-{i:04d}-{'x' * int(i % 7)}" for i in range(distinct)])
    return pa.array(pool[rng.integers(0, distinct, n)].tolist())


def _cast_decimals(rng: np.random.Generator, n: int) -> pa.Array:
    """Prices made by Arrow's decimal -> float64 cast (``k * 0.01``, not ``k / 100``)."""
    cents = rng.integers(100, 10_000_000, n).tolist()
    exact = pa.array([Decimal(k).scaleb(-2) for k in cents], pa.decimal128(10, 2))
    return exact.cast(pa.float64())


def plain_file() -> tuple[bytes, pa.Table]:
    rng = np.random.default_rng(7)
    n = 2_200
    lists = [list(range(int(k))) if k % 5 else None for k in rng.integers(0, 4, n)]
    table = pa.table(
        {
            "price": pa.array(np.round(rng.uniform(1, 900, n), 2)),  # FLOAT_DECIMAL
            "cast_price": _cast_decimals(rng, n),  # FLOAT_DECIMAL, MULTIPLY kernel (1.6)
            "noise": pa.array(rng.random(n)),  # PLAIN, uncompressed: CRC_BLOCKS
            "split": pa.array(rng.random(n).astype(np.float32).astype(np.float64)),
            "key": pa.array(np.cumsum(rng.integers(1, 9, n))),  # DELTA, checkpoints
            "small": pa.array(rng.integers(0, 1_000, n)),  # FOR
            "dict": pa.array(rng.choice([0, 100_003, 300_007, 524_287], n)),  # INT_DICTIONARY
            "runs": pa.array(np.repeat(rng.integers(0, 10**6, n // 100), 100)),  # RLE
            "const": pa.array(np.full(n, 42, dtype=np.int32)),  # CONSTANT
            "maybe": pa.array(
                [None if k % 3 == 0 else int(k) for k in rng.integers(0, 1 << 30, n)],
                pa.int64(),
            ),
            "text": pa.array([f"comment {int(k)} " * int(k % 5 + 1) for k in range(n)]),
            "flag": pa.array(rng.choice(["A", "N", "R"], n).tolist()),  # DICTIONARY
            "city": _words(rng, n, 300),  # stripe dictionary
            "uniq": pa.array([bytes(rng.bytes(int(k % 20))) for k in range(n)]),
            "b": pa.array(rng.random(n) < 0.3),
            "lst": pa.array(lists, pa.list_(pa.int64())),
            "st": pa.StructArray.from_arrays(
                [pa.array(rng.integers(0, 100, n), pa.int32()), _words(rng, n, 20)],
                names=["a", "s"],
            ),
        }
    )
    sink = pa.BufferOutputStream()
    fermion.write_table(
        table,
        sink,
        page_size=2048,
        max_stripe_rows=1_100,
        compression_block_size=256,
        compression_block_overhead=float("inf"),
        checksum_block_size=256,
    )
    return sink.getvalue().to_pybytes(), table


def batch_file() -> tuple[bytes, pa.Table, list[int]]:
    rng = np.random.default_rng(8)
    sizes = rng.integers(1, 40, 30)
    n = int(sizes.sum())
    cols = {f"f{i}": pa.array(rng.random(n).astype(np.float32)) for i in range(3)}
    cols["lst"] = pa.array(
        [list(range(int(k))) for k in rng.integers(0, 5, n)], pa.list_(pa.int64())
    )
    table = pa.table(cols)
    ids = (np.arange(len(sizes)) * 2 + 5).tolist()
    sink = pa.BufferOutputStream()
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    with fermion.FileWriter(
        sink, table.schema, page_size=512, max_stripe_rows=300, checksum_block_size=256
    ) as w:
        for bid, a, size in zip(ids, starts, sizes.tolist(), strict=False):
            w.append_batch(bid, table.slice(a, size))
    return sink.getvalue().to_pybytes(), table, ids


Path = Callable[[fermion.FileReader], pa.Table]


def column_paths(name: str, table: pa.Table, ids: list[int] | None) -> dict[str, Path]:
    """The read paths that decode column ``name`` (None: every column)."""
    cols = None if name is None else [name]
    idx = np.arange(0, table.num_rows, 37)
    paths: dict[str, Path] = {
        "read": lambda r: r.read(columns=cols),
        "take": lambda r: r.take(idx, columns=cols),
    }
    if ids is None:  # stats-pruned: a filter on a sorted column, with the column read
        cut = pc.field("key") < int(table.column("key")[table.num_rows // 3].as_py())
        paths["filtered"] = lambda r: r.read(filter=cut, columns=["key"] + (cols or []))
    else:
        wanted = [ids[3], ids[17], ids[-1]]
        paths["batches"] = lambda r: r.read_batches(wanted, columns=cols)
    return paths


def regions(data: bytes) -> list[tuple[int, int, str | None]]:
    """(start, end, column) of every column's chunks and CMB; the rest has column None."""
    r = fermion.FileReader(MemorySource(bytearray(data)))
    out = []
    for c in r.describe()["columns"]:
        if c["has_cmb"]:
            out.append((c["cmb_offset"], c["cmb_offset"] + c["cmb_size"], c["name"]))
        for s in c["streams"]:
            for ch in s["chunks"]:
                out.append((ch["offset"], ch["offset"] + ch["length"], c["name"]))
    return sorted(out)


def positions(data: bytes, budget: int, seed: int) -> list[int]:
    """A dense sample: every byte of the first 64 of each chunk and CMB (page, block table
    and encoding headers), the file header, the CIT and the footer, and ``budget`` more
    drawn at random from the rest (chunk bodies, nine in ten; the schema area, one in
    ten: every column's reads run for its bytes)."""
    owned = np.zeros(len(data), dtype=bool)
    firsts = np.zeros(len(data), dtype=bool)
    for a, b, _ in regions(data):
        owned[a:b] = True
        firsts[a : min(b, a + 64)] = True
    r = fermion.FileReader(MemorySource(bytearray(data)))
    tail = len(data) - 64 - 8 * (r.metadata.num_columns + 1 + int(r.batch_mode))
    firsts[:8] = firsts[tail:] = True
    rng = np.random.default_rng(seed)
    picked = []
    for where, share in ((owned & ~firsts, 0.9), (~owned & ~firsts, 0.1)):
        rest = np.flatnonzero(where)
        picked.append(rng.choice(rest, min(int(budget * share), len(rest)), replace=False))
    return sorted(np.flatnonzero(firsts).tolist() + np.concatenate(picked).tolist())


def sweep(data: bytes, table: pa.Table, where: list[int], ids: list[int] | None = None) -> Counter:
    """Flip each byte of ``where`` in turn (XOR 0xFF) and run the read paths of the column
    it belongs to (all columns outside any column's bytes) on a fresh reader; fail on any
    silently different result."""
    spans = regions(data)
    starts = np.array([a for a, _, _ in spans])
    expected: dict[tuple[str | None, str], pa.Table] = {}
    buf = bytearray(data)
    src = MemorySource(buf)
    outcomes: Counter = Counter()
    silent: list[tuple[int, str | None, str]] = []
    for pos in where:
        k = int(np.searchsorted(starts, pos, side="right")) - 1
        column = spans[k][2] if k >= 0 and pos < spans[k][1] else None
        paths = column_paths(column, table, ids)
        for name, run in paths.items():
            if (column, name) not in expected:
                expected[(column, name)] = run(fermion.FileReader(MemorySource(bytearray(data))))
        buf[pos] ^= 0xFF
        for name, run in paths.items():
            try:
                got = run(fermion.FileReader(src))
            except fermion.ChecksumError:
                outcomes["checksum"] += 1
            except fermion.FermionError:
                outcomes["structural"] += 1
            else:
                if got.equals(expected[(column, name)]):
                    outcomes["same"] += 1
                else:
                    silent.append((pos, column, name))
        buf[pos] ^= 0xFF
    assert not silent, f"silently different values after flipping byte(s): {silent[:20]}"
    return outcomes


@pytest.mark.slow
def test_byte_flips_are_caught_or_harmless_plain_file() -> None:
    data, table = plain_file()
    r = fermion.FileReader(MemorySource(bytearray(data)))
    assert r.metadata.format_version == "1.6"  # CRC_BLOCKS (1.5), MULTIPLY (1.6)
    assert r.file_meta.required_features & RequiredFeature.DECIMAL_MULTIPLY
    assert r.read().equals(table)
    outcomes = sweep(data, table, positions(data, budget=1_500, seed=1))
    assert outcomes["checksum"] > outcomes["structural"]  # checksums catch most flips


@pytest.mark.slow
def test_byte_flips_are_caught_or_harmless_batch_file() -> None:
    data, table, ids = batch_file()
    outcomes = sweep(data, table, positions(data, budget=1_000, seed=2), ids)
    assert outcomes["checksum"] > outcomes["structural"]


def dict_blocks_file() -> tuple[bytes, pa.Table]:
    """Strings in a ZSTD_DICT_BLOCKS page (pages of about 700 KB are where the dictionary
    wins, as for lineitem's comments), with nulls, next to ZSTD and CRC_BLOCKS pages."""
    from tests.format.test_dict_blocks import pool_text

    rng = np.random.default_rng(9)
    n = 21_000
    table = pa.table(
        {
            "text": pa.array(pool_text(n, seed=3), mask=rng.random(n) < 0.05),
            "key": pa.array(np.arange(n)),
        }
    )
    sink = pa.BufferOutputStream()
    fermion.write_table(table, sink, compression_block_size=4096)
    return sink.getvalue().to_pybytes(), table


@pytest.mark.slow
def test_byte_flips_are_caught_or_harmless_dict_blocks_file() -> None:
    data, table = dict_blocks_file()
    r = fermion.FileReader(MemorySource(bytearray(data)))
    assert r.metadata.format_version == "1.7"
    text = r.describe()["columns"][0]["streams"][2]["chunks"]
    assert "ZSTD_DICT_BLOCKS" in {x for c in text for x in c["compressions"]}
    assert r.read().equals(table)
    outcomes = sweep(data, table, positions(data, budget=1_500, seed=3))
    assert outcomes["checksum"] > outcomes["structural"]


@pytest.mark.parametrize("checksum_block_size", [4096, 0])
def test_take_raises_checksum_error_on_a_flipped_value_byte(checksum_block_size: int) -> None:
    """One byte of an uncompressed value, read by take: with a CRC per block (format 1.5)
    the block's CRC catches it, without (a 1.4 file) the whole page's CRC32."""
    n = 50_000
    table = pa.table({"x": pa.array(np.random.default_rng(1).random(n))})
    sink = pa.BufferOutputStream()
    fermion.write_table(table, sink, compression="none", checksum_block_size=checksum_block_size)
    data = bytearray(sink.getvalue().to_pybytes())
    original = fermion.FileReader(MemorySource(bytearray(data))).take([500])
    at = data.find(np.float64(table.column("x")[500].as_py()).tobytes())
    assert at > 0  # random doubles: stored as they are
    data[at] ^= 0x01
    with pytest.raises(fermion.ChecksumError):
        fermion.FileReader(MemorySource(data)).take([500])
    got = fermion.FileReader(MemorySource(data), verify_checksums=False).take([500])
    assert not got.equals(original)  # the flip does change the value: it was caught
