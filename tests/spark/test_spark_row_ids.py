"""``_rowid`` through the ``fermion`` data source: the ``columns`` option names it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType

import fermion.table as ft
from tests.table.row_id_support import write_table_without_row_ids


def test_rowid_column_reads_the_ids_the_dataset_reads(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ds = ft.write_dataset(
        pa.table({"id": list(range(30)), "v": [i * 10 for i in range(30)]}), uri,
        max_rows_per_file=7,
    )  # fmt: skip
    ds.append(pa.table({"id": [100, 101], "v": [0, 0]}))
    ds.delete("id < 5")
    ds.compact_files(target_rows_per_fragment=1000)
    expected = ds.to_table(columns=["id", "_rowid"]).sort_by("id").to_pydict()

    frame = (
        spark.read.format("fermion")
        .option("columns", "id, _rowid")
        .option("filter", "id >= 20")
        .option("rows_per_partition", "4")  # stripe ranges: offsets must still be physical
        .load(uri)
    )
    assert frame.schema["_rowid"].dataType == LongType()
    rows = sorted((r["id"], r["_rowid"]) for r in frame.collect())
    want = [(i, r) for i, r in zip(expected["id"], expected["_rowid"], strict=True) if i >= 20]
    assert rows == want
    # the ids are those of the rows before the compaction: row "id = k" got id k
    assert all(i == r for i, r in rows if i < 30)


def test_rowid_of_a_table_without_row_ids_is_an_unknown_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = write_table_without_row_ids(tmp_path / "old", pa.table({"id": [1, 2]}))
    with pytest.raises((PySparkException, KeyError), match="row ids"):
        spark.read.format("fermion").option("columns", "id,_rowid").load(uri).collect()
