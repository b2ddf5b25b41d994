"""``make run``: the product end to end on an embedded sample, with local Spark and Airflow.

1. generates a wide ML feature table (one batch per request) as a few days of Parquet
   partitions (:mod:`scripts.sample`);
2. runs the ``fermion_ingest`` DAG once per day with ``dag.test()`` (each run: the
   ingest job checks the day's input against ``conf/quality/features.yaml``, appends it
   batch by batch, then the validate job checks the new table version);
3. runs the ``fermion_maintenance`` DAG (compact, materialise deletions, rebuild
   statistics, validate, vacuum);
4. prints a report: versions, rows, files before and after compaction, checks, and where
   the table, the quality results and the data docs are.

Airflow runs in its own environment (``.venv-airflow``) as a subprocess; its tasks call
``.venv/bin/spark-submit`` (docs/ORCHESTRATION.md). Airflow's log goes to
``<workdir>/airflow.log``.

Run: ``python -m scripts.main_job [--workdir .run] [--days 3]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import fermion
from scripts import sample
from scripts.airflow_env import PROJECT_ROOT, AirflowHome

FIRST_DAY = dt.date(2026, 11, 20)
SUITE = PROJECT_ROOT / "conf" / "quality" / "features.yaml"
ROWS_PER_FILE = 2_000  # small files on purpose: compaction has work to do
#: The scalar indices the maintenance DAG's rebuild_index builds (a YAML list, its param).
INDICES = "[{column: user_id, kind: BTREE}, {column: label, kind: BITMAP}]"


@dataclass
class MainJobReport:
    """What the main job did (the DAG runs as ``scripts/airflow_run.py test`` returned them)."""

    workdir: Path
    table: Path
    reports: Path
    days: list[tuple[str, int]]
    ingest_runs: list[dict[str, Any]] = field(default_factory=list)
    maintenance_run: dict[str, Any] = field(default_factory=dict)
    files_before: int = 0
    files_after: int = 0
    seconds: float = 0.0

    @property
    def success(self) -> bool:
        """Every DAG run succeeded."""
        runs = [*self.ingest_runs, self.maintenance_run]
        return all(run.get("state") == "success" for run in runs)

    def summaries(self, task: str) -> list[dict[str, Any]]:
        """The job summaries a task returned, over every run that has the task."""
        runs = [*self.ingest_runs, self.maintenance_run]
        found = [run["tasks"].get(task, {}).get("summary") for run in runs]
        return [s for s in found if s]


def _files(table: Path) -> int:
    return sum(len(f.files) for f in fermion.dataset(str(table)).fragments)


def _say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


def _describe_ingest(run: dict[str, Any]) -> str:
    tasks = run["tasks"]
    ingest = tasks.get("ingest", {}).get("summary") or {}
    validate = tasks.get("validate", {}).get("summary") or {}
    if run["state"] != "success":
        states = ", ".join(f"{t}: {v['state']}" for t, v in tasks.items())
        return f"FAILED ({states})"
    if ingest.get("skipped"):
        wrote = f"nothing new ({ingest.get('reason')})"
    else:
        quality = ingest.get("quality", {})
        wrote = (
            f"input passed {quality.get('checks', 0)} checks, {ingest['rows_out']:,} rows "
            f"-> version {ingest['committed_version']} ({ingest['files_out']} files)"
        )
    return f"{wrote}; table validated: {validate.get('checks', 0)} checks passed"


def run_main_job(
    workdir: Path,
    *,
    days: int = 3,
    requests: int = sample.REQUESTS_PER_DAY,
    features: int = sample.FEATURES,
    out: TextIO = sys.stdout,
    airflow_db: Path | None = None,
) -> MainJobReport:
    """Generate the sample, run the DAGs, return (and print) what happened.

    Args:
        workdir: Emptied first; holds the input, the table, the quality reports and Airflow.
        days: Daily partitions to generate and ingest.
        requests: Requests (batches) per day.
        features: Float32 feature columns.
        out: Where progress and the report go.
        airflow_db: A freshly migrated Airflow metadata DB to start from (see
            ``AirflowHome``'s ``template``); None: ``airflow db migrate`` runs.
    """
    started = time.perf_counter()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    table, reports, inputs = workdir / "table", workdir / "quality", workdir / "input"
    written = sample.write_days(inputs, FIRST_DAY, days, requests=requests, features=features)
    report = MainJobReport(workdir, table, reports, written)
    _say(
        out,
        f"[sample] {days} days x ~{written[0][1]:,} rows ({requests} requests a day, one batch "
        f"each), {features} float32 features + ids, label, user_id, embedding -> {inputs}",
    )
    conf = {
        "table": str(table),
        "input_root": str(inputs),
        "reports_dir": str(reports),
        "suite": str(SUITE),
        "batch_id_column": "request_id",
        "max_rows_per_file": ROWS_PER_FILE,
    }
    # one Airflow process for all the runs (AirflowHome.dag_test), ended with the block
    with (
        open(workdir / "airflow.log", "w") as log,
        AirflowHome(workdir / "airflow", stream=log, template=airflow_db) as airflow,
    ):
        _say(out, f"[airflow] metadata DB ready in {airflow.home} (log: {log.name})")
        for ds, _ in written:
            _say(out, f"[fermion_ingest ds={ds}] running: ingest -> validate ...")
            tick = time.perf_counter()
            run = airflow.dag_test("fermion_ingest", ds, conf)
            report.ingest_runs.append(run)
            took = time.perf_counter() - tick
            _say(out, f"[fermion_ingest ds={ds}] {_describe_ingest(run)} ({took:.0f} s)")
        report.files_before = _files(table)
        _say(
            out,
            "[fermion_maintenance] running: compact -> materialize_deletions -> "
            "rebuild_index -> validate -> vacuum ...",
        )
        tick = time.perf_counter()
        maintenance_conf = {k: conf[k] for k in ("table", "reports_dir", "suite")}
        maintenance_conf["indices"] = INDICES
        report.maintenance_run = airflow.dag_test(
            "fermion_maintenance", written[-1][0], maintenance_conf
        )
        run = report.maintenance_run
        states = ", ".join(f"{task} {info['state']}" for task, info in run["tasks"].items())
        took = time.perf_counter() - tick
        _say(out, f"[fermion_maintenance] {run['state']}: {states} ({took:.0f} s)")
    report.files_after = _files(table)
    report.seconds = time.perf_counter() - started
    _say(out, render(report))
    return report


def render(report: MainJobReport) -> str:
    """The closing report, one fact a line."""
    ds = fermion.dataset(str(report.table))
    versions = ds.versions()
    operations = ", ".join(f"v{v.version} {v.operation}" for v in versions)
    checks = report.summaries("validate")
    indices = "; ".join(
        f"{i.name} ({i.kind} on {', '.join(i.columns)}, {len(i.fragment_ids)} of "
        f"{len(ds.fragments)} fragments, {i.num_entries:,} entries)"
        for i in ds.indices()
        if i.kind != "zonemap"  # the statistics record of rebuild_index, not an index
    )
    inputs = [s.get("quality", {}) for s in report.summaries("ingest")]
    docs = report.reports / "data_docs" / "index.html"
    lines = [
        "",
        f"Fermion main job: {'OK' if report.success else 'FAILED'} in {report.seconds:.0f} s",
        f"  table          {report.table}",
        f"  versions       {len(versions)} created: {operations}",
        f"  rows           {ds.count_rows():,} ({sum(r for _, r in report.days):,} generated "
        f"over {len(report.days)} days)",
        f"  files          {report.files_before} before compaction, {report.files_after} after",
        f"  indices        {indices or 'none'}",
        f"  input checks   {sum(q.get('checks', 0) for q in inputs)} passed "
        f"({len(inputs)} ingests, checked before commit)",
        f"  table checks   {sum(c.get('checks', 0) for c in checks)} passed "
        f"({len(checks)} validate runs, batch integrity included)",
        f"  data docs      {docs}",
        f"  results        {report.reports / 'results'}/*.json",
        f"  airflow log    {report.workdir / 'airflow.log'}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fermion's main job on an embedded sample")
    parser.add_argument("--workdir", type=Path, default=PROJECT_ROOT / ".run")
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--requests", type=int, default=sample.REQUESTS_PER_DAY)
    parser.add_argument("--features", type=int, default=sample.FEATURES)
    args = parser.parse_args(argv)
    try:
        report = run_main_job(
            args.workdir.resolve(), days=args.days, requests=args.requests, features=args.features
        )
    except (subprocess.SubprocessError, OSError, RuntimeError) as error:
        print(f"main job failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0 if report.success else 1


if __name__ == "__main__":
    sys.exit(main())
