"""The DAGs run for real: ``make run``'s driver (fermion_ingest for two days, then
fermion_maintenance, with dag.test() in the Airflow environment and local Spark), a re-run
of an ingested day (commits nothing), and a broken day (fails at validation, commits
nothing, and the data docs say why)."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fermion
from scripts import sample
from scripts.airflow_env import AirflowHome
from scripts.main_job import FIRST_DAY, MainJobReport, run_main_job

DAYS = 2


@pytest.fixture(scope="module")
def main_job(
    tmp_path_factory: pytest.TempPathFactory, airflow_db: Path
) -> tuple[MainJobReport, str]:
    out = io.StringIO()
    report = run_main_job(
        tmp_path_factory.mktemp("main-job"),
        days=DAYS, requests=30, features=16, out=out, airflow_db=airflow_db,
    )  # fmt: skip
    return report, out.getvalue()


def _conf(report: MainJobReport) -> dict[str, Any]:
    return {
        "table": str(report.table),
        "input_root": str(report.workdir / "input"),
        "reports_dir": str(report.reports),
        "max_rows_per_file": 200,
    }


@pytest.fixture(scope="module")
def more_runs(main_job: tuple[MainJobReport, str]) -> Iterator[AirflowHome]:
    """The main job's Airflow home for more DAG runs, all in one Airflow process (Airflow's
    log appended to a file)."""
    report, _ = main_job
    with (
        open(report.workdir / "more.log", "a") as log,
        AirflowHome(report.workdir / "airflow", stream=log) as airflow,
    ):
        yield airflow


def _files(table: Path) -> list[str]:
    return sorted(str(p.relative_to(table)) for p in table.rglob("*") if p.is_file())


def test_ingest_runs(main_job: tuple[MainJobReport, str]) -> None:
    report, _ = main_job
    assert [run["state"] for run in report.ingest_runs] == ["success"] * DAYS
    ingests = report.summaries("ingest")
    assert [s["committed_version"] for s in ingests] == [1, 2]
    assert [s["rows_out"] for s in ingests] == [rows for _, rows in report.days]
    assert all(s["quality"]["passed"] and s["quality"]["checks"] == 9 for s in ingests)
    validations = report.summaries("validate")
    assert [v["read_version"] for v in validations[:DAYS]] == [1, 2]
    assert all(v["passed"] and v["checks"] == 10 for v in validations)  # + batch integrity


def test_maintenance_run(main_job: tuple[MainJobReport, str]) -> None:
    report, _ = main_job
    run = report.maintenance_run
    assert run["state"] == "success"
    assert {task: info["state"] for task, info in run["tasks"].items()} == {
        task: "success"
        for task in ("compact", "materialize_deletions", "rebuild_index", "validate", "vacuum")
    }
    compact = run["tasks"]["compact"]["summary"]
    assert compact["files_in"] > compact["files_out"] >= 1
    assert report.files_after < report.files_before
    generated = sum(rows for _, rows in report.days)
    assert compact["rows_in"] == compact["rows_out"] == generated
    assert fermion.dataset(str(report.table)).count_rows() == generated
    # batch integrity held after compaction too
    assert run["tasks"]["validate"]["summary"]["checks_failed"] == []
    # rebuild_index built the declared indices over every fragment after the compaction,
    # and they answer as the unindexed scan
    ds = fermion.dataset(str(report.table))
    built = {
        i.name: (i.kind, i.columns, set(i.fragment_ids))
        for i in ds.indices()
        if i.kind != "zonemap"  # rebuild_index's statistics record
    }
    every = {f.id for f in ds.fragments}
    assert built == {
        "user_id_idx": ("BTREE", ("user_id",), every),
        "label_idx": ("BITMAP", ("label",), every),
    }
    user = ds.to_table(["user_id"]).column(0)[0].as_py()
    keys = ["request_id", "position"]
    for text in (f"user_id = '{user}'", "label = 1.0"):  # user ids are strings
        indexed = ds.to_table(filter=text).sort_by([(k, "ascending") for k in keys])
        plain = ds.scanner(None, text, use_indices=False).to_table()
        assert indexed.num_rows > 0
        assert indexed.equals(plain.sort_by([(k, "ascending") for k in keys]))


def test_report(main_job: tuple[MainJobReport, str]) -> None:
    report, printed = main_job
    assert "Fermion main job: OK" in printed
    assert (
        f"files          {report.files_before} before compaction, {report.files_after} after"
        in printed
    )
    assert re.search(r"versions +\d+ created: v1 .*v2 ", printed)
    assert re.search(r"indices +user_id_idx \(BTREE on user_id, (\d+) of \1 fragments", printed)
    assert "label_idx (BITMAP on label" in printed
    assert f"data docs      {report.reports / 'data_docs' / 'index.html'}" in printed
    assert (report.reports / "data_docs" / "index.html").is_file()
    for ds, _ in report.days:
        assert f"[fermion_ingest ds={ds}]" in printed


def test_rerun_of_an_ingested_day_commits_nothing(
    main_job: tuple[MainJobReport, str], more_runs: AirflowHome
) -> None:
    report, _ = main_job
    version = fermion.dataset(str(report.table)).version
    run = more_runs.dag_test("fermion_ingest", report.days[0][0], _conf(report))
    assert run["state"] == "success"
    ingest = run["tasks"]["ingest"]["summary"]
    assert ingest["skipped"] is True and ingest["committed_version"] is None
    assert fermion.dataset(str(report.table)).version == version


def test_broken_day_fails_at_validation_and_commits_nothing(
    main_job: tuple[MainJobReport, str], more_runs: AirflowHome
) -> None:
    report, _ = main_job
    day = FIRST_DAY + dt.timedelta(days=DAYS)
    broken_root = report.workdir / "broken"
    sample.write_days(broken_root, day, 1, requests=30, features=16, broken=frozenset({0}))
    before_version = fermion.dataset(str(report.table)).version
    before_files = _files(report.table)
    before_results = set((report.reports / "results").glob("*.json"))
    conf = {**_conf(report), "input_root": str(broken_root)}
    run = more_runs.dag_test("fermion_ingest", day.isoformat(), conf)
    assert run["state"] == "failed"
    assert run["tasks"]["ingest"]["state"] == "failed"
    assert run["tasks"]["ingest"]["tries"] == 1  # a failed check is not retried
    assert run["tasks"]["validate"]["state"] == "upstream_failed"
    assert fermion.dataset(str(report.table)).version == before_version
    assert _files(report.table) == before_files
    (new,) = set((report.reports / "results").glob("*.json")) - before_results
    result = json.loads(new.read_text())
    failed = [r for r in result["results"] if not r["success"]]
    assert [(r["check"], r["column"]) for r in failed] == [
        ("expect_column_values_to_be_between", "label")
    ]
    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", Path(result["data_docs"]).read_text()))
    assert "Status: Failed" in page and "Unsuccessful Expectations 1 " in page
    assert "label" in page and "7.0" in page


def test_migration_dag_migrates_verifies_and_reruns_as_a_no_op(
    main_job: tuple[MainJobReport, str], more_runs: AirflowHome
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    report, _ = main_job
    source, target = report.workdir / "legacy-parquet", report.workdir / "migrated"
    rows = 600
    original = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "score": [i * 0.5 for i in range(rows)],
        "name": [None if i % 7 == 0 else f"n{i}" for i in range(rows)],
        "region": [["eu", "us"][i % 2] for i in range(rows)],
    })  # fmt: skip
    pq.write_to_dataset(original, str(source), partition_cols=["region"])
    conf = {"source": str(source), "target": str(target), "reports_dir": str(report.reports)}

    run = more_runs.dag_test("fermion_migration", "2026-11-22", conf)
    assert run["state"] == "success", run
    migrate, validate = (run["tasks"][t]["summary"] for t in ("migrate", "validate"))
    assert migrate["verified"] is True and migrate["committed_version"] == 1
    assert (migrate["rows_in"], migrate["rows_out"]) == (rows, rows)
    assert validate["passed"] is True and validate["read_version"] == 1
    migrated = fermion.dataset(str(target)).to_table().sort_by("id")
    assert migrated.select(original.column_names).equals(original)

    again = more_runs.dag_test("fermion_migration", "2026-11-23", conf)
    assert again["state"] == "success"
    assert again["tasks"]["migrate"]["summary"]["skipped"] is True
    assert fermion.dataset(str(target)).version == 1
