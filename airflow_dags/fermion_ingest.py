"""fermion_ingest: one run per day ingests (or replaces) that day's input partition, then
validates.

``{{ params.input_root }}/ds=<YYYY-MM-DD>`` (Parquet) is appended to ``{{ params.table }}``
by ``jobs/ingest.py``, one ``append_batch`` per batch id. The job first checks the input
against the quality suite: a failed check fails the task (no retry) and commits nothing.
The run's input key is the data interval (``ds=<date>``): a re-run or a backfill of a day
that already committed commits nothing, and a day that failed committed nothing, so its
re-run ingests it once. Then ``jobs/validate.py`` checks the new table version (the suite's
expectations and batch integrity). Results (JSON) and data docs (HTML) go to
``{{ params.reports_dir }}``.

``mode: replace`` (a corrected day, e.g. ``airflow dags test fermion_ingest 2026-11-20 --conf
'{"mode": "replace"}'``): the day's input replaces the table's rows where
``{{ params.day_column }} = '<date>'``, in one version (the job's ``replace_where``); every
input row must belong to that day, or the task fails without retrying and commits nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime

from airflow.sdk import DAG, CronDataIntervalTimetable, Param
from fermion_common import (
    DEFAULT_ARGS,
    DEFAULT_INPUT,
    DEFAULT_REPORTS,
    DEFAULT_SUITE,
    DEFAULT_TABLE,
    FermionJobOperator,
)

# The ingest job's replace_where: the day's rows in replace mode, null (append) otherwise.
REPLACE_WHERE = (
    "{% if params.mode == 'replace' %}{{ params.day_column }} = '{{ ds }}'{% else %}null{% endif %}"
)

with DAG(
    dag_id="fermion_ingest",
    description="Ingest each day's partition into a Fermion table, then validate it",
    schedule=CronDataIntervalTimetable("@daily", timezone="UTC"),
    start_date=datetime(2026, 11, 1, tzinfo=UTC),
    catchup=False,
    default_args=DEFAULT_ARGS,
    params={
        "table": Param(DEFAULT_TABLE, type="string", description="Fermion table URI"),
        "input_root": Param(DEFAULT_INPUT, type="string", description="holds ds=<date>/"),
        "batch_id_column": Param("request_id", type="string"),
        "max_rows_per_file": Param(1_048_576, type="integer", minimum=1),
        "suite": Param(DEFAULT_SUITE, type="string", description="conf/quality suite"),
        "reports_dir": Param(DEFAULT_REPORTS, type="string", description="quality results"),
        "mode": Param(
            "append",
            enum=["append", "replace"],
            description="append the day, or replace the day's rows (a corrected day)",
        ),
        "day_column": Param("ds", type="string", description="replace: the column of the day"),
    },
    tags=["fermion"],
) as dag:
    ingest = FermionJobOperator(
        job="ingest",
        settings={
            "table": "{{ params.table }}",
            "source": "{{ params.input_root }}/ds={{ ds }}",
            "input_key": "ds={{ ds }}",
            "batch_id_column": "{{ params.batch_id_column }}",
            "max_rows_per_file": "{{ params.max_rows_per_file }}",
            "suite": "{{ params.suite }}",
            "quality_dir": "{{ params.reports_dir }}",
            "replace_where": REPLACE_WHERE,
        },
    )
    validate = FermionJobOperator(
        job="validate",
        settings={
            "table": "{{ params.table }}",
            "suite": "{{ params.suite }}",
            "quality_dir": "{{ params.reports_dir }}",
        },
    )
    ingest >> validate
