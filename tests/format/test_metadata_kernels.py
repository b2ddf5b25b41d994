"""The compiled metadata checks (fermion/format/kernels.c: ``cmb_scan``, ``schema_find``,
``schema_entries``) against the Python parsing they stand in for.

A reader opening a few columns parses each one's Column Metadata Block and schema entry
(docs/FORMAT.md §4 and §6); with the kernels built, the checks run in C and the Python
code runs only where a check fails, to raise the typed error. So the kernels must accept
exactly what Python accepts and describe it the same way. Checked here:

- every CMB of files using every descriptor type (USE_DEFAULT, FORCE_NULL, SIMPLE, FULL),
  multi-page chunks, empty chunks, bloom filters, nested and dictionary columns, batch mode:
  the kernel accepts it (it is not a path that always declines) and the ColumnMeta is the
  Python parse's, field by field;
- every byte of every CMB of a small file flipped in turn: the same outcome with and
  without the kernel (the same ColumnMeta, or the same error type and message);
- every byte of a schema area's index (heap, node field ids, column entries, hash slots)
  flipped in turn: the same lookups and columns (or the same error) from the kernels on
  the resident area as from the Python path (ranges fetched), with the resident bytes
  given and without them;
- bad arguments: TypeError, ValueError or OverflowError, never a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from fermion.errors import FermionError
from fermion.format import native, write_table
from fermion.format.metadata.cmb import ColumnMeta, StreamDesc, parse_cmb
from fermion.format.metadata.layout import build_tree
from fermion.format.metadata.schema import SchemaIndex, build_schema_area, name_hash
from fermion.format.metadata.structs import SCHEMA_HEADER_DTYPE
from fermion.format.options import ReadOptions
from fermion.format.read.metadata import MetadataReader
from fermion.format.write.writer import FileWriter
from fermion.io.source import open_source

KERNELS = native.KERNELS
pytestmark = pytest.mark.skipif(KERNELS is None, reason="compiled kernels not built here")


@contextmanager
def _kernels(on: bool) -> Iterator[None]:
    saved = native.KERNELS
    native.KERNELS = KERNELS if on else None
    try:
        yield
    finally:
        native.KERNELS = saved


def _files(tmp_path: Path) -> list[Path]:
    """Files whose CMBs use every descriptor type and chunk shape the writer makes."""
    n = 3000
    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "ints": pa.array(range(n), pa.int64()),
            "floats": pa.array(rng.random(n)),
            "nulls": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int32()),
            "all_null": pa.nulls(n, pa.int64()),
            "strings": pa.array([f"s{i % 97}" * (i % 5) for i in range(n)]),
            "empty_strings": pa.array([""] * n),
            "lists": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int16())),
            "struct": pa.array(
                [{"a": None, "b": i} for i in range(n)],
                pa.struct([("a", pa.int64()), ("b", pa.int64())]),
            ),
            "dict": pa.array(["x", "y", None] * (n // 3)).dictionary_encode(),
            "bloomed": pa.array(range(n), pa.int64()),
        }
    )
    plain = tmp_path / "plain.fermion"
    # several stripes, and pages small enough that chunks have several
    write_table(
        table, str(plain), max_stripe_rows=1000, page_size=2048, bloom_filter_columns=["bloomed"]
    )
    batch = tmp_path / "batch.fermion"
    with FileWriter(str(batch), table.select(["ints", "floats", "lists"]).schema) as w:
        for k in range(40):
            w.append_batch(100 + k, table.select(["ints", "floats", "lists"]).slice(k * 7, 7))
    return [plain, batch]


def _meta(path: Path) -> MetadataReader:
    return MetadataReader(open_source(str(path)), ReadOptions())


def _cmbs(meta: MetadataReader) -> Iterator[tuple[Any, bytes]]:
    """(projection, CMB bytes) of every column of the file that has a CMB."""
    for proj in meta.projections(meta.schema.names):
        c = proj.info.index
        (cit,) = meta.fetch([(meta.cit_offset + 8 * c, 16)])
        start, end = np.frombuffer(cit, "<u8").tolist()
        if end > start:
            (raw,) = meta.fetch([(start, end - start)])
            yield proj, bytes(raw)


def _parse(meta: MetadataReader, proj: Any, raw: bytes) -> ColumnMeta:
    return parse_cmb(
        memoryview(raw),
        proj.tree,
        num_stripes=meta.num_stripes,
        num_rows=meta.num_rows,
        column_index=proj.info.index,
        data_start=meta.data_start,
        data_end=meta.cmb_offset,
        column=proj.info.field.name,
    )


def _parse_described(meta: MetadataReader, proj: Any, raw: bytes) -> tuple[Any, ...]:
    return _described(_parse(meta, proj, raw))


def _stream(desc: StreamDesc) -> tuple[Any, ...]:
    pages = desc._pages
    return (
        desc.desc_type,
        desc._raw,
        desc._pos,
        desc._count,
        None if pages is None else {s: v.tobytes() for s, v in sorted(pages.items())},
    )


def _described(cmb: ColumnMeta) -> tuple[Any, ...]:
    rows = cmb.stripe_rows
    return (
        cmb.present,
        None if rows is None else rows.tolist(),
        cmb.size,
        [_stream(s) for s in cmb.streams],
    )


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return ("ok", fn())
    except FermionError as exc:
        return (type(exc).__name__, str(exc))


def test_every_cmb_the_writer_makes_is_accepted_and_read_as_python_reads_it(
    tmp_path: Path,
) -> None:
    assert KERNELS is not None
    seen_pages = seen_simple = 0
    for path in _files(tmp_path):
        meta = _meta(path)
        try:
            for proj, raw in _cmbs(meta):
                specs = b"".join(
                    bytes([s.stream_type]) + s.node.to_bytes(2, "little")
                    for s in proj.tree.all_streams()
                )
                scanned = KERNELS.cmb_scan(
                    raw,
                    specs,
                    meta.num_stripes,
                    meta.num_rows,
                    proj.info.index,
                    meta.data_start,
                    meta.cmb_offset,
                )
                assert scanned is not None, proj.info.field.name  # the kernel's path is taken
                with _kernels(True):
                    fast = _described(_parse(meta, proj, raw))
                with _kernels(False):
                    slow = _described(_parse(meta, proj, raw))
                assert fast == slow, proj.info.field.name
                seen_pages += sum(bool(chunks) for _, _, chunks in scanned)
                seen_simple += sum(code == 0 for code, _, _ in scanned)
        finally:
            meta.close()
            meta.source.close()
    assert seen_pages and seen_simple  # multi-page chunks and SIMPLE descriptors were met


def test_every_byte_of_every_cmb_flipped_gives_the_python_outcome(tmp_path: Path) -> None:
    path = tmp_path / "small.fermion"
    table = pa.table(
        {
            "a": pa.array(range(600), pa.int64()),
            "b": pa.array([None if i % 5 == 0 else float(i) for i in range(600)]),
            "c": pa.array([[i] * (i % 3) for i in range(600)], pa.list_(pa.int32())),
        }
    )
    write_table(table, str(path), max_stripe_rows=300, page_size=1024)
    meta = _meta(path)
    flips = accepted = 0
    try:
        for proj, raw in _cmbs(meta):
            for at in range(len(raw)):
                bad = bytearray(raw)
                bad[at] ^= 0xFF
                read = partial(_parse_described, meta, proj, bytes(bad))
                with _kernels(True):
                    fast = _outcome(read)
                with _kernels(False):
                    slow = _outcome(read)
                assert fast == slow, (proj.info.field.name, at)
                flips += 1
                accepted += fast[0] == "ok"
    finally:
        meta.close()
        meta.source.close()
    assert flips > 500
    assert accepted < flips  # (the CRC covers the block: almost every flip is refused)


def _index(area: bytes, n: int, *, resident: bool) -> SchemaIndex:
    view = memoryview(area)
    return SchemaIndex(
        lambda ranges: [view[o : o + k] for o, k in ranges],
        0,
        len(area),
        num_columns=n,
        resident=view if resident else None,
    )


def _schema_outcome(area: bytes, n: int, names: list[str], *, resident: bool) -> Any:
    def run() -> Any:
        index = _index(area, n, resident=resident)
        found = index.lookup(names)
        infos = index.columns(list(range(n)))
        return found, [(i.field, i.field_ids.tolist(), i.num_streams, i.has_bloom) for i in infos]

    return _outcome(run)


SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        pa.field("score", pa.float32(), nullable=False),
        ("tags", pa.list_(pa.int64())),
        ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
        pa.field("meta", pa.int32(), metadata={"unit": "ms"}),
    ]
)


def test_schema_lookups_and_entries_match_python_with_every_index_byte_flipped() -> None:
    trees = [build_tree(f, bloom=f.name == "id") for f in SCHEMA]
    area = build_schema_area(SCHEMA, trees=trees)
    n = len(SCHEMA)
    names = [*SCHEMA.names, "absent", "point.x"]
    header = np.frombuffer(area[-SCHEMA_HEADER_DTYPE.itemsize :], SCHEMA_HEADER_DTYPE)[0]
    index_start = int(header["heap_offset"])  # the full schema message is not the index's
    expected = _schema_outcome(area, n, names, resident=False)
    assert expected[0] == "ok" and expected[1][0][:n] == list(range(n))
    for resident in (True, False):
        with _kernels(True):
            assert _schema_outcome(area, n, names, resident=resident) == expected
    assert KERNELS is not None
    view = memoryview(area)
    assert KERNELS.schema_find(  # the kernels' path is taken on a sound area
        view,
        [name_hash(x) for x in names],
        [x.encode() for x in names],
        int(header["hash_offset"]),
        int(header["hash_capacity"]),
        int(header["columns_offset"]),
        n,
    ) == [*range(n), -1, -1]
    heap_end = int(header["heap_offset"]) + int(header["heap_size"])
    entries = KERNELS.schema_entries(
        view,
        list(range(n)),
        int(header["columns_offset"]),
        heap_end,
        int(header["num_nodes"]),
        int(header["node_ids_offset"]),
    )
    assert entries is not None and [e[0] for e in entries] == [x.encode() for x in SCHEMA.names]
    differ = 0
    for at in range(index_start, len(area) - SCHEMA_HEADER_DTYPE.itemsize):
        bad = bytearray(area)
        bad[at] ^= 0xFF
        flipped = bytes(bad)
        with _kernels(False):
            fetched = _schema_outcome(flipped, n, names, resident=False)
            slow = _schema_outcome(flipped, n, names, resident=True)
        with _kernels(True):
            fast = _schema_outcome(flipped, n, names, resident=True)
        assert fast == slow == fetched, at
        differ += fast != expected
    assert differ > 0  # (flips of the entries, names and ids are caught by the CRCs)


def test_a_flat_column_tree_is_checked_against_its_own_streams(tmp_path: Path) -> None:
    """The flat columns' stream list given to the kernel is the layout's own: a CMB whose
    directory disagrees with the column's type is refused the same way on both paths."""
    path = tmp_path / "f.fermion"
    write_table(pa.table({"x": pa.array(range(10), pa.int64())}), str(path))
    meta = _meta(path)
    try:
        ((proj, raw),) = list(_cmbs(meta))
        other = build_tree(pa.field("x", pa.string()))  # three streams, not two
        proj_other = type(proj)(proj.info, other, None)
        with _kernels(True):
            fast = _outcome(lambda: _parse(meta, proj_other, raw))
        with _kernels(False):
            slow = _outcome(lambda: _parse(meta, proj_other, raw))
        assert fast == slow and fast[0] == "InvalidFileError"
    finally:
        meta.close()
        meta.source.close()


def test_the_metadata_kernels_refuse_bad_arguments() -> None:
    assert KERNELS is not None
    with pytest.raises(TypeError):
        KERNELS.cmb_scan("not bytes", b"", 1, 1, 0, 0, 0)
    assert KERNELS.cmb_scan(b"\0" * 64, b"\0\0", 1, 1, 0, 0, 0) is None  # specs not 3 bytes each
    assert KERNELS.cmb_scan(b"\0" * 8, b"", 0, 0, 0, 0, 0) is None  # shorter than a header
    assert KERNELS.cmb_scan(b"\0" * 64, b"", 1, 1, 0, 5, 4) is None  # data area ends first
    with pytest.raises(ValueError):
        KERNELS.schema_find(b"\0" * 64, [1, 2], [b"a"], 0, 8, 0, 1)  # lengths differ
    with pytest.raises(ValueError):
        KERNELS.schema_find(b"\0" * 64, [1], [b"a"], 0, 6, 0, 1)  # capacity not a power of 2
    with pytest.raises(OverflowError):
        KERNELS.schema_find(b"\0" * 64, [-1], [b"a"], 0, 8, 0, 1)
    with pytest.raises(TypeError):
        KERNELS.schema_find(b"\0" * 64, [1], ["a"], 0, 8, 0, 1)  # a name must be bytes
    assert KERNELS.schema_find(b"\0" * 4, [1], [b"a"], 0, 8, 0, 1) is None  # slots outside
    assert KERNELS.schema_entries(b"\0" * 64, [5], 0, 64, 1, 0) is None  # entry outside
    assert KERNELS.schema_entries(b"\0" * 64, [-1], 0, 64, 1, 0) is None
    with pytest.raises(TypeError):
        KERNELS.schema_entries(b"\0" * 64, ["0"], 0, 64, 1, 0)
