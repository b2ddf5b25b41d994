"""The vacuum job end to end: ``python jobs/vacuum.py`` and ``spark-submit``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa

import fermion
from tests.jobs.helpers import CONF, run_job, submit_job, write_config


def _table_with_history(uri: Path, versions: int) -> None:
    fermion.write_dataset(pa.table({"x": [0]}), str(uri))
    for i in range(1, versions):
        fermion.write_dataset(pa.table({"x": [i]}), str(uri), mode="overwrite")


def _age_everything(uri: Path, hours: float) -> None:
    """Backdate every file (manifests carry their own timestamp; orphans use mtimes)."""
    past = time.time() - hours * 3600
    for root, _, names in os.walk(uri):
        for name in names:
            os.utime(os.path.join(root, name), (past, past))


def test_vacuum_removes_old_versions_and_orphans(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _table_with_history(uri, 3)
    orphan = uri / "data" / "orphan.fermion"
    orphan.write_bytes(b"left by a crashed writer")
    _age_everything(uri, 5)
    config = write_config(tmp_path / "vacuum.yaml", table=str(uri), retention_hours=0)

    # orphans younger than orphan_retention_hours stay; versions go
    kept = run_job("vacuum", "--config", config, "--set", "orphan_retention_hours=10")
    assert kept.code == 0, kept.stderr
    assert kept.summary["status"] == "ok" and kept.summary["versions_removed"] == 2
    assert kept.summary["read_version"] == 3 and kept.summary["committed_version"] is None
    assert orphan.exists()

    done = run_job("vacuum", "--config", config, "--set", "orphan_retention_hours=1")
    assert done.code == 0 and done.summary["versions_removed"] == 0
    assert done.summary["files_removed"] >= 1 and not orphan.exists()
    assert fermion.dataset(str(uri)).to_table().to_pydict() == {"x": [2]}
    assert [v.version for v in fermion.dataset(str(uri)).versions()] == [3]
    assert "INFO fermion.jobs.vacuum" in done.stderr


def test_vacuum_of_a_missing_table_fails_with_exit_1(tmp_path: Path) -> None:
    config = write_config(tmp_path / "vacuum.yaml", table=str(tmp_path / "none"))
    failed = run_job("vacuum", "--config", config)
    assert failed.code == 1 and failed.summary["status"] == "error"
    assert failed.summary["error"].startswith("DatasetError: ")


def test_vacuum_with_a_bad_config_exits_2_and_touches_nothing(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _table_with_history(uri, 2)
    _age_everything(uri, 5)
    config = write_config(tmp_path / "vacuum.yaml", table=str(uri), retention_hour=0)
    failed = run_job("vacuum", "--config", config)
    assert failed.code == 2 and failed.summary["status"] == "error"
    assert f"{config}: key 'retention_hour': unknown key" in failed.summary["error"]
    assert len(fermion.dataset(str(uri)).versions()) == 2


def test_vacuum_through_spark_submit_with_the_local_environment(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    _table_with_history(uri, 2)
    submitted = submit_job(
        "vacuum", "--config", str(CONF / "vacuum.yaml"), "--env", "local",
        "--set", f"table={uri}", "--set", "retention_hours=0",
    )  # fmt: skip
    assert submitted.code == 0, submitted.stderr[-3000:]
    assert submitted.summary["status"] == "ok" and submitted.summary["versions_removed"] == 1
    assert submitted.summary["table"] == str(uri)
