"""Column digests used by verified file tasks (fermion/spark/jobs/row_digest.py).

What must hold: the digest depends on the rows and their order, not on how they are cut
into batches or chunks, on array offsets (slices), or on the bytes a null slot happens to
hold; one changed value, a null moved, or two rows swapped change it. Floats compare by
bit pattern (``-0.0`` is not ``0.0``; NaN payloads are kept).
"""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fermion.spark.jobs.row_digest import RowDigest, digestible
from tests.support.budget import examples

SCHEMA = pa.schema([
    ("i8", pa.int8()),
    ("i64", pa.int64()),
    ("u16", pa.uint16()),
    ("f", pa.float64()),
    ("f32", pa.float32()),
    ("b", pa.bool_()),
    ("d", pa.decimal128(15, 2)),
    ("day", pa.date32()),
    ("ts", pa.timestamp("us", tz="UTC")),
    ("s", pa.string()),
    ("ls", pa.large_string()),
    ("bin", pa.binary()),
])  # fmt: skip


def _digest(*parts: pa.RecordBatch | pa.Table, schema: pa.Schema = SCHEMA) -> RowDigest:
    digest = RowDigest(schema)
    for part in parts:
        digest.add(part)
    return digest


def _row(i: int) -> dict[str, object]:
    return {
        "i8": (i % 200) - 100, "i64": i * 7919 - 10**12, "u16": i % 65536,
        "f": i / 3 - 5, "f32": float(i % 17) / 4, "b": i % 3 == 0,
        "d": decimal.Decimal(i) / 100 - 50, "day": dt.date(2026, 1, 1) + dt.timedelta(i % 400),
        "ts": dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
        "s": "x" * (i % 13) + str(i), "ls": str(i)[::-1], "bin": bytes([i % 256]) * (i % 5),
    }  # fmt: skip


rows_strategy = st.lists(
    st.tuples(st.integers(0, 10_000), st.sets(st.sampled_from(SCHEMA.names))),
    min_size=1,
    max_size=60,
)


def _table(rows: list[tuple[int, set[str]]]) -> pa.Table:
    """Rows made from seeds; the columns named in each row's set are null there."""
    records = [{k: (None if k in nulls else v) for k, v in _row(i).items()} for i, nulls in rows]
    return pa.Table.from_pylist(records, schema=SCHEMA)


@settings(max_examples=examples(60), deadline=None)
@given(rows=rows_strategy, cuts=st.lists(st.integers(0, 60), max_size=4))
def test_the_digest_ignores_how_rows_are_cut(
    rows: list[tuple[int, set[str]]], cuts: list[int]
) -> None:
    table = _table(rows)
    whole = _digest(table)
    points = sorted({min(c, table.num_rows) for c in cuts} | {0, table.num_rows})
    pieces = [table.slice(a, b - a) for a, b in zip(points, points[1:], strict=False)]
    # slices keep an offset into the parent's buffers: the digest must honour it
    assert whole.differences(_digest(*pieces)) == []
    batches = [b for piece in pieces for b in piece.to_batches(max_chunksize=7)]
    assert whole.differences(_digest(*batches)) == []
    assert whole.rows == table.num_rows


@settings(max_examples=examples(60), deadline=None)
@given(
    rows=rows_strategy,
    where=st.integers(0, 59),
    column=st.sampled_from(SCHEMA.names),
    other=st.integers(0, 10_000),
    to_null=st.booleans(),
)
def test_one_changed_value_changes_that_column_only(
    rows: list[tuple[int, set[str]]], where: int, column: str, other: int, to_null: bool
) -> None:
    before = _table(rows)
    records = before.to_pylist()
    record = records[where % len(records)]
    record[column] = None if to_null and record[column] is not None else _row(other)[column]
    after = pa.Table.from_pylist(records, schema=SCHEMA)
    assume(not before.column(column).equals(after.column(column)))
    assert _digest(before).differences(_digest(after)) == [column]


def test_swapped_rows_and_moved_nulls_are_seen() -> None:
    table = _table([(i, set()) for i in range(100)])
    swapped = table.take([1, 0] + list(range(2, 100)))
    assert _digest(table).differences(_digest(swapped)) == SCHEMA.names
    one = pa.table({"s": pa.array(["ab", None, "c"])})
    two = pa.table({"s": pa.array(["ab", "c", None])})
    schema = one.schema
    assert _digest(one, schema=schema).differences(_digest(two, schema=schema)) == ["s"]
    # the same bytes cut into other strings
    three = pa.table({"s": pa.array(["a", "bc", None])})
    assert _digest(one, schema=schema).differences(_digest(three, schema=schema)) == ["s"]


def test_floats_compare_by_bit_pattern() -> None:
    schema = pa.schema([("f", pa.float64())])
    bits = {
        "zero": 0x0000000000000000, "negative zero": 0x8000000000000000,
        "nan": 0x7FF8000000000000, "nan payload": 0x7FF8000000000001,
    }  # fmt: skip
    digests = {
        name: _digest(pa.table({"f": np.array([b], np.uint64).view(np.float64)}), schema=schema)
        for name, b in bits.items()
    }
    assert digests["zero"].differences(digests["negative zero"]) == ["f"]
    assert digests["nan"].differences(digests["nan payload"]) == ["f"]
    again = pa.table({"f": np.array([bits["nan payload"]], np.uint64).view(np.float64)})
    assert digests["nan payload"].differences(_digest(again, schema=schema)) == []


def test_garbage_under_nulls_does_not_count() -> None:
    # an int64 array whose null slot holds 99, and a string array whose null slot holds bytes
    validity = pa.array([True, False, True]).buffers()[1]
    ints = pa.Array.from_buffers(
        pa.int64(), 3, [validity, pa.py_buffer(np.array([1, 99, 3], np.int64).tobytes())]
    )
    clean = pa.array([1, None, 3], pa.int64())
    offsets = pa.py_buffer(np.array([0, 2, 5, 6], np.int32).tobytes())
    strings = pa.Array.from_buffers(pa.string(), 3, [validity, offsets, pa.py_buffer(b"abXYZc")])
    tidy = pa.array(["ab", None, "c"])
    schema = pa.schema([("n", pa.int64()), ("s", pa.string())])
    messy = _digest(pa.table({"n": ints, "s": strings}), schema=schema)
    assert messy.differences(_digest(pa.table({"n": clean, "s": tidy}), schema=schema)) == []


def test_row_counts_and_digestible_types() -> None:
    table = _table([(i, set()) for i in range(10)])
    assert _digest(table).differences(_digest(table.slice(0, 9))) == SCHEMA.names
    assert digestible(SCHEMA)
    for type_ in (pa.list_(pa.int64()), pa.struct([("a", pa.int64())]),
                  pa.dictionary(pa.int32(), pa.string()), pa.string_view()):  # fmt: skip
        assert not digestible(pa.schema([("x", type_)])), type_


@pytest.mark.parametrize("empty", [pa.table({"s": pa.array([], pa.string())})])
def test_empty_input(empty: pa.Table) -> None:
    digest = _digest(empty, schema=empty.schema)
    assert digest.rows == 0
    assert digest.differences(_digest(schema=empty.schema)) == []


def test_kept_weights_give_the_digest_computed_weights_give(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Weights are kept per process up to a bound and computed past it: the digest is the
    same either way, and folding leaves the caller's arrays (Arrow buffers) unchanged."""
    import fermion.spark.jobs.row_digest as row_digest

    table = pa.Table.from_pylist([_row(i) for i in range(3000)], schema=SCHEMA)
    kept = _digest(*table.to_batches(max_chunksize=700))
    for bound in (0, 100):  # nothing kept; positions kept only up to 100
        monkeypatch.setattr(row_digest, "_KEPT_WEIGHTS", bound)
        monkeypatch.setattr(row_digest, "_kept", np.zeros(0, dtype=np.uint64))
        other = _digest(*table.to_batches(max_chunksize=700))
        assert other.differences(kept) == []
        assert [c.value() for c in other._columns] == [c.value() for c in kept._columns]
    assert table.equals(pa.Table.from_pylist([_row(i) for i in range(3000)], schema=SCHEMA))
    with pytest.raises(ValueError):
        row_digest._weights(0, 10)[0] = 1  # the kept weights are read-only
