"""Run a :class:`~fermion.quality.suite.Suite` on a Spark DataFrame with great_expectations.

Everything happens in an ephemeral GX context (nothing is written to a GX project): a Spark
data source with one DataFrame asset, the suite's expectations, a validation definition and
a checkpoint whose one action builds the data docs (HTML) into ``<output_dir>/data_docs``.
The DataFrame is only handed to GX: this module does not import pyspark itself.

Example (needs a SparkSession; see :func:`fermion.quality.validate_dataframe`)::

    outcome = run_suite(df, load_suite("conf/quality/features.yaml"),
                        docs_dir=Path("reports/data_docs"), run_name="ingest-2026-11-23")
    outcome.success, outcome.docs_path
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import great_expectations as gx
import great_expectations.expectations as gxe
from great_expectations.core.run_identifier import RunIdentifier
from great_expectations.data_context.types.base import ProgressBarsConfig

from fermion.quality.suite import Suite

__all__ = ["DOCS_SITE", "GxOutcome", "expectations_of", "run_suite"]

DOCS_SITE = "fermion"
_RESULT_FORMAT: Final = "SUMMARY"  # counts plus at most 20 unexpected values per expectation


@dataclass(frozen=True)
class GxOutcome:
    """What one GX validation produced."""

    success: bool
    results: list[dict[str, Any]]
    raw: dict[str, Any]
    docs_path: str | None


def expectations_of(suite: Suite) -> list[gxe.Expectation]:
    """The GX expectations declaring ``suite`` (batch integrity is not one: it needs the table).

    Example:
        >>> from fermion.quality.suite import Suite, RowCount
        >>> [type(e).__name__ for e in expectations_of(Suite("s", "s.yaml", RowCount(1, 9)))]
        ['ExpectTableRowCountToBeBetween']
    """
    found: list[gxe.Expectation] = []
    if suite.row_count is not None:
        found.append(
            gxe.ExpectTableRowCountToBeBetween(
                min_value=suite.row_count.min, max_value=suite.row_count.max
            )
        )
    found += [gxe.ExpectColumnValuesToNotBeNull(column=name) for name in suite.not_null]
    for key in suite.unique:
        if len(key) == 1:
            found.append(gxe.ExpectColumnValuesToBeUnique(column=key[0]))
        else:
            found.append(gxe.ExpectCompoundColumnsToBeUnique(column_list=list(key)))
    found += [
        gxe.ExpectColumnValuesToBeBetween(column=r.column, min_value=r.min, max_value=r.max)
        for r in suite.ranges
    ]
    return found


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    """One expectation's result, reduced to what an operator reads first."""
    config = result.get("expectation_config", {})
    kwargs = {k: v for k, v in config.get("kwargs", {}).items() if k != "batch_id"}
    detail = result.get("result", {})
    summary: dict[str, Any] = {
        "check": config.get("type"),
        "success": bool(result.get("success")),
        **kwargs,
    }
    for key in ("observed_value", "element_count", "unexpected_count", "partial_unexpected_list"):
        if key in detail:
            summary[key] = detail[key]
    exception = result.get("exception_info", {})
    if exception.get("raised_exception"):
        summary["error"] = exception.get("exception_message")
    return summary


def _context(docs_dir: Path) -> Any:
    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    context.add_data_docs_site(
        site_name=DOCS_SITE,
        site_config={
            "class_name": "SiteBuilder",
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": str(docs_dir),
            },
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        },
    )
    return context


def run_suite(df: Any, suite: Suite, *, docs_dir: Path, run_name: str) -> GxOutcome:
    """Validate the Spark DataFrame ``df`` against ``suite``; build data docs into ``docs_dir``.

    Args:
        df: A ``pyspark.sql.DataFrame``.
        suite: The declared suite.
        docs_dir: Root of the data docs site (``index.html`` and one page per validation).
        run_name: Names this validation in the data docs.

    Returns:
        The outcome; ``docs_path`` is this validation's HTML page.
    """
    context = _context(docs_dir)
    asset = context.data_sources.add_spark(name="spark").add_dataframe_asset(name=suite.name)
    batch = asset.add_batch_definition_whole_dataframe("whole_dataframe")
    gx_suite = context.suites.add(gx.ExpectationSuite(name=suite.name))
    for expectation in expectations_of(suite):
        gx_suite.add_expectation(expectation)
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=suite.name, data=batch, suite=gx_suite)
    )
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(
            name=suite.name,
            validation_definitions=[definition],
            actions=[gx.checkpoint.UpdateDataDocsAction(name="docs", site_names=[DOCS_SITE])],
            result_format=_RESULT_FORMAT,
        )
    )
    outcome = checkpoint.run(
        batch_parameters={"dataframe": df}, run_id=RunIdentifier(run_name=run_name)
    )
    identifier, validation = next(iter(outcome.run_results.items()))
    raw = validation.to_json_dict()
    urls = context.get_docs_sites_urls(resource_identifier=identifier, site_names=[DOCS_SITE])
    url = urls[0]["site_url"] if urls else None
    docs_path = url.removeprefix("file://") if url else None
    return GxOutcome(
        success=bool(validation.success),
        results=[_summary(r) for r in raw.get("results", [])],
        raw=raw,
        docs_path=docs_path,
    )
