"""The TPC-H workload benchmark in --quick mode: every row measured, answers equal.

No timing is asserted: each (row, system) must be ``ok``, the two systems' answers to
every query and the rows they wrote must be equal, and the geometric-mean rows must be the
geometric means of the query rows.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import tpch_queries
from benchmarks.report import JSON_NAME
from benchmarks.tpch_bench import query_rows

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_tpch_run_measures_both_systems_with_equal_answers(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "benchmarks.run", "--quick", "--only", "tpch_bench"]
    cmd += ["--repeat", "1", "--output", str(out), "--data-dir", str(tmp_path / "data")]
    env = {**os.environ, "FERMION_BENCH_WARMUP": "0"}  # results are checked, not times
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr

    rows = json.loads((out / JSON_NAME).read_text())["results"]
    names = [f"spark_tpch_{q}" for q in sorted(tpch_queries.QUERIES)]
    three = ("fermion", "fermion-sql", "parquet")
    writers = ("fermion", "python-sink", "parquet")  # python-sink: the null Python sink
    assert [(r["scenario"], r["system"]) for r in rows] == [
        *[("spark_tpch_write", system) for system in writers],
        *[(s, system) for s in [*names, "spark_tpch_geomean"] for system in three],
    ]
    for row in rows:
        assert row["status"] == "ok", row
        assert row["value"] > 0
    by = {(r["scenario"], r["system"]): r for r in rows}
    for scenario in ["spark_tpch_write", *names]:
        parquet = by[(scenario, "parquet")]
        for system in writers[:2] if scenario == "spark_tpch_write" else three[:2]:
            fermion = by[(scenario, system)]
            assert fermion["io"]["check"] == parquet["io"]["check"]
            assert fermion["vs_parquet"] == pytest.approx(fermion["value"] / parquet["value"])
    assert by[("spark_tpch_write", "fermion")]["io"]["check"]["region"] == 5
    for system in three:
        logs = [math.log(by[(n, system)]["value"]) for n in names]
        mean = math.exp(sum(logs) / len(logs))
        assert by[("spark_tpch_geomean", system)]["value"] == pytest.approx(mean)


def _ok(value: float, digest: str) -> dict[str, object]:
    return {"status": "ok", "value": value, "check": {"rows": 1, "digest": digest}}


def test_different_answers_mark_the_query_and_withhold_the_mean() -> None:
    fermion = {"write": _ok(2.0, "w"), "queries": {"a": _ok(2.0, "x"), "b": _ok(1.0, "y")}}
    parquet = {"write": _ok(1.0, "w"), "queries": {"a": _ok(1.0, "x"), "b": _ok(1.0, "z")}}
    rows = query_rows({"fermion": fermion, "parquet": parquet}, 1)
    status = {(r["scenario"], r["system"]): r["status"] for r in rows}
    assert status[("spark_tpch_a", "fermion")] == "ok"
    assert (
        status[("spark_tpch_b", "fermion")]
        == status[("spark_tpch_b", "parquet")]
        == ("wrong-result")
    )
    means = [r for r in rows if r["scenario"] == "spark_tpch_geomean"]
    assert [m["value"] for m in means] == [None, None] and means[0]["status"] == "error"


def test_a_failed_query_is_an_error_row_not_a_lost_run() -> None:
    failed = {"status": "error", "value": None, "note": "boom"}
    fermion = {"write": _ok(2.0, "w"), "queries": {"a": failed}}
    parquet = {"write": _ok(1.0, "w"), "queries": {"a": _ok(1.0, "x")}}
    rows = query_rows({"fermion": fermion, "parquet": parquet}, 1)
    assert [r["status"] for r in rows if r["scenario"] == "spark_tpch_a"] == ["error", "ok"]
    assert all(r["value"] is None for r in rows if r["scenario"] == "spark_tpch_geomean")


def test_the_sink_write_is_a_third_write_row_checked_like_the_others() -> None:
    sink = {"status": "ok", "value": 0.5, "check": {"rows": 2, "digest": "w"}}
    fermion = {"write": _ok(2.0, "w"), "write_sink": sink, "queries": {"a": _ok(1.0, "x")}}
    parquet = {"write": _ok(1.0, "w"), "queries": {"a": _ok(1.0, "x")}}
    rows = query_rows({"fermion": fermion, "parquet": parquet}, 1)
    write = [(r["system"], r["status"]) for r in rows if r["scenario"] == "spark_tpch_write"]
    assert write == [
        ("fermion", "wrong-result"),
        ("python-sink", "wrong-result"),
        ("parquet", "wrong-result"),
    ]  # the sink counted 2 rows, not 1
