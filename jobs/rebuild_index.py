"""Recompute missing or stale fragment statistics of a Fermion table (a CreateIndex commit).

spark-submit jobs/rebuild_index.py --config conf/rebuild_index.yaml
    [--env local] [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import RebuildIndexConfig
from fermion.spark.jobs.maintenance import rebuild_index
from fermion.spark.jobs.runner import run

if __name__ == "__main__":
    sys.exit(run("rebuild_index", RebuildIndexConfig, rebuild_index, sys.argv[1:]))
