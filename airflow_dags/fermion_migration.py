"""fermion_migration: a Parquet dataset -> a Fermion table, verified, on demand.

Triggered with the params ``source`` (Parquet dataset) and ``target`` (table URI).
``jobs/migrate_parquet.py`` compares row counts and per-column checksums of the source and
the written data before it commits (a mismatch commits nothing); a re-run of a migration
that committed does nothing. Then ``jobs/validate.py`` checks the table against ``suite``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from airflow.sdk import DAG, Param
from fermion_common import CONF_DIR, DEFAULT_ARGS, DEFAULT_REPORTS, FermionJobOperator

with DAG(
    dag_id="fermion_migration",
    description="Migrate a Parquet dataset to a Fermion table, verified",
    schedule=None,
    start_date=datetime(2026, 11, 1, tzinfo=UTC),
    catchup=False,
    default_args=DEFAULT_ARGS,
    params={
        "source": Param("/tmp/fermion/input/parquet", type="string", description="Parquet"),
        "target": Param("/tmp/fermion/tables/migrated", type="string", description="table"),
        "suite": Param(str(CONF_DIR / "quality" / "migration.yaml"), type="string"),
        "reports_dir": Param(DEFAULT_REPORTS, type="string", description="quality results"),
    },
    tags=["fermion"],
) as dag:
    migrate = FermionJobOperator(
        job="migrate_parquet",
        task_id="migrate",
        settings={
            "source": "{{ params.source }}",
            "table": "{{ params.target }}",
            "verify": "true",
        },
    )
    validate = FermionJobOperator(
        job="validate",
        settings={
            "table": "{{ params.target }}",
            "suite": "{{ params.suite }}",
            "quality_dir": "{{ params.reports_dir }}",
        },
    )
    migrate >> validate
