"""A Spark standalone cluster on 127.0.0.1: one master and two workers from the pinned pyspark.

The pip package of pyspark ships ``bin/spark-class`` and the jars but not
``sbin/start-master.sh``/``start-worker.sh``, so the daemons are started the way those
scripts end up starting them: ``spark-class org.apache.spark.deploy.master.Master`` and
``... deploy.worker.Worker`` (``spark-class`` execs one JVM, so the process we start *is*
the daemon). Every daemon runs in its own process group; the executor JVMs a worker
launches, and their Python workers, are its children and share that group, so killing the
groups at teardown ends everything the cluster started.

Everything binds 127.0.0.1 (``SPARK_LOCAL_IP``, ``--host``), on ports picked free; the
master's REST submission server (port 6066 by default) is turned off. The executors run
the interpreter the application names (``spark.pyspark.python``); :attr:`node_python`
is the one to name: this interpreter with ``executor_site/`` on its ``PYTHONPATH``, whose
``sitecustomize`` makes it a node's Python *without* Fermion installed (see that file), so
tasks can only import Fermion from what ``--py-files`` shipped. The daemons' environment
has no ``PYTHONPATH``: the repository is not importable on the executors.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
EXECUTOR_SITE = Path(__file__).resolve().parent / "executor_site"
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"
REGISTER_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
_LOG_TAIL_CHARS = 4000


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class StandaloneCluster:
    """A running cluster: its master URL, web UI, and where its daemons log and work."""

    master_url: str
    web_ui: str
    root: Path
    work_dirs: list[Path]
    logs: list[Path]
    node_python: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def state(self) -> dict[str, object]:
        """The master's JSON status (``/json/``): workers, apps, cores."""
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=5) as response:
            state: dict[str, object] = json.load(response)
            return state

    def executor_logs(self, app_id: str) -> dict[Path, str]:
        """``stderr`` of every executor of ``app_id``, by path (``<work>/<app>/<exec>/``)."""
        return {
            path: path.read_text(errors="replace")
            for work in self.work_dirs
            for path in sorted((work / app_id).glob("*/stderr"))
        }

    def log_tails(self) -> str:
        """The last lines of every daemon log and executor log, for failure reports."""
        parts = []
        files = [*self.logs, *(p for w in self.work_dirs for p in sorted(w.glob("*/*/stderr")))]
        for path in files:
            text = path.read_text(errors="replace") if path.exists() else "(missing)"
            parts.append(f"===== {path} =====\n{text[-_LOG_TAIL_CHARS:]}")
        return "\n".join(parts)


def daemon_env(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the master, the workers and so of the executors they launch:
    no ``PYTHONPATH`` (the repository's ``fermion`` must not be importable there) and no
    ``PYSPARK_PYTHON`` (the application names the executors' interpreter); ``extra`` is
    what the nodes provide besides (e.g. object store credentials and endpoint)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPARK_", "PYSPARK_")) and k != "PYTHONPATH"
    }
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_MASTER_HOST="127.0.0.1",
        SPARK_LOCAL_DIRS=str(root / "local"),
        SPARK_LOG_DIR=str(root / "logs"),
    )
    env.update(extra or {})
    return env


def write_node_python(path: Path) -> Path:
    """An executable standing for a node's interpreter: this one, with ``executor_site/``
    appended to the ``PYTHONPATH`` Spark gives its Python workers."""
    path.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{EXECUTOR_SITE}" exec "{sys.executable}" "$@"\n'
    )
    path.chmod(0o755)
    return path


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: executors and Python workers too
        )  # fmt: skip


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every daemon's process group, then SIGKILL what is left; reap them all."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)  # start_new_session: pgid == pid
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        if all(p.poll() is not None for p in processes):
            # the daemons are reaped; their children (executors) were in the same groups
            for process in processes:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            return


def _wait_for_workers(cluster: StandaloneCluster) -> None:
    deadline = time.monotonic() + REGISTER_TIMEOUT_S
    last = "no answer from the master's web UI"
    while time.monotonic() < deadline:
        dead = [p.args for p in cluster.processes if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a cluster daemon exited: {dead}\n{cluster.log_tails()}")
        try:
            state = cluster.state()
        except (OSError, urllib.error.URLError, ValueError) as error:
            last = f"master web UI: {error}"
        else:
            alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]  # type: ignore[union-attr]
            if state.get("status") == "ALIVE" and len(alive) == WORKERS:
                return
            last = f"master {state.get('status')}, {len(alive)} of {WORKERS} workers alive"
        time.sleep(0.5)
    raise RuntimeError(
        f"the cluster did not come up in {REGISTER_TIMEOUT_S:.0f} s ({last})\n{cluster.log_tails()}"
    )


@contextlib.contextmanager
def standalone_cluster(
    root: Path, env: Mapping[str, str] | None = None
) -> Iterator[StandaloneCluster]:
    """Start the master and the workers under ``root``; stop and reap them on exit.
    ``env``: more environment for the daemons, which their executors inherit.

    Raises ``RuntimeError`` (with the daemons' logs) when Java is missing or the workers
    do not register within :data:`REGISTER_TIMEOUT_S`; never skips.
    """
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise RuntimeError("no java on PATH and no JAVA_HOME: Spark needs Java 17")
    for sub in ("logs", "local"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    env = daemon_env(root, env)
    # the daemons' settings: no REST submission server (it listens on a fixed port)
    properties = root / "daemons.conf"
    properties.write_text("spark.master.rest.enabled false\nspark.ui.killEnabled false\n")
    port, ui_port = free_port(), free_port()
    cluster = StandaloneCluster(
        master_url=f"spark://127.0.0.1:{port}",
        web_ui=f"http://127.0.0.1:{ui_port}",
        root=root,
        work_dirs=[root / f"worker-{i}" for i in range(WORKERS)],
        logs=[root / "logs" / "master.log"]
        + [root / "logs" / f"worker-{i}.log" for i in range(WORKERS)],
        node_python=write_node_python(root / "node-python"),
    )
    try:
        cluster.processes.append(
            _start(
                [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master",
                 "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port),
                 "--properties-file", str(properties)],
                env, cluster.logs[0],
            )
        )  # fmt: skip
        for i, work in enumerate(cluster.work_dirs):
            work.mkdir()
            cluster.processes.append(
                _start(
                    [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker",
                     cluster.master_url, "--host", "127.0.0.1", "--port", "0",
                     "--webui-port", "0", "--cores", str(WORKER_CORES),
                     "--memory", WORKER_MEMORY, "--work-dir", str(work),
                     "--properties-file", str(properties)],
                    env, cluster.logs[1 + i],
                )
            )  # fmt: skip
        _wait_for_workers(cluster)
        yield cluster
    finally:
        _stop(cluster.processes)
