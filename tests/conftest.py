"""Fixtures and settings shared by every test package.

- **Markers, given here by path and fixture** (so nobody has to remember them; ``make
  test-fast`` deselects all four, ``make test`` runs everything):

  - ``spark``: tests under ``tests/spark/`` and ``tests/jobs/``, modules named after Spark
    or TPC-H (the Spark benchmarks), tests using a ``spark`` fixture, and the docstring
    examples of ``fermion.spark``;
  - ``airflow``: tests under ``tests/airflow_dags/`` or using the ``airflow`` fixture;
  - ``cluster``: the standalone-cluster test (``tests/jobs/test_standalone_cluster.py``);
  - ``slow``: tests marked so by hand, and tests using the ``dist`` fixture (``make dist``).

- **Hypothesis profiles**: ``ci`` (the default, what ``make test`` runs) and ``dev`` (a tenth
  of the examples, what ``make test-fast`` runs), chosen by ``HYPOTHESIS_PROFILE``. A
  property test states its budget under ``ci`` with :func:`tests.support.budget.examples`.

- A real S3-compatible server on 127.0.0.1 and ``make dist``'s output, each built once
  (``make dist``'s once per run, shared by the xdist workers: :mod:`tests.support.once`).

- **Two workers** (pytest-xdist, ``-n 2 --dist loadfile``: a file's tests run in one worker,
  so module fixtures are built once). Under xdist the files with a test marked ``spark``,
  ``airflow``, ``cluster`` or ``slow`` are scheduled first, the many quick files last, so
  no long file starts when the other worker is nearly done.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.jobs.helpers import build_dist
from tests.support.once import built_once, xdist_worker
from tests.support.s3server import S3Server, start_s3_server
from tests.support.spark_cds import ENV_VAR as SPARK_CDS_VAR
from tests.support.spark_cds import jvm_options

settings.register_profile("ci", deadline=None)  # hypothesis's own 100 examples per test
settings.register_profile(
    "dev", deadline=None, max_examples=10, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# JVM options of every Spark driver the tests start (this process's sessions, the jobs'
# spark-submit and ``python jobs/...`` runs, the DAGs' tasks and the benchmarks' workers all
# inherit them): first-tier JIT, one GC thread, and the class archive ``make test`` built
# (tests/support/spark_cds.py). Only how the JVM compiles, collects and loads classes
# changes; a value already set is kept.
os.environ.setdefault("SPARK_SUBMIT_OPTS", jvm_options(os.environ.get(SPARK_CDS_VAR)))

if xdist_worker() is not None and sys.modules["__main__"].__spec__ is None:
    # An xdist worker's __main__ is execnet's bare ``python -c`` module, which
    # pyspark.sql.connect (imported by great_expectations) takes for a doctest run: without
    # grpc it calls sys.exit(0). A spec named "__main__" (what ``python -m pytest`` has in
    # effect; multiprocessing skips re-importing it) makes it check grpc as usual instead.
    sys.modules["__main__"].__spec__ = importlib.machinery.ModuleSpec("__main__", None)

TESTS = Path(__file__).resolve().parent
SPARK_DIRS = ("spark", "jobs")
SPARK_NAMES = ("spark", "tpch")  # benchmarks/ modules that start Spark
CLUSTER_MODULES = ("jobs/test_standalone_cluster.py",)
HEAVY = ("spark", "airflow", "cluster", "slow")


def markers_for(relative: str, fixtures: set[str], node_id: str) -> set[str]:
    """The markers a test gets from its path (relative to ``tests/``) and its fixtures.

    Example:
        >>> sorted(markers_for("jobs/test_standalone_cluster.py", set(), "x"))
        ['cluster', 'spark']
        >>> sorted(markers_for("format/test_roundtrip.py", {"tmp_path"}, "x"))
        []
    """
    parts = relative.split("/")
    found: set[str] = set()
    if (
        parts[0] in SPARK_DIRS
        or any(name in parts[-1] for name in SPARK_NAMES)
        or "spark" in fixtures
        or "[fermion.spark" in node_id
    ):
        found.add("spark")
    if parts[0] == "airflow_dags" or "airflow" in fixtures:
        found.add("airflow")
    if relative in CLUSTER_MODULES:
        found.add("cluster")
    if "dist" in fixtures:
        found.add("slow")
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = Path(str(item.path)).resolve().relative_to(TESTS).as_posix()
        fixtures = set(getattr(item, "fixturenames", ()))
        for name in sorted(markers_for(relative, fixtures, item.nodeid)):
            item.add_marker(name)
    if xdist_worker() is not None:
        items[:] = heavy_files_first(items)


def heavy_files_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items of the files with a heavy test (``HEAVY`` markers) first, in their order,
    then the others (what ``--dist loadfile --no-loadscope-reorder`` hands out first)."""
    heavy = {item.path for item in items if any(item.get_closest_marker(m) for m in HEAVY)}
    return sorted(items, key=lambda item: item.path not in heavy)  # stable


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server in a child process for the whole session (started on first use)."""
    server = start_s3_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The server, with ``AWS_*`` variables pointing boto and s3fs at it for one test."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server


@pytest.fixture
def s3_bucket(s3_env: S3Server) -> str:
    """A fresh, empty bucket on the server (with the environment set)."""
    return s3_env.create_bucket()


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make dist`` run in a copy of the checkout: its ``dist/`` (wheel, ``fermion.zip``),
    built once for the jobs' tests and the bare-wheel test."""
    return built_once(tmp_path_factory, "dist", build_dist)
