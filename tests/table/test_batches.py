"""Table-level batch lookup (``Dataset.read_batches``) and shuffled epochs.

Every expectation is computed independently from a full scan of the same version with a
``pyarrow.compute`` filter (or from the data written), never from the code under test.
Opened data files are counted twice: by the lookup's own ``stats`` and by wrapping the
functions through which the table layer opens data files (``open_data_file`` as
``fermion.table.scan`` and ``fermion.table.readers`` call it; the wrapper calls the real
function, so real files are opened). Each test gets a new ``Dataset`` object of the shared
table, so no test finds files an earlier one left open.

Bad inputs tried: ids given as a string, as floats, as booleans, as a 2-D array, ids beyond
int64 (uint64), ``columns`` as a string, an unknown column, an unknown ``on_missing``, a
table without a batch-id column, a batch-id column that is not an integer, ``read_ahead``
of 0 and of a float; missing ids (never written, or every row deleted) raise or are skipped.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion.table.batches as batches_module
import fermion.table.readers as readers_module
import fermion.table.scan as scan_module
from fermion.errors import BatchModeError, ColumnNotFoundError, InvalidArgumentError
from fermion.format import FileReader
from fermion.table import Append, Dataset, dataset, write_dataset, write_fragments
from fermion.table.tasks import commit_write, execute_write, plan_write
from tests.support.budget import examples

BATCHES = 400  # 2 batches of 2 rows per fragment: 200 fragments
ROWS_PER_BATCH = 2


def write_batch_table(
    uri: Path | str, ids: np.ndarray, sizes: np.ndarray, max_rows: int
) -> Dataset:
    """A batch-mode table: batch ``ids[k]`` has ``sizes[k]`` rows."""
    bid = np.repeat(ids, sizes)
    n = len(bid)
    data = pa.table(
        {
            "bid": pa.array(bid, pa.int64()),
            "pos": pa.array(np.arange(n), pa.int64()),
            "f": pa.array(np.arange(n, dtype=np.float32) / 2, pa.float32()),
            "tags": pa.array([[int(i), int(i) + 1] for i in range(n)], pa.list_(pa.int64())),
        }
    )
    plan = plan_write(str(uri), data.schema, batch_id_column="bid", max_rows_per_file=max_rows)
    commit_write(plan, [execute_write(plan, data)])
    return dataset(str(uri))


@pytest.fixture(scope="module")
def big_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = tmp_path_factory.mktemp("batches200")
    ids = np.arange(BATCHES, dtype=np.int64) * 10  # gaps: 5, 15, ... are never written
    sizes = np.full(BATCHES, ROWS_PER_BATCH)
    ds = write_batch_table(uri, ids, sizes, max_rows=2 * ROWS_PER_BATCH)
    assert len(ds.fragments) == 200
    return str(uri)


@pytest.fixture
def big(big_uri: str) -> Iterator[Dataset]:
    """The 200-fragment table, a new object per test: it keeps no file open yet."""
    with dataset(big_uri) as ds:
        yield ds


def expected(ds: Dataset, ids: list[int], columns: list[str]) -> pa.Table:
    """The rows of each id in turn, from a filtered full scan."""
    parts = [ds.to_table(columns, filter=pc.field("bid") == i) for i in ids]
    if not parts:
        return ds.to_table(columns).slice(0, 0)
    return pa.concat_tables(parts).combine_chunks()


class CountingOpens:
    """Counts the data files the table layer opens (wraps the real opener)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        self.readers: list[FileReader] = []
        real = scan_module.open_data_file

        def counting(target: Any) -> FileReader:
            self.paths.append(str(target))
            self.readers.append(real(target))
            return self.readers[-1]

        # scans open through scan.open_data_file, batch lookups through readers.OpenFile
        monkeypatch.setattr(scan_module, "open_data_file", counting)
        monkeypatch.setattr(readers_module, "open_data_file", counting)


def test_only_fragments_holding_the_ids_are_opened(
    big: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    opens = CountingOpens(monkeypatch)
    wanted = [3990, 10, 2000, 20, 10]  # fragments 199, 0, 100, 1 (10 twice)
    lookup = big.batch_lookup(wanted, columns=["pos", "bid"])
    table = lookup.to_table()
    opened = len(opens.paths)
    assert table.equals(expected(big, wanted, ["pos", "bid"]))
    holding = {i // 20 for i in wanted}
    assert opened == len(holding) == 4
    assert lookup.stats.files_opened == 4
    assert lookup.stats.fragments_pruned == 196
    assert lookup.row_counts.tolist() == [2, 2, 2, 2, 2]


def test_many_ids_one_pass(big: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    opens = CountingOpens(monkeypatch)
    rng = np.random.default_rng(5)
    wanted = (rng.choice(BATCHES, 120, replace=True) * 10).tolist()
    table = big.read_batches(wanted, columns=["tags", "f", "bid"])
    opened = len(opens.paths)
    assert table.column("bid").to_pylist() == np.repeat(wanted, ROWS_PER_BATCH).tolist()
    assert table.equals(expected(big, wanted, ["tags", "f", "bid"]))
    assert opened == len({i // 20 for i in wanted})


class ThreadsReading:
    """Records the thread that reads each fragment (wraps the real reader)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.idents: list[int] = []
        real = batches_module.read_fragment_batches

        def recording(*args: Any) -> pa.Table:
            self.idents.append(threading.get_ident())
            return real(*args)

        monkeypatch.setattr(batches_module, "read_fragment_batches", recording)


def test_local_fragments_are_read_in_the_calling_thread(
    big: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local table's fragments are read one after another (threads only contended for
    the GIL); the rows are those of the filtered scan all the same."""
    threads = ThreadsReading(monkeypatch)
    wanted = [3990, 10, 2000, 20, 1230, 770]
    table = big.read_batches(wanted, columns=["pos", "bid"])
    assert table.equals(expected(big, wanted, ["pos", "bid"]))
    assert threads.idents == [threading.get_ident()] * 6


def test_remote_fragments_are_read_in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table behind fsspec (here memory://) reads its fragments on pool threads, as
    requests to a remote store wait on the network."""
    uri = f"memory://fermion-batches-{threading.get_ident()}"
    ids = np.arange(8, dtype=np.int64) * 10
    ds = write_batch_table(uri, ids, np.full(8, 2), max_rows=4)
    try:
        assert ds.storage.fs is not None and len(ds.fragments) == 4
        threads = ThreadsReading(monkeypatch)
        wanted = [70, 0, 30, 40]
        table = ds.read_batches(wanted, columns=["pos", "bid"])
        assert table.equals(expected(ds, wanted, ["pos", "bid"]))
        assert len(threads.idents) == 4
        assert threading.get_ident() not in threads.idents
    finally:
        ds.storage.fs.rm(uri, recursive=True)


def test_batch_mode_files_are_read_by_batch(big: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[int]] = []
    real = FileReader.read_batches

    def spy(self: FileReader, ids: Any, columns: Any = None) -> pa.Table:
        calls.append(list(ids))
        return real(self, ids, columns)

    monkeypatch.setattr(FileReader, "read_batches", spy)
    big.read_batches([30, 20, 3000])
    assert sorted(map(sorted, calls)) == [[20, 30], [3000]]


def test_missing_ids_raise_or_skip(big: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BatchModeError, match=r"\[15, 99999\]"):
        big.read_batches([20, 15, 99999])
    opens = CountingOpens(monkeypatch)
    lookup = big.batch_lookup([99999, 20, 15], on_missing="skip")
    table = lookup.to_table()
    assert table.column("bid").to_pylist() == [20, 20]
    assert lookup.missing.tolist() == [15, 99999]
    assert lookup.row_counts.tolist() == [0, 2, 0]
    # 99999 is beyond every range: nothing opened for it; the file of 20 was kept open
    # by the lookup that raised
    assert (lookup.stats.files_opened, lookup.stats.files_reused, len(opens.paths)) == (1, 1, 0)
    empty = big.read_batches([], columns=["f"])
    assert empty.num_rows == 0 and empty.column_names == ["f"]


def test_deleted_rows_do_not_come_back(tmp_path: Path) -> None:
    ds = write_batch_table(tmp_path, np.arange(30) * 3, np.full(30, 3), max_rows=9)
    ds.delete("pos = 4 OR (bid = 60)")  # one row of batch 3, all of batch 60
    got = ds.read_batches([60, 3, 0], on_missing="skip")
    assert got.column("pos").to_pylist() == [3, 5, 0, 1, 2]
    with pytest.raises(BatchModeError, match="60"):
        ds.read_batches([60])
    # time travel: version 1 still has every row
    old = dataset(ds.uri, version=1)
    assert old.read_batches([60, 3], columns=["pos"])["pos"].to_pylist() == [60, 61, 62, 3, 4, 5]
    assert old.version == 1 and ds.version == 2


def test_a_dataset_keeps_its_files_open_between_lookups(
    big: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second lookup on the same object reuses the readers of the first (no file opened
    again) and returns the same rows; another object of the table opens its own."""
    wanted, later = [3990, 10, 2000, 20], [20, 3990, 2010]
    columns = ["f", "tags", "bid"]
    want_first, want_later = expected(big, wanted, columns), expected(big, later, columns)
    opens = CountingOpens(monkeypatch)  # (the expected tables' scans are not counted)
    first = big.batch_lookup(wanted, columns=columns)
    assert first.to_table().equals(want_first)
    assert (len(opens.paths), first.stats.files_opened, first.stats.files_reused) == (4, 4, 0)
    again = big.batch_lookup(later, columns=columns)
    assert again.to_table().equals(want_later)
    assert len(opens.paths) == 4  # fragment 100 (ids 2000, 2010) was kept open too
    assert (again.stats.files_opened, again.stats.files_reused) == (3, 3)
    # another column list on the kept readers
    assert big.read_batches([10], columns=["pos"])["pos"].to_pylist() == [2, 3]
    with dataset(big.uri) as other:
        other.read_batches([10])
    assert len(opens.paths) == 5


def test_kept_files_see_a_later_delete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``delete`` moves the object to a new version with a new deletion file: the kept
    reader serves the lookup, the new deletion file is read (once) and applied."""
    ds = write_batch_table(tmp_path, np.arange(30) * 3, np.full(30, 3), max_rows=9)
    opens = CountingOpens(monkeypatch)
    assert ds.read_batches([3], columns=["pos"])["pos"].to_pylist() == [3, 4, 5]
    ds.delete("pos = 4")  # (its scan opens the file on its own)
    opens.paths.clear()
    lookups = [ds.batch_lookup([3, 0], columns=["pos"]) for _ in range(2)]
    assert [lk.to_table()["pos"].to_pylist() for lk in lookups] == [[3, 5, 0, 1, 2]] * 2
    assert [lk.stats.deletion_files_read for lk in lookups] == [1, 0]
    assert [lk.stats.files_reused for lk in lookups] == [1, 1]
    assert opens.paths == []
    ds.delete("pos = 3")  # a second deletion file: it replaces the first one kept
    lookup = ds.batch_lookup([3], columns=["pos"])
    assert lookup.to_table()["pos"].to_pylist() == [5]
    assert lookup.stats.deletion_files_read == 1
    (kept,) = ds._readers._idle.values()
    assert len(kept.keep) == 1


def test_close_releases_the_kept_files(big: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    opens = CountingOpens(monkeypatch)
    big.read_batches([10, 2000])
    assert len(opens.readers) == 2
    big.close()
    for reader in opens.readers:
        with pytest.raises(InvalidArgumentError, match="closed"):
            reader.read_batches([10])
    # still readable, one open per lookup from now on
    for _ in range(2):
        assert big.read_batches([10], columns=["pos"])["pos"].to_pylist() == [2, 3]
    assert len(opens.paths) == 4
    assert all(r.source._fd < 0 for r in opens.readers)  # type: ignore[attr-defined]


def test_threads_sharing_a_dataset_read_right_while_files_are_evicted(big: Dataset) -> None:
    """4 threads looking up through one dataset whose cache keeps 3 of the 5 files they
    read (so readers are found kept, and evicted and closed while other threads lease
    theirs): every lookup returns the rows of the filtered scan, and no reader is closed
    under a lookup."""
    big._readers.capacity = 3
    rng = np.random.default_rng(11)
    # ids of 10 batches: 5 fragments, so files are both found kept and evicted often
    plans = [(rng.choice(10, 3, replace=False) * 10).tolist() for _ in range(40)]
    want = {tuple(ids): expected(big, ids, ["pos", "bid"]) for ids in plans}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for ids in plans[k::4]:
                got = big.read_batches(ids, columns=["pos", "bid"])
                assert got.equals(want[tuple(ids)])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(big._readers) <= 3


def test_a_failed_read_does_not_keep_its_reader(
    big: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    opens = CountingOpens(monkeypatch)
    real = FileReader.read_batches
    fail = [True]

    def flaky(self: FileReader, ids: Any, columns: Any = None) -> pa.Table:
        if fail[0]:
            raise BatchModeError("injected by the test")
        return real(self, ids, columns)

    monkeypatch.setattr(FileReader, "read_batches", flaky)
    with pytest.raises(BatchModeError, match="injected"):
        big.read_batches([10])
    assert opens.readers[0].source._fd < 0  # type: ignore[attr-defined]
    fail[0] = False
    assert big.read_batches([10], columns=["pos"])["pos"].to_pylist() == [2, 3]
    assert len(opens.paths) == 2


def test_a_pickled_dataset_keeps_no_files(big: Dataset) -> None:
    big.read_batches([10])
    copy = pickle.loads(pickle.dumps(big))
    assert len(copy._readers) == 0 and len(big._readers) == 1
    assert copy.read_batches([10], columns=["pos"])["pos"].to_pylist() == [2, 3]


def test_time_travel_sees_the_batches_of_its_version(tmp_path: Path) -> None:
    ds = write_batch_table(tmp_path, np.array([1, 2]), np.array([1, 1]), max_rows=10)
    more = pa.table({"bid": [7, 7], "pos": [10, 11], "f": pa.array([0, 0], pa.float32())})
    more = more.append_column("tags", pa.array([[1], [2]], pa.list_(pa.int64())))
    plan = plan_write(ds.uri, more.schema, batch_id_column="bid")
    commit_write(plan, [execute_write(plan, more)])
    assert dataset(ds.uri).read_batches([7])["pos"].to_pylist() == [10, 11]
    with pytest.raises(BatchModeError):
        dataset(ds.uri, version=1).read_batches([7])


def test_schema_evolution_by_field_id(tmp_path: Path) -> None:
    ds = write_batch_table(tmp_path, np.arange(6), np.full(6, 2), max_rows=4)
    ds.rename_columns({"pos": "position"})
    ds.alter_columns({"f": pa.float64()})
    ds.add_columns([pa.field("note", pa.string())])
    got = ds.read_batches([4, 1], columns=["note", "position", "f"])
    assert got.schema.field("f").type == pa.float64()
    assert got.to_pydict() == {
        "note": [None] * 4,
        "position": [8, 9, 2, 3],
        "f": [4.0, 4.5, 1.0, 1.5],
    }
    ds.drop_columns(["tags"])
    with pytest.raises(ColumnNotFoundError):
        ds.read_batches([1], columns=["tags"])


def test_fragments_not_written_in_batch_mode_are_filtered(tmp_path: Path) -> None:
    ds = write_batch_table(tmp_path, np.array([1, 2]), np.array([2, 1]), max_rows=10)
    plain = pa.table(
        {
            "bid": pa.array([5, 1, 5], pa.int64()),  # id 1 again, outside batch mode
            "pos": pa.array([100, 101, 102], pa.int64()),
            "f": pa.array([0, 0, 0], pa.float32()),
            "tags": pa.array([[], [], []], pa.list_(pa.int64())),
        }
    )
    frags = write_fragments(plain, ds.uri)
    ds = Dataset.commit(ds.uri, Append(frags), read_version=ds.version)
    got = ds.read_batches([5, 1], columns=["pos"])
    assert got["pos"].to_pylist() == [100, 102, 0, 1, 101]  # a batch's rows in table order


def test_epoch_is_seeded_complete_and_matches_lookups(big: Dataset) -> None:
    def run(seed: int | None, **kw: Any) -> list[tuple[int, pa.Table]]:
        return list(big.epoch_batches(["pos", "bid"], seed=seed, read_ahead=37, **kw))

    first, again, other = run(7), run(7), run(8)
    order = [i for i, _ in first]
    assert order == [i for i, _ in again]
    assert order != [i for i, _ in other]
    assert sorted(order) == list(range(0, BATCHES * 10, 10))  # each batch exactly once
    assert order != sorted(order)
    for bid, table in first[:25]:
        assert table.equals(expected(big, [bid], ["pos", "bid"]))
    ordered = run(None, shuffle=False)
    assert [i for i, _ in ordered] == sorted(order)
    assert all(t.num_rows == ROWS_PER_BATCH for _, t in ordered)


def test_epoch_skips_deleted_batches(tmp_path: Path) -> None:
    ds = write_batch_table(tmp_path, np.arange(10), np.full(10, 2), max_rows=6)
    ds.delete("bid = 4 OR pos = 0")
    epoch = dict(ds.epoch_batches(["pos"], seed=1))
    assert sorted(epoch) == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert epoch[0]["pos"].to_pylist() == [1]
    assert ds.batch_ids().tolist() == [0, 1, 2, 3, 5, 6, 7, 8, 9]


def test_bad_inputs(big: Dataset, tmp_path: Path) -> None:
    for bad in ("10", [1.5, 2.0], [True, False], np.zeros((2, 2), dtype=np.int64)):
        with pytest.raises(InvalidArgumentError):
            big.read_batches(bad)
    with pytest.raises(InvalidArgumentError):
        big.read_batches(np.array([2**63 + 1], dtype=np.uint64))
    with pytest.raises(InvalidArgumentError):
        big.read_batches([10], columns="pos")
    with pytest.raises(ColumnNotFoundError):
        big.read_batches([10], columns=["nope"])
    with pytest.raises(InvalidArgumentError):
        big.read_batches([10], on_missing="ignore")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        big.epoch_batches(read_ahead=0)
    with pytest.raises(InvalidArgumentError):
        big.epoch_batches(read_ahead=2.5)  # type: ignore[arg-type]
    with pytest.raises(ColumnNotFoundError):
        big.epoch_batches(["nope"])
    plain = write_dataset(pa.table({"bid": [1, 2], "s": ["a", "b"]}), str(tmp_path / "p"))
    with pytest.raises(BatchModeError, match="fermion.batch_id_column"):
        plain.read_batches([1])
    assert plain.read_batches([2, 1], batch_id_column="bid")["s"].to_pylist() == ["b", "a"]
    with pytest.raises(BatchModeError, match="integer"):
        plain.read_batches([1], batch_id_column="s")
    with pytest.raises(BatchModeError, match="not in the table"):
        plain.read_batches([1], batch_id_column="zzz")


@st.composite
def batch_tables(draw: Any) -> tuple[np.ndarray, np.ndarray, int, list[int], list[int]]:
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    ids = np.cumsum(gaps).astype(np.int64) - 3  # negative ids too
    sizes = np.array(draw(st.lists(st.integers(1, 5), min_size=n, max_size=n)))
    max_rows = draw(st.integers(1, 12))
    universe = list(range(int(ids[0]) - 2, int(ids[-1]) + 3))
    wanted = draw(st.lists(st.sampled_from(universe), max_size=12))
    deleted = draw(st.lists(st.integers(0, int(sizes.sum()) - 1), max_size=4))
    return ids, sizes, max_rows, wanted, deleted


@settings(max_examples=examples(25), suppress_health_check=[HealthCheck.too_slow])
@given(case=batch_tables())
def test_lookup_matches_a_filtered_scan(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[np.ndarray, np.ndarray, int, list[int], list[int]],
) -> None:
    ids, sizes, max_rows, wanted, deleted = case
    ds = write_batch_table(tmp_path_factory.mktemp("prop"), ids, sizes, max_rows)
    if deleted:
        ds.delete(pc.field("pos").isin(deleted))
    lookup = ds.batch_lookup(wanted, columns=["tags", "pos"], on_missing="skip")
    got = lookup.to_table()
    live = set(ds.to_table(["bid"])["bid"].to_pylist())
    present = [w for w in wanted if w in live]
    assert got.equals(expected(ds, present, ["tags", "pos"]).select(["tags", "pos"]))
    assert lookup.missing.tolist() == sorted({w for w in wanted if w not in live})
    may_hold = 0  # fragments with live rows whose written id range covers a wanted id
    for fragment in ds.manifest.fragments:
        if fragment.deletion_file.num_deleted_rows == fragment.physical_rows:
            continue
        with FileReader(ds.storage.target(fragment.files[0].path)) as reader:
            written = reader.read(["bid"])["bid"].to_numpy()
        may_hold += any(written.min() <= w <= written.max() for w in wanted)
    assert lookup.stats.files_opened == may_hold


def test_a_batch_mode_append_records_the_column(tmp_path: Path) -> None:
    data = pa.table({"bid": pa.array([1, 1, 2], pa.int64()), "x": [1, 2, 3]})
    ds = write_dataset(data, str(tmp_path))  # created without batch mode
    with pytest.raises(BatchModeError):
        ds.read_batches([1])
    more = pa.table({"bid": pa.array([5, 5], pa.int64()), "x": [7, 8]})
    plan = plan_write(ds.uri, more.schema, batch_id_column="bid")
    commit_write(plan, [execute_write(plan, more)])
    ds = dataset(ds.uri)
    assert ds.manifest.config["fermion.batch_id_column"] == "bid"
    assert ds.read_batches([5, 1])["x"].to_pylist() == [7, 8, 1, 2]
    other = pa.table({"bid": pa.array([9, 9], pa.int64()), "x": [50, 60]})
    plan = plan_write(ds.uri, other.schema, batch_id_column="x")  # never replaces the record
    commit_write(plan, [execute_write(plan, other)])
    ds = dataset(ds.uri)
    assert ds.manifest.config["fermion.batch_id_column"] == "bid"
    # that file's batches are by x: its rows are found by their bid values all the same
    assert ds.read_batches([9, 5])["x"].to_pylist() == [50, 60, 7, 8]


def test_a_batch_column_added_later_reads_old_fragments_as_no_match(tmp_path: Path) -> None:
    ds = write_dataset(pa.table({"x": [1, 2]}), str(tmp_path))
    ds.add_columns([pa.field("bid", pa.int64())])  # old rows: bid is null
    more = pa.table({"x": [3, 4, 5], "bid": pa.array([0, 0, 1], pa.int64())})
    plan = plan_write(ds.uri, more.schema, batch_id_column="bid")
    commit_write(plan, [execute_write(plan, more)])
    ds = dataset(ds.uri)
    lookup = ds.batch_lookup([1, 0], columns=["x"])
    assert lookup.to_table()["x"].to_pylist() == [5, 3, 4]
    assert lookup.stats.files_opened == 2  # the old fragment has no range: a candidate
