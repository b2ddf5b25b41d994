"""Worker processes and the run's log: what the runner (``benchmarks.run``) and the extra
modules (``spark_bench``, ``tpch_bench``) share. It imports none of them nor the worker
(whose result line it reads by :data:`~benchmarks.config.RESULT_MARKER`), so no extra module
imports the runner back: run -> worker -> spark_bench -> run was an import cycle.

Example:
    >>> log("hello")  # doctest: +SKIP
    [bench 12:00:00] hello
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.config import REPO_ROOT, RESULT_MARKER, WORKER_TIMEOUT_S
from benchmarks.prepare import cached_check
from benchmarks.scenarios import Dataset

__all__ = ["log", "prepare_copy", "run_worker"]


def log(msg: str) -> None:
    """One timestamped line of the run's progress, on stderr."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_worker(spec: dict[str, Any], timeout: float = WORKER_TIMEOUT_S) -> dict[str, Any]:
    """Run one worker subprocess; its result, or a row-ready error description."""
    cmd = [sys.executable, "-m", "benchmarks.worker", json.dumps(spec)]
    try:
        done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "error", "note": f"timed out after {timeout:g} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return json.loads(line[len(RESULT_MARKER) :])
    tail = [ln for ln in done.stderr.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return {"status": "error", "note": f"exit {done.returncode}: {tail[0][:300]}"}


def prepare_copy(data_dir: Path, dataset: Dataset, system: str, path: Path) -> dict[str, Any]:
    """Make sure ``system``'s copy of ``dataset`` exists at ``path`` and was read back and
    checked (in a worker process); ``{'status': ..., 'check': ...}``."""
    check = cached_check(path) if path.exists() else None
    if check is not None:
        return {"status": "ok", "check": check}
    verb = "verifying" if path.exists() else "writing + verifying"
    log(f"{verb} {dataset.id} with {system} -> {path.name}")
    spec = {
        "mode": "prepare",
        "dataset": dataset.to_json(),
        "system": system,
        "data_dir": str(data_dir),
        "path": str(path),
    }
    outcome = run_worker(spec)
    if outcome.get("status") == "ok":
        log(f"  done in {outcome['seconds']:.1f} s, check: {outcome['check']}")
    else:
        log(f"  FAILED: {outcome.get('note')}")
    return outcome
