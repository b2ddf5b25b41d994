"""Airflow homes for the DAG tests, run through .venv-airflow: ``airflow db migrate`` runs
once per test run (shared by the xdist workers), into a home nothing runs in; every other home
starts from a copy of its metadata DB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.airflow_env import AirflowHome
from tests.support.once import built_once


@pytest.fixture(scope="session")
def airflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, never used metadata DB (``AirflowHome``'s ``template``)."""
    return built_once(
        tmp_path_factory, "airflow-template", lambda home: AirflowHome(home).migrated_db
    )


@pytest.fixture(scope="session")
def airflow(tmp_path_factory: pytest.TempPathFactory, airflow_db: Path) -> Iterator[AirflowHome]:
    """A home whose DAG runs (``dag_test``) share one Airflow process, ended at the end."""
    with AirflowHome(tmp_path_factory.mktemp("airflow-home"), template=airflow_db) as home:
        yield home
