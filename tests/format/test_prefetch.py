"""Prefetch: the next stripe's pages are read on the IO pool while a stripe decodes.

A recording byte source (a real local file underneath) shows which thread read which
range and when; a failing one shows that an IO error in a prefetched stripe surfaces as
the same typed error, at that stripe, after the earlier stripes were delivered.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fermion
from fermion.io.source import ByteSource, IOStats, LocalSource
from tests.format.test_roundtrip import assert_same

ROWS, STRIPE_ROWS = 5_000, 1_000


class RecordingSource(ByteSource):
    """A local file that records (thread name, offset) of every read; may fail past an
    offset, as a lost object-store range would."""

    def __init__(self, path: Path, fail_from: int | None = None) -> None:
        self._inner = LocalSource(str(path))
        self.name, self.size, self.stats = str(path), self._inner.size, IOStats()
        self.fail_from = fail_from
        self.reads: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def _read_at(self, offset: int, length: int) -> bytes:
        with self._lock:
            self.reads.append((threading.current_thread().name, offset))
        if self.fail_from is not None and offset + length > self.fail_from:
            raise fermion.TruncatedFileError(f"{self.name}: range at {offset} is gone")
        return self._inner._read_at(offset, length)

    def close(self) -> None:
        self._inner.close()


@pytest.fixture
def striped(tmp_path: Path) -> tuple[Path, pa.Table]:
    rng = np.random.default_rng(5)
    table = pa.table(
        {
            "i": pa.array(rng.integers(0, 10**9, ROWS)),
            "s": pa.array([f"value-{x}" for x in rng.integers(0, 10**6, ROWS)]),
        }
    )
    path = tmp_path / "striped.fermion"
    fermion.write_table(table, path, max_stripe_rows=STRIPE_ROWS)
    return path, table


def _data_reads(src: RecordingSource) -> list[tuple[str, int]]:
    return [(t, off) for t, off in src.reads if not t.startswith("MainThread")]


def test_scan_and_take_read_stripes_on_the_io_pool(striped: tuple[Path, pa.Table]) -> None:
    path, table = striped
    src = RecordingSource(path)
    with fermion.FileReader(src) as r:
        assert r.num_stripes == ROWS // STRIPE_ROWS
        assert_same(r.read(), table)
        io_reads = [t for t, _ in src.reads if t.startswith("fermion-io")]
        assert len(io_reads) >= r.num_stripes  # every stripe's pages came from the IO pool
        src.reads.clear()
        idx = [4_999, 0, 2_500, 1_001, 2_500]
        assert_same(r.take(idx), table.take(idx))
        assert any(t.startswith("fermion-io") for t, _ in src.reads)


def test_next_stripe_is_read_before_it_is_asked_for(striped: tuple[Path, pa.Table]) -> None:
    path, table = striped
    src = RecordingSource(path)
    with fermion.FileReader(src) as r:
        batches = r.iter_batches()
        first = next(batches)
        assert first.num_rows == STRIPE_ROWS
        deadline = time.monotonic() + 10
        while len(_data_reads(src)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # the read of stripe 1 was submitted before batch 0 came back
        assert len(_data_reads(src)) >= 2, src.reads
        rest = list(batches)
    assert_same(pa.Table.from_batches([first, *rest]), table)


def test_abandoned_scan_leaves_nothing_running(striped: tuple[Path, pa.Table]) -> None:
    path, _ = striped
    src = RecordingSource(path)
    r = fermion.FileReader(src)
    batches = r.iter_batches()
    next(batches)
    batches.close()  # the prefetched read is waited for, not left to race the close
    count = len(src.reads)
    r.close()
    time.sleep(0.05)
    assert len(src.reads) == count


def test_failed_prefetch_raises_at_its_stripe(striped: tuple[Path, pa.Table]) -> None:
    path, table = striped
    with fermion.FileReader(path) as plain:
        third_stripe = plain.describe()["columns"][0]["streams"][1]["chunks"][2]["offset"]
    src = RecordingSource(path)
    with fermion.FileReader(src) as r:
        src.fail_from = third_stripe  # after the open (its tail read covers this small file)
        got = []
        with pytest.raises(fermion.TruncatedFileError):
            for batch in r.iter_batches():
                got.append(batch)
        assert len(got) == 2  # the stripes before the lost range were delivered
        assert_same(pa.Table.from_batches(got), table.slice(0, 2 * STRIPE_ROWS))
        with pytest.raises(fermion.TruncatedFileError):
            r.take([4_999])
