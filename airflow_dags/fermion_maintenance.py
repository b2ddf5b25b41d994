"""fermion_maintenance: compact -> materialize_deletions -> rebuild_index -> validate -> vacuum.

Runs daily on ``{{ params.table }}``, with task retries. ``rebuild_index`` recomputes stale
statistics and builds or refreshes the scalar indices of ``{{ params.indices }}`` (only
the fragments an index does not cover yet, e.g. those the compaction just wrote). It takes
no lock and no pool: it may run while ``fermion_ingest`` appends, because every job commits
through the table's optimistic commit protocol (an append never conflicts with a rewrite; a
rewrite that lost to a concurrent delete or rewrite is retried by the job, then by Airflow).
"""

from __future__ import annotations

from datetime import UTC, datetime

from airflow.sdk import DAG, CronDataIntervalTimetable, Param, chain
from fermion_common import (
    DEFAULT_ARGS,
    DEFAULT_REPORTS,
    DEFAULT_SUITE,
    DEFAULT_TABLE,
    FermionJobOperator,
)

with DAG(
    dag_id="fermion_maintenance",
    description="Compact, materialise deletions, rebuild statistics, validate, vacuum",
    schedule=CronDataIntervalTimetable("@daily", timezone="UTC"),
    start_date=datetime(2026, 11, 1, tzinfo=UTC),
    catchup=False,
    default_args=DEFAULT_ARGS,
    params={
        "table": Param(DEFAULT_TABLE, type="string", description="Fermion table URI"),
        "target_rows_per_fragment": Param(1_048_576, type="integer", minimum=1),
        "retention_hours": Param(168, type="number", minimum=0),
        "indices": Param(
            "[]",
            type="string",
            description="scalar indices for rebuild_index, a YAML list of "
            "{column: c, kind: BTREE|BITMAP|LABEL_LIST}; [] builds none",
        ),
        "suite": Param(DEFAULT_SUITE, type="string", description="conf/quality suite"),
        "reports_dir": Param(DEFAULT_REPORTS, type="string", description="quality results"),
    },
    tags=["fermion"],
) as dag:
    table = {"table": "{{ params.table }}"}
    chain(
        FermionJobOperator(
            job="compact",
            settings={
                **table,
                "target_rows_per_fragment": "{{ params.target_rows_per_fragment }}",
            },
        ),
        FermionJobOperator(job="materialize_deletions", settings=table),
        FermionJobOperator(
            job="rebuild_index", settings={**table, "indices": "{{ params.indices }}"}
        ),
        FermionJobOperator(
            job="validate",
            settings={
                **table,
                "suite": "{{ params.suite }}",
                "quality_dir": "{{ params.reports_dir }}",
            },
        ),
        FermionJobOperator(
            job="vacuum",
            settings={**table, "retention_hours": "{{ params.retention_hours }}"},
        ),
    )
