"""``make dist``: the wheel and the ``--py-files`` zip hold every module of the package.

The wheel also holds ``fermion_spark_daemon.py``, the local sessions' Python worker daemon
(docs/SPARK.md); the ``--py-files`` zip does not: it reaches an executor's worker only
after the worker's daemon started, so a cluster cannot use it from there.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from fermion.format import native
from fermion.io import byte_source


def test_make_dist_builds_the_wheel_and_a_complete_py_files_zip(dist: Path) -> None:
    tree = dist.parent
    wheels = list((tree / "dist").glob("fermion-*.whl"))
    assert len(wheels) == 1
    # a platform wheel (setup.py's optional extensions), holding the compiled kernels
    # wherever this machine could build them (fermion.format.native, fermion.io.byte_source)
    assert not wheels[0].name.endswith("-py3-none-any.whl")
    modules = sorted(
        str(p.relative_to(tree)) for p in (tree / "fermion").rglob("*.py") if p.is_file()
    )
    with zipfile.ZipFile(tree / "dist" / "fermion.zip") as py_files:
        zipped = sorted(n for n in py_files.namelist() if n.endswith(".py"))
        assert all(n.startswith("fermion/") for n in py_files.namelist())
        assert "fermion_spark_daemon.py" not in py_files.namelist()
    assert zipped == modules
    assert "fermion/spark/jobs/runner.py" in zipped
    with zipfile.ZipFile(wheels[0]) as wheel:
        in_wheel = sorted(n for n in wheel.namelist() if n.endswith(".py"))
        assert in_wheel == sorted([*modules, "fermion_spark_daemon.py"])
        compiled = [n for n in wheel.namelist() if n.endswith((".so", ".pyd"))]
    # the .so of each, when built here
    kernels = [n for n in compiled if n.startswith("fermion/format/kernels.")]
    preads = [n for n in compiled if n.startswith("fermion/io/preads.")]
    assert len(kernels) == (native.KERNELS is not None)
    assert len(preads) == (byte_source._PREADS is not None)
    assert len(compiled) == len(kernels) + len(preads)
    with zipfile.ZipFile(tree / "dist" / "fermion.zip") as py_files:  # unimportable there
        assert not [n for n in py_files.namelist() if n.endswith((".so", ".pyd"))]
