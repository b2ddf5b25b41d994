"""OFFSETS kernels (``fermion.format.encoding.offsets``): page entries relative to the page, the
checks made on the way into a run buffer, and joining a run's pages.

Bad inputs tried here, each of which must raise ``fermion.InvalidFileError``: a negative
value length (with and without header bounds); lengths summing one past the int32
maximum, and past 2**63 (int64 running sums that wrap); a plain page whose offsets
decrease, whose first offset is negative, or that has one entry too many or too few;
pages that each fit the offset width but whose joined ends do not; a run buffer of the
wrong size or not starting at 0. Header bounds that do not settle the question (a
negative lower bound, an upper bound times the count beyond the width) fall back to
looking at the lengths, which may still be valid.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.format.encoding.offsets import join_run, lengths_into, plain_into, sums_fit
from tests.support.budget import examples

I32_MAX = 2**31 - 1
I64_MAX = 2**63 - 1


@settings(max_examples=examples(200))
@given(
    lengths=st.lists(st.integers(0, 1000), max_size=300),
    width=st.sampled_from([4, 8]),
    with_bounds=st.booleans(),
)
def test_lengths_become_page_relative_offsets(
    lengths: list[int], width: int, with_bounds: bool
) -> None:
    values = np.array(lengths, dtype=np.int64)
    out = np.full(len(values), -7, dtype=f"<i{width}")
    bounds = (0, 1000) if with_bounds else None
    lengths_into(values, out, "p", bounds)
    np.testing.assert_array_equal(out, np.cumsum(values))


def test_negative_lengths_are_refused() -> None:
    out = np.empty(3, dtype=np.int32)
    for bounds in (None, (-5, 10)):
        with pytest.raises(fermion.InvalidFileError, match="negative"):
            lengths_into(np.array([3, -1, 4]), out, "p", bounds)


def test_sums_past_the_width_are_refused() -> None:
    third = (I32_MAX + 1) // 3 + 1
    out = np.empty(3, dtype=np.int32)
    with pytest.raises(fermion.InvalidFileError, match="width"):
        lengths_into(np.array([third] * 3), out, "p")
    exact = np.array([I32_MAX - 2, 1, 1])  # ends exactly at the maximum: valid
    lengths_into(exact, out, "p", (0, I32_MAX))  # bounds that do not settle it: looked at
    assert out.tolist() == [I32_MAX - 2, I32_MAX - 1, I32_MAX]
    with pytest.raises(fermion.InvalidFileError, match="width"):
        lengths_into(exact + [0, 0, 1], out, "p")


def test_int64_sums_that_wrap_are_refused() -> None:
    out = np.empty(3, dtype=np.int64)
    with pytest.raises(fermion.InvalidFileError, match="width"):
        lengths_into(np.array([2**62] * 3), out, "p")
    with pytest.raises(fermion.InvalidFileError, match="width"):  # wraps back to positive
        lengths_into(np.array([2**62, 2**62, 2**62, 2**62, 5]), np.empty(5, np.int64), "p")
    lengths_into(np.array([2**62, 1, 1]), out, "p")  # a huge bound, a valid sum
    assert out.tolist() == [2**62, 2**62 + 1, 2**62 + 2]


def test_lengths_and_slots_must_agree() -> None:
    with pytest.raises(fermion.InvalidFileError):
        lengths_into(np.array([1, 2]), np.empty(3, dtype=np.int32), "p")


@pytest.mark.parametrize(
    "bounds,n,dtype,fits",
    [
        ((0, 7), 1000, np.int32, True),
        (None, 10, np.int32, False),
        ((-1, 7), 10, np.int32, False),
        ((0, I32_MAX), 1, np.int32, True),
        ((0, I32_MAX), 2, np.int32, False),
        ((0, I32_MAX), 2, np.int64, True),
        ((5, 5), 0, np.int32, True),
    ],
)
def test_sums_fit(bounds, n: int, dtype, fits: bool) -> None:
    assert sums_fit(bounds, n, np.dtype(dtype)) is fits


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_plain_pages_are_rebased_to_their_first_offset(dtype) -> None:
    out = np.empty(3, dtype=dtype)
    plain_into(np.array([40, 41, 41, 50], dtype=dtype), out, "p")
    assert out.tolist() == [1, 1, 10]
    empty = np.empty(0, dtype=dtype)
    plain_into(np.array([9], dtype=dtype), empty, "p")  # a page of no values


@pytest.mark.parametrize(
    "offsets",
    [[0, 5, 4], [-1, 0, 2], [0, 1, 2, 3], [0, 1]],
    ids=["decreasing", "negative first", "one too many", "one too few"],
)
def test_bad_plain_pages_are_refused(offsets: list[int]) -> None:
    with pytest.raises(fermion.InvalidFileError):
        plain_into(np.array(offsets, dtype=np.int32), np.empty(2, dtype=np.int32), "p")


def test_join_run_adds_each_page_base() -> None:
    run = np.array([0, 2, 2, 7, 1, 4, 0, 0, 3], dtype=np.int32)  # pages of 3, 2, 0, 3
    assert join_run(run, [3, 2, 0, 3], "p") == 14
    assert run.tolist() == [0, 2, 2, 7, 8, 11, 11, 11, 14]


def test_join_run_refuses_ends_past_the_width() -> None:
    half = (I32_MAX + 1) // 2
    run = np.array([0, half, half], dtype=np.int32)  # two pages, each fits on its own
    with pytest.raises(fermion.InvalidFileError, match="width"):
        join_run(run, [1, 1], "p")
    run = np.array([0, half - 1, half], dtype=np.int32)
    assert join_run(run, [1, 1], "p") == I32_MAX


def test_join_run_refuses_bad_buffers() -> None:
    with pytest.raises(fermion.InvalidFileError):
        join_run(np.array([0, 1, 2], dtype=np.int32), [1], "p")
    with pytest.raises(fermion.InvalidFileError):
        join_run(np.array([1, 1, 2], dtype=np.int32), [2], "p")
