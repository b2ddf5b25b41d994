"""Shared helpers for the table tests: real processes released together by one event.

Processes come from a fork server, not from forking the test process: the file format's
reader keeps a process-wide thread pool, and a child forked from a process that already
used it would wait forever on a pool whose threads did not survive the fork. The fork
server never reads a file, and preloading the libraries keeps process start cheap.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401 - fixtures

CTX = mp.get_context("forkserver")
CTX.set_forkserver_preload(["pyarrow", "pyarrow.compute", "pyarrow.dataset", "fermion.table"])


def _trampoline(target: Callable[..., Any], args: tuple[Any, ...], start: Any, out: Any) -> None:
    start.wait()
    try:
        out.put(("ok", target(*args)))
    except BaseException as exc:  # noqa: BLE001 - report every failure to the parent
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def run_processes(
    target: Callable[..., Any], args_list: Sequence[tuple[Any, ...]], timeout: float = 240
) -> list[tuple[str, Any]]:
    """Run ``target(*args)`` in one forked process per args tuple, all released at once.

    Returns ``("ok", result)`` or ``("error", "Type: message")`` per process, in order.
    """
    start = CTX.Event()
    queues = [CTX.Queue() for _ in args_list]
    procs = [
        CTX.Process(target=_trampoline, args=(target, args, start, q))
        for args, q in zip(args_list, queues, strict=True)
    ]
    for p in procs:
        p.start()
    start.set()
    results = [q.get(timeout=timeout) for q in queues]
    for p in procs:
        p.join(timeout=timeout)
        assert p.exitcode == 0, f"worker exited with {p.exitcode}"
    return results


@pytest.fixture
def processes() -> Callable[..., list[tuple[str, Any]]]:
    """The :func:`run_processes` helper."""
    return run_processes


@pytest.fixture(params=["sqlite", "postgres"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """The setting of a fresh, empty external manifest store, once per kind: an SQLite file
    path, or the URL of a new database on the test PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "manifests.db")
    return str(request.getfixturevalue("postgres_dsn"))
