"""The index benchmark measures what it says (small data; no timing assertions)."""

from __future__ import annotations

from benchmarks import index_bench


def test_index_lookup_rows() -> None:
    rows: list[dict] = []
    index_bench.run_index_lookups(rows, rows=20_000, runs=1)
    got = {(r["variant"], r["system"], r["metric"]): r["value"] for r in rows}
    for case in ("eq", "in100", "bitmap1pct"):
        assert got[(case, "fermion", "lookup_ms")] > 0
        # Lance's rows are there exactly when pylance (the bench extra) is installed
        assert ((case, "lance", "lookup_ms") in got) == index_bench.lance_installed()
    assert got[("eq", "fermion_noindex", "lookup_ms")] > 0
    assert got[("index bytes", "fermion", "index_bytes")] > 0
    # one metric per (scenario, variant): the report compares time with time, bytes with bytes
    assert len({(r["variant"], r["system"]) for r in rows}) == len(rows)
    assert all(r["status"] == "ok" for r in rows)


def test_lookup_rows_after_appends_and_a_compaction() -> None:
    rows: list[dict] = []
    index_bench.run_after_maintenance(rows, rows=20_000, runs=1)
    suffix = f", after {index_bench.APPENDS} appends + compaction, optimize_indices"
    got = {(r["variant"], r["system"], r["metric"]): r["value"] for r in rows}
    systems = ["fermion"] + (["lance"] if index_bench.lance_installed() else [])
    assert {(v, s) for v, s, _ in got} == {
        (case + suffix, s) for case in ("eq", "in100", "maintenance") for s in systems
    }
    assert all(value > 0 for value in got.values())
    assert all(r["status"] == "ok" for r in rows)
