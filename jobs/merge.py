"""Upsert a source (Parquet, JSON, CSV or a Spark table) into a Fermion table on key
columns, in one version, once per input.

spark-submit jobs/merge.py --config conf/merge.yaml [--env local] [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import MergeConfig
from fermion.spark.jobs.merge import merge
from fermion.spark.jobs.runner import run

if __name__ == "__main__":
    sys.exit(run("merge", MergeConfig, merge, sys.argv[1:]))
