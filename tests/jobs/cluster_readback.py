"""Read a Fermion table back through the ``fermion`` data source on whatever master
``spark-submit`` gives, and print one JSON line: row count, distinct and summed ``id``,
summed ``value``, the number of partitions read, the driver's pid and where the driver
imported Fermion from.

spark-submit --master spark://... --py-files fermion.zip tests/jobs/cluster_readback.py \
    TABLE EXECUTOR_PYTHON
"""

from __future__ import annotations

import json
import os
import sys

from pyspark.sql import functions as F

import fermion.spark

if __name__ == "__main__":
    spark = fermion.spark.session("fermion-readback", conf={"spark.pyspark.python": sys.argv[2]})
    rows = spark.read.format("fermion").load(sys.argv[1])
    totals = rows.agg(
        F.count(F.lit(1)).alias("rows"),
        F.countDistinct("id").alias("distinct_ids"),
        F.sum("id").alias("id_sum"),
        F.sum("value").alias("value_sum"),
    ).collect()[0]
    out = {
        **totals.asDict(),
        "driver_pid": os.getpid(),
        "driver_fermion": fermion.__file__,
        "partitions": rows.rdd.getNumPartitions(),  # small fragments packed
        # one partition per fragment
        "fragment_partitions": spark.read.format("fermion")
        .option("max_partition_bytes", 1)
        .load(sys.argv[1])
        .rdd.getNumPartitions(),
    }
    spark.stop()
    print(json.dumps(out), flush=True)
