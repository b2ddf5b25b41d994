"""Deterministic, seeded generators of the benchmark tables.

Every generator is a pure function of its size arguments and :data:`config.SEED`, so every
system is written from exactly the same rows, and a cached file stays valid across runs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.config import NULL_COLUMN_FRACTION, READ_COLUMNS, SEED

__all__ = [
    "evenly_spaced_columns",
    "lineitem_source",
    "load_lineitem",
    "nested_table",
    "take_indices",
    "tpchgen_binary",
    "wide_column_name",
    "wide_table",
]


def wide_column_name(i: int) -> str:
    """Name of column ``i`` of a wide table (zero-padded so names sort by position)."""
    return f"f{i:06d}"


def wide_table(ncols: int, nrows: int) -> pa.Table:
    """A wide feature table: alternating int64 / float32 columns, 30% of them all-null.

    Values: int64 uniform in [0, 10,000) (counts, categorical ids), float32 standard normal.
    Exactly ``round(0.3 * ncols)`` columns, chosen at random, are entirely null (typed).
    """
    rng = np.random.default_rng([SEED, ncols, nrows])
    null_cols = np.zeros(ncols, dtype=bool)
    null_cols[rng.permutation(ncols)[: round(NULL_COLUMN_FRACTION * ncols)]] = True
    arrays: list[pa.Array] = []
    for i in range(ncols):
        is_float = i % 2 == 1
        if null_cols[i]:
            arrays.append(pa.nulls(nrows, pa.float32() if is_float else pa.int64()))
        elif is_float:
            arrays.append(pa.array(rng.standard_normal(nrows, dtype=np.float32)))
        else:
            arrays.append(pa.array(rng.integers(0, 10_000, nrows, dtype=np.int64)))
    return pa.Table.from_arrays(arrays, names=[wide_column_name(i) for i in range(ncols)])


def evenly_spaced_columns(ncols: int, k: int = READ_COLUMNS) -> list[str]:
    """``k`` column names spread evenly over ``ncols`` columns (first and last included)."""
    positions = np.unique(np.linspace(0, ncols - 1, k).round().astype(np.int64))
    return [wide_column_name(int(i)) for i in positions]


def _offsets(lengths: np.ndarray) -> pa.Array:
    out = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=out[1:])
    return pa.array(out)


def _lengths_with_nulls(
    rng: np.random.Generator, n: int, max_len: int, null_p: float
) -> tuple[np.ndarray, pa.Array]:
    lengths = rng.integers(0, max_len + 1, n, dtype=np.int32)
    is_null = rng.random(n) < null_p
    lengths[is_null] = 0
    return lengths, pa.array(is_null)


def nested_table(nrows: int, null_p: float = 0.05, max_len: int = 4) -> pa.Table:
    """``ll: list<list<int64>>`` and ``ls: list<struct<a: int32, b: string>>``.

    List lengths are uniform in [0, 4]; every level (outer list, inner list, struct, leaf
    values) is null with probability 5%. Strings come from a vocabulary of 1,000 words of
    3-20 letters.
    """
    rng = np.random.default_rng([SEED, nrows, 7])
    # list<list<int64>>
    outer_len, outer_null = _lengths_with_nulls(rng, nrows, max_len, null_p)
    inner_len, inner_null = _lengths_with_nulls(rng, int(outer_len.sum()), max_len, null_p)
    n_leaf = int(inner_len.sum())
    leaf = pa.array(
        rng.integers(-(10**9), 10**9, n_leaf, dtype=np.int64), mask=rng.random(n_leaf) < null_p
    )
    inner = pa.ListArray.from_arrays(_offsets(inner_len), leaf, mask=inner_null)
    ll = pa.ListArray.from_arrays(_offsets(outer_len), inner, mask=outer_null)
    # list<struct<a: int32, b: string>>
    list_len, list_null = _lengths_with_nulls(rng, nrows, max_len, null_p)
    n_struct = int(list_len.sum())
    a = pa.array(
        rng.integers(-(2**31), 2**31 - 1, n_struct, dtype=np.int32),
        mask=rng.random(n_struct) < null_p,
    )
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    vocab = pa.array(
        [bytes(rng.choice(letters, int(n))).decode() for n in rng.integers(3, 21, 1_000)]
    )
    word = pa.array(rng.integers(0, 1_000, n_struct), mask=rng.random(n_struct) < null_p)
    b = vocab.take(word)
    structs = pa.StructArray.from_arrays(
        [a, b], names=["a", "b"], mask=pa.array(rng.random(n_struct) < null_p)
    )
    ls = pa.ListArray.from_arrays(_offsets(list_len), structs, mask=list_null)
    return pa.table({"ll": ll, "ls": ls})


def tpchgen_binary() -> str:
    """The ``tpchgen-cli`` beside this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.exists():
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise FileNotFoundError(
            "tpchgen-cli not found: install the bench extra (pip install -e '.[bench]')"
        )
    return found


def lineitem_source(data_dir: Path, scale: float, log: Callable[[str], None] | None = None) -> Path:
    """Path of TPC-H lineitem at ``scale`` as Parquet, generated once with ``tpchgen-cli``."""
    out_dir = data_dir / "tpch" / f"sf{scale:g}"
    path = out_dir / "lineitem.parquet"
    if path.exists():
        return path
    if log is not None:
        log(f"generating TPC-H lineitem SF{scale:g} with tpchgen-cli -> {path}")
    tmp_dir = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    tmp_dir.mkdir(parents=True)
    cmd = [tpchgen_binary(), "parquet", "-s", f"{scale:g}", "--tables", "lineitem"]
    subprocess.run([*cmd, "--output-dir", str(tmp_dir), "--quiet"], check=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    (tmp_dir / "lineitem.parquet").rename(path)
    shutil.rmtree(tmp_dir, ignore_errors=True)
    return path


def load_lineitem(path: Path) -> pa.Table:
    """Read the generated lineitem as plain Arrow types.

    ``tpchgen-cli`` stores ``string_view`` columns and Parquet field ids; every system gets
    ``string`` and no field metadata, so all of them write exactly the same table.
    """
    table = pq.read_table(path)
    fields = [
        pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else f.type, f.nullable)
        for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def take_indices(num_rows: int, count: int) -> np.ndarray:
    """``count`` distinct random row numbers in ``[0, num_rows)``, sorted ascending."""
    rng = np.random.default_rng([SEED, num_rows, count])
    return np.sort(rng.choice(num_rows, size=min(count, num_rows), replace=False))
