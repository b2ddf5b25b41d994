"""Data quality: suites declared in ``conf/quality/*.yaml``, checked with great_expectations.

- :func:`validate_dataframe` (``validate`` before) runs a suite on a Spark DataFrame (GX
  expectations: row count, not null, unique keys, value ranges) and, given the table,
  checks its batch integrity; it keeps the result as JSON and GX data docs (HTML) under
  ``output_dir``.
- :func:`check_batch_integrity` — every batch id's rows in one fragment, contiguous.
- :func:`check_rows_conserved` — a compaction's new fragments hold exactly the live rows
  they replace (checked before the rewrite commits).
- :func:`load_suite` reads and validates a suite file.

This package receives DataFrames; it never imports pyspark itself (GX does, to run them).

Example:
    >>> import fermion.quality as fq
    >>> fq.load_suite("no/such.yaml")
    Traceback (most recent call last):
    ...
    fermion.quality.suite.SuiteError: no/such.yaml: cannot read the suite file ...
"""

from __future__ import annotations

from fermion.quality.conservation import ConservationResult, check_rows_conserved
from fermion.quality.integrity import IntegrityResult, check_batch_integrity
from fermion.quality.report import QualityCheckError, QualityReport, validate_dataframe
from fermion.quality.report import validate as validate  # deprecated name
from fermion.quality.suite import RowCount, Suite, SuiteError, ValueRange, load_suite

__all__ = [
    "ConservationResult",
    "IntegrityResult",
    "QualityCheckError",
    "QualityReport",
    "RowCount",
    "Suite",
    "SuiteError",
    "ValueRange",
    "check_batch_integrity",
    "check_rows_conserved",
    "load_suite",
    "validate_dataframe",
]
