"""Ratios and flags of the benchmark report (pure functions, no timing)."""

from __future__ import annotations

import pytest

from benchmarks.report import add_ratios, render_markdown
from benchmarks.run import _flag_check


def _row(system: str, value: float | None, status: str = "ok") -> dict[str, object]:
    return {
        "scenario": "s",
        "variant": "v",
        "system": system,
        "status": status,
        "value": value,
        "unit": "s",
    }


def test_ratios_use_parquet_and_best_lance() -> None:
    rows = [
        _row("fermion", 1.0),
        _row("parquet", 4.0),
        _row("lance", 2.0),
        _row("lance-dataset", 0.5),
        _row("other", None, "unavailable"),
    ]
    out = {r["system"]: r for r in add_ratios(rows)}
    assert out["fermion"]["vs_parquet"] == pytest.approx(0.25)
    assert out["fermion"]["vs_lance"] == pytest.approx(2.0)
    assert out["parquet"]["vs_parquet"] == pytest.approx(1.0)
    assert out["other"]["vs_parquet"] is None and out["other"]["vs_lance"] is None


def test_failed_read_back_check_marks_row_wrong() -> None:
    row = _flag_check({**_row("fermion", 1.0), "check": "read-back check: x: values differ"})
    assert row["status"] == "wrong-result" and "values differ" in str(row["note"])
    assert _flag_check(_row("parquet", 1.0))["status"] == "ok"


def test_markdown_hides_values_of_rows_that_are_not_ok() -> None:
    rows = [_row("parquet", 2.0), {**_row("fermion", 1.0, "wrong-result"), "note": "bad"}]
    run = {"mode": "quick", "repeat": 1, "warmup": 1, "wall_seconds": 1.0, "command": "x"}
    text = render_markdown(rows, {"cpu": "test"}, run)
    line = next(ln for ln in text.splitlines() if ln.startswith("| s | v | fermion |"))
    assert "| wrong-result |" in line and "1.00 s" not in line
