"""The per-encoding benchmark measures what it says (small data; no timing assertions)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.encodings_bench import measure, shapes


def test_measure_reports_sizes_and_the_chosen_encoding(tmp_path: Path) -> None:
    small = shapes(20_000)
    assert len(small) >= 10
    row = measure("sorted int64", small["sorted int64"], tmp_path)
    assert row["chosen"] == "DATA:DELTA"
    assert 0 < row["fermion_bytes"] < row["fermion_plain_bytes"]
    assert row["parquet_bytes"] > 0 and row["fermion_read_ms"] > 0
    strings = measure("strings", small["short strings, low cardinality"], tmp_path)
    assert "DATA:DICTIONARY" in strings["chosen"] and "OFFSETS:DERIVED" in strings["chosen"]
