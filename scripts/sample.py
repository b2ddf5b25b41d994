"""The embedded sample of ``make run``: a wide ML feature table, one batch per request.

Each day's partition ``<root>/ds=<YYYY-MM-DD>/part-0.parquet`` holds ``requests`` requests;
a request is a batch of candidate rows (``request_id`` is the batch id, ``position`` the
candidate's rank) with a ``label``, a ``user_id``, ``features`` float32 feature columns
``f000, f001, ...`` and a ``list<float32>`` embedding. Request ids are unique across days.

Example:
    >>> table = feature_table(day=0, requests=3, candidates=4, features=5)
    >>> table.num_rows, table.column_names[:6]
    (12, ['request_id', 'position', 'user_id', 'label', 'f000', 'f001'])
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FEATURES = 200
EMBEDDING_DIM = 8
REQUESTS_PER_DAY = 150
CANDIDATES = 40  # mean candidates per request (each request draws 20..60)
REQUEST_ID_STRIDE = 1_000_000  # day d's request ids start at d * stride


def feature_table(
    *, day: int, requests: int, candidates: int = CANDIDATES, features: int = FEATURES
) -> pa.Table:
    """One day's rows, sorted by request then position (a request's rows are contiguous)."""
    rng = np.random.default_rng(day)
    sizes = rng.integers(candidates // 2, candidates * 3 // 2 + 1, size=requests)
    rows = int(sizes.sum())
    request_ids = np.repeat(day * REQUEST_ID_STRIDE + np.arange(requests, dtype=np.int64), sizes)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    users = [f"u{u:05d}" for u in rng.integers(0, 5000, requests)]
    columns: dict[str, pa.Array] = {
        "request_id": pa.array(request_ids),
        "position": pa.array((np.arange(rows) - starts).astype(np.int32)),
        "user_id": pa.array(np.repeat(users, sizes)),
        "label": pa.array((rng.random(rows) < 0.1).astype(np.float32)),
    }
    block = rng.standard_normal((features, rows), dtype=np.float32)
    for i in range(features):
        columns[f"f{i:03d}"] = pa.array(block[i])
    values = pa.array(rng.standard_normal(rows * EMBEDDING_DIM, dtype=np.float32))
    offsets = pa.array(np.arange(0, rows * EMBEDDING_DIM + 1, EMBEDDING_DIM, dtype=np.int32))
    columns["embedding"] = pa.ListArray.from_arrays(offsets, values)
    return pa.table(columns)


def break_labels(table: pa.Table, rows: int = 5) -> pa.Table:
    """A copy whose first ``rows`` labels are 7.0: outside the suite's [0, 1] range."""
    labels = table["label"].to_numpy().copy()
    labels[:rows] = 7.0
    index = table.column_names.index("label")
    return table.set_column(index, "label", pa.array(labels))


def write_days(
    root: Path,
    first_day: dt.date,
    days: int,
    *,
    requests: int = REQUESTS_PER_DAY,
    features: int = FEATURES,
    broken: frozenset[int] = frozenset(),
) -> list[tuple[str, int]]:
    """Write ``days`` daily partitions under ``root``; the days in ``broken`` get bad labels.

    Returns:
        ``(ds, rows)`` for each day written.
    """
    written = []
    for day in range(days):
        ds = (first_day + dt.timedelta(days=day)).isoformat()
        table = feature_table(day=day + 1, requests=requests, features=features)
        if day in broken:
            table = break_labels(table)
        folder = root / f"ds={ds}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, folder / "part-0.parquet", compression="zstd")
        written.append((ds, table.num_rows))
    return written
