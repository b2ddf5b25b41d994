"""Streams stay streams: a table written from a generator several times larger than the
memory it may use, then read by DuckDB and Polars through ``__arrow_c_stream__``, with the
peak RSS of each step (its own process) far below the input size. The large run (4 GB and
more) is ``python -m benchmarks.stream_memory``; this is the same check at 512 MB. The
assertions are about memory and results, never time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.stream_memory import ROW_BYTES, run

ROWS = 8_000_000  # 512 MB of Arrow data


@pytest.mark.slow
def test_write_and_engine_reads_stay_far_below_the_input_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the children import this checkout's fermion and benchmarks
    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.chdir(root)
    input_mb = ROWS * ROW_BYTES / 2**20
    steps = run(
        ROWS,
        str(tmp_path),
        ["pyarrow", "duckdb-stream", "polars-stream", "duckdb-dataset"],
        rows_per_file=200_000,  # 40 fragments of 12.8 MB
        batch_rows=65_536,
    )
    assert steps[0]["rows"] == ROWS and steps[0]["fragments"] == 40
    for step in steps:
        grown = step["peak_rss_mb"] - step["baseline_rss_mb"]
        assert grown < input_mb / 2, (step["step"], grown, input_mb)
    for step in steps[1:]:
        assert step["equal_to_pyarrow"], step
        assert step["result"]["n"] > ROWS // 3
