"""A Spark driver for the exactly-once tests, run as its own process so the test can SIGKILL it.

    python _eos_driver.py MODE BOOTSTRAP SOURCE SINK CHECKPOINT PREFIX [--fail-first]
                          [--master M] [--conf k=v ...]

MODE: ``stream`` (processing-time trigger, runs until killed), ``drain`` (availableNow, exits when
done) or ``batch`` (one batch write of SOURCE to SINK); ``batch+drain`` runs both in one session
(one JVM start fewer), the batch write to the first of SINK's comma-separated topics with the
first of PREFIX's, the drain to the second ones (checkpoint under CHECKPOINT/drain).
``--fail-first`` makes the first attempt of every write task die half-way (its Python worker
exits, leaving its transaction open), so Spark retries it.  Prints ``READY`` once the query runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any


def _passthrough(fail_first: bool, slow: float, slow_first: bool = False) -> Any:
    """A row-at-a-time Python UDF (no pandas): the value unchanged, maybe slowly; with
    ``fail_first``, the first attempt of a task dies at its 120th row (the rows before it have
    reached the writer by then: Python UDF rows go out in hundreds, Arrow batches of 10).
    ``slow_first``: only the first attempt of partition 0 is slow (a speculative copy wins)."""
    seen = {"rows": 0}

    def passthrough(value: Any) -> Any:
        from pyspark import TaskContext

        seen["rows"] += 1
        context = TaskContext.get()
        if slow and (
            not slow_first
            or (context is not None and context.partitionId() == 0 and context.attemptNumber() == 0)
        ):
            time.sleep(slow)
        if fail_first and seen["rows"] == 120 and context is not None:
            if context.attemptNumber() == 0:
                time.sleep(2)  # let the writer send what it has, then die without a word
                os._exit(17)
        return value

    return passthrough


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["stream", "drain", "batch", "batch+drain"])
    parser.add_argument("bootstrap")
    parser.add_argument("source")
    parser.add_argument("sink")
    parser.add_argument("checkpoint")
    parser.add_argument("prefix")
    parser.add_argument("--fail-first", action="store_true")
    parser.add_argument("--master", default="local[2,4]")
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--slow-first-partition", action="store_true")
    parser.add_argument("--conf", action="append", default=[])
    return parser.parse_args()


def _write(spark: Any, args: argparse.Namespace, mode: str, sink: str, prefix: str) -> bool:
    """One write of SOURCE to ``sink`` in ``mode``; False if a streaming query failed."""
    reader = spark.readStream if mode != "batch" else spark.read
    df = (
        reader.format("aiokafkawire")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.source)
        .option("startingOffsets", "earliest")
        .options(**({} if mode == "batch" else {"maxOffsetsPerTrigger": "400"}))
        .load()
        .selectExpr("key", "value")
    )
    if args.fail_first or args.slow:
        from pyspark.sql import functions as F

        passthrough = F.udf(
            _passthrough(args.fail_first, args.slow, args.slow_first_partition),
            "binary",
            useArrow=False,
        )
        df = df.select("key", passthrough("value").alias("value"))
    options = {
        "kafka.bootstrap.servers": args.bootstrap,
        "topic": sink,
        "exactlyOnce": "true",
        "transactionalIdPrefix": prefix,
        # Above the slowest task of the tests (a slow first attempt, a loaded machine).
        "transactionTimeoutMs": "300000",
    }
    if mode == "batch":
        writer = df.write.format("aiokafkawire").mode("append")
        for key, value in options.items():
            writer = writer.option(key, value)
        print("READY", flush=True)
        writer.save()
        return True
    checkpoint = args.checkpoint if "+" not in args.mode else f"{args.checkpoint}/{mode}"
    writer = df.writeStream.format("aiokafkawire").option("checkpointLocation", checkpoint)
    for key, value in options.items():
        writer = writer.option(key, value)
    if mode == "drain":
        query = writer.trigger(availableNow=True).start()
    else:
        query = writer.trigger(processingTime="500 milliseconds").start()
    print("READY", flush=True)
    query.awaitTermination()
    if query.exception() is not None:
        print(f"FAILED {query.exception()}", flush=True)
        return False
    return True


def main() -> None:
    args = _args()
    from aiokafkawire.spark import register
    from aiokafkawire.testing.spark import local_spark_session

    config = dict(item.split("=", 1) for item in args.conf)
    config.setdefault("spark.sql.execution.arrow.maxRecordsPerBatch", "10")
    config["spark.master"] = args.master
    spark = local_spark_session(app_name="eos-driver", config=config)
    register(spark)
    modes = args.mode.split("+")
    sinks, prefixes = args.sink.split(","), args.prefix.split(",")
    assert len(sinks) == len(prefixes) == len(modes), (modes, sinks, prefixes)
    for mode, sink, prefix in zip(modes, sinks, prefixes, strict=True):
        if not _write(spark, args, mode, sink, prefix):
            sys.exit(1)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
