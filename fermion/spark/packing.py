"""How the ``fermion`` reader groups fragments into Spark partitions.

Every Spark task of a Python data source costs about a tenth of a second on top of its
rows (a Python worker is handed the reader and the partition, and the rows are streamed
back to the JVM), so a table of many small fragments read one fragment per task spends
most of its time starting tasks: measured here, 200 fragments of 5,000 rows took 19–34 s
through 200 tasks, Spark's Parquet source reading the same rows as 200 files 0.7–2.1 s
through 7 (local[2], a loaded machine). Spark's file sources pack small files into one
partition; :func:`pack` does the same with the same rule (``FilePartition`` in Spark):

- each slice costs its estimated bytes plus an open cost of 4 MiB;
- a partition is closed when the next slice would take it over
  ``min(max_partition_bytes, max(open cost, total cost / parallelism))``, so a small table
  still gets about ``parallelism`` partitions and a large one partitions of
  ``max_partition_bytes``;
- without a known parallelism nothing is packed (one partition per slice).

A slice's bytes are estimated from the manifest: its fragment's data file sizes, times the
share of the table's columns read, times the share of the fragment's rows it holds.

Example:
    >>> pack([1 << 20] * 8, 128 << 20, 2)
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    >>> pack([1 << 20] * 3, 128 << 20, None)
    [[0], [1], [2]]
    >>> pack([200 << 20, 1 << 20, 1 << 20], 128 << 20, 2)
    [[0], [1, 2]]
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MAX_PARTITION_BYTES_DEFAULT", "OPEN_COST_BYTES", "pack", "slice_bytes"]

#: Spark's ``spark.sql.files.maxPartitionBytes`` default: 128 MiB.
MAX_PARTITION_BYTES_DEFAULT = 128 << 20

#: Spark's ``spark.sql.files.openCostInBytes`` default: 4 MiB, what opening a slice is
#: counted as.
OPEN_COST_BYTES = 4 << 20


def slice_bytes(file_bytes: int, columns_read: int, columns: int, rows: int, of_rows: int) -> int:
    """The estimated bytes a task reads for a slice of ``rows`` of a fragment of ``of_rows``
    rows whose data files hold ``file_bytes``, reading ``columns_read`` of ``columns``.

    Example:
        >>> slice_bytes(1000, 2, 10, 50, 100)
        100
    """
    share = min(1.0, columns_read / columns) if columns else 1.0
    part = min(1.0, rows / of_rows) if of_rows else 1.0
    return int(file_bytes * share * part)


def pack(
    sizes: Sequence[int], max_partition_bytes: int, parallelism: int | None
) -> list[list[int]]:
    """Consecutive slices (``sizes``: estimated bytes, in order) grouped into partitions
    (lists of slice indices, in order) by the rule of the module docstring."""
    if parallelism is None or parallelism < 1:
        return [[i] for i in range(len(sizes))]
    total = sum(size + OPEN_COST_BYTES for size in sizes)
    split = min(max_partition_bytes, max(OPEN_COST_BYTES, total // parallelism))
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index, size in enumerate(sizes):
        if current and used + size > split:
            groups.append(current)
            current, used = [], 0
        current.append(index)
        used += size + OPEN_COST_BYTES
    if current:
        groups.append(current)
    return groups
