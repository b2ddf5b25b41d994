"""Which Arrow types are stored as another type (docs/FORMAT.md §3.1)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fermion.format.metadata.layout import is_encoded, is_wrapped


class _Ext(pa.ExtensionType):
    def __init__(self) -> None:
        super().__init__(pa.int8(), "fermion.test.layout")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> _Ext:
        return cls()


MEMBERS = [pa.field("i", pa.int32()), pa.field("t", pa.string())]


@pytest.mark.parametrize(
    ("kind", "encoded", "wrapped"),
    [
        (pa.dense_union(MEMBERS), True, True),
        (pa.sparse_union(MEMBERS), True, True),
        (pa.run_end_encoded(pa.int16(), pa.string()), True, True),
        (pa.list_view(pa.int8()), True, True),
        (pa.large_list_view(pa.int8()), True, True),
        (_Ext(), False, True),
        (pa.int8(), False, False),
        (pa.string_view(), False, False),
        (pa.list_(pa.int8()), False, False),
        (pa.dictionary(pa.int8(), pa.string()), False, False),
        (pa.struct([pa.field("u", pa.dense_union(MEMBERS))]), False, False),
    ],
)
def test_encoded_and_wrapped_types(kind: pa.DataType, encoded: bool, wrapped: bool) -> None:
    assert is_encoded(kind) is encoded
    assert is_wrapped(kind) is wrapped
