"""The ``struct.Struct`` twins of on-disk records read per column (docs/FORMAT.md).

The metadata readers unpack a few small records per column with ``struct`` rather than
``np.frombuffer(...).item()`` (a fraction of the cost). Each twin must read exactly what the
numpy structured dtype of the format reads: same size, same fields in the same order, the
same values for any bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fermion.format.cmb import _CMB_HEAD
from fermion.format.metadata import _CIT_PAIR
from fermion.format.schema import _ENTRY_STRUCT, _SLOT_STRUCT
from fermion.format.structs import (
    CIT_DTYPE,
    CMB_HEADER_DTYPE,
    COLUMN_ENTRY_DTYPE,
    HASH_SLOT_DTYPE,
)

TWINS = [
    (_ENTRY_STRUCT, COLUMN_ENTRY_DTYPE, 1),
    (_SLOT_STRUCT, HASH_SLOT_DTYPE, 1),
    (_CMB_HEAD, CMB_HEADER_DTYPE, 1),
    (_CIT_PAIR, CIT_DTYPE, 2),
]
IDS = ["column_entry", "hash_slot", "cmb_header", "cit_pair"]


@pytest.mark.parametrize(("twin", "dtype", "count"), TWINS, ids=IDS)
def test_twin_has_the_dtype_size(twin, dtype, count) -> None:
    assert twin.size == dtype.itemsize * count


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_twin_reads_what_the_dtype_reads(data) -> None:
    twin, dtype, count = data.draw(st.sampled_from(TWINS))
    raw = data.draw(st.binary(min_size=twin.size, max_size=twin.size))
    at_offset = data.draw(st.integers(0, 7))
    buf = memoryview(bytes(at_offset) + raw)  # unaligned starts as in a metadata buffer
    want = np.frombuffer(buf, dtype=dtype, count=count, offset=at_offset)
    flat = list(want.item()) if count == 1 and dtype.names else want.tolist()
    assert list(twin.unpack_from(buf, at_offset)) == flat
