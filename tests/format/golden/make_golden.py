"""Write the golden files of the current format version (run once per released version).

    python -m tests.format.golden.make_golden
    python -m tests.format.golden.make_golden --encoded   # golden/encoded (FORMAT.md §3.1)

Each ``NAME.fermion`` is stored with ``NAME.arrow`` (Arrow IPC) holding the table it must
read back as. Files of released versions are never regenerated or edited.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

import fermion
from fermion.format.metadata.structs import FORMAT_VERSION_MAJOR, FORMAT_VERSION_MINOR
from tests.format.conftest import all_types_table
from tests.format.test_encodings import shapes_table


def golden_tables() -> dict[str, tuple[pa.Table, dict]]:
    rng = np.random.default_rng(7)
    wide = pa.table(
        {
            f"f{i:04d}": (
                pa.nulls(64, pa.float32())
                if i % 10 < 3
                else pa.array(rng.random(64, dtype=np.float32))
            )
            for i in range(300)
        }
    )
    return {
        "all_types": (all_types_table(n=40, seed=11), {}),
        "multi_stripe_pages": (
            all_types_table(n=200, seed=12),
            {"page_size": 128, "max_stripe_rows": 60},
        ),
        "uncompressed_no_crc": (
            all_types_table(n=20, seed=13),
            {"compression": "none", "page_crc": False},
        ),
        "wide_with_all_null_columns": (wide, {}),
        "empty": (all_types_table(n=5, seed=14).slice(0, 0), {}),
        # 1.1: a page of every encoding (see tests/format/test_encodings.py)
        "encoded_shapes": (shapes_table(6_000), {"page_size": 8 << 10}),
        # 1.2: ZSTD_BLOCKS pages of up to 33 blocks of 512 bytes, bit-packed pages of
        # widths 1 to 37 (FOR, DELTA, RLE, DICTIONARY; some of them blocked), two stripes
        "blocked_bitpacked": (
            blocked_table(8_000),
            {
                "page_size": 16 << 10,
                "compression_block_size": 512,
                "compression_block_overhead": float("inf"),
                "max_stripe_rows": 5_000,
            },
        ),
        # 1.3: FLOAT_DECIMAL pages (float32 and float64, exceptions, nulls, every nested
        # integer encoding, exponents 0 to 15, fallbacks) in two stripes, uncompressed so
        # that the nested encodings are chosen by raw size
        "decimal_floats": (
            decimal_floats_table(6_000),
            {"page_size": 8 << 10, "max_stripe_rows": 4_000, "compression": "none"},
        ),
        # 1.3: CHECKPOINTS on DELTA pages (sorted keys, one with 64-bit deltas whose sums
        # wrap) and FOR length pages (text), next to pages too short for a checkpoint and
        # a nested column (never checkpointed), two stripes
        "checkpoints": (
            checkpoints_table(9_000),
            {"page_size": 8 << 10, "max_stripe_rows": 6_000},
        ),
    }


def stripe_dictionary_tables() -> dict[str, tuple[pa.Table, dict]]:
    """Format 1.4: the golden files of a 1.4 writer are those that use a 1.4 feature (its
    other files are 1.3 files)."""
    options = {"max_stripe_rows": 7_000, "page_size": 4096, "bloom_filter_columns": ["sku"]}
    return {"stripe_dictionary": (stripe_dictionary_table(12_000), options)}


def _words(rng: np.random.Generator, count: int, low: int, high: int) -> np.ndarray:
    """``count`` distinct random lowercase words of ``low`` to ``high - 1`` letters."""
    out: set[str] = set()
    while len(out) < count:
        size = int(rng.integers(low, high))
        out.add(rng.integers(97, 123, size, dtype=np.uint8).tobytes().decode())
    return np.array(sorted(out))


def stripe_dictionary_table(n: int) -> pa.Table:
    """Format 1.4: medium-cardinality string and binary columns (stripe dictionaries) with
    nulls and empty strings, next to low-cardinality (page DICTIONARY) and unique (PLAIN)
    strings and a column with bloom filters."""
    rng = np.random.default_rng(29)
    cities = _words(rng, 900, 3, 20)
    cities[0] = ""  # an empty string among the distinct values
    city = rng.choice(cities, n)
    nulls = rng.random(n) < 0.1
    agents = _words(rng, 1_500, 10, 40)
    skus = _words(rng, 2_000, 8, 13)
    return pa.table(
        {
            "city": pa.array(city, mask=nulls),  # string, nulls, ""
            "agent": pa.array(rng.choice(agents, n)).cast(pa.large_string()),
            "sku": pa.array(rng.choice(skus, n)),  # with bloom filters
            "blob": pa.array([w.encode() + b"\x00\xff" for w in rng.choice(skus, n)]),
            "view": pa.array(rng.choice(cities[1:], n)).cast(pa.string_view()),
            "flag": pa.array(rng.choice(["A", "N", "R"], n)),  # page-level DICTIONARY
            "note": pa.array([f"note {i} {int(k)}" for i, k in enumerate(rng.integers(0, 9, n))]),
        }
    )


def checkpoints_table(n: int) -> pa.Table:
    rng = np.random.default_rng(23)
    words = np.array(["north", "east", "south", "west", "up", "down", "left", "right"])
    return pa.table(
        {
            "key": pa.array(np.cumsum(rng.integers(0, 40, n)) + 10**12),
            # 55-bit deltas: the values wrap around int64 (and the sums modulo 2**64)
            "wrapping": pa.array(np.cumsum(rng.integers(0, 2**55, n, dtype=np.int64))),
            "text": pa.array([" ".join(rng.choice(words, 1 + i % 6)) for i in range(n)]),
            "short": pa.array(np.arange(n, dtype=np.int32) * 3 % 200),  # small FOR pages
            "nested": pa.array([list(range(i, i + i % 3)) for i in range(n)], pa.list_(pa.int64())),
        }
    )


def decimal_floats_table(n: int) -> pa.Table:
    """Format 1.3: float columns that are decimals in disguise, and some that are not."""
    rng = np.random.default_rng(19)
    price = np.round(rng.random(n) * 1000, 2)
    odd = rng.choice(n, n // 100, replace=False)  # exceptions: 1 value in 100
    price[odd] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0, 1 / 3]), len(odd))
    milli = np.round(rng.normal(20, 5, n), 3).astype(np.float32)
    levels = np.array([0.5, 1.25, 2.75, 10.125, 300.0], dtype=np.float32)
    mixed = np.round(rng.random(n) * 100, 1)
    mixed[n // 2 :] = rng.random(n - n // 2)  # decimal pages, then random ones
    return pa.table(
        {
            "price": pa.array(price, mask=rng.random(n) < 0.1),  # FOR, exceptions, nulls
            "milli32": pa.array(milli, mask=rng.random(n) < 0.05),  # float32, e = 3
            "constant": pa.array(np.full(n, 2.5)),  # CONSTANT
            "ticks": pa.array(np.round(1000 + np.cumsum(rng.integers(0, 4, n)) * 0.25, 2)),
            "runs": pa.array(np.repeat(np.round(rng.random(n // 200 + 1) * 1e4, 1), 200)[:n]),
            "levels32": pa.array(rng.choice(levels, n)),  # INT_DICTIONARY
            "whole": pa.array(rng.integers(-(10**6), 10**6, n).astype(np.float64)),  # e = 0
            "micro": pa.array(np.round(rng.random(n), 6)),  # e = 6
            "tiny": pa.array(np.round(rng.random(n) * 1e-12, 15)),  # e = 15
            "mixed": pa.array(mixed),  # FLOAT_DECIMAL and BYTE_SPLIT pages
            "random": pa.array(rng.random(n)),  # BYTE_SPLIT
        }
    )


def blocked_table(n: int) -> pa.Table:
    """Format 1.2: integers of several bit widths, and data zstd compresses well (repeated
    patterns, text, two-decimal floats) so that pages are stored as many zstd blocks."""
    rng = np.random.default_rng(17)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    text = [" ".join(rng.choice(words, 2 + i % 5)) for i in range(n)]
    skewed = np.where(rng.random(n) < 0.05, rng.integers(0, 4096, n), 0)
    with_nulls = pa.array(rng.integers(0, 100, n), pa.int32()).to_pylist()
    for i in range(0, n, 11):
        with_nulls[i] = None
    return pa.table(
        {
            "w3": pa.array(rng.integers(0, 8, n).astype(np.int16)),
            "w7_nulls": pa.array(with_nulls, pa.int32()),
            "w12_skewed": pa.array(skewed.astype(np.int64)),
            "w20": pa.array(10**12 + rng.integers(0, 1 << 20, n)),
            "w37": pa.array(rng.integers(0, 1 << 37, n)),
            "w30_pattern": pa.array(np.tile(rng.integers(0, 1 << 30, 100), n // 100 + 1)[:n]),
            "w9_pattern": pa.array(
                np.tile(rng.integers(0, 512, 64), n // 64 + 1)[:n].astype(np.int32)
            ),
            "sorted": pa.array(np.cumsum(rng.integers(0, 50, n)) + 10**9),
            "ts": pa.array(1_700_000_000_000 + np.arange(n) * 1000, pa.timestamp("ms")),
            "text": pa.array(text),
            "flag": pa.array(rng.choice(["A", "N", "R"], n)),
            "level": pa.array(np.round(rng.random(n), 2)),
        }
    )


def batch_golden() -> tuple[list[int], list[pa.Table], dict]:
    """Format 1.1: a batch-mode file (nested columns, big and small batches, gaps in ids)."""
    table = all_types_table(n=160, seed=15).drop_columns(["dictionary", "dict_int"])
    sizes = [1, 3, 40, 2, 1, 17, 5, 60, 1, 30]
    ids = [-5, 0, 7, 8, 100, 101, 2**40, 2**40 + 3, 2**62, 2**63 - 1]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    parts = [table.slice(int(a), n) for a, n in zip(starts[:-1], sizes, strict=True)]
    return ids, parts, {"page_size": 256, "max_stripe_rows": 70}


def write(out: Path, name: str, table: pa.Table) -> None:
    with pa.OSFile(str(out / f"{name}.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)


def crc_blocks_table(n: int) -> pa.Table:
    """Format 1.5: uncompressed pages of point-read columns with a CRC32 per block, of
    every payload kind a point read takes values from, with nulls."""
    rng = np.random.default_rng(37)
    nulls = rng.random(n) < 0.05
    return pa.table(
        {
            "noise": pa.array(rng.random(n)),  # PLAIN
            "price": pa.array(np.round(rng.uniform(1, 5_000, n), 2)),  # FLOAT_DECIMAL
            "key": pa.array(np.cumsum(rng.integers(1, 5, n))),  # DELTA, checkpoints
            "small": pa.array(rng.integers(-500, 500, n), mask=nulls),  # FOR
            "code": pa.array(rng.choice([7, 100_003, 300_007, 524_287], n)),  # INT_DICTIONARY
            "flag": pa.array(rng.choice(["A", "N", "R"], n).tolist()),  # DICTIONARY
            "blob": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 40, n)], mask=nulls),
        }
    )


def crc_blocks_files(out: Path) -> None:
    """Format 1.5: the golden files of a 1.5 writer are those that use the 1.5 feature."""
    options = {
        "max_stripe_rows": 6_000,
        "page_size": 16_384,
        "compression": "none",
        "checksum_block_size": 512,
    }
    table = crc_blocks_table(10_000)
    fermion.write_table(table, out / "crc_blocks.fermion", **options)
    write(out, "crc_blocks", table)
    rng = np.random.default_rng(41)
    sizes = rng.integers(1, 64, 120)
    part = crc_blocks_table(int(sizes.sum())).select(["noise", "key", "blob"])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    ids = (np.arange(len(sizes)) * 5 + 100).tolist()
    with fermion.FileWriter(
        out / "crc_blocks_batches.fermion",
        part.schema,
        page_size=8_192,
        max_stripe_rows=2_000,
        checksum_block_size=1_024,
    ) as w:
        for bid, a, size in zip(ids, starts[:-1].tolist(), sizes.tolist(), strict=True):
            w.append_batch(bid, part.slice(a, size))
    vid = pa.array(np.repeat(ids, sizes), pa.int64())
    vindex = pa.array(np.concatenate([np.arange(k) for k in sizes]), pa.int32())
    expected = part.append_column(pa.field("_batch_id", pa.int64(), False), vid)
    expected = expected.append_column(pa.field("_batch_index", pa.int32(), False), vindex)
    write(out, "crc_blocks_batches", expected)


def decimal_multiply_table(n: int) -> pa.Table:
    """Format 1.6: FLOAT_DECIMAL pages of kernel MULTIPLY (values ``k * float64(10**-e)``,
    made with the format's kernel itself) of float64, with exceptions and nulls, nested FOR,
    DELTA, INT_DICTIONARY, RLE and CONSTANT integers, next to DIVIDE columns (float64, and
    float32 made with MULTIPLY)."""
    from fermion.format.encoding.decimal_floats import KERNEL_MULTIPLY, decimal_kernel

    rng = np.random.default_rng(43)

    def multiply(k: np.ndarray, e: int, width: int = 8) -> np.ndarray:
        return decimal_kernel(k.astype(np.int64), e, width, KERNEL_MULTIPLY)

    # k whose MULTIPLY value differs from DIVIDE's at e = 2: columns of only those values
    # cannot be DIVIDE pages
    small = np.arange(1, 10_000, dtype=np.int64)
    odd_k = small[multiply(small, 2) != small / 100]
    price = multiply(rng.integers(90_000, 10_500_000, n), 2)
    price[rng.choice(n, n // 100, replace=False)] = np.nan  # exceptions
    return pa.table(
        {
            "price": pa.array(price, mask=rng.random(n) < 0.05),
            "sorted": pa.array(multiply(np.cumsum(rng.choice(odd_k[:20], n)), 2)),
            "levels": pa.array(multiply(rng.choice(odd_k[:6], n), 2)),
            "runs": pa.array(multiply(np.repeat(rng.choice(odd_k, n // 500 + 1), 500)[:n], 2)),
            "constant": pa.array(multiply(np.full(n, int(odd_k[0])), 2)),
            # float32: the kernels' one-ulp float64 differences vanish in the cast to
            # float32, so a writer finds DIVIDE for these (MULTIPLY is legal there too)
            "milli32": pa.array(multiply(rng.integers(-50_000, 50_000, n), 3, 4)),
            "divide": pa.array(np.round(rng.random(n) * 100, 2)),
        }
    )


def decimal_multiply_files(out: Path) -> None:
    """Format 1.6: the golden files of a 1.6 writer are those that use the 1.6 feature."""
    table = decimal_multiply_table(9_000)
    options = {"max_stripe_rows": 5_000, "page_size": 8 << 10, "compression": "none"}
    fermion.write_table(table, out / "decimal_multiply.fermion", **options)
    write(out, "decimal_multiply", table)


def dict_blocks_table(n: int) -> pa.Table:
    """Format 1.7: strings cut from one long text of a few hundred words (as TPC-H's
    comments are cut from its text pool), with nulls, in a page large enough that zstd
    blocks sharing a dictionary are smaller than blocks without one; next to short strings
    (other compressions)."""
    rng = np.random.default_rng(47)
    words = np.array([f"{w:x}" for w in rng.integers(1 << 8, 1 << 20, 300)], dtype=object)
    pool = " ".join(rng.choice(words, 150_000))
    starts = rng.integers(0, len(pool) - 60, n).tolist()
    text = [pool[a : a + k] for a, k in zip(starts, rng.integers(10, 60, n).tolist(), strict=True)]
    return pa.table(
        {
            "text": pa.array(text, pa.string(), mask=rng.random(n) < 0.05),
            "code": pa.array([w[:3] for w in rng.choice(words, n)], pa.string()),
        }
    )


def dict_blocks_files(out: Path) -> None:
    """Format 1.7: the golden files of a 1.7 writer are those that use the 1.7 feature."""
    table = dict_blocks_table(20_000)
    fermion.write_table(table, out / "dict_blocks.fermion", dictionary_block_size=2048)
    write(out, "dict_blocks", table)


def main(out: Path, version: tuple[int, int]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if version >= (1, 7):
        dict_blocks_files(out)
        return
    if version >= (1, 6):
        decimal_multiply_files(out)
        return
    if version >= (1, 5):
        crc_blocks_files(out)
        return
    if version >= (1, 4):
        for name, (table, options) in stripe_dictionary_tables().items():
            fermion.write_table(table, out / f"{name}.fermion", **options)
            write(out, name, table)
        stripe_dictionary_batches(out)
        return
    for name, (table, options) in golden_tables().items():
        fermion.write_table(table, out / f"{name}.fermion", **options)
        write(out, name, table)
    # batch mode (format >= 1.1): the expected table carries the virtual columns
    ids, parts, options = batch_golden()
    schema = parts[0].schema
    with fermion.FileWriter(out / "batch_mode.fermion", schema, **options) as w:
        for bid, part in zip(ids, parts, strict=True):
            w.append_batch(bid, part)
    expected = pa.concat_tables(parts)
    sizes = [p.num_rows for p in parts]
    vid = pa.array(np.repeat(ids, sizes), pa.int64())
    vindex = pa.array(np.concatenate([np.arange(n) for n in sizes]), pa.int32())
    expected = expected.append_column(pa.field("_batch_id", pa.int64(), False), vid)
    expected = expected.append_column(pa.field("_batch_index", pa.int32(), False), vindex)
    write(out, "batch_mode", expected)


def stripe_dictionary_batches(out: Path) -> None:
    """Format 1.4: a batch-mode file whose index pages are cut at batch boundaries."""
    rng = np.random.default_rng(31)
    sizes = rng.integers(1, 400, 40)
    sizes[7] = 2_500  # a batch larger than a page
    table = stripe_dictionary_table(int(sizes.sum())).select(["city", "agent", "flag"])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    ids = (np.arange(len(sizes)) * 3 + 10).tolist()
    with fermion.FileWriter(
        out / "stripe_dictionary_batches.fermion",
        table.schema,
        page_size=2048,
        max_stripe_rows=5000,
    ) as w:
        for bid, a, size in zip(ids, starts[:-1].tolist(), sizes.tolist(), strict=True):
            w.append_batch(bid, table.slice(a, size))
    vid = pa.array(np.repeat(ids, sizes), pa.int64())
    vindex = pa.array(np.concatenate([np.arange(k) for k in sizes]), pa.int32())
    expected = table.append_column(pa.field("_batch_id", pa.int64(), False), vid)
    expected = expected.append_column(pa.field("_batch_index", pa.int32(), False), vindex)
    write(out, "stripe_dictionary_batches", expected)


def encoded_types_file(out: Path) -> None:
    """Unions, run-end encoded arrays and list views (docs/FORMAT.md §3.1), nested too,
    with nulls, over two stripes: they need no format version of their own, so the file
    lives in ``golden/encoded/`` and pins the storage mapping."""
    from tests.format.test_encoded_types import _cases

    cases = _cases()
    table = pa.table({"k": pa.array(range(9), pa.int64()), **cases})
    out.mkdir(parents=True, exist_ok=True)
    fermion.write_table(table, out / "encoded_types.fermion", max_stripe_rows=5)
    write(out, "encoded_types", table)


if __name__ == "__main__" and "--encoded" in sys.argv:
    encoded_types_file(Path(__file__).parent / "encoded")
elif __name__ == "__main__":
    version = f"v{FORMAT_VERSION_MAJOR}_{FORMAT_VERSION_MINOR}"
    target = Path(__file__).parent / version
    if target.exists() and "--force" not in sys.argv:
        raise SystemExit(f"{target} exists: golden files of a released version are frozen")
    main(target, (FORMAT_VERSION_MAJOR, FORMAT_VERSION_MINOR))
