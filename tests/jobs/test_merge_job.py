"""The merge job end to end on local Spark: the result equals ``merge_insert``'s upsert of
the same source, a re-run commits nothing, and every bad input is a typed error with
nothing committed (no version, no file left behind)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion
import fermion.table as ft
from fermion.spark.jobs.config import MergeConfig
from fermion.spark.jobs.merge import merge
from fermion.spark.jobs.runner import EXIT_CONFIG, EXIT_FAILURE, run
from tests.jobs.helpers import run_job, write_config

SCHEMA = pa.schema([("id", pa.int64()), ("g", pa.string()), ("v", pa.float64())])


def _table(ids: list[int], tag: str) -> pa.Table:
    return pa.table(
        {"id": ids, "g": [f"{tag}{i % 3}" for i in ids], "v": [float(i) * 1.5 for i in ids]},
        schema=SCHEMA,
    )


def _source(directory: Path, table: pa.Table, files: int = 2) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    step = -(-table.num_rows // files)
    for k in range(files):
        pq.write_table(table.slice(k * step, step), directory / f"part-{k}.parquet")
    return str(directory)


def _merge(spark: Any, config: str, *sets: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    argv = ["--config", config, *[a for s in sets for a in ("--set", s)]]
    code = run("merge", MergeConfig, merge, argv, spark=spark, stdout=out)
    return code, json.loads(out.getvalue().splitlines()[-1])


def _files(uri: Path) -> set[str]:
    return {str(p.relative_to(uri)) for p in uri.rglob("*") if p.is_file()}


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["id"], r["g"], r["v"]))


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two equal tables (0..1999 in 4 fragments): one for the job, one for merge_insert."""
    job, local = tmp_path / "job", tmp_path / "local"
    base = _table(list(range(2_000)), "a")
    for uri in (job, local):
        ft.write_dataset(base, uri, max_rows_per_file=500)
    return job, local


def test_merge_equals_merge_insert_and_runs_once_per_input(spark: Any, tmp_path: Path) -> None:
    job, local = _pair(tmp_path)
    # 20 updates spread over every fragment, 30 inserts
    source_rows = _table([*range(0, 2_000, 100), *range(5_000, 5_030)], "b")
    source = _source(tmp_path / "in", source_rows)
    config = write_config(
        tmp_path / "merge.yaml", table=str(job), source=source, key_columns=["id"],
        max_rows_per_file=25,
    )  # fmt: skip
    code, summary = _merge(spark, config)
    assert code == 0, summary
    assert summary["status"] == "ok" and summary["skipped"] is False
    assert (summary["read_version"], summary["committed_version"]) == (1, 2)
    assert (summary["rows_updated"], summary["rows_inserted"]) == (20, 30)
    assert summary["rows_in"] == summary["rows_out"] == 50

    expected = (
        ft.dataset(local).merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().execute(source_rows)
    )  # fmt: skip
    assert (expected.num_updated_rows, expected.num_inserted_rows) == (20, 30)
    ours = fermion.dataset(str(job))
    assert ours.version == 2 and ours.manifest.summary.operation == "merge_insert"
    assert _rows(ours.to_table()) == _rows(ft.dataset(local).to_table())
    assert ft.dataset(job, version=1).count_rows() == 2_000  # older readers unaffected
    assert any(k.startswith("fermion.input.merge.") for k in ours.manifest.config)
    assert ours.versions()[-1].summary["fermion.job"] == "merge"

    files = _files(job)
    again_code, again = _merge(spark, config)
    assert again_code == 0 and again["skipped"] is True and again["committed_version"] is None
    assert "already merged (version 2)" in again["reason"]
    assert fermion.dataset(str(job)).version == 2 and _files(job) == files


def test_merge_deleting_rows_the_source_lacks_equals_merge_insert(
    spark: Any, tmp_path: Path
) -> None:
    job, local = _pair(tmp_path)
    source_rows = _table([*range(0, 2_000, 100), *range(5_000, 5_010)], "b")
    config = write_config(
        tmp_path / "merge.yaml", table=str(job), source=_source(tmp_path / "in", source_rows),
        key_columns=["id"], when_not_matched_by_source="delete", delete_predicate="id < 1000",
    )  # fmt: skip
    code, summary = _merge(spark, config)
    assert code == 0, summary
    # 20 matched, 10 inserted; of the 1,980 unmatched rows the 990 below 1000 are deleted
    assert (summary["rows_updated"], summary["rows_inserted"]) == (20, 10), summary
    assert summary["rows_deleted"] == 990, summary
    expected = (
        ft.dataset(local).merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().when_not_matched_by_source_delete("id < 1000")
        .execute(source_rows)
    )  # fmt: skip
    assert expected.num_deleted_rows == 990
    ours = fermion.dataset(str(job))
    assert ours.version == 2 and ours.count_rows() == 2_000 - 990 + 10
    assert _rows(ours.to_table()) == _rows(ft.dataset(local).to_table())


def test_a_key_matching_several_rows_updates_each_as_merge_insert(
    spark: Any, tmp_path: Path
) -> None:
    job, local = tmp_path / "job", tmp_path / "local"
    base = _table([1, 2, 2, 3], "a")  # the table holds key 2 twice
    for uri in (job, local):
        ft.write_dataset(base, uri, max_rows_per_file=2)
    source_rows = _table([2, 9], "z")
    config = write_config(
        tmp_path / "merge.yaml", table=str(job), source=_source(tmp_path / "in", source_rows),
        key_columns=["id"], input_key="day-1",
    )  # fmt: skip
    code, summary = _merge(spark, config)
    assert code == 0, summary
    assert (summary["rows_updated"], summary["rows_inserted"]) == (2, 1)
    ft.dataset(local).merge_insert("id").when_matched_update_all().when_not_matched_insert_all(
    ).execute(source_rows)  # fmt: skip
    assert _rows(ft.dataset(job).to_table()) == _rows(ft.dataset(local).to_table())


BAD_INPUTS = [
    # (name, source table, extra --set, error type in the summary)
    (
        "key missing from the source",
        pa.table({"g": ["x"], "v": [1.0]}),
        (),
        "SchemaMismatchError: merge: the source lacks the key columns ['id']",
    ),
    (
        "duplicate source keys",
        _table([3, 3, 7, 7, 8], "d"),
        (),
        "InvalidArgumentError: upsert: 2 keys occur more than once in the source: 3, 7",
    ),
    (
        "null source key",
        pa.table({"id": pa.array([1, None], pa.int64()), "g": ["x", "y"], "v": [1.0, 2.0]}),
        (),
        "InvalidArgumentError: upsert: the source has 1 null keys",
    ),
    (
        "type mismatch",
        pa.table({"id": [1, 2], "g": ["x", "y"], "v": ["1.0", "2.0"]}),
        (),
        "SchemaMismatchError: merge: source column 'v' has type string, the table has double",
    ),
    (
        "column the table lacks",
        _table([1], "e").append_column("extra", pa.array([1])),
        (),
        "SchemaMismatchError: merge: the table has no columns ['extra']",
    ),
    (
        "key column the table lacks",
        _table([1], "e"),
        ("key_columns=nope",),
        "SchemaMismatchError: merge: the source lacks the key columns ['nope']",
    ),
]


@pytest.mark.parametrize(
    ("name", "bad", "sets", "error"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS]
)
def test_bad_inputs_are_typed_errors_and_commit_nothing(
    spark: Any, tmp_path: Path, name: str, bad: pa.Table, sets: tuple[str, ...], error: str
) -> None:
    job, _ = _pair(tmp_path)
    before = _files(job)
    config = write_config(
        tmp_path / "merge.yaml", table=str(job), source=_source(tmp_path / "in", bad, files=1),
        key_columns=["id"],
    )  # fmt: skip
    code, summary = _merge(spark, config, *sets)
    assert code == EXIT_FAILURE and summary["status"] == "error", summary
    assert summary["error"].startswith(error), summary["error"]
    assert fermion.dataset(str(job)).version == 1
    assert _files(job) == before


def test_bad_configs_exit_2(spark: Any, tmp_path: Path) -> None:
    job, _ = _pair(tmp_path)
    source = _source(tmp_path / "in", _table([1], "c"), files=1)
    for keys, message in [
        ({"key_columns": ["id"], "when_matched": "update"}, "key 'when_matched': unknown key"),
        ({}, "key 'key_columns': required key is missing"),
        ({"key_columns": []}, "key 'key_columns': needs distinct column names"),
        ({"key_columns": ["id", "id"]}, "key 'key_columns': needs distinct column names"),
        ({"key_columns": "id"}, "key 'key_columns': expected list[str]"),
        (
            {"key_columns": ["id"], "delete_predicate": "id > 1"},
            "key 'delete_predicate': only with when_not_matched_by_source: delete",
        ),
        (
            {"key_columns": ["id"], "when_not_matched_by_source": "drop"},
            "key 'when_not_matched_by_source'",
        ),
    ]:
        config = write_config(tmp_path / "merge.yaml", table=str(job), source=source, **keys)
        code, summary = _merge(spark, config)
        assert code == EXIT_CONFIG, summary
        assert summary["error"].startswith("ConfigError") and message in summary["error"], summary
    assert fermion.dataset(str(job)).version == 1


def test_merge_into_no_table_fails(spark: Any, tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "merge.yaml", table=str(tmp_path / "none"),
        source=_source(tmp_path / "in", _table([1], "c"), files=1), key_columns=["id"],
    )  # fmt: skip
    code, summary = _merge(spark, config)
    assert code == EXIT_FAILURE and summary["error"].startswith("DatasetError"), summary


def test_a_failure_after_the_match_removes_its_deletion_files(spark: Any, tmp_path: Path) -> None:
    """A value that does not fit the table's type fails the write tasks, after the match
    tasks wrote deletion files: every file of the merge is removed, nothing committed."""
    job = tmp_path / "job"
    table = pa.table(
        {"id": pa.array(range(100), pa.int64()), "u": pa.array(range(100), pa.uint32())}
    )
    ft.write_dataset(table, job, max_rows_per_file=50)
    before = _files(job)
    bad = pa.table(
        {"id": pa.array([5, 60, 500], pa.int64()), "u": pa.array([1, -1, 2], pa.int64())}
    )
    config = write_config(
        tmp_path / "merge.yaml", table=str(job), source=_source(tmp_path / "in", bad, files=1),
        key_columns=["id"],
    )  # fmt: skip
    code, summary = _merge(spark, config)
    assert code == EXIT_FAILURE, summary
    assert summary["error"].startswith("SchemaMismatchError: column 'u': cannot convert"), summary
    assert fermion.dataset(str(job)).version == 1
    assert _files(job) == before  # the deletion files of fragments 0 and 1 are gone too


def test_the_entry_point_exits_2_on_an_unknown_key(tmp_path: Path) -> None:
    """``python jobs/merge.py`` with an unknown key: exit 2 before Spark starts."""
    config = write_config(
        tmp_path / "merge.yaml", table=str(tmp_path / "t"), source=str(tmp_path / "in"),
        key_columns=["id"], keys=["id"],
    )  # fmt: skip
    done = run_job("merge", "--config", config)
    assert done.code == EXIT_CONFIG
    assert (
        done.summary["error"].startswith("ConfigError: ")
        and "key 'keys': unknown key" in (done.summary["error"])
    )


def test_two_concurrent_runs_of_one_input_commit_once(spark: Any, tmp_path: Path) -> None:
    """Whichever order the two runs take (the second sees the record, or both race to the
    commit and the loser conflicts on the common keys, then finds the record), the input
    is merged exactly once."""
    import threading

    job, local = _pair(tmp_path)
    source_rows = _table([*range(0, 2_000, 250), *range(7_000, 7_010)], "c")
    config = write_config(
        tmp_path / "merge.yaml", table=str(job), source=_source(tmp_path / "in", source_rows),
        key_columns=["id"], input_key="labels-2026-11-20",
    )  # fmt: skip
    outcomes: list[tuple[int, dict[str, Any]]] = []
    threads = [threading.Thread(target=lambda: outcomes.append(_merge(spark, config)))
               for _ in range(2)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [code for code, _ in outcomes] == [0, 0], outcomes
    committed = [s for _, s in outcomes if s["committed_version"] is not None]
    skipped = [s for _, s in outcomes if s["skipped"]]
    assert len(committed) == 1 and len(skipped) == 1, outcomes
    assert "merged" in skipped[0]["reason"]
    assert fermion.dataset(str(job)).version == 2
    (
        ft.dataset(local).merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().execute(source_rows)
    )  # fmt: skip
    assert _rows(ft.dataset(job).to_table()) == _rows(ft.dataset(local).to_table())
