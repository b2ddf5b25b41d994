"""The jobs' write failure handler (``fermion.spark.jobs.distributed.write_or_abort``).

No Spark session is needed: the work handed to ``write_or_abort`` writes and commits
through the task API in this process, as the jobs' driver does after the Spark tasks
reported, and then fails.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest

import fermion.table as ft
from fermion.spark.jobs.distributed import write_or_abort
from fermion.table.tasks import (
    WriteResult,
    commit_rewrite,
    commit_write,
    execute_rewrite,
    execute_write,
    plan_compaction,
    plan_write,
)

_LOG = logging.getLogger("tests.jobs.distributed")


class _JobFailed(RuntimeError):
    """The failure the work raises after its commit landed."""


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


def test_a_failure_after_a_compaction_rewrote_the_write_keeps_every_version_readable(
    tmp_path: Path,
) -> None:
    """The write commits, a compaction rewrites its fragments before the job's failure
    handler runs: the handler must remove nothing a version references."""
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(0, 3), uri)  # version 1
    plan = plan_write(uri, _rows(0, 1).schema, max_rows_per_file=2)

    def work(results: list[WriteResult]) -> None:
        results.append(execute_write(plan, _rows(10, 4), task_id="0"))
        commit_write(plan, results)  # version 2
        compaction = plan_compaction(uri, target_rows_per_fragment=100)
        commit_rewrite(compaction, [execute_rewrite(t) for t in compaction.tasks])  # 3
        raise _JobFailed("the job failed after its commit")

    with pytest.raises(_JobFailed):
        write_or_abort(plan, work, _LOG)
    assert ft.dataset(uri).version == 3
    written = ft.dataset(uri, version=2)
    assert sorted(written.to_table()["id"].to_pylist()) == [0, 1, 2, 10, 11, 12, 13]
    for fragment in written.fragments:
        for data_file in fragment.files:
            assert (tmp_path / "t" / data_file.path).is_file(), data_file.path


def test_a_failure_before_the_commit_removes_the_write(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(0, 3), uri)
    plan = plan_write(uri, _rows(0, 1).schema, max_rows_per_file=2)

    def work(results: list[WriteResult]) -> None:
        results.append(execute_write(plan, _rows(10, 4), task_id="0"))
        execute_write(plan, _rows(20, 2), task_id="1")  # a task that never reported
        raise _JobFailed("verification failed")

    with pytest.raises(_JobFailed):
        write_or_abort(plan, work, _LOG)
    assert not list((tmp_path / "t" / plan.prefix).iterdir())
    assert ft.dataset(uri).count_rows() == 3
