"""Fermion benchmarks: Fermion vs pyarrow.parquet (zstd) vs pylance, side by side in one run.

Run everything with ``make bench`` (``python -m benchmarks.run``); see ``benchmarks/run.py``
for the options. Layout:

- ``config``: sizes (full and ``--quick``), seeds and paths, in one place.
- ``datagen``: deterministic, seeded generators of the benchmark tables (wide, nested,
  TPC-H lineitem via ``tpchgen-cli``).
- ``systems``: one adapter per system (write, open + schema, read, take, IO probe) and the
  single place that decides whether a system is available.
- ``scenarios``: the scenario ids and what each one times.
- ``prepare``: writes each system's copy of each dataset once, cached in ``.bench-data/``.
- ``worker``: the subprocess that times one (scenario, variant, system) and reports peak RSS.
- ``report``: Markdown (``docs/BENCHMARKS.md``) and JSON output, ratios, machine facts.

Result rows are plain dicts (see :data:`benchmarks.report.RESULT_KEYS`). Optional extra
modules named ``benchmarks/*_bench.py`` that expose ``run(results: list[dict]) -> None`` are
imported and run by ``benchmarks.run``; they append rows of the same shape.
"""

from __future__ import annotations
