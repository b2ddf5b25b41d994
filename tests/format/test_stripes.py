"""Pages decoded into one buffer per run of adjacent pages (``merge_targets``): DATA runs
(bytes end to end) and OFFSETS runs (a typed offsets array every page of the stream
writes its entries into, checked on the way in, joined at assembly); run buffers come
from Arrow's memory pool.

Round trips of every run shape: OFFSETS of lists, large lists, maps and strings (nested
and flat), plain and encoded, compressed or not, one page or many per stripe; runs broken
by pages that cannot join one (DERIVED offsets and DICTIONARY data of string pages between
plain ones); flat columns read in several row runs (filters); take.

Bad inputs tried here (files whose page CRCs are recomputed after the edit, so that the
decoders see the lie; and the same bytes read with checksums off), each of which must
raise ``fermion.InvalidFileError``:

- a plain OFFSETS page whose offsets decrease, whose first offset is negative, or whose
  last offset disagrees with the child's values;
- a FOR lengths page (in the middle of a run) with a negative base, a base that makes the
  sums pass the int32 width, a base one too high (offsets past the child's values), one
  value too many, a wider bit width (payload size), 8-byte offsets claimed in an int32
  stream, the LENGTHS flag cleared; and one re-encoded with a single length of -1 and
  another one higher (same size, the child's value count still right: only the checks on
  the way into the run catch it);
- a page header naming DERIVED, DICTIONARY, BYTE_SPLIT or FLOAT_DECIMAL for a list's
  OFFSETS page, or claiming one more value or a shorter decoded size;
- a zstd-compressed OFFSETS page with a corrupt frame;
- a FOR DATA page of nested leaves (inside its run) claiming one more value, a wider bit
  width, 4-byte values, PLAIN, or a shorter decoded size;
- random byte mutations of OFFSETS pages (CRC recomputed): reads raise typed errors or
  give arrays that pass full Arrow validation, never crash.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
from fermion.format.encoding import bitpack
from fermion.format.encoding.pages import PAGE_HEADER_SIZE
from fermion.format.metadata.structs import (
    ENCODING_HEADER_DTYPE,
    PAGE_HEADER_DTYPE,
    Compression,
    Encoding,
    EncodingFlag,
    StreamType,
)
from tests.format.test_roundtrip import assert_same


def nested_table(n: int, seed: int = 0) -> pa.Table:
    """The benchmark's shape, small: list<list<int64>>, list<struct<a, b: string>>, and a
    large_list and a map, nulls at every level."""
    rng = np.random.default_rng(seed)

    def lengths(k: int) -> tuple[np.ndarray, np.ndarray]:
        lens = rng.integers(0, 5, k).astype(np.int32)
        null = rng.random(k) < 0.1
        lens[null] = 0
        return lens, null

    def offsets(lens: np.ndarray, dtype=np.int32) -> pa.Array:
        out = np.zeros(len(lens) + 1, dtype=dtype)
        np.cumsum(lens, out=out[1:])
        return pa.array(out)

    outer, outer_null = lengths(n)
    inner, inner_null = lengths(int(outer.sum()))
    m = int(inner.sum())
    leaf = pa.array(rng.integers(-(10**9), 10**9, m), mask=rng.random(m) < 0.1)
    ll = pa.ListArray.from_arrays(
        offsets(outer),
        pa.ListArray.from_arrays(offsets(inner), leaf, mask=pa.array(inner_null)),
        mask=pa.array(outer_null),
    )
    lens, null = lengths(n)
    k = int(lens.sum())
    words = pa.array([f"w{i}" * int(1 + i % 7) for i in range(300)])
    b = words.take(pa.array(rng.integers(0, 300, k), mask=rng.random(k) < 0.1))
    a = pa.array(rng.integers(-(2**31), 2**31 - 1, k, dtype=np.int32))
    structs = pa.StructArray.from_arrays(
        [a, b], names=["a", "b"], mask=pa.array(rng.random(k) < 0.1)
    )
    ls = pa.ListArray.from_arrays(offsets(lens), structs, mask=pa.array(null))
    big, big_null = lengths(n)
    large = pa.LargeListArray.from_arrays(
        offsets(big, np.int64), pa.array(rng.random(int(big.sum()))), mask=pa.array(big_null)
    )
    keys = [[f"k{j}" for j in range(int(x))] for x in rng.integers(0, 3, n)]
    maps = pa.array(
        [list(zip(ks, range(len(ks)), strict=True)) for ks in keys],
        pa.map_(pa.string(), pa.int64()),
    )
    return pa.table({"ll": ll, "ls": ls, "large": large, "m": maps})


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return nested_table(3000)


@pytest.mark.parametrize("compression", ["zstd", "none"])
@pytest.mark.parametrize("encodings", [True, False])
@pytest.mark.parametrize("page_size", [256, 4096, 1 << 20])
def test_nested_offsets_runs_round_trip(
    tmp_path: Path, table: pa.Table, compression: str, encodings: bool, page_size: int
) -> None:
    path = tmp_path / "n.fermion"
    fermion.write_table(
        table,
        path,
        page_size=page_size,
        max_stripe_rows=1100,
        compression=compression,
        encodings=encodings,
    )
    for threads in (1, 2):
        with fermion.FileReader(path, threads=threads) as r:
            assert_same(r.read(), table)
            assert r.read(columns=["ls.b"]).column(0).to_pylist() == [
                None if row is None else [None if s is None else {"b": s["b"]} for s in row]
                for row in table.column("ls").to_pylist()
            ]
    idx = np.random.default_rng(1).integers(0, table.num_rows, 50)
    assert fermion.FileReader(path).take(idx).equals(table.take(idx))


def test_run_buffers_come_from_the_arrow_memory_pool(tmp_path: Path, table: pa.Table) -> None:
    path = tmp_path / "pool.fermion"
    fermion.write_table(table, path, page_size=4096, compression="none", encodings=False)
    pool = pa.default_memory_pool()
    before = pool.bytes_allocated()
    got = fermion.read_table(path)
    held = pool.bytes_allocated() - before
    # the OFFSETS runs and the fixed-width DATA runs, at least
    runs = sum(c.buffers()[1].size for c in got.column("ll").chunks + got.column("large").chunks)
    assert held >= runs > 0
    del got
    assert pool.bytes_allocated() - before < held


def _stream_encodings(path: Path, column: str, stream_type: str) -> set[str]:
    d = fermion.FileReader(path).describe()
    (col,) = [c for c in d["columns"] if c["name"] == column]
    return {
        e
        for s in col["streams"]
        if s["stream_type"] == stream_type and s["path"] == column
        for ch in s["chunks"]
        for e in ch["encodings"]
    }


def _mixed_strings(n: int) -> pa.Array:
    """Distinct strings, then a few repeated words, then distinct strings again: plain
    pages, dictionary pages (DERIVED offsets), plain pages."""
    distinct = [f"value-{i}-{i * 7919 % 100_003}" for i in range(n)]
    few = [f"w{i % 5}" for i in range(n)]
    return pa.array(distinct[: n // 4] + few + distinct + few)


def test_runs_broken_by_dictionary_pages(tmp_path: Path) -> None:
    """Plain pages in runs, DICTIONARY pages (and their DERIVED offsets) between them, flat
    and inside a list."""
    s = _mixed_strings(20_000)
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, len(s) + 1, 4, dtype=np.int32)), s)
    table = pa.table({"s": s.slice(0, len(lists)), "l": lists})
    path = tmp_path / "mixed.fermion"
    fermion.write_table(table, path, page_size=4096)
    assert _stream_encodings(path, "s", "DATA") == {"PLAIN", "DICTIONARY"}
    assert "DERIVED" in _stream_encodings(path, "s", "OFFSETS")
    for threads in (1, 2):
        with fermion.FileReader(path, threads=threads) as r:
            assert_same(r.read(), table)
    with fermion.FileReader(path) as r:
        idx = np.arange(0, table.num_rows, 97)
        assert r.take(idx).equals(table.take(idx))
        rows = pc.field("s") >= "w3"
        assert r.read(filter=rows).equals(table.filter(rows))


# -- lying pages ----------------------------------------------------------------------


def _node(tree, path: list[str]):
    node = tree
    for name in path:
        (node,) = [c for c in node.children if c.name == name]
    return node


def offsets_pages(
    path: Path, column: str, node_path: list[str], stream: StreamType = StreamType.OFFSETS
) -> list[dict]:
    """Every OFFSETS (or other) page of one node: stripe, page index, offset and size."""
    with fermion.FileReader(path) as r:
        (proj,) = r.file_meta.projections([column])
        (meta,) = r.file_meta.column_metas([proj])
        spec = _node(proj.tree, node_path).stream(stream)
        desc = meta.streams[spec.index]
        out = []
        for s in range(len(r.file_meta.stripe_rows([meta]))):
            if desc.full is None or not int(desc.full[s]["num_pages"]):
                continue
            sizes = desc.pages(s)["page_size"].tolist()
            for i, off in enumerate(desc.page_offsets(s).tolist()):
                out.append({"stripe": s, "page": i, "offset": off, "size": sizes[i]})
        return out


def with_crc(page: bytes) -> bytes:
    crc = zlib.crc32(page[4:])
    return np.uint32(crc).astype("<u4").tobytes() + page[4:]


def edit_page(data: bytes, page: dict, edit: Callable[[bytearray], None]) -> bytes:
    """``data`` with the page's bytes changed by ``edit`` (same size), CRC recomputed."""
    off, size = page["offset"], page["size"]
    raw = bytearray(data[off : off + size])
    edit(raw)
    return data[:off] + with_crc(bytes(raw)) + data[off + size :]


def set_header(**fields) -> Callable[[bytearray], None]:
    def edit(raw: bytearray) -> None:
        head = np.frombuffer(bytes(raw[:PAGE_HEADER_SIZE]), PAGE_HEADER_DTYPE).copy()
        for k, f in fields.items():
            head[k] = f(int(head[k][0]))
        raw[:PAGE_HEADER_SIZE] = head.tobytes()

    return edit


def set_encoding(**fields) -> Callable[[bytearray], None]:
    def edit(raw: bytearray) -> None:
        at = PAGE_HEADER_SIZE
        h = np.frombuffer(bytes(raw[at : at + 24]), ENCODING_HEADER_DTYPE).copy()
        for k, f in fields.items():
            h[k] = f(int(h[k][0]))
        raw[at : at + 24] = h.tobytes()

    return edit


def set_plain(i: int, value: int) -> Callable[[bytearray], None]:
    def edit(raw: bytearray) -> None:
        at = PAGE_HEADER_SIZE + 4 * i
        raw[at : at + 4] = np.int32(value).tobytes()

    return edit


def plain_value(data: bytes, page: dict, i: int) -> int:
    return int(np.frombuffer(data, np.int32, count=1, offset=page["offset"] + 16 + 4 * i)[0])


def compression(data: bytes, page: dict) -> Compression:
    head = np.frombuffer(data, PAGE_HEADER_DTYPE, count=1, offset=page["offset"])[0]
    return Compression(int(head["compression"]))


def expect_invalid(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "bad.fermion"
    path.write_bytes(bad)
    for threads in (1, 2):
        with pytest.raises(fermion.InvalidFileError):
            fermion.FileReader(path, threads=threads).read()
    with pytest.raises(fermion.InvalidFileError):  # the CRC is right: checks are needed
        fermion.FileReader(path, verify_checksums=False).read()


def _const(v: int) -> Callable[[int], int]:
    return lambda _: v


def _add(v: int) -> Callable[[int], int]:
    return lambda x: x + v


@pytest.fixture(scope="module")
def uncompressed(tmp_path_factory, table: pa.Table) -> dict[str, tuple[Path, bytes]]:
    """The table with plain pages and with encoded pages, uncompressed (bodies editable),
    several OFFSETS pages per stripe."""
    out = {}
    for name, encodings in (("plain", False), ("encoded", True)):
        path = tmp_path_factory.mktemp(name) / "u.fermion"
        fermion.write_table(
            table.select(["ll"]), path, page_size=512, compression="none", encodings=encodings
        )
        out[name] = (path, path.read_bytes())
    return out


@pytest.mark.parametrize("node", [[], ["item"]], ids=["outer", "inner"])
def test_plain_offsets_that_lie(tmp_path: Path, uncompressed, node: list[str]) -> None:
    path, data = uncompressed["plain"]
    pages = offsets_pages(path, "ll", node)
    assert len(pages) > 3
    page = pages[2]  # inside a run
    first = plain_value(data, page, 0)
    last_i = (page["size"] - PAGE_HEADER_SIZE) // 4 - 1
    last = plain_value(data, page, last_i)
    lies = [
        set_plain(1, first - 1),  # decreasing
        set_plain(0, -1),  # negative first offset
        set_plain(last_i, last + 1),  # the page spans one more child value than there are
    ]
    for lie in lies:
        expect_invalid(tmp_path, edit_page(data, page, lie))


FOR_LIES = {
    "negative base": set_encoding(base=_const(-3)),
    "base past the int32 width": set_encoding(base=_const(2**31 - 2)),
    "base one too high": set_encoding(base=_add(1)),
    "one value too many": set_encoding(count=_add(1)),
    "wider bit width": set_encoding(width=_add(1)),
    "8-byte offsets": set_encoding(out_width=_const(8)),
    "LENGTHS flag cleared": set_encoding(flags=lambda f: f & ~int(EncodingFlag.LENGTHS)),
    "header says DERIVED": set_header(encoding=_const(Encoding.DERIVED)),
    "header says DICTIONARY": set_header(encoding=_const(Encoding.DICTIONARY)),
    "header says BYTE_SPLIT": set_header(encoding=_const(Encoding.BYTE_SPLIT)),
    "header says FLOAT_DECIMAL": set_header(encoding=_const(Encoding.FLOAT_DECIMAL)),
    "one more value": set_header(num_values=_add(1)),
    "shorter decoded size": set_header(decoded_size=_add(-1)),
}


@pytest.mark.parametrize("lie", list(FOR_LIES))
@pytest.mark.parametrize("node", [[], ["item"]], ids=["outer", "inner"])
def test_encoded_lengths_that_lie(tmp_path: Path, uncompressed, lie: str, node) -> None:
    path, data = uncompressed["encoded"]
    pages = offsets_pages(path, "ll", node)
    page = pages[2]
    head = np.frombuffer(data, PAGE_HEADER_DTYPE, count=1, offset=page["offset"])[0]
    assert (int(head["encoding"]), int(head["compression"])) == (Encoding.FOR, Compression.NONE)
    expect_invalid(tmp_path, edit_page(data, page, FOR_LIES[lie]))


@pytest.mark.parametrize("node", [[], ["item"]], ids=["outer", "inner"])
def test_a_negative_length_with_the_total_kept(tmp_path: Path, uncompressed, node) -> None:
    """Lengths 1 lower and 1 higher than they are, in one FOR page (same size, new base
    -1): the child's value count still matches, only the offsets go down. Without the
    checks on the way into the run Arrow would get non-monotonic offsets."""
    path, data = uncompressed["encoded"]
    page = offsets_pages(path, "ll", node)[2]

    def negative(raw: bytearray) -> None:
        at = PAGE_HEADER_SIZE
        h = np.frombuffer(bytes(raw[at : at + 24]), ENCODING_HEADER_DTYPE).copy()
        n, w = int(h["count"][0]), int(h["width"][0])
        lengths = bitpack.unpack(bytes(raw), at + 24, w, n).astype(np.int64) + int(h["base"][0])
        i = int(np.argmin(lengths))
        j = (i + 1) % n
        lengths[j] += int(lengths[i]) + 1  # the page's (and the child's) total is kept
        lengths[i] = -1
        packed = (lengths + 1).astype(np.uint64)  # base -1
        assert int(packed.max()) < 2**w
        h["base"] = -1
        raw[at : at + 24] = h.tobytes()
        raw[at + 24 :] = bitpack.pack(packed, w)

    expect_invalid(tmp_path, edit_page(data, page, negative))


DATA_LIES = {
    "one value too many": set_encoding(count=_add(1)),
    "wider bit width": set_encoding(width=_add(1)),
    "4-byte values": set_encoding(out_width=_const(4)),
    "header says PLAIN": set_header(encoding=_const(Encoding.PLAIN)),
    "shorter decoded size": set_header(decoded_size=_add(-1)),
}


@pytest.mark.parametrize("lie", list(DATA_LIES))
def test_encoded_leaf_values_that_lie(tmp_path: Path, uncompressed, lie: str) -> None:
    """A FOR DATA page of the list<list<int64>> leaves, inside their run buffer."""
    path, data = uncompressed["encoded"]
    pages = offsets_pages(path, "ll", ["item", "item"], StreamType.DATA)
    page = pages[len(pages) // 2]
    head = np.frombuffer(data, PAGE_HEADER_DTYPE, count=1, offset=page["offset"])[0]
    assert int(head["encoding"]) == Encoding.FOR and len(pages) > 2
    expect_invalid(tmp_path, edit_page(data, page, DATA_LIES[lie]))


def test_corrupt_zstd_offsets_page(tmp_path: Path, table: pa.Table) -> None:
    path = tmp_path / "z.fermion"
    fermion.write_table(table.select(["ll"]), path, page_size=4096, encodings=False)
    data = path.read_bytes()
    zstd_pages = [
        p
        for p in offsets_pages(path, "ll", ["item"])
        if int(
            np.frombuffer(data, PAGE_HEADER_DTYPE, count=1, offset=p["offset"])[0]["compression"]
        )
        == Compression.ZSTD
    ]
    assert zstd_pages
    page = zstd_pages[len(zstd_pages) // 2]

    def scramble(raw: bytearray) -> None:
        for k in range(PAGE_HEADER_SIZE + 8, len(raw), 7):
            raw[k] ^= 0x5A

    expect_invalid(tmp_path, edit_page(data, page, scramble))


@pytest.mark.parametrize("kind", ["plain", "encoded"])
def test_fuzzed_offsets_pages_never_crash(tmp_path: Path, uncompressed, kind: str) -> None:
    path, data = uncompressed[kind]
    pages = offsets_pages(path, "ll", []) + offsets_pages(path, "ll", ["item"])
    rng = random.Random(7)
    bad_path = tmp_path / "f.fermion"
    for trial in range(120):
        page = rng.choice(pages)

        def mutate(raw: bytearray) -> None:
            for _ in range(rng.randint(1, 4)):
                k = rng.randrange(4, len(raw))
                raw[k] = rng.randrange(256)

        bad_path.write_bytes(edit_page(data, page, mutate))
        try:
            got = fermion.FileReader(bad_path, threads=1 + trial % 2).read()
        except fermion.FermionError:
            continue
        for col in got.columns:
            for chunk in col.chunks:
                chunk.validate(full=True)
