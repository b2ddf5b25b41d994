"""Build a session fixture's product once per test run, even when pytest-xdist runs the suite
in several worker processes (``make test``, ``make test-fast``: ``-n 2``).

A session-scoped fixture runs once per process, so each xdist worker would build its own
copy of an expensive, read-only product (``make dist``'s wheel, a migrated Airflow DB). Here
the first worker that asks builds it into a folder beside the workers' temp folders, under
an exclusive ``flock``; the others wait on the lock and reuse what it recorded. A build that
raised recorded nothing, so the next worker that asks tries again in a fresh folder (and
fails in its own tests, with its own error). Without xdist it is a plain build in a fresh
temp folder.

Only for products nobody changes after the build: the workers share the folder.

Example (from a ``conftest.py``)::

    @pytest.fixture(scope="session")
    def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return built_once(tmp_path_factory, "dist", build_dist)
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["built_once", "xdist_worker"]


def xdist_worker() -> str | None:
    """This process's pytest-xdist worker id (``gw0``, ``gw1``...), or None outside xdist.

    Example:
        >>> import os
        >>> xdist_worker() == os.environ.get("PYTEST_XDIST_WORKER")
        True
    """
    return os.environ.get("PYTEST_XDIST_WORKER")


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Path]
) -> Path:
    """``build(folder)``'s result, built once per test run and shared by the xdist workers.

    Args:
        tmp_path_factory: The session's factory (its base folder is per worker under xdist;
            their common parent is the run's).
        name: The product's name (one folder and one lock file per name).
        build: Builds the product into an empty folder and returns its path.

    Returns:
        The path ``build`` returned (in this run's shared folder under xdist).

    Example::

        db = built_once(tmp_path_factory, "airflow-template", migrate)
    """
    if xdist_worker() is None:
        return build(tmp_path_factory.mktemp(name))
    run = tmp_path_factory.getbasetemp().parent  # the run's base: one per `pytest -n` run
    record = run / f"{name}.built"
    with open(run / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if record.exists():
            return Path(record.read_text(encoding="utf-8"))
        built = build(Path(tempfile.mkdtemp(prefix=f"{name}-", dir=run)))  # fresh each try
        record.write_text(str(built), encoding="utf-8")
        return built
