"""Remove old versions and orphan files of a Fermion table.

spark-submit jobs/vacuum.py --config conf/vacuum.yaml [--env local] [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import VacuumConfig
from fermion.spark.jobs.runner import run
from fermion.spark.jobs.vacuum import vacuum

if __name__ == "__main__":
    sys.exit(run("vacuum", VacuumConfig, vacuum, sys.argv[1:]))
