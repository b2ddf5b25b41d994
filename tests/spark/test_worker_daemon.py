"""fermion_spark_daemon: Python workers import PySpark from site-packages, not Spark's zip.

Bad inputs tried: a bundled zip without ``pyspark/version.py``, a corrupt zip, an
installed PySpark of another version, no installed PySpark at all; each leaves
``sys.path`` as Spark gave it.
"""

from __future__ import annotations

import doctest
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import fermion.table as ft
import fermion_spark_daemon as daemon
from fermion.spark.session import session_conf


def _zip(path: Path, version: str | None) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pyspark/__init__.py", "")
        if version is not None:
            zf.writestr("pyspark/version.py", f'__version__: str = "{version}"\n')
    return str(path)


def _site(path: Path, version: str) -> str:
    (path / "pyspark").mkdir(parents=True)
    (path / "pyspark" / "__init__.py").write_text("")
    (path / "pyspark" / "version.py").write_text(f'__version__: str = "{version}"\n')
    return str(path)


def test_the_bundled_archives_move_behind_the_same_installed_pyspark(tmp_path: Path) -> None:
    bundled = _zip(tmp_path / "lib" / "pyspark.zip", "4.3.0")
    py4j = _zip(tmp_path / "lib" / "py4j-0.10.9.9-src.zip", None)
    jar = str(tmp_path / "jars" / "spark-core_2.13-4.3.0.jar")
    site = _site(tmp_path / "site", "4.3.0")
    path = ["", bundled, py4j, jar, "/usr/lib/python3.11", site]
    assert daemon.installed_first(path) == ["", "/usr/lib/python3.11", site, bundled, py4j, jar]


@pytest.mark.parametrize(
    "case", ["other version", "no version file", "corrupt zip", "nothing installed"]
)
def test_the_path_stays_as_spark_gave_it_when_versions_could_differ(
    tmp_path: Path, case: str
) -> None:
    bundled = str(tmp_path / "lib" / "pyspark.zip")
    if case == "corrupt zip":
        (tmp_path / "lib").mkdir()
        Path(bundled).write_bytes(b"PK\x03\x04 not really a zip")
    else:
        _zip(Path(bundled), None if case == "no version file" else "4.3.0")
    site = str(tmp_path / "empty-site")
    if case != "nothing installed":
        site = _site(tmp_path / "site", "4.2.1" if case == "other version" else "4.3.0")
    path = [bundled, site]
    assert daemon.installed_first(path) == path


def test_archive_names() -> None:
    assert daemon.bundled_archive("/x/python/lib/pyspark.zip")
    assert daemon.bundled_archive("/x/python/lib/py4j-0.10.9.9-src.zip")
    assert daemon.bundled_archive("/x/jars/spark-core_2.13-4.3.0.jar")
    assert not daemon.bundled_archive("/x/jars/spark-sql_2.13-4.3.0.jar")
    assert not daemon.bundled_archive("/x/site-packages")


def test_a_local_session_gets_the_daemon_unless_told_otherwise() -> None:
    assert session_conf()["spark.python.daemon.module"] == "fermion_spark_daemon"
    own = session_conf(conf={"spark.python.daemon.module": "my_daemon"})
    assert own["spark.python.daemon.module"] == "my_daemon"
    # executors elsewhere, or another interpreter, may not have Fermion installed
    assert "spark.python.daemon.module" not in session_conf("spark://host:7077")
    assert "spark.python.daemon.module" not in session_conf(submitted=True)
    other = session_conf(conf={"spark.pyspark.python": "/opt/venv/bin/python"})
    assert "spark.python.daemon.module" not in other
    opted_in = session_conf("yarn", {"spark.python.daemon.module": "fermion_spark_daemon"})
    assert opted_in["spark.python.daemon.module"] == "fermion_spark_daemon"


def test_workers_import_the_installed_pyspark_and_read_the_same_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    assert spark.conf.get("spark.python.daemon.module") == "fermion_spark_daemon"
    origins = spark.sparkContext.parallelize([0, 1], 2).map(
        lambda _: __import__("pyspark").__file__
    )
    files = set(origins.collect())
    assert files and not any(".zip" in f for f in files), files
    data = pa.table({"id": list(range(100)), "k": [i % 10 for i in range(100)]})
    uri = str(tmp_path / "t")
    ft.write_dataset(data, uri)
    pq.write_table(data, tmp_path / "t.parquet")
    ours = spark.read.format("fermion").load(uri)
    theirs = spark.read.parquet(str(tmp_path / "t.parquet"))
    # one DataFrame counted, filtered, counted again; a self-join; a scalar subquery
    for frame in (ours, theirs):
        frame.createOrReplaceTempView("v")
        got = (
            frame.count(),
            frame.filter("k = 3").count(),
            frame.count(),
            frame.alias("a").join(frame.filter("k > 5").alias("b"), "id").count(),
            spark.sql(
                "select count(*) from v where k > (select avg(k) from v where k > 5)"
            ).collect()[0][0],
        )
        if frame is ours:
            expected = got
    assert got == expected == (100, 10, 100, 40, 20)


def test_the_module_examples_run() -> None:
    failures, attempted = doctest.testmod(daemon)
    assert failures == 0 and attempted > 0
