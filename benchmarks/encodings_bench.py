"""Per-encoding benchmark: size and decode speed on typical column shapes.

For each shape (1,000,000 values, seeded) it writes one single-column file three ways —
Fermion with encodings chosen per page, Fermion with every page PLAIN (zstd still on) and
Parquet (zstd) — and reports the encodings Fermion chose, the three sizes and the median
time to read the column back (decode speed in MB/s of Arrow data produced).

Run alone: ``python -m benchmarks.encodings_bench``; ``make bench`` picks it up as an extra
module (``run(results)``).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

N = 1_000_000
REPEAT = 5


def shapes(n: int = N) -> dict[str, pa.Array]:
    """Typical column shapes of feature and fact tables."""
    rng = np.random.default_rng(20261122)
    mostly = np.full(n, 7, dtype=np.int64)
    mostly[rng.integers(0, n, n // 100)] = rng.integers(0, 10**6, n // 100)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    return {
        "constant int64": pa.array(np.full(n, 42, dtype=np.int64)),
        "mostly-constant int64": pa.array(mostly),
        "runs int64": pa.array(np.repeat(rng.integers(0, 10**9, n // 1000), 1000)),
        "sorted int64": pa.array(np.cumsum(rng.integers(0, 20, n))),
        "low-cardinality int64": pa.array(rng.choice([3, 70_000, 123_456, 999_999], n)),
        "high-cardinality int64": pa.array(rng.integers(0, 10**12, n)),
        "random float32": pa.array(rng.random(n, dtype=np.float32)),
        "prices float64": pa.array(np.round(rng.random(n) * 1000, 2)),
        "dates": pa.array(rng.integers(18_000, 20_000, n).astype(np.int32), pa.date32()),
        "short strings, low cardinality": pa.array(rng.choice(words, n)),
        "long strings": pa.array([f"row {i}: " + "lorem ipsum " * (i % 7) for i in range(n)]),
        "medium-cardinality strings": _medium_cardinality(rng, n),
    }


def _medium_cardinality(rng: np.random.Generator, n: int, distinct: int = 50_000) -> pa.Array:
    """``n`` values drawn uniformly from ``distinct`` random lowercase strings of 8 to 30
    characters (city names, user agents, SKUs): too many for page dictionaries, few
    enough that each value repeats about ``n / distinct`` times in a stripe."""
    lengths = rng.integers(8, 31, distinct)
    offsets = np.zeros(distinct + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    chars = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    words = pa.Array.from_buffers(
        pa.string(), distinct, [None, pa.py_buffer(offsets), pa.py_buffer(chars)]
    )
    return words.take(pa.array(rng.integers(0, distinct, n)))


def _median_ms(fn: Callable[[], Any], repeat: int = REPEAT) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def measure(name: str, values: pa.Array, workdir: Path) -> dict[str, Any]:
    import fermion

    table = pa.table({"v": values})
    encoded, plain, parquet = workdir / "e.fermion", workdir / "p.fermion", workdir / "x.parquet"
    fermion.write_table(table, encoded)
    fermion.write_table(table, plain, encodings=False)
    pq.write_table(table, parquet, compression="zstd")
    assert fermion.read_table(encoded).equals(table)
    described = fermion.FileReader(encoded).describe()
    chosen = sorted(
        {
            f"{s['stream_type']}:{e}"
            for s in described["columns"][0]["streams"]
            for ch in s["chunks"]
            for e in ch["encodings"]
        }
    )
    read_ms = _median_ms(lambda: fermion.read_table(encoded))
    return {
        "benchmark": f"encoding: {name}",
        "chosen": " ".join(chosen),
        "fermion_bytes": encoded.stat().st_size,
        "fermion_plain_bytes": plain.stat().st_size,
        "parquet_bytes": parquet.stat().st_size,
        "size_vs_parquet": round(encoded.stat().st_size / parquet.stat().st_size, 3),
        "fermion_read_ms": round(read_ms, 2),
        "parquet_read_ms": round(_median_ms(lambda: pq.read_table(parquet)), 2),
        "fermion_decode_mb_s": round(table.nbytes / 1e6 / (read_ms / 1e3), 1),
    }


def run(results: list[dict[str, Any]]) -> None:
    """Append one row per column shape to ``results``."""
    with tempfile.TemporaryDirectory(prefix="fermion-enc-bench-") as tmp:
        for name, values in shapes().items():
            results.append(measure(name, values, Path(tmp)))


if __name__ == "__main__":
    rows: list[dict[str, Any]] = []
    run(rows)
    for row in rows:
        print(row)
