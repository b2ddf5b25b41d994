"""The point-access benchmark measures what it says (small data; no timing assertions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import point_bench


def test_batch_lookup_rows_and_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FERMION_BENCH_DATA_DIR", str(tmp_path))
    rows: list[dict] = []
    point_bench.run_batch_lookup(rows, num_batches=300, columns=12, project=5, lookups=10, runs=1)
    got = {(r["system"], r["metric"]): r["value"] for r in rows}
    wanted = {("fermion", "lookup_ms"), ("parquet", "lookup_ms")}
    assert wanted <= set(got)
    # Lance's row is there exactly when pylance (the bench extra) is installed
    assert (("lance", "lookup_ms") in got) == point_bench.lance_installed()
    # through pread a lookup reads part of the file (the list column: its stripe chunk)
    assert 0 < got[("fermion", "pread_bytes_per_lookup")] < got[("fermion", "file_mb")] * 1e6


@pytest.mark.slow
def test_lineitem_rows_and_fsspec_fraction(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FERMION_BENCH_DATA_DIR", str(tmp_path))
    rows: list[dict] = []
    point_bench.run_lineitem(rows, scale=0.01, runs=1, per_column=False)
    got = {(r["system"], r["metric"]): r["value"] for r in rows}
    for key in [("fermion", "take1000_ms"), ("fermion", "scan_ms"), ("parquet", "scan_ms")]:
        assert got[key] > 0
    assert (("lance", "take1000_ms") in got) == point_bench.lance_installed()
    # 1,000 of 60,000 rows touch nearly every block of this small file: only counted here
    assert got[("fermion", "fsspec_take_bytes")] > 0
    assert got[("fermion", "fsspec_open_bytes")] > 0


def test_systems_are_timed_round_robin() -> None:
    """One warm-up call of each system, then rounds of one call each: a load change on a
    shared machine falls on every system alike, not on whichever ran in that block."""
    calls: list[str] = []
    fns = {name: (lambda n=name: calls.append(n)) for name in ("fermion", "parquet", "lance")}
    medians = point_bench._medians_ms(fns, 3)
    assert calls == ["fermion", "parquet", "lance"] * 4
    assert set(medians) == set(fns) and all(ms >= 0 for ms in medians.values())
