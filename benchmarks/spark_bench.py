"""Spark benchmarks (issue 12): Fermion through Spark vs Spark with Parquet, in one run.

Seven cases, measured for both systems one after the other: one fresh worker process per
system with one ``local[2]`` SparkSession runs them in turn
(see ``benchmarks.spark_cases``):

- ``spark_lineitem_agg``: ``spark.read.format("fermion").load(table)`` vs
  ``spark.read.parquet(file)`` of TPC-H lineitem, then count + sum/max of every column;
- ``spark_wide_read10``: 10 of the wide table's columns, the projection given
  (``fermion.spark.read_dataset(spark, uri, columns=...)`` vs
  ``spark.read.parquet(file).select(...)``), then count + sums;
- ``spark_ingest`` (plain, and batch mode by ``l_orderkey``): the ingest job library
  (``fermion.spark.jobs.ingest.ingest``, in the worker's session) vs
  ``spark.read.parquet(file).write.parquet(dir)``, same input file;
- ``spark_migrate``: the migrate_parquet job library, verified, vs the same Parquet copy;
- ``spark_compact``: the compact job library on a table of small fragments vs Spark reading
  the same rows as as many small Parquet files, ``coalesce`` to the count of fragments the
  compaction makes, ``write.parquet``;
- ``spark_backfill``: the backfill_columns job library adding one column computed from two
  others (one column-only file per fragment, no existing file rewritten) to a copy of the
  lineitem table vs ``spark.read.parquet(file).withColumn(...).write.parquet(dir)``
  (issue 41's goal: at most 0.3x).

The inputs are the harness's own files: the Parquet copies ``benchmarks.run`` writes and
verifies (pyarrow, zstd), and Fermion tables written here from the same generated tables.
Results are rows of the main table (systems ``fermion`` and ``parquet``, so ``vs Parquet``
is Fermion's time over Spark-with-Parquet's); a case whose check differs between the two
systems, or whose row count is not the source's, is reported as ``wrong-result``.

    python -m benchmarks.run --only spark_bench [--quick]
"""

from __future__ import annotations

import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks import datagen, systems
from benchmarks.config import FULL, QUICK, WORKER_TIMEOUT_S, Sizes
from benchmarks.launch import log, prepare_copy, run_worker
from benchmarks.prepare import dataset_path, fingerprint
from benchmarks.scenarios import Dataset
from benchmarks.spark_cases import BACKFILL_COLUMN, RSS_SAMPLE_S, SPARK_CONF, SPARK_SCENARIOS

__all__ = [
    "SCENARIOS",
    "SYSTEMS",
    "checks_differ",
    "mark_differences",
    "method_notes",
    "prepare_input",
    "run",
]

SCENARIOS = SPARK_SCENARIOS
SYSTEMS = ("fermion", "parquet")
#: Rows per fragment the compaction aims at (the compact job's default).
TARGET_ROWS = 1_048_576


def _log(msg: str) -> None:
    log(msg)


def _sizes() -> Sizes:
    return QUICK if os.environ.get("FERMION_BENCH_QUICK") == "1" else FULL


def method_notes(sizes: Sizes) -> list[tuple[str, str]]:
    """The Method lines of the Spark cases."""
    return [
        (
            "spark_*",
            "Fermion through Spark vs Spark's built-in Parquet source and writer (system "
            "`parquet` in these rows: `spark.read.parquet` / `df.write.parquet`, Spark's "
            "default snappy compression for what it writes), pyspark "
            f"{_pyspark_version()}; each system in one fresh process with one SparkSession "
            f"({', '.join(f'{k}={v}' for k, v in SPARK_CONF.items())}, the project's "
            "`fermion.spark.session` settings) that runs the seven cases in turn, in the same "
            "order for both systems. Session and JVM start-up are NOT timed (started before "
            "the first warm-up run). Read inputs: the verified Parquet copies above and "
            "Fermion tables written from the same tables (`fermion.table.write_dataset` "
            "defaults). Peak RSS for these rows: the largest sum of the resident sets of the "
            "worker's process tree (Python driver + JVM + Spark's Python workers) sampled "
            f"every {RSS_SAMPLE_S:g} s while the case runs; it includes what earlier cases "
            "left (the JVM keeps its heap). Check: count, sum of every numeric and max of "
            "every other column of the result (of the written table "
            "or files for ingest and compaction), equal between the two systems",
        ),
        (
            "spark_ingest",
            "input: the lineitem Parquet copy; fermion: `ingest(JobContext(spark), "
            "IngestConfig(table, source))` into a fresh table per run; `plain`: no "
            "batch-id column; `batch mode`: `batch_id_column=l_orderkey` (about 4 rows a "
            "batch); both with the default `file_reader: auto` (the tasks read the Parquet "
            "row groups with pyarrow, docs/SPARK.md); parquet: `spark.read.parquet(source)"
            ".write.parquet(out)`; rows/s = rows / median",
        ),
        (
            "spark_migrate",
            "input: the lineitem Parquet copy; fermion: `migrate_parquet(JobContext(spark), "
            "MigrateParquetConfig(table, source))` with its default `verify: true` (each "
            "task compares what it read back with a digest of the rows it wrote) into a fresh "
            "table per run; parquet: `spark.read.parquet(source).write.parquet(out)`",
        ),
        (
            "spark_compact",
            f"lineitem SF{sizes.lineitem_scale:g} as {sizes.compact_fragments:,} fragments "
            "(one `write_dataset` with `max_rows_per_file`), restored from a pristine copy "
            f"before each run (untimed); `compact` with target {TARGET_ROWS:,} rows per "
            f"fragment; parquet: the same rows as {sizes.compact_fragments:,} files (pyarrow, "
            "zstd), `spark.read.parquet(dir).coalesce(n).write.parquet(out)` with n = the "
            "number of fragments the compaction makes",
        ),
        (
            "spark_compact (batch mode)",
            f"lineitem SF{sizes.lineitem_scale:g} written in batch mode (`batch_id_column="
            f"{BATCH_ID}`) as {BATCH_APPENDS} appends x {BATCH_TASKS} tasks "
            "(`plan_write` / `execute_write` / `commit_write`), task `g` of the 18 holding "
            "the order keys whose rank is `g` mod 18, so every fragment spans the whole id "
            "range; `compact` (target: the smaller of "
            f"{TARGET_ROWS:,} rows and rows / 3.5) merges them by batch id into "
            "fragments of disjoint id ranges; "
            "parquet: the same 18 pieces as files (pyarrow, zstd), "
            "`spark.read.parquet(dir).repartitionByRange(n, id).sortWithinPartitions(id)"
            ".write.parquet(out)`, the same layout (each output sorted by id, the files' id "
            "ranges disjoint); both checks verify that layout on what was written",
        ),
        (
            "spark_backfill",
            f"a copy of the lineitem SF{sizes.lineitem_scale:g} table (`write_dataset` "
            "defaults), restored before each run (untimed); fermion: `backfill_columns("
            "JobContext(spark), BackfillColumnsConfig(table, columns={"
            f"{BACKFILL_COLUMN[0]}: '{BACKFILL_COLUMN[1]}'}}))`: one Spark task per fragment "
            "reads the two columns and writes one column-only file, then one AddColumns "
            "commit; parquet: `spark.read.parquet(source).withColumn(name, F.expr(same "
            "text)).write.parquet(out)`; the check covers every column, the new one included; "
            "goal (issue 41): fermion at most 0.3x parquet",
        ),
    ]


def _pyspark_version() -> str:
    from benchmarks.report import _version

    return _version("pyspark")


# -- inputs ------------------------------------------------------------------------------------


def _input_path(data_dir: Path, dataset: Dataset, kind: str) -> Path:
    """Where a Spark-only input lives (named after the Fermion code that wrote it)."""
    return data_dir / "spark" / dataset.id / f"{kind}-{fingerprint('fermion')}"


#: Batch-mode compaction input: appends x tasks per append, every task holding every
#: (appends * tasks)-th order key, so each fragment spans the whole id range (interleaved).
BATCH_APPENDS, BATCH_TASKS = 3, 6
#: The batch-id column of the batch-mode cases.
BATCH_ID = "l_orderkey"


def interleaved_groups(table: pa.Table) -> list[pa.Table]:
    """The batch-mode pieces: piece ``g`` holds the order keys whose rank is ``g`` modulo
    ``BATCH_APPENDS * BATCH_TASKS``, in the source's (increasing key) order.

    Example:
        >>> t = pa.table({"l_orderkey": list(range(40)), "x": list(range(40))})
        >>> [p.num_rows for p in interleaved_groups(t)][:5], interleaved_groups(t)[1]["x"][1]
        ([3, 3, 3, 3, 2], <pyarrow.Int64Scalar: 19>)
    """
    import numpy as np

    pieces = BATCH_APPENDS * BATCH_TASKS
    _, rank = np.unique(table[BATCH_ID].to_numpy(), return_inverse=True)
    group = rank % pieces
    return [table.filter(pa.array(group == g)) for g in range(pieces)]


def _write_batch_fragments(table: pa.Table, path: Path) -> None:
    """3 appends of 6 tasks each (plan -> execute per task -> commit), interleaved ids."""
    from fermion.table.tasks import commit_write, execute_write, plan_write

    pieces = interleaved_groups(table)
    for append in range(BATCH_APPENDS):
        plan = plan_write(str(path), table.schema, batch_id_column=BATCH_ID)
        results = []
        for task in range(BATCH_TASKS):
            piece = pieces[append * BATCH_TASKS + task]
            results.append(execute_write(plan, piece, task_id=task))
        commit_write(plan, results)


def _write_input(dataset: Dataset, kind: str, table: pa.Table, tmp: Path, fragments: int) -> None:
    import fermion.table as ft

    if kind == "batch-fragments":
        _write_batch_fragments(table, tmp)
    elif kind == "batch-files":
        tmp.mkdir(parents=True)
        for i, piece in enumerate(interleaved_groups(table)):
            pq.write_table(piece, tmp / f"part-{i:05d}.parquet", compression="zstd")
    elif kind == "table":
        ft.write_dataset(table, str(tmp))
    elif kind == "fragments":
        ft.write_dataset(table, str(tmp), max_rows_per_file=math.ceil(table.num_rows / fragments))
    elif kind == "files":
        tmp.mkdir(parents=True)
        step = math.ceil(table.num_rows / fragments)
        for i in range(fragments):
            part = table.slice(i * step, step)
            pq.write_table(part, tmp / f"part-{i:05d}.parquet", compression="zstd")
    else:
        raise ValueError(f"unknown input kind {kind!r}")


def _count(kind: str, path: Path) -> tuple[int, int]:
    """(rows, files) of a written input."""
    if kind in ("files", "batch-files"):
        files = sorted(path.glob("*.parquet"))
        return sum(pq.ParquetFile(f).metadata.num_rows for f in files), len(files)
    import fermion.table as ft

    ds = ft.dataset(str(path))
    return ds.count_rows(), len(ds.fragments)


def prepare_input(spec: dict[str, Any]) -> dict[str, Any]:
    """Write (once) a Fermion table or the small Parquet files of ``spec`` (worker side).

    ``spec``: ``dataset``, ``kind`` (``table`` | ``fragments`` | ``files``), ``fragments``,
    ``data_dir``, ``path``. Checks the rows (and for small pieces, the count) written.
    """
    t0 = time.perf_counter()
    dataset = Dataset.from_json(spec["dataset"])
    kind, path, fragments = spec["kind"], Path(spec["path"]), spec["fragments"]
    table = dataset.build(Path(spec["data_dir"]))
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        _write_input(dataset, kind, table, tmp, fragments)
        tmp.rename(path)
        for other in path.parent.glob(f"{kind}-*"):
            if other != path:
                shutil.rmtree(other, ignore_errors=True)
    rows, files = _count(kind, path)
    problems = []
    if rows != table.num_rows:
        problems.append(f"{rows} rows, expected {table.num_rows}")
    if kind not in ("table", "batch-fragments") and files != fragments:
        problems.append(f"{files} pieces, expected {fragments}")
    return {
        "status": "ok" if not problems else "error",
        "seconds": time.perf_counter() - t0,
        "rows": rows,
        "files": files,
        "note": "; ".join(problems),
    }


class _Inputs:
    """Prepares every input once per run, in worker processes."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.failed: dict[str, str] = {}

    def parquet(self, dataset: Dataset) -> Path | None:
        path = dataset_path(self.data_dir, dataset, "parquet", fingerprint("parquet"))
        outcome = prepare_copy(self.data_dir, dataset, "parquet", path)
        if outcome.get("status") != "ok" or outcome.get("check") != "ok":
            self.failed[str(path)] = str(outcome.get("note") or outcome.get("check"))
            return None
        return path

    def spark_input(self, dataset: Dataset, kind: str, fragments: int = 0) -> Path | None:
        path = _input_path(self.data_dir, dataset, kind)
        _log(f"{'checking' if path.exists() else 'writing'} {dataset.id} {kind} -> {path}")
        spec = {
            "mode": "spark-prepare",
            "dataset": dataset.to_json(),
            "kind": kind,
            "fragments": fragments,
            "data_dir": str(self.data_dir),
            "path": str(path),
        }
        outcome = run_worker(spec)
        if outcome.get("status") != "ok":
            self.failed[str(path)] = str(outcome.get("note"))
            _log(f"  FAILED: {outcome.get('note')}")
            return None
        return path


# -- measuring ---------------------------------------------------------------------------------


def checks_differ(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Keys whose values differ (floats: relative 1e-9), or ``[]`` if the checks agree.

    Example:
        >>> checks_differ({"rows": "3", "sum(x)": 1.0}, {"rows": "3", "sum(x)": 1.0 + 1e-15})
        []
        >>> checks_differ({"rows": "3"}, {"rows": "4"})
        ['rows: 3 vs 4']
    """
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, float) and isinstance(y, float):
            if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9):
                out.append(f"{key}: {x} vs {y}")
        elif x != y:
            out.append(f"{key}: {x} vs {y}")
    return out


@dataclass
class _Case:
    """One Spark case: its worker spec per system and what a correct result has."""

    scenario: str
    variant: str
    expected_rows: int
    specs: dict[str, dict[str, Any]]  # system -> the worker's spec of this case
    sizes_of: dict[str, str | None]  # system -> the input whose size is reported


def _row(case: _Case, system: str, outcome: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "scenario": case.scenario,
        "variant": case.variant,
        "system": system,
        "unit": "s",
        "value": None,
        "note": "",
        **{k: v for k, v in outcome.items() if k != "check"},
    }
    size_of = case.sizes_of.get(system)
    if size_of is not None:
        row["size_bytes"] = systems.path_size(Path(size_of))
    check = outcome.get("check")
    if row.get("status") == "ok" and isinstance(check, dict):
        row["io"] = {"check": check}
        if check.get("rows") != str(case.expected_rows):
            row["status"] = "wrong-result"
            row["note"] = f"{check.get('rows')} rows, expected {case.expected_rows}"
    return row


def _measure(spark_cases: list[_Case], repeat: int) -> list[list[dict[str, Any]]]:
    """Both systems' rows of every case (one worker process per system), checks compared."""
    outcomes: dict[str, list[dict[str, Any]]] = {}
    for system in SYSTEMS:
        names = ", ".join(c.scenario for c in spark_cases)
        _log(f"measuring {names} with {system} (one Spark session)")
        spec = {
            "mode": "spark",
            "cases": [{**c.specs[system], "repeat": repeat} for c in spark_cases],
        }
        outcome = run_worker(spec, timeout=WORKER_TIMEOUT_S * len(spark_cases))
        if outcome.get("status") == "ok":
            _log(f"  session started in {outcome['session_start_s']} s (not timed)")
            outcomes[system] = outcome["cases"]
        else:
            outcomes[system] = [outcome] * len(spark_cases)
        for case, result in zip(spark_cases, outcomes[system], strict=True):
            if result.get("status") == "ok":
                _log(f"  {case.scenario}: median {result['value']:.3f} s, "
                     f"peak RSS {result['peak_rss_mb']} MB")  # fmt: skip
            else:
                _log(f"  {case.scenario}: {result.get('status')}: {result.get('note')}")
    out = []
    for i, case in enumerate(spark_cases):
        rows = [_row(case, system, outcomes[system][i]) for system in SYSTEMS]
        mark_differences(rows)
        out.append(rows)
    return out


def mark_differences(rows: list[dict[str, Any]]) -> None:
    """Mark every row of one case ``wrong-result`` if their checks are not all equal."""
    checks = [(r.get("io") or {}).get("check") for r in rows]
    if not all(isinstance(c, dict) for c in checks):
        return
    differ = [d for c in checks[1:] for d in checks_differ(checks[0], c)]  # type: ignore[arg-type]
    if differ:
        for row in rows:
            row["status"] = "wrong-result"
            row["note"] = "results differ between systems: " + "; ".join(differ[:3])


def _rows_per_s(rows: list[dict[str, Any]], count: int) -> None:
    for row in rows:
        if row.get("status") == "ok":
            row["rows_per_s"] = count / row["value"]
            note = f"{row['rows_per_s']:,.0f} rows/s"
            row["note"] = "; ".join(n for n in (note, row.get("note")) if n)


def _files_note(rows: list[dict[str, Any]], files_in: int) -> None:
    for row in rows:
        check = (row.get("io") or {}).get("check") or {}
        if "files_out" in check:
            note = f"{files_in:,} files -> {check['files_out']}"
            row["note"] = "; ".join(n for n in (note, row.get("note")) if n)


def _unavailable(scenario: str, variant: str, reason: str) -> list[dict[str, Any]]:
    return [
        {
            "scenario": scenario,
            "variant": variant,
            "system": system,
            "status": "error",
            "value": None,
            "unit": "s",
            "note": f"input not prepared: {reason}",
        }
        for system in SYSTEMS
    ]


def _cases(sizes: Sizes, data_dir: Path) -> tuple[list[_Case], list[dict[str, Any]]]:
    """The cases whose inputs are ready, and error rows for those whose inputs failed."""
    work = data_dir / "tmp" / "spark"
    inputs = _Inputs(data_dir)
    sf = f"SF{sizes.lineitem_scale:g}"
    lineitem = Dataset("lineitem", scale=sizes.lineitem_scale)
    source = datagen.lineitem_source(data_dir, sizes.lineitem_scale, log=_log)
    lineitem_rows = pq.ParquetFile(source).metadata.num_rows
    wide = Dataset("wide", rows=sizes.wide_rows, cols=sizes.wide_cols)
    columns = datagen.evenly_spaced_columns(sizes.wide_cols)
    n = sizes.compact_fragments
    files_out = math.ceil(lineitem_rows / TARGET_ROWS)

    lineitem_parquet = inputs.parquet(lineitem)
    lineitem_table = inputs.spark_input(lineitem, "table")
    wide_parquet = inputs.parquet(wide)
    wide_table = inputs.spark_input(wide, "table")
    fragments = inputs.spark_input(lineitem, "fragments", n)
    files = inputs.spark_input(lineitem, "files", n)
    pieces = BATCH_APPENDS * BATCH_TASKS
    batch_fragments = inputs.spark_input(lineitem, "batch-fragments", pieces)
    batch_files = inputs.spark_input(lineitem, "batch-files", pieces)

    def case(
        scenario: str,
        variant: str,
        rows: int,
        fermion: dict[str, Any],
        parquet: dict[str, Any],
        report_size: bool = False,
        **extra: Any,
    ) -> _Case | str:
        """A case, or why its inputs are missing."""
        given = {"fermion": fermion, "parquet": parquet}
        if any(v is None for paths in given.values() for v in paths.values()):
            return f"input not prepared: {inputs.failed}"
        specs = {
            system: {
                **extra,
                "scenario": scenario,
                "system": system,
                "paths": {
                    **{k: str(v) for k, v in paths.items()},
                    "work": str(work / system),
                },
            }
            for system, paths in given.items()
        }
        sizes_of = {
            system: str(next(iter(paths.values()))) if report_size else None
            for system, paths in given.items()
        }
        return _Case(scenario, variant, rows, specs, sizes_of)

    wanted: list[_Case | str] = []
    names: list[tuple[str, str]] = []

    def add(scenario: str, variant: str, made: _Case | str) -> None:
        names.append((scenario, variant))
        wanted.append(made)

    variant = f"{sf}, every column, local[2]"
    add("spark_lineitem_agg", variant, case(
        "spark_lineitem_agg", variant, lineitem_rows,
        {"table": lineitem_table}, {"parquet": lineitem_parquet}, report_size=True,
    ))  # fmt: skip
    variant = f"{len(columns)} of {wide.cols:,} cols x {wide.rows:,} rows, local[2]"
    add("spark_wide_read10", variant, case(
        "spark_wide_read10", variant, wide.rows,
        {"table": wide_table}, {"parquet": wide_parquet}, report_size=True, columns=columns,
    ))  # fmt: skip
    variant = f"{sf} ({lineitem_rows:,} rows) from Parquet, plain, local[2]"
    add("spark_ingest", variant, case(
        "spark_ingest", variant, lineitem_rows,
        {"parquet": lineitem_parquet}, {"parquet": lineitem_parquet},
    ))  # fmt: skip
    variant = f"{sf} ({lineitem_rows:,} rows) from Parquet, batch mode, local[2]"
    add("spark_ingest", variant, case(
        "spark_ingest", variant, lineitem_rows,
        {"parquet": lineitem_parquet}, {"parquet": lineitem_parquet},
        batch_id_column="l_orderkey",
    ))  # fmt: skip
    variant = f"{sf} ({lineitem_rows:,} rows), local[2]"
    add("spark_migrate", variant, case(
        "spark_migrate", variant, lineitem_rows,
        {"parquet": lineitem_parquet}, {"parquet": lineitem_parquet},
    ))  # fmt: skip
    variant = f"{sf}, {n:,} small fragments -> {files_out}, local[2]"
    add("spark_compact", variant, case(
        "spark_compact", variant, lineitem_rows,
        {"table": fragments}, {"parquet_files": files},
        target_rows=TARGET_ROWS, files_out=files_out,
    ))  # fmt: skip
    # at least 4 outputs, so the layout check compares id ranges in --quick too; the
    # target leaves slack, as whole batches make fragments a little under the target
    batch_target = min(TARGET_ROWS, math.ceil(lineitem_rows / 3.5))
    batch_out = math.ceil(lineitem_rows / batch_target)
    variant = (
        f"{sf}, batch mode: {BATCH_APPENDS} appends x {BATCH_TASKS} tasks of interleaved "
        f"{BATCH_ID}s -> {batch_out}, local[2]"
    )
    add("spark_compact", variant, case(
        "spark_compact", variant, lineitem_rows,
        {"table": batch_fragments}, {"parquet_files": batch_files},
        target_rows=batch_target, files_out=batch_out, batch_id_column=BATCH_ID,
    ))  # fmt: skip

    variant = f"{sf} ({lineitem_rows:,} rows), 1 new int64 column, local[2]"
    add("spark_backfill", variant, case(
        "spark_backfill", variant, lineitem_rows,
        {"table": lineitem_table}, {"parquet": lineitem_parquet},
    ))  # fmt: skip

    ready = [c for c in wanted if isinstance(c, _Case)]
    failed = []
    for (scenario, variant), made in zip(names, wanted, strict=True):
        if isinstance(made, str):
            failed += _unavailable(scenario, variant, made)
    return ready, failed


def run(results: list[dict[str, Any]]) -> None:
    """Prepare the inputs, measure the seven cases, append their rows to ``results``."""
    sizes = _sizes()
    repeat = int(os.environ.get("FERMION_BENCH_REPEAT", "5"))
    data_dir = Path(os.environ.get("FERMION_BENCH_DATA_DIR", f".bench-data/{sizes.name}"))
    ready, failed = _cases(sizes, data_dir.resolve())
    measured = _measure(ready, repeat) if ready else []
    for case, rows in zip(ready, measured, strict=True):
        if case.scenario in ("spark_ingest", "spark_migrate"):
            _rows_per_s(rows, case.expected_rows)
        if case.scenario == "spark_compact":
            batch = "batch mode" in case.variant
            _files_note(rows, BATCH_APPENDS * BATCH_TASKS if batch else sizes.compact_fragments)
        results += rows
    results += failed
