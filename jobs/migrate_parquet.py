"""Migrate a Parquet dataset to a Fermion table (verified before commit), or export back.

spark-submit jobs/migrate_parquet.py --config conf/migrate_parquet.yaml [--env local]
    [--set key=value ...]  (--set reverse=true --set target=DIR exports to Parquet)
"""

from __future__ import annotations

import sys

from fermion.spark.jobs.config import MigrateParquetConfig
from fermion.spark.jobs.migrate_parquet import migrate_parquet
from fermion.spark.jobs.runner import run

if __name__ == "__main__":
    sys.exit(run("migrate_parquet", MigrateParquetConfig, migrate_parquet, sys.argv[1:]))
