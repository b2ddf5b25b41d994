"""The project's own metadata sets up without deprecation warnings (pyproject.toml)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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


# --------------------------------------------------------------------------------------
# the light core: the bare wheel in a fresh venv, without pyspark, GX or the other extras

_OPTIONAL = ("pyspark", "great_expectations", "pandas", "psycopg", "s3fs")

_BARE_CHECKS = """
import importlib.util, json, subprocess, sys, tempfile
from pathlib import Path

import pyarrow as pa
import fermion
from fermion.errors import MissingExtraError

absent = [m for m in {optional!r} if importlib.util.find_spec(m) is not None]
assert absent == [], f"installed without being asked for: {{absent}}"

root = Path(tempfile.mkdtemp())
rows = pa.table({{"id": list(range(1000)), "name": [f"n{{i}}" for i in range(1000)]}})

# the format
fermion.write_table(rows, root / "f.fermion")
assert fermion.read_table(root / "f.fermion").equals(rows)
with fermion.FileReader(root / "f.fermion") as reader:
    assert reader.take([3, 999]).column("id").to_pylist() == [3, 999]

# a table: write, append, delete, time travel
ds = fermion.write_dataset(rows, str(root / "t"))
ds.append(rows.slice(0, 10))
ds.delete("id < 3")  # 3 rows of each fragment
ds = fermion.dataset(str(root / "t"))
assert ds.count_rows() == 1004, ds.count_rows()
assert fermion.dataset(str(root / "t"), version=2).count_rows() == 1010

# the CLI, as installed (the console script)
cli = Path(sys.executable).with_name("fermion")
shown = subprocess.run([str(cli), "show", str(root / "t")], capture_output=True, text=True)
assert shown.returncode == 0, shown.stderr
assert "1004" in shown.stdout, shown.stdout
cat = subprocess.run(
    [str(cli), "cat", str(root / "f.fermion"), "--limit", "2", "--format", "jsonl"],
    capture_output=True, text=True,
)
assert cat.returncode == 0, cat.stderr
assert [json.loads(line)["id"] for line in cat.stdout.splitlines()] == [0, 1], cat.stdout
converted = subprocess.run(
    [str(cli), "convert", str(root / "f.fermion"), str(root / "f.parquet")],
    capture_output=True, text=True,
)
assert converted.returncode == 0, converted.stderr

# each missing extra: one line naming its pip install
hints = {{}}
try:
    import fermion.spark
except MissingExtraError as exc:
    hints["spark"] = str(exc)
import fermion.quality  # suites and integrity checks need no extra
try:
    fermion.quality.validate_dataframe(None, "no/such.yaml", output_dir=str(root / "q"))
except MissingExtraError as exc:
    hints["quality"] = str(exc)
from fermion.table.manifest_store import open_manifest_store
try:
    open_manifest_store("postgresql://u@127.0.0.1:1/db")
except MissingExtraError as exc:
    hints["postgres"] = str(exc)
try:
    fermion.read_table("s3://bucket/f.fermion")
except MissingExtraError as exc:
    hints["s3"] = str(exc)
print(json.dumps(hints))
"""


@pytest.mark.slow
def test_the_bare_wheel_works_without_its_extras(dist: Path, tmp_path: Path) -> None:
    """``pip install fermion`` (the wheel, no extras) in a fresh venv: the format, a table
    and the CLI work without pyspark or great_expectations, and every extra's feature says
    which ``pip install`` brings it (docs/SPARK.md, README)."""
    (wheel,) = dist.glob("fermion-*.whl")
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    # the venv's pip installs into the fresh one; the dependencies come from pip's cache
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--disable-pip-version-check", "--only-binary=:all:", str(wheel)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    checked = subprocess.run(
        [str(python), "-W", "error", "-c", _BARE_CHECKS.format(optional=_OPTIONAL)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr[-3000:]
    hints = json.loads(checked.stdout.splitlines()[-1])
    assert set(hints) == {"spark", "quality", "postgres", "s3"}, hints
    for extra, message in hints.items():
        assert f"pip install 'fermion[{extra}]'" in message, message
        assert "\n" not in message


def test_core_dependencies_leave_out_every_extra() -> None:
    """pyspark, GX, pandas, psycopg and s3fs are extras, and ``all`` holds them."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(meta["dependencies"])
    assert not [name for name in _OPTIONAL if name in core], core
    extras = meta["optional-dependencies"]
    assert {"spark", "quality", "postgres", "s3", "all"} <= set(extras)
    assert extras["all"] == ["fermion[spark,quality,postgres,s3]"]
    named = " ".join(" ".join(extras[name]) for name in ("spark", "quality", "postgres", "s3"))
    assert [name for name in _OPTIONAL if name not in named] == [], named
