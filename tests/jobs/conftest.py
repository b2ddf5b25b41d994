"""Session-scoped fixtures of the job tests: one local Spark session (local[2]) for the
in-process runs (``make dist``'s output, ``dist``, is in tests/conftest.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


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
