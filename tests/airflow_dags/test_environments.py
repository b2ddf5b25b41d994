"""The two environments (docs/ORCHESTRATION.md): the jobs' pyspark matches its Spark jars,
Airflow and its provider stay out of the jobs' environment, and the DAGs submit with the
jobs' spark-submit and interpreter."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from scripts.airflow_env import PROJECT_ROOT, AirflowHome

JOBS_BIN = Path(sys.executable).parent


def test_pyspark_matches_its_jars() -> None:
    jars = Path(pyspark.__file__).parent / "jars"
    versions = {
        m.group(1)
        for jar in jars.glob("spark-core_*.jar")
        if (m := re.fullmatch(r"spark-core_[\d.]+-(.+)\.jar", jar.name))
    }
    assert versions == {pyspark.__version__}


def test_spark_submit_reports_the_same_version() -> None:
    """spark-submit finds its Spark through the interpreter named by PYSPARK_PYTHON (the
    DAGs set it; without it, ``python3`` from PATH is asked and may not have pyspark)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(
        [str(JOBS_BIN / "spark-submit"), "--version"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    found = re.search(r"version (\d+\.\d+\.\d+)", done.stdout + done.stderr)
    assert found is not None, (done.stdout + done.stderr)[-2000:]
    assert found.group(1) == pyspark.__version__


@pytest.mark.parametrize("distribution", ["apache-airflow", "pyspark-client"])
def test_airflow_is_not_in_the_jobs_environment(distribution: str) -> None:
    """pyspark-client (pulled in by the Spark provider) would overwrite pyspark's files."""
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution(distribution)


def test_dags_submit_with_the_jobs_environment(airflow: AirflowHome) -> None:
    bag = airflow.run("dagbag")
    venv = PROJECT_ROOT / ".venv" / "bin"
    for dag_id, dag in bag["dags"].items():
        assert dag["spark_binary"] == [str(venv / "spark-submit")], dag_id
        assert dag["env_vars"]["PYSPARK_PYTHON"] == str(venv / "python"), dag_id
        for task, application in dag["applications"].items():
            assert Path(application).is_file(), (dag_id, task, application)
