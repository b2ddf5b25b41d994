"""Bloom filters: equality and isin filters on random-order keys read few pages.

Bad inputs tried: bloom columns that do not exist or have unsupported types, a damaged
bloom page (CRC) and a bloom page claiming the wrong page count.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
from fermion.format.encoding.bloom import build_blooms, hash_values, may_contain


@pytest.fixture(scope="module")
def keyed(tmp_path_factory) -> tuple[Path, Path, pa.Table]:
    rng = np.random.default_rng(11)
    n = 400_000
    table = pa.table(
        {
            "id": pa.array(rng.permutation(n).astype(np.int64)),
            "key": pa.array([f"user-{i}" for i in rng.permutation(n)]),
            "day": pa.array(rng.integers(0, 20_000, n).astype(np.int32), pa.date32()),
            "v": pa.array(rng.random(n)),
        }
    )
    d = tmp_path_factory.mktemp("bloom")
    with_bloom, without = d / "b.fermion", d / "n.fermion"
    opts = {"page_size": 32 << 10, "max_stripe_rows": 100_000}
    fermion.write_table(table, with_bloom, bloom_filter_columns=["id", "key", "day"], **opts)
    fermion.write_table(table, without, **opts)
    return with_bloom, without, table


def _bytes_read(path: Path, column: str, expr: pc.Expression) -> tuple[int, int, int]:
    """(bytes a filtered read of `column` fetched, its DATA bytes, its BLOOM bytes)."""
    with fermion.FileReader(path, coalesce_gap=0) as r:
        d = r.describe(columns=[column])  # also loads the column's metadata
        sizes = {
            s["stream_type"]: sum(ch["length"] for ch in s["chunks"])
            for s in d["columns"][0]["streams"]
        }
        r.source.stats.reset()
        r.read(columns=[column], filter=expr)
        return r.source.stats.bytes_read, sizes["DATA"], sizes.get("BLOOM", 0)


@pytest.mark.parametrize(
    "expr",
    [
        pc.field("id") == 123_456,
        pc.field("id").isin([5, 399_999]),
        (pc.field("id") == 77) | (pc.field("id") == 78),
        pc.field("key") == "user-31337",
        pc.field("key").isin(["user-1", "nobody"]),
        pc.field("day") == pa.scalar(12_345, pa.int32()).cast(pa.date32()),
        (pc.field("id") == 42) & (pc.field("v") > 0.5),
        pc.field("id") == 10**9,
    ],
)
def test_bloom_filtered_reads_are_exact(keyed, expr: pc.Expression) -> None:
    with_bloom, without, table = keyed
    expected = table.filter(expr)
    assert fermion.read_table(with_bloom, filter=expr).equals(expected)
    assert fermion.read_table(without, filter=expr).equals(expected)


def test_equality_on_high_cardinality_key_reads_few_pages(keyed) -> None:
    with_bloom, without, _ = keyed
    for column, expr in [("id", pc.field("id") == 123_456), ("key", pc.field("key") == "user-9")]:
        read, data, bloom = _bytes_read(with_bloom, column, expr)
        assert bloom > 0
        # the bloom pages, then at most 5% of the column's data pages (pages are ~equal size)
        assert read - bloom <= 0.05 * data, (column, read, data, bloom)
        read_plain, data_plain, _ = _bytes_read(without, column, expr)
        assert read_plain >= 0.95 * data_plain  # min/max cannot prune a shuffled key


def test_bloom_kernel_has_no_false_negatives() -> None:
    rng = np.random.default_rng(2)
    for values in (
        pa.array(rng.integers(-(2**62), 2**62, 5000)),
        pa.array([f"{x}é" for x in rng.integers(0, 10**9, 3000)]),
        pa.array([b"", b"\0", b"\0\0"] * 10, pa.binary()),
    ):
        pages = [values.slice(i, 1000) for i in range(0, len(values), 1000)]
        blob = build_blooms(pages)
        for i, page in enumerate(pages):
            for j in range(0, len(page), 97):
                assert may_contain(blob, hash_values(page.slice(j, 1)), len(pages))[i]


def test_bad_bloom_options(tmp_path: Path) -> None:
    t = pa.table({"a": [1], "f": [1.5], "l": [[1]]})
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.write_table(t, tmp_path / "x.fermion", bloom_filter_columns=["nope"])
    with pytest.raises(fermion.UnsupportedTypeError):
        fermion.write_table(t, tmp_path / "x.fermion", bloom_filter_columns=["f"])
    with pytest.raises(fermion.UnsupportedTypeError):
        fermion.write_table(t, tmp_path / "x.fermion", bloom_filter_columns=["l"])
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.write_table(t, tmp_path / "x.fermion", bloom_filter_columns="a")


def test_corrupt_bloom_pages(tmp_path: Path) -> None:
    with pytest.raises(fermion.InvalidFileError):
        may_contain(b"\x05\x00\x00\x00", hash_values(pa.array([1])), 5)
    blob = build_blooms([pa.array([1, 2])])
    with pytest.raises(fermion.InvalidFileError):
        may_contain(blob, hash_values(pa.array([1])), 2)
    t = pa.table({"a": np.arange(100_000)})
    path = tmp_path / "c.fermion"
    fermion.write_table(t, path, bloom_filter_columns=["a"], page_size=8 << 10)
    d = fermion.FileReader(path).describe()
    bloom = next(s for s in d["columns"][0]["streams"] if s["stream_type"] == "BLOOM")
    off = bloom["chunks"][0]["offset"]
    data = bytearray(path.read_bytes())
    data[off + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(fermion.ChecksumError):
        fermion.read_table(path, filter=pc.field("a") == 5)
    assert fermion.read_table(path).num_rows == 100_000  # full reads never touch blooms
