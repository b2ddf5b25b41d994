"""Delete the rows of a Fermion table that match a Spark SQL predicate (deletion files).

spark-submit jobs/delete.py --config conf/delete.yaml [--env local] [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import DeleteConfig
from fermion.spark.jobs.maintenance import delete
from fermion.spark.jobs.runner import run

if __name__ == "__main__":
    sys.exit(run("delete", DeleteConfig, delete, sys.argv[1:]))
