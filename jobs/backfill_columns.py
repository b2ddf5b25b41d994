"""Add columns computed from the existing ones (Spark SQL expressions) to a Fermion table,
one column-only data file per fragment, without rewriting any existing file.

spark-submit jobs/backfill_columns.py --config conf/backfill_columns.yaml [--env local]
                                      [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.backfill_columns import backfill_columns
from fermion.spark.jobs.config import BackfillColumnsConfig
from fermion.spark.jobs.runner import run

if __name__ == "__main__":
    sys.exit(run("backfill_columns", BackfillColumnsConfig, backfill_columns, sys.argv[1:]))
