"""Key hashes of merge-insert transactions (fermion/table/key_hash.py): part of the table
format, so pinned values; equal keys hash equal however they are laid out in memory."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from fermion.table.key_hash import row_hashes


def test_pinned_values_do_not_change() -> None:
    table = pa.table({"k": pa.array([7, None], pa.int64()), "s": ["ab", ""]})
    assert row_hashes(table).tolist() == row_hashes(table).tolist()
    assert row_hashes(pa.table({"k": [7]})).tolist() == [13309476754707697221]


@given(
    values=st.lists(st.one_of(st.none(), st.text(max_size=12)), min_size=1, max_size=40),
    cut=st.integers(0, 40),
)
def test_strings_hash_alike_across_layouts(values: list[str | None], cut: int) -> None:
    plain = row_hashes(pa.table({"s": pa.array(values, pa.string())}))
    for other in (
        pa.array(values, pa.large_string()),
        pa.array(values, pa.string_view()),
        pa.array(["pad", *values], pa.string()).slice(1),
        pa.chunked_array([values[:cut], values[cut:]], pa.string()),
        pa.array(values, pa.string()).dictionary_encode(),
    ):
        assert row_hashes(pa.table({"s": other})).tolist() == plain.tolist()
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            if a == b:
                assert plain[i] == plain[j]


def test_numbers_dates_decimals_and_nulls() -> None:
    ints = row_hashes(pa.table({"k": pa.array([1, 1, 2, None, None], pa.int32())}))
    assert ints[0] == ints[1] != ints[2] and ints[3] == ints[4] != ints[0]
    assert row_hashes(pa.table({"k": pa.array([1], pa.int64())}))[0] == ints[0]  # widths alike
    floats = row_hashes(pa.table({"f": [0.0, -0.0, float("nan"), float("nan"), 1.5]}))
    assert floats[0] == floats[1] and floats[2] == floats[3] and len(set(floats.tolist())) == 3
    dec = pa.array([1, 2, 1], pa.decimal128(10, 2))
    hashed = row_hashes(pa.table({"d": dec.slice(0)}))
    assert hashed[0] == hashed[2] != hashed[1]
    dates = row_hashes(pa.table({"d": pa.array([1, 2, 1], pa.int32()).view(pa.date32())}))
    assert dates[0] == dates[2] != dates[1]


def test_distinct_keys_rarely_collide_and_columns_are_ordered() -> None:
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(-(2**62), 2**62, 200_000))
    assert len(np.unique(row_hashes(pa.table({"k": keys})))) == len(keys)
    words = [f"user-{i}" for i in range(50_000)]
    assert len(np.unique(row_hashes(pa.table({"s": words})))) == len(words)
    ab = row_hashes(pa.table({"a": [1], "b": [2]}))
    ba = row_hashes(pa.table({"a": [2], "b": [1]}))
    assert ab[0] != ba[0]


def test_hashing_works_without_pandas() -> None:
    # pandas made unimportable, as in a core install without the extras (pyarrow itself
    # imports pandas when it is installed, so its presence in sys.modules proves nothing)
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pandas':\n"
        "            raise ImportError('no pandas here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import pyarrow as pa\n"
        "from fermion.table.key_hash import row_hashes\n"
        "print(row_hashes(pa.table({'s': ['a'], 'k': [7]})).tolist(), 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    expected = row_hashes(pa.table({"s": ["a"], "k": [7]})).tolist()
    assert out.stdout.strip() == f"{expected} False"
