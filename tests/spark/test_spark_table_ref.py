"""Spark reads and writes a table whose commits go through an external manifest store,
with ``FERMION_MANIFEST_STORE`` unset everywhere: the store and the filesystem options
travel in the plan's :class:`~fermion.table.ref.TableRef` (docs/ARCHITECTURE.md, "The table
handle").

The table lives on fsspec's ``dir`` filesystem over a local directory: a filesystem without
an atomic create, that a worker can only reach with its ``storage_options`` (``path``,
``target_protocol``), and whose commits need the manifest store.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import fermion.table as ft
from fermion.errors import InvalidArgumentError
from fermion.spark import read_dataset
from fermion.table.manifest_store import ENV_VAR, SQLiteManifestStore
from fermion.table.ref import TableRef


def _worker_env(spark: SparkSession) -> list[str | None]:
    """What the Python workers see of the environment variable."""

    def probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            yield pa.RecordBatch.from_pydict({"v": [os.environ.get(ENV_VAR)]})

    rows = spark.range(2).repartition(2).mapInArrow(probe, "v string").collect()
    return sorted({r.v for r in rows}, key=str)


def test_spark_read_and_write_carry_the_store_and_options_to_the_executors(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert _worker_env(spark) == [None]  # the executors have no store to fall back on
    root = tmp_path / "fs"
    root.mkdir()
    options = {"path": str(root), "target_protocol": "file", "target_options": {"auto_mkdir": True}}
    db = str(tmp_path / "manifests.db")
    uri = "dir://t"

    spark.range(10).selectExpr("id", "id * 2 AS v").write.format("fermion").mode("append").option(
        "manifest_store", db
    ).option("storage_options", json.dumps(options)).save(uri)
    # the commit went through the store: it names version 1 of the table
    assert SQLiteManifestStore(db).latest_version(uri) == 1

    (
        spark.range(10, 15)
        .selectExpr("id", "id * 2 AS v")
        .write.format("fermion")
        .mode("append")
        .option("manifest_store", db)
        .option("storage_options", json.dumps({"target_options": {"auto_mkdir": True}}))
        .option("storage_options.path", str(root))
        .option("storage_options.target_protocol", "file")
        .save(uri)
    )
    assert SQLiteManifestStore(db).latest_version(uri) == 2

    frame = (
        spark.read.format("fermion")
        .option("manifest_store", db)
        .option("storage_options", json.dumps(options))
        .option("rows_per_partition", "3")
        .load(uri)
    )
    assert sorted(r.id for r in frame.collect()) == list(range(15))

    ref = TableRef(uri, storage_options=options, manifest_store=db)
    picked = read_dataset(spark, ref, ["v"], filter="id >= 12")
    assert sorted(r.v for r in picked.collect()) == [24, 26, 28]
    assert ft.dataset(ref).count_rows() == 15


def test_without_the_store_a_table_on_such_a_filesystem_is_refused(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    options = {"path": str(tmp_path), "target_protocol": "file"}
    with pytest.raises(Exception, match="atomic put-if-absent") as info:
        spark.range(3).write.format("fermion").mode("append").option(
            "storage_options", json.dumps(options)
        ).save("dir://t")
    assert isinstance(info.value, InvalidArgumentError) or "InvalidArgumentError" in str(info.value)


def test_options_parse_storage_options_and_store_without_showing_them() -> None:
    from fermion.spark.options import ReadOptions, WriteOptions, table_options

    secret = "not-a-real-secret"
    options = {
        "path": "s3://b/t",
        "storage_options": json.dumps({"client_kwargs": {"region_name": "eu"}, "key": "k"}),
        "storage_options.key": "k2",
        "storage_options.secret": secret,
        "manifest_store": "/tmp/m.db",
    }
    read = ReadOptions.parse(options)
    assert read.storage_options == {
        "client_kwargs": {"region_name": "eu"},
        "key": "k2",  # the named option wins over the JSON object
        "secret": secret,
    }
    assert read.ref.manifest_store == "/tmp/m.db" and secret not in repr(read)
    assert WriteOptions.parse(options).ref == read.ref
    assert json.loads(table_options(read.ref)["storage_options"])["secret"] == secret
    with pytest.raises(InvalidArgumentError) as info:
        ReadOptions.parse({"path": "/t", "storage_options": f"not json {secret}"})
    assert secret not in str(info.value)
    with pytest.raises(InvalidArgumentError, match="manifest_store"):
        ReadOptions.parse({"path": "/t", "manifest_store": " "})
    with pytest.raises(InvalidArgumentError, match="unknown read option"):
        ReadOptions.parse({"path": "/t", "storage_option.key": "x"})
