"""Check a version of a Fermion table against a data-quality suite (commits nothing).

spark-submit jobs/validate.py --config conf/validate.yaml [--env local] [--set key=value ...]
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import ValidateConfig
from fermion.spark.jobs.runner import run
from fermion.spark.jobs.validate import validate

if __name__ == "__main__":
    sys.exit(run("validate", ValidateConfig, validate, sys.argv[1:]))
