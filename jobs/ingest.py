"""Append a source (Parquet, JSON, CSV or a Spark table) to a Fermion table, once per input.

spark-submit jobs/ingest.py --config conf/ingest.yaml [--env local] [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import IngestConfig
from fermion.spark.jobs.ingest import ingest
from fermion.spark.jobs.runner import run

if __name__ == "__main__":
    sys.exit(run("ingest", IngestConfig, ingest, sys.argv[1:]))
