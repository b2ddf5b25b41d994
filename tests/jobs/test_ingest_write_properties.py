"""The ingest job writes with the table's write properties (local Spark).

A table created by an ingest with ``write_properties: {bloom_filter_columns: ["user"]}``
gets bloom filter pages on ``user`` in every file its Spark tasks write, and a point filter
``user == k`` on a shuffled, high-cardinality key then reads a few of the column's data
pages instead of nearly all of them (min/max statistics cannot prune a shuffled key). The
file reader has no page counter: the bytes its source read are counted (``IOStats``,
with ``coalesce_gap=0`` so that no unwanted page is read to fill a gap) and set against
the bytes of the column's data pages, whose pages are of about equal size.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import fermion
from fermion.spark.jobs.config import IngestConfig
from fermion.spark.jobs.ingest import ingest
from fermion.spark.jobs.runner import run
from tests.jobs.helpers import write_config

ROWS = 200_000
PAGE_SIZE = 8192  # ~100 pages of 8-byte keys per file: pruning shows clearly


def _source(directory: Path) -> None:
    directory.mkdir(parents=True)
    rng = np.random.default_rng(43)
    table = pa.table(
        {
            "user": pa.array(rng.permutation(ROWS).astype(np.int64) * 7919),
            "v": pa.array(rng.random(ROWS)),
        }
    )
    for k in range(2):
        pq.write_table(table.slice(k * ROWS // 2, ROWS // 2), directory / f"part-{k}.parquet")


def _ingest(spark: Any, tmp_path: Path, name: str, properties: dict[str, str]) -> Path:
    uri = tmp_path / name
    config = write_config(
        tmp_path / f"{name}.yaml", table=str(uri), source=str(tmp_path / "in"), partitions=2,
        write_properties=properties,
    )  # fmt: skip
    out = io.StringIO()
    code = run("ingest", IngestConfig, ingest, ["--config", config], spark=spark, stdout=out)
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert code == 0 and summary["committed_version"] == 1, summary
    return uri


def _point_read(uri: Path, key: int) -> tuple[int, int, int, int]:
    """Over every data file: (bytes a filtered read of ``user`` fetched, bytes of its DATA
    pages, of its BLOOM pages, number of its DATA pages); the rows found are checked."""
    ds = fermion.dataset(str(uri))
    read = data = bloom = pages = found = 0
    for fragment in ds.fragments:
        path = str(uri / fragment.files[0].path)
        with fermion.FileReader(path, coalesce_gap=0) as reader:
            column = reader.describe(columns=["user"])["columns"][0]
            for stream in column["streams"]:
                size = sum(c["length"] for c in stream["chunks"])
                if stream["stream_type"] == "DATA":
                    data += size
                    pages += sum(c["num_pages"] for c in stream["chunks"])
                elif stream["stream_type"] == "BLOOM":
                    bloom += size
            reader.source.stats.reset()
            found += reader.read(columns=["user"], filter=pc.field("user") == key).num_rows
            read += reader.source.stats.bytes_read
    assert found == 1
    return read, data, bloom, pages


def test_ingest_with_a_bloom_column_reads_fewer_pages_for_a_point_filter(
    spark: Any, tmp_path: Path
) -> None:
    _source(tmp_path / "in")
    sizes = {"page_size": str(PAGE_SIZE)}
    plain = _ingest(spark, tmp_path, "plain", sizes)
    bloomed = _ingest(spark, tmp_path, "bloom", {**sizes, "bloom_filter_columns": '["user"]'})
    assert fermion.dataset(str(bloomed)).write_properties.bloom_filter_columns == ("user",)
    assert fermion.dataset(str(plain)).write_properties.bloom_filter_columns == ()

    key = 12_345 * 7919
    read_plain, data_plain, bloom_plain, pages_plain = _point_read(plain, key)
    read_bloom, data_bloom, bloom_bytes, pages_bloom = _point_read(bloomed, key)
    assert bloom_plain == 0 and bloom_bytes > 0  # every task's file has bloom pages
    assert pages_plain >= 40 and pages_bloom >= 40  # the page size reached the files too
    # without: min/max keep nearly every page of a shuffled key
    assert read_plain >= 0.9 * data_plain, (read_plain, data_plain)
    # with: the bloom pages, then about one data page of each stripe that may hold the key
    data_pages_read = (read_bloom - bloom_bytes) / (data_bloom / pages_bloom)
    assert data_pages_read <= 0.1 * pages_bloom, (read_bloom, bloom_bytes, data_bloom, pages_bloom)
    assert read_bloom < read_plain / 2
