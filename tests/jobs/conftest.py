"""Session-scoped fixtures of the job tests: one local Spark session (local[2]) for the
in-process runs, and ``make dist``'s output (built once, in a copy of the checkout)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.jobs.helpers import build_dist


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from fermion.spark.jobs.runner import build_session

    session = build_session(
        "fermion-jobs-tests",
        {"spark.master": "local[2]", "spark.ui.enabled": "false",
         "spark.sql.shuffle.partitions": "4"},
    )  # fmt: skip
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make dist`` run in a copy of the checkout: its ``dist/`` (wheel, ``fermion.zip``)."""
    return build_dist(tmp_path_factory.mktemp("dist"))
