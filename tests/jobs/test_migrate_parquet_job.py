"""The migrate_parquet job on local Spark: verified migration, resumability, reverse export."""

from __future__ import annotations

import datetime
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion
from fermion.spark.jobs import migrate_parquet as module
from fermion.spark.jobs.config import MigrateParquetConfig
from fermion.spark.jobs.distributed import execute_write_tasks
from fermion.spark.jobs.migrate_parquet import VerificationError, compare_checksums
from fermion.spark.jobs.runner import run
from fermion.table.manifest_store import ENV_VAR, SQLiteManifestStore
from fermion.table.tasks import plan_write
from tests.jobs.helpers import run_job, write_config


def _dataset(directory: Path, rows: int) -> pa.Table:
    table = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "score": [i * 0.25 for i in range(rows)],
        "name": [None if i % 5 == 0 else f"n{i}" for i in range(rows)],
        "tags": [[f"t{i % 3}"] * (i % 4) for i in range(rows)],
        "attrs": [{"k": i} for i in range(rows)],
        "at": [datetime.datetime(2026, 1, 1) + datetime.timedelta(minutes=i) for i in range(rows)],
        "region": [["eu", "us", "apac"][i % 3] for i in range(rows)],
    })  # fmt: skip
    pq.write_to_dataset(table, str(directory), partition_cols=["region"])
    return table


def _migrate(spark: Any, config: str, *sets: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    argv = ["--config", config, *[a for s in sets for a in ("--set", s)]]
    code = run("migrate_parquet", MigrateParquetConfig, module.migrate_parquet, argv,
               spark=spark, stdout=out)  # fmt: skip
    return code, json.loads(out.getvalue().splitlines()[-1])


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*[table[c].to_pylist() for c in sorted(table.column_names)], strict=True),
                  key=lambda r: r[sorted(table.column_names).index("id")])  # fmt: skip


def test_migration_is_verified_committed_once_and_exports_back(spark: Any, tmp_path: Path) -> None:
    source, uri, back = tmp_path / "pq", tmp_path / "t", tmp_path / "back"
    original = _dataset(source, 2_000)
    config = write_config(
        tmp_path / "m.yaml", table=str(uri), source=str(source), max_rows_per_file=500
    )
    code, summary = _migrate(spark, config)
    assert code == 0, summary
    assert summary["verified"] is True and summary["committed_version"] == 1
    assert (summary["rows_in"], summary["rows_out"], summary["files_in"]) == (2_000, 2_000, 3)
    migrated = fermion.dataset(str(uri)).to_table()
    assert set(migrated.column_names) == set(original.column_names)  # region from the paths
    assert _rows(migrated) == _rows(original.select(migrated.column_names))

    again_code, again = _migrate(spark, config)
    assert again_code == 0 and again["skipped"] is True and again["committed_version"] is None
    assert fermion.dataset(str(uri)).version == 1

    code, exported = _migrate(spark, config, "reverse=true", f"target={back}")
    assert code == 0 and exported["verified"] is True and exported["rows_out"] == 2_000
    assert exported["read_version"] == 1 and exported["committed_version"] is None
    assert _rows(pq.read_table(back).select(migrated.column_names)) == _rows(migrated)


def test_a_checksum_mismatch_aborts_the_write(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, uri = tmp_path / "pq", tmp_path / "t"
    _dataset(source, 300)
    real = module.column_checksums
    calls: list[int] = []

    def tampered(df: Any) -> dict[str, Any]:
        sums = real(df)
        calls.append(1)
        if len(calls) == 2:  # the written side
            sums["score"] = "0"
        return sums

    monkeypatch.setattr(module, "column_checksums", tampered)
    # Spark's checksums verify the Spark-read path; tasks that read the files with pyarrow
    # compare rows themselves (tests/jobs/test_file_tasks.py)
    config = write_config(
        tmp_path / "m.yaml", table=str(uri), source=str(source), file_reader="spark"
    )
    code, summary = _migrate(spark, config)
    assert code == 1 and summary["error"].startswith("VerificationError: column 'score'")
    assert not (uri / "_versions").exists() or not list((uri / "_versions").iterdir())
    assert not [p for p in (uri / "data").rglob("*") if p.is_file()]


def test_rerun_after_a_crash_before_commit_completes(spark: Any, tmp_path: Path) -> None:
    source, uri = tmp_path / "pq", tmp_path / "t"
    _dataset(source, 400)
    # a run that died after its tasks wrote files, before the commit
    df = spark.read.parquet(str(source))
    from fermion.spark.jobs.distributed import arrow_schema_of

    crashed = plan_write(str(uri), arrow_schema_of(df))
    assert execute_write_tasks(df, crashed, partitions=2)
    config = write_config(tmp_path / "m.yaml", table=str(uri), source=str(source))
    code, summary = _migrate(spark, config)
    assert code == 0 and summary["committed_version"] == 1 and summary["rows_out"] == 400
    assert fermion.dataset(str(uri)).count_rows() == 400  # the crashed files are not in it
    orphans = list((uri / "data" / crashed.write_id).iterdir())
    assert orphans  # left for vacuum
    vacuum = write_config(tmp_path / "v.yaml", table=str(uri), retention_hours=0)
    cleaned = run_job("vacuum", "--config", vacuum)
    assert cleaned.code == 0 and cleaned.summary["files_removed"] >= len(orphans)
    assert not any(p.is_file() for p in (uri / "data" / crashed.write_id).rglob("*"))
    assert fermion.dataset(str(uri)).count_rows() == 400


def test_existing_table_needs_mode_overwrite(spark: Any, tmp_path: Path) -> None:
    source, uri = tmp_path / "pq", tmp_path / "t"
    _dataset(source, 50)
    fermion.write_dataset(pa.table({"other": [1, 2]}), str(uri))
    config = write_config(tmp_path / "m.yaml", table=str(uri), source=str(source))
    code, summary = _migrate(spark, config)
    assert (
        code == 1
        and summary["error"].startswith("DatasetError:")
        and "mode: overwrite" in (summary["error"])
    )
    code, summary = _migrate(spark, config, "mode=overwrite")
    assert code == 0 and summary["committed_version"] == 2
    assert fermion.dataset(str(uri)).count_rows() == 50
    assert "other" not in fermion.dataset(str(uri)).schema.names


def test_migration_through_storage_options_and_a_manifest_store_with_write_properties(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a table on a filesystem without an atomic create, reachable only with its storage
    # options; FERMION_MANIFEST_STORE unset: the store comes from the config key
    monkeypatch.delenv(ENV_VAR, raising=False)
    source, root, db = tmp_path / "pq", tmp_path / "fs", str(tmp_path / "m.db")
    root.mkdir()
    _dataset(source, 300)
    options = {"path": str(root), "target_protocol": "file", "target_options": {"auto_mkdir": True}}
    config = write_config(
        tmp_path / "m.yaml", table="dir://t", source=str(source), storage_options=options,
        manifest_store=db, write_properties={"compression": "none", "page_size": "4096"},
    )  # fmt: skip
    code, summary = _migrate(spark, config)
    assert code == 0, summary
    assert summary["committed_version"] == 1 and SQLiteManifestStore(db).latest_version("dir://t")
    ds = fermion.dataset("dir://t", storage_options=options, manifest_store=db)
    assert ds.count_rows() == 300
    assert ds.manifest.config["fermion.write.compression"] == "none"
    assert ds.manifest.config["fermion.write.page_size"] == "4096"


def test_compare_checksums() -> None:
    compare_checksums({"rows": 1, "a": "5"}, {"rows": 1, "a": "5"})
    with pytest.raises(VerificationError, match="rows: 2 written != 1 in source"):
        compare_checksums({"rows": 1, "a": "5"}, {"rows": 2, "a": "5"})
