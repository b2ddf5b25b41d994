"""``make dist``: the wheel and the ``--py-files`` zip hold every module of the package."""

from __future__ import annotations

import zipfile
from pathlib import Path


def test_make_dist_builds_the_wheel_and_a_complete_py_files_zip(dist: Path) -> None:
    tree = dist.parent
    wheels = list((tree / "dist").glob("fermion-*-py3-none-any.whl"))
    assert len(wheels) == 1
    modules = sorted(
        str(p.relative_to(tree)) for p in (tree / "fermion").rglob("*.py") if p.is_file()
    )
    with zipfile.ZipFile(tree / "dist" / "fermion.zip") as py_files:
        zipped = sorted(n for n in py_files.namelist() if n.endswith(".py"))
        assert all(n.startswith("fermion/") for n in py_files.namelist())
    assert zipped == modules
    assert "fermion/spark/jobs/runner.py" in zipped
    with zipfile.ZipFile(wheels[0]) as wheel:
        assert sorted(n for n in wheel.namelist() if n.endswith(".py")) == modules
