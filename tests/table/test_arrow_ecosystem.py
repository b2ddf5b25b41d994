"""Tables in the Arrow ecosystem: every input ``write_dataset`` / ``append`` take, scans as
streams, DuckDB and Polars on a Dataset (what they push down), the lance-style API
(tags mapping, restore(version), default retention, head, to_pandas, repr)."""

from __future__ import annotations

import pickle
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pytest

import fermion
import fermion.table as ft
from fermion.errors import DatasetError, InvalidArgumentError, SchemaMismatchError
from fermion.table.scan import Scanner

N = 1000
TABLE = pa.table(
    {
        "id": np.arange(N, dtype=np.int64),
        "x": np.arange(N, dtype=np.float64) / 10,
        "s": [f"s{i % 7}" for i in range(N)],
    }
)


def _ds(tmp_path: Path, rows_per_file: int = 100) -> ft.Dataset:
    return ft.write_dataset(TABLE, str(tmp_path / "t"), max_rows_per_file=rows_per_file)


class StreamOnly:
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.table.__arrow_c_stream__(requested_schema)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t,
        lambda t: t.combine_chunks().to_batches()[0],
        lambda t: pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=64)),
        lambda t: t.to_pandas(),
        lambda t: pl.from_arrow(t),
        StreamOnly,
    ],
    ids=["table", "batch", "reader", "pandas", "polars", "c_stream"],
)
def test_write_dataset_and_append_take_every_input(tmp_path: Path, make: Any) -> None:
    ds = ft.write_dataset(make(TABLE), str(tmp_path / "t"), max_rows_per_file=300)
    assert [f.physical_rows for f in ds.fragments] == [300, 300, 300, 100]
    ds.append(make(TABLE.slice(0, 10)))
    assert ds.version == 2 and ds.count_rows() == N + 10
    assert ds.to_table().slice(0, N).to_pydict() == TABLE.to_pydict()


def test_streamed_fragment_stats_equal_whole_table_stats(tmp_path: Path) -> None:
    """Statistics merged batch by batch are those of the whole fragment (pruning uses them)."""
    values = pa.array([None, 5.0, float("nan"), -1.0] + [2.0] * 6)
    data = pa.table({"a": pa.array([3, None, 1, 9, 4, 4, 4, 4, 4, 4]), "f": values})
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=3))
    streamed = ft.write_dataset(reader, str(tmp_path / "a"))
    whole = ft.write_dataset(data, str(tmp_path / "b"))
    assert list(streamed.manifest.fragments[0].stats) == list(whole.manifest.fragments[0].stats)
    stats = {s.field_id: s for s in streamed.manifest.fragments[0].stats}
    assert (stats[0].min.int_value, stats[0].max.int_value, stats[0].null_count) == (1, 9, 1)
    assert not stats[1].HasField("min")  # a NaN: no range
    assert streamed.count_rows("a > 8") == 1


def test_bad_inputs(tmp_path: Path) -> None:
    ds = _ds(tmp_path)
    with pytest.raises(InvalidArgumentError, match="expected a pyarrow Table"):
        ft.write_dataset(42, str(tmp_path / "u"))
    with pytest.raises(SchemaMismatchError):
        ds.append(pd.DataFrame({"other": [1]}))
    assert ds.version == 1 and ds.count_rows() == N  # nothing committed


def test_scan_outputs(tmp_path: Path) -> None:
    ds = _ds(tmp_path)
    batches = list(ds.to_batches(["id"], "id >= 950", batch_size=30))
    assert [b.num_rows for b in batches] == [30, 20]
    reader = ds.to_reader(["s", "id"], pc.field("id") < 5)
    assert isinstance(reader, pa.RecordBatchReader) and reader.schema.names == ["s", "id"]
    assert reader.read_all()["id"].to_pylist() == [0, 1, 2, 3, 4]
    assert pa.table(ds).num_rows == N  # __arrow_c_stream__
    wanted = pa.schema([("s", pa.string())])
    assert pa.RecordBatchReader.from_stream(ds, schema=wanted).read_all().column_names == ["s"]
    frame = ds.to_pandas(["id", "x"], "id < 3")
    assert isinstance(frame, pd.DataFrame) and frame["x"].tolist() == [0.0, 0.1, 0.2]
    assert ds.head(3)["id"].to_pylist() == [0, 1, 2]
    assert ds.head(150, ["id"], "s = 's0'")["id"].to_pylist() == list(range(0, N, 7))[:143]
    assert ds.head(0).num_rows == 0 and ds.head(0).schema == ds.schema
    assert ds.count_rows("s = 's1' AND id < 100") == len(range(1, 100, 7))
    assert ds.count_rows(pc.field("id") >= 990) == 10
    with pytest.raises(InvalidArgumentError):
        ds.head(-1)
    with pytest.raises(fermion.ColumnNotFoundError):
        ds.to_reader(["nope"])


def test_head_stops_reading(tmp_path: Path) -> None:
    ds = _ds(tmp_path, rows_per_file=50)  # 20 fragments
    scanners: list[Scanner] = []

    class Spy(ft.Dataset):
        def scanner(self, *args: Any, **kwargs: Any) -> Scanner:
            scanners.append(super().scanner(*args, **kwargs))
            return scanners[-1]

    spied = Spy(ds.storage, ds.manifest)
    assert spied.head(10).num_rows == 10
    # the first fragment, and at most the read-ahead behind it
    assert scanners[0].stats.files_opened <= 1 + ft.scan.STREAM_READAHEAD


def _spied(ds: ft.Dataset, calls: list[tuple[str, dict[str, Any]]]) -> ft.Dataset:
    class Spy(ft.Dataset):
        def scanner(self, columns: Any = None, filter: Any = None, **kwargs: Any) -> Scanner:
            scanner = super().scanner(columns, filter, **kwargs)
            calls.append(("scanner", {"columns": columns, "filter": filter, "scan": scanner}))
            return scanner

        def to_batches(self, columns: Any = None, filter: Any = None, **kwargs: Any) -> Any:
            calls.append(("to_batches", {"columns": columns, "filter": filter}))
            return super().to_batches(columns, filter, **kwargs)

    return Spy(ds.storage, ds.manifest)


def test_duckdb_pushes_projection_and_filter_into_a_dataset(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    ads = _spied(_ds(tmp_path), calls).arrow_dataset()  # noqa: F841 - DuckDB finds it by name
    got = duckdb.sql("select s, sum(x) as total from ads where id >= 900 group by s order by s")
    rows = got.fetchall()
    expected = (
        TABLE.filter(pc.field("id") >= 900).group_by("s").aggregate([("x", "sum")]).sort_by("s")
    )
    assert rows == list(zip(expected["s"].to_pylist(), expected["x_sum"].to_pylist(), strict=True))
    (name, kwargs), *_ = calls
    assert name == "scanner"
    # projection pushed: the columns the query returns; `id`, only filtered on, is read for
    # the filter and never handed back
    assert sorted(kwargs["columns"]) == ["s", "x"]
    assert kwargs["filter"] is not None  # the WHERE clause, as a pyarrow expression
    stats = kwargs["scan"].stats
    assert stats.fragments_pruned == 9  # statistics skipped 9 of the 10 fragments


def test_duckdb_on_streams(tmp_path: Path) -> None:
    ds = _ds(tmp_path)
    # a Dataset itself is an Arrow stream to DuckDB (no pushdown: every column is read)
    assert duckdb.sql("select count(*), max(s) from ds").fetchall() == [(N, "s6")]
    reader = ds.to_reader(["id", "x"], "id < 500")  # noqa: F841 - found by name
    assert duckdb.sql("select count(*), sum(id) from reader").fetchall() == [(500, 124750)]
    with fermion.FileReader(ds.storage.target(ds.fragments[0].files[0].path)) as file:  # noqa: F841
        assert duckdb.sql("select max(id) from file").fetchall() == [(99,)]


def test_polars_pushes_projection_and_filter_into_scan_pyarrow_dataset(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    ds = _spied(_ds(tmp_path), calls)
    frame = (
        pl.scan_pyarrow_dataset(ds).filter(pl.col("id") < 20).select(pl.col("x").sum()).collect()
    )
    assert frame.item() == pytest.approx(sum(i / 10 for i in range(20)))
    kwargs = next(k for name, k in calls if name == "to_batches")
    assert kwargs["columns"] == ["x", "id"] or sorted(kwargs["columns"]) == ["id", "x"]
    assert isinstance(kwargs["filter"], pc.Expression)


def test_polars_reads_the_stream_interface(tmp_path: Path) -> None:
    ds = _ds(tmp_path)
    assert pl.DataFrame(ds).shape == (N, 3)
    lazy = pl.scan_arrow_c_stream(ds.to_reader(["id"], "id >= 990"))
    assert lazy.select(pl.col("id").sum()).collect().item() == sum(range(990, N))


def test_arrow_dataset_reads_and_refuses_what_a_table_does_not_offer(tmp_path: Path) -> None:
    ds = _ds(tmp_path)
    ads = ds.arrow_dataset()
    assert isinstance(ads, pds.Dataset) and not isinstance(ds, pds.Dataset)
    assert ads.schema == ds.schema and ads.count_rows("id < 10") == 10
    assert ads.to_table(["id"], pc.field("id") < 2)["id"].to_pylist() == [0, 1]
    assert ads.head(2).num_rows == 2 and ads.take([5])["id"].to_pylist() == [5]
    assert sum(b.num_rows for b in ads.to_batches(filter="id >= 500")) == 500
    assert pa.table(ads).num_rows == N
    for call in (
        lambda: ads.filter(pc.field("id") > 1),
        lambda: ads.get_fragments(),
        lambda: ads.join(ads, "id"),
        lambda: ads.join_asof(ads, "id", "id", 1),
        lambda: ads.sort_by("id"),
        lambda: ads.replace_schema(ds.schema),
        lambda: ads._get_fragments(None),
        lambda: ads._scanner_options({}),
        lambda: ads._scan_options(),
    ):
        with pytest.raises(InvalidArgumentError, match="not supported"):
            call()
    assert ads.partition_expression.equals(pc.scalar(True))
    for name in dir(pds.Dataset):  # nothing of the base class is left unimplemented
        if not name.startswith("__"):
            assert name in vars(type(ads)), name
    for obj in (ds, ads):
        copy = pickle.loads(pickle.dumps(obj))
        assert copy.count_rows() == N
        assert obj == obj and obj != copy and len({obj, copy}) == 2


def test_tags_mapping_restore_retention_create_and_repr(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(TABLE.slice(0, 10), uri)
    ds.tags.create("v1")
    ds.append(TABLE.slice(10, 5))
    ds.tags.create("latest", 2)
    assert dict(ds.tags) == {"v1": 1, "latest": 2} and ds.tags() == {"v1": 1, "latest": 2}
    assert "v1" in ds.tags and ds.tags["latest"] == 2 and len(ds.tags) == 2
    with pytest.raises(KeyError):
        ds.tags["nope"]
    ds.tags.delete("latest")
    assert list(ds.tags) == ["v1"]
    ds.restore(1)
    assert ds.version == 3 and ds.count_rows() == 10
    ds.restore(tag="v1")
    assert ds.version == 4
    for bad, error in (
        ("1", InvalidArgumentError),
        (9, DatasetError),
        (True, InvalidArgumentError),
    ):
        with pytest.raises(error):
            ds.restore(bad)
    with pytest.raises(InvalidArgumentError):
        ds.restore(1, tag="v1")
    assert [v.operation for v in ds.versions()] == ["create", "append", "restore", "restore"]
    assert ds.cleanup_old_versions()["versions_removed"] == 0  # 14 days by default
    assert ds.cleanup_old_versions(timedelta(0))["versions_removed"] == 2  # v1 is tagged
    assert repr(ds) == (
        f"Dataset({ds.uri!r}, version=4, rows=10, fragments=1, "
        "schema=(id: int64, x: double, s: string))"
    )
    appended = ft.write_dataset(TABLE, str(tmp_path / "a"), mode="append")
    assert appended.versions()[0].operation == "create"  # append to nothing creates


def test_the_repr_of_a_wide_table_shows_ten_columns_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    """A 2,000-column table prints one short line, cut like pyarrow's ``Table`` preview."""
    wide = pa.table({f"c{i}": pa.array([i], pa.int16()) for i in range(2_000)})
    ds = ft.write_dataset(wide, str(tmp_path / "wide"))
    shown = ", ".join(f"c{i}: int16" for i in range(10))
    assert repr(ds) == (
        f"Dataset({ds.uri!r}, version=1, rows=1, fragments=1, "
        f"schema=({shown}, ... 1990 more columns))"
    )
    eleven = ft.write_dataset(wide.select(range(11)), str(tmp_path / "eleven"))
    assert repr(eleven).endswith(f"schema=({shown}, ... 1 more column))")
    ten = ft.write_dataset(wide.select(range(10)), str(tmp_path / "ten"))
    assert repr(ten).endswith(f"schema=({shown}))")
