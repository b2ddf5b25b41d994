"""Where a run's wall time goes under xdist: when each file ran on which worker.

A pytest plugin, off unless named::

    make test PYTEST_ARGS="-p tests.support.timeline --timeline=/tmp/timeline.tsv"

Each process that runs tests (each xdist worker, or pytest itself without xdist) records,
per test file, when its first test started and its last one ended (wall clock), and appends
one line per file to the ``--timeline`` file at its end: ``worker  file  start  end  tests``
(tab-separated, seconds). The process that started the run then prints each worker's busy
time and how long it waited at the end for the last worker (:func:`summary`), so the
critical path of a full run can be read from one run instead of guessed.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

__all__ = ["Span", "read", "summary"]

Span = tuple[str, str, float, float, int]  # worker, file, start, end, tests


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--timeline", default=None, help="append per-file spans to this file")


_spans: dict[str, list[float]] = {}  # file -> [first start, last end, tests]
_state = {"records": True}


def pytest_configure(config: pytest.Config) -> None:
    # the xdist controller gets every worker's reports too: only the runners record
    controller = bool(getattr(config.option, "numprocesses", None))
    _state["records"] = hasattr(config, "workerinput") or not controller


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    if _state["records"]:
        span = _spans.setdefault(nodeid.split("::", 1)[0], [time.time(), 0.0, 0])
        span[2] += 1


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    span = _spans.get(nodeid.split("::", 1)[0])
    if _state["records"] and span is not None:
        span[1] = time.time()


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--timeline")
    if not path or not _spans:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    lines = "".join(
        f"{worker}\t{name}\t{start:.3f}\t{end:.3f}\t{int(tests)}\n"
        for name, (start, end, tests) in _spans.items()
    )
    with open(path, "a", encoding="utf-8") as out:
        fcntl.flock(out, fcntl.LOCK_EX)
        out.write(lines)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    path = config.getoption("--timeline")
    if path and not hasattr(config, "workerinput") and Path(path).is_file():
        for line in summary(read(Path(path))):
            terminalreporter.write_line(line)


def read(path: Path) -> list[Span]:
    """The spans a timeline file holds."""
    spans = []
    for line in path.read_text(encoding="utf-8").splitlines():
        worker, name, start, end, tests = line.split("\t")
        spans.append((worker, name, float(start), float(end), int(tests)))
    return spans


def summary(spans: list[Span], top: int = 5) -> list[str]:
    """Per worker: busy seconds, files, the idle seconds at the end (the last worker's end
    minus its own), and its last ``top`` files.

    Example:
        >>> spans = [("gw0", "a.py", 0.0, 10.0, 3), ("gw1", "b.py", 0.0, 4.0, 1),
        ...          ("gw1", "c.py", 4.0, 6.0, 2)]
        >>> for line in summary(spans, top=1):
        ...     print(line)
        timeline: 10.0 s from the first test to the last
        gw0: busy 10.0 s in 1 files, idle at the end 0.0 s; last: a.py 10.0 s
        gw1: busy 6.0 s in 2 files, idle at the end 4.0 s; last: c.py 2.0 s
    """
    if not spans:
        return []
    first = min(s[2] for s in spans)
    last = max(s[3] for s in spans)
    lines = [f"timeline: {last - first:.1f} s from the first test to the last"]
    for worker in sorted({s[0] for s in spans}):
        own = sorted((s for s in spans if s[0] == worker), key=lambda s: s[2])
        busy = sum(s[3] - s[2] for s in own)
        tail = ", ".join(f"{s[1]} {s[3] - s[2]:.1f} s" for s in own[-top:])
        idle = last - max(s[3] for s in own)
        lines.append(
            f"{worker}: busy {busy:.1f} s in {len(own)} files, idle at the end {idle:.1f} s;"
            f" last: {tail}"
        )
    return lines
