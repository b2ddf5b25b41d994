"""Table-level batch lookup benchmark (issue 16, item 2): ``Dataset.read_batches``.

A batch-mode Fermion table of 2,000 batches of 1-64 rows (seeded), 200 float32 columns and
the ``bid`` batch-id column, written with ``plan_write(..., batch_id_column="bid")`` into
about 20 fragments (rows / 20 per file, batches kept whole; the count is reported); the
same rows, fragment by fragment, as one Parquet file each (pyarrow defaults,
sorted ``bid`` so row-group statistics prune) read with ``pyarrow.dataset``.

Metrics (50 projected columns, the same seeded ids for both systems, timed round-robin,
medians of ``runs``):

- ``lookup_100_ids_ms``: one call for 100 random ids (Fermion: ``read_batches``, rows in
  the order asked; Parquet: ``to_table(filter=bid.isin(ids))``, rows in file order);
- ``lookups_50x1_ms``: 50 calls of one id each (what a data loader does per step);
- ``lookup_100_ids_cold_ms``: the 100 ids through a dataset object made for the call
  (Fermion: ``dataset(uri)``, its manifest read and no data file kept open; Parquet:
  ``pds.dataset(dir)``, the files listed and no footer kept).

For the first two, both datasets are opened once outside the timing (a loader keeps its
dataset open): the Fermion ``Dataset`` then keeps its data files open between lookups and
``pyarrow.dataset`` the footers of its Parquet fragments.

    python -m benchmarks.batch_table_bench          # prints the result rows as JSON lines
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.parquet as pq

from benchmarks.timing import interleaved_ms
from fermion.table import dataset
from fermion.table.scan import read_fragment
from fermion.table.tasks import commit_write, execute_write, plan_write

SCENARIO = "batch_table_lookup"


def make_table(batches: int, columns: int, seed: int = 0) -> tuple[pa.Table, np.ndarray]:
    """Rows of ``batches`` batches of 1-64 rows; returns the table and the batch ids.

    Example:
        >>> t, ids = make_table(3, 2)
        >>> t.column_names, len(ids)
        (['bid', 'f0000', 'f0001'], 3)
    """
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 65, batches)
    ids = np.cumsum(rng.integers(1, 5, batches)).astype(np.int64)
    rows = int(sizes.sum())
    cols: dict[str, Any] = {"bid": np.repeat(ids, sizes)}
    cols.update({f"f{i:04d}": rng.random(rows, dtype=np.float32) for i in range(columns)})
    return pa.table(cols), ids


def run(results: list[dict[str, Any]], *, runs: int | None = None) -> None:
    """Append one result row per (metric, system) to ``results``."""
    quick = os.environ.get("FERMION_BENCH_QUICK") == "1"
    runs = runs or max(5, int(os.environ.get("FERMION_BENCH_REPEAT", "5")))
    batches, columns, fragments = (200, 20, 5) if quick else (2000, 200, 20)
    table, ids = make_table(batches, columns)
    rng = np.random.default_rng(1)
    names = [f"f{i:04d}" for i in sorted(rng.choice(columns, min(50, columns), replace=False))]
    many = rng.choice(ids, 100, replace=False)
    singles = rng.choice(ids, 50, replace=False).tolist()
    tmp = Path(tempfile.mkdtemp(prefix="fermion-batch-table-"))
    try:
        uri = str(tmp / "table")
        plan = plan_write(
            uri,
            table.schema,
            batch_id_column="bid",
            max_rows_per_file=-(-table.num_rows // fragments),
        )
        commit_write(plan, [execute_write(plan, table)])
        ds = dataset(uri)
        (tmp / "parquet").mkdir()
        for k, fragment in enumerate(ds.fragments):
            part = read_fragment(ds.storage, ds.table_schema, fragment, table.column_names)
            pq.write_table(part, tmp / "parquet" / f"part-{k:03d}.parquet", row_group_size=8192)
        pds_ = pds.dataset(tmp / "parquet", format="parquet")
        wanted_rows = sum(int((table["bid"].to_numpy() == i).sum()) for i in many)
        opened: list[int] = []

        def fermion_many() -> None:
            lookup = ds.batch_lookup(many, columns=names)
            assert lookup.to_table().num_rows == wanted_rows
            opened.append(lookup.stats.files_opened)

        def parquet_many() -> None:
            got = pds_.to_table(columns=names, filter=pds.field("bid").isin(many))
            assert got.num_rows == wanted_rows

        def fermion_cold() -> None:  # a new dataset object: no data file kept open yet
            with dataset(uri) as fresh:
                assert fresh.read_batches(many, columns=names).num_rows == wanted_rows

        def parquet_cold() -> None:  # a new pyarrow dataset: no Parquet footer kept
            fresh = pds.dataset(tmp / "parquet", format="parquet")
            got = fresh.to_table(columns=names, filter=pds.field("bid").isin(many))
            assert got.num_rows == wanted_rows

        def fermion_singles() -> None:
            for i in singles:
                ds.read_batches([i], columns=names)

        def parquet_singles() -> None:
            for i in singles:
                pds_.to_table(columns=names, filter=pds.field("bid") == i)

        load = os.getloadavg()[0]
        cases = {
            ("lookup_100_ids_ms", "fermion"): fermion_many,
            ("lookup_100_ids_ms", "parquet"): parquet_many,
            ("lookups_50x1_ms", "fermion"): fermion_singles,
            ("lookups_50x1_ms", "parquet"): parquet_singles,
            ("lookup_100_ids_cold_ms", "fermion"): fermion_cold,
            ("lookup_100_ids_cold_ms", "parquet"): parquet_cold,
        }
        for (metric, system), times in interleaved_ms(cases, runs).items():
            median = statistics.median(times)
            row: dict[str, Any] = {
                "scenario": SCENARIO,
                "variant": metric,
                "system": system,
                "metric": metric,
                "status": "ok",
                "value": median,
                "unit": "ms",
                "runs": [round(t, 1) for t in times],
                "fragments": len(ds.fragments),
                "rows": table.num_rows,
                "load_1min": round(load, 2),
            }
            if system == "fermion" and metric == "lookup_100_ids_ms":
                row["files_opened"] = opened[-1]
            results.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    run_compacted(results, runs=runs)


def mixed_table(batches: int, seed: int = 0) -> tuple[pa.Table, np.ndarray]:
    """Batches of 1-100 rows of mixed columns (int64, string, list<int64>, 20 float32).

    Example:
        >>> t, ids = mixed_table(4)
        >>> t.column_names[:5], len(ids)
        (['bid', 'user', 'query', 'clicks', 'f00'], 4)
    """
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 101, batches)
    ids = np.cumsum(rng.integers(1, 5, batches)).astype(np.int64)
    rows = int(sizes.sum())
    cols: dict[str, Any] = {
        "bid": np.repeat(ids, sizes),
        "user": rng.integers(0, 1 << 40, rows),
        "query": pa.array([f"q{v}" * int(v % 5 + 1) for v in rng.integers(0, 10_000, rows)]),
        "clicks": pa.array(
            [list(range(int(v))) for v in rng.integers(0, 6, rows)], pa.list_(pa.int64())
        ),
    }
    cols.update({f"f{i:02d}": rng.random(rows, dtype=np.float32) for i in range(20)})
    return pa.table(cols), ids


def run_compacted(results: list[dict[str, Any]], *, runs: int | None = None) -> None:
    """Lookups on a compacted batch-mode table of mixed columns (issue 39, part 6).

    The rows arrive as 3 appends of 6 tasks each, every task holding every 6th batch
    (interleaved id ranges), and ``compact_files`` merges the 18 fragments by batch id
    into ``ceil(rows / target)`` fragments. Then 100 random ids: Fermion
    ``Dataset.read_batches`` vs a ``pyarrow.dataset`` filter over the compacted rows as one
    Parquet file per fragment (sorted by id, 8,192-row row groups) vs Lance ``take`` of
    the wanted rows' positions (the positions given, so no search is timed for Lance).
    """
    quick = os.environ.get("FERMION_BENCH_QUICK") == "1"
    runs = runs or max(5, int(os.environ.get("FERMION_BENCH_REPEAT", "5")))
    batches = 300 if quick else 20_000
    table, ids = mixed_table(batches)
    bid = table["bid"].to_numpy()
    starts = np.searchsorted(bid, ids)
    ends = np.searchsorted(bid, ids, side="right")
    rng = np.random.default_rng(3)
    many = np.sort(rng.choice(ids, 100, replace=False))
    wanted = np.concatenate([np.arange(starts[k], ends[k]) for k in np.searchsorted(ids, many)])
    names = ["bid", "user", "query", "clicks", "f03", "f11"]
    tmp = Path(tempfile.mkdtemp(prefix="fermion-batch-compacted-"))
    try:
        uri = str(tmp / "table")
        for append in range(3):
            part_ids = ids[append::3]
            plan = plan_write(uri, table.schema, batch_id_column="bid")
            results_: list[Any] = []
            for task in range(6):
                chosen = np.isin(bid, part_ids[task::6])
                results_.append(execute_write(plan, table.filter(pa.array(chosen)), task_id=task))
            commit_write(plan, results_)
        ds = dataset(uri)
        before = len(ds.fragments)
        target = -(-table.num_rows // 4)
        ds.compact_files(target_rows_per_fragment=target)
        ds = dataset(uri)
        (tmp / "parquet").mkdir()
        for k, fragment in enumerate(ds.fragments):
            part = read_fragment(ds.storage, ds.table_schema, fragment, table.column_names)
            pq.write_table(part, tmp / "parquet" / f"part-{k:03d}.parquet", row_group_size=8192)
        pds_ = pds.dataset(tmp / "parquet", format="parquet")
        systems: dict[str, Any] = {}
        opened: list[int] = []

        def fermion_many() -> None:
            lookup = ds.batch_lookup(many, columns=names)
            assert lookup.to_table().num_rows == len(wanted)
            opened.append(lookup.stats.files_opened)

        def parquet_many() -> None:
            got = pds_.to_table(columns=names, filter=pds.field("bid").isin(many))
            assert got.num_rows == len(wanted)

        systems["fermion"] = fermion_many
        systems["parquet"] = parquet_many
        if importlib.util.find_spec("lance") is not None:
            import lance

            lds = lance.write_dataset(table, str(tmp / "lance"), max_rows_per_file=target)
            positions = wanted.tolist()

            def lance_take() -> None:
                assert lds.take(positions, columns=names).num_rows == len(wanted)

            systems["lance"] = lance_take
        load = os.getloadavg()[0]
        for system, times in interleaved_ms(systems, runs, warmup=True).items():
            row: dict[str, Any] = {
                "scenario": SCENARIO,
                "variant": "compacted, mixed columns: 100 ids",
                "system": system,
                "metric": "lookup_100_ids_ms",
                "status": "ok",
                "value": statistics.median(times),
                "unit": "ms",
                "runs": [round(t, 1) for t in times],
                "fragments": len(ds.fragments),
                "rows": table.num_rows,
                "load_1min": round(load, 2),
                "note": f"{before} fragments compacted into {len(ds.fragments)}",
            }
            if system == "fermion":
                row["files_opened"] = opened[-1]
            results.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def method_notes(sizes: Any) -> list[tuple[str, str]]:
    """The report's Method lines for this module."""
    return [
        (
            "batch_table_lookup",
            "Dataset.read_batches on a ~20-fragment batch-mode table (2,000 batches of 1-64 "
            "rows, 200 float32) vs pyarrow.dataset with a bid filter over the same rows, one "
            "Parquet file per fragment; 50 columns; 100 ids in one call, 50 single-id calls, "
            "and 100 ids through a dataset object made for the call (cold); 'compacted, "
            "mixed columns': 20,000 batches of 1-100 rows (int64, string, list<int64>, 20 "
            "float32) written as 3 appends x 6 tasks of interleaved ids, compact_files into "
            "4 fragments, 100 ids (6 columns) via Dataset.batch_lookup vs pyarrow.dataset "
            "(one Parquet file per fragment) vs Lance take of the rows' positions",
        )
    ]


if __name__ == "__main__":
    rows: list[dict[str, Any]] = []
    run(rows)
    for row in rows:
        print(json.dumps(row))
