"""``make dist``: the wheel and the ``--py-files`` zip hold every module of the package."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

from tests.jobs.helpers import ROOT


def test_make_dist_builds_the_wheel_and_a_complete_py_files_zip(tmp_path: Path) -> None:
    # build from a copy of the sources, so the test never touches the checkout's dist/
    tree = tmp_path / "src"
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for name in files:
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    (tree / ".venv").symlink_to(ROOT / ".venv")
    # -o: the venv is installed already (and editable from ROOT): never reinstall it here
    stamps = [f".venv/{p.name}" for p in (ROOT / ".venv").glob(".installed-*")]
    built = subprocess.run(
        ["make", *[f"--old-file={s}" for s in stamps], "dist"],
        cwd=tree, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
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
