"""Spark's Python worker daemon, importing PySpark from the installed package.

Spark starts every Python worker with its bundled ``pyspark.zip`` and ``py4j-*-src.zip``
(and the ``spark-core`` jar) at the front of ``PYTHONPATH``. Python compiles modules
imported from a zip archive on every import (it keeps no bytecode cache for them), so
each fresh worker spent about 0.5 s compiling PySpark although the same PySpark is
installed, compiled, in ``site-packages``. Measured here (docs/SPARK.md, "Python
workers"): the first Python task of a session took 1.52-1.72 s with ``pyspark.daemon``
and 0.66-0.96 s with this daemon.

This module is the ``spark.python.daemon.module`` that :func:`fermion.spark.session`
sets (unless the session's settings name another). It

1. moves the bundled archives behind the other ``sys.path`` entries, but only when the
   installed PySpark is the same version as the bundled one (never a mix of versions);
2. imports ``pyspark.worker`` once, in the daemon, so forked workers inherit it (it is
   pure Python and starts no thread, which is why PySpark's daemon may fork after it);
3. runs PySpark's own daemon loop, unchanged.

It lives outside the ``fermion`` package on purpose: importing ``fermion`` would import
pyarrow and numpy (and start threads) in the process that forks every worker.

Example:
    >>> installed_first(["/spark/python/lib/pyspark.zip", "/no/site"])  # nothing installed
    ['/spark/python/lib/pyspark.zip', '/no/site']
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import sys
import zipfile

__all__ = ["bundled_archive", "installed_first"]

_VERSION = re.compile(r"""__version__(?::\s*str)?\s*=\s*["']([^"']+)["']""")


def bundled_archive(entry: str) -> bool:
    """Whether a ``sys.path`` entry is one of the archives Spark puts in front.

    Example:
        >>> bundled_archive("/opt/spark/python/lib/pyspark.zip")
        True
        >>> bundled_archive("/opt/venv/lib/python3.11/site-packages")
        False
    """
    name = os.path.basename(entry)
    return (
        name == "pyspark.zip"
        or (name.startswith("py4j-") and name.endswith(".zip"))
        or (name.startswith("spark-core") and name.endswith(".jar"))
    )


def _zip_version(archive: str) -> str | None:
    try:
        with zipfile.ZipFile(archive) as zf:
            text = zf.read("pyspark/version.py").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None
    found = _VERSION.search(text)
    return found.group(1) if found else None


def _installed_version(path: list[str]) -> str | None:
    # the path finder alone: sys.modules (a PySpark already imported) must not answer
    spec = importlib.machinery.PathFinder.find_spec("pyspark", path)
    if spec is None or spec.origin is None:
        return None
    version_file = os.path.join(os.path.dirname(spec.origin), "version.py")
    try:
        with open(version_file, encoding="utf-8") as fh:
            found = _VERSION.search(fh.read())
    except OSError:
        return None
    return found.group(1) if found else None


def installed_first(path: list[str]) -> list[str]:
    """``path`` with Spark's bundled archives moved last, when that changes nothing.

    They move only if ``pyspark`` is importable from the other entries and its version
    equals the bundled ``pyspark.zip``'s, so the same PySpark is imported either way,
    compiled instead of from source.

    Example:
        >>> installed_first(["/nowhere/pyspark.zip", "/nowhere/site"])
        ['/nowhere/pyspark.zip', '/nowhere/site']
    """
    bundled = [p for p in path if bundled_archive(p)]
    rest = [p for p in path if not bundled_archive(p)]
    zips = [p for p in bundled if os.path.basename(p) == "pyspark.zip"]
    if not zips:
        return list(path)
    version = _zip_version(zips[0])
    if version is None or version != _installed_version(rest):
        return list(path)
    return rest + bundled


def main() -> None:
    """Reorder ``sys.path``, preload the worker module, run PySpark's daemon."""
    sys.path[:] = installed_first(sys.path)
    from pyspark import daemon

    worker = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].startswith("pyspark") else None
    try:  # inherited by every forked worker
        importlib.import_module(worker or "pyspark.worker")
    except ImportError:  # pragma: no cover - each forked worker imports it then
        pass
    daemon.manager()


if __name__ == "__main__":
    main()
