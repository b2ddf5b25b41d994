"""TableSchema's top-level field ids (computed once per schema, docs/TABLE_FORMAT.md)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fermion.errors import InvalidArgumentError, InvalidFileError
from fermion.table.schema import TableSchema

NESTED = pa.schema(
    [
        ("a", pa.int8()),
        ("s", pa.struct([("x", pa.int8()), ("y", pa.list_(pa.string()))])),
        ("d", pa.dictionary(pa.int8(), pa.string())),
        ("u", pa.dense_union([pa.field("i", pa.int32()), pa.field("t", pa.string())])),
        ("r", pa.run_end_encoded(pa.int32(), pa.float64())),
        ("b", pa.int64()),
    ]
)


def test_top_level_ids_follow_the_node_count_of_every_kind_of_column() -> None:
    # nodes: a=1, s=4 (s, x, y, item), d=2 (indices, values), u=3 (struct: type_ids,
    # i, t) + the union node = 4, r=1 (stored as its values), b=1
    schema = TableSchema.from_arrow(NESTED, first_id=10)
    ids = schema.top_level_ids()
    assert ids[0] == 10 and ids[1] == 11 and ids[2] == 15
    assert ids == sorted(ids) and len(ids) == len(NESTED)
    assert ids[-1] == schema.max_field_id
    assert schema.id_of("b") == ids[-1]


def test_top_level_ids_is_a_new_list_each_call() -> None:
    schema = TableSchema.from_arrow(NESTED)
    first = schema.top_level_ids()
    first.clear()
    assert schema.top_level_ids() == TableSchema.from_arrow(NESTED).top_level_ids()
    assert len(schema.top_level_ids()) == len(NESTED)


def test_schemas_with_the_same_fields_are_equal() -> None:
    one = TableSchema.from_arrow(NESTED)
    two = TableSchema(NESTED, one.field_ids, one.max_field_id)
    assert one == two
    assert "_top_ids" not in repr(one)


def test_a_wrong_number_of_field_ids_is_refused() -> None:
    one = TableSchema.from_arrow(NESTED)
    with pytest.raises(InvalidFileError):
        TableSchema(NESTED, one.field_ids[:-1], one.max_field_id)


def test_a_flat_schema_gives_the_ids_of_the_general_count() -> None:
    flat = pa.schema([(f"c{i}", t) for i, t in enumerate([pa.int8(), pa.string(), pa.date32()])])
    assert TableSchema(flat, (7, 3, 9), 9).top_level_ids() == [7, 3, 9]
    with pytest.raises(InvalidFileError):
        TableSchema(flat, (7, 3), 9)
    with pytest.raises(InvalidFileError):
        TableSchema(flat, (7, 3, 9, 10), 10)
    # as many ids as top-level columns, but a struct has more nodes: refused, not taken flat
    nested = pa.schema([("a", pa.int8()), ("s", pa.struct([("x", pa.int8())])), ("b", pa.int8())])
    with pytest.raises(InvalidFileError):
        TableSchema(nested, (0, 1, 2), 2)


def test_select_columns_keeps_each_columns_ids() -> None:
    schema = TableSchema.from_arrow(NESTED, first_id=10)
    picked = schema.select_columns(["b", "s", "d"])
    assert picked.arrow.names == ["b", "s", "d"]
    assert picked.field_ids == (schema.id_of("b"), 11, 12, 13, 14, 15, 16)
    assert picked.top_level_ids() == [schema.id_of(n) for n in ["b", "s", "d"]]
    assert picked.max_field_id == schema.max_field_id
    flat = TableSchema(pa.schema([("x", pa.int8()), ("y", pa.int64())]), (4, 2), 5)
    assert flat.select_columns(["y"]).field_ids == (2,)
    with pytest.raises(InvalidArgumentError, match="nope"):
        schema.select_columns(["a", "nope"])


def test_a_schema_decoded_twice_is_the_same_object_and_bad_bytes_still_fail() -> None:
    schema = TableSchema.from_arrow(NESTED)
    message = schema.to_proto()
    first = TableSchema.from_proto(message, schema.max_field_id)
    assert first == schema and TableSchema.from_proto(message, schema.max_field_id) is first
    assert TableSchema.from_proto(message, schema.max_field_id + 1).max_field_id == (
        schema.max_field_id + 1
    )
    message.arrow_schema = b"not a schema"
    for _ in range(2):
        with pytest.raises(InvalidFileError):
            TableSchema.from_proto(message, schema.max_field_id)
