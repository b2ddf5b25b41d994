"""Jobs whose tasks read Parquet files with pyarrow (fermion/spark/jobs/file_tasks.py).

Every table written this way is compared with Spark's own read of the same files, and with
the same job forced through Spark's reader (``file_reader: spark``). Inputs where the two
readers could differ must fall back to Spark: a uint64 column, reader options, a
batch-mode write, a column missing from one file.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
import pytest

import fermion
from fermion.errors import DatasetError
from fermion.spark.jobs.config import IngestConfig, MigrateParquetConfig
from fermion.spark.jobs.distributed import arrow_schema_of
from fermion.spark.jobs.file_tasks import (
    FilePiece,
    FileTaskPlan,
    FileVerificationError,
    _pack,
    _source_digest,
    _verify,
    _verify_digest,
    converts_exactly,
    execute_file_tasks,
    parquet_tasks,
    partition_values,
    plan_file_tasks,
)
from fermion.spark.jobs.ingest import ingest
from fermion.spark.jobs.migrate_parquet import migrate_parquet
from fermion.spark.jobs.runner import JobContext
from fermion.table.scan import read_fragment
from fermion.table.tasks import execute_write, plan_write

LOG = logging.getLogger("test_file_tasks")


def _rows(n: int, first: int = 0) -> pa.Table:
    ids = list(range(first, first + n))
    utc = dt.UTC
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "small": pa.array([i % 100 for i in ids], pa.uint16()),
        "f": pa.array([None if i % 11 == 0 else i / 3 for i in ids], pa.float64()),
        "price": pa.array([decimal.Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
        "s": pa.array([None if i % 13 == 0 else f"s{i}" for i in ids], pa.string()),
        "day": pa.array([dt.date(2026, 1, 1) + dt.timedelta(days=i % 300) for i in ids]),
        "ts": pa.array(
            [dt.datetime(2026, 1, 1, tzinfo=utc) + dt.timedelta(seconds=i) for i in ids],
            pa.timestamp("us", tz="UTC"),
        ),
        "local": pa.array([dt.datetime(2026, 1, 1) + dt.timedelta(minutes=i) for i in ids]),
        "tags": pa.array([[i, i + 1][: i % 3] for i in ids], pa.list_(pa.int32())),
        "pt": pa.array([{"x": i, "y": str(i)} for i in ids],
                       pa.struct([("x", pa.int64()), ("y", pa.string())])),  # fmt: skip
        "m": pa.array([[("k", i)] for i in ids], pa.map_(pa.string(), pa.int64())),
    })  # fmt: skip


def _partitioned_source(root: Path) -> int:
    """Files under dt=.../region=... directories (one region null), several row groups."""
    total = 0
    layout = [("2026-11-20", "eu"), ("2026-11-20", "us"), ("2026-11-21", None)]
    for k, (day, region) in enumerate(layout):
        directory = (
            root
            / f"dt={day}"
            / ("region=__HIVE_DEFAULT_PARTITION__" if region is None else f"region={region}")
        )
        directory.mkdir(parents=True)
        table = _rows(1_500 + 250 * k, first=total)
        pq.write_table(table, directory / "part-0.parquet", row_group_size=400)
        total += table.num_rows
    return total


def _sorted(frame: Any) -> list[Any]:
    return sorted(frame.collect(), key=lambda r: r["id"])


def _ingest(spark: Any, table: Path, source: Path, **keys: Any) -> dict[str, Any]:
    config = IngestConfig(table=str(table), source=str(source), **keys)
    config.check()
    result = ingest(JobContext("ingest", {}, spark), config)
    return {**result.extra, "committed": result.committed_version, "rows": result.rows_out}


def test_converts_exactly_accepts_only_value_preserving_conversions() -> None:
    good = [
        (pa.int64(), pa.int64()), (pa.string_view(), pa.string()), (pa.large_binary(), pa.binary()),
        (pa.uint8(), pa.int16()), (pa.uint32(), pa.int64()),
        (pa.timestamp("ms", tz="UTC"), pa.timestamp("us", tz="Europe/Paris")),
        (pa.list_(pa.string_view()), pa.list_(pa.string())),
        (pa.struct([("a", pa.uint8())]), pa.struct([("a", pa.int16())])),
    ]  # fmt: skip
    bad = [
        (pa.uint64(), pa.int64()), (pa.uint32(), pa.int32()), (pa.int64(), pa.int32()),
        (pa.timestamp("us"), pa.timestamp("us", tz="UTC")),
        (pa.timestamp("ns", tz="UTC"), pa.timestamp("us", tz="UTC")),
        (pa.float32(), pa.float64()), (pa.date64(), pa.date32()),
        (pa.struct([("a", pa.int8())]), pa.struct([("b", pa.int8())])),
        (pa.decimal128(10, 2), pa.decimal128(12, 2)),
    ]  # fmt: skip
    assert [converts_exactly(s, t) for s, t in good] == [True] * len(good)
    assert [converts_exactly(s, t) for s, t in bad] == [False] * len(bad)


def test_partition_values_unescape_and_null() -> None:
    path = "file:///d/dt=2026-11-20/region=__HIVE_DEFAULT_PARTITION__/c=a%3Db/x.parquet"
    assert partition_values(path, ["dt", "region", "c"]) == {
        "dt": "2026-11-20", "region": None, "c": "a=b",
    }  # fmt: skip
    assert partition_values(path, ["missing"]) is None


def test_pack_splits_by_bytes_and_by_task_count() -> None:
    pieces = [(FilePiece("a", (i,), 10), 100) for i in range(5)] + [(FilePiece("b", (0,), 7), 50)]
    by_bytes = _pack(pieces, 250, 0)
    assert [[(p.path, p.row_groups) for p in t] for t in by_bytes] == [
        [("a", (0, 1))], [("a", (2, 3))], [("a", (4,)), ("b", (0,))],
    ]  # fmt: skip
    by_count = _pack(pieces, 250, 2)
    assert len(by_count) == 2
    assert sum(p.rows for t in by_count for p in t) == 57


def test_ingest_reads_partitioned_parquet_with_pyarrow_as_spark_reads_it(
    spark: Any, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    total = _partitioned_source(source)
    fast = _ingest(spark, tmp_path / "fast", source, max_rows_per_file=1_000)
    slow = _ingest(spark, tmp_path / "slow", source, file_reader="spark")
    assert (fast["reader"], slow["reader"]) == ("pyarrow", "spark")
    assert fast["rows"] == slow["rows"] == total
    expected = spark.read.parquet(str(source))
    got = spark.read.format("fermion").load(str(tmp_path / "fast"))
    assert got.schema == expected.schema
    assert _sorted(got) == _sorted(expected)
    assert _sorted(spark.read.format("fermion").load(str(tmp_path / "slow"))) == _sorted(expected)
    days = {r["dt"] for r in got.select("dt").distinct().collect()}
    assert days == {dt.date(2026, 11, 20), dt.date(2026, 11, 21)}  # Spark inferred dates
    assert got.filter("region is null").count() == 2_000
    assert len(fermion.dataset(str(tmp_path / "fast")).fragments) >= 5  # 1,000 rows per file


@pytest.mark.parametrize(
    "case", ["uint64", "reader_options", "batch_ids_overlap", "column_missing_in_a_file"]
)
def test_inputs_spark_could_read_differently_fall_back(
    spark: Any, tmp_path: Path, case: str
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    table = _rows(300).select(["id", "s"])
    keys: dict[str, Any] = {}
    if case == "uint64":  # Spark reads it as decimal(20, 0)
        table = table.append_column("u", pa.array(range(300), pa.uint64()))
    elif case == "reader_options":
        keys["source_options"] = {"pathGlobFilter": "*.parquet"}
    elif case == "batch_ids_overlap":  # every row group spans the ids: no cut is possible
        table = table.set_column(0, "id", pa.array([(i * 7919) % 300 for i in range(300)]))
        keys.update(batch_id_column="id", partitions=4)
    pq.write_table(table, source / "a.parquet", row_group_size=50)
    other = table if case != "column_missing_in_a_file" else table.drop_columns(["s"])
    pq.write_table(other.slice(0, 10), source / "b.parquet")
    summary = _ingest(spark, tmp_path / "t", source, **keys)
    assert summary["reader"] == "spark"
    expected = spark.read.options(**keys.get("source_options", {})).parquet(str(source))
    assert _sorted(spark.read.format("fermion").load(str(tmp_path / "t"))) == _sorted(expected)


def test_migrate_with_pyarrow_tasks_verifies_and_matches_spark(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "in"
    total = _partitioned_source(source)
    config = MigrateParquetConfig(table=str(tmp_path / "t"), source=str(source), partitions=3)
    config.check()
    result = migrate_parquet(JobContext("migrate_parquet", {}, spark), config)
    assert result.extra["reader"] == "pyarrow" and result.extra["verified"] is True
    assert result.rows_out == total and result.committed_version == 1
    got = spark.read.format("fermion").load(str(tmp_path / "t"))
    assert _sorted(got) == _sorted(spark.read.parquet(str(source)))


def test_verification_catches_rows_that_differ(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(_rows(500), source / "a.parquet")
    pq.write_table(_rows(500, first=7), source / "b.parquet")
    df = spark.read.parquet(str(source / "a.parquet"))
    schema = arrow_schema_of(df)
    plan = plan_write(str(tmp_path / "t"), schema, mode="append")
    a, b = (FilePiece(f"file://{source / n}", (0,), 500) for n in ("a.parquet", "b.parquet"))
    result = execute_write(plan, pq.read_table(source / "a.parquet").cast(schema))
    _verify(plan, result, [a], schema)  # the same rows: no error
    with pytest.raises(FileVerificationError, match="differ from the Parquet rows"):
        _verify(plan, result, [b], schema)
    with pytest.raises(FileVerificationError, match="fewer rows"):
        _verify(plan, result, [a, b], schema)


def _flat(table: pa.Table) -> pa.Table:
    """The columns of ``table`` that have a digest (no list, struct or map)."""
    return table.select([f.name for f in table.schema if not pa.types.is_nested(f.type)])


def test_migrate_of_flat_columns_verifies_by_digest_and_matches_spark(
    spark: Any, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for k in range(3):
        pq.write_table(
            _flat(_rows(700, first=700 * k)), source / f"{k}.parquet", row_group_size=300
        )
    config = MigrateParquetConfig(table=str(tmp_path / "t"), source=str(source), partitions=2)
    config.check()
    result = migrate_parquet(JobContext("migrate_parquet", {}, spark), config)
    assert result.extra["reader"] == "pyarrow" and result.extra["verified"] is True
    assert result.rows_out == 2100
    got = spark.read.format("fermion").load(str(tmp_path / "t"))
    assert _sorted(got) == _sorted(spark.read.parquet(str(source)))


def test_digest_verification_catches_rows_that_differ(tmp_path: Path) -> None:
    """The digest path (the default for flat columns) compares the rows read back with the
    rows the writer was given; a nested column takes the row-for-row path instead."""
    rows = _flat(_rows(500))
    plan = plan_write(str(tmp_path / "t"), rows.schema, mode="append")
    given = _source_digest(plan, rows.schema)
    assert given is not None
    batches = list(given.feed(iter(rows.to_batches(max_chunksize=64))))
    result = execute_write(plan, pa.Table.from_batches(batches))
    _verify_digest(plan, result, given)  # the same rows: no error
    other = _source_digest(plan, rows.schema)
    assert other is not None
    changed = rows.set_column(
        rows.schema.get_field_index("price"), "price",
        pa.array([decimal.Decimal(i) / 100 for i in range(1, 501)], pa.decimal128(12, 2)),
    )  # fmt: skip
    other.add(changed)
    with pytest.raises(FileVerificationError, match=r"column\(s\) price differ"):
        _verify_digest(plan, result, other)
    more = _source_digest(plan, rows.schema)
    assert more is not None
    more.add(_flat(_rows(501)))
    with pytest.raises(FileVerificationError, match="wrote 500 rows; its Parquet pieces hold 501"):
        _verify_digest(plan, result, more)
    nested = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))])
    assert _source_digest(plan_write(str(tmp_path / "n"), nested, mode="append"), nested) is None


def test_a_row_count_unlike_the_footers_fails_and_commits_nothing(
    spark: Any, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(_rows(200), source / "a.parquet")
    df = spark.read.parquet(str(source))
    planned = parquet_tasks(df, "auto", LOG)
    assert isinstance(planned, FileTaskPlan) and planned.rows == 200
    plan = plan_write(str(tmp_path / "t"), planned.schema, mode="append")
    wrong = FileTaskPlan(planned.tasks, planned.schema, planned.rows + 1)
    with pytest.raises(FileVerificationError, match="footers hold 201"):
        execute_file_tasks(spark, plan, wrong)
    with pytest.raises(DatasetError, match="no versions"):
        fermion.dataset(str(tmp_path / "t"))


def test_plan_refuses_what_it_cannot_read_exactly(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(_rows(50), source / "a.parquet")
    df = spark.read.parquet(str(source))
    schema = arrow_schema_of(df)
    files = df.inputFiles()
    assert "reader options" in str(plan_file_tasks(df, files, schema, options={"x": "1"}))
    assert plan_file_tasks(df, [], schema) == "no input files"
    one_group = plan_file_tasks(df, files, schema, partitions=4)  # 1 row group, 4 tasks asked
    assert "1 task(s) of the 4 asked for" in str(one_group)
    planned = plan_file_tasks(df, files, schema, partitions=1)
    assert isinstance(planned, FileTaskPlan) and planned.rows == 50


def _batch_source(root: Path, shuffled: bool) -> pa.Table:
    """Four files of increasing, disjoint id ranges (batches of 1-5 rows), several row
    groups each; ``shuffled``: rows in random order inside each file."""
    root.mkdir()
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 6, 1_200)
    ids = np.repeat(np.arange(len(lengths), dtype=np.int64) * 2, lengths)
    table = pa.table({"bid": ids, "pos": np.arange(len(ids)), "v": ids.astype(str)})
    step = -(-len(ids) // 4)
    for k in range(4):
        start = k * step
        while start and start < len(ids) and ids[start] == ids[start - 1]:
            start += 1  # files hold whole batches
        end = (k + 1) * step
        while end < len(ids) and ids[end] == ids[end - 1]:
            end += 1
        part = table.slice(start, max(0, min(end, len(ids)) - start))
        if shuffled:
            part = part.take(rng.permutation(part.num_rows))
        pq.write_table(part, root / f"part-{k}.parquet", row_group_size=300)
    return table


@pytest.mark.parametrize("shuffled", [False, True])
def test_batch_mode_ingest_by_tasks_keeps_batches_whole_and_ranges_disjoint(
    spark: Any, tmp_path: Path, shuffled: bool
) -> None:
    table = _batch_source(tmp_path / "in", shuffled)
    summary = _ingest(
        spark, tmp_path / "t", tmp_path / "in", batch_id_column="bid", partitions=3,
        max_rows_per_file=700,
    )  # fmt: skip
    assert summary["reader"] == "pyarrow" and summary["rows"] == table.num_rows
    ds = fermion.dataset(str(tmp_path / "t"))
    spans = []
    for fragment in ds.fragments:
        ids = read_fragment(ds.storage, ds.table_schema, fragment, ["bid"])["bid"].to_numpy()
        assert (np.diff(ids) >= 0).all()  # increasing within a file
        spans.append((int(ids[0]), int(ids[-1])))
    spans.sort()
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))  # disjoint
    got = ds.read_batches([0, 2, 1_000, 2_398])
    want = table.filter(pa.compute.is_in(table["bid"], pa.array([0, 2, 1_000, 2_398])))
    assert sorted(got["pos"].to_pylist()) == sorted(want["pos"].to_pylist())
    expected = spark.read.parquet(str(tmp_path / "in"))
    assert _sorted_by(spark.read.format("fermion").load(str(tmp_path / "t")), "pos") == (
        _sorted_by(expected, "pos")
    )


def _sorted_by(frame: Any, key: str) -> list[Any]:
    return sorted(frame.collect(), key=lambda r: r[key])
