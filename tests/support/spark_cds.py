"""A class-data-sharing archive of the classes a Spark driver loads, for the suite's JVMs.

``make test`` builds it once per venv (``python -m tests.support.spark_cds PATH``, a few
dozen seconds) and names it in ``FERMION_TEST_SPARK_CDS``; tests/conftest.py then starts
every Spark driver of the run from it (``-XX:SharedArchiveFile``, see :func:`jvm_options`):
the JVM maps the classes its start-up needs instead of reading and verifying them from the
jars again, which is much of a short driver's start-up on two shared cores. Only how classes
are loaded changes. A JVM that cannot use the archive (another JDK, another class path)
loads its classes as usual; the JVM's own warnings go to stderr, never to the stdout whose
last line is a job's summary.

The archive is what the JDK's ``-XX:ArchiveClassesAtExit`` writes when a driver that ran a
small workload (:func:`workload`: a session with the ``fermion`` data source, a Parquet and
a ``fermion`` write and read, an Arrow UDF) exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["ENV_VAR", "JVM_OPTS", "build", "jvm_options", "workload"]

#: The tests' driver JVMs: short-lived on two shared cores, they spend much of their CPU in
#: the optimising JIT compiler, so compilation stops at its first tier; one GC thread.
JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: JVM warnings (e.g. an archive this JDK cannot map) to stderr, not stdout.
_LOG_TO_STDERR = "-Xlog:disable -Xlog:all=warning:stderr"
ENV_VAR = "FERMION_TEST_SPARK_CDS"


def jvm_options(archive: str | None) -> str:
    """``SPARK_SUBMIT_OPTS`` for the tests' drivers: :data:`JVM_OPTS`, and the archive when
    one is named and exists.

    Example:
        >>> jvm_options(None)
        '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC'
        >>> jvm_options("/no/such/archive.jsa") == jvm_options(None)
        True
    """
    if not archive or not Path(archive).is_file():
        return JVM_OPTS
    path = Path(archive).resolve()  # the JVMs run in other directories
    return f"{JVM_OPTS} -XX:SharedArchiveFile={path} {_LOG_TO_STDERR}"


def workload(scratch: Path) -> None:
    """What the archive's driver runs: the classes of a typical test driver's start-up."""
    import pyarrow as pa

    import fermion.spark

    spark = fermion.spark.session(
        "fermion-tests-cds", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}
    )
    df = spark.range(1_000).selectExpr("id", "id % 7 AS k", "CAST(id AS STRING) AS s")
    df.write.parquet(str(scratch / "parquet"))
    df.write.format("fermion").mode("append").save(str(scratch / "fermion"))
    assert spark.read.parquet(str(scratch / "parquet")).groupBy("k").count().count() == 7
    fermion_df = spark.read.format("fermion").load(str(scratch / "fermion"))
    assert fermion_df.groupBy("k").count().count() == 7

    def doubled(batches):  # type: ignore[no-untyped-def]
        for batch in batches:
            yield pa.RecordBatch.from_arrays([pa.compute.multiply(batch[0], 2)], ["id"])

    assert df.select("id").mapInArrow(doubled, "id long").count() == 1_000
    spark.stop()


def build(path: Path) -> Path:
    """Run :func:`workload` under the venv's ``spark-submit`` and keep the archive the JVM
    writes at exit as ``path`` (written beside it, then renamed)."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    spark_submit = Path(sys.executable).parent / "spark-submit"
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        partial = Path(tmp) / path.name
        env = {
            **os.environ,
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_SUBMIT_OPTS": f"{JVM_OPTS} -XX:ArchiveClassesAtExit={partial} {_LOG_TO_STDERR}",
        }
        done = subprocess.run(
            [str(spark_submit), "--master", "local[2]", __file__, "--workload", tmp],
            env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        if done.returncode != 0 or not partial.is_file():
            raise RuntimeError(f"no class archive ({done.returncode}): {done.stderr[-3000:]}")
        partial.replace(path)
    return path


if __name__ == "__main__":
    if sys.argv[1:2] == ["--workload"]:
        workload(Path(sys.argv[2]))
    else:
        try:
            print(build(Path(sys.argv[1])))
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            # the archive only speeds the drivers up: without it they start as before
            print(f"no class archive, the tests' Spark drivers start without one: {exc}",
                  file=sys.stderr)  # fmt: skip
