"""The DAG folder parses in Airflow 3 with no import errors, the expected tasks and order,
and without importing pyspark, pyarrow or fermion."""

from __future__ import annotations

from typing import Any

import pytest

from scripts.airflow_env import AirflowError, AirflowHome

EXPECTED = {
    "fermion_ingest": {"ingest": ["validate"], "validate": []},
    "fermion_maintenance": {
        "compact": ["materialize_deletions"],
        "materialize_deletions": ["rebuild_index"],
        "rebuild_index": ["validate"],
        "validate": ["vacuum"],
        "vacuum": [],
    },
    "fermion_migration": {"migrate": ["validate"], "validate": []},
    "fermion_backfill": {"backfill_columns": ["validate"], "validate": []},
}


@pytest.fixture(scope="module")
def bag(airflow: AirflowHome) -> dict[str, Any]:
    return airflow.run("dagbag")


def test_no_import_errors(bag: dict[str, Any]) -> None:
    assert bag["import_errors"] == {}


def test_tasks_and_order(bag: dict[str, Any]) -> None:
    assert {dag_id: dag["tasks"] for dag_id, dag in bag["dags"].items()} == EXPECTED


def test_parsing_imports_no_heavy_module(bag: dict[str, Any]) -> None:
    assert bag["heavy_modules"] == []


def test_schedules_params_and_retries(bag: dict[str, Any]) -> None:
    dags = bag["dags"]
    assert dags["fermion_ingest"]["schedule"] == "0 0 * * *"
    assert dags["fermion_maintenance"]["schedule"] == "0 0 * * *"
    assert dags["fermion_migration"]["schedule"] is None
    assert dags["fermion_backfill"]["schedule"] is None
    assert {"table", "columns"} <= set(dags["fermion_backfill"]["params"])
    assert {"mode", "day_column"} <= set(dags["fermion_ingest"]["params"])
    assert {"source", "target"} <= set(dags["fermion_migration"]["params"])
    assert {"table", "input_root"} <= set(dags["fermion_ingest"]["params"])
    assert set(dags["fermion_maintenance"]["retries"].values()) == {2}
    # no pools for mutual exclusion: the commit protocol serialises the jobs
    assert {pool for dag in dags.values() for pool in dag["pools"]} == {"default_pool"}


def test_a_run_that_cannot_start_names_its_dag_and_the_process_serves_on(
    airflow: AirflowHome,
) -> None:
    """``dag_test``'s Airflow process answers a DAG run that cannot start with an error
    naming the DAG, and answers the next request (the DAG tests' runs share it)."""
    for dag_id in ("no_such_dag", "nor_this_one"):
        with pytest.raises(AirflowError, match=f"no DAG '{dag_id}'"):
            airflow.dag_test(dag_id, "2026-11-20", {})
