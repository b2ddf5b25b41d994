"""Drivers above the DAGs: the ``make run`` main job and helpers that run Airflow.

They run in the jobs' environment (``.venv``) and reach Airflow only as a subprocess of the
Airflow environment (``.venv-airflow``): see docs/ORCHESTRATION.md.
"""
