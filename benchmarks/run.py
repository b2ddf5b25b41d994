"""Run every benchmark scenario for Fermion, pyarrow.parquet and pylance; write the report.

Usage::

    python -m benchmarks.run [--quick] [--only SCENARIO[,SCENARIO..]] [--repeat N]
                             [--output DIR] [--data-dir DIR]

Writes ``DIR/BENCHMARKS.md`` and ``DIR/benchmarks.json`` (default ``DIR`` = ``docs/``).
Each (case, system) is timed in a fresh subprocess (see ``benchmarks.worker``); files are
written once per system into ``--data-dir`` (default ``.bench-data/``) and reused.

Extra modules ``benchmarks/*_bench.py`` exposing ``run(results: list[dict]) -> None`` are
run after the built-in scenarios (only those named in ``--only``, if given); they can read
``FERMION_BENCH_QUICK``, ``FERMION_BENCH_REPEAT`` and ``FERMION_BENCH_DATA_DIR``, and may
add lines to the report's Method section with ``method_notes(sizes) -> [(key, text)]``.
The Spark cases are such a module (``--only spark_bench``; ``benchmarks/spark_bench.py``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import benchmarks
from benchmarks import datagen, report, systems
from benchmarks.config import (
    DEFAULT_DATA_DIR,
    DEFAULT_OUTPUT_DIR,
    DEFAULT_REPEAT,
    FULL,
    QUICK,
    WARMUP_RUNS,
)
from benchmarks.launch import log as _log
from benchmarks.launch import prepare_copy, run_worker
from benchmarks.prepare import dataset_path, fingerprint
from benchmarks.scenarios import SCENARIOS, Case, cases

__all__ = ["extra_modules", "main", "parse_args", "prepare_copy", "run_worker"]


def extra_modules() -> list[str]:
    """Names of the optional ``benchmarks/*_bench.py`` modules present."""
    return sorted(
        m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.endswith("_bench")
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument(
        "--only", default="", help="comma-separated scenario ids (or extra module names)"
    )
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, help="timed runs")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT_DIR, help="report dir")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="data cache")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    known = set(SCENARIOS) | set(extra_modules())
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - known
    if unknown:
        parser.error(f"unknown scenario(s) {sorted(unknown)}; known: {sorted(known)}")
    args.only_set = only or None
    return args


def _flag_check(row: dict[str, Any]) -> dict[str, Any]:
    """A row whose file failed its read-back check is ``wrong-result`` (value kept in JSON)."""
    check = row.pop("check", None)
    if check is None:
        return row
    note = "; ".join(n for n in (row.get("note"), check) if n)
    return {**row, "status": "wrong-result", "note": note}


class Runner:
    """Prepares files and measures every case of one run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.sizes = QUICK if args.quick else FULL
        self.data_dir: Path = args.data_dir.resolve() / self.sizes.name
        self.available = systems.availability()
        self.fingerprints = {name: fingerprint(name) for name in systems.SYSTEMS}
        self.prepared: dict[tuple[str, str], dict[str, Any]] = {}
        #: Method lines of the extra modules run (their optional ``method_notes(sizes)``).
        self.method_notes: list[tuple[str, str]] = []

    def path(self, case: Case, system: str) -> Path:
        return dataset_path(self.data_dir, case.dataset, system, self.fingerprints[system])

    def prepare(self, case: Case, system: str) -> dict[str, Any]:
        """Make sure ``system``'s copy of the case's dataset exists; ``{'status': ...}``."""
        key = (case.dataset.id, system)
        if key not in self.prepared:
            path = self.path(case, system)
            self.prepared[key] = prepare_copy(self.data_dir, case.dataset, system, path)
        return self.prepared[key]

    def measure(self, case: Case, system: str) -> dict[str, Any]:
        row: dict[str, Any] = {
            "scenario": case.scenario,
            "variant": case.variant,
            "system": system,
            "unit": "bytes" if case.kind == "size" else "s",
        }
        reason = self.available[system]
        if reason is not None:
            return {**row, "status": "unavailable", "value": None, "note": reason}
        if case.kind != "write":
            prep = self.prepare(case, system)
            if prep.get("status") != "ok":
                note = f"write failed: {prep.get('note')}"
                return {**row, "status": "error", "value": None, "note": note}
            row["size_bytes"] = systems.path_size(self.path(case, system))
            if prep.get("check") != "ok":
                row["check"] = f"read-back check: {prep.get('check')}"
        if case.kind == "size":
            size = row.pop("size_bytes")
            return _flag_check({**row, "status": "ok", "value": size, "note": ""})
        spec = {
            "mode": "measure",
            "case": case.to_json(),
            "system": system,
            "data_dir": str(self.data_dir),
            "path": str(self.path(case, system)),
            "repeat": self.args.repeat,
        }
        _log(f"measuring {case.scenario} [{case.variant}] {system}")
        outcome = run_worker(spec)
        if outcome.get("status") == "ok":
            _log(f"  median {outcome['value'] * 1e3:.1f} ms, peak RSS {outcome['peak_rss_mb']} MB")
        else:
            _log(f"  {outcome.get('status')}: {outcome.get('note')}")
        return _flag_check({**row, **outcome})

    def run_cases(self) -> list[dict[str, Any]]:
        results = []
        for case in cases(self.sizes, self.args.only_set):
            if case.dataset.family == "lineitem":
                datagen.lineitem_source(self.data_dir, case.dataset.scale, log=_log)
            for system in case.systems:
                results.append(self.measure(case, system))
        return results

    def run_extras(self, results: list[dict[str, Any]]) -> None:
        os.environ["FERMION_BENCH_QUICK"] = "1" if self.args.quick else "0"
        os.environ["FERMION_BENCH_REPEAT"] = str(self.args.repeat)
        os.environ["FERMION_BENCH_DATA_DIR"] = str(self.data_dir)
        for name in extra_modules():
            if self.args.only_set is not None and name not in self.args.only_set:
                continue
            _log(f"running extra module benchmarks.{name}")
            try:
                module = importlib.import_module(f"benchmarks.{name}")
                if hasattr(module, "method_notes"):
                    self.method_notes += module.method_notes(self.sizes)
                module.run(results)
            except Exception as exc:  # an extra module must not lose the whole run
                traceback.print_exc()
                results.append(
                    {
                        "scenario": name,
                        "variant": "",
                        "system": "",
                        "status": "error",
                        "value": None,
                        "note": f"{type(exc).__name__}: {exc}",
                    }
                )


def _method_notes(runner: Runner) -> list[tuple[str, str]]:
    s = runner.sizes
    notes = [
        (
            "wide tables",
            "alternating int64 (uniform 0-9,999) / float32 (standard normal) columns, "
            "30% of columns entirely null, seeded; 10 evenly spaced columns are read",
        ),
        (
            "wide_scaling",
            f"{', '.join(f'{c:,}' for c in s.scaling_cols)} columns, all with "
            f"{s.scaling_rows:,} rows (same rows at every width, so only the column count "
            "changes; files stay < 1 GB)",
        ),
        (
            "lineitem",
            f"`tpchgen-cli parquet -s {s.lineitem_scale:g} --tables lineitem`, loaded with "
            "string_view cast to string and field ids dropped, then written by each system",
        ),
        (
            "take",
            f"{s.take_rows:,} distinct seeded random row numbers, sorted; Parquet reads only "
            "the row groups holding them (`ParquetFile.read_row_groups`) then `take`",
        ),
        (
            "nested",
            "`ll: list<list<int64>>`, `ls: list<struct<a: int32, b: string>>`, lengths 0-4, "
            "5% nulls at every level",
        ),
    ]
    notes += [(name, systems.get(name).description) for name in systems.SYSTEMS]
    return notes + runner.method_notes


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    runner = Runner(args)
    for name, reason in runner.available.items():
        _log(f"system {name}: {'available' if reason is None else reason}")
    results = runner.run_cases()
    runner.run_extras(results)
    run_info = {
        "mode": runner.sizes.name,
        "repeat": args.repeat,
        "warmup": WARMUP_RUNS,
        "load_average_1_5_15min_at_start": load_at_start,
        "wall_seconds": time.perf_counter() - started,
        "command": "python -m benchmarks.run " + " ".join(sys.argv[1:] if argv is None else argv),
        "sizes": runner.sizes.__dict__,
        "fingerprints": runner.fingerprints,
        "method_notes": _method_notes(runner),
    }
    md, js = report.write_outputs(results, report.machine_facts(), run_info, args.output)
    _log(f"wrote {md} and {js} in {run_info['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
