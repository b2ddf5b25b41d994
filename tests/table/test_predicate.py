"""SQL predicates → Arrow expressions (fermion/table/predicate.py).

Each case is checked against the rows SQL's three-valued logic keeps. Bad inputs tried:
unknown columns, incomplete SQL, constant predicates, sub-queries, functions, literals that
do not fit the column type (strings for integers, integers beyond int64 for int64 and int8,
beyond uint64 for uint64, negative for uint64, beyond 64 bits beside an expression), empty
and non-string predicates.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from fermion.errors import ColumnNotFoundError, InvalidArgumentError
from fermion.table.predicate import parse_predicate

SCHEMA = pa.schema(
    [
        ("a", pa.int64()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("t", pa.timestamp("us")),
        ("f", pa.float64()),
        ("weird name", pa.int32()),
    ]
)
TABLE = pa.table(
    {
        "a": [1, 2, None, 40],
        "s": ["ab", "xb", None, "a_c"],
        "d": pa.array([1, 2, 3, None], pa.date32()),
        "t": pa.array([0, 10**6, None, 5], pa.timestamp("us")),
        "f": [1.5, -2.0, None, 0.0],
        "weird name": pa.array([7, 8, 9, 10], pa.int32()),
    },
    schema=SCHEMA,
)


@pytest.mark.parametrize(
    ("sql", "kept"),
    [
        ("a = 1", [0]),
        ("a == 1 OR a <> 1", [0, 1, 3]),
        ("a + 1 = 3", [1]),
        ("a * 2 > 3 AND a / 2 < 10", [1]),
        ("s LIKE 'a%'", [0, 3]),
        ("s LIKE 'a_c'", [3]),
        ("s NOT LIKE 'a%'", [1]),  # sqlglot keeps this NOT on the LIKE node itself
        ("NOT s LIKE 'a%'", [1]),
        ("NOT s NOT LIKE 'a%'", [0, 3]),
        ("a IS NULL", [2]),
        ("a IS NOT NULL", [0, 1, 3]),
        ("NOT a IN (1)", [1, 3]),  # the null row stays out, as in SQL
        ("a IN (1, 40)", [0, 3]),
        ("NOT a IN (" + ", ".join(str(i) for i in range(40)) + ")", [3]),  # long lists too
        ("a BETWEEN 1 AND 2", [0, 1]),
        ("d = DATE '1970-01-02'", [0]),
        ("d >= '1970-01-03'", [1, 2]),
        ("t > TIMESTAMP '1970-01-01 00:00:00'", [1, 3]),
        ("f < -1", [1]),
        ("(a = 1 OR s = 'xb') AND NOT f IS NULL", [0, 1]),
        ("true AND a = 2", [1]),
        ("`weird name` >= 9", [2, 3]),
    ],
)
def test_predicates_keep_what_sql_keeps(sql: str, kept: list[int]) -> None:
    rows = TABLE.append_column("row", pa.array(range(TABLE.num_rows)))
    assert rows.filter(parse_predicate(sql, SCHEMA))["row"].to_pylist() == kept


@pytest.mark.parametrize(
    ("sql", "error", "match"),
    [
        ("zz = 1", ColumnNotFoundError, "no column named 'zz'"),
        ("a = ", InvalidArgumentError, "cannot parse"),
        ("1 = 1", InvalidArgumentError, "not supported"),
        ("a IN (SELECT 1)", InvalidArgumentError, "not supported"),
        ("upper(s) = 'A'", InvalidArgumentError, "not supported"),
        ("a = 'x'", InvalidArgumentError, "not a int64 value"),
        ("d = DATE 'nope'", InvalidArgumentError, "nope"),
        ("  ", InvalidArgumentError, "non-empty"),
        (None, InvalidArgumentError, "non-empty"),
        ("a = 9223372036854775812", InvalidArgumentError, "not a int64 value"),
        ("`weird name` = 9223372036854775812", InvalidArgumentError, "not a int32 value"),
        ("a + 1 = 99999999999999999999", InvalidArgumentError, "does not fit a 64-bit"),
    ],
)
def test_bad_predicates_raise_one_typed_error(sql: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        parse_predicate(sql, SCHEMA)
    assert "\n" not in str(info.value)


U64 = pa.table({"u": pa.array([0, 2**63 + 4, 2**64 - 1], pa.uint64())})


@pytest.mark.parametrize(
    ("sql", "kept"),
    [
        ("u = 9223372036854775812", [1]),  # beyond int64, a uint64 value
        ("u >= 9223372036854775812", [1, 2]),
        ("u = 18446744073709551615", [2]),
        ("u < 5", [0]),
    ],
)
def test_uint64_literals_beyond_int64(sql: str, kept: list[int]) -> None:
    rows = U64.append_column("row", pa.array(range(U64.num_rows)))
    assert rows.filter(parse_predicate(sql, U64.schema))["row"].to_pylist() == kept


@pytest.mark.parametrize("sql", ["u = 18446744073709551616", "u = -1"])
def test_literals_outside_uint64_raise_a_typed_error(sql: str) -> None:
    with pytest.raises(InvalidArgumentError, match="not a uint64 value"):
        parse_predicate(sql, U64.schema)


def test_a_float_column_takes_an_integer_beyond_int64() -> None:
    table = pa.table({"f": [1.0, 2.0**70]})
    assert table.filter(parse_predicate("f = 1180591620717411303424", table.schema)).num_rows == 1
