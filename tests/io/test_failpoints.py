"""Failpoints are inert unless a test arms them: a stray environment variable does nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import fermion.table as ft
from fermion.io import failpoints

WRITER = """
import sys, pyarrow as pa, fermion.table as ft
ft.write_dataset(pa.table({"x": [4]}), sys.argv[1], mode="append")
print("committed")
"""


def _run(uri: str, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in (failpoints.ENV_VAR, failpoints.ENABLE_VAR)
    }
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-c", WRITER, uri], env=env, capture_output=True, text=True, timeout=120
    )


STRAY = [
    {failpoints.ENV_VAR: "after_data_write:kill"},  # a stray variable alone
    {failpoints.ENV_VAR: "before_manifest_put:kill", failpoints.ENABLE_VAR: "1"},
    {failpoints.ENV_VAR: "before_manifest_put:kill", failpoints.ENABLE_VAR: "yes"},
    {failpoints.ENABLE_VAR: failpoints.ENABLE_TOKEN},  # the opt-in without a point
    {failpoints.ENV_VAR: "no_such_point:kill", failpoints.ENABLE_VAR: failpoints.ENABLE_TOKEN},
]


@pytest.mark.parametrize("extra_env", STRAY)
def test_stray_environment_arms_nothing(
    monkeypatch: pytest.MonkeyPatch, extra_env: dict[str, str]
) -> None:
    """What the module reads at import, run again in this process under each environment."""
    for name in (failpoints.ENV_VAR, failpoints.ENABLE_VAR):
        monkeypatch.delenv(name, raising=False)
    for name, value in extra_env.items():
        monkeypatch.setenv(name, value)
    try:
        failpoints._arm_from_environment()
        assert not [p for p in failpoints.POINTS if failpoints.armed(p)]
    finally:
        failpoints.disarm()


def test_a_stray_variable_does_nothing_in_a_real_writer(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1, 2]}), uri)
    proc = _run(uri, {failpoints.ENV_VAR: "before_manifest_put:kill"})
    assert proc.returncode == 0 and proc.stdout.strip() == "committed", proc.stderr
    assert ft.dataset(uri).to_table()["x"].to_pylist() == [1, 2, 4]


def test_the_explicit_opt_in_arms_the_point(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1, 2]}), uri)
    env = {failpoints.ENV_VAR: "before_manifest_put:kill"}
    env[failpoints.ENABLE_VAR] = failpoints.ENABLE_TOKEN
    proc = _run(uri, env)
    assert proc.returncode == -9
    assert ft.dataset(uri).version == 1


def test_arming_in_process() -> None:
    assert not failpoints.armed("after_txn_write")
    failpoints.hit("after_txn_write")  # unarmed: nothing
    with pytest.raises(ValueError, match="unknown failpoint"):
        failpoints.arm("nowhere", "kill")
    with pytest.raises(ValueError, match="unknown failpoint"):
        failpoints.arm("after_txn_write", "explode")
    failpoints.arm("partial_write", "raise", match="_deletions/")
    try:
        failpoints.hit("partial_write", "/t/data/a.fermion")  # no match: nothing
        written: list[bytes] = []
        with pytest.raises(OSError, match="injected failure at partial_write"):
            failpoints.split_write(lambda v: written.append(bytes(v)), b"abcd", "/t/_deletions/1")
        assert written == [b"ab"]  # torn: half of the bytes
        failpoints.hit("partial_write", "/t/_deletions/2")  # raise acts once per process
    finally:
        failpoints.disarm()
    assert not failpoints.armed("partial_write")
