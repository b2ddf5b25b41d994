"""``make run`` until the Spark job exists: the format on a generated wide feature table.

Generates an ML-style feature table (float32/int64 features, 30% all-null columns, a few
strings and a ``list<float32>`` embedding), writes it as Fermion and as Parquet (zstd),
inspects the Fermion file, reads a 10-column projection with a filter from both, and prints
sizes, timings, the IO the Fermion reader did and the rows matched.

Run: ``python -m fermion.demo [--columns 2000] [--rows 50000] [--keep DIR]``.

Example:
    >>> import io
    >>> report = run_demo(columns=24, rows=300, out=io.StringIO())
    >>> report.rows_matched == report.rows_expected
    True
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fermion.cli.render import render_inspect

__all__ = ["DemoReport", "main", "make_feature_table", "run_demo"]

DEFAULT_COLUMNS = 2_000
DEFAULT_ROWS = 50_000
NULL_COLUMN_FRACTION = 0.3
STRING_COLUMNS = ("country", "device", "user_id")
EMBEDDING_DIM = 16
PROJECTION_WIDTH = 10
FILTER_BELOW = 50  # the int64 features are uniform on [0, 1000): about 5% of rows match


@dataclass(frozen=True)
class DemoReport:
    """What the demo measured (times in seconds, sizes in bytes)."""

    rows: int
    columns: int
    fermion_bytes: int
    parquet_bytes: int
    fermion_write_s: float
    parquet_write_s: float
    fermion_read_s: float
    parquet_read_s: float
    projection: tuple[str, ...]
    filter_text: str
    rows_matched: int
    rows_expected: int
    io_requests: int | None
    io_bytes_read: int | None
    results_identical: bool


def _feature_name(i: int) -> str:
    return f"f{i:05d}"


def make_feature_table(columns: int, rows: int, *, seed: int = 7) -> pa.Table:
    """A wide feature table: ``columns`` numeric features plus strings and an embedding.

    Even-numbered features are int64 counts in [0, 1000), odd ones float32 in [0, 1) at
    millesimal precision; every 5th has 10% nulls; a seeded 30% of the features are entirely
    null. Then come the string columns and ``embedding: list<float32>``.

    Example:
        >>> t = make_feature_table(10, 4)
        >>> (t.num_rows, t.num_columns, str(t.schema.field("embedding").type))
        (4, 14, 'list<item: float>')
    """
    rng = np.random.default_rng(seed)
    null_columns = set(
        rng.choice(columns, size=int(columns * NULL_COLUMN_FRACTION), replace=False).tolist()
    )
    n_int = (columns + 1) // 2
    ints = rng.integers(0, 1000, size=(n_int, rows), dtype=np.int64)  # one row per column
    floats = np.round(rng.random(size=(columns - n_int, rows), dtype=np.float32), 3)
    sparse_mask = rng.random(rows) < 0.1
    arrays: list[pa.Array] = []
    names: list[str] = []
    for i in range(columns):
        kind = pa.int64() if i % 2 == 0 else pa.float32()
        if i in null_columns:
            array = pa.nulls(rows, kind)
        else:
            values = ints[i // 2] if i % 2 == 0 else floats[i // 2]
            array = pa.array(values, kind, mask=sparse_mask if i % 5 == 0 else None)
        arrays.append(array)
        names.append(_feature_name(i))
    countries = np.array(["de", "fr", "us", "jp", "br", "in"], dtype=object)
    devices = np.array(["ios", "android", "web"], dtype=object)
    arrays.append(pa.array(countries[rng.integers(0, len(countries), rows)], pa.string()))
    arrays.append(pa.array(devices[rng.integers(0, len(devices), rows)], pa.string()))
    arrays.append(pa.array([f"u{v:09d}" for v in rng.integers(0, 10**9, rows)], pa.string()))
    names.extend(STRING_COLUMNS)
    values = pa.array(rng.standard_normal(rows * EMBEDDING_DIM, dtype=np.float32))
    offsets = pa.array(np.arange(0, (rows + 1) * EMBEDDING_DIM, EMBEDDING_DIM, dtype=np.int32))
    arrays.append(pa.ListArray.from_arrays(offsets, values))
    names.append("embedding")
    return pa.Table.from_arrays(arrays, names=names)


def _pick_projection(table: pa.Table) -> tuple[list[str], str]:
    """Ten non-null features (the first one an int64 to filter on) plus ``country``."""
    features = [
        f.name for f in table.schema if f.name.startswith("f") and table[f.name].null_count == 0
    ]
    int_features = [n for n in features if pa.types.is_int64(table.schema.field(n).type)]
    if not int_features:
        raise ValueError("the generated table has no int64 feature without nulls")
    key = int_features[0]
    others = [n for n in features if n != key][: PROJECTION_WIDTH - 2]
    return [key, *others, "country"], key


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def run_demo(
    *,
    columns: int = DEFAULT_COLUMNS,
    rows: int = DEFAULT_ROWS,
    workdir: str | None = None,
    out: TextIO | None = None,
) -> DemoReport:
    """Generate, write, inspect and read back a wide table; print what happened.

    Args:
        columns: numeric feature columns (three strings and an embedding are added).
        rows: rows in the table.
        workdir: where to keep the two files; a temporary folder (removed) when ``None``.
        out: where to print (``sys.stdout`` when ``None``).

    Returns:
        The measurements as a :class:`DemoReport`.

    Example:
        >>> import io
        >>> run_demo(columns=12, rows=100, out=io.StringIO()).rows
        100
    """
    from fermion.format import FileReader, write_table

    stream = out if out is not None else sys.stdout

    def say(text: str = "") -> None:
        stream.write(text + "\n")

    folder = workdir or tempfile.mkdtemp(prefix="fermion-demo-")
    os.makedirs(folder, exist_ok=True)
    try:
        started = time.perf_counter()
        table = make_feature_table(columns, rows)
        say(
            f"generated {table.num_rows:,} rows x {table.num_columns:,} columns "
            f"({_mb(table.nbytes)} in memory, {int(columns * NULL_COLUMN_FRACTION):,} all-null "
            f"features) in {time.perf_counter() - started:.2f} s"
        )
        fermion_path = os.path.join(folder, "features.fermion")
        parquet_path = os.path.join(folder, "features.parquet")

        started = time.perf_counter()
        write_table(table, fermion_path)
        fermion_write_s = time.perf_counter() - started
        started = time.perf_counter()
        pq.write_table(table, parquet_path, compression="zstd")
        parquet_write_s = time.perf_counter() - started
        fermion_bytes = os.path.getsize(fermion_path)
        parquet_bytes = os.path.getsize(parquet_path)
        say(f"wrote Fermion  {_mb(fermion_bytes):>10} in {fermion_write_s:6.2f} s  {fermion_path}")
        say(f"wrote Parquet  {_mb(parquet_bytes):>10} in {parquet_write_s:6.2f} s  (zstd)")

        projection, key = _pick_projection(table)
        null_feature = next(
            (n for n in table.column_names if table[n].null_count == table.num_rows),
            projection[1],
        )
        say("")
        say(f"inspect (2 of {table.num_columns:,} columns; `fermion inspect` shows all):")
        info = FileReader(fermion_path).describe(columns=[key, null_feature])
        for line in render_inspect(info).splitlines():
            say("  " + line)

        expression = pc.field(key) < FILTER_BELOW
        filter_text = f"{key} < {FILTER_BELOW}"
        started = time.perf_counter()
        reader = FileReader(fermion_path)
        got = reader.read(columns=projection, filter=expression)
        fermion_read_s = time.perf_counter() - started
        stats = getattr(getattr(reader, "source", None), "stats", None)
        io_requests = getattr(stats, "requests", None)
        io_bytes = getattr(stats, "bytes_read", None)

        started = time.perf_counter()
        from_parquet = pq.read_table(parquet_path, columns=projection, filters=expression)
        parquet_read_s = time.perf_counter() - started
        rows_expected = int(pc.sum(pc.less(table[key], FILTER_BELOW)).as_py() or 0)
        identical = got.equals(from_parquet)

        say("")
        say(f"open + read {len(projection)} columns where {filter_text}:")
        say(f"  Fermion  {fermion_read_s * 1000:8.1f} ms  {got.num_rows:,} rows matched")
        if io_requests is not None and io_bytes is not None:
            share = io_bytes / fermion_bytes if fermion_bytes else 0.0
            say(f"           {io_requests} IO requests, {_mb(io_bytes)} read ({share:.1%} of file)")
        say(f"  Parquet  {parquet_read_s * 1000:8.1f} ms  {from_parquet.num_rows:,} rows matched")
        ratio = parquet_read_s / fermion_read_s if fermion_read_s else float("inf")
        say(f"  Fermion/Parquet speed-up {ratio:.1f}x, results identical: {identical}")
        return DemoReport(
            rows=table.num_rows,
            columns=table.num_columns,
            fermion_bytes=fermion_bytes,
            parquet_bytes=parquet_bytes,
            fermion_write_s=fermion_write_s,
            parquet_write_s=parquet_write_s,
            fermion_read_s=fermion_read_s,
            parquet_read_s=parquet_read_s,
            projection=tuple(projection),
            filter_text=filter_text,
            rows_matched=got.num_rows,
            rows_expected=rows_expected,
            io_requests=io_requests,
            io_bytes_read=io_bytes,
            results_identical=identical,
        )
    finally:
        if workdir is None:
            shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry of ``python -m fermion.demo``; returns the exit code.

    Example:
        >>> main(["--columns", "12", "--rows", "50"])  # doctest: +ELLIPSIS
        generated 50 rows x 16 columns ...
        0
    """
    parser = argparse.ArgumentParser(prog="python -m fermion.demo", description=__doc__)
    parser.add_argument("--columns", type=int, default=DEFAULT_COLUMNS)
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--keep", metavar="DIR", help="keep the files in DIR")
    args = parser.parse_args(argv)
    if args.columns < 2 or args.rows < 1:
        parser.error("need --columns >= 2 and --rows >= 1")
    report = run_demo(columns=args.columns, rows=args.rows, workdir=args.keep)
    return 0 if report.results_identical and report.rows_matched == report.rows_expected else 1


if __name__ == "__main__":
    raise SystemExit(main())
