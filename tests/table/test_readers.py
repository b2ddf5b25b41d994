"""The readers a dataset keeps open between batch lookups (``fermion.table.readers``).

Real data files on disk; a reader counts as closed when its file handle is released
(reading from it then raises ``InvalidArgumentError``).

Bad inputs tried: a negative capacity; a lease whose block raises.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from fermion.errors import InvalidArgumentError
from fermion.format import FileReader
from fermion.table._datafile import write_data_file
from fermion.table.readers import READER_CACHE_SIZE, ReaderCache
from fermion.table.storage import TableStorage


@pytest.fixture
def files(tmp_path: Path) -> TableStorage:
    for k in range(4):
        write_data_file(pa.table({"a": list(range(k + 1))}), tmp_path / f"f{k}.fermion", [1])
    return TableStorage(str(tmp_path))


def closed(reader: FileReader) -> bool:
    try:
        reader.read()
    except InvalidArgumentError:
        return True
    return False


def test_a_reader_given_back_is_lent_again(files: TableStorage) -> None:
    cache = ReaderCache()
    with cache.lease(files, "f2.fermion") as first:
        assert first.fresh and first.reader.num_rows == 3 and first.top_ids == [1]
    with cache.lease(files, "f2.fermion") as second:
        assert not second.fresh and second.reader is first.reader
    assert len(cache) == 1 and not closed(first.reader)
    assert cache.capacity == READER_CACHE_SIZE


def test_the_least_recently_used_reader_is_closed_first(files: TableStorage) -> None:
    cache = ReaderCache(capacity=2)
    got = {}
    for name in ("f0", "f1", "f0", "f2"):  # f1 is then the least recently used
        with cache.lease(files, f"{name}.fermion") as opened:
            got.setdefault(name, opened.reader)
    assert closed(got["f1"]) and not closed(got["f0"]) and not closed(got["f2"])
    assert len(cache) == 2
    with cache.lease(files, "f0.fermion") as opened:
        assert not opened.fresh


def test_a_reader_is_lent_to_one_caller_at_a_time(files: TableStorage) -> None:
    cache = ReaderCache()
    with cache.lease(files, "f1.fermion") as outer:
        with cache.lease(files, "f1.fermion") as inner:
            assert inner.fresh and inner.reader is not outer.reader
        assert len(cache) == 1  # the inner one, given back first
    # the outer one finds it kept: closed, the kept one stays
    assert closed(outer.reader) and not closed(inner.reader) and len(cache) == 1


def test_a_lease_that_raised_closes_its_reader(files: TableStorage) -> None:
    cache = ReaderCache()
    with pytest.raises(RuntimeError, match="boom"), cache.lease(files, "f0.fermion") as opened:
        raise RuntimeError("boom")
    assert closed(opened.reader) and len(cache) == 0


def test_close_closes_idle_and_later_given_back_readers(files: TableStorage) -> None:
    cache = ReaderCache()
    with cache.lease(files, "f0.fermion") as idle:
        pass
    with cache.lease(files, "f1.fermion") as lent:
        cache.close()
        assert closed(idle.reader) and not closed(lent.reader)
    assert closed(lent.reader) and len(cache) == 0
    with cache.lease(files, "f0.fermion") as again:  # usable, keeps nothing
        assert again.fresh and again.reader.num_rows == 1
    assert closed(again.reader) and len(cache) == 0


def test_capacity_zero_keeps_nothing_and_negative_is_refused(files: TableStorage) -> None:
    cache = ReaderCache(capacity=0)
    with cache.lease(files, "f3.fermion") as opened:
        assert opened.reader.read().num_rows == 4
    assert closed(opened.reader) and len(cache) == 0
    with pytest.raises(InvalidArgumentError, match="capacity"):
        ReaderCache(capacity=-1)


def test_a_pickled_cache_is_empty(files: TableStorage) -> None:
    cache = ReaderCache(capacity=3)
    with cache.lease(files, "f0.fermion"):
        pass
    copy = pickle.loads(pickle.dumps(cache))
    assert (copy.capacity, len(copy), len(cache)) == (3, 0, 1)
    with copy.lease(files, "f0.fermion") as opened:
        assert opened.fresh
