"""Spark pipelines on aiokafkawire: a PySpark data source and sink for Kafka (extra ``spark``).

::

    from aiokafkawire.spark import register
    register(spark)
    df = (spark.read.format("aiokafkawire")
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "events")
          .load())

The options and the schema are those of Spark's built-in ``kafka`` format; switching is a change
of the format name.  Each Spark task reads its offset range (or writes its rows) with its own
aiokafkawire client, so nothing has to be fetched from a Maven repository at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiokafkawire.spark._options import KafkaOptions, parse_options

if TYPE_CHECKING:
    from aiokafkawire.spark._source import KafkaDataSource

__all__ = [
    "FORMAT_NAME",
    "PUSHDOWN_CONF",
    "KafkaDataSource",
    "KafkaOptions",
    "parse_options",
    "register",
]

FORMAT_NAME = "aiokafkawire"


#: Spark refuses a Python reader that accepts filters while this is off (pyspark 4.1+).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register the ``aiokafkawire`` format with a ``SparkSession``.

    Also turns on ``spark.sql.python.filterPushdown.enabled`` in the session: the batch reader
    accepts filters on ``topic``, ``partition``, ``offset`` and ``timestamp`` (see
    ``docs/spark.md``), and Spark refuses such a reader while the setting is off.
    """
    from aiokafkawire.spark._source import KafkaDataSource

    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(KafkaDataSource)


def __getattr__(name: str) -> Any:
    if name == "KafkaDataSource":
        from aiokafkawire.spark._source import KafkaDataSource

        return KafkaDataSource
    raise AttributeError(f"module 'aiokafkawire.spark' has no attribute {name!r}")
