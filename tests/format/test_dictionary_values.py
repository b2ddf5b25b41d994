"""String DICTIONARY pages materialised a whole stripe at a time (a full read).

``encodings.materialize_dictionaries`` must equal the pages' one-by-one
``materialize_dictionary`` results joined, for values of one width (NumPy gather) and of
mixed widths (one Arrow take over the joined dictionaries); ``assemble`` uses it when a
stripe's pages are DICTIONARY pages, with plain pages among them only when they hold at
most an eighth of the rows. Bad inputs tried: a page whose indices and the stripe's row
count disagree (typed error, not a short column).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fermion
from fermion.errors import InvalidFileError
from fermion.format.encoding import encodings
from fermion.format.read import assemble
from tests.format.test_encodings import encodings_of
from tests.support.budget import examples

OFFSET_TYPES = [np.dtype("<i4"), np.dtype("<i8")]


def joined(parts: list[tuple[np.ndarray, pa.Array]]) -> tuple[list[int], bytes]:
    """The reference, in plain Python: every page's values in order, and their offsets."""
    values = [dictionary.to_pylist()[i] for indices, dictionary in parts for i in indices]
    return np.cumsum([0] + [len(v) for v in values]).tolist(), b"".join(values)


@st.composite
def pages(draw: st.DrawFn) -> list[tuple[np.ndarray, pa.Array]]:
    same = draw(st.sampled_from([None, 0, 1, 2, 3, 4, 5, 8, 17]))  # None: any lengths
    out = []
    for _ in range(draw(st.integers(1, 4))):
        if same is None:
            values = draw(st.lists(st.binary(max_size=12), min_size=1, max_size=6))
        else:
            values = draw(st.lists(st.binary(min_size=same, max_size=same), min_size=1, max_size=6))
        n = draw(st.integers(0, 40))
        indices = np.array(draw(st.lists(st.integers(0, len(values) - 1), min_size=n, max_size=n)))
        dictionary = pa.array(values, pa.large_binary())
        if draw(st.booleans()):  # a dictionary that is a slice of a larger array
            dictionary = pa.array([b"pad", *values], pa.large_binary()).slice(1)
        out.append((indices.astype(np.int64), dictionary))
    return out


@settings(max_examples=examples(200))
@given(parts=pages(), dtype=st.sampled_from(OFFSET_TYPES))
def test_property_equals_pages_materialised_one_by_one(parts, dtype) -> None:
    offsets, data = encodings.materialize_dictionaries(parts, dtype)
    expected_offsets, expected_data = joined(parts)
    assert offsets.dtype == dtype
    assert offsets.tolist() == expected_offsets
    assert data.to_pybytes() == expected_data


@pytest.mark.parametrize("dtype", OFFSET_TYPES)
def test_both_strategies_give_the_pages_values(dtype) -> None:
    """One width (a NumPy gather, 3-byte rows and 4-byte items) and mixed widths."""
    three = pa.array([b"abc", b"xyz"], pa.large_binary())
    four = pa.array([b"ABCD", b"WXYZ"], pa.large_binary())
    mixed = pa.array([b"", b"long value", b"q"], pa.large_binary())
    for parts in (
        [(np.array([1, 0, 1]), three), (np.array([0]), three)],
        [(np.array([1, 1]), four), (np.array([0, 1]), four)],
        [(np.array([1, 0, 2]), mixed), (np.array([1]), three)],
    ):
        offsets, data = encodings.materialize_dictionaries(parts, dtype)
        assert (offsets.tolist(), data.to_pybytes()) == joined(parts)


def low_cardinality(n: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    flags = np.array(["A", "N", "R", None], dtype=object)[rng.integers(0, 4, n)]
    modes = np.array(["AIR", "MAIL", "REG AIR", "TRUCK", None], dtype=object)
    mode = modes[rng.integers(0, 5, n)]
    tail = n - 618  # the stripes' last short pages: the second one unique, so PLAIN
    late = [None if m is None else str(m) for m in mode[:tail]] + [f"u{i}" for i in range(n - tail)]
    half = n // 2  # half unique: too many plain rows for the stripe-wide path
    return pa.table(
        {
            "flag": pa.array(flags, pa.string()),
            "mode": pa.array(mode, pa.large_string()),
            "raw": pa.array([None if m is None else m.encode() for m in mode], pa.binary()),
            "late": pa.array(late, pa.string()),
            "half": pa.array([str(m) for m in mode[:half]] + [f"v{i}" for i in range(n - half)]),
        }
    )


@pytest.fixture(scope="module")
def dictionary_file(tmp_path_factory) -> tuple[Path, pa.Table]:
    table = low_cardinality(34_000)
    path = tmp_path_factory.mktemp("dictvalues") / "d.fermion"
    # two stripes of 17,000 rows: pages of 8,191 rows and a last one of 618
    fermion.write_table(table, path, page_size=4096, max_stripe_rows=17_000)
    found = encodings_of(path)
    assert found[("flag", "DATA")] == {"DICTIONARY"}
    assert found[("late", "DATA")] == {"DICTIONARY", "PLAIN"}
    assert found[("half", "DATA")] == {"DICTIONARY", "PLAIN"}
    return path, table


def test_full_read_equals_the_written_table(dictionary_file, monkeypatch) -> None:
    path, table = dictionary_file
    calls: list[int] = []
    real = encodings.materialize_dictionaries

    def counted(parts, dtype):
        calls.append(len(parts))
        return real(parts, dtype)

    monkeypatch.setattr(assemble, "materialize_dictionaries", counted)
    for name in table.column_names:
        calls.clear()
        got = fermion.read_table(path, columns=[name])
        assert got.column(0).equals(table.column(name)), name
        stripes = 2
        if name == "half":  # half its rows are plain in the second stripe: not joined there
            assert len(calls) == 1
        else:
            assert len(calls) == stripes, name
        assert any(c > 1 for c in calls), name  # several pages per stripe were joined


def test_rows_and_filters_agree_with_the_table(dictionary_file) -> None:
    path, table = dictionary_file
    with fermion.FileReader(path) as reader:
        got = reader.read(columns=["mode", "late"], filter=pc.field("flag") == "R")
    mask = pc.equal(table.column("flag"), "R").fill_null(False)
    assert got.equals(table.select(["mode", "late"]).filter(mask))


def test_indices_that_disagree_with_the_row_count_raise(tmp_path: Path, monkeypatch) -> None:
    """A stripe whose dictionary pages hold a different number of values than its page
    table says gives a typed error, not a shorter column."""
    path = tmp_path / "d.fermion"
    fermion.write_table(low_cardinality(10_000).select(["flag"]), path, page_size=4096)
    real = encodings.materialize_dictionaries

    def short(parts, dtype):
        indices, dictionary = parts[-1]
        return real([*parts[:-1], (indices[:-1], dictionary)], dtype)

    monkeypatch.setattr(assemble, "materialize_dictionaries", short)
    with pytest.raises(InvalidFileError, match="wrong number of entries"):
        fermion.read_table(path)
