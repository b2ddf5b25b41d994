"""The Spark benchmarks in --quick mode: every case measured for both systems, results agree.

No timing is asserted; the run must produce an ``ok`` row per (case, system) whose check
(row count, sums and maxima of the result) is the same for Fermion and Spark's Parquet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.report import JSON_NAME, MARKDOWN_NAME
from benchmarks.spark_bench import SCENARIOS, SYSTEMS, checks_differ, mark_differences

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_spark_cases_measure_both_systems_with_equal_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "benchmarks.run", "--quick", "--only", "spark_bench"]
    cmd += ["--repeat", "1", "--output", str(out), "--data-dir", str(tmp_path / "data")]
    env = {**os.environ, "FERMION_BENCH_WARMUP": "0"}  # results are checked, not times
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr

    rows = json.loads((out / JSON_NAME).read_text())["results"]
    cases = [  # ingest and compaction: plain and batch mode
        "spark_lineitem_agg", "spark_wide_read10", "spark_ingest", "spark_ingest",
        "spark_migrate", "spark_compact", "spark_compact", "spark_backfill",
    ]  # fmt: skip
    assert set(cases) == set(SCENARIOS)
    assert [(r["scenario"], r["system"]) for r in rows] == [
        (scenario, system) for scenario in cases for system in SYSTEMS
    ]
    for row in rows:
        assert row["status"] == "ok", row
        assert row["value"] > 0 and len(row["runs"]) == 1 and row["peak_rss_mb"] > 0
    variants = {(r["scenario"], r["variant"]) for r in rows}
    assert len(variants) == len(cases)
    for scenario, variant in variants:
        fermion, parquet = (r for r in rows if (r["scenario"], r["variant"]) == (scenario, variant))
        assert parquet["vs_parquet"] == 1.0
        assert fermion["vs_parquet"] == pytest.approx(fermion["value"] / parquet["value"])
        assert fermion["io"]["check"] == parquet["io"]["check"]
        assert int(fermion["io"]["check"]["rows"]) > 0
    fermion_rows = [r for r in rows if r["system"] == "fermion"]
    by_scenario = {r["scenario"]: r for r in fermion_rows}
    assert "rows/s" in by_scenario["spark_ingest"]["note"]
    plain, batch = (r for r in fermion_rows if r["scenario"] == "spark_compact")
    assert plain["note"].startswith("100 files -> 1")
    # the interleaved batch-mode fragments become 4 of disjoint id ranges, as Spark's
    # range-partitioned, sorted Parquet rewrite of the same rows
    assert batch["note"].startswith("18 files -> 4")
    assert batch["io"]["check"]["layout"] == "sorted, disjoint"
    assert "sum(l_rowkey)" in by_scenario["spark_backfill"]["io"]["check"]

    text = (out / MARKDOWN_NAME).read_text()
    for scenario in SCENARIOS:
        lines = sum(line.startswith(f"| {scenario} |") for line in text.splitlines())
        assert lines == 2 * cases.count(scenario)
    assert "start-up are NOT timed" in text


def test_a_difference_between_the_systems_marks_both_rows_wrong() -> None:
    def row(system: str, total: str) -> dict[str, object]:
        check = {"rows": "10", "sum(x)": total}
        return {"system": system, "status": "ok", "value": 1.0, "io": {"check": check}}

    same = [row("fermion", "45"), row("parquet", "45")]
    mark_differences(same)
    assert [r["status"] for r in same] == ["ok", "ok"]

    rows = [row("fermion", "44"), row("parquet", "45")]
    mark_differences(rows)
    assert [r["status"] for r in rows] == ["wrong-result", "wrong-result"]
    assert "sum(x): 44 vs 45" in str(rows[0]["note"])
    assert checks_differ({"s": 1.0}, {"s": 1.001}) == ["s: 1.0 vs 1.001"]
