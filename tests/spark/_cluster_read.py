"""Batch read on a Spark cluster, run as the driver process: prints JSON of what was read where.

    python _cluster_read.py MASTER BOOTSTRAP TOPIC

Each row gets the working directory of the Python worker that read it (under its Spark worker's
work directory), so the test can tell which worker ran each read task.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main() -> None:
    master, bootstrap, topic = sys.argv[1:4]
    from pyspark.sql import functions as F

    from aiokafkawire.spark import register
    from aiokafkawire.testing.spark import local_spark_session

    spark = local_spark_session(
        app_name="cluster-read",
        config={"spark.master": master, "spark.executor.cores": "1", "spark.cores.max": "2",
                "spark.executor.memory": "512m"},
    )  # fmt: skip
    register(spark)
    df = (
        spark.read.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("minPartitions", "8")
        .load()
        .select("partition", "offset")
    )

    def where(partition: Any) -> str:
        import os
        import time

        time.sleep(0.02)  # tasks long enough that both executors take some
        return os.getcwd()

    # A plain (pickled rows) Python UDF: it runs in the task that read the rows, no pandas.
    cwd = F.udf(where, "string", useArrow=False)
    rows = df.select("partition", "offset", cwd("partition").alias("cwd")).collect()
    print(
        json.dumps(
            {
                "records": sorted([r.partition, r.offset] for r in rows),
                "cwds": sorted({r.cwd for r in rows}),
            }
        ),
        flush=True,
    )
    spark.stop()


if __name__ == "__main__":
    main()
