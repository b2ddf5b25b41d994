"""The test loop (tests/conftest.py, Makefile): markers given by path and fixture, and the
markers ``make test-fast`` deselects are the registered ones."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import markers_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("relative", "fixtures", "node_id", "expected"),
    [
        ("format/test_roundtrip.py", {"tmp_path"}, "t", set()),
        ("spark/test_spark_read.py", set(), "t", {"spark"}),
        ("jobs/test_runner.py", set(), "t", {"spark"}),
        ("jobs/test_standalone_cluster.py", {"spark"}, "t", {"spark", "cluster"}),
        ("quality/test_validate.py", {"spark", "tmp_path"}, "t", {"spark"}),
        ("quality/test_suite.py", {"tmp_path"}, "t", set()),
        ("benchmarks/test_tpch_bench.py", set(), "t", {"spark"}),
        ("benchmarks/test_point_bench.py", set(), "t", set()),
        ("airflow_dags/test_dagbag.py", set(), "t", {"airflow"}),
        ("test_scripts.py", {"airflow"}, "t", {"airflow"}),
        ("test_packaging.py", {"dist", "tmp_path"}, "t", {"slow"}),
        ("test_public_api.py", set(), "t[fermion.spark.sql]", {"spark"}),
        ("test_public_api.py", set(), "t[fermion.table.dataset]", set()),
    ],
)
def test_markers_by_path_and_fixture(
    relative: str, fixtures: set[str], node_id: str, expected: set[str]
) -> None:
    assert markers_for(relative, fixtures, node_id) == expected


def test_test_fast_deselects_exactly_the_registered_markers() -> None:
    makefile = (ROOT / "Makefile").read_text()
    expression = re.search(r"^FAST_MARKERS := (.+)$", makefile, re.MULTILINE)
    assert expression is not None
    deselected = set(re.findall(r"not (\w+)", expression.group(1)))
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    registered = {line.split(":", 1)[0] for line in ini["markers"]}
    assert deselected == registered == {"spark", "airflow", "cluster", "slow"}


def test_the_collection_hook_marks_the_real_suite() -> None:
    """``-m spark`` over a Spark module and a format module keeps only the Spark one."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
         "-m", "spark", "tests/spark/test_spark_types.py", "tests/format/test_offsets.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert collected, done.stdout
    assert all(line.startswith("tests/spark/test_spark_types.py::") for line in collected)
    assert "deselected" in done.stdout  # the format module's tests were collected, then not
