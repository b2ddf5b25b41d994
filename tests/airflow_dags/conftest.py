"""Airflow homes for the DAG tests, run through .venv-airflow: ``airflow db migrate`` runs
once per test run (shared by the xdist workers), into a home nothing runs in; every other home
starts from a copy of its metadata DB."""

from __future__ import annotations

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
def airflow(tmp_path_factory: pytest.TempPathFactory, airflow_db: Path) -> AirflowHome:
    return AirflowHome(tmp_path_factory.mktemp("airflow-home"), template=airflow_db)
