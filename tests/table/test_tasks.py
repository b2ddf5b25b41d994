"""The plan → execute → commit task API (docs/ARCHITECTURE.md, "Plan → execute → commit").

Executes run in separate processes (a ``forkserver`` pool: tasks and results are pickled
across), the way Spark executors run them. Bad inputs tried: results of another write or
task, a missing delete result, non-integer / null / missing batch-id columns, out-of-range
thresholds and row counts, unknown columns, JSON and bytes that are not what they claim.
"""

from __future__ import annotations

import json
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.errors import (
    BatchModeError,
    DatasetError,
    IncompatibleTransactionError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from fermion.format import FileReader
from fermion.table.codec import (
    fragment_from_bytes,
    fragment_from_dict,
    fragment_from_proto,
    fragment_stats,
    fragment_to_bytes,
    fragment_to_dict,
    fragment_to_proto,
)
from fermion.table.domain import DataFile
from fermion.table.operations import INPUT_KEY_PREFIX
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.tasks import (
    BATCH_ID_COLUMN_KEY,
    STATS_INDEX_NAME,
    DeletePlan,
    DeleteResult,
    FragmentInfo,
    IndexPlan,
    IndexResult,
    RewritePlan,
    RewriteResult,
    WritePlan,
    WriteResult,
    abort_rewrite,
    abort_write,
    commit_delete,
    commit_index,
    commit_rewrite,
    commit_write,
    execute_delete,
    execute_index,
    execute_rewrite,
    execute_write,
    input_recorded,
    plan_compaction,
    plan_delete,
    plan_index,
    plan_materialization,
    plan_write,
    resolve_write_schema,
    write_committed,
)
from fermion.table.tasks.model import loads_json
from tests.support.budget import examples
from tests.table.conftest import CTX


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"s{i}" for i in ids]})


def _in_other_process(function: Any, tasks: Any) -> list[Any]:
    with ProcessPoolExecutor(2, mp_context=CTX) as pool:
        return list(pool.map(function, tasks))


def _small_fragments(uri: str, fragments: int = 6, rows: int = 10) -> ft.Dataset:
    return ft.write_dataset(_rows(0, fragments * rows), uri, max_rows_per_file=rows)


# -- plain data ----------------------------------------------------------------------------


@settings(max_examples=examples(40))
@given(
    fid=st.one_of(st.none(), st.integers(0, 2**63 - 1)),
    rows=st.integers(0, 2**40),
    deleted=st.integers(0, 2**20),
    paths=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=3),
    low=st.integers(-(2**63), 2**63 - 1),
    text=st.text(max_size=10),
    blob=st.binary(max_size=10),
)
def test_fragment_info_round_trips(
    fid: int | None,
    rows: int,
    deleted: int,
    paths: list[str],
    low: int,
    text: str,
    blob: bytes,
) -> None:
    message = pb.Fragment(id=fid or 0, physical_rows=rows)
    for i, path in enumerate(paths):
        message.files.add(path=path, field_ids=[i, i + 1], size_bytes=i * 7, file_format="fermion")
    if fid is not None:
        message.deletion_file.CopyFrom(
            pb.DeletionFile(file_type=pb.DeletionFile.BITMAP, id=5, num_deleted_rows=deleted)
        )
    stats = message.stats.add(field_id=1, null_count=3)
    stats.min.int_value = low
    stats.max.string_value = text
    message.stats.add(field_id=2).min.binary_value = blob
    info = fragment_from_proto(message, committed=fid is not None)
    assert isinstance(info, FragmentInfo)  # the older name of Fragment
    assert info.id == fid
    assert info.live_rows == rows - (deleted if fid is not None else 0)
    assert info.files == tuple(
        DataFile(path, (i, i + 1), i * 7, "fermion") for i, path in enumerate(paths)
    )
    assert fragment_from_bytes(fragment_to_bytes(info)) == info
    assert fragment_from_dict(loads_json(json.dumps(fragment_to_dict(info)))) == info
    assert pickle.loads(pickle.dumps(info)) == info
    assert fragment_to_proto(info) == message
    assert fragment_stats(info) == list(message.stats)


@pytest.mark.parametrize("bad", [b"", b"X123", b"C\xff\xff\xff"])
def test_fragment_info_rejects_foreign_bytes(bad: bytes) -> None:
    with pytest.raises(InvalidArgumentError):
        fragment_from_bytes(bad)


@pytest.mark.parametrize("bad", ["", "[1]", '{"committed": true}', '{"fragment": 3}'])
def test_fragment_info_rejects_foreign_json(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        fragment_from_dict(loads_json(bad))


def test_every_plan_task_and_result_round_trips_through_json_and_pickle(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _small_fragments(uri)
    ds.delete(pc.field("id") == 3)
    write = plan_write(uri, _rows(0, 1).schema)
    objects: list[Any] = [write, execute_write(write, _rows(100, 5), task_id="w")]
    rewrite = plan_compaction(uri, target_rows_per_fragment=100)
    objects += [rewrite, *rewrite.tasks, execute_rewrite(rewrite.tasks[0])]
    index = plan_index(uri)
    objects += [index, *index.tasks, execute_index(index.tasks[0])]
    delete = plan_delete(uri, "id < 15 AND v LIKE 's1%'")
    objects += [delete, *delete.tasks, execute_delete(delete.tasks[0])]
    for value in objects:
        again = type(value).from_json(value.to_json())
        assert again.to_dict() == value.to_dict(), type(value)
        assert pickle.loads(pickle.dumps(value)).to_dict() == value.to_dict()
        json.loads(value.to_json())  # plain JSON text
    assert {type(v) for v in objects} >= {
        WritePlan, WriteResult, RewritePlan, RewriteResult, IndexPlan, IndexResult,
        DeletePlan, DeleteResult,
    }  # fmt: skip
    with pytest.raises(InvalidArgumentError):
        WritePlan.from_json('{"uri": "x"}')


# -- write ---------------------------------------------------------------------------------


def _execute_write(args: tuple[WritePlan, int]) -> WriteResult:
    plan, start = args
    return execute_write(plan, _rows(start, 50), task_id=str(start))


def test_write_executed_in_other_processes_commits_once(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    plan = plan_write(uri, _rows(0, 1).schema, max_rows_per_file=20)
    results = _in_other_process(_execute_write, [(plan, s) for s in (0, 50, 100)])
    assert all(f.id is None for r in results for f in r.fragments)
    assert all(d.path.startswith(f"data/{plan.write_id}/") for r in results for f in r.fragments
               for d in f.files)  # fmt: skip
    summary = commit_write(plan, results, properties={"job": "test"})
    assert (summary.committed, summary.version, summary.rows_added) == (True, 1, 150)
    ds = ft.dataset(uri)
    assert sorted(ds.to_table()["id"].to_pylist()) == list(range(150))
    assert len(ds.fragments) == 9  # 3 x (20 + 20 + 10)
    assert ds.manifest.summary.properties["job"] == "test"
    again = plan_write(uri, _rows(0, 1).schema)
    summary2 = commit_write(again, [execute_write(again, _rows(150, 5))])
    assert (summary2.operation, summary2.version, ft.dataset(uri).count_rows()) == (
        "append", 2, 155,
    )  # fmt: skip


def test_append_plan_refuses_other_columns_before_anything_is_written(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(0, 3), uri)
    before = sorted((tmp_path / "t" / "data").glob("**/*"))  # the first write's directory
    with pytest.raises(SchemaMismatchError):
        plan_write(uri, pa.schema([("id", pa.string())]))
    assert sorted((tmp_path / "t" / "data").glob("**/*")) == before
    assert ft.dataset(uri).version == 1


def test_overwrite_plan_replaces_rows_and_schema(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(0, 3), uri)
    new = pa.table({"z": [1.5]})
    plan = plan_write(uri, new.schema, mode="overwrite")
    commit_write(plan, [execute_write(plan, new)])
    ds = ft.dataset(uri)
    assert ds.to_table().to_pydict() == {"z": [1.5]}
    assert ds.table_schema.field_ids[0] > 1  # fresh ids, never reused


def test_resolve_write_schema_is_the_one_rule_of_every_writer(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    data = _rows(0, 1).schema
    assert resolve_write_schema(None, data).field_ids == (0, 1)
    ds = ft.write_dataset(_rows(0, 2), uri)
    latest = ds.manifest
    assert resolve_write_schema(latest, data) == ds.table_schema
    assert resolve_write_schema(latest, data, mode="overwrite") == ds.table_schema
    other = pa.schema([("id", pa.int64()), ("w", pa.float64())])
    fresh = resolve_write_schema(latest, other, mode="overwrite")
    assert fresh.field_ids == (2, 3)  # above every id the table used
    with pytest.raises(SchemaMismatchError):
        resolve_write_schema(latest, other)
    with pytest.raises(InvalidArgumentError, match="mode"):
        resolve_write_schema(latest, data, mode="create")  # type: ignore[arg-type]
    # write_dataset and plan_write resolve the same way
    assert plan_write(uri, other, mode="overwrite").schema == fresh
    rows = pa.table({"id": pa.array([1], pa.int64()), "w": [0.5]})
    assert ft.write_dataset(rows, uri, mode="overwrite").table_schema == fresh


def test_results_of_another_write_are_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    one, two = plan_write(uri, _rows(0, 1).schema), plan_write(uri, _rows(0, 1).schema)
    with pytest.raises(InvalidArgumentError, match="belongs to write"):
        commit_write(one, [execute_write(two, _rows(0, 2))])
    with pytest.raises(DatasetError):
        ft.dataset(uri)


def test_abort_removes_reported_and_unreported_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(0, 3), uri)
    plan = plan_write(uri, _rows(0, 1).schema, max_rows_per_file=2)
    reported = execute_write(plan, _rows(10, 4), task_id="0")
    execute_write(plan, _rows(20, 4), task_id="1")  # a task that died before reporting
    files = list((tmp_path / "t" / "data" / plan.write_id).iterdir())
    assert len(files) == 4
    assert abort_write(plan, [reported, None]) == 4
    assert not list((tmp_path / "t" / "data" / plan.write_id).iterdir())
    assert ft.dataset(uri).count_rows() == 3


def _referenced_paths(uri: str) -> set[str]:
    """Every data file any version of the table references."""
    storage = ft.dataset(uri).storage
    return {
        d.path
        for version in storage.versions()
        for f in ft.dataset(uri, version=version).fragments
        for d in f.files
    }


def test_abort_after_a_compaction_rewrote_the_write_keeps_what_versions_reference(
    tmp_path: Path,
) -> None:
    """The write committed, a compaction then rewrote its fragments, and only then did the
    writer's failure handler run: the older version still references the write's files, so
    the abort must leave them (time travel to that version keeps working)."""
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(0, 3), uri)  # version 1
    plan = plan_write(uri, _rows(0, 1).schema, max_rows_per_file=2)
    results = [execute_write(plan, _rows(10, 4), task_id="0")]
    assert commit_write(plan, results).version == 2
    compaction = plan_compaction(uri, target_rows_per_fragment=100)
    assert commit_rewrite(compaction, [execute_rewrite(t) for t in compaction.tasks]).version == 3
    latest = {d.path for f in ft.dataset(uri).fragments for d in f.files}
    assert not any(p.startswith(plan.prefix + "/") for p in latest)  # rewritten away
    assert abort_write(plan, results) == 0
    for path in _referenced_paths(uri):
        assert (tmp_path / "t" / path).is_file(), path
    assert sorted(ft.dataset(uri, version=2).to_table()["id"].to_pylist()) == [0, 1, 2] + list(
        range(10, 14)
    )
    assert ft.dataset(uri, version=3).count_rows() == 7


def test_write_committed_reads_every_version_after_the_plan(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(0, 3), uri)
    plan = plan_write(uri, _rows(0, 1).schema, max_rows_per_file=2)
    results = [execute_write(plan, _rows(10, 4))]
    ft.write_dataset(_rows(50, 1), uri, mode="append")  # another writer's version
    assert not write_committed(plan)
    commit_write(plan, results)
    assert write_committed(plan)
    compaction = plan_compaction(uri, target_rows_per_fragment=100)
    commit_rewrite(compaction, [execute_rewrite(t) for t in compaction.tasks])
    assert all(
        not d.path.startswith(plan.prefix) for f in ft.dataset(uri).fragments for d in f.files
    )
    assert write_committed(plan)  # only the version it made names its files now
    other = plan_write(uri, _rows(0, 1).schema)
    execute_write(other, _rows(0, 2))
    assert not write_committed(other)


def test_abort_rewrite_removes_only_files_no_version_references(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=6, rows=1)  # version 1: six one-row fragments
    first = plan_compaction(uri, target_rows_per_fragment=3)
    first_results = [execute_rewrite(t) for t in first.tasks]
    assert commit_rewrite(first, first_results).version == 2
    second = plan_compaction(uri, target_rows_per_fragment=100)
    assert commit_rewrite(second, [execute_rewrite(t) for t in second.tasks]).version == 3
    # the first rewrite committed and was rewritten since: version 2 still reads its files
    assert abort_rewrite(first, first_results) == 0
    assert sorted(ft.dataset(uri, version=2).to_table()["id"].to_pylist()) == list(range(6))
    for path in _referenced_paths(uri):
        assert (tmp_path / "t" / path).is_file(), path
    # a rewrite that never committed: its reported and unreported files go
    ft.write_dataset(_rows(10, 2), uri, mode="append", max_rows_per_file=1)
    failed = plan_compaction(uri, target_rows_per_fragment=100)
    reported = execute_rewrite(failed.tasks[0])
    written = list((tmp_path / "t" / "data" / failed.write_id).iterdir())
    assert written
    assert abort_rewrite(failed, [reported, None]) == len(written)
    assert not list((tmp_path / "t" / "data" / failed.write_id).iterdir())
    assert ft.dataset(uri).count_rows() == 8


def test_input_recorded_answers_from_the_latest_version(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    key = INPUT_KEY_PREFIX + "events.dt=1"
    assert input_recorded(uri, key) is None  # no table yet
    plan = plan_write(uri, _rows(0, 1).schema)
    commit_write(plan, [execute_write(plan, _rows(0, 2))], table_config={key: "{}"})
    assert input_recorded(uri, key) == 1
    ft.write_dataset(_rows(5, 1), uri, mode="append")
    assert input_recorded(uri, key) == 2  # the record carries over
    assert input_recorded(uri, INPUT_KEY_PREFIX + "events.dt=2") is None
    for bad in ("events.dt=1", INPUT_KEY_PREFIX):
        with pytest.raises(InvalidArgumentError, match="input key"):
            input_recorded(uri, bad)


def test_table_created_concurrently_turns_a_create_into_an_append(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    mine = plan_write(uri, _rows(0, 1).schema)
    ft.write_dataset(_rows(100, 2), uri)  # someone else creates it first, same schema
    summary = commit_write(mine, [execute_write(mine, _rows(0, 3))])
    assert (summary.operation, summary.version) == ("append", 2)
    assert ft.dataset(uri).count_rows() == 5
    other = plan_write(str(tmp_path / "u"), pa.schema([("q", pa.int8())]))
    ft.write_dataset(_rows(0, 1), str(tmp_path / "u"))
    with pytest.raises(SchemaMismatchError):
        commit_write(other, [execute_write(other, pa.table({"q": pa.array([1], pa.int8())}))])


def test_the_same_input_recorded_by_two_concurrent_appends_commits_once(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(_rows(0, 1), uri)
    key = {f"{INPUT_KEY_PREFIX}day=2024-05-01": "loaded"}
    first, second = plan_write(uri, _rows(0, 1).schema), plan_write(uri, _rows(0, 1).schema)
    r1, r2 = execute_write(first, _rows(10, 2)), execute_write(second, _rows(10, 2))
    commit_write(first, [r1], table_config=key)
    with pytest.raises(IncompatibleTransactionError):
        commit_write(second, [r2], table_config=key)
    other = plan_write(uri, _rows(0, 1).schema)  # another input is fine
    commit_write(other, [execute_write(other, _rows(20, 1))], table_config={"x.other": "1"})
    ds = ft.dataset(uri)
    assert ds.count_rows() == 4 and ds.manifest.config[f"{INPUT_KEY_PREFIX}day=2024-05-01"]


def test_the_same_input_creating_a_table_twice_concurrently_commits_once(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    key = {f"{INPUT_KEY_PREFIX}day=1": "loaded"}
    first, second = plan_write(uri, _rows(0, 1).schema), plan_write(uri, _rows(0, 1).schema)
    r1, r2 = execute_write(first, _rows(0, 2)), execute_write(second, _rows(0, 2))
    assert commit_write(first, [r1], table_config=key).version == 1
    with pytest.raises(IncompatibleTransactionError, match="loaded concurrently"):
        commit_write(second, [r2], table_config=key)
    assert ft.dataset(uri).count_rows() == 2


# -- batch mode ----------------------------------------------------------------------------


def _batched(ids: list[int]) -> pa.Table:
    return pa.table({"b": pa.array(ids, pa.int64()), "x": pa.array(range(len(ids)), pa.int32())})


def test_batch_mode_never_splits_a_batch_across_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ids = [1] * 3 + [2] * 4 + [3] * 1 + [7] * 5 + [4] * 2  # 4 < 7: a new file starts
    data = _batched(ids)
    plan = plan_write(uri, data.schema, batch_id_column="b", max_rows_per_file=8)
    result = execute_write(plan, data.to_batches(max_chunksize=2))  # runs span input batches
    commit_write(plan, [result])
    ds = ft.dataset(uri)
    assert ds.manifest.config[BATCH_ID_COLUMN_KEY] == "b"
    seen: dict[int, str] = {}
    for fragment in ds.fragments:
        path = fragment.files[0].path
        with FileReader(ds.storage.path(path)) as reader:
            table = reader.read(columns=["b", "_batch_id"])
            assert table["b"].to_pylist() == table["_batch_id"].to_pylist()
            for batch_id in set(table["b"].to_pylist()):
                assert seen.setdefault(batch_id, path) == path, f"batch {batch_id} split"
                assert len(reader.read_batches([batch_id])) == ids.count(batch_id)
    assert [f.physical_rows for f in ds.fragments] == [8, 5, 2]
    assert ds.to_table()["b"].to_pylist() == ids


@pytest.mark.parametrize(
    ("column", "data", "error"),
    [
        ("b", pa.table({"b": pa.array([1, None], pa.int64())}), BatchModeError),
        ("b", pa.table({"b": ["x", "y"]}), InvalidArgumentError),
        ("nope", pa.table({"b": [1, 2]}), InvalidArgumentError),
    ],
)
def test_bad_batch_id_columns_are_refused(
    tmp_path: Path, column: str, data: pa.Table, error: type[Exception]
) -> None:
    uri = str(tmp_path / "t")
    with pytest.raises(error):
        plan = plan_write(uri, data.schema, batch_id_column=column)
        execute_write(plan, data)


def test_compaction_keeps_batches_whole(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    for start in range(0, 40, 10):
        data = _batched([start + i // 3 for i in range(10)])  # batches of 3 rows (one of 1)
        plan = plan_write(uri, data.schema, batch_id_column="b")
        commit_write(plan, [execute_write(plan, data)])
    plan = plan_compaction(uri, target_rows_per_fragment=100)
    commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    ds = ft.dataset(uri)
    assert len(ds.fragments) == 1
    with FileReader(ds.storage.path(ds.fragments[0].files[0].path)) as reader:
        assert (
            reader.read(columns=["_batch_id"])["_batch_id"].to_pylist()
            == ds.to_table()["b"].to_pylist()
        )


# -- compaction and materialisation --------------------------------------------------------


def test_compaction_executed_in_other_processes(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _small_fragments(uri, fragments=8)
    ds.delete("id IN (1, 2, 77)")
    plan = plan_compaction(uri, target_rows_per_fragment=35)
    assert [len(t.fragments) for t in plan.tasks] == [3, 3, 2]  # 8+10+10, then +10 > 35
    results = _in_other_process(execute_rewrite, plan.tasks)
    summary = commit_rewrite(plan, results)
    assert summary.committed and summary.fragments_removed == 8
    after = ft.dataset(uri)
    expected = sorted(set(range(80)) - {1, 2, 77})
    assert sorted(after.to_table()["id"].to_pylist()) == expected
    assert after.manifest.summary.properties["rewrite"] == "compaction"


def test_compaction_skips_groups_a_concurrent_delete_touched(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=4)
    plan = plan_compaction(uri, target_rows_per_fragment=20)  # groups {0,1}, {2,3}
    assert len(plan.tasks) == 2
    results = [execute_rewrite(t) for t in plan.tasks]
    ft.dataset(uri).delete("id = 5")  # lands first, in fragment 0 (group "0")
    summary = commit_rewrite(plan, results)
    assert summary.committed and summary.skipped_tasks == ("0",)
    assert summary.replanned == 1
    ids = ft.dataset(uri).to_table()["id"].to_pylist()
    assert 5 not in ids and sorted(ids) == sorted(set(range(40)) - {5})


def test_compaction_with_every_group_stale_commits_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=2)
    plan = plan_compaction(uri, target_rows_per_fragment=20)
    results = [execute_rewrite(t) for t in plan.tasks]
    ft.dataset(uri).delete("id = 15")
    summary = commit_rewrite(plan, results)
    assert not summary.committed and summary.skipped_tasks == ("0",)
    assert ft.dataset(uri).version == 2 and 15 not in ft.dataset(uri).to_table()["id"].to_pylist()


def test_materialization_rewrites_heavily_deleted_fragments_only(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _small_fragments(uri, fragments=3)
    ds.delete("id < 6 OR id = 15")  # fragment 0: 60% deleted, fragment 1: 10%
    plan = plan_materialization(uri, threshold=0.5)
    assert [t.fragments[0].id for t in plan.tasks] == [0]
    results = _in_other_process(execute_rewrite, plan.tasks)
    commit_rewrite(plan, results)
    after = ft.dataset(uri)
    assert [f.HasField("deletion_file") for f in after.manifest.fragments] == [False, True, False]
    assert after.count_rows() == 30 - 7
    with pytest.raises(InvalidArgumentError):
        plan_materialization(uri, threshold=1.0)
    with pytest.raises(InvalidArgumentError):
        plan_compaction(uri, target_rows_per_fragment=0)


def test_rewrite_results_that_lost_rows_are_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=3)
    plan = plan_compaction(uri, target_rows_per_fragment=100)
    good = execute_rewrite(plan.tasks[0])
    short = RewriteResult(good.task_id, good.old_fragment_ids, good.new_fragments[:0], 0)
    with pytest.raises(InvalidArgumentError, match="live rows"):
        commit_rewrite(plan, [short])
    with pytest.raises(InvalidArgumentError, match="unknown task"):
        commit_rewrite(plan, [RewriteResult("9", (0,), (), 30)])
    assert ft.dataset(uri).version == 1


# -- statistics rebuild ----------------------------------------------------------------------


def test_index_rebuild_in_other_processes_and_only_stale_next_time(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _small_fragments(uri, fragments=4)
    ds.delete("id >= 35")
    plan = plan_index(uri, columns=["id"])
    assert len(plan.tasks) == 4
    summary = commit_index(plan, _in_other_process(execute_index, plan.tasks))
    assert summary.committed and summary.operation == "create_index"
    after = ft.dataset(uri)
    (index,) = [i for i in after.manifest.indices if i.name == STATS_INDEX_NAME]
    assert sorted(index.fragment_ids) == [0, 1, 2, 3]
    last = after.manifest.fragments[3].stats[0]
    assert (last.min.int_value, last.max.int_value) == (30, 34)  # live rows only
    assert plan_index(uri, columns=["id"]).tasks == ()
    ft.write_dataset(_rows(100, 5), uri, mode="append")
    assert [t.fragments[0].id for t in plan_index(uri).tasks] == [4]
    with pytest.raises(InvalidArgumentError):
        plan_index(uri, columns=["nope"])


def test_index_rebuild_racing_compaction_never_names_removed_fragments(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=4)
    ft.write_dataset(_rows(1000, 100), uri, mode="append")  # a big fragment compaction keeps
    plan = plan_index(uri)
    results = [execute_index(t) for t in plan.tasks]
    ft.dataset(uri).compact_files(target_rows_per_fragment=50)  # removes fragments 0..3
    summary = commit_index(plan, results)
    assert summary.committed and summary.replanned == 1
    assert sorted(summary.skipped_tasks) == ["0", "1", "2", "3"]
    after = ft.dataset(uri)
    present = {f.id for f in after.fragments}
    for index in after.manifest.indices:
        assert set(index.fragment_ids) <= present


# -- delete ---------------------------------------------------------------------------------


def test_delete_executed_in_other_processes(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=5)
    plan = plan_delete(uri, "id >= 15 AND id < 32")
    assert [t.fragments[0].id for t in plan.tasks] == [1, 2, 3]  # pruned by statistics
    summary = commit_delete(plan, _in_other_process(execute_delete, plan.tasks))
    assert summary.rows_deleted == 17 and summary.fragments_removed == 1
    ids = ft.dataset(uri).to_table()["id"].to_pylist()
    assert sorted(ids) == [i for i in range(50) if not 15 <= i < 32]


def test_delete_needs_every_result(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=3)
    plan = plan_delete(uri, pc.field("id") > 5)
    results = [execute_delete(t) for t in plan.tasks]
    with pytest.raises(InvalidArgumentError, match="one result per task"):
        commit_delete(plan, results[:-1])
    assert ft.dataset(uri).version == 1


def test_delete_overlapping_a_concurrent_delete_is_planned_again(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=2)
    plan = plan_delete(uri, "id BETWEEN 3 AND 6")
    results = [execute_delete(t) for t in plan.tasks]
    ft.dataset(uri).delete("id IN (4, 8)")  # overlaps row 4
    summary = commit_delete(plan, results)
    assert summary.committed and summary.replanned == 1
    ids = ft.dataset(uri).to_table()["id"].to_pylist()
    assert sorted(ids) == [i for i in range(20) if i not in (3, 4, 5, 6, 8)]


@pytest.mark.parametrize(
    ("predicate", "error"),
    [
        ("nope = 1", "no column"),
        ("id = ", "cannot parse"),
        ("1 = 1", "not supported"),
        (3, "SQL string or"),
    ],
)
def test_bad_delete_predicates_raise_typed_errors(
    tmp_path: Path, predicate: Any, error: str
) -> None:
    uri = str(tmp_path / "t")
    _small_fragments(uri, fragments=1)
    with pytest.raises((InvalidArgumentError, KeyError), match=error):
        plan_delete(uri, predicate)
    assert ft.dataset(uri).version == 1


def test_tasks_on_a_missing_table_raise_dataset_error(tmp_path: Path) -> None:
    for plan in (plan_compaction, plan_index, plan_materialization):
        with pytest.raises(DatasetError):
            plan(str(tmp_path / "none"))
    with pytest.raises(DatasetError):
        plan_delete(str(tmp_path / "none"), "x = 1")
