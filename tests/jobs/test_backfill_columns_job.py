"""The backfill_columns job on local Spark: the result equals ``Dataset.add_columns`` with
the same expressions, one column-only file per fragment, no existing file rewritten; a
re-run commits nothing; bad expressions and configs are typed errors with nothing
committed."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

import fermion.table as ft
from fermion.spark.jobs.backfill_columns import backfill_columns
from fermion.spark.jobs.config import BackfillColumnsConfig
from fermion.spark.jobs.runner import EXIT_CONFIG, EXIT_FAILURE, run
from tests.jobs.helpers import run_job, write_config

COLUMNS = {"g": "f0 * 2 + f1", "big": "n > 40"}


def _backfill(spark: Any, config: str, *sets: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    argv = ["--config", config, *[a for s in sets for a in ("--set", s)]]
    code = run(
        "backfill_columns", BackfillColumnsConfig, backfill_columns, argv, spark=spark, stdout=out
    )
    return code, json.loads(out.getvalue().splitlines()[-1])


def _files(uri: Path) -> set[str]:
    return {str(p.relative_to(uri)) for p in uri.rglob("*") if p.is_file()}


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    rows = pa.table(
        {
            "n": pa.array(range(100), pa.int32()),
            "f0": [float(i) / 3 for i in range(100)],
            "f1": [None if i % 7 == 0 else float(i) for i in range(100)],
            "s": [f"r{i}" for i in range(100)],
        }
    )
    job, local = tmp_path / "job", tmp_path / "local"
    for uri in (job, local):
        ds = ft.write_dataset(rows, uri, max_rows_per_file=30)
        ds.delete(
            "n IN (3, 13, 33, 63, 64, 65, 99)"
        )  # deleted rows: the column files hold nulls there
    return job, local


def test_backfill_equals_add_columns_and_runs_once(spark: Any, tmp_path: Path) -> None:
    job, local = _pair(tmp_path)
    old_files = {d.path for f in ft.dataset(job).fragments for d in f.files}
    config = write_config(tmp_path / "b.yaml", table=str(job), columns=COLUMNS, partitions=2)
    code, summary = _backfill(spark, config)
    assert code == 0, summary
    assert (summary["read_version"], summary["committed_version"]) == (2, 3)
    assert summary["files_in"] == summary["files_out"] == 4 and summary["rows_in"] == 100
    assert summary["columns"] == ["big", "g"] and summary["bytes_written"] > 0

    ft.dataset(local).add_columns(dict(COLUMNS))
    ours, expected = ft.dataset(job), ft.dataset(local)
    assert ours.schema == expected.schema
    assert ours.to_table().to_pylist() == expected.to_table().to_pylist()
    assert ours.manifest.summary.operation == "add_columns"
    for fragment in ours.fragments:  # the old file untouched, one new file per fragment
        assert len(fragment.files) == 2 and fragment.files[0].path in old_files
    assert ft.dataset(job, version=2).schema.names == ["n", "f0", "f1", "s"]

    files = _files(job)
    code, again = _backfill(spark, config)
    assert code == 0 and again["skipped"] is True and again["committed_version"] is None
    assert ft.dataset(job).version == 3 and _files(job) == files


def test_bad_expressions_and_configs_commit_nothing(spark: Any, tmp_path: Path) -> None:
    job, _ = _pair(tmp_path)
    before = _files(job)
    failures = [
        ({"g": "no_such + 1"}, EXIT_FAILURE, "ColumnNotFoundError"),
        ({"g": "f0 +"}, EXIT_FAILURE, "InvalidArgumentError"),
        ({"s": "f0 * 2", "h": "f1"}, EXIT_FAILURE, "InvalidArgumentError: backfill_columns: the"),
        ({"g": "s * 2"}, EXIT_FAILURE, "InvalidArgumentError"),  # string * int: no kernel
    ]
    for columns, exit_code, error in failures:
        config = write_config(tmp_path / "b.yaml", table=str(job), columns=columns)
        code, summary = _backfill(spark, config)
        assert code == exit_code and summary["error"].startswith(error), (columns, summary)
    for keys, message in [
        ({"columns": {"g": "f0"}, "column": {"h": "f1"}}, "key 'column': unknown key"),
        ({}, "key 'columns': required key is missing"),
        ({"columns": {}}, "key 'columns': needs at least one"),
        ({"columns": ["f0"]}, "key 'columns': expected dict[str, str]"),
        ({"columns": {"g": "f0"}, "fragments_per_task": 0}, "key 'fragments_per_task'"),
    ]:
        config = write_config(tmp_path / "b.yaml", table=str(job), **keys)
        code, summary = _backfill(spark, config)
        assert code == EXIT_CONFIG and message in summary["error"], (keys, summary)
    assert ft.dataset(job).version == 2 and _files(job) == before


def test_some_columns_present_is_an_error(spark: Any, tmp_path: Path) -> None:
    job, _ = _pair(tmp_path)
    ft.dataset(job).add_columns({"g": "f0 + 1"})
    config = write_config(tmp_path / "b.yaml", table=str(job), columns=COLUMNS)
    code, summary = _backfill(spark, config)
    assert code == EXIT_FAILURE, summary
    assert summary["error"].startswith("InvalidArgumentError: backfill_columns: the table has")
    assert ft.dataset(job).version == 3


def test_the_entry_point_exits_2_on_an_unknown_key(tmp_path: Path) -> None:
    """``python jobs/backfill_columns.py`` with an unknown key: exit 2 before Spark starts."""
    config = write_config(
        tmp_path / "b.yaml", table=str(tmp_path / "t"), columns={"g": "f0"}, expression="f0"
    )
    done = run_job("backfill_columns", "--config", config)
    assert done.code == EXIT_CONFIG and "key 'expression': unknown key" in done.summary["error"]
