"""What the Fermion DAGs share: where things are, and one operator to submit a job.

The DAGs run in the Airflow environment (``.venv-airflow``) and never import pyspark,
pyarrow or fermion: every task is ``spark-submit jobs/<job>.py --config conf/<job>.yaml
--env <env> --set key=value ...`` run with the jobs' environment (``.venv``), its
``spark-submit`` and its interpreter (docs/ORCHESTRATION.md). The Spark master comes from
the Airflow connection ``spark_local`` (e.g. ``AIRFLOW_CONN_SPARK_LOCAL=
'{"conn_type": "spark", "host": "local[2]"}'``).

Settings read from the environment when the DAG files are parsed:

==========================  =====================================================
``FERMION_HOME``            the checkout holding jobs/ and conf/ (default: the
                            parent of this folder)
``FERMION_JOBS_VENV``       the jobs' environment (default: ``$FERMION_HOME/.venv``)
``FERMION_ENV``             the conf/env overlay passed as ``--env`` (default: local)
``FERMION_SPARK_CONN_ID``   the Spark connection (default: spark_local)
``FERMION_TABLE``           default of the DAGs' ``table`` param
``FERMION_INPUT``           default of the ingest DAG's ``input_root`` param
``FERMION_REPORTS``         default of the ``reports_dir`` param (quality results)
==========================  =====================================================

Each job prints one JSON summary as its last stdout line and writes it to the file named by
``--summary-file``; :class:`FermionJobOperator` passes a file of each try's own and returns
the summary (the task's XCom) and fails without retrying when retrying cannot help (bad
configuration, failed quality checks, incompatible transactions).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowFailException

PROJECT_ROOT = Path(os.environ.get("FERMION_HOME", Path(__file__).resolve().parent.parent))
JOBS_VENV = Path(os.environ.get("FERMION_JOBS_VENV", PROJECT_ROOT / ".venv"))
JOBS_PYTHON = str(JOBS_VENV / "bin" / "python")
SPARK_SUBMIT = str(JOBS_VENV / "bin" / "spark-submit")
CONF_DIR = PROJECT_ROOT / "conf"
JOBS_DIR = PROJECT_ROOT / "jobs"
FERMION_ENV = os.environ.get("FERMION_ENV", "local")
SPARK_CONN_ID = os.environ.get("FERMION_SPARK_CONN_ID", "spark_local")

DEFAULT_TABLE = os.environ.get("FERMION_TABLE", "/tmp/fermion/tables/features")
DEFAULT_INPUT = os.environ.get("FERMION_INPUT", "/tmp/fermion/input/features")
DEFAULT_REPORTS = os.environ.get("FERMION_REPORTS", "/tmp/fermion/quality")
DEFAULT_SUITE = str(CONF_DIR / "quality" / "features.yaml")

# Task defaults of every DAG: a failed job is retried (a commit conflict that outlasted the
# job's own retries, a lost executor); no pools or locks, the commit protocol serialises.
DEFAULT_ARGS: dict[str, Any] = {
    "owner": "fermion",
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
}

# Where a try's job writes its summary (--summary-file): a Jinja template of the operator's
# arguments, so each try of each task of each run has its own file.
SUMMARY_DIR = Path(tempfile.gettempdir()) / "fermion-summaries"
SUMMARY_FILE = str(
    SUMMARY_DIR / "{{ ti.dag_id }}" / "{{ ti.run_id }}" / "{{ ti.task_id }}"
    / "{{ ti.map_index }}-{{ ti.try_number }}.json"
)  # fmt: skip

# Errors of a job's summary line that no retry can fix.
NOT_RETRYABLE = frozenset(
    {
        "ConfigError",
        "SuiteError",
        "QualityCheckError",
        "IncompatibleTransactionError",
        "SchemaMismatchError",
        "InvalidArgumentError",
        "ColumnNotFoundError",
    }
)


def job_settings(settings: Mapping[str, str]) -> list[str]:
    """``--set key=value`` arguments, in order (values may be Jinja templates).

    Example:
        >>> job_settings({"table": "/t", "input_key": "ds={{ ds }}"})
        ['--set', 'table=/t', '--set', 'input_key=ds={{ ds }}']
    """
    return [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]


def read_summary(path: str | Path) -> dict[str, Any] | None:
    """The job summary a job wrote with ``--summary-file``, or None (no file, not a summary).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "summary.json"
        >>> read_summary(path) is None
        True
        >>> _ = path.write_text('{"job": "vacuum", "status": "ok"}\\n')
        >>> read_summary(path)
        {'job': 'vacuum', 'status': 'ok'}
    """
    try:
        found = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and "job" in found else None


class FermionJobOperator(SparkSubmitOperator):
    """``spark-submit jobs/<job>.py`` with the project's configuration; returns the summary.

    Args:
        job: The job's name (``jobs/<job>.py``, ``conf/<job>.yaml``).
        settings: ``--set`` overrides (templated: ``{{ ds }}``, ``{{ params.x }}``).
        **kwargs: Passed to ``SparkSubmitOperator`` (``task_id`` defaults to ``job``).
    """

    def __init__(self, *, job: str, settings: Mapping[str, str] | None = None, **kwargs: Any):
        kwargs.setdefault("task_id", job)
        kwargs.setdefault("name", f"fermion-{job}")
        super().__init__(
            application=str(JOBS_DIR / f"{job}.py"),
            application_args=[
                "--config",
                str(CONF_DIR / f"{job}.yaml"),
                "--env",
                FERMION_ENV,
                *job_settings(settings or {}),
                "--summary-file",
                SUMMARY_FILE,  # rendered per try with the other templated arguments
            ],
            conn_id=SPARK_CONN_ID,
            spark_binary=SPARK_SUBMIT,
            env_vars={"PYSPARK_PYTHON": JOBS_PYTHON, "PYSPARK_DRIVER_PYTHON": JOBS_PYTHON},
            **kwargs,
        )
        self.job = job

    def execute(self, context: Any) -> dict[str, Any] | None:
        """Run the job; return its summary, or fail for good when a retry cannot help.

        The job writes its summary to this try's own file (``--summary-file``, the last
        argument, rendered from :data:`SUMMARY_FILE` like every templated argument), read
        back here: the driver runs where spark-submit runs (client mode, as the DAGs
        submit). Only the operator's public arguments are used, none of its private state.
        """
        path = Path(str((self.application_args or [SUMMARY_FILE])[-1]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # never a summary left by an earlier run
        try:
            super().execute(context)
        except Exception as failure:
            error = str((read_summary(path) or {}).get("error", ""))
            if error.split(":", 1)[0] in NOT_RETRYABLE:
                raise AirflowFailException(f"{self.job}: {error}") from failure
            raise
        finally:
            summary = read_summary(path)
            path.unlink(missing_ok=True)
        return summary
