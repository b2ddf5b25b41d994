"""The data-evolution benchmark on a small table: every case measured for each system,
results equal (the bench marks a difference ``wrong-result``). No timing is asserted."""

from __future__ import annotations

import importlib.util

from benchmarks import evolve_bench


def test_every_case_runs_for_each_system_with_equal_results() -> None:
    rows: list[dict[str, object]] = []
    evolve_bench.run_evolve(rows, rows=20_000, runs=1)
    systems = ["fermion"] + (["lance"] if importlib.util.find_spec("lance") else [])
    assert [(r["variant"], r["system"]) for r in rows] == [
        (case, system) for case in ("merge_insert", "add_columns", "update") for system in systems
    ]
    for row in rows:
        assert row["status"] == "ok", row
        assert isinstance(row["value"], float) and row["value"] > 0
        assert isinstance(row["bytes_written"], int) and row["bytes_written"] > 0
    added = next(r for r in rows if r["variant"] == "add_columns" and r["system"] == "fermion")
    assert "x the new column alone" in str(added["note"])


def test_the_source_updates_one_percent_and_inserts_one_percent() -> None:
    table = evolve_bench.evolve_table(10_000)
    source = evolve_bench._source(table, 0)
    ids = source.column("id").to_numpy()
    assert source.num_rows == 200 and len(set(ids.tolist())) == 200
    assert (ids < 10_000).sum() == 100 and (ids >= 10_000).sum() == 100
