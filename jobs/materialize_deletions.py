"""Rewrite the fragments of a Fermion table whose deleted fraction is above a threshold.

spark-submit jobs/materialize_deletions.py --config conf/materialize_deletions.yaml
    [--env local] [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import MaterializeDeletionsConfig
from fermion.spark.jobs.maintenance import materialize_deletions
from fermion.spark.jobs.runner import run

if __name__ == "__main__":
    sys.exit(
        run(
            "materialize_deletions", MaterializeDeletionsConfig, materialize_deletions, sys.argv[1:]
        )
    )
