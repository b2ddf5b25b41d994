"""``Dataset.add_columns`` with values (SQL expressions, a per-batch function): one new data
file per fragment holding only the new columns; bad functions; the round trip through
compaction and ``drop_columns``; real processes racing it (docs/TABLE_FORMAT.md,
"Adding columns with values")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
import fermion.table as ft
from fermion.errors import ColumnNotFoundError, InvalidArgumentError, SchemaMismatchError

Runner = Callable[..., list[tuple[str, Any]]]


def _table(uri: str, n: int = 40, rows_per_file: int = 10) -> ft.Dataset:
    data = pa.table(
        {
            "x": pa.array(range(n), pa.int64()),
            "f0": pa.array([i / 4 for i in range(n)]),
            "f1": pa.array([float(i % 7) for i in range(n)]),
            "s": pa.array([str(i) for i in range(n)]),
        }
    )
    return ft.write_dataset(data, uri, max_rows_per_file=rows_per_file)


def _files(ds: ft.Dataset) -> list[list[str]]:
    return [[f.path for f in fragment.files] for fragment in ds.fragments]


def test_expression_values_go_to_one_new_file_per_fragment(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    ds.delete("x IN (3, 4, 25)")
    before, old_files = ds.to_table(), _files(ds)
    sizes = {p: (tmp_path / "t" / p).stat().st_size for f in old_files for p in f}
    ds.add_columns({"g": "f0 * 2 + f1", "h": "x + 1"})
    assert ds.version == 3 and ds.manifest.summary.operation == "add_columns"
    table = ds.to_table()
    assert table.column_names == ["x", "f0", "f1", "s", "g", "h"]
    want_g = pc.add(pc.multiply(before["f0"], 2), before["f1"])
    assert table["g"].to_pylist() == want_g.to_pylist()
    assert table["h"].to_pylist() == [x + 1 for x in before["x"].to_pylist()]
    new_ids = list(ds.table_schema.field_ids[-2:])
    for old, fragment in zip(old_files, ds.manifest.fragments, strict=True):
        assert [f.path for f in fragment.files[:-1]] == old  # untouched
        added = fragment.files[-1]
        assert list(added.field_ids) == new_ids
        with fermion.FileReader(str(tmp_path / "t" / added.path)) as reader:
            assert reader.schema.names == ["g", "h"] and reader.num_rows == fragment.physical_rows
        assert {s.field_id for s in fragment.stats} >= set(new_ids)  # prunable
    assert all((tmp_path / "t" / p).stat().st_size == n for p, n in sizes.items())
    assert ds.to_table(filter="g > 20").num_rows == sum(v > 20 for v in want_g.to_pylist())
    assert ft.dataset(uri, version=2).schema.names == ["x", "f0", "f1", "s"]  # old readers


def test_a_per_batch_function_sees_only_its_columns_and_live_rows(tmp_path: Path) -> None:
    ds = _table(str(tmp_path / "t"))
    ds.delete("x >= 5 AND x < 8")
    seen: list[tuple[list[str], int]] = []

    def udf(batch: pa.RecordBatch) -> Any:
        seen.append((batch.schema.names, batch.num_rows))
        return pa.record_batch({"y": pc.multiply(batch["x"], 10), "t": pc.utf8_upper(batch["s"])})

    ds.add_columns(udf, read_columns=["x", "s"], batch_size=4)
    assert {tuple(names) for names, _ in seen} == {("x", "s")}
    assert max(n for _, n in seen) == 4 and sum(n for _, n in seen) == 37
    table = ds.to_table()
    assert table["y"].to_pylist() == [10 * x for x in table["x"].to_pylist()]
    assert table["t"].to_pylist() == table["s"].to_pylist()


def test_pandas_output_works_too(tmp_path: Path) -> None:
    ds = _table(str(tmp_path / "t"), n=6, rows_per_file=3)
    ds.add_columns(lambda b: b.to_pandas()[["x"]].rename(columns={"x": "x2"}) * 2)
    assert ds.to_table()["x2"].to_pylist() == [0, 2, 4, 6, 8, 10]


BAD: dict[str, tuple[Any, type[Exception], str]] = {
    "wrong row count": (lambda b: pa.table({"y": [1]}), InvalidArgumentError, "returned 1 rows"),
    "an existing column": (
        lambda b: pa.table({"x": b["x"]}), InvalidArgumentError, "already exist",
    ),
    "not a table": (lambda b: 42, InvalidArgumentError, "the function returned"),
    "types differ per fragment": (
        lambda b: pa.table({"y": b["x"] if b["x"][0].as_py() < 10 else b["f0"]}),
        SchemaMismatchError, "an earlier fragment",
    ),
    "no column": (lambda b: pa.table({}), InvalidArgumentError, "returned 0 rows"),
    "unknown column in SQL": ({"g": "nope * 2"}, ColumnNotFoundError, "'nope'"),
    "not SQL": ({"g": "f0 *"}, InvalidArgumentError, "cannot parse"),
    "SQL of no type": ({"g": "NULL"}, SchemaMismatchError, "no type"),
    "unknown read column": (lambda b: b, ColumnNotFoundError, "no columns"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
def test_bad_values_are_typed_errors_and_commit_nothing(tmp_path: Path, case: str) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    values, error, message = BAD[case]
    read = ["x", "nope"] if case == "unknown read column" else None
    with pytest.raises(error, match=message):
        ds.add_columns(values, read_columns=read)
    assert ft.dataset(uri).version == 1 and ds.version == 1


def test_an_expression_failing_on_one_fragment_leaves_no_file(tmp_path: Path) -> None:
    # fragments are computed and written side by side: the files of those that succeeded
    # are removed when another fails
    data = pa.table({"n": pa.array(range(8), pa.int64()), "d": pa.array([1] * 5 + [0] + [1] * 2)})
    ds = ft.write_dataset(data, str(tmp_path), max_rows_per_file=2)
    before = sorted(p.name for p in (tmp_path / "data").rglob("*") if p.is_file())
    with pytest.raises(InvalidArgumentError, match="divide by zero"):
        ds.add_columns({"g": "n / d"})
    assert sorted(p.name for p in (tmp_path / "data").rglob("*") if p.is_file()) == before
    assert ft.dataset(str(tmp_path)).version == 1


def test_add_columns_then_compaction_then_drop_columns_round_trips(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = _table(uri)
    ds.delete("x < 3")
    original = ds.to_table()
    ds.add_columns({"g": "f0 + f1"})
    assert all(len(f.files) == 2 for f in ds.fragments)
    ds.compact_files(target_rows_per_fragment=1000)
    assert [len(f.files) for f in ds.fragments] == [1]  # folded into one file
    assert ds.to_table()["g"].to_pylist() == pc.add(original["f0"], original["f1"]).to_pylist()
    files = _files(ds)
    ds.drop_columns(["g"])
    assert _files(ds) == files  # no data rewritten
    assert ds.to_table().equals(original)


# -- real processes ------------------------------------------------------------------------


def _race_job(uri: str, kind: str) -> str:
    ds = ft.dataset(uri)
    if kind == "add":
        ds.add_columns({"g": "x * 2"})
    elif kind == "append":
        ds.append(pa.table({"x": pa.array([1000, 1001], pa.int64())}))
    else:
        ds.delete("x >= 10 AND x < 20")
    return kind


def test_add_columns_racing_appends_and_deletes(tmp_path: Path, processes: Runner) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": pa.array(range(60), pa.int64())}), uri, max_rows_per_file=10)
    results = processes(_race_job, [(uri, "add"), (uri, "append"), (uri, "delete")])
    add, append, delete = results
    assert add == ("ok", "add") and delete == ("ok", "delete"), results
    # an append that opens the table after add_columns committed must carry the new column:
    # its x-only data is refused before anything is written (the timing decides which case)
    appended = append == ("ok", "append")
    assert appended or append[1].startswith("SchemaMismatchError: columns differ: missing ['g']")
    table = ft.dataset(uri).to_table()
    xs = table["x"].to_pylist()
    expected = [*range(10), *range(20, 60), *([1000, 1001] if appended else [])]
    assert sorted(xs) == expected  # none lost or resurrected
    for x, g in zip(xs, table["g"].to_pylist(), strict=True):
        # an append that committed after the column was added wrote no value for it
        assert g == 2 * x or (g is None and x >= 1000), (x, g)
