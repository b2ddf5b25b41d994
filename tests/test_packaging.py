"""The project's own metadata sets up without deprecation warnings (pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_APPLY = """
from setuptools.dist import Distribution
from setuptools.config.pyprojecttoml import apply_configuration
dist = apply_configuration(Distribution(), "pyproject.toml")
print(dist.metadata.license_expression, *dist.metadata.license_files)
"""


def test_pyproject_applies_without_warnings() -> None:
    """setuptools reads pyproject.toml as a build does, with every warning an error (a
    ``project.license`` table is deprecated: it warned four times per install)."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", _APPLY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Apache-2.0", "LICENSE"]


def test_license_is_an_spdx_string_with_its_file() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "Apache-2.0"
    for name in meta["project"]["license-files"]:
        assert (ROOT / name).read_text().lstrip().startswith("Apache License")
    # SPDX license strings need setuptools >= 77 in the build environment
    assert "setuptools>=77" in meta["build-system"]["requires"]
