"""Batch-mode writes hold a stripe, not the file: peak memory of a large streamed write.

A child process streams 512 MiB of batch-mode rows (32 Mi rows of an int64 batch id and a
float64 value, 16,384 batches of 2,048 rows) into ONE data file and reports its peak RSS
(``ru_maxrss``) before and after. A batch-mode stripe of these rows is cut at 2**20 rows
(16 MiB of Arrow data); the write may grow the process by at most 10 stripes (160 MiB;
measured: 95 MiB), which a writer that kept the file's rows to compute its statistics at
the end (the whole 512 MiB; measured: 584 MiB) cannot meet. 512 MiB rather than more: the
gap is already 3.6x and the test stays well under a minute; no time is measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROWS = 32 << 20
BATCH_ROWS = 2048
INPUT_ROWS = 1 << 18  # rows per input record batch (4 MiB)
STRIPE_BYTES = (1 << 20) * 16  # a batch-mode stripe: 2**20 rows of 16 bytes
BOUND = 10 * STRIPE_BYTES

CHILD = """
import json, resource, sys
import numpy as np, pyarrow as pa
from fermion.table.fragments import write_fragments

ROWS, BATCH_ROWS, INPUT_ROWS = (int(a) for a in sys.argv[1:4])
uri = sys.argv[4]
schema = pa.schema([("b", pa.int64()), ("v", pa.float64())])
rng = np.random.default_rng(0)

def batches():
    for start in range(0, ROWS, INPUT_ROWS):
        rows = np.arange(start, start + INPUT_ROWS, dtype=np.int64)
        yield pa.record_batch([pa.array(rows // BATCH_ROWS), pa.array(rng.random(INPUT_ROWS))],
                              schema=schema)

first = next(batches())  # numpy, pyarrow and fermion loaded, one input batch built
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
reader = pa.RecordBatchReader.from_batches(schema, batches())
fragments = write_fragments(reader, uri, batch_id_column="b", max_rows_per_file=1 << 40)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
stats = {s.field_id: s for s in fragments[0].stats}
print(json.dumps({"before": before, "after": after, "fragments": len(fragments),
                  "rows": fragments[0].physical_rows, "b_min": stats[0].min.int_value,
                  "b_max": stats[0].max.int_value, "v_nulls": stats[1].null_count}))
"""


@pytest.mark.slow
def test_batch_mode_write_memory_is_bounded_by_stripes(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROWS), str(BATCH_ROWS), str(INPUT_ROWS), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["fragments"] == 1  # one file of 512 MiB, not many small ones
    assert report["rows"] == ROWS
    assert (report["b_min"], report["b_max"]) == (0, ROWS // BATCH_ROWS - 1)
    assert report["v_nulls"] == 0
    grown = report["after"] - report["before"]
    assert grown < BOUND, f"the write grew the process by {grown >> 20} MiB"
