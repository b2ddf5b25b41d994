"""The job runner: arguments, summary line, exit codes, errors as one line."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from fermion.errors import CommitConflictError
from fermion.spark.jobs.config import VacuumConfig
from fermion.spark.jobs.runner import (
    EXIT_CONFIG,
    EXIT_FAILURE,
    EXIT_OK,
    SUMMARY_KEYS,
    JobContext,
    JobResult,
    error_line,
    run,
)


def _config(tmp_path: Path, text: str = "table: /t\n") -> str:
    path = tmp_path / "vacuum.yaml"
    path.write_text(text)
    return str(path)


def _run(body: Any, argv: list[str]) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = run("vacuum", VacuumConfig, body, argv, stdout=out)
    return code, out.getvalue().splitlines()


def test_summary_is_the_last_stdout_line_with_every_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[VacuumConfig] = []

    def body(context: JobContext, config: VacuumConfig) -> JobResult:
        print("chatter from the job")
        seen.append(config)
        return JobResult(read_version=3, committed_version=4, rows_in=10, rows_out=9,
                         files_in=2, files_out=1, retries=1, extra={"skipped": False})  # fmt: skip

    argv = ["--config", _config(tmp_path), "--set", "retention_hours=2"]
    code = run("vacuum", VacuumConfig, body, argv)
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert code == EXIT_OK and lines[0] == "chatter from the job" and len(lines) == 2
    assert "INFO fermion.jobs.vacuum: done in" in captured.err
    summary = json.loads(lines[-1])
    assert list(summary)[: len(SUMMARY_KEYS)] == list(SUMMARY_KEYS)
    assert summary["job"] == "vacuum" and summary["status"] == "ok" and summary["table"] == "/t"
    assert (summary["read_version"], summary["committed_version"], summary["retries"]) == (3, 4, 1)
    assert (summary["rows_in"], summary["rows_out"], summary["files_in"], summary["files_out"]) == (
        10, 9, 2, 1,
    )  # fmt: skip
    assert summary["skipped"] is False and summary["seconds"] >= 0 and "error" not in summary
    assert seen[0].retention_hours == 2.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "ConfigError: arguments: the following arguments are required: --config"),
        (["--config"], "ConfigError: arguments: argument --config: expected one argument"),
        (["--config", "x.yaml", "--bogus"], "ConfigError: arguments: unrecognized arguments"),
        (["--config", "/no/such.yaml"], "ConfigError: /no/such.yaml: config file not found"),
    ],
)
def test_bad_arguments_exit_2(argv: list[str], message: str) -> None:
    called: list[int] = []
    code, lines = _run(lambda c, cfg: called.append(1) or JobResult(), argv)
    summary = json.loads(lines[-1])
    assert code == EXIT_CONFIG and not called
    assert summary["status"] == "error" and summary["error"].startswith(message)
    assert summary["committed_version"] is None


def test_bad_config_exits_2_naming_key_and_file(tmp_path: Path) -> None:
    path = _config(tmp_path, "table: /t\nretention_hours: soon\n")
    code, lines = _run(lambda c, cfg: JobResult(), ["--config", path])
    assert code == EXIT_CONFIG
    assert json.loads(lines[-1])["error"] == (
        f"ConfigError: {path}: key 'retention_hours': expected float, got 'soon' (str)"
    )


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (CommitConflictError("gave up after 3 attempts\ndetails"),
         "CommitConflictError: gave up after 3 attempts"),
        (RuntimeError("boom"), "RuntimeError: boom"),
    ],
)  # fmt: skip
def test_failures_exit_1_with_a_one_line_error(
    tmp_path: Path, error: Exception, expected: str
) -> None:
    def body(context: JobContext, config: VacuumConfig) -> JobResult:
        raise error

    code, lines = _run(body, ["--config", _config(tmp_path)])
    summary = json.loads(lines[-1])
    assert code == EXIT_FAILURE and summary["status"] == "error"
    assert summary["error"] == expected and summary["table"] == "/t"


def test_error_line_is_one_bounded_line() -> None:
    assert error_line(KeyError("k")) == "KeyError: 'k'"
    assert error_line(ValueError()) == "ValueError"
    assert error_line(ValueError("\n\n  second line\nthird")) == "ValueError: second line"
    long = error_line(ValueError("x" * 2_000))
    assert len(long) < 520 and long.endswith("...") and "\n" not in long


def test_jobs_that_never_touch_spark_start_no_session(tmp_path: Path) -> None:
    contexts: list[JobContext] = []

    def body(context: JobContext, config: VacuumConfig) -> JobResult:
        contexts.append(context)
        return JobResult()

    code, _ = _run(body, ["--config", _config(tmp_path), "--set", "spark.x.y=1"])
    assert code == EXIT_OK
    assert contexts[0].spark_conf == {"spark.x.y": "1"} and contexts[0]._spark is None


def test_summary_file_holds_the_summary_line(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    argv = ["--config", _config(tmp_path), "--summary-file", str(path)]
    code, lines = _run(lambda c, cfg: JobResult(committed_version=7), argv)
    assert code == EXIT_OK
    assert path.read_text() == lines[-1] + "\n"
    assert json.loads(path.read_text())["committed_version"] == 7
    assert [p.name for p in tmp_path.iterdir()] == sorted(["summary.json", "vacuum.yaml"])


@pytest.mark.parametrize(
    "argv",
    [
        ["--bogus"],  # bad arguments: the summary file is still written
        ["--config", "/no/such.yaml"],  # a bad config
    ],
)
def test_summary_file_written_on_bad_arguments(tmp_path: Path, argv: list[str]) -> None:
    path = tmp_path / "summary.json"
    code, lines = _run(lambda c, cfg: JobResult(), [*argv, f"--summary-file={path}"])
    assert code == EXIT_CONFIG
    summary = json.loads(path.read_text())
    assert summary["status"] == "error" and summary["error"].startswith("ConfigError")
    assert path.read_text() == lines[-1] + "\n"


def test_unwritable_summary_file_is_logged_and_keeps_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "no-such-dir" / "summary.json"
    argv = ["--config", _config(tmp_path), "--summary-file", str(path)]
    code = run("vacuum", VacuumConfig, lambda c, cfg: JobResult(), argv)
    captured = capsys.readouterr()
    assert code == EXIT_OK and json.loads(captured.out.splitlines()[-1])["status"] == "ok"
    assert "cannot write the summary file: FileNotFoundError" in captured.err
    assert not path.parent.exists()
