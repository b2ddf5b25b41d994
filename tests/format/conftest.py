"""Shared fixtures for the file-format tests: a table holding every supported type."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fermion


def all_types_table(n: int = 50, seed: int = 0) -> pa.Table:
    """Every type the issue lists, with nulls at every nesting level."""
    rng = np.random.default_rng(seed)

    def nulls(values: list, p: float = 0.2) -> list:
        mask = rng.random(len(values)) < p
        return [None if m else v for v, m in zip(values, mask, strict=True)]

    ints = rng.integers(-1000, 1000, n).tolist()
    cols: dict[str, pa.Array] = {
        "bool": pa.array(nulls([bool(x % 2) for x in ints]), pa.bool_()),
        "int8": pa.array(nulls([x % 100 for x in ints]), pa.int8()),
        "int16": pa.array(nulls(ints), pa.int16()),
        "int32": pa.array(nulls(ints), pa.int32()),
        "int64": pa.array(nulls([x * 10**12 for x in ints]), pa.int64()),
        "uint8": pa.array(nulls([abs(x) % 200 for x in ints]), pa.uint8()),
        "uint16": pa.array(nulls([abs(x) for x in ints]), pa.uint16()),
        "uint32": pa.array(nulls([abs(x) * 1000 for x in ints]), pa.uint32()),
        "uint64": pa.array(nulls([2**63 + abs(x) for x in ints]), pa.uint64()),
        "float16": pa.array(np.array(ints, dtype=np.float16), pa.float16()),
        "float32": pa.array(nulls([x / 3 for x in ints]), pa.float32()),
        "float64": pa.array(nulls([x / 7 if x % 5 else float("nan") for x in ints]), pa.float64()),
        "decimal128": pa.array(
            nulls([decimal.Decimal(x).scaleb(-2) for x in ints]), pa.decimal128(12, 2)
        ),
        "decimal256": pa.array(
            nulls([decimal.Decimal(x).scaleb(-5) * 10**40 for x in ints]), pa.decimal256(60, 5)
        ),
        "date32": pa.array(nulls([dt.date(2020, 1, 1) + dt.timedelta(days=x) for x in ints])),
        "date64": pa.array(
            nulls([dt.date(2020, 1, 1) + dt.timedelta(days=x) for x in ints]), pa.date64()
        ),
        "time32s": pa.array(nulls([abs(x) for x in ints]), pa.time32("s")),
        "time32ms": pa.array(nulls([abs(x) * 1000 for x in ints]), pa.time32("ms")),
        "time64us": pa.array(nulls([abs(x) * 10**6 for x in ints]), pa.time64("us")),
        "time64ns": pa.array(nulls([abs(x) * 10**9 for x in ints]), pa.time64("ns")),
        "duration_s": pa.array(nulls(ints), pa.duration("s")),
        "duration_ns": pa.array(nulls(ints), pa.duration("ns")),
    }
    for unit in ("s", "ms", "us", "ns"):
        cols[f"ts_{unit}"] = pa.array(nulls([x * 86400 for x in ints]), pa.timestamp(unit))
        cols[f"ts_{unit}_tz"] = pa.array(
            nulls([x * 86400 for x in ints]), pa.timestamp(unit, tz="Europe/Paris")
        )
    words = [("w" * (abs(x) % 13)) + str(x) + "é" for x in ints]
    cols["string"] = pa.array(nulls(words), pa.string())
    cols["large_string"] = pa.array(nulls(words), pa.large_string())
    cols["binary"] = pa.array(nulls([w.encode() + b"\0\xff" for w in words]), pa.binary())
    cols["large_binary"] = pa.array(nulls([w.encode() for w in words]), pa.large_binary())
    cols["fixed_binary"] = pa.array(
        nulls([int(x % 65536).to_bytes(4, "little", signed=False) for x in ints]),
        pa.binary(4),
    )
    cols["embedding"] = pa.array(
        nulls([[float(x), float(x) / 2, 0.5] for x in ints]), pa.list_(pa.float32(), 3)
    )
    cols["list"] = pa.array(
        nulls([nulls([x, x + 1, None][: abs(x) % 4]) for x in ints]), pa.list_(pa.int64())
    )
    cols["large_list"] = pa.array(
        nulls([[str(x)] * (abs(x) % 3) for x in ints]), pa.large_list(pa.string())
    )
    cols["list_list"] = pa.array(
        nulls([nulls([[x, x], None, []]) for x in ints]), pa.list_(pa.list_(pa.int64()))
    )
    cols["struct"] = pa.array(
        nulls([{"a": x if x % 3 else None, "b": str(x), "c": [x]} for x in ints]),
        pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.list_(pa.int16()))]),
    )
    cols["list_struct"] = pa.array(
        nulls([nulls([{"a": x, "b": None}, {"a": None, "b": "q"}]) for x in ints]),
        pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])),
    )
    cols["map"] = pa.array(
        nulls([[("k" + str(x), x), ("z", None)][: abs(x) % 3] for x in ints]),
        pa.map_(pa.string(), pa.int64()),
    )
    cols["dictionary"] = pa.array(nulls([f"cat{abs(x) % 7}" for x in ints])).dictionary_encode()
    cols["dict_int"] = pa.array(nulls([abs(x) % 5 for x in ints]), pa.int64()).dictionary_encode()
    cols["null"] = pa.nulls(n)
    cols["all_null_int"] = pa.nulls(n, pa.int64())
    cols["all_null_struct"] = pa.nulls(n, pa.struct([("q", pa.string())]))
    fields = [pa.field(k, v.type) for k, v in cols.items()]
    fields.append(pa.field("required", pa.int64(), nullable=False))
    cols["required"] = pa.array(range(n), pa.int64())
    fields[0] = fields[0].with_metadata({"unit": "flag", "doc": "a bool"})
    schema = pa.schema(fields, metadata={"owner": "fermion-tests", "version": "1"})
    return pa.Table.from_arrays(list(cols.values()), schema=schema)


@pytest.fixture
def all_types() -> pa.Table:
    return all_types_table()


@pytest.fixture
def write_read(tmp_path: Path):
    """Write ``table`` with options and read it back whole."""

    def run(table: pa.Table, **options) -> pa.Table:
        path = tmp_path / "rt.fermion"
        fermion.write_table(table, path, **options)
        return fermion.read_table(path)

    return run
