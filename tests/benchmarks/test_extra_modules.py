"""``make bench`` calls ``run(results)`` of every ``benchmarks/*_bench.py`` module
(benchmarks/run.py); a module named so with another ``run`` would only log an error there.
Stand-alone measurement scripts (``stream_memory``, ``commit_latency``) are named otherwise."""

from __future__ import annotations

import importlib
import inspect

from benchmarks.run import extra_modules


def test_every_bench_module_takes_the_results_list() -> None:
    names = extra_modules()
    assert "spark_bench" in names and "stream_memory" not in names
    for name in names:
        run = importlib.import_module(f"benchmarks.{name}").run
        params = list(inspect.signature(run).parameters.values())
        assert params and params[0].name == "results", name
        assert all(p.default is not inspect.Parameter.empty for p in params[1:]), name
