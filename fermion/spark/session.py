"""A SparkSession with the project's settings and the ``fermion`` data source registered.

Spark starts its Python workers with ``python3`` from PATH unless told otherwise; they
must run this interpreter (the one that has Fermion and the pinned pyarrow), so
:func:`session` sets ``spark.pyspark.python`` and ``PYSPARK_PYTHON`` to ``sys.executable``.

Example:
    >>> spark = session("doc")
    >>> spark.conf.get("spark.sql.python.filterPushdown.enabled")
    'true'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

__all__ = ["LOCAL_MASTER_DEFAULT", "session", "session_conf"]

#: The master used when neither ``master`` nor ``spark.master`` names one.
LOCAL_MASTER_DEFAULT = "local[2]"

#: Settings every session gets (``conf`` may override them).
_DEFAULTS = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
}

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
    unless ``master`` or ``conf`` names one.

    Example:
        >>> settings = session_conf(conf={"spark.ui.enabled": "false"})
        >>> settings["spark.master"], settings["spark.ui.enabled"]
        ('local[2]', 'false')
    """
    settings = {**_DEFAULTS, "spark.pyspark.python": sys.executable}
    if master is not None:
        settings["spark.master"] = master
    settings.update(conf or {})
    if not submitted:
        settings.setdefault("spark.master", LOCAL_MASTER_DEFAULT)
    if settings.get("spark.master", "").startswith("local"):
        settings = {**_LOCAL_DEFAULTS, **settings}
    return {k: str(v) for k, v in settings.items()}


def session(
    app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None
) -> SparkSession:
    """Get or create the SparkSession, with the ``fermion`` data source registered.

    Args:
        app_name: The application name.
        master: Spark master URL (default: ``spark.master`` from ``conf`` or from
            ``spark-submit``, else ``local[2]``).
        conf: More Spark settings (they win over the defaults).

    A session already running in this process is returned with the runtime settings
    applied (static ones, such as the master, stay those it was started with).

    Example:
        >>> spark = session("doc", conf={"spark.sql.shuffle.partitions": "2"})
        >>> spark.range(3).count()
        3
    """
    from fermion.spark.source import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # spark-submit starts the Python driver with a gateway to its JVM in the environment
    settings = session_conf(master, conf, submitted="PYSPARK_GATEWAY_PORT" in os.environ)
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()  # a running session takes the runtime settings only
    register(spark)
    return spark
