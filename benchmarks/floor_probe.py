"""How fast can a Python data source answer the TPC-H queries at all? A floor probe.

Not part of ``make bench``: run it by hand on a quiet machine::

    python -m benchmarks.floor_probe [--scale 1] [--repeat 5] [--work DIR] [--data-dir DIR]

It writes the eight TPC-H tables (``tpchgen-cli``) through Spark as Fermion tables and as
Parquet, copies every Fermion fragment into an uncompressed Arrow IPC file, and times the
queries of :mod:`benchmarks.tpch_queries` three ways in one ``local[2]`` session:

* ``parquet``: views of ``spark.read.parquet``;
* ``fermion-sql``: :func:`fermion.spark.sql` over the Fermion tables (the columns each
  query names, and the ``WHERE`` conjuncts a view decides alone as its ``filter`` option);
* ``ipc-floor``: the same views (same columns, same filters applied with pyarrow), read by
  a minimal Python data source that memory-maps the IPC files (one partition per
  fragment, as Fermion's reader makes them) and hands Spark their record batches of
  65,536 rows one at a time. It decodes nothing, so its time is mostly what Spark's
  Python data source path costs by itself: the Python workers, the Arrow hand-over to the
  JVM and Spark's conversion of those batches (plus reading the larger uncompressed files
  through the page cache).

Printed: each query's median per system, and geometric means as ratios to ``parquet``.
The answers of the three systems are compared (an error if they differ).
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from benchmarks.spark_cases import SPARK_CONF
from benchmarks.tpch_queries import QUERIES, TABLES, generate, normalise, write_tables

__all__ = ["IpcFloorSource", "floor_sql", "ipc_copies", "main"]

#: Rows per record batch of the IPC copies (the batches the floor source hands over).
_BATCH_ROWS = 65_536


class _File(InputPartition):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class _IpcReader(DataSourceReader):
    def __init__(self, files: list[str], columns: list[str], condition: str | None) -> None:
        self.files, self.columns, self.condition = files, columns, condition

    def partitions(self) -> list[InputPartition]:
        return [_File(f) for f in self.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _File)
        expression = None
        with pa.memory_map(partition.path) as source:
            file = ipc.open_file(source)
            for i in range(file.num_record_batches):  # streamed, one batch at a time
                batch = file.get_batch(i).select(self.columns)
                if self.condition is not None:
                    if expression is None:
                        from fermion.table.predicate import parse_predicate

                        expression = parse_predicate(self.condition, batch.schema)
                    batch = batch.filter(expression)
                yield batch


class IpcFloorSource(DataSource):
    """``fermion_floor_ipc``: options ``path`` (a directory of ``*.arrow`` files),
    ``columns`` (comma-separated), ``filter`` (SQL text, as Fermion's option)."""

    @classmethod
    def name(cls) -> str:
        return "fermion_floor_ipc"

    def _files(self) -> list[str]:
        return sorted(str(p) for p in Path(self.options["path"]).glob("*.arrow"))

    def _columns(self, schema: pa.Schema) -> list[str]:
        given = self.options.get("columns")
        return given.split(",") if given else list(schema.names)

    def schema(self) -> StructType:
        with pa.memory_map(self._files()[0]) as source:
            schema = ipc.open_file(source).schema
        return from_arrow_schema(pa.schema([schema.field(c) for c in self._columns(schema)]))

    def reader(self, schema: StructType) -> DataSourceReader:
        return _IpcReader(self._files(), schema.fieldNames(), self.options.get("filter"))


def floor_sql(
    spark: Any, query: str, ipc_roots: dict[str, Path], schemas: dict[str, pa.Schema]
) -> Any:
    """``query`` over views planned exactly as :func:`fermion.spark.sql` plans them, read by
    :class:`IpcFloorSource`."""
    from fermion.spark.sql import query_columns
    from fermion.spark.sql_views import plan_views

    plan = plan_views(query, schemas)
    for view, condition in plan.filters.items():
        name = plan.sources[view]
        reader = spark.read.format("fermion_floor_ipc").option("path", str(ipc_roots[name]))
        reader = reader.option("columns", ",".join(query_columns(query, schemas[name].names)))
        if condition is not None:
            reader = reader.option("filter", condition)
        reader.load().createOrReplaceTempView(view)
    return spark.sql(plan.query or query)


def ipc_copies(fermion_root: Path, ipc_root: Path) -> dict[str, Path]:
    """Every TPC-H table under ``fermion_root`` as uncompressed Arrow IPC files under
    ``ipc_root/<table>/``: as many files as the table has fragments, of equal row counts."""
    import fermion.table as ft

    roots = {}
    for table in TABLES:
        out = ipc_root / table
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        ds = ft.dataset(str(fermion_root / table))
        rows = ds.to_table()
        parts = max(1, len(ds.fragments))
        step = -(-rows.num_rows // parts)
        for i in range(parts):
            piece = rows.slice(i * step, step)
            with ipc.new_file(str(out / f"{i:05d}.arrow"), piece.schema) as sink:
                sink.write_table(piece, max_chunksize=_BATCH_ROWS)
        roots[table] = out
    return roots


def _timed(run: Any, repeat: int) -> tuple[float, list[tuple[Any, ...]]]:
    answer = normalise(run().collect())  # warm-up
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        again = normalise(run().collect())
        times.append(time.perf_counter() - started)
        if again != answer:
            raise RuntimeError("an answer changed between runs")
    return statistics.median(times), answer


def main(argv: list[str] | None = None) -> None:
    """Run the probe and print its table (see the module docstring)."""
    import fermion.spark
    import fermion.table as ft

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path(".bench-data/floor-probe"))
    parser.add_argument("--data-dir", type=Path, default=Path(".bench-data/full"))
    args = parser.parse_args(argv)
    source = generate(args.data_dir, args.scale)  # reuses make bench's generated tables
    spark = fermion.spark.session("fermion-floor-probe", conf=SPARK_CONF)
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(IpcFloorSource)
    try:
        roots = {s: args.work / s for s in ("fermion", "parquet")}
        for system, root in roots.items():
            shutil.rmtree(root, ignore_errors=True)
            write_tables(spark, source, root, system)
        ipc_roots = ipc_copies(roots["fermion"], args.work / "ipc")
        uris = {t: str(roots["fermion"] / t) for t in TABLES}
        schemas = {t: ft.dataset(uris[t]).schema for t in TABLES}
        for table in TABLES:
            spark.read.parquet(str(roots["parquet"] / table)).createOrReplaceTempView(table)
        medians: dict[str, dict[str, float]] = {"parquet": {}, "fermion-sql": {}, "ipc-floor": {}}
        for name, query in QUERIES.items():
            runs = {
                "ipc-floor": lambda q=query: floor_sql(spark, q, ipc_roots, schemas),
                "fermion-sql": lambda q=query: fermion.spark.sql(spark, q, uris),
                # last: the two above replace the views of the table names
                "parquet": lambda q=query: _parquet(spark, roots["parquet"], q),
            }
            answers = {}
            for system, run in runs.items():
                medians[system][name], answers[system] = _timed(run, args.repeat)
            if len({repr(a) for a in answers.values()}) != 1:
                raise RuntimeError(f"{name}: the systems' answers differ")
            print(name, {s: round(m[name], 3) for s, m in medians.items()}, flush=True)
        base = _geomean(medians["parquet"].values())
        for system, values in medians.items():
            mean = _geomean(values.values())
            print(f"geomean {system}: {mean:.3f} s ({mean / base:.2f}x parquet)")
    finally:
        spark.stop()


def _parquet(spark: Any, root: Path, query: str) -> Any:
    for table in TABLES:
        spark.read.parquet(str(root / table)).createOrReplaceTempView(table)
    return spark.sql(query)


def _geomean(values: Any) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


if __name__ == "__main__":
    main()
