"""The batch-mode layout through a table's life (docs/TABLE_FORMAT.md, "Batch-mode layout").

Appends of interleaved batch ids (every task of a write holding ids from the whole range)
are compacted by merging the fragments by batch id: the new fragments hold disjoint,
increasing id ranges, ``ceil(rows / target)`` of them, every batch whole with its rows in
order. Tried: 3 appends x 6 tasks of interleaved ids, random interleavings with partial
overlaps, ids appended twice, deleted batches and rows, inputs of many stripes, work split
into id ranges; and lookups that open only the fragments whose id range holds the ids.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion.table as ft
import fermion.table.fragments as fragments_module
from fermion.format import FileReader, FileWriter
from fermion.table.codec import fragment_stats
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.scan import fragment_stripe_rows, read_fragment
from fermion.table.tasks import (
    commit_rewrite,
    commit_write,
    execute_rewrite,
    execute_write,
    plan_compaction,
    plan_materialization,
    plan_write,
)
from fermion.table.tasks.merge import merge_batch_runs
from tests.support.budget import examples
from tests.table.test_batches import CountingOpens


def _small_stripes(stripe_rows: int) -> Any:
    """An ``open_data_writer`` cutting stripes after ``stripe_rows`` rows."""

    def open_writer(
        target: Any, schema: pa.Schema, field_ids: Any, _props: Any = None
    ) -> FileWriter:
        return FileWriter(target, schema, field_ids=list(field_ids), max_stripe_rows=stripe_rows)

    return open_writer


def _interleaved_appends(
    uri: str, appends: int = 3, tasks: int = 6, ids_per_append: int = 2_000, seed: int = 1
) -> None:
    """``appends`` batch-mode writes of ``tasks`` tasks each; task ``k`` of a write holds the
    ids whose hash is ``k`` modulo ``tasks`` (as a hash-partitioned ingest wrote them)."""
    rng = np.random.default_rng(seed)
    for append in range(appends):
        ids = np.arange(ids_per_append) + append * ids_per_append
        col = np.repeat(ids, rng.integers(1, 4, size=len(ids)))
        data = pa.table({"b": col, "x": np.arange(len(col)) + append * 1_000_000})
        plan = plan_write(uri, data.schema, batch_id_column="b")
        owner = (col * 7_919) % tasks
        parts = [data.filter(pa.array(owner == k)) for k in range(tasks)]
        commit_write(plan, [execute_write(plan, p, task_id=k) for k, p in enumerate(parts)])


def _batches_by_id(ds: ft.Dataset, fragments: list[pb.Fragment]) -> dict[int, pa.Table]:
    """Every batch of ``fragments`` (live rows): the rows of each id, fragment by fragment
    in the order given, each fragment's rows in their order."""
    parts: dict[int, list[pa.Table]] = {}
    for fragment in fragments:
        table = read_fragment(ds.storage, ds.table_schema, fragment, ds.table_schema.arrow.names)
        ids = table["b"].to_numpy()
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        table = table.take(pa.array(order))
        cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        for start, stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(ids)], strict=True):
            parts.setdefault(int(ids[start]), []).append(table.slice(start, stop - start))
    return {i: pa.concat_tables(p).combine_chunks() for i, p in parts.items()}


def _id_range(fragment: ft.Fragment, ds: ft.Dataset) -> tuple[int, int]:
    field_id = ds.table_schema.top_level_ids()[ds.table_schema.arrow.get_field_index("b")]
    stat = next(s for s in fragment_stats(fragment) if s.field_id == field_id)
    return stat.min.int_value, stat.max.int_value


def _check_layout(ds: ft.Dataset, new: list[pb.Fragment]) -> None:
    """The new fragments hold increasing ids within each file, disjoint ranges across."""
    ranges = sorted(_id_range(f, ds) for f in new)
    for (_, hi), (lo, _) in zip(ranges, ranges[1:], strict=False):
        assert hi < lo, ranges
    for fragment in new:
        with FileReader(ds.storage.path(fragment.files[0].path)) as reader:
            assert reader.batch_mode
            ids = reader.read(columns=["b"])["b"].to_numpy()
            assert bool(np.all(ids[1:] >= ids[:-1]))
            assert reader.read(columns=["_batch_id"])["_batch_id"].to_pylist() == ids.tolist()


def _compact(uri: str, target: int, max_tasks: int = 1) -> tuple[Any, list[pb.Fragment]]:
    before = {f.id for f in ft.dataset(uri).fragments}
    plan = plan_compaction(uri, target_rows_per_fragment=target, max_tasks=max_tasks)
    summary = commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    return summary, [f for f in ft.dataset(uri).fragments if f.id not in before]


@pytest.mark.parametrize("target", [1_000_000, 1_000, 2_500])
def test_three_appends_of_six_interleaved_tasks_compact_into_ceil_rows_over_target(
    tmp_path: Path, target: int
) -> None:
    uri = str(tmp_path / "t")
    _interleaved_appends(uri)
    ds = ft.dataset(uri)
    rows = ds.to_table().num_rows
    assert len(ds.fragments) == 18
    expected = _batches_by_id(ds, list(ds.fragments))

    summary, new = _compact(uri, target)
    after = ft.dataset(uri)
    assert summary.committed and summary.fragments_removed == 18
    assert len(after.fragments) == len(new) == math.ceil(rows / target)
    assert (len(new) == 1) == (target > rows)
    _check_layout(after, new)
    got = _batches_by_id(after, new)
    assert got.keys() == expected.keys()
    for batch_id, table in expected.items():
        assert got[batch_id].equals(table), batch_id


def test_compaction_split_into_id_ranges_keeps_the_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fragments_module, "open_data_writer", _small_stripes(150))
    uri = str(tmp_path / "t")
    _interleaved_appends(uri)
    ds = ft.dataset(uri)
    assert all(len(fragment_stripe_rows(ds.storage, f)) > 3 for f in ds.fragments)
    rows = ds.to_table().num_rows
    expected = _batches_by_id(ds, list(ds.fragments))
    plan = plan_compaction(uri, target_rows_per_fragment=1_000, max_tasks=4)
    assert len(plan.tasks) == 4 and len({t.unit for t in plan.tasks}) == 1
    bounds = [(t.ids_from, t.ids_below) for t in plan.tasks]
    assert bounds[0][0] is None and bounds[-1][1] is None
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    summary = commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    assert summary.committed and summary.fragments_removed == 18
    after = ft.dataset(uri)
    assert len(after.fragments) == math.ceil(rows / 1_000)
    _check_layout(after, list(after.fragments))
    got = _batches_by_id(after, list(after.fragments))
    assert got.keys() == expected.keys()
    assert all(got[i].equals(t) for i, t in expected.items())


def test_a_unit_with_a_missing_task_result_commits_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _interleaved_appends(uri, appends=1, ids_per_append=300)
    plan = plan_compaction(uri, target_rows_per_fragment=100, max_tasks=3)
    results = [execute_rewrite(t) for t in plan.tasks]
    summary = commit_rewrite(plan, results[:-1])
    assert not summary.committed
    assert set(summary.skipped_tasks) == {t.task_id for t in plan.tasks[:-1]}
    assert len(ft.dataset(uri).fragments) == 6


def test_lookups_open_only_the_compacted_fragments_holding_the_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "t")
    _interleaved_appends(uri)
    _compact(uri, 1_000)
    ds = ft.dataset(uri)
    assert len(ds.fragments) == 13
    ranges = [_id_range(f, ds) for f in ds.fragments]
    wanted = [5, 6, 3_000, 5_999, 5]
    holding = {k for k, (lo, hi) in enumerate(ranges) for i in wanted if lo <= i <= hi}
    opens = CountingOpens(monkeypatch)
    lookup = ds.batch_lookup(wanted, columns=["b", "x"])
    table = lookup.to_table()
    assert sorted(set(table["b"].to_pylist())) == [5, 6, 3_000, 5_999]
    assert len(holding) == 3
    assert lookup.stats.files_opened == len(opens.paths) == 3
    assert lookup.stats.fragments_pruned == 10


def test_materialization_of_a_batch_mode_fragment_keeps_its_batches(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _interleaved_appends(uri, appends=1, tasks=2, ids_per_append=400)
    ds = ft.dataset(uri)
    ds.delete(pc.field("b").isin(list(range(0, 400, 3))))
    ds = ft.dataset(uri)
    expected = _batches_by_id(ds, list(ds.fragments))
    plan = plan_materialization(uri, threshold=0.1)
    summary = commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    assert summary.committed and summary.fragments_removed == 2
    after = ft.dataset(uri)
    assert len(after.fragments) == 2
    _check_layout_each(after)
    got = _batches_by_id(after, list(after.fragments))
    assert got.keys() == expected.keys()
    assert all(got[i].equals(t) for i, t in expected.items())


def _check_layout_each(ds: ft.Dataset) -> None:
    for fragment in ds.fragments:
        with FileReader(ds.storage.path(fragment.files[0].path)) as reader:
            ids = reader.read(columns=["b"])["b"].to_numpy()
            assert reader.batch_mode and bool(np.all(ids[1:] >= ids[:-1]))


@st.composite
def _layouts(draw: Any) -> dict[str, Any]:
    ids = draw(st.lists(st.integers(-500, 500), min_size=1, max_size=60, unique=True))
    appends = []
    for _ in range(draw(st.integers(1, 3))):
        chosen = draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
        tasks = draw(st.integers(1, 4))
        owner = [draw(st.integers(0, tasks - 1)) for _ in chosen]
        sizes = [draw(st.integers(1, 4)) for _ in chosen]
        appends.append((chosen, owner, sizes, tasks))
    return {
        "appends": appends,
        "deleted_ids": draw(st.lists(st.sampled_from(ids), max_size=5)),
        "deleted_rows": draw(st.lists(st.integers(0, 400), max_size=5)),
        "stripe_rows": draw(st.integers(2, 9)),
        "target": draw(st.integers(60, 400)),
        "max_tasks": draw(st.integers(1, 3)),
    }


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow])
@given(layout=_layouts())
def test_merged_compaction_keeps_every_batch_and_the_layout(
    tmp_path_factory: pytest.TempPathFactory, layout: dict[str, Any]
) -> None:
    uri = str(tmp_path_factory.mktemp("t"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fragments_module, "open_data_writer", _small_stripes(layout["stripe_rows"]))
        x = 0
        for chosen, owner, sizes, tasks in layout["appends"]:
            col = np.repeat(np.array(chosen, dtype=np.int64), sizes)
            who = np.repeat(np.array(owner), sizes)
            data = pa.table({"b": col, "x": np.arange(x, x + len(col))})
            x += len(col)
            plan = plan_write(uri, data.schema, batch_id_column="b")
            results = []
            for k in range(tasks):  # each task sorts its rows by id, as the ingest does
                part = data.filter(pa.array(who == k))
                part = part.take(pc.sort_indices(part["b"]))
                results.append(execute_write(plan, part, task_id=k))
            commit_write(plan, results)
        ds = ft.dataset(uri)
        if layout["deleted_ids"] or layout["deleted_rows"]:
            ds.delete(
                pc.field("b").isin(layout["deleted_ids"])
                | pc.field("x").isin(layout["deleted_rows"])
            )
            ds = ft.dataset(uri)
        target = layout["target"]
        plan = plan_compaction(uri, target_rows_per_fragment=target, max_tasks=layout["max_tasks"])
        rewritten = sorted({f.id for t in plan.tasks for f in t.fragments})
        in_plan = [f for f in ds.fragments if f.id in rewritten]
        expected = _batches_by_id(ds, in_plan)
        rows = sum(t.num_rows for t in expected.values())
        summary = commit_rewrite(plan, [execute_rewrite(t) for t in plan.tasks])
    after = ft.dataset(uri)
    new = [f for f in after.fragments if f.id not in {g.id for g in ds.fragments}]
    if not plan.tasks:
        assert after.version == ds.version
        return
    assert summary.committed and summary.fragments_removed == len(in_plan)
    assert sum(f.physical_rows for f in new) == rows
    _check_layout(after, new)
    got = _batches_by_id(after, new)
    assert got.keys() == expected.keys()
    for batch_id, table in expected.items():
        assert got[batch_id].equals(table), batch_id
    floor = math.ceil(rows / target)
    if len(plan.tasks) == 1:  # batches of at most 4 rows, target >= 60: ceil(rows/target) + 1
        assert floor <= len(new) <= floor + 1
    else:  # each range ends with its own last file
        assert floor <= len(new) <= floor + len(plan.tasks)


def _chunked(values: list[int], cuts: list[int], source: int) -> Iterator[pa.Table]:
    table = pa.table({"b": values, "src": [source] * len(values), "i": list(range(len(values)))})
    edges = sorted({c % (len(values) + 1) for c in cuts} | {0, len(values)})
    for start, stop in zip(edges, edges[1:], strict=False):
        yield table.slice(start, stop - start)


@settings(max_examples=examples(200))
@given(
    inputs=st.lists(
        st.tuples(
            st.lists(st.integers(-20, 20), max_size=30).map(sorted),
            st.lists(st.integers(0, 40), max_size=6),
        ),
        max_size=5,
    )
)
def test_merge_is_a_stable_sort_by_id_that_keeps_each_id_in_one_table(
    inputs: list[tuple[list[int], list[int]]],
) -> None:
    streams = [_chunked(values, cuts, k) for k, (values, cuts) in enumerate(inputs)]
    out = list(merge_batch_runs(streams, "b"))
    rows = [
        (b, src, i)
        for table in out
        for b, src, i in zip(*(table[c].to_pylist() for c in ("b", "src", "i")), strict=True)
    ]
    everything = [(b, k, i) for k, (values, _) in enumerate(inputs) for i, b in enumerate(values)]
    assert rows == sorted(everything)  # by id, then input, then position in the input
    seen: set[int] = set()
    for table in out:
        assert table.num_rows
        ids = set(table["b"].to_pylist())
        assert not ids & seen  # every row of an id comes in one table
        seen |= ids
