"""Smoke tests of the batch-mode benchmark modules in quick mode (no timing asserted)."""

from __future__ import annotations

import pytest

from benchmarks import batch_table_bench, batch_write_bench, report


def test_batch_write_bench_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FERMION_BENCH_QUICK", "1")
    rows: list[dict] = []
    batch_write_bench.run(rows, runs=1)
    systems = ["fermion", "fermion-tables", "fermion-write_table", "parquet"]
    assert [(r["variant"], r["system"]) for r in rows] == [
        (v, s) for v in ("wide_f32", "issue16", "tiny") for s in systems
    ]
    assert all(r["status"] == "ok" and r["value"] > 0 and r["file_mb"] > 0 for r in rows)
    ratios = report.add_ratios(rows)
    assert [r["vs_parquet"] for r in ratios if r["system"] == "parquet"] == [1.0, 1.0, 1.0]
    assert rows[0]["batches"] == 200 and rows[4]["batches"] == 400 and rows[8]["batches"] == 5000


def test_batch_table_bench_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FERMION_BENCH_QUICK", "1")
    rows: list[dict] = []
    batch_table_bench.run(rows, runs=1)
    compacted = [r for r in rows if r["variant"].startswith("compacted")]
    rows = [r for r in rows if r not in compacted]
    assert [(r["metric"], r["system"]) for r in rows] == [
        (m, s)
        for m in ("lookup_100_ids_ms", "lookups_50x1_ms", "lookup_100_ids_cold_ms")
        for s in ("fermion", "parquet")
    ]
    assert all(r["status"] == "ok" and r["value"] > 0 and r["fragments"] >= 5 for r in rows)
    assert 1 <= rows[0]["files_opened"] <= rows[0]["fragments"]
    # the compacted table: 18 interleaved fragments merged into ceil(rows / target) (+1 at
    # most per extra task), answers checked inside the bench (row counts)
    assert [r["system"] for r in compacted][:2] == ["fermion", "parquet"]
    assert all(r["status"] == "ok" and r["value"] > 0 for r in compacted)
    assert compacted[0]["note"].startswith("18 fragments compacted into")
    assert 4 <= compacted[0]["fragments"] <= 5
    assert 1 <= compacted[0]["files_opened"] <= compacted[0]["fragments"]
