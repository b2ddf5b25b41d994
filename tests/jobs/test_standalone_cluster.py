"""The ingest and compact jobs on a Spark standalone cluster, the package shipped as
``--py-files`` (docs/CLUSTER.md).

A master and two workers (1 core, 1 GiB each) run on 127.0.0.1 (tests/jobs/
standalone_cluster.py); the executors are JVMs the workers launch, with their own Python
workers. The applications name the nodes' interpreter with ``spark.pyspark.python`` (the
jobs through ``--set``, as a ``conf/env`` overlay would), while the driver's
``PYSPARK_PYTHON`` names another, as under Airflow; that interpreter sees no installed
Fermion: ``import fermion`` there can only find the ``fermion.zip`` that ``make dist`` built
and ``spark-submit --py-files`` shipped, and every such import is logged in the executors'
logs, which the test reads. Three applications are
submitted with ``--master spark://127.0.0.1:<port>``: ``jobs/ingest.py`` (batch-aligned,
small files), ``jobs/compact.py``, and a read-back through the ``fermion`` data source.
The table lives on the S3-compatible server (moto's, tests/support/s3server.py): the workers'
environment holds its ``AWS_*`` settings, as a node's would, and the driver's comes from the
test's. After each step every row is accounted for: the table read back equals the input
row for row (no row lost, none duplicated, no value changed); at the end the secret key is
in no driver output, no daemon or executor log and no object of the bucket.

Never skipped: without Java, or when the workers do not register, the test fails with the
daemons' logs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion
from tests.jobs.helpers import CONF, JOBS, ROOT, SPARK_SUBMIT
from tests.jobs.standalone_cluster import StandaloneCluster, standalone_cluster
from tests.support.s3server import S3Server
from tests.support.spark_cds import JVM_OPTS

pytestmark = pytest.mark.slow

ROWS = 20_000
ROWS_PER_BATCH = 50
SOURCE_FILES = 4
MAX_ROWS_PER_FILE = 1_000
TARGET_ROWS_PER_FRAGMENT = 5_000
SUBMIT_TIMEOUT_S = 300
#: Executors small enough for two 1-core, 1 GiB workers; tasks wait until both executors
#: registered, so every stage with two or more tasks runs on both workers.
CLUSTER_CONF = {
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    "spark.sql.shuffle.partitions": "4",
    "spark.executor.extraJavaOptions": JVM_OPTS,  # as the drivers (tests/support/spark_cds.py)
}
_OUTPUTS: list[str] = []  # every submission's stdout and stderr, searched for the secret
_IMPORT_LINE = re.compile(r"^FERMION-IMPORT pid=(\d+) origin=(.*)$", re.MULTILINE)
_EXECUTOR_JVM = re.compile(
    r"CoarseGrainedExecutorBackend: Started daemon with process name: (\d+)@"
)


def table_location(bucket: str) -> str:
    """Where the table lives: a bucket on the S3-compatible server (tests/support/s3server.py)."""
    return f"s3://{bucket}/table"


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, s3_server: S3Server
) -> Iterator[StandaloneCluster]:
    started = time.monotonic()
    # the nodes hold the object store's credentials and endpoint (as an instance profile
    # or the workers' environment would): the executors inherit them from their worker
    root = tmp_path_factory.mktemp("cluster")
    with standalone_cluster(root, env=s3_server.env()) as running:
        print(f"cluster up: {time.monotonic() - started:.1f} s")
        yield running


def test_no_java_fails_loudly_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(RuntimeError, match="no java on PATH"):
        with standalone_cluster(tmp_path / "cluster"):
            pass
    assert not (tmp_path / "cluster").exists()


def _source(directory: Path) -> pa.Table:
    """ROWS rows, ids shuffled across SOURCE_FILES Parquet files (a batch spans files)."""
    ids = np.random.default_rng(17).permutation(ROWS).astype(np.int64)
    rows = pa.table({
        "batch_id": ids // ROWS_PER_BATCH,
        "id": ids,
        "value": (ids * 7919) % 100_003,
        "name": pa.array([f"row-{i}" for i in ids]),
    })  # fmt: skip
    directory.mkdir()
    step = ROWS // SOURCE_FILES
    for f in range(SOURCE_FILES):
        pq.write_table(rows.slice(f * step, step), directory / f"part-{f}.parquet")
    return rows


def _submit_env() -> dict[str, str]:
    """The driver's environment: the venv's Python, 127.0.0.1, no repository on PYTHONPATH,
    and (from the test's environment, ``s3_env``) the object store's ``AWS_*`` settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.pop("PYTHONPATH", None)
    env.update(
        PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
    )  # fmt: skip
    return env


def _submit(cluster: StandaloneCluster, py_files: Path, app: Path, *args: str) -> dict[str, Any]:
    """``spark-submit --master spark://... --py-files fermion.zip app args``; its last stdout
    line (a JSON summary). Fails with the driver's output and the cluster's logs."""
    conf = [item for key, value in CLUSTER_CONF.items() for item in ("--conf", f"{key}={value}")]
    started = time.monotonic()
    process = subprocess.run(
        [str(SPARK_SUBMIT), "--master", cluster.master_url, "--py-files", str(py_files),
         *conf, str(app), *args],
        capture_output=True, text=True, env=_submit_env(), cwd=ROOT, timeout=SUBMIT_TIMEOUT_S,
    )  # fmt: skip
    lines = process.stdout.strip().splitlines()
    assert process.returncode == 0 and lines, (
        f"{app.name} exited {process.returncode}\n--- stdout\n{process.stdout[-4000:]}\n"
        f"--- stderr\n{process.stderr[-4000:]}\n--- cluster\n{cluster.log_tails()}"
    )
    _OUTPUTS.append(process.stdout + process.stderr)
    summary: dict[str, Any] = json.loads(lines[-1])
    print(f"{app.name}: {time.monotonic() - started:.1f} s")  # shown with -s or a failure
    return summary


def _app_id(cluster: StandaloneCluster, name: str) -> str:
    """The id of the one finished application called ``name``."""
    apps = [a for a in cluster.state()["completedapps"] if a["name"] == name]  # type: ignore[union-attr]
    assert len(apps) == 1, apps
    assert apps[0]["state"] == "FINISHED", apps[0]
    return str(apps[0]["id"])


def _check_ran_on_both_workers(cluster: StandaloneCluster, app_id: str) -> set[int]:
    """Both workers launched executor JVMs for the app (one each, or more when the worker
    relaunched an executor), and on each worker Python workers of the app imported Fermion,
    only ever from the shipped zip; returns the pids of those Python workers."""
    logs = cluster.executor_logs(app_id)
    by_worker: dict[Path, list[str]] = {work: [] for work in cluster.work_dirs}
    for path, text in logs.items():
        by_worker[path.parents[2]].append(text)  # <work>/<app>/<exec>/stderr
    jvms_of = {
        work: {int(m) for text in texts for m in _EXECUTOR_JVM.findall(text)}
        for work, texts in by_worker.items()
    }
    for work, jvms in jvms_of.items():
        assert jvms and os.getpid() not in jvms, (work, jvms, sorted(logs))
    first, second = jvms_of.values()
    assert not first & second, jvms_of  # two workers, two sets of executor processes
    python_pids: set[int] = set()
    for work, texts in by_worker.items():
        imports = [found for text in texts for found in _IMPORT_LINE.findall(text)]
        assert imports, f"no Python task of {app_id} imported fermion on {work}"
        for pid, origin in imports:
            assert origin.endswith("/fermion.zip/fermion/__init__.py"), (work, origin)
            assert not origin.startswith(str(ROOT)), origin
            python_pids.add(int(pid))
    return python_pids


def _rows(uri: str) -> dict[str, list[Any]]:
    table = fermion.dataset(uri).to_table().sort_by("id")
    return {name: table[name].to_pylist() for name in ("batch_id", "id", "value", "name")}


def _secret_nowhere(cluster: StandaloneCluster, server: S3Server, bucket: str) -> None:
    """The secret key is in no driver output, daemon or executor log, nor in any object of
    the table (manifests, transactions, data files)."""
    secret = server.secret_access_key
    assert all(secret not in text for text in _OUTPUTS)
    logs = [*cluster.logs, *(p for w in cluster.work_dirs for p in w.rglob("std*"))]
    assert logs and all(secret not in p.read_text(errors="replace") for p in logs)
    fs = server.filesystem()
    objects = fs.find(bucket)
    assert objects and all(secret.encode() not in fs.cat_file(o) for o in objects)


def test_ingest_and_compact_on_a_standalone_cluster(
    cluster: StandaloneCluster, dist: Path, tmp_path: Path, s3_env: S3Server, s3_bucket: str
) -> None:
    py_files = dist / "fermion.zip"
    source = _source(tmp_path / "input")
    expected = {n: source.sort_by("id")[n].to_pylist() for n in ("batch_id", "id", "value", "name")}
    uri = table_location(s3_bucket)
    try:
        ingested = _submit(
            cluster, py_files, JOBS / "ingest.py", "--config", str(CONF / "ingest.yaml"),
            "--set", f"table={uri}", "--set", f"source={tmp_path / 'input'}",
            "--set", "partitions=2", "--set", f"max_rows_per_file={MAX_ROWS_PER_FILE}",
            "--set", f"quality_dir={tmp_path / 'quality'}",
            "--set", f"spark.pyspark.python={cluster.node_python}",
        )  # fmt: skip
        assert ingested["status"] == "ok" and ingested["committed_version"] == 1, ingested
        assert ingested["rows_out"] == ROWS and ingested["files_in"] == SOURCE_FILES
        assert _rows(uri) == expected  # every row once, unchanged
        small = len(fermion.dataset(uri).fragments)
        assert small >= ROWS // MAX_ROWS_PER_FILE
        _check_ran_on_both_workers(cluster, _app_id(cluster, "fermion-ingest"))

        compacted = _submit(
            cluster, py_files, JOBS / "compact.py", "--config", str(CONF / "compact.yaml"),
            "--set", f"table={uri}",
            "--set", f"target_rows_per_fragment={TARGET_ROWS_PER_FRAGMENT}",
            "--set", f"spark.pyspark.python={cluster.node_python}",
        )  # fmt: skip
        assert compacted["status"] == "ok" and compacted["committed_version"] == 2, compacted
        # files_in fragments (rows_out rows) were rewritten into files_out bigger ones
        assert compacted["files_out"] < compacted["files_in"] <= small, compacted
        assert 0 < compacted["rows_out"] <= ROWS
        assert _rows(uri) == expected
        fragments = fermion.dataset(uri).fragments
        assert len(fragments) == small - compacted["files_in"] + compacted["files_out"]
        assert fermion.dataset(uri).version == 2
        _check_ran_on_both_workers(cluster, _app_id(cluster, "fermion-compact"))

        read = _submit(
            cluster, py_files, Path(__file__).parent / "cluster_readback.py", uri,
            str(cluster.node_python),
        )  # fmt: skip
        assert read["fragment_partitions"] == len(fragments)
        # packed for the cluster's parallelism (fermion.spark.packing): never more
        assert 1 <= read["partitions"] <= len(fragments)
        assert (read["rows"], read["distinct_ids"]) == (ROWS, ROWS)
        assert read["id_sum"] == sum(expected["id"])
        assert read["value_sum"] == sum(expected["value"])
        readers = _check_ran_on_both_workers(cluster, _app_id(cluster, "fermion-readback"))
        assert read["driver_pid"] not in readers
        # the driver too runs the shipped build (--py-files go first on its path)
        assert read["driver_fermion"] == f"{py_files}/fermion/__init__.py", read
        _secret_nowhere(cluster, s3_env, s3_bucket)
    except BaseException:
        print(cluster.log_tails())  # pytest shows it with the failure
        raise
