"""An Airflow home per test session (``airflow db migrate`` once), run through .venv-airflow."""

from __future__ import annotations

import pytest

from scripts.airflow_env import AirflowHome


@pytest.fixture(scope="session")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> AirflowHome:
    return AirflowHome(tmp_path_factory.mktemp("airflow-home"))
