"""Data-quality runs: :func:`validate_dataframe` against a suite (and a table), keep the result.

(``validate`` before: the ``validate`` job, :mod:`fermion.spark.jobs.validate`, has that name.)

A run checks the suite's expectations with great_expectations on the DataFrame and, when a
table and a batch-id column are known, the table's batch integrity
(:mod:`fermion.quality.integrity`). The result is kept where an operator can open it::

    <output_dir>/results/<suite>-<run>.json     every check's outcome, GX's full result
    <output_dir>/data_docs/index.html           GX data docs; one HTML page per validation

Example (needs a SparkSession ``spark``)::

    report = validate_dataframe(spark.read.parquet("day.parquet"),
                                "conf/quality/features.yaml", output_dir="reports")
    report.success, report.json_path, report.docs_path
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fermion.deprecation import deprecated_alias
from fermion.errors import FermionError
from fermion.extras import require
from fermion.quality.integrity import check_batch_integrity
from fermion.quality.suite import load_suite

__all__ = ["QualityCheckError", "QualityReport", "validate_dataframe"]


class QualityCheckError(FermionError):
    """Data failed a quality suite (see the report's JSON and data docs)."""


@dataclass(frozen=True)
class QualityReport:
    """The outcome of :func:`validate_dataframe`.

    Attributes:
        suite: The suite's name.
        success: True when every check passed.
        results: One dict per check (``check``, ``success``, its arguments and observations).
        json_path: The JSON file holding the results (and GX's full result).
        docs_path: This run's GX data docs page (HTML).
    """

    suite: str
    success: bool
    results: list[dict[str, Any]]
    json_path: str
    docs_path: str | None

    @property
    def failed(self) -> list[dict[str, Any]]:
        """The results of the checks that did not pass."""
        return [r for r in self.results if not r["success"]]

    def summary(self) -> dict[str, Any]:
        """The keys a job's summary line reports about this run.

        Example:
            >>> QualityReport("s", True, [{"check": "c", "success": True}], "r.json",
            ...               "d.html").summary()["checks"]
            1
        """
        return {
            "suite": self.suite,
            "passed": self.success,
            "checks": len(self.results),
            "checks_failed": [r["check"] for r in self.failed],
            "results_json": self.json_path,
            "data_docs": self.docs_path,
        }

    def raise_for_failure(self) -> None:
        """Raise :class:`QualityCheckError` naming the failed checks, when there are any.

        Example:
            >>> QualityReport("s", True, [], "r.json", None).raise_for_failure()
        """
        if self.success:
            return
        names = ", ".join(_describe(r) for r in self.failed)
        raise QualityCheckError(
            f"suite {self.suite!r} failed: {names} (results: {self.json_path}; "
            f"data docs: {self.docs_path})"
        )


def _describe(result: dict[str, Any]) -> str:
    subject = result.get("column") or result.get("column_list")
    return f"{result['check']}({subject})" if subject else str(result["check"])


def _run_name(suite: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{suite}-{stamp}-{uuid.uuid4().hex[:8]}"


def validate_dataframe(
    df: Any,
    suite_path: str | Path,
    *,
    table_uri: str | None = None,
    table_version: int | None = None,
    batch_id_column: str | None = None,
    output_dir: str | Path,
    run_name: str | None = None,
) -> QualityReport:
    """Check ``df`` (and the table's batch integrity) against the suite at ``suite_path``.

    Args:
        df: A Spark DataFrame (``pyspark.sql.DataFrame``) holding the rows to check; only
            the columns the suite names are read.
        suite_path: The suite file, e.g. ``conf/quality/features.yaml``.
        table_uri: The Fermion table the rows come from; with a batch-id column (this
            argument or the suite's ``batch_integrity.column``) its batch integrity is checked.
        table_version: The table version for the integrity check (default: the latest).
        batch_id_column: Overrides the suite's batch-id column.
        output_dir: Where the JSON result and the data docs go (created when missing).
        run_name: Names this run in file names and data docs (default: suite + time + id).

    Returns:
        The report; it does not raise on failed checks (see
        :meth:`QualityReport.raise_for_failure`).

    Raises:
        SuiteError: The suite file is missing or invalid.
        DatasetError: ``table_uri`` names no table.
        MissingExtraError: great_expectations is not installed (``fermion[quality]``).

    Example (needs a SparkSession ``spark``)::

        report = validate_dataframe(df, "conf/quality/features.yaml", output_dir="/tmp/q")
        report.raise_for_failure()  # QualityCheckError naming the failed checks
    """
    require("great_expectations", "quality")
    from fermion.quality.gx_run import run_suite  # imports GX: only when checks run

    suite = load_suite(suite_path)
    out = Path(output_dir)
    run = run_name or _run_name(suite.name)
    # the expectations read a few columns: project them once (wide tables stay cheap)
    checked = df.select(*suite.columns) if suite.columns else df
    outcome = run_suite(checked, suite, docs_dir=out / "data_docs", run_name=run)
    results = list(outcome.results)
    column = batch_id_column or suite.batch_id_column
    if table_uri is not None and column is not None:
        integrity = check_batch_integrity(table_uri, column, version=table_version)
        results.append(integrity.to_json())
    success = all(r["success"] for r in results)
    json_path = out / "results" / f"{run}.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "suite": suite.name,
        "suite_path": suite.path,
        "run": run,
        "success": success,
        "results": results,
        "data_docs": outcome.docs_path,
        "great_expectations": outcome.raw,
    }
    json_path.write_text(json.dumps(document, indent=2, default=str))
    return QualityReport(suite.name, success, results, str(json_path), outcome.docs_path)


#: Deprecated name of :func:`validate_dataframe`.
validate = deprecated_alias(
    validate_dataframe, "fermion.quality.validate", "fermion.quality.validate_dataframe"
)
