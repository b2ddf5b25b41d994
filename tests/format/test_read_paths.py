"""Projection, filters with stripe/page pruning, take, and the IO they cost."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
from fermion.format.read.filters import FilterInfo
from tests.format.test_encodings import encodings_of


@pytest.fixture
def sorted_file(tmp_path: Path) -> tuple[Path, pa.Table]:
    n = 100_000
    rng = np.random.default_rng(1)
    table = pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "score": pa.array(rng.random(n)),
            "name": pa.array([f"user{i:06d}" for i in range(n)]),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i // 1000) for i in range(n)]),
            "maybe": pa.array([None if i % 3 else i for i in range(n)], pa.int32()),
        }
    )
    path = tmp_path / "sorted.fermion"
    fermion.write_table(table, path, page_size=8192, max_stripe_rows=25_000)
    return path, table


@pytest.mark.parametrize(
    "expr",
    [
        pc.field("id") == 12345,
        pc.field("id") < 10,
        (pc.field("id") >= 99_990) | (pc.field("id") < 3),
        pc.field("id").isin([5, 50_000, 99_999]),
        pc.field("name") == "user054321",
        pc.field("name") >= "user099995",
        pc.field("day") == dt.date(2024, 2, 1),
        pc.field("maybe").is_null() & (pc.field("id") < 20),
        pc.field("maybe") > 99_000,
        ~(pc.field("id") > 5),
        (pc.field("score") > 0.999) & (pc.field("id") < 50_000),
        pc.field("id") > 10**9,
    ],
)
def test_filters_match_pyarrow(sorted_file, expr: pc.Expression) -> None:
    path, table = sorted_file
    got = fermion.read_table(path, filter=expr)
    assert got.equals(table.filter(expr))
    projected = fermion.read_table(path, columns=["score"], filter=expr)
    assert projected.column("score").equals(table.filter(expr).column("score"))


def test_selective_filter_reads_few_pages(sorted_file) -> None:
    path, table = sorted_file
    # without coalescing, what is read is exactly the pages that survive pruning
    with fermion.FileReader(path, coalesce_gap=0) as r:
        r.read(columns=["id", "name"], filter=pc.field("id") < 0)  # warm metadata only
        assert r.source.stats.requests == 1  # the tail read held footer, schema, CIT and CMBs
        r.source.stats.reset()
        out = r.read(columns=["id", "name"], filter=pc.field("id") == 77_777)
        assert out.to_pydict() == {"id": [77_777], "name": ["user077777"]}
        # one id page + one name offsets page + one name data page, each <= 8 KiB + header
        assert r.source.stats.requests == 3
        assert r.source.stats.bytes_read < 3 * (8192 + 64)
    # with the default 1 MiB gap the same pages arrive in a single request
    with fermion.FileReader(path) as r:
        r.read(columns=["id", "name"], filter=pc.field("id") < 0)
        r.source.stats.reset()
        r.read(columns=["id", "name"], filter=pc.field("id") == 77_777)
        assert r.source.stats.requests == 1


def test_stripe_pruning_skips_whole_stripes(sorted_file) -> None:
    path, _ = sorted_file
    with fermion.FileReader(path) as r:
        kept = r._pruner.stripes(
            r.file_meta.projections(["id"]),
            r.file_meta.column_metas(r.file_meta.projections(["id"])),
            np.array([25_000] * 4),
            FilterInfo(pc.field("id") >= 80_000),
        )
        assert kept == [3]


def test_take_reads_only_needed_pages(sorted_file) -> None:
    path, table = sorted_file
    idx = [99_999, 0, 5, 5, 50_000]
    with fermion.FileReader(path, coalesce_gap=0) as r:
        r.read(columns=["id"], filter=pc.field("id") < 0)  # load metadata
        r.source.stats.reset()
        got = r.take(idx)
        assert r.source.stats.bytes_read < r.source.size / 10
    assert got.equals(table.take(idx))


def test_take_errors(sorted_file) -> None:
    path, _ = sorted_file
    r = fermion.FileReader(path)
    with pytest.raises(fermion.InvalidArgumentError):
        r.take([100_000])
    with pytest.raises(fermion.InvalidArgumentError):
        r.take([-1])
    with pytest.raises(fermion.InvalidArgumentError):
        r.take([[1, 2]])
    with pytest.raises(fermion.InvalidArgumentError):
        r.take(["a"])
    assert r.take([]).num_rows == 0


def test_missing_columns_and_bad_filters(sorted_file) -> None:
    path, _ = sorted_file
    with pytest.raises(fermion.ColumnNotFoundError):
        fermion.read_table(path, columns=["nope"])
    with pytest.raises(KeyError):  # ColumnNotFoundError is also a KeyError
        fermion.read_table(path, filter=pc.field("nope") == 1)
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.read_table(path, filter="id == 1")  # type: ignore[arg-type]
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.read_table(path, filter=pc.field("name") + 1 > 2)
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.read_table(path, columns="id")  # type: ignore[arg-type]
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.FileReader(path, prefetch_bytes=-1)
    with pytest.raises(fermion.InvalidArgumentError):
        fermion.FileReader(path, no_such_option=1)


def test_nested_path_projection(tmp_path: Path) -> None:
    t = pa.table(
        {
            "s": pa.array(
                [
                    {"a": 1, "b": "x", "c": {"d": 1.5, "e": [1]}},
                    None,
                    {"a": 3, "b": None, "c": None},
                ]
            ),
            "ls": pa.array([[{"p": 1, "q": "z"}], None, []]),
        }
    )
    path = tmp_path / "n.fermion"
    fermion.write_table(t, path)
    got = fermion.read_table(path, columns=["s.b", "s.c.d", "ls.q"])
    assert got.column_names == ["s", "ls"]
    assert got.column("s").to_pylist() == [
        {"b": "x", "c": {"d": 1.5}},
        None,
        {"b": None, "c": None},
    ]
    assert got.column("ls").to_pylist() == [[{"q": "z"}], None, []]
    with pytest.raises(fermion.ColumnNotFoundError):
        fermion.read_table(path, columns=["s.zz"])


def test_projection_order_and_duplicates(sorted_file) -> None:
    path, table = sorted_file
    got = fermion.read_table(path, columns=["name", "id"])
    assert got.column_names == ["name", "id"]
    assert got.equals(table.select(["name", "id"]))


def test_all_null_column_filters_and_take(tmp_path: Path) -> None:
    t = pa.table({"a": pa.nulls(10, pa.int64()), "b": list(range(10))})
    path = tmp_path / "an.fermion"
    fermion.write_table(t, path, max_stripe_rows=3)
    assert fermion.read_table(path, filter=pc.field("a").is_null()).equals(t)
    assert fermion.read_table(path, filter=pc.field("a") > 1).num_rows == 0
    only_null = fermion.read_table(path, columns=["a"])
    assert only_null.equals(t.select(["a"]))
    assert fermion.FileReader(path).take([9, 0], columns=["a"]).num_rows == 2


def test_metadata_io_does_not_grow_with_column_count(tmp_path: Path) -> None:
    """Open + read 10 columns: metadata bytes beyond the tail prefetch stay O(10)."""
    costs = []
    for ncols in (5_000, 40_000):
        table = pa.table({f"c{i}": pa.array(np.arange(50, dtype=np.int32)) for i in range(ncols)})
        path = tmp_path / f"w{ncols}.fermion"
        fermion.write_table(table, path)
        names = [f"c{i}" for i in range(0, ncols, ncols // 10)]
        # coalesce_gap=0: data pages are read exactly, so what remains is the metadata cost
        with fermion.FileReader(path, prefetch_bytes=16 << 10, coalesce_gap=0) as r:
            tail = r.source.stats.bytes_read
            got = r.read(columns=names)
            assert got.column_names == names
            costs.append((r.source.stats.requests, r.source.stats.bytes_read - tail))
    (req_small, bytes_small), (req_big, bytes_big) = costs
    # 8x the columns: the cost of a 10-column read stays flat. Each of the 7 lookup steps
    # (hash window, entry, name, node ids, CIT, CMB, data) costs at most one request per column.
    # At 5k columns neighbouring entries still share requests; at 40k every step pays its
    # own request per column, and that is the ceiling no matter how wide the file grows.
    assert req_small <= req_big <= 1 + 7 * 10
    assert bytes_big < 1.25 * bytes_small


@pytest.mark.parametrize("block", [0, 256])
def test_string_stripe_mixing_dictionary_and_plain_pages(tmp_path: Path, block: int) -> None:
    """Regression: a stripe whose string pages start as DICTIONARY pages and go on as PLAIN
    pages (decoded end to end into one run buffer) raised KeyError in scans and whole-page
    takes, as assembly only looked for a run starting at the first page."""
    few = ["ab" * 10, "cd" * 10]
    values = [few[i % 2] for i in range(1000)]
    values += [f"unique-{i:06d}-" + "z" * (i % 13) for i in range(2000)]
    table = pa.table({"s": pa.array(values)})
    path = tmp_path / "mixed.fermion"
    fermion.write_table(table, path, page_size=1024, compression_block_size=block)
    assert encodings_of(path)[("s", "DATA")] == {"DICTIONARY", "PLAIN"}
    assert fermion.read_table(path).equals(table)
    rows = list(range(900, 1200))
    for point_reads in (True, False):
        with fermion.FileReader(path, point_reads=point_reads) as r:
            assert r.take(rows).column("s").to_pylist() == values[900:1200]


def test_filters_on_files_with_view_columns(tmp_path: Path) -> None:
    """Regression: Arrow has no filter kernel for string_view/binary_view; a filtered read
    of a file with such a column raised InvalidArgumentError whatever the predicate."""
    table = pa.table(
        {
            "id": pa.array(range(1000)),
            "s": pa.array([f"v{i}" for i in range(1000)], pa.string_view()),
            "b": pa.array([bytes([i % 256]) for i in range(1000)], pa.binary_view()),
        }
    )
    path = tmp_path / "views.fermion"
    fermion.write_table(table, path)
    got = fermion.read_table(path, filter=pc.field("id").isin(list(range(0, 1000, 7))))
    assert got.schema == table.schema
    assert got.column("s").cast(pa.string()).to_pylist() == [f"v{i}" for i in range(0, 1000, 7)]
    assert got.column("b").cast(pa.binary()).to_pylist() == [
        bytes([i % 256]) for i in range(0, 1000, 7)
    ]


def test_schema_columns_after_a_name_lookup(tmp_path: Path) -> None:
    """Column entries are fetched right when a name lookup cached the name of only some
    of them (it once checked the last column's cache for all: a ChecksumError)."""
    from fermion.format.write.writer import write_table

    path = tmp_path / "n.fermion"
    write_table(pa.table({"a": [1], "b": [2], "c": [3]}), path)
    with fermion.FileReader(path) as r:
        index = r.file_meta.index
        assert index.lookup(["c"]) == [2]
        assert [i.field.name for i in index.columns([0, 2])] == ["a", "c"]
        assert [i.field.name for i in index.columns([1])] == ["b"]
