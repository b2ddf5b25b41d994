"""The eager CMB-area load (docs/FORMAT.md) and every DescType the writer chooses.

The eager strategy reads the whole CMB area in one request when it is small and a request
needs a good share of it; later CMBs then come from that buffer without I/O. The writer
picks one descriptor type per stream: ``USE_DEFAULT`` (validity all valid, or a data /
offsets stream empty everywhere), ``FORCE_NULL`` (validity all null), ``SIMPLE`` (other
validity streams, a dictionary's counted validity, bloom filters) and ``FULL`` (data and
offsets pages). Each case writes a file that needs the choice, checks it was made, and
reads the column back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import fermion
from fermion.format import write_table
from fermion.format.metadata.structs import DescType, StreamType
from fermion.format.options import ReadOptions
from fermion.format.read.metadata import MetadataReader
from fermion.io.source import open_source

NAMES = [f"c{i}" for i in range(16)]


def _wide(path: Path) -> pa.Table:
    table = pa.table({n: pa.array(range(i, i + 4000), pa.int64()) for i, n in enumerate(NAMES)})
    write_table(table, str(path), max_stripe_rows=500)  # 8 stripes: CMBs with some size
    return table


def _open(path: Path, **options: Any) -> MetadataReader:
    """Metadata with a tail read that holds the schema and CIT but not the CMB area."""
    probe = MetadataReader(open_source(str(path)), ReadOptions())
    tail = path.stat().st_size - probe.schema_offset
    probe.close()
    probe.source.close()
    meta = MetadataReader(open_source(str(path)), ReadOptions(prefetch_bytes=tail, **options))
    assert meta.cmb_offset < meta.schema_offset  # a CMB area outside the tail read
    return meta


def _requests_for_rest(meta: MetadataReader, first: list[str]) -> int:
    meta.column_metas(meta.projections(first))
    meta.source.stats.reset()
    meta.column_metas(meta.projections([n for n in NAMES if n not in first]))
    return meta.source.stats.requests


def test_eager_cmb_area_load_serves_later_cmbs_without_io(tmp_path: Path) -> None:
    path = tmp_path / "wide.fermion"
    table = _wide(path)
    eager = _open(path)
    assert _requests_for_rest(eager, NAMES[:8]) == 0  # half the area asked: loaded at once
    lazy = _open(path, eager_load_threshold=0)
    assert _requests_for_rest(lazy, NAMES[:8]) >= 1  # the same request, CMB by CMB
    small_share = _open(path)
    assert _requests_for_rest(small_share, NAMES[:1]) >= 1  # 1/16 of the area: no eager load
    for meta in (eager, lazy, small_share):  # the same CMBs whichever way they came
        for name in NAMES:
            (proj,) = meta.projections([name])
            (mine,) = meta.column_metas([proj])
            (theirs,) = lazy.column_metas(lazy.projections([name]))
            assert [s.desc_type for s in mine.streams] == [s.desc_type for s in theirs.streams]
            assert (mine.stripe_rows == theirs.stripe_rows).all()
    for threshold in (0, 8 << 20):
        tail = path.stat().st_size - eager.schema_offset
        with fermion.FileReader(
            str(path), prefetch_bytes=tail, eager_load_threshold=threshold
        ) as reader:
            assert reader.read().equals(table)
    for meta in (eager, lazy, small_share):
        meta.close()
        meta.source.close()


def _desc_types(path: Path, column: str) -> dict[tuple[int, StreamType], DescType]:
    meta = MetadataReader(open_source(str(path)), ReadOptions())
    try:
        (proj,) = meta.projections([column])
        (cmb,) = meta.column_metas([proj])
        specs = proj.tree.all_streams()
        return {
            (spec.node, spec.stream_type): desc.desc_type
            for spec, desc in zip(specs, cmb.streams, strict=True)
        }
    finally:
        meta.close()
        meta.source.close()


CASES = [
    # (name, array, write options, (node, stream type) -> expected desc type)
    (
        "non-null ints",
        pa.array(range(100), pa.int64()),
        {},
        {(0, StreamType.VALIDITY): DescType.USE_DEFAULT, (0, StreamType.DATA): DescType.FULL},
    ),
    (
        "ints with nulls",
        pa.array([None if i % 7 == 0 else i for i in range(100)], pa.int64()),
        {},
        {(0, StreamType.VALIDITY): DescType.SIMPLE, (0, StreamType.DATA): DescType.FULL},
    ),
    (
        "a struct whose child is always null",
        pa.array(
            [{"a": None, "b": i} for i in range(100)],
            pa.struct([("a", pa.int64()), ("b", pa.int64())]),
        ),
        {},
        {
            (1, StreamType.VALIDITY): DescType.FORCE_NULL,
            (2, StreamType.VALIDITY): DescType.USE_DEFAULT,
        },
    ),
    (
        "empty strings only",
        pa.array([""] * 100, pa.string()),
        {},
        {(0, StreamType.DATA): DescType.USE_DEFAULT, (0, StreamType.OFFSETS): DescType.FULL},
    ),
    (
        "empty lists only",
        pa.array([[]] * 100, pa.list_(pa.int64())),
        {},
        {(1, StreamType.DATA): DescType.USE_DEFAULT, (0, StreamType.OFFSETS): DescType.FULL},
    ),
    (
        "a dictionary's counted validity",
        pa.array(["a", "b"] * 50).dictionary_encode(),
        {},
        {(1, StreamType.VALIDITY): DescType.SIMPLE},
    ),
    (
        "bloom filters",
        pa.array(range(100), pa.int64()),
        {"bloom_filter_columns": ["col"]},
        {(0, StreamType.BLOOM): DescType.SIMPLE, (0, StreamType.DATA): DescType.FULL},
    ),
]


@pytest.mark.parametrize(("name", "array", "options", "expected"), CASES, ids=[c[0] for c in CASES])
def test_writer_desc_type_choice(
    tmp_path: Path,
    name: str,
    array: pa.Array,
    options: dict[str, Any],
    expected: dict[tuple[int, StreamType], DescType],
) -> None:
    path = tmp_path / "d.fermion"
    table = pa.table({"col": array})
    write_table(table, str(path), max_stripe_rows=40, **options)  # three stripes
    chosen = _desc_types(path, "col")
    for stream, desc_type in expected.items():
        assert chosen.get(stream) == desc_type, f"{name}: {stream} is {chosen.get(stream)}"
    got = fermion.read_table(str(path))
    got.validate(full=True)
    assert got.column("col").combine_chunks().equals(table.column("col").combine_chunks())


def test_every_desc_type_is_chosen_by_some_case() -> None:
    assert {t for *_, expected in CASES for t in expected.values()} == set(DescType)


def test_an_all_null_column_has_no_cmb_and_reads_as_nulls(tmp_path: Path) -> None:
    path = tmp_path / "n.fermion"
    table = pa.table({"n": pa.nulls(100, pa.int64()), "x": pa.array(range(100), pa.int64())})
    write_table(table, str(path), max_stripe_rows=40)
    meta = MetadataReader(open_source(str(path)), ReadOptions())
    (cmb,) = meta.column_metas(meta.projections(["n"]))
    assert not cmb.present and {s.desc_type for s in cmb.streams} == {DescType.FORCE_NULL}
    meta.close()
    meta.source.close()
    assert fermion.read_table(str(path)).equals(table)


def test_cmb_records_read_with_struct_match_the_dtypes(tmp_path: Path) -> None:
    """parse_cmb reads the stripe rows, stream directory, SIMPLE and FULL descriptors with
    ``struct`` (tuples), and views the descriptors and stripe rows with numpy on first use:
    both layouts must agree."""
    from fermion.format.metadata import cmb
    from fermion.format.metadata.structs import (
        FULL_CHUNK_DESC_DTYPE,
        SIMPLE_CHUNK_DESC_DTYPE,
        STREAM_META_DTYPE,
    )

    assert cmb._STREAM_META.size == STREAM_META_DTYPE.itemsize
    assert cmb._SIMPLE_CHUNK_DESC.size == SIMPLE_CHUNK_DESC_DTYPE.itemsize
    assert cmb._FULL_CHUNK_DESC.size == FULL_CHUNK_DESC_DTYPE.itemsize
    path = tmp_path / "w.fermion"
    _wide(path)
    meta = MetadataReader(open_source(str(path)), ReadOptions())
    try:
        (m,) = meta.column_metas(meta.projections(["c3"]))
        desc = m.streams[1]  # DATA: FULL, 8 stripes
        assert desc.desc_type == DescType.FULL and desc.chunks is not None
        assert desc.full is not None and len(desc.full) == len(desc.chunks) == 8
        assert desc.full.tolist() == desc.chunks
        assert [d[2] for d in desc.chunks] == [500] * 8  # num_values
        assert desc.full["chunk_min"].tolist() == list(range(3, 4003, 500))
        assert m.stripe_rows is not None and m.stripe_rows.tolist() == [500] * 8
        assert m.stripe_rows.dtype == np.uint32
    finally:
        meta.close()
    # a column with nulls: its validity stream has SIMPLE descriptors, one page per stripe
    nulls = tmp_path / "n.fermion"
    values = [None if i % 7 == 0 else i for i in range(4000)]
    write_table(pa.table({"n": pa.array(values, pa.int64())}), str(nulls), max_stripe_rows=500)
    meta = MetadataReader(open_source(str(nulls)), ReadOptions())
    try:
        (m,) = meta.column_metas(meta.projections(["n"]))
        simple = m.streams[0]
        assert simple.desc_type == DescType.SIMPLE and simple.full is None
        assert simple.simple is not None and len(simple.simple) == 8
        assert simple.simple["num_values"].tolist() == [500] * 8
        offsets = simple.simple["offset"].tolist()
        assert offsets == sorted(offsets) and all(o > 0 for o in offsets)
        assert m.streams[1].simple is None  # a FULL stream has no SIMPLE view
        assert fermion.read_table(str(nulls))["n"].to_pylist() == values
    finally:
        meta.close()


def test_full_descriptors_give_each_stripe_its_pages(tmp_path: Path) -> None:
    """A FULL descriptor keeps the CMB bytes and unpacks a stripe's chunk when asked: a
    stripe with no DATA page (all null), one with one page and one with several."""
    rng = np.random.default_rng(2)
    words = ["".join(map(chr, rng.integers(97, 123, 64))) for _ in range(100)]
    strings = [None] * 100 + ["x"] * 100 + words
    path = tmp_path / "p.fermion"
    write_table(pa.table({"s": strings}), str(path), max_stripe_rows=100, page_size=256)
    meta = MetadataReader(open_source(str(path)), ReadOptions())
    try:
        (m,) = meta.column_metas(meta.projections(["s"]))
        data = m.streams[2]  # VALIDITY, OFFSETS, DATA
        assert data.desc_type == DescType.FULL and data.full is not None
        assert data.chunks == data.full.tolist()
        counts = [data.chunk(s)[6] for s in range(3)]  # num_pages
        assert counts[0] == 0 and counts[1] == 1 and counts[2] > 1
        for s in range(3):
            offset, length, values = data.chunk(s)[:3]
            pages = data.pages(s)
            assert len(pages) == counts[s]
            assert int(pages["page_size"].sum()) == length
            assert int(pages["row_count"].sum()) == (values if counts[s] else 0)
            lay = data.layout(s)
            assert lay.sizes.tolist() == pages["page_size"].tolist()
            if counts[s]:
                assert int(lay.offsets[0]) == offset
                assert lay.offsets.tolist() == (offset + np.cumsum(lay.sizes) - lay.sizes).tolist()
            one = data.single_page(s)
            assert one == ((offset, length, values) if counts[s] == 1 else None)
    finally:
        meta.close()
    assert fermion.read_table(str(path))["s"].to_pylist() == strings
