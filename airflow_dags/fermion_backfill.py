"""fermion_backfill: add feature columns computed from the existing ones, then validate.

Triggered by hand (no schedule) with the new columns, e.g. ``airflow dags trigger
fermion_backfill --conf '{"columns": {"f000_x2": "f000 * 2"}}'``. ``jobs/backfill_columns.py``
computes the columns for every fragment as Spark tasks, each writing one column-only data
file for its fragment (no existing file is rewritten), and commits once. A re-run finds the
columns present and commits nothing; an expression that does not parse or names an unknown
column fails the task without retrying and commits nothing. Then ``jobs/validate.py`` checks
the new version against the quality suite.
"""

from __future__ import annotations

from datetime import UTC, datetime

from airflow.sdk import DAG, Param
from fermion_common import (
    DEFAULT_ARGS,
    DEFAULT_REPORTS,
    DEFAULT_SUITE,
    DEFAULT_TABLE,
    FermionJobOperator,
)

with DAG(
    dag_id="fermion_backfill",
    description="Backfill new columns of a Fermion table (one file per fragment), then validate",
    schedule=None,
    start_date=datetime(2026, 11, 1, tzinfo=UTC),
    catchup=False,
    default_args=DEFAULT_ARGS,
    params={
        "table": Param(DEFAULT_TABLE, type="string", description="Fermion table URI"),
        "columns": Param(
            {"f000_x2": "f000 * 2"},
            type="object",
            description="new columns: {name: SQL expression over existing columns}",
        ),
        "fragments_per_task": Param(1, type="integer", minimum=1),
        "suite": Param(DEFAULT_SUITE, type="string", description="conf/quality suite"),
        "reports_dir": Param(DEFAULT_REPORTS, type="string", description="quality results"),
    },
    tags=["fermion"],
) as dag:
    backfill = FermionJobOperator(
        job="backfill_columns",
        settings={
            "table": "{{ params.table }}",
            "columns": "{{ params.columns | tojson }}",
            "fragments_per_task": "{{ params.fragments_per_task }}",
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
    backfill >> validate
