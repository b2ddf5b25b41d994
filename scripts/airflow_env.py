"""Run Airflow from the jobs' environment: the Airflow venv as a subprocess, in a private home.

Example::

    home = AirflowHome(Path("/tmp/airflow-home"))   # airflow db migrate, once
    result = home.run("test", "fermion_ingest", "--logical-date", "2026-11-20",
                      "--conf", json.dumps({"table": "/tmp/t"}))
    result["state"], result["tasks"]["ingest"]["summary"]

    with AirflowHome(Path("/tmp/airflow-home")) as home:   # one Airflow process for both runs
        first = home.dag_test("fermion_ingest", "2026-11-20", {"table": "/tmp/t"})
        second = home.dag_test("fermion_ingest", "2026-11-21", {"table": "/tmp/t"})
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
AIRFLOW_VENV = Path(os.environ.get("FERMION_AIRFLOW_VENV", PROJECT_ROOT / ".venv-airflow"))
AIRFLOW_PYTHON = AIRFLOW_VENV / "bin" / "python"
RUNNER = PROJECT_ROOT / "scripts" / "airflow_run.py"
DAGS_FOLDER = PROJECT_ROOT / "airflow_dags"
SPARK_MASTER = "local[2]"


class AirflowError(RuntimeError):
    """The Airflow environment is missing, or an Airflow command failed to produce JSON."""


class AirflowHome:
    """A private ``AIRFLOW_HOME`` (SQLite metadata DB) with the project's DAGs and connection.

    Args:
        home: The directory (created; ``airflow db migrate`` runs on first use).
        env: Extra environment for the DAGs (e.g. ``FERMION_TABLE``).
        stream: Where Airflow's own output goes (default: this process's stderr);
            ``subprocess.DEVNULL`` silences it.
        template: A metadata DB that ``airflow db migrate`` already made and nothing ran
            in (:meth:`migrated_db`): copied into a new home instead of migrating again
            (the tests migrate once per session).

    :meth:`dag_test` runs its DAG runs in one Airflow process (``airflow_run.py serve``),
    started on first use, so that Airflow starts and imports once; :meth:`close` (or the
    end of a ``with`` block) ends it.
    """

    def __init__(
        self,
        home: Path,
        *,
        env: dict[str, str] | None = None,
        stream: Any = None,
        template: Path | None = None,
    ) -> None:
        if not AIRFLOW_PYTHON.exists():
            raise AirflowError(f"no Airflow environment at {AIRFLOW_VENV}: run make airflow-venv")
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        self.stream = sys.stderr if stream is None else stream
        self._server: subprocess.Popen[str] | None = None
        self.env = {
            **os.environ,
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW_CONN_SPARK_LOCAL": json.dumps({"conn_type": "spark", "host": SPARK_MASTER}),
            "FERMION_HOME": str(PROJECT_ROOT),
            **(env or {}),
        }
        if template is not None and not (self.home / "airflow.db").exists():
            shutil.copyfile(template, self.home / "airflow.db")
        if not (self.home / "airflow.db").exists():
            self._call([str(AIRFLOW_VENV / "bin" / "airflow"), "db", "migrate"])

    @property
    def migrated_db(self) -> Path:
        """This home's metadata DB: a ``template`` for other homes while nothing has run."""
        return self.home / "airflow.db"

    def _call(self, command: list[str]) -> str:
        done = subprocess.run(
            command, env=self.env, stdout=subprocess.PIPE, stderr=self.stream, text=True
        )
        if done.returncode not in (0, 1):
            raise AirflowError(f"{command[1:3]} exited {done.returncode}: {done.stdout[-2000:]}")
        return done.stdout

    def run(self, *args: str) -> dict[str, Any]:
        """``scripts/airflow_run.py ARGS`` in the Airflow environment; its JSON result."""
        out = self._call([str(AIRFLOW_PYTHON), str(RUNNER), *args])
        lines = out.strip().splitlines()
        try:
            result: dict[str, Any] = json.loads(lines[-1])
        except (IndexError, ValueError):
            tail = out[-2000:]
            raise AirflowError(f"airflow_run.py {args[:2]} printed no JSON: {tail}") from None
        return result

    def dag_test(self, dag_id: str, logical_date: str, conf: dict[str, Any]) -> dict[str, Any]:
        """One run of ``dag_id`` for ``logical_date`` (``YYYY-MM-DD``) with ``dag.test()``,
        in this home's Airflow process; what ``airflow_run.py test`` would print."""
        server = self._serve()
        assert server.stdin is not None and server.stdout is not None
        request = {"dag_id": dag_id, "logical_date": logical_date, "conf": conf}
        try:
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
            line = server.stdout.readline()
        except OSError:  # the process is gone: a broken pipe
            line = ""
        if not line:
            self.close()
            raise AirflowError(f"airflow_run.py serve exited {server.returncode} ({dag_id})")
        result: dict[str, Any] = json.loads(line)
        if "error" in result:
            raise AirflowError(f"airflow_run.py serve: {dag_id}: {result['error']}")
        return result

    def _serve(self) -> subprocess.Popen[str]:
        if self._server is None or self._server.poll() is not None:
            self._server = subprocess.Popen(
                [str(AIRFLOW_PYTHON), str(RUNNER), "serve"],
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stream,
                text=True,
            )
        return self._server

    def close(self) -> None:
        """End the Airflow process :meth:`dag_test` started (it ends at the end of its input)."""
        server, self._server = self._server, None
        if server is None:
            return
        if server.stdin is not None:
            with contextlib.suppress(OSError):
                server.stdin.close()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stdout is not None:
            server.stdout.close()

    def __enter__(self) -> AirflowHome:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
