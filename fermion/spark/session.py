"""A SparkSession with the project's settings and the ``fermion`` data source registered.

Spark starts its Python workers with ``python3`` from PATH unless told otherwise; they
must run an interpreter that has Fermion and the pinned pyarrow, so :func:`session` sets
``spark.pyspark.python`` and ``PYSPARK_PYTHON`` to ``sys.executable`` unless ``conf`` names
another ``spark.pyspark.python`` (a cluster's nodes keep it at another path). PySpark takes
the workers' interpreter from ``PYSPARK_PYTHON`` when it creates the SparkContext and
ignores ``spark.pyspark.python`` given to the session builder, so the setting is exported
to that variable before the context is created.

Example:
    >>> spark = session("doc")
    >>> spark.conf.get("spark.sql.execution.arrow.pyspark.enabled")
    'true'
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from fermion.spark.source import register

__all__ = ["LOCAL_MASTER_DEFAULT", "WORKER_DAEMON", "session", "session_conf", "workers_python"]

#: The master used when neither ``master`` nor ``spark.master`` names one.
LOCAL_MASTER_DEFAULT = "local[2]"

#: Rows per Arrow batch between the JVM and Python workers (Spark's default: 10,000).
ARROW_BATCH_ROWS_DEFAULT = 262_144
#: Bytes at most per such batch (whichever limit is reached first cuts the batch).
ARROW_BATCH_BYTES_DEFAULT = 64 << 20

#: Settings every session gets (``conf`` may override them).
_DEFAULTS = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # rows per Arrow batch Spark hands Python (the data source's writer among others):
    # Spark's 10,000 made a lineitem SF1 write through the data source 1.5x slower than
    # 200,000 (docs/SPARK.md); the byte cap keeps a batch of wide rows bounded
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS_DEFAULT),
    "spark.sql.execution.arrow.maxBytesPerBatch": str(ARROW_BATCH_BYTES_DEFAULT),
    "spark.ui.showConsoleProgress": "false",
}

#: The Python worker daemon a local session gets when this interpreter has it: workers
#: import PySpark from site-packages, compiled, not from Spark's bundled zip (about 0.5 s
#: less per fresh worker; fermion_spark_daemon, docs/SPARK.md). Executors elsewhere may
#: run a Python without Fermion installed (``--py-files`` reach workers only after the
#: daemon started), so other masters keep ``pyspark.daemon`` unless ``conf`` says otherwise.
WORKER_DAEMON = "fermion_spark_daemon"

#: Extra settings for a local master: few shuffle partitions for one machine.
_LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "4",
}


def session_conf(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    *,
    submitted: bool = False,
) -> dict[str, str]:
    """The settings :func:`session` applies, with ``conf`` taking precedence.

    ``submitted``: the process was started by ``spark-submit``, whose master is kept
    (``master`` and ``spark.master`` in ``conf`` are ignored then).

    Example:
        >>> settings = session_conf(conf={"spark.ui.enabled": "false"})
        >>> settings["spark.master"], settings["spark.ui.enabled"]
        ('local[2]', 'false')
    """
    settings = {**_DEFAULTS, "spark.pyspark.python": sys.executable}
    if master is not None:
        settings["spark.master"] = master
    settings.update(conf or {})
    if submitted:
        settings.pop("spark.master", None)
    else:
        settings.setdefault("spark.master", LOCAL_MASTER_DEFAULT)
    if settings.get("spark.master", "").startswith("local"):
        settings = {**_LOCAL_DEFAULTS, **settings}
        if settings["spark.pyspark.python"] == sys.executable and _has_worker_daemon():
            settings.setdefault("spark.python.daemon.module", WORKER_DAEMON)
    return {k: str(v) for k, v in settings.items()}


def _has_worker_daemon() -> bool:
    return importlib.util.find_spec(WORKER_DAEMON) is not None


def workers_python(
    conf: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """The interpreter Spark's Python workers should run: ``conf``'s
    ``spark.pyspark.python``, else ``PYSPARK_PYTHON`` from ``environ`` (default
    ``os.environ``; ``spark-submit --conf spark.pyspark.python`` sets it), else this one.

    Example:
        >>> workers_python({"spark.pyspark.python": "/opt/venv/bin/python"}, {})
        '/opt/venv/bin/python'
        >>> workers_python({}, {"PYSPARK_PYTHON": "/usr/bin/python3"})
        '/usr/bin/python3'
        >>> workers_python({}, {}) == sys.executable
        True
    """
    configured = (conf or {}).get("spark.pyspark.python")
    if configured:
        return str(configured)
    env = os.environ if environ is None else environ
    return env.get("PYSPARK_PYTHON") or sys.executable


def session(
    app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None
) -> SparkSession:
    """Get or create the SparkSession, with the ``fermion`` data source registered.

    Args:
        app_name: The application name.
        master: Spark master URL (default: ``spark.master`` from ``conf``, else
            ``local[2]``). Under ``spark-submit`` its ``--master`` is kept instead.
        conf: More Spark settings (they win over the defaults). Its
            ``spark.pyspark.python``, if any, is exported as ``PYSPARK_PYTHON``, the
            interpreter of the Python workers of a context created by this call.

    A session already running in this process is returned with the runtime settings
    applied (static ones, such as the master, stay those it was started with).

    Example:
        >>> spark = session("doc", conf={"spark.sql.shuffle.partitions": "2"})
        >>> spark.range(3).count()
        3
    """
    # spark-submit starts the Python driver with a gateway to its JVM in the environment
    settings = session_conf(master, conf, submitted="PYSPARK_GATEWAY_PORT" in os.environ)
    # PySpark reads the Python workers' interpreter from the environment only (when it
    # creates the context): a configured one must go there; spark-submit's
    # --conf spark.pyspark.python arrives there already
    os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"] = workers_python(conf)
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()  # a running session takes the runtime settings only
    register(spark)
    return spark
