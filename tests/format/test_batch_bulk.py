"""Batch mode's bulk path: many small batches of a wide numeric schema are gathered
column-wise at stripe flush (``FileWriter._gather_block``), not chunk by chunk.

The proofs are independent of the code under test: the file written through the bulk path
is byte-for-byte the file written with the bulk path turned off (so the on-disk format and
docs/FORMAT.md §11 are untouched), the alignment proof of ``tests/format/test_batch.py``
(read from the file's own metadata) holds, and every batch reads back by id.

Inputs tried: RecordBatches, one-chunk and multi-chunk Tables, batches with nulls in a block
column in the middle of a stripe (that stripe takes the generic path), several stripes,
block types float32 / int16 / float64, non-block columns (strings, lists, other numerics),
a schema with too few same-typed columns (no bulk path), duplicate column names. Where the
block columns are encoded (the writing thread or the workers, as measured on the stripe)
is checked with the test's own clock, and the bytes against a one-thread writer's.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion
import fermion.format.write.writer as writer_module
from fermion.format.options import PAGE_SIZE_DEFAULT
from fermion.format.write import batch_stripes
from fermion.format.write.batch_stripes import block_columns
from tests.format.test_batch import prove_aligned
from tests.support.budget import examples


def wide_schema(block: pa.DataType, width: int) -> pa.Schema:
    fields = [pa.field(f"c{i:03d}", block) for i in range(width)]
    fields.insert(3, pa.field("name", pa.string()))
    fields.append(pa.field("ids", pa.list_(pa.int64())))
    fields.append(pa.field("other", pa.int8() if block != pa.int8() else pa.int32()))
    return pa.schema(fields)


def make(schema: pa.Schema, rng: np.random.Generator, n: int, base: int, nulls: bool) -> pa.Table:
    cols: dict[str, Any] = {}
    for f in schema:
        if f.name == "name":
            cols[f.name] = pa.array([f"r{base + i}" if i % 3 else None for i in range(n)])
        elif f.name == "ids":
            cols[f.name] = pa.array([[base + i] * (i % 3) for i in range(n)], f.type)
        elif pa.types.is_floating(f.type):
            cols[f.name] = pa.array(rng.standard_normal(n).astype(f.type.to_pandas_dtype()))
        else:
            values = rng.integers(-100, 100, n).astype(f.type.to_pandas_dtype())
            cols[f.name] = pa.array(values, f.type)
    if nulls:
        mask = np.zeros(n, dtype=bool)
        mask[0] = True
        cols["c001"] = pa.array(cols["c001"].to_numpy(zero_copy_only=False), mask=mask)
    return pa.table(cols, schema=schema)


def as_input(table: pa.Table, how: str) -> pa.Table | pa.RecordBatch:
    if how == "batch":
        return table.combine_chunks().to_batches()[0]
    if how == "chunks" and table.num_rows > 1:
        return pa.concat_tables([table.slice(0, 1), table.slice(1)])
    return table


def write(
    path: Path, schema: pa.Schema, tables: list[pa.Table], hows: list[str], **options: Any
) -> None:
    with fermion.FileWriter(path, schema, **options) as w:
        for k, (t, how) in enumerate(zip(tables, hows, strict=True)):
            w.append_batch(10 * k - 7, as_input(t, how))


def check_file(path: Path, tables: list[pa.Table], page_size: int, rng: Any) -> None:
    with fermion.FileReader(path) as r:
        assert r.read().equals(pa.concat_tables(tables).combine_chunks())
        wanted = rng.integers(0, len(tables), min(6, len(tables))).tolist()
        got = r.read_batches([10 * k - 7 for k in wanted])
        assert got.equals(pa.concat_tables([tables[k] for k in wanted]).combine_chunks())
    prove_aligned(path, page_size)


def test_bulk_path_writes_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = wide_schema(pa.float32(), 40)
    assert len(block_columns(schema)) == 40
    rng = np.random.default_rng(3)
    tables = [make(schema, rng, int(n), 100 * k, nulls=k == 17) for k, n in enumerate(
        rng.integers(1, 40, 120))]  # fmt: skip
    hows = ["batch", "table", "chunks"] * 40
    options = {"page_size": 2048, "max_stripe_rows": 900}
    bulk_stripes: list[int] = []
    real = batch_stripes.BatchColumns._from_block

    def counting(self: batch_stripes.BatchColumns, block: np.ndarray, parts: Any) -> pa.Table:
        stripe = real(self, block, parts)
        bulk_stripes.append(stripe.num_rows)
        return stripe

    with monkeypatch.context() as patch:
        patch.setattr(batch_stripes.BatchColumns, "_from_block", counting)
        write(tmp_path / "bulk.fermion", schema, tables, hows, **options)
    with fermion.FileReader(tmp_path / "bulk.fermion") as r:
        stripes = r.stripe_row_counts()
    assert 0 < len(bulk_stripes) < len(stripes)  # the stripe with nulls took the generic path
    monkeypatch.setattr(batch_stripes, "BLOCK_MIN_COLUMNS", 10**9)
    write(tmp_path / "plain.fermion", schema, tables, hows, **options)
    bulk = (tmp_path / "bulk.fermion").read_bytes()
    assert bulk == (tmp_path / "plain.fermion").read_bytes()
    with fermion.FileReader(tmp_path / "bulk.fermion") as r:
        assert r.num_stripes > 2
    check_file(tmp_path / "bulk.fermion", tables, 2048, rng)


@settings(max_examples=examples(30), suppress_health_check=[HealthCheck.too_slow])
@given(
    block=st.sampled_from([pa.float32(), pa.int16(), pa.float64()]),
    width=st.integers(8, 20),
    sizes=st.lists(st.integers(1, 70), min_size=1, max_size=40),
    null_at=st.sets(st.integers(0, 39), max_size=3),
    hows=st.lists(st.sampled_from(["batch", "table", "chunks"]), min_size=40, max_size=40),
    page_size=st.sampled_from([64, 512, 8192]),
    stripe_rows=st.sampled_from([50, 300, 1 << 20]),
    threads=st.sampled_from([1, 3]),
)
def test_bulk_path_round_trips_and_keeps_batches_aligned(
    tmp_path_factory: pytest.TempPathFactory,
    block: pa.DataType,
    width: int,
    sizes: list[int],
    null_at: set[int],
    hows: list[str],
    page_size: int,
    stripe_rows: int,
    threads: int,
) -> None:
    schema = wide_schema(block, width)
    rng = np.random.default_rng(len(sizes))
    tables = [make(schema, rng, n, 1000 * k, nulls=k in null_at) for k, n in enumerate(sizes)]
    path = tmp_path_factory.mktemp("bulk") / "t.fermion"
    write(path, schema, tables, hows[: len(tables)], page_size=page_size,
          max_stripe_rows=stripe_rows, threads=threads)  # fmt: skip
    check_file(path, tables, page_size, rng)


def test_which_columns_take_the_bulk_path() -> None:
    few = pa.schema([(f"c{i}", pa.float32()) for i in range(7)] + [("s", pa.string())])
    assert block_columns(few) == []
    mixed = pa.schema(
        [(f"f{i}", pa.float32()) for i in range(9)]
        + [(f"i{i}", pa.int64()) for i in range(10)]
        + [("h", pa.float16()), ("b", pa.bool_())]
    )
    assert block_columns(mixed) == list(range(9, 19))  # the most common numeric type
    duplicated = pa.schema([("x", pa.float32())] * 9)
    assert block_columns(duplicated) == []


def test_duplicate_names_still_write(tmp_path: Path) -> None:
    schema = pa.schema([("x", pa.float32())] * 9)
    arrays = [pa.array([float(i)], pa.float32()) for i in range(9)]
    with fermion.FileWriter(tmp_path / "d.fermion", schema) as w:
        w.append_batch(1, pa.RecordBatch.from_arrays(arrays, schema=schema))
        w.append_batch(2, pa.RecordBatch.from_arrays(arrays, schema=schema))
    with fermion.FileReader(tmp_path / "d.fermion") as r:
        assert r.num_rows == 2
        assert r.read_batches([2]).column(8).to_pylist() == [8.0]


@pytest.mark.parametrize("measured_here", [True, False])
def test_block_columns_encode_where_the_measurement_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, measured_here: bool
) -> None:
    """On a stripe of at least _CALIBRATE_MIN block columns the writer times some of them
    on the writing thread and some on the workers (``FileWriter._encode_columns``), then
    encodes the other block columns where they went faster; the other columns always go
    to the workers. The clock is the test's: it makes one way faster, and each column is
    seen on the thread the decision puts it on. The bytes are those of a one-thread
    writer either way."""
    schema = wide_schema(pa.float32(), writer_module._CALIBRATE_MIN + 20)
    block = block_columns(schema)
    rng = np.random.default_rng(5)
    tables = [make(schema, rng, int(n), 100 * k, nulls=False) for k, n in enumerate(
        rng.integers(1, 30, 12))]  # fmt: skip
    hows = ["batch"] * len(tables)
    write(tmp_path / "one.fermion", schema, tables, hows, threads=1)

    main = threading.get_ident()
    seen: dict[int, bool] = {}  # column -> encoded on the writing thread
    clock = [0.0]
    real_encode = writer_module.FileWriter._encode_column

    def encode(self: writer_module.FileWriter, i: int, *args: Any) -> Any:
        here = threading.get_ident() == main
        seen[i] = here
        # a column costs 1 s of the test's clock where it is slow, 0 where it is fast
        if here != measured_here:
            clock[0] += 1.0
        return real_encode(self, i, *args)

    monkeypatch.setattr(writer_module.FileWriter, "_encode_column", encode)
    monkeypatch.setattr(writer_module.time, "perf_counter", lambda: clock[0])
    write(tmp_path / "two.fermion", schema, tables, hows, threads=2)
    assert (tmp_path / "two.fermion").read_bytes() == (tmp_path / "one.fermion").read_bytes()

    k, rounds = writer_module._CALIBRATE_COLUMNS, writer_module._CALIBRATE_ROUNDS
    timed = 1 + 3 * k * rounds
    assert [seen[i] for i in block[:timed]] == [True] + ([True] * k + [False] * 2 * k) * rounds
    assert {seen[i] for i in block[timed:]} == {measured_here}
    assert not any(seen[i] for i in range(len(schema)) if i not in block)


def test_few_block_columns_are_not_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer block columns than _CALIBRATE_MIN: nothing is timed, every column goes to the
    workers (as before the measurement existed)."""
    schema = wide_schema(pa.float32(), writer_module._CALIBRATE_MIN - 1)
    rng = np.random.default_rng(6)
    tables = [make(schema, rng, 5, 10 * k, nulls=False) for k in range(4)]
    main = threading.get_ident()
    here: list[int] = []
    real_encode = writer_module.FileWriter._encode_column

    def encode(self: writer_module.FileWriter, i: int, *args: Any) -> Any:
        if threading.get_ident() == main:
            here.append(i)
        return real_encode(self, i, *args)

    monkeypatch.setattr(writer_module.FileWriter, "_encode_column", encode)
    write(tmp_path / "t.fermion", schema, tables, ["batch"] * 4, threads=2)
    assert here == []
    check_file(tmp_path / "t.fermion", tables, PAGE_SIZE_DEFAULT, rng)
