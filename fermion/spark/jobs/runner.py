"""What every job shares: arguments, configuration, Spark session, logging, the summary line.

A job is a function ``(context, config) -> JobResult``; :func:`run` wraps it::

    spark-submit jobs/<job>.py --config conf/<job>.yaml [--env local] [--set key=value ...]
                                      [--summary-file PATH]
    python jobs/<job>.py ...          # starts a local Spark session itself

Progress goes to stderr through Python logging; the LAST line on stdout is one JSON object
(``job, status, table, read_version, committed_version, rows_in, rows_out, files_in,
files_out, retries, seconds`` plus the job's own keys). Exit codes: 0 ok, 2 bad arguments or
configuration, 1 any other failure; on failure the summary has ``"status": "error"`` and
``"error": "<TypeName>: <one line>"``. ``--summary-file PATH`` writes the same line to
``PATH`` (through a rename), even when the other arguments are bad. Jobs commit as their
last step, so a failure before it commits nothing.

Example:
    >>> import io, json, os, pathlib, tempfile
    >>> from fermion.spark.jobs.config import VacuumConfig
    >>> d = tempfile.mkdtemp()
    >>> path = os.path.join(d, "vacuum.yaml")
    >>> _ = pathlib.Path(path).write_text("table: /no/such/table\\nretention_hour: 1\\n")
    >>> out = io.StringIO()
    >>> code = run("vacuum", VacuumConfig, lambda ctx, cfg: JobResult(), ["--config", path],
    ...            stdout=out)
    >>> code, json.loads(out.getvalue().splitlines()[-1])["error"].split(":")[0]
    (2, 'ConfigError')
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

from fermion.spark.jobs.config import ConfigError, JobConfig, LoadedConfig, load_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "EXIT_CONFIG",
    "EXIT_FAILURE",
    "EXIT_OK",
    "JobContext",
    "JobResult",
    "SUMMARY_KEYS",
    "error_line",
    "parse_args",
    "run",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONFIG = 2
LOGGER_NAME = "fermion.jobs"
SUMMARY_KEYS = (
    "job", "status", "table", "read_version", "committed_version", "rows_in", "rows_out",
    "files_in", "files_out", "retries", "seconds",
)  # fmt: skip
_MAX_ERROR_CHARS = 500

C = TypeVar("C", bound=JobConfig)


@dataclass
class JobResult:
    """What a job reports; :func:`run` adds ``job``, ``status``, ``table`` and ``seconds``.

    ``retries`` counts commit attempts beyond the first. ``extra`` holds the job's own keys
    (``skipped``, ``versions_removed``, ...).
    """

    read_version: int | None = None
    committed_version: int | None = None
    rows_in: int = 0
    rows_out: int = 0
    files_in: int = 0
    files_out: int = 0
    retries: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class JobContext:
    """What a job function gets besides its config: the Spark session (built on first use,
    so jobs that never touch Spark start no JVM) and a logger."""

    def __init__(
        self, job: str, spark_conf: dict[str, str], spark: SparkSession | None = None
    ) -> None:
        self.job = job
        self.spark_conf = dict(spark_conf)
        self.log = logging.getLogger(f"{LOGGER_NAME}.{job}")
        self._spark = spark
        self.owns_spark = False

    @property
    def spark(self) -> SparkSession:
        """The session: the one given to :func:`run`, else one built from the config."""
        if self._spark is None:
            self.log.info("starting Spark")
            self._spark = build_session(f"fermion-{self.job}", self.spark_conf)
            self.owns_spark = True
        return self._spark

    def stop(self) -> None:
        """Stop the session if this context started it."""
        if self.owns_spark and self._spark is not None:
            self._spark.stop()
            self._spark = None
            self.owns_spark = False


def build_session(app_name: str, conf: dict[str, str]) -> SparkSession:
    """The jobs' SparkSession: :func:`fermion.spark.session` (the ``fermion`` data source
    registered, this interpreter for the Python workers, Arrow on) with
    the config's Spark settings; under ``spark-submit`` its ``--master`` is kept, otherwise
    ``spark.master`` from the config, else ``local[2]``.
    """
    from fermion.spark.session import session

    settings = {"spark.ui.showConsoleProgress": "false"}  # progress bars garble the logs
    settings.update(conf)
    return session(app_name, conf=settings)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"arguments: {message}")


def parse_args(job: str, argv: Sequence[str]) -> argparse.Namespace:
    """``--config PATH [--env NAME|PATH] [--set key=value ...]``.

    Example:
        >>> parse_args("vacuum", ["--config", "c.yaml", "--set", "a=1", "--set", "b=2"]).set
        ['a=1', 'b=2']
    """
    parser = _Parser(prog=f"jobs/{job}.py", description=f"Fermion {job} job")
    parser.add_argument("--config", required=True, help=f"job config, e.g. conf/{job}.yaml")
    parser.add_argument("--env", help="environment overlay: conf/env/<env>.yaml or a path")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a config key (or a spark.* setting); repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--summary-file", metavar="PATH",
        help="also write the summary line to PATH (replaced atomically)",
    )  # fmt: skip
    return parser.parse_args(list(argv))


def error_line(error: BaseException) -> str:
    """``"<TypeName>: <first line of the message>"``, at most ~500 characters.

    Example:
        >>> error_line(ValueError("bad\\nmore detail"))
        'ValueError: bad'
    """
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    message = lines[0] if lines else ""
    if len(message) > _MAX_ERROR_CHARS:
        message = message[: _MAX_ERROR_CHARS - 3] + "..."
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _setup_logging() -> None:
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def run(
    job: str,
    config_cls: type[C],
    body: Callable[[JobContext, C], JobResult],
    argv: Sequence[str],
    *,
    spark: SparkSession | None = None,
    stdout: IO[str] | None = None,
) -> int:
    """Run one job: parse ``argv``, load the config, call ``body``, print the summary.

    Args:
        job: The job's name (``conf/env`` overlays' ``jobs.<job>`` section, summary ``job``).
        config_cls: Its config class.
        body: The job itself; it commits last and returns what it did.
        argv: Command-line arguments (without the program name).
        spark: A session to use instead of building one (it is not stopped).
        stdout: Where the summary line goes (default ``sys.stdout``).

    Returns:
        The exit code: 0 ok, 2 bad arguments or config, 1 any other failure.
    """
    _setup_logging()
    log = logging.getLogger(f"{LOGGER_NAME}.{job}")
    out = stdout if stdout is not None else sys.stdout
    started = time.perf_counter()
    summary: dict[str, Any] = {"job": job, "status": "error", "table": None}
    context: JobContext | None = None
    code = EXIT_FAILURE
    summary_file = _summary_file(argv)
    try:
        args = parse_args(job, argv)
        loaded: LoadedConfig[C] = load_config(
            config_cls, args.config, env=args.env, overrides=args.set, job_name=job
        )
        summary["table"] = loaded.job.table
        log.info("config %s", " + ".join(loaded.files))
        context = JobContext(job, loaded.spark_conf, spark)
        result = body(context, loaded.job)
        summary.update(_result_keys(result))
        summary["status"] = "ok"
        code = EXIT_OK
    except ConfigError as error:
        code = EXIT_CONFIG
        summary["error"] = error_line(error)
        log.error("%s", summary["error"])
    except Exception as error:  # noqa: BLE001 - every failure becomes the summary's error
        summary["error"] = error_line(error)
        log.error("%s", summary["error"], exc_info=not _is_fermion(error))
    finally:
        if context is not None:
            context.stop()
    summary["seconds"] = round(time.perf_counter() - started, 3)
    if code == EXIT_OK:
        log.info("done in %.1f s", summary["seconds"])
    line = {key: summary.pop(key, None) for key in SUMMARY_KEYS}
    line.update(summary)
    text = json.dumps(line, default=str)
    out.flush()
    print(text, file=out, flush=True)
    if summary_file:
        _write_summary(summary_file, text, log)
    return code


def _summary_file(argv: Sequence[str]) -> str | None:
    """``--summary-file``'s value, found even when the other arguments are bad."""
    found: str | None = None
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--summary-file" and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith("--summary-file="):
            found = arg.split("=", 1)[1]
    return found


def _write_summary(path: str, text: str, log: logging.Logger) -> None:
    """Write the summary line to ``path`` through a temp file and a rename (a reader never
    sees half a line); a failure is logged, it does not change the exit code."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, path)
    except OSError as error:
        log.error("cannot write the summary file: %s", error_line(error))


def _result_keys(result: JobResult) -> dict[str, Any]:
    keys = {
        "read_version": result.read_version,
        "committed_version": result.committed_version,
        "rows_in": result.rows_in,
        "rows_out": result.rows_out,
        "files_in": result.files_in,
        "files_out": result.files_out,
        "retries": result.retries,
    }
    keys.update(result.extra)
    return keys


def _is_fermion(error: BaseException) -> bool:
    from fermion.errors import FermionError

    return isinstance(error, FermionError)
