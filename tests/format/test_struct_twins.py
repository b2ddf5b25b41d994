"""The ``struct.Struct`` twins of on-disk records read per column (docs/FORMAT.md).

The metadata readers unpack a few small records per column with ``struct`` rather than
``np.frombuffer(...).item()`` (a fraction of the cost), and the writer packs its schema
area's column entries with one. Each twin must read exactly what the numpy structured
dtype of the format reads: same size, same fields in the same order, the same values for
any bytes; and a column entry that does not fit its fields is a typed error.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fermion.format.metadata.cit import _PAIR as _CIT_PAIR
from fermion.format.metadata.cmb import (
    _CMB_HEAD,
    _FULL_CHUNK_DESC,
    _SIMPLE_CHUNK_DESC,
    _STREAM_META,
)
from fermion.format.metadata.schema import _ENTRY_STRUCT, _SLOT_STRUCT
from fermion.format.metadata.structs import (
    CIT_DTYPE,
    CMB_HEADER_DTYPE,
    COLUMN_ENTRY_DTYPE,
    FULL_CHUNK_DESC_DTYPE,
    HASH_SLOT_DTYPE,
    SIMPLE_CHUNK_DESC_DTYPE,
    STREAM_META_DTYPE,
)
from tests.support.budget import examples

TWINS = [
    (_ENTRY_STRUCT, COLUMN_ENTRY_DTYPE, 1),
    (_SLOT_STRUCT, HASH_SLOT_DTYPE, 1),
    (_CMB_HEAD, CMB_HEADER_DTYPE, 1),
    (_CIT_PAIR, CIT_DTYPE, 2),
    (_STREAM_META, STREAM_META_DTYPE, 1),
    (_SIMPLE_CHUNK_DESC, SIMPLE_CHUNK_DESC_DTYPE, 1),
    (_FULL_CHUNK_DESC, FULL_CHUNK_DESC_DTYPE, 1),
]
IDS = ["column_entry", "hash_slot", "cmb_header", "cit_pair", "stream_meta", "simple", "full"]


@pytest.mark.parametrize(("twin", "dtype", "count"), TWINS, ids=IDS)
def test_twin_has_the_dtype_size(twin, dtype, count) -> None:
    assert twin.size == dtype.itemsize * count


@settings(max_examples=examples(200))
@given(data=st.data())
def test_twin_reads_what_the_dtype_reads(data) -> None:
    twin, dtype, count = data.draw(st.sampled_from(TWINS))
    raw = data.draw(st.binary(min_size=twin.size, max_size=twin.size))
    at_offset = data.draw(st.integers(0, 7))
    buf = memoryview(bytes(at_offset) + raw)  # unaligned starts as in a metadata buffer
    want = np.frombuffer(buf, dtype=dtype, count=count, offset=at_offset)
    flat = list(want.item()) if count == 1 and dtype.names else want.tolist()
    assert list(twin.unpack_from(buf, at_offset)) == flat


def test_an_entry_that_does_not_fit_is_a_schema_error() -> None:
    """A column whose tree has more nodes than the entry's u16 ``num_nodes`` holds (the
    tree builder refuses such types first: here a tree is made by hand) raises
    SchemaMismatchError, not a struct or numpy overflow."""
    import pyarrow as pa

    from fermion.errors import SchemaMismatchError
    from fermion.format.metadata.layout import Kind, Node
    from fermion.format.metadata.schema import build_schema_area

    field = pa.field("s", pa.struct([("a", pa.int8())]))
    leaves = [Node(i + 1, f"a{i}", pa.int8(), Kind.FIXED, True, 1) for i in range(1 << 16)]
    root = Node(0, "s", field.type, Kind.STRUCT, True, children=leaves)
    with pytest.raises(SchemaMismatchError, match="65,535"):
        build_schema_area(pa.schema([field]), trees=[root])
