"""Benchmark sizes, seeds and paths: every tunable number lives here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DATA_VERSION",
    "DEFAULT_DATA_DIR",
    "DEFAULT_OUTPUT_DIR",
    "DEFAULT_REPEAT",
    "FULL",
    "NULL_COLUMN_FRACTION",
    "QUICK",
    "READ_COLUMNS",
    "REPO_ROOT",
    "RESULT_MARKER",
    "SEED",
    "TAKE_CHECK_ROWS",
    "WARMUP_RUNS",
    "WORKER_TIMEOUT_S",
    "Sizes",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT / ".bench-data"
DEFAULT_OUTPUT_DIR = REPO_ROOT / "docs"

#: Bump when a generator changes, so cached files are rewritten.
DATA_VERSION = 1
SEED = 20261122
DEFAULT_REPEAT = 5
#: Untimed runs before the timed ones (the first one's result is checked for shape).
#: ``FERMION_BENCH_WARMUP=0`` (inherited by the workers) skips them in the Spark and TPC-H
#: cases, for the quick-mode tests, which assert results, never times; the file cases'
#: workers always make one untimed first run, whose result they check.
WARMUP_RUNS = int(os.environ.get("FERMION_BENCH_WARMUP", "1"))
#: A single (scenario, system) worker may not take longer than this.
WORKER_TIMEOUT_S = 1800
#: A worker prints its result as one line starting with this (benchmarks.launch reads it).
RESULT_MARKER = "BENCH-RESULT "
NULL_COLUMN_FRACTION = 0.3
READ_COLUMNS = 10
#: Rows taken when a written copy is verified (take path).
TAKE_CHECK_ROWS = 1_000


@dataclass(frozen=True)
class Sizes:
    """Sizes of every dataset for one benchmark mode."""

    name: str
    wide_cols: int
    wide_rows: int
    scaling_cols: tuple[int, ...]
    scaling_rows: int
    lineitem_scale: float
    nested_rows: int
    take_rows: int
    #: Small fragments (and Parquet files) the Spark compaction case starts from.
    compact_fragments: int


FULL = Sizes(
    name="full",
    wide_cols=10_000,
    wide_rows=20_000,
    scaling_cols=(1_000, 10_000, 50_000, 100_000),
    scaling_rows=2_000,
    lineitem_scale=1.0,
    nested_rows=2_000_000,
    take_rows=1_000,
    compact_fragments=1_000,
)

QUICK = Sizes(
    name="quick",
    wide_cols=500,
    wide_rows=1_000,
    scaling_cols=(100, 500, 1_000, 2_000),
    scaling_rows=500,
    lineitem_scale=0.01,
    nested_rows=20_000,
    take_rows=1_000,
    compact_fragments=100,
)
