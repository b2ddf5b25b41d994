"""Golden files of every released format version stay readable, and docs/FORMAT.md stays exact."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fermion
from fermion.format.encoding import decimal_floats, encodings
from fermion.format.encoding.pages import BlockedBody, decompress_body, read_page_head
from fermion.format.metadata import structs
from fermion.format.read import batch_lookup
from fermion.format.read.plan import take_values as _take
from tests.format.test_roundtrip import assert_same

GOLDEN = Path(__file__).parent / "golden"
FORMAT_MD = Path(__file__).parents[2] / "docs" / "FORMAT.md"
CASES = sorted(GOLDEN.glob("v*/*.fermion"))


def test_golden_files_exist() -> None:
    versions = {p.parent.name for p in CASES}
    assert {"v1_0", "v1_1", "v1_2", "v1_3", "v1_4", "v1_5", "v1_6", "v1_7"} <= versions
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
        ("**CrcBlockTable** (12 B):", structs.CRC_BLOCK_TABLE_DTYPE),
        ("**DictBlockTable** (16 B):", structs.DICT_BLOCK_TABLE_DTYPE),
        ("**FloatDecimalHeader** (8 B):", structs.FLOAT_DECIMAL_HEADER_DTYPE),
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
        ("CrcBlockTable", structs.CRC_BLOCK_TABLE_DTYPE),
        ("DictBlockTable", structs.DICT_BLOCK_TABLE_DTYPE),
        ("FloatDecimalHeader", structs.FLOAT_DECIMAL_HEADER_DTYPE),
    ]:
        assert re.search(rf"{label}\**\s*\({dtype.itemsize} B\)", text), label


@pytest.mark.parametrize(
    "version,last",
    [("v1_1", structs.Encoding.INT_DICTIONARY), ("v1_3", structs.Encoding.FLOAT_DECIMAL)],
)
def test_encoded_shapes_golden_file_covers_every_encoding(version: str, last: int) -> None:
    d = fermion.FileReader(GOLDEN / version / "encoded_shapes.fermion").describe()
    used = {
        e for c in d["columns"] for s in c["streams"] for ch in s["chunks"] for e in ch["encodings"]
    }
    assert used == {e.name for e in structs.Encoding if e <= last}


# -- format 1.2: blocked zstd pages and bit-packed pages --------------------------------

BLOCKED = GOLDEN / "v1_2" / "blocked_bitpacked.fermion"


def _page_fact(page: memoryview, values: int, where: str) -> dict:
    """Encoding, compression, zstd blocks and packed bit width of one page."""
    head = read_page_head(page, expected_values=values, expected_size=None, where=where)
    fact = {
        "encoding": head.encoding.name,
        "compression": head.compression.name,
        "blocks": 0,
        "block_size": 0,
        "bits": None,
    }
    if head.compression == structs.Compression.ZSTD_BLOCKS:
        body = BlockedBody(head.body, head.size, where)
        fact.update(blocks=body.num_blocks, block_size=body.block_size)
    if head.encoding not in (structs.Encoding.PLAIN, structs.Encoding.DERIVED):
        payload = bytes(decompress_body(head, where))
        h = encodings.read_header(payload, where)
        if int(h["flags"]) & structs.EncodingFlag.BITS:
            fact["bits"] = encodings.packed_bits(h)
        if head.encoding == structs.Encoding.FLOAT_DECIMAL:
            layout = decimal_floats.read_layout(payload, len(payload), values, where)
            fact.update(
                exponent=layout.exponent,
                exceptions=layout.exceptions,
                width=layout.width,
                nested=layout.int_encoding.name,
                kernel=layout.kernel,
            )
    return fact


def _page_facts(path: Path) -> list[dict]:
    """:func:`_page_fact` of every OFFSETS/DATA page of a file, with column and stream."""
    data = memoryview(path.read_bytes())
    facts = []
    with fermion.FileReader(path) as r:
        projs = r.file_meta.projections(None)
        for p, m in zip(projs, r.file_meta.column_metas(projs), strict=True):
            for spec in p.tree.all_streams() if m.present else []:
                desc = m.streams[spec.index]
                if desc.full is None:
                    continue
                stream = structs.StreamType(spec.stream_type).name
                for s in range(r.num_stripes):
                    if not int(desc.full[s]["num_pages"]):
                        continue
                    for off, meta in zip(desc.page_offsets(s), desc.pages(s), strict=True):
                        page = data[int(off) : int(off) + int(meta["page_size"])]
                        where = f"{p.info.field.name} page at {int(off)}"
                        fact = _page_fact(page, int(meta["row_count"]), where)
                        facts.append({"column": p.info.field.name, "stream": stream, **fact})
    return facts


def test_v1_2_golden_file_has_blocked_and_bit_packed_pages(capsys) -> None:
    from fermion.cli import main

    assert main(["inspect", "--json", str(BLOCKED)]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["format_version"] == "1.2"
    compressions = {
        (c["name"], s["stream_type"]): {x for ch in s["chunks"] for x in ch["compressions"]}
        for c in described["columns"]
        for s in c["streams"]
    }
    for column in ("text", "level", "w30_pattern", "w9_pattern", "w12_skewed", "ts"):
        assert "ZSTD_BLOCKS" in compressions[(column, "DATA")], column
    with fermion.FileReader(BLOCKED) as r:
        required = structs.RequiredFeature(r.metadata.required_features)
    assert required == (
        structs.RequiredFeature.ENCODINGS
        | structs.RequiredFeature.BIT_PACKING
        | structs.RequiredFeature.BLOCKS
    )
    facts = _page_facts(BLOCKED)
    blocked = [f for f in facts if f["compression"] == "ZSTD_BLOCKS"]
    assert {f["block_size"] for f in blocked} == {512}
    assert max(f["blocks"] for f in blocked) >= 32
    assert {"PLAIN", "FOR", "DELTA", "RLE"} <= {f["encoding"] for f in blocked}
    packed = [f for f in facts if f["encoding"] not in ("PLAIN", "DERIVED")]
    assert all(f["bits"] is not None for f in packed)  # flag BITS on every encoded page
    assert {1, 2, 3, 6, 7, 9, 12, 20, 30, 37} <= {f["bits"] for f in packed}
    by_column = {(f["column"], f["encoding"]) for f in packed}
    assert {("text", "FOR"), ("flag", "DICTIONARY"), ("sorted", "DELTA")} <= by_column


@pytest.mark.parametrize("point_reads", [True, False])
def test_v1_2_blocked_golden_file_reads_back(point_reads: bool, monkeypatch) -> None:
    expected = pa.ipc.open_file(str(BLOCKED.with_suffix(".arrow"))).read_all()
    assert_same(fermion.read_table(BLOCKED, point_reads=point_reads), expected)
    idx = [7_999, 0, 4_999, 5_000, 1_234, 1_234, 3, 6_001, 511, 512, 4_368, 4_369]
    with fermion.FileReader(BLOCKED, point_reads=point_reads) as r:
        assert_same(r.take(idx), expected.take(idx))
        for name in expected.column_names:
            assert_same(r.take(idx, columns=[name]), expected.select([name]).take(idx))
        calls = []
        real, whole = BlockedBody.decompress_many, BlockedBody.decompress_whole_into
        monkeypatch.setattr(
            BlockedBody, "decompress_many", lambda b, ks: calls.extend(ks) or real(b, ks)
        )
        plan = batch_lookup._plan_group  # flat fixed-width columns read together

        def planned(group, heads, width) -> list:
            spans = plan(group, heads, width)
            for pg in group:  # (decompressed: every block planned)
                calls.extend(pg.blocks)
            return spans

        monkeypatch.setattr(batch_lookup, "_plan_group", planned)
        monkeypatch.setattr(  # a whole page: every block, in one pass
            BlockedBody,
            "decompress_whole_into",
            lambda b, out: calls.extend(range(b.num_blocks)) or whole(b, out),
        )
        for name in ("text", "w30_pattern", "level"):  # pages of 32-33 blocks
            calls.clear()
            assert_same(r.take([1_234], columns=[name]), expected.select([name]).take([1_234]))
            if point_reads:  # the EncodingHeader's block and the value's (a value may span 2)
                assert 1 <= len(calls) <= 3, (name, calls)
            else:
                assert len(calls) >= 32, (name, calls)


# -- format 1.3: FLOAT_DECIMAL pages ----------------------------------------------------

DECIMALS = GOLDEN / "v1_3" / "decimal_floats.fermion"
_DECIMAL_COLUMNS = ("price", "milli32", "constant", "ticks", "runs", "levels32", "whole")


def test_v1_3_golden_file_has_float_decimal_pages(capsys) -> None:
    from fermion.cli import main

    assert main(["inspect", "--json", str(DECIMALS)]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["format_version"] == "1.3"
    data_encodings = {
        c["name"]: {
            e
            for s in c["streams"]
            if s["stream_type"] == "DATA"
            for ch in s["chunks"]
            for e in ch["encodings"]
        }
        for c in described["columns"]
    }
    for column in (*_DECIMAL_COLUMNS, "micro", "tiny"):
        assert data_encodings[column] == {"FLOAT_DECIMAL"}, column
    assert {"FLOAT_DECIMAL", "BYTE_SPLIT"} <= data_encodings["mixed"]
    assert data_encodings["random"] == {"BYTE_SPLIT"}
    with fermion.FileReader(DECIMALS) as r:
        required = structs.RequiredFeature(r.metadata.required_features)
    assert required == (
        structs.RequiredFeature.ENCODINGS
        | structs.RequiredFeature.BIT_PACKING
        | structs.RequiredFeature.DECIMAL_FLOATS
    )
    facts = [f for f in _page_facts(DECIMALS) if f["encoding"] == "FLOAT_DECIMAL"]
    nested = {(f["column"], f["nested"]) for f in facts}
    assert {
        ("constant", "CONSTANT"),
        ("price", "FOR"),
        ("ticks", "DELTA"),
        ("runs", "RLE"),
        ("levels32", "INT_DICTIONARY"),
    } <= nested
    assert {f["exponent"] for f in facts} == {0, 1, 2, 3, 6, 15}
    assert {f["width"] for f in facts} == {4, 8}
    assert all(f["exceptions"] > 0 for f in facts if f["column"] == "price")
    assert all(f["exceptions"] == 0 for f in facts if f["column"] != "price")


@pytest.mark.parametrize("point_reads", [True, False])
def test_v1_3_decimal_golden_file_reads_back(point_reads: bool) -> None:
    expected = pa.ipc.open_file(str(DECIMALS.with_suffix(".arrow"))).read_all()
    assert_same(fermion.read_table(DECIMALS, point_reads=point_reads), expected)
    idx = [5_999, 0, 3_999, 4_000, 1_234, 1_234, 3, 1_023, 1_024, 2_047]
    with fermion.FileReader(DECIMALS, point_reads=point_reads) as r:
        assert_same(r.take(idx), expected.take(idx))
        for name in expected.column_names:
            assert_same(r.take(idx, columns=[name]), expected.select([name]).take(idx))


# -- format 1.3: checkpoints ------------------------------------------------------------

CHECKPOINTED = GOLDEN / "v1_3" / "checkpoints.fermion"


def test_v1_3_golden_file_has_checkpointed_pages() -> None:
    with fermion.FileReader(CHECKPOINTED) as r:
        required = structs.RequiredFeature(r.metadata.required_features)
    assert required & structs.RequiredFeature.CHECKPOINTS
    data = memoryview(CHECKPOINTED.read_bytes())
    flagged: dict[tuple[str, str], set[bool]] = {}
    with fermion.FileReader(CHECKPOINTED) as r:
        projs = r.file_meta.projections(None)
        for p, m in zip(projs, r.file_meta.column_metas(projs), strict=True):
            for spec in p.tree.all_streams():
                desc = m.streams[spec.index]
                if desc.full is None:
                    continue
                key = (p.info.field.name, structs.StreamType(spec.stream_type).name)
                for s in range(r.num_stripes):
                    for off, meta in zip(desc.page_offsets(s), desc.pages(s), strict=True):
                        page = data[int(off) : int(off) + int(meta["page_size"])]
                        head = read_page_head(
                            page,
                            expected_values=int(meta["row_count"]),
                            expected_size=None,
                            where="g",
                        )
                        if head.encoding in (structs.Encoding.DELTA, structs.Encoding.FOR):
                            payload = decompress_body(head, "g")
                            flagged.setdefault(key, set()).add(encodings.has_checkpoints(payload))
    assert flagged[("key", "DATA")] == {True}
    assert flagged[("wrapping", "DATA")] == {True}
    assert flagged[("text", "OFFSETS")] == {True}
    assert True not in flagged.get(("short", "DATA"), set())
    assert all(True not in v for (column, _), v in flagged.items() if column == "nested")


@pytest.mark.parametrize("point_reads", [True, False])
def test_v1_3_checkpoints_golden_file_reads_back(point_reads: bool) -> None:
    expected = pa.ipc.open_file(str(CHECKPOINTED.with_suffix(".arrow"))).read_all()
    assert_same(fermion.read_table(CHECKPOINTED, point_reads=point_reads), expected)
    idx = [8_999, 0, 5_999, 6_000, 255, 256, 257, 4_097, 4_097, 1, 7_777]
    with fermion.FileReader(CHECKPOINTED, point_reads=point_reads) as r:
        for name in expected.column_names:
            assert_same(r.take(idx, columns=[name]), expected.select([name]).take(idx))


# -- format 1.4: stripe dictionaries ------------------------------------------------------


@pytest.mark.parametrize("name", ["stripe_dictionary", "stripe_dictionary_batches"])
def test_v1_4_golden_files_use_stripe_dictionaries(name: str) -> None:
    """The 1.4 golden files need the 1.4 feature, which a 1.3 reader refuses from the
    footer; their header still says 1.3 (written before the data, §1.1)."""
    path = GOLDEN / "v1_4" / f"{name}.fermion"
    header = np.frombuffer(path.read_bytes()[:8], dtype=structs.FILE_HEADER_DTYPE)[0]
    assert int(header["version_minor"]) == 3
    with fermion.FileReader(path) as r:
        required = structs.RequiredFeature(r.metadata.required_features)
        assert structs.RequiredFeature.STRIPE_DICTIONARY in required
        d = r.describe()
    by_column = {
        c["name"]: {
            s["stream_type"]: {e for ch in s["chunks"] for e in ch["encodings"]}
            for s in c["streams"]
        }
        for c in d["columns"]
    }
    stripe_dictionary = {"STRIPE_DICTIONARY", "DICTIONARY_INDICES"}
    expected = ["city", "agent"] + (["sku", "blob", "view"] if name == "stripe_dictionary" else [])
    for column in expected:
        assert by_column[column]["DATA"] == stripe_dictionary, column
        assert by_column[column]["OFFSETS"] == {"DERIVED"}, column
    assert by_column["flag"]["DATA"] == {"DICTIONARY"}  # few distinct values: page level
    if name == "stripe_dictionary":
        assert by_column["note"]["DATA"] == {"PLAIN"}  # unique values
        assert by_column["sku"]["BLOOM"] == {"PLAIN"}


# -- format 1.5: CRC_BLOCKS ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["crc_blocks", "crc_blocks_batches"])
def test_v1_5_golden_files_use_crc_blocks(name: str) -> None:
    """The 1.5 golden files need the 1.5 feature; their point-read columns' uncompressed
    pages carry a CRC32 per block; their header still says 1.3 (§1.1)."""
    path = GOLDEN / "v1_5" / f"{name}.fermion"
    header = np.frombuffer(path.read_bytes()[:8], dtype=structs.FILE_HEADER_DTYPE)[0]
    assert int(header["version_minor"]) == 3
    with fermion.FileReader(path) as r:
        assert structs.RequiredFeature.CRC_BLOCKS in structs.RequiredFeature(
            r.metadata.required_features
        )
        d = r.describe()
    compressions = {
        c["name"]: {e for s in c["streams"] for ch in s["chunks"] for e in ch["compressions"]}
        for c in d["columns"]
    }
    expected = ["blob"] + (
        ["noise", "price", "key", "small", "code", "flag"] if name == "crc_blocks" else []
    )
    for column in expected:
        assert "CRC_BLOCKS" in compressions[column], column


# -- format 1.6: the FLOAT_DECIMAL kernel MULTIPLY ---------------------------------------

MULTIPLY = GOLDEN / "v1_6" / "decimal_multiply.fermion"


def test_v1_6_golden_file_uses_the_multiply_kernel() -> None:
    """The 1.6 golden file needs the 1.6 feature; its decimal columns' pages are MULTIPLY
    pages with every nested integer encoding (float64, exceptions), next to DIVIDE columns
    (float32 values made with MULTIPLY are DIVIDE values too); its header still says 1.3
    (§1.1)."""
    header = np.frombuffer(MULTIPLY.read_bytes()[:8], dtype=structs.FILE_HEADER_DTYPE)[0]
    assert int(header["version_minor"]) == 3
    with fermion.FileReader(MULTIPLY) as r:
        assert r.metadata.format_version == "1.6"
        assert structs.RequiredFeature.DECIMAL_MULTIPLY in structs.RequiredFeature(
            r.metadata.required_features
        )
    facts = [f for f in _page_facts(MULTIPLY) if f["encoding"] == "FLOAT_DECIMAL"]
    kernels: dict[str, set[int]] = {}
    for f in facts:
        kernels.setdefault(f["column"], set()).add(f["kernel"])
    assert kernels == {
        **{c: {1} for c in ("price", "sorted", "levels", "runs", "constant")},
        "milli32": {0},
        "divide": {0},
    }
    nested = {f["nested"] for f in facts if f["kernel"] == 1}
    assert nested == {"FOR", "DELTA", "INT_DICTIONARY", "RLE", "CONSTANT"}
    assert {f["width"] for f in facts if f["kernel"] == 1} == {8}
    assert any(f["exceptions"] for f in facts if f["column"] == "price")


@pytest.mark.parametrize("point_reads", [True, False])
def test_v1_6_golden_file_reads_back(point_reads: bool) -> None:
    expected = pa.ipc.open_file(str(MULTIPLY.with_suffix(".arrow"))).read_all()
    assert_same(fermion.read_table(MULTIPLY, point_reads=point_reads), expected)
    idx = [8_999, 0, 4_999, 5_000, 1_234, 1_234, 3, 1_023, 1_024, 2_047]
    with fermion.FileReader(MULTIPLY, point_reads=point_reads) as r:
        assert_same(r.take(idx), expected.take(idx))


# -- format 1.7: zstd blocks sharing a dictionary ----------------------------------------

DICT_BLOCKS = GOLDEN / "v1_7" / "dict_blocks.fermion"


def test_v1_7_golden_file_has_dictionary_blocks() -> None:
    """The 1.7 golden file needs the 1.7 feature: its long strings are one
    ZSTD_DICT_BLOCKS page (2 KiB blocks, an 8 KiB dictionary); its header still says 1.3."""
    header = np.frombuffer(DICT_BLOCKS.read_bytes()[:8], dtype=structs.FILE_HEADER_DTYPE)[0]
    assert int(header["version_minor"]) == 3
    with fermion.FileReader(DICT_BLOCKS) as r:
        assert r.metadata.format_version == "1.7"
        required = structs.RequiredFeature(r.metadata.required_features)
        assert structs.RequiredFeature.DICT_BLOCKS in required
        assert structs.RequiredFeature.BLOCKS not in required  # no plain ZSTD_BLOCKS page
        described = r.describe()
    compressions = {
        (c["name"], s["stream_type"]): {x for ch in s["chunks"] for x in ch["compressions"]}
        for c in described["columns"]
        for s in c["streams"]
    }
    assert compressions[("text", "DATA")] == {"ZSTD_DICT_BLOCKS"}
    assert "ZSTD_DICT_BLOCKS" not in compressions[("code", "DATA")]
    data = memoryview(DICT_BLOCKS.read_bytes())
    chunk = next(c for c in described["columns"] if c["name"] == "text")["streams"][2]
    at = chunk["chunks"][0]["offset"]
    page = data[at : at + chunk["chunks"][0]["length"]]  # the chunk is one page
    head = read_page_head(page, expected_values=20_000, expected_size=None, where="p")
    body = BlockedBody.of(head, "p")
    assert (body.block_size, len(body.dictionary or b"")) == (2048, 8192)
    assert bytes(body.dictionary or b"")[:4] == bytes.fromhex("37a430ec")  # zstd dict magic


@pytest.mark.parametrize("point_reads", [True, False])
def test_v1_7_golden_file_reads_back(point_reads: bool) -> None:
    expected = pa.ipc.open_file(str(DICT_BLOCKS.with_suffix(".arrow"))).read_all()
    assert_same(fermion.read_table(DICT_BLOCKS, point_reads=point_reads), expected)
    idx = [19_999, 0, 2_047, 2_048, 1_234, 1_234, 3, 10_000, 15_001]
    with fermion.FileReader(DICT_BLOCKS, point_reads=point_reads) as r:
        assert_same(r.take(idx), expected.take(idx))
