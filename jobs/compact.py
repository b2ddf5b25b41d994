"""Bin-pack small fragments of a Fermion table into bigger ones (batch-aligned).

spark-submit jobs/compact.py --config conf/compact.yaml [--env local] [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import CompactConfig
from fermion.spark.jobs.maintenance import compact
from fermion.spark.jobs.runner import run

if __name__ == "__main__":
    sys.exit(run("compact", CompactConfig, compact, sys.argv[1:]))
