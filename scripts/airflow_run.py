"""Airflow without a scheduler, for tests and ``make run``: run with the Airflow environment.

    .venv-airflow/bin/python scripts/airflow_run.py dagbag
    .venv-airflow/bin/python scripts/airflow_run.py test DAG_ID [--logical-date 2026-11-20]
                                                        [--conf '{"table": "/t"}']
    .venv-airflow/bin/python scripts/airflow_run.py serve

``dagbag`` loads the DAG folder the way Airflow's DAG processor does (the folder on
``sys.path``) and prints, as JSON, the import errors, each DAG's tasks with their
downstream tasks, and which heavy modules (pyspark, pyarrow, fermion, ...) importing the
DAG files pulled in. ``test`` runs one DAG run with ``dag.test()`` and prints its state and
each task's state, tries and returned value (a job's summary line). The last stdout line is
the JSON; Airflow's own logging goes to stderr.

``serve`` runs many DAG runs in one process, so that Airflow starts once: it reads one
request a line from stdin (``{"dag_id": ..., "logical_date": ..., "conf": {...}}``) and
answers each with one line on stdout, the JSON ``test`` prints (or ``{"error": ...}`` when
the run could not start); it ends at the end of stdin. Each run parses the DAG folder again
(the modules the DAG files import stay loaded), so every run gets fresh DAG objects.

The caller sets the environment: ``AIRFLOW_HOME`` (after ``airflow db migrate``),
``AIRFLOW__CORE__DAGS_FOLDER``, ``AIRFLOW__CORE__LOAD_EXAMPLES=False`` and the Spark
connection (``AIRFLOW_CONN_SPARK_LOCAL``); :mod:`scripts.airflow_env` builds it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

HEAVY_MODULES = ("pyspark", "pyarrow", "fermion", "great_expectations", "pandas", "numpy")


def _dag_folder() -> Path:
    return Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).resolve()


def _bag() -> Any:
    from airflow.dag_processing.dagbag import BundleDagBag

    folder = _dag_folder()
    return BundleDagBag(dag_folder=folder, bundle_path=folder)


def dagbag() -> dict[str, Any]:
    """Import errors, tasks and heavy imports of the DAG folder."""
    before = set(sys.modules)
    bag = _bag()
    loaded = set(sys.modules) - before
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY_MODULES)
    return {
        "import_errors": {str(k): v for k, v in bag.import_errors.items()},
        "dags": {
            dag_id: {
                "tasks": {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks},
                "schedule": getattr(dag.timetable, "expression", None),
                "params": sorted(dag.params.keys()),
                "retries": {t.task_id: t.retries for t in dag.tasks},
                "pools": sorted({t.pool for t in dag.tasks}),
                "spark_binary": sorted({str(getattr(t, "_spark_binary", "")) for t in dag.tasks}),
                "applications": {t.task_id: str(getattr(t, "application", "")) for t in dag.tasks},
                "env_vars": [getattr(t, "env_vars", None) for t in dag.tasks][0],
            }
            for dag_id, dag in bag.dags.items()
        },
        "heavy_modules": sorted({m.split(".")[0] for m in heavy}),
    }


def test(dag_id: str, logical_date: str | None, conf: dict[str, Any]) -> dict[str, Any]:
    """Run one DAG run with ``dag.test()``; the run's and each task's outcome."""
    bag = _bag()
    if dag_id not in bag.dags:
        raise SystemExit(f"no DAG {dag_id!r} in {_dag_folder()}: {bag.import_errors}")
    dag = bag.dags[dag_id]
    when = dt.datetime.fromisoformat(logical_date).replace(tzinfo=dt.UTC) if logical_date else None
    # dag.test() logs each task's output to stdout: keep stdout for the JSON line
    with contextlib.redirect_stdout(sys.stderr):
        run = dag.test(logical_date=when, run_conf=conf)
    tasks = {}
    for ti in run.get_task_instances():
        tasks[ti.task_id] = {
            "state": str(ti.state) if ti.state else None,
            "tries": ti.try_number,
            "summary": _returned(run, ti.task_id),
        }
    return {"dag_id": dag_id, "run_id": run.run_id, "state": str(run.state), "tasks": tasks}


def _returned(run: Any, task_id: str) -> Any:
    from airflow import settings
    from airflow.models.xcom import XComModel

    query = XComModel.get_many(
        run_id=run.run_id, dag_ids=run.dag_id, task_ids=task_id, key="return_value"
    )
    with settings.Session() as session:
        rows = session.scalars(query).all()
        return XComModel.deserialize_value(rows[0]) if rows else None


def serve(requests: Any, answers: Any) -> None:
    """Answer each line of ``requests`` (a DAG run to test) with a line on ``answers``."""
    for line in requests:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            result = test(request["dag_id"], request.get("logical_date"), request.get("conf", {}))
        except (Exception, SystemExit) as error:  # the caller raises it; serve the next one
            result = {"error": f"{type(error).__name__}: {error}"}
        answers.write(json.dumps(result, default=str) + "\n")
        answers.flush()


def _serve() -> int:
    # The answers get this process's stdout to themselves: anything else that writes to
    # file descriptor 1 (a task's child process, a C library) goes to stderr instead
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin, answers)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("dagbag")
    commands.add_parser("serve")
    run = commands.add_parser("test")
    run.add_argument("dag_id")
    run.add_argument("--logical-date")
    run.add_argument("--conf", default="{}", type=json.loads)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve()
    if args.command == "dagbag":
        result = dagbag()
    else:
        result = test(args.dag_id, args.logical_date, args.conf)
    sys.stdout.write(json.dumps(result, default=str) + "\n")
    return 0 if result.get("state", "success") == "success" else 1


if __name__ == "__main__":
    sys.exit(main())
