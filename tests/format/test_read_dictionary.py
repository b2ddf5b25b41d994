"""``read_dictionary``: string and binary columns returned dictionary-encoded.

Checks that the values equal a plain read for every string and binary type (with nulls,
all-null chunks, many stripes, DICTIONARY pages mixed with PLAIN pages in one stripe),
through ``read_table``, ``iter_batches``, ``take`` (point reads on and off) and filters;
that DICTIONARY pages are not expanded on the way; and that each stripe's dictionary
holds its distinct values once.

Bad inputs tried: a name that is not in the file, a nested field path, an integer column,
a list-of-strings column, a bare string instead of a list (each a typed error, raised
before any data is read), and a dictionary page whose entry count lies (page CRC off):
InvalidFileError, as for a plain read.
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
from fermion.format.encoding import encodings
from fermion.format.metadata.structs import Encoding
from fermion.format.read import assemble
from tests.format.test_encodings import encodings_of
from tests.format.test_points import page_spans
from tests.support.budget import examples


def decoded(table: pa.Table) -> pa.Table:
    """``table`` with dictionary columns cast back to their value types."""
    cols = [
        c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns
    ]
    return pa.table(cols, names=table.column_names)


def without_view(table: pa.Table) -> pa.Table:
    return table.set_column(3, "view", table.column("view").cast(pa.large_string()))


def sample(n: int = 30_000, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    modes = np.array(["AIR", "MAIL", "SHIP", "TRUCK", "RAIL", None], dtype=object)
    few = modes[rng.integers(0, 6, n)]
    return pa.table(
        {
            "mode": pa.array(few, pa.string()),
            "large": pa.array(few, pa.large_string()),
            "raw": pa.array([None if m is None else m.encode() for m in few], pa.binary()),
            "view": pa.array(few, pa.string_view()),
            # DICTIONARY pages first, then unique values (PLAIN pages) in the same stripe
            "mixed": pa.array(
                [str(m) for m in few[: n // 3]] + [f"u{i}" for i in range(n - n // 3)]
            ),
            "nulls": pa.nulls(n, pa.string()),
            "x": pa.array(np.arange(n)),
        }
    )


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory) -> tuple[Path, pa.Table]:
    table = sample()
    path = tmp_path_factory.mktemp("dict") / "d.fermion"
    fermion.write_table(table, path, page_size=2048, max_stripe_rows=12_000)
    assert encodings_of(path)[("mixed", "DATA")] == {"DICTIONARY", "PLAIN"}
    assert encodings_of(path)[("mode", "DATA")] == {"DICTIONARY"}
    return path, table


NAMES = ["mode", "large", "raw", "view", "mixed", "nulls"]


def test_read_table_returns_dictionary_columns(sample_file) -> None:
    path, table = sample_file
    got = fermion.read_table(path, read_dictionary=NAMES)
    for name in NAMES:
        t = got.schema.field(name).type
        assert pa.types.is_dictionary(t) and t.index_type == pa.int32(), name
    # views: values of the view's storage type
    assert got.schema.field("view").type.value_type == pa.large_string()
    assert got.schema.field("x").type == pa.int64()
    assert decoded(got).equals(without_view(table))
    for chunk in got.column("mode").chunks:  # one dictionary per stripe, no repeats
        assert len(chunk.dictionary) == len(set(chunk.dictionary.to_pylist())) <= 5


def test_dictionary_pages_are_not_expanded(sample_file, monkeypatch) -> None:
    path, table = sample_file
    calls = []
    real = encodings.materialize_dictionary
    monkeypatch.setattr(encodings, "materialize_dictionary", lambda *a: calls.append(1) or real(*a))
    joined = encodings.materialize_dictionaries  # a full read expands a stripe's pages at once
    monkeypatch.setattr(
        assemble, "materialize_dictionaries", lambda *a: calls.append(2) or joined(*a)
    )
    got = fermion.read_table(path, columns=["mode"], read_dictionary=["mode"])
    assert calls == []
    assert decoded(got).column("mode").equals(table.column("mode"))
    fermion.read_table(path, columns=["mode"])  # a plain read expands them
    assert calls


@pytest.mark.parametrize("point_reads", [True, False])
def test_take_iter_batches_and_filters(sample_file, point_reads: bool) -> None:
    path, table = sample_file
    idx = [29_999, 0, 12_000, 11_999, 17, 17, 25_001]
    with fermion.FileReader(path, read_dictionary=NAMES, point_reads=point_reads) as r:
        got = r.take(idx)
        assert pa.types.is_dictionary(got.schema.field("mixed").type)
        assert decoded(got).equals(without_view(table).take(idx))
        batches = list(r.iter_batches(columns=["mixed", "x"], batch_size=5_000))
        assert pa.types.is_dictionary(batches[0].schema.field("mixed").type)
        assert decoded(pa.Table.from_batches(batches)).equals(table.select(["mixed", "x"]))
    expr = (pc.field("mode") == "AIR") & (pc.field("x") > 100)
    got = fermion.read_table(path, read_dictionary=["mode"], filter=expr)  # with the view
    assert got.column("view").type == pa.string_view()  # filtered as its plain type
    assert decoded(without_view(got)).equals(without_view(table).filter(expr))


def test_projecting_other_columns_ignores_read_dictionary(sample_file) -> None:
    path, table = sample_file
    got = fermion.read_table(path, columns=["x"], read_dictionary=["mode"])
    assert got.equals(table.select(["x"]))


@pytest.mark.parametrize(
    "names,error",
    [
        (["nope"], fermion.ColumnNotFoundError),
        (["s.a"], fermion.ColumnNotFoundError),
        (["x"], fermion.InvalidArgumentError),
        (["words"], fermion.InvalidArgumentError),
        ("mode", fermion.InvalidArgumentError),
    ],
)
def test_bad_read_dictionary_names(tmp_path: Path, names, error) -> None:
    table = pa.table(
        {
            "mode": ["a", "b"],
            "x": [1, 2],
            "s": pa.array([{"a": "q"}, {"a": "r"}]),
            "words": pa.array([["a"], ["b", "c"]]),
        }
    )
    path = tmp_path / "bad.fermion"
    fermion.write_table(table, path)
    with pytest.raises(error):
        fermion.read_table(path, read_dictionary=names)


def test_a_lying_dictionary_page_raises(tmp_path: Path) -> None:
    table = pa.table({"mode": pa.array(["AIR", "MAIL", "SHIP"] * 2000)})
    path = tmp_path / "lie.fermion"
    fermion.write_table(table, path, page_crc=False, compression="none")
    (page,) = page_spans(path, "mode")
    assert page["encoding"] == Encoding.DICTIONARY and page["compression"] == 0
    data = bytearray(path.read_bytes())
    aux = page["offset"] + 16 + 8  # PageHeader (16 B), then EncodingHeader.aux
    data[aux : aux + 8] = (2).to_bytes(8, "little")  # 2 entries, where indices reach 2
    path.write_bytes(bytes(data))
    with pytest.raises(fermion.InvalidFileError):
        fermion.read_table(path, read_dictionary=["mode"])
    with pytest.raises(fermion.InvalidFileError):
        fermion.read_table(path)


@settings(max_examples=examples(25))
@given(
    values=st.lists(
        st.one_of(st.none(), st.sampled_from(["", "a", "bb", "ccc", "é"])), max_size=400
    ),
    page_size=st.sampled_from([64, 256, 4096]),
    stripe_rows=st.integers(1, 300),
)
def test_property_dictionary_reads_equal_plain_reads(
    tmp_path_factory, values: list, page_size: int, stripe_rows: int
) -> None:
    table = pa.table({"s": pa.array(values, pa.string()), "i": pa.array(range(len(values)))})
    path = tmp_path_factory.mktemp("prop") / "p.fermion"
    fermion.write_table(table, path, page_size=page_size, max_stripe_rows=stripe_rows)
    got = fermion.read_table(path, read_dictionary=["s"])
    assert decoded(got).equals(table)
    if values:
        idx = list(range(0, len(values), 7))
        with fermion.FileReader(path, read_dictionary=["s"]) as r:
            assert decoded(r.take(idx)).equals(table.take(idx))
