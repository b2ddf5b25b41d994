"""A reader, closed or not, is freed by reference counting: what it built while reading
(schema entries, storage trees, parsed CMBs) forms no reference cycle, so that a process
opening a reader per lookup does not leave hundreds of objects per lookup to the garbage
collector (whose collections then cost more than the lookup's own work).

The check runs in a fresh interpreter: in the test process other threads (the session's S3
server, Spark's py4j threads) allocate while the collector is off, and their garbage would
be counted as the reader's."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

import fermion


def _file(path: Path) -> None:
    schema = pa.schema(
        [
            ("x", pa.float32()),
            ("n", pa.int64()),
            ("tags", pa.list_(pa.int64())),
            ("s", pa.struct([("a", pa.string()), ("b", pa.list_(pa.int16()))])),
        ]
    )
    with fermion.FileWriter(path, schema) as w:
        for bid in range(20):
            rows = bid % 5 + 1
            w.append_batch(
                bid,
                pa.table(
                    {
                        "x": [float(bid)] * rows,
                        "n": list(range(rows)),
                        "tags": [[bid, 1]] * rows,
                        "s": [{"a": "q" * bid, "b": [bid]}] * rows,
                    },
                    schema,
                ),
            )


REPO_ROOT = Path(__file__).resolve().parents[2]


def check_no_cycles(path: Path) -> None:
    """Read ``path`` (written by :func:`_file`) with the collector off; AssertionError if a
    collection afterwards finds anything."""
    with fermion.FileReader(path) as r:  # first use: imports and module caches settle
        r.read_batches([3], columns=["x", "tags"])
    gc.collect()
    gc.disable()
    try:
        for memory_map in (True, False):
            with fermion.FileReader(path, memory_map=memory_map) as r:
                got = r.read_batches([7, 2], columns=["x", "n", "tags", "s"])
                assert got.column("x").to_pylist() == [7.0] * 3 + [2.0] * 3
                assert r.take([0, 5]).num_rows == 2
                assert r.read().num_rows == sum(b % 5 + 1 for b in range(20))
                assert r.schema.names == ["x", "n", "tags", "s"]
            del r, got
            assert gc.collect() == 0  # nothing was left for the collector
        r = fermion.FileReader(path)  # never closed: freed all the same when dropped
        assert r.read_batches([4], columns=["tags", "s"]).num_rows == 5
        assert r.take([1]).num_rows == 1
        del r
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_reader_leaves_no_reference_cycle(tmp_path: Path) -> None:
    path = tmp_path / "b.fermion"
    _file(path)
    code = "import sys; from tests.format.test_reader_lifetime import check_no_cycles as c; "
    code += "from pathlib import Path; c(Path(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
