"""Smoke test of the benchmark harness: one cheap scenario in --quick mode, no timings asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.report import JSON_NAME, MARKDOWN_NAME, TABLE_COLUMNS

REPO_ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = ("fermion", "parquet", "lance", "lance-dataset")


def test_quick_wide_read10_writes_table_and_json(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "benchmarks.run", "--quick", "--only", "wide_read10"]
    cmd += ["--repeat", "1", "--output", str(out), "--data-dir", str(tmp_path / "data")]
    done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr

    payload = json.loads((out / JSON_NAME).read_text())
    rows = payload["results"]
    assert [r["system"] for r in rows] == list(SYSTEMS)
    assert {r["scenario"] for r in rows} == {"wide_read10"}
    by_system = {r["system"]: r for r in rows}
    assert by_system["parquet"]["status"] == "ok"
    assert by_system["parquet"]["vs_parquet"] == 1.0
    assert len(by_system["parquet"]["runs"]) == 1
    for row in rows:
        assert row["status"] in ("ok", "unavailable"), row
        if row["status"] == "ok":
            assert row["value"] > 0 and row["peak_rss_mb"] > 0 and row["size_bytes"] > 0

    lines = (out / MARKDOWN_NAME).read_text().splitlines()
    header = "| " + " | ".join(TABLE_COLUMNS) + " |"
    assert header in lines
    table = lines[lines.index(header) + 2 :]
    body = [ln for ln in table[: len(SYSTEMS)] if ln.startswith("| wide_read10 |")]
    assert [ln.split(" | ")[2] for ln in body] == list(SYSTEMS)
    assert all(ln.count(" | ") == len(TABLE_COLUMNS) - 1 for ln in body)
    assert "pyarrow" in payload["machine"] and "logical_cores" in payload["machine"]
