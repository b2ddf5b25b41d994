"""Batch mode: page alignment proven from the file's own metadata, lookups by batch id with
counted IO, virtual columns with pushdown, and the AppendBatch validation rules.

Bad inputs tried here (each must leave the writer usable and the file valid up to the
last accepted batch): a repeated id, a decreasing id, a bool id, a float id, a string id,
an id beyond int64, an empty batch, a batch with a missing column, with another column
type, with a column renamed, data that is not a table, write() after append_batch() and
append_batch() after write(), a schema using a virtual column name; reader side: unknown
batch ids, read_batches on a plain file, non-integer ids, virtual columns on a plain file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion
from fermion.format.metadata.layout import Kind, Node
from fermion.format.metadata.structs import FORMAT_VERSION_MAJOR, DescType, minor_version
from fermion.format.read.batch_lookup import _MAPPED_GRAIN
from tests.format.test_roundtrip import assert_same as _assert_same
from tests.support.budget import examples

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("score", pa.float32()),
        ("name", pa.string()),
        ("flag", pa.bool_()),
        ("tags", pa.list_(pa.int32())),
        ("words", pa.large_list(pa.string())),
        ("point", pa.struct([("x", pa.int16()), ("label", pa.string())])),
        ("vec", pa.list_(pa.float32(), 3)),
        ("cat", pa.dictionary(pa.int8(), pa.string())),
    ]
)


def decoded(t: pa.Table) -> pa.Table:
    """Dictionary columns as their values (batches carry different dictionaries)."""
    i = t.schema.get_field_index("cat")
    if i < 0:
        return t
    return t.set_column(i, "cat", t.column(i).cast(pa.string()))


def assert_same(actual: pa.Table, expected: pa.Table) -> None:
    _assert_same(decoded(actual), decoded(expected))


def make_batch(rng: np.random.Generator, n: int, base: int) -> pa.Table:
    ids = np.arange(base, base + n)
    lens = rng.integers(0, 6, n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "score": pa.array(np.where(ids % 11 == 0, np.nan, ids / 3).astype(np.float32)),
            "name": pa.array([None if i % 7 == 0 else "n" * int(i % 37) for i in ids]),
            "flag": pa.array([None if i % 5 == 0 else bool(i % 2) for i in ids]),
            "tags": pa.array(
                [
                    None if i % 9 == 0 else list(range(int(k)))
                    for i, k in zip(ids, lens, strict=True)
                ],
                pa.list_(pa.int32()),
            ),
            "words": pa.array(
                [[f"w{i}"] * int(k) for i, k in zip(ids, lens, strict=True)],
                pa.large_list(pa.string()),
            ),
            "point": pa.array(
                [{"x": int(i % 100), "label": None if i % 4 else f"p{i}"} for i in ids],
                SCHEMA.field("point").type,
            ),
            "vec": pa.array([[float(i), 0.5, -1.0] for i in ids], pa.list_(pa.float32(), 3)),
            "cat": pa.array([f"c{i % 6}" for i in ids])
            .dictionary_encode()
            .cast(SCHEMA.field("cat").type),
        },
        schema=SCHEMA,
    )


def write_batches(
    path: Path, sizes: list[int], ids: list[int] | None = None, seed: int = 0, **options
) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    ids = ids if ids is not None else [3 * i + 1 for i in range(len(sizes))]
    tables = []
    base = 0
    with fermion.FileWriter(path, SCHEMA, **options) as w:
        for bid, n in zip(ids, sizes, strict=True):
            t = make_batch(rng, n, base)
            base += n
            w.append_batch(bid, t)
            tables.append(t)
    return tables


# -- the alignment proof ---------------------------------------------------------------


def node_bounds(node: Node, arr: pa.Array, bounds: np.ndarray, out: dict[int, np.ndarray]) -> None:
    """Batch boundaries in each node's value space, derived from the data read back."""
    out[node.index] = bounds
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if node.kind in (Kind.LIST, Kind.MAP):
        offs = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        offs = offs - offs[0]
        child = arr.values.slice(int(arr.offsets[0].as_py()), int(offs[-1]))
        node_bounds(node.children[0], child, offs[bounds], out)
    elif node.kind == Kind.FIXED_LIST:
        node_bounds(node.children[0], arr.values, bounds * node.list_size, out)
    elif node.kind == Kind.STRUCT:
        for i, c in enumerate(node.children):
            node_bounds(c, arr.field(i), bounds, out)


def check_page_alignment(page_rows: np.ndarray, bounds: np.ndarray, page_size_rows: int) -> str:
    """Assert no page holds part of one batch and part of another; returns the page kinds."""
    ends = np.cumsum(page_rows.astype(np.int64))
    starts = ends - page_rows
    assert ends[-1] == bounds[-1]
    page_edges = set(np.concatenate([[0], ends]).tolist())
    kinds = ""
    for p, q in zip(starts.tolist(), ends.tolist(), strict=True):
        if q == p:
            continue
        a = bounds[:-1]
        b = bounds[1:]
        hit = np.nonzero((a < q) & (b > p) & (b > a))[0]
        assert len(hit) >= 1
        if len(hit) == 1 and not (a[hit[0]] >= p and b[hit[0]] <= q):
            # part of one batch: that batch must own all of its pages
            assert a[hit[0]] in page_edges and b[hit[0]] in page_edges, (p, q)
            kinds += "o"
        else:
            assert bool(np.all((a[hit] >= p) & (b[hit] <= q))), (p, q, a[hit], b[hit])
            kinds += "w" if len(hit) == 1 else "m"
    return kinds


def prove_aligned(path: Path, page_size: int) -> str:
    """From CMB page row counts and BATCH_META lengths: every page of every stream holds
    whole batches, or part of a single batch whose pages hold nothing else."""
    kinds = ""
    with fermion.FileReader(path) as r:
        projs = r.file_meta.projections(None)
        metas = r.file_meta.column_metas(projs)
        index = r.batches()
        whole = r.read()
        table_start = 0
        for s in range(r.num_stripes):
            b = index.stripe(s)
            rows = int(index.stripe_rows[s])
            bounds = b.bounds()
            # a stripe's validity bitmap is its only page: it stays within page_size bits
            # unless the stripe is a single batch
            assert rows <= 8 * page_size or len(b.ids) == 1
            stripe = whole.slice(table_start, rows)
            for p, m in zip(projs, metas, strict=True):
                per_node: dict[int, np.ndarray] = {}
                node_bounds(p.tree, stripe.column(p.info.field.name), bounds, per_node)
                for spec in p.tree.all_streams():
                    desc = m.streams[spec.index]
                    if desc.desc_type == DescType.SIMPLE:
                        assert desc.simple is not None  # one page, whole stripe
                        continue
                    if desc.full is None or int(desc.full[s]["num_pages"]) == 0:
                        continue
                    if spec.node not in per_node:  # dictionary values: stripe-level
                        continue
                    kinds += check_page_alignment(
                        desc.pages(s)["row_count"], per_node[spec.node], page_size
                    )
            table_start += rows
    return kinds


def test_thousands_of_batches_never_split_across_pages(tmp_path: Path) -> None:
    rng = np.random.default_rng(42)
    sizes = rng.integers(1, 40, 3000).tolist()
    sizes[100] = sizes[2000] = 700  # batches far bigger than a page
    path = tmp_path / "many.fermion"
    tables = write_batches(path, sizes, page_size=512, max_stripe_rows=6000)
    with fermion.FileReader(path) as r:
        assert r.num_stripes >= 10
        assert r.batches().num_batches == 3000
        minor = minor_version(r.metadata.required_features)  # 1.3 unless a 1.4 feature is used
        assert r.metadata.format_version == f"{FORMAT_VERSION_MAJOR}.{minor}"
        pages = {
            name: sum(
                int(d["num_pages"])
                for m in r.file_meta.column_metas(r.file_meta.projections([name]))
                for st in m.streams
                if st.full is not None
                for d in st.full
            )
            for name in ("id", "score")
        }
        # bit-packed integer pages hold more values (sized by encoded width), floats do not
        assert pages["id"] > 150 and pages["score"] > 500
    kinds = prove_aligned(path, 512)
    assert "m" in kinds and "o" in kinds and "w" in kinds  # every case happened
    # every batch reads back exactly, by id and as a whole
    ids = [3 * i + 1 for i in range(len(sizes))]
    full = pa.concat_tables(tables)
    with fermion.FileReader(path) as r:
        assert_same(r.read(), full)
        for chunk in range(0, len(ids), 500):
            got = r.read_batches(ids[chunk : chunk + 500])
            assert_same(got, pa.concat_tables(tables[chunk : chunk + 500]))
        order = rng.permutation(len(ids))[:300].tolist()
        got = r.read_batches([ids[i] for i in order])
        assert_same(got, pa.concat_tables([tables[i] for i in order]))


@settings(max_examples=examples(25), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(1, 120), min_size=1, max_size=60),
    page_size=st.sampled_from([64, 100, 256, 1024]),
    stripe_rows=st.integers(1, 400),
    gaps=st.lists(st.integers(1, 1 << 40), min_size=60, max_size=60),
)
def test_alignment_property(tmp_path_factory, sizes, page_size, stripe_rows, gaps) -> None:
    path = tmp_path_factory.mktemp("hyp") / "h.fermion"
    ids = np.cumsum(gaps[: len(sizes)]) - (1 << 41)
    tables = write_batches(
        path, sizes, ids=ids.tolist(), page_size=page_size, max_stripe_rows=stripe_rows
    )
    prove_aligned(path, page_size)
    with fermion.FileReader(path) as r:
        assert_same(r.read(), pa.concat_tables(tables))
        k = len(sizes) // 2
        assert_same(r.read_batches([int(ids[k])]), tables[k])


# -- lookups and IO ----------------------------------------------------------------------


class Recorder:
    """Records the ranges a source is asked for, through ``read_ranges`` and through
    ``read_copies`` (the bytes a point read copies out even of a mapped file)."""

    def __init__(self, source) -> None:
        self.ranges: list[tuple[int, int]] = []
        for method in ("read_ranges", "read_copies"):
            inner = getattr(source, method)

            def recording(ranges, *, max_gap, inner=inner):
                self.ranges.extend(ranges)
                return inner(ranges, max_gap=max_gap)

            setattr(source, method, recording)


def test_lookup_reads_one_page_per_projected_stream(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 64, 2000).tolist()
    path = tmp_path / "lookup.fermion"
    tables = write_batches(path, sizes, page_size=2048, max_stripe_rows=50_000)
    ids = [3 * i + 1 for i in range(len(sizes))]
    columns = ["score", "name", "flag", "id"]
    with fermion.FileReader(path, coalesce_gap=0) as r:
        index = r.batches()
        assert r.num_stripes >= 2
        metas = r.file_meta.column_metas(r.file_meta.projections(columns))
        for target in (1234, 7, 1999):
            r.read_batches([ids[target - 1]], columns=columns)  # warm CMBs and stripe meta
            rec = Recorder(r.source)
            r.source.stats.reset()
            got = r.read_batches([ids[target]], columns=columns)
            assert_same(got, tables[target].select(columns))
            s = int(index.locate(np.array([ids[target]]))[0])
            b = index.stripe(s)
            k = int(b.find(np.array([ids[target]]))[0])
            a, e = int(b.starts[k]), int(b.starts[k] + b.lengths[k])
            expected = set()
            streams = 0
            for p, m in zip(r.file_meta.projections(columns), metas, strict=True):
                for spec in p.tree.all_streams():
                    desc = m.streams[spec.index]
                    if desc.simple is not None and 0 < int(desc.simple[s]["length"]) < 2**32 - 1:
                        expected.add((int(desc.simple[s]["offset"]), int(desc.simple[s]["length"])))
                        streams += 1
                    elif desc.full is not None and int(desc.full[s]["num_pages"]):
                        ends = np.cumsum(desc.pages(s)["row_count"].astype(np.int64))
                        first = int(np.searchsorted(ends, a, side="right"))
                        last = int(np.searchsorted(ends, e - 1, side="right"))
                        assert first == last  # the batch fits one page
                        off = int(desc.page_offsets(s)[first])
                        expected.add((off, int(desc.pages(s)[first]["page_size"])))
                        streams += 1
            assert streams >= 6  # validity, data, offsets of the projected columns
            # exactly one page per stream is read: every range read lies in one of them,
            # each of them is read from its start (fixed-width columns' pages in part:
            # header, block table and the frames of the batch's blocks)
            inside = [[po <= o and o + n <= po + pn for po, pn in expected] for o, n in rec.ranges]
            assert all(sum(hits) == 1 for hits in inside)
            assert {o for o, _ in rec.ranges} >= {po for po, _ in expected}
            # (a page not read block by block is then used as a view of the mapping: its
            # first bytes, copied before its header was parsed, count twice)
            assert r.source.stats.bytes_read <= sum(n + _MAPPED_GRAIN for _, n in expected)
            assert r.source.stats.requests <= len(rec.ranges)


def test_one_reader_serves_many_column_lists(tmp_path: Path) -> None:
    """A reader kept open resolves each column list once (``read_batches`` keeps the
    plans of the last few lists): every lookup still returns what a fresh reader returns,
    for more lists than are kept, in any order; bad lists raise every time."""
    path = tmp_path / "plans.fermion"
    sizes = [3, 1, 5, 2, 4] * 8
    tables = write_batches(path, sizes)
    ids = [3 * i + 1 for i in range(len(sizes))]
    names = SCHEMA.names
    pairs = [[names[k % len(names)], names[(k * 3 + 1) % len(names)]] for k in range(14)]
    lists = [p for p in pairs if p[0] != p[1]]  # (a name given twice is read once)
    lists += [list(reversed(names)), ["_batch_id", names[0]], names[:1]]
    rng = np.random.default_rng(3)
    with fermion.FileReader(path) as kept:
        for _ in range(40):
            columns = lists[int(rng.integers(len(lists)))]
            wanted = rng.choice(len(ids), 3, replace=False).tolist()
            got = kept.read_batches([ids[k] for k in wanted], columns=columns)
            with fermion.FileReader(path) as fresh:
                assert_same(got, fresh.read_batches([ids[k] for k in wanted], columns=columns))
            if "_batch_id" not in columns:
                want = pa.concat_tables([tables[k] for k in wanted]).select(columns)
                assert_same(got, want)
        for _ in range(2):
            with pytest.raises(fermion.ColumnNotFoundError):
                kept.read_batches([ids[0]], columns=["nope"])
            with pytest.raises(fermion.InvalidArgumentError):
                kept.read_batches([ids[0]], columns=[1, 2])  # type: ignore[list-item]
    with pytest.raises(fermion.InvalidArgumentError, match="closed"):
        kept.read_batches([ids[0]], columns=lists[0])
    # each list is resolved once while kept
    resolved: list[list[str]] = []
    with fermion.FileReader(path) as r:
        real = r.file_meta.projections
        r.file_meta.projections = lambda c: resolved.append(c) or real(c)  # type: ignore[method-assign]
        for columns in [lists[0], lists[1], lists[0], lists[1], lists[0]]:
            r.read_batches([ids[5]], columns=columns)
    assert resolved == [lists[0], lists[1]]


def test_virtual_columns_and_pushdown(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 30, 400).tolist()
    ids = (np.cumsum(rng.integers(1, 5, 400)) * 10).tolist()
    path = tmp_path / "v.fermion"
    tables = write_batches(path, sizes, ids=ids, page_size=512, max_stripe_rows=2000)
    full = pa.concat_tables(tables)
    vid = pa.array(np.repeat(ids, sizes), pa.int64())
    vidx = pa.array(np.concatenate([np.arange(n) for n in sizes]).astype(np.int32))
    expected = full.append_column(pa.field("_batch_id", pa.int64(), False), vid)
    expected = expected.append_column(pa.field("_batch_index", pa.int32(), False), vidx)
    with fermion.FileReader(path, coalesce_gap=0) as r:
        assert "_batch_id" not in r.schema.names
        got = r.read(columns=["_batch_index", "name", "_batch_id"])
        assert got.equals(expected.select(["_batch_index", "name", "_batch_id"]))
        assert got.schema.field("_batch_id").type == pa.int64()
        for expr in [
            pc.field("_batch_id") == ids[123],
            (pc.field("_batch_id") >= ids[50]) & (pc.field("_batch_id") < ids[60]),
            (pc.field("_batch_index") == 0) & (pc.field("id") > 100),
            (pc.field("_batch_id") == ids[7]) | pc.field("tags").is_null(),
            pc.field("_batch_id").isin([ids[0], ids[399], 5]),
        ]:
            want = expected.filter(expr).select(["id", "_batch_id"])
            assert r.read(columns=["id", "_batch_id"], filter=expr).equals(want), expr
        # pushdown: one batch by filter costs a fraction of the data of a full read
        r.source.stats.reset()
        r.read(columns=["name", "score"])
        full_bytes = r.source.stats.bytes_read
        r.source.stats.reset()
        one = r.read(columns=["name", "score"], filter=pc.field("_batch_id") == ids[200])
        assert one.num_rows == sizes[200]
        assert r.source.stats.bytes_read * 10 < full_bytes
        # take and iter_batches serve the virtual columns too
        assert r.take([0, 5, len(full) - 1], columns=["_batch_id"]).column(0).to_pylist() == [
            vid[0].as_py(),
            vid[5].as_py(),
            vid[-1].as_py(),
        ]
        batches = list(r.iter_batches(columns=["_batch_index"], batch_size=100))
        assert pa.concat_arrays([b.column(0) for b in batches]).equals(vidx)
        assert r.read_batches([ids[3]], columns=["_batch_index", "id"]).column(0).to_pylist() == (
            list(range(sizes[3]))
        )
        with pytest.raises(fermion.BatchModeError, match="not in"):
            r.read_batches([ids[0] + 1])
        with pytest.raises(fermion.BatchModeError, match="not in"):
            r.read_batches([10**15])
        with pytest.raises(fermion.InvalidArgumentError):
            r.read_batches(["a"])
        assert r.read_batches([]).num_rows == 0


def test_inspect_shows_batch_facts(tmp_path: Path) -> None:
    from fermion.cli.render import render_inspect

    path = tmp_path / "i.fermion"
    write_batches(path, [5] * 50 + [300], page_size=256, max_stripe_rows=100)
    with fermion.FileReader(path) as r:
        info = r.describe()
    batch = info["batch_mode"]
    assert batch["num_batches"] == 51
    assert sum(batch["batches_per_stripe"]) == 51 and batch["batches_per_stripe"][-1] == 1
    assert batch["pages_per_batch"]["id:DATA"]["max"] > 1  # the 300-row batch
    text = render_inspect(info)
    assert "batches   51" in text and "pages per batch" in text
    assert "BATCH_MODE" in text


# -- validation ------------------------------------------------------------------------


def test_bad_batches_are_rejected_and_the_file_stays_valid(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    good = [make_batch(rng, n, 100 * n) for n in (3, 4, 5)]
    path = tmp_path / "v.fermion"
    w = fermion.FileWriter(path, SCHEMA, page_size=128)
    w.append_batch(10, good[0])
    bad_inputs = [
        (10, good[1], fermion.BatchModeError),
        (9, good[1], fermion.BatchModeError),
        (True, good[1], fermion.BatchModeError),
        (11.0, good[1], fermion.BatchModeError),
        ("11", good[1], fermion.BatchModeError),
        (1 << 63, good[1], fermion.BatchModeError),
        (11, good[1].slice(0, 0), fermion.BatchModeError),
        (11, good[1].drop_columns(["name"]), fermion.SchemaMismatchError),
        (
            11,
            good[1].set_column(0, "id", pa.array([1, 2, 3, 4], pa.int32())),
            fermion.SchemaMismatchError,
        ),
        (11, good[1].rename_columns(["ID", *SCHEMA.names[1:]]), fermion.SchemaMismatchError),
        (11, {"id": [1]}, fermion.InvalidArgumentError),
    ]
    for bid, data, error in bad_inputs:
        with pytest.raises(error):
            w.append_batch(bid, data)
    with pytest.raises(fermion.BatchModeError, match="mix"):
        w.write(good[1])
    w.append_batch(np.int64(11), good[1])
    w.append_batch(12, good[2].to_batches()[0])
    with pytest.raises(fermion.BatchModeError):
        w.append_batch(12, good[2])
    w.close()
    with fermion.FileReader(path) as r:
        assert_same(r.read(), pa.concat_tables(good))
        assert_same(r.read_batches([12, 10]), pa.concat_tables([good[2], good[0]]))


def test_write_then_append_is_refused(tmp_path: Path) -> None:
    with fermion.FileWriter(tmp_path / "w.fermion", pa.schema([("a", pa.int64())])) as w:
        w.write(pa.table({"a": [1]}))
        with pytest.raises(fermion.BatchModeError, match="mix"):
            w.append_batch(1, pa.table({"a": [2]}))
    with fermion.FileReader(tmp_path / "w.fermion") as r:
        assert not r.batch_mode and r.read().to_pydict() == {"a": [1]}
        with pytest.raises(fermion.BatchModeError):
            r.read_batches([1])
        with pytest.raises(fermion.ColumnNotFoundError):
            r.read(columns=["_batch_id"])


def test_virtual_name_clash_is_refused(tmp_path: Path) -> None:
    schema = pa.schema([("_batch_id", pa.int64())])
    with fermion.FileWriter(tmp_path / "c.fermion", schema) as w:
        with pytest.raises(fermion.BatchModeError, match="clash"):
            w.append_batch(1, pa.table({"_batch_id": [1]}))


def test_batch_never_spans_stripes(tmp_path: Path) -> None:
    path = tmp_path / "s.fermion"
    sizes = [7, 7, 7, 30, 1, 2]
    tables = write_batches(path, sizes, page_size=4096, max_stripe_rows=10)
    with fermion.FileReader(path) as r:
        idx = r.batches()
        assert idx.batches_per_stripe.tolist() == [1, 1, 1, 1, 2]
        assert idx.stripe_rows.tolist() == [7, 7, 7, 30, 3]
        assert_same(r.read(), pa.concat_tables(tables))


def test_batch_stripes_are_cut_by_arrow_bytes_of_sliced_batches(tmp_path: Path) -> None:
    """``max_stripe_bytes`` counts a batch's Arrow bytes: fixed-width columns by their width
    (value + validity bit), others measured, also when batches are slices of one big table
    (whose buffers are far larger than the slice)."""
    n = 40
    big = pa.table(
        {
            "x": pa.array(np.arange(10_000, dtype=np.int64)),
            "s": pa.array(["y" * 100] * 10_000),
        }
    )
    per_batch = n * 8.125 + big.column("s").slice(0, n).nbytes  # ~4.7 KB
    path = tmp_path / "b.fermion"
    with fermion.FileWriter(path, big.schema, max_stripe_bytes=int(3.5 * per_batch)) as w:
        for k in range(10):
            w.append_batch(k, big.slice(k * n, n))
    with fermion.FileReader(path) as r:
        # three batches stay below 3.5 batches' bytes; the fourth would cross it
        assert r.batches().batches_per_stripe.tolist() == [3, 3, 3, 1]
        assert_same(r.read(), big.slice(0, 10 * n))


def test_staged_batch_bytes_match_each_batchs_arrow_bytes() -> None:
    """Measured together, each part's bytes are its own ``nbytes`` within a few bytes a
    column (offsets and validity are counted per row, not per referenced buffer range):
    also for Table parts of several chunks, nulls, large offsets and a list column."""
    from fermion.format.write.batch_stripes import staged_nbytes as _staged_nbytes

    rng = np.random.default_rng(5)
    big = pa.table(
        {
            "x": pa.array(rng.integers(0, 9, 1000), pa.int64()),
            "s": pa.array([None if i % 7 == 0 else "v" * (i % 13) for i in range(1000)]),
            "b": pa.array([b"z" * (i % 5) for i in range(1000)], pa.large_binary()),
            "l": pa.array([[i] * (i % 4) for i in range(1000)], pa.list_(pa.int32())),
        }
    )
    parts: list[pa.Table | pa.RecordBatch] = []
    at = 0
    for k, n in enumerate(rng.integers(1, 40, 25).tolist()):
        part = big.slice(at, n)
        if k % 3 == 1:  # a Table of two chunks
            part = pa.concat_tables([part.slice(0, n // 2), part.slice(n // 2)])
        parts.append(part.to_batches()[0] if k % 3 == 2 else part)
        at += n
    got = _staged_nbytes(parts, big.schema, [1, 2, 3], 8.125)
    for part, size in zip(parts, got, strict=True):
        rows = part.num_rows
        exact = int(rows * 8.125) + sum(part.column(i).nbytes for i in (1, 2, 3))
        assert abs(size - exact) <= 2 * (rows // 8 + 12)
    values = sum(len(v) for v in big.column("s").slice(0, at).drop_null().to_pylist())
    assert sum(got) >= values  # the string values are all counted


def test_batch_stripe_cuts_over_many_staged_batches(tmp_path: Path) -> None:
    """Batches are measured 64 at a time, but every stripe is cut where placing batch by
    batch cuts it: it holds the greedy run of batches whose bytes stay within the limit."""
    from fermion.format.write.batch_stripes import staged_nbytes as _staged_nbytes

    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 9, 300).tolist()
    rows = int(sum(sizes))
    big = pa.table(
        {
            "x": pa.array(np.arange(rows, dtype=np.int64)),
            "s": pa.array(["w" * int(k) for k in rng.integers(0, 60, rows)]),
        }
    )
    limit = 6_000
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    parts = [big.slice(starts[k], n) for k, n in enumerate(sizes)]
    path = tmp_path / "c.fermion"
    with fermion.FileWriter(path, big.schema, max_stripe_bytes=limit) as w:
        for k, part in enumerate(parts):
            w.append_batch(k, part)
    expected, count, held = [], 0, 0
    for nbytes in _staged_nbytes(parts, big.schema, [1], 8.125):
        if count and held + nbytes > limit:
            expected.append(count)
            count, held = 0, 0
        count, held = count + 1, held + nbytes
        if held >= limit:
            expected.append(count)
            count, held = 0, 0
    expected += [count] if count else []
    with fermion.FileReader(path) as r:
        assert r.batches().batches_per_stripe.tolist() == expected
        assert len(expected) >= 8
        assert_same(r.read(), big)
