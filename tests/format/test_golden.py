"""Golden files of every released format version stay readable, and docs/FORMAT.md stays exact."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fermion
from fermion.format import structs
from fermion.format.plan import take_values as _take
from tests.format.test_roundtrip import assert_same

GOLDEN = Path(__file__).parent / "golden"
FORMAT_MD = Path(__file__).parents[2] / "docs" / "FORMAT.md"
CASES = sorted(GOLDEN.glob("v*/*.fermion"))


def test_golden_files_exist() -> None:
    versions = {p.parent.name for p in CASES}
    assert {"v1_0", "v1_1"} <= versions
    assert any(p.stem == "batch_mode" for p in CASES)
    assert len(CASES) >= 5


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_file_reads_exactly(path: Path) -> None:
    expected = pa.ipc.open_file(str(path.with_suffix(".arrow"))).read_all()
    with fermion.FileReader(path) as r:
        major, minor = path.parent.name[1:].split("_")
        assert r.metadata.format_version == f"{major}.{minor}"
        columns = expected.column_names if r.batch_mode else None
        got = r.read(columns=columns)
        if r.batch_mode:  # the schema keeps the file's metadata only for a full read
            got = got.replace_schema_metadata(expected.schema.metadata)
        assert_same(got, expected)
        if expected.num_rows:
            idx = np.arange(0, expected.num_rows, 7)
            taken = r.take(idx, columns=columns)
            if r.batch_mode:
                taken = taken.replace_schema_metadata(expected.schema.metadata)
            positions = pa.array(idx, pa.int64())  # Arrow has no take kernel for view types
            want = pa.Table.from_arrays(
                [_take(c, positions) for c in expected.columns], schema=expected.schema
            )
            assert_same(taken, want)
        if r.batch_mode:
            all_ids = expected.column("_batch_id").to_numpy()
            for bid in np.unique(all_ids).tolist():
                rows = pa.array(np.nonzero(all_ids == bid)[0], pa.int64())
                want = pa.Table.from_arrays(
                    [_take(c, rows) for c in expected.columns], schema=expected.schema
                )
                got = r.read_batches([bid], columns=columns)
                assert_same(got.replace_schema_metadata(want.schema.metadata), want)
        assert r.describe()["num_rows"] == expected.num_rows


def _doc_table(section: str) -> list[tuple[int, str]]:
    """(offset, field) rows of the markdown table under a heading of FORMAT.md."""
    text = FORMAT_MD.read_text()
    body = text.split(section, 1)[1]
    rows = []
    for line in body.splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0].isdigit():
            rows.append((int(cells[0]), cells[2]))
    return rows


@pytest.mark.parametrize(
    "section,dtype",
    [
        ("### 1.1 FileHeader", structs.FILE_HEADER_DTYPE),
        ("### 1.2 Footer", structs.FOOTER_DTYPE),
        ("## 5. Pages", structs.PAGE_HEADER_DTYPE),
        ("**FullChunkDesc** (48 B):", structs.FULL_CHUNK_DESC_DTYPE),
        ("### 5.1 Encodings", structs.ENCODING_HEADER_DTYPE),
        ("**BlockTable** (8 B):", structs.BLOCK_TABLE_DTYPE),
    ],
)
def test_format_md_matches_structs(section: str, dtype: np.dtype) -> None:
    documented = [(offset, field.split(" ")[0]) for offset, field in _doc_table(section)]
    actual = sorted((offset, name) for name, (_, offset) in dtype.fields.items())
    assert documented == actual


def _doc_rows(section: str) -> list[list[str]]:
    """The cells of every row of the first markdown table under ``section``."""
    body = FORMAT_MD.read_text().split(section, 1)[1]
    rows: list[list[str]] = []
    for line in body.splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([c.strip() for c in line.strip("|").split("|")])
    separator = next(i for i, r in enumerate(rows) if set("".join(r)) <= {"-"})
    return rows[separator + 1 :]  # the rows after the header (``section`` may be the header)


def test_format_md_lists_feature_flags_and_ids() -> None:
    flags = {(r[0], int(r[1]), r[2]) for r in _doc_rows("### 1.3 Feature flags")}
    assert flags == {
        *((f.name, f.value.bit_length() - 1, "required") for f in structs.RequiredFeature),
        *((f.name, f.value.bit_length() - 1, "optional") for f in structs.OptionalFeature),
    }
    ids = {(int(r[0]), r[1]) for r in _doc_rows("### 5.2 Compression")}
    assert ids == {(c.value, c.name) for c in structs.Compression}
    ids = {(int(r[0]), r[1]) for r in _doc_rows("| id | name | applies to |")}
    assert ids == {(e.value, e.name) for e in structs.Encoding}
    title = FORMAT_MD.read_text().splitlines()[0]
    assert f"version {structs.FORMAT_VERSION_MAJOR}.{structs.FORMAT_VERSION_MINOR} " in title


def test_format_md_lists_struct_sizes() -> None:
    text = FORMAT_MD.read_text()
    for label, dtype in [
        ("CMBHeader", structs.CMB_HEADER_DTYPE),
        ("SimpleChunkDesc", structs.SIMPLE_CHUNK_DESC_DTYPE),
        ("FullChunkDesc", structs.FULL_CHUNK_DESC_DTYPE),
        ("PageMeta", structs.PAGE_META_DTYPE),
        ("StreamMeta", structs.STREAM_META_DTYPE),
        ("ColumnEntry", structs.COLUMN_ENTRY_DTYPE),
        ("SchemaHeader", structs.SCHEMA_HEADER_DTYPE),
        ("HashSlot", structs.HASH_SLOT_DTYPE),
        ("EncodingHeader", structs.ENCODING_HEADER_DTYPE),
        ("BlockTable", structs.BLOCK_TABLE_DTYPE),
    ]:
        assert re.search(rf"{label}\**\s*\({dtype.itemsize} B\)", text), label


def test_v1_1_golden_file_covers_every_encoding() -> None:
    d = fermion.FileReader(GOLDEN / "v1_1" / "encoded_shapes.fermion").describe()
    used = {
        e for c in d["columns"] for s in c["streams"] for ch in s["chunks"] for e in ch["encodings"]
    }
    assert used == {e.name for e in structs.Encoding}
