"""Running jobs the way users do: ``python jobs/<job>.py`` and ``spark-submit``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "jobs"
CONF = ROOT / "conf"
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


@dataclass(frozen=True)
class Finished:
    """A job's exit code, its summary (the last stdout line) and its stderr."""

    code: int
    summary: dict[str, Any]
    stdout: str
    stderr: str


def job_env() -> dict[str, str]:
    """The environment a job runs in: this interpreter for Spark's Python workers."""
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return env


def _finish(process: subprocess.CompletedProcess[str]) -> Finished:
    lines = process.stdout.strip().splitlines()
    assert lines, f"no stdout; stderr:\n{process.stderr[-3000:]}"
    return Finished(process.returncode, json.loads(lines[-1]), process.stdout, process.stderr)


def run_job(job: str, *args: str, timeout: float = 300) -> Finished:
    """``python jobs/<job>.py args...``."""
    process = subprocess.run(
        [sys.executable, str(JOBS / f"{job}.py"), *args],
        capture_output=True, text=True, env=job_env(), cwd=ROOT, timeout=timeout,
    )  # fmt: skip
    return _finish(process)


def submit_job(job: str, *args: str, timeout: float = 300) -> Finished:
    """``spark-submit --master local[2] jobs/<job>.py args...`` with the venv's Spark."""
    process = subprocess.run(
        [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         str(JOBS / f"{job}.py"), *args],
        capture_output=True, text=True, env=job_env(), cwd=ROOT, timeout=timeout,
    )  # fmt: skip
    return _finish(process)


def write_config(path: Path, **keys: Any) -> str:
    """A job config file with ``keys`` (YAML via JSON, which YAML reads)."""
    path.write_text("\n".join(f"{k}: {json.dumps(v)}" for k, v in keys.items()) + "\n")
    return str(path)


def build_dist(tmp: Path) -> Path:
    """``make dist`` in a copy of the checkout under ``tmp`` (never touching the checkout's
    ``dist/``); returns the copy's ``dist/`` (the wheel and ``fermion.zip``)."""
    tree = tmp / "src"
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for name in files:
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    venv = Path(sys.executable).parent.parent  # the venv running the tests
    (tree / ".venv").symlink_to(venv)
    # The venv is installed already (and editable from ROOT): never reinstall it here. The
    # stamp is named on the command line and marked old, so a pyproject.toml that differs
    # from the one the venv was installed from cannot make `make` re-run `pip install -e`
    # from this temporary copy (which would point the venv's editable install at it).
    stamp = ".venv/.installed-by-the-test-run"
    built = subprocess.run(
        ["make", f"STAMP={stamp}", f"--old-file={stamp}", "dist"],
        cwd=tree, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    return tree / "dist"
