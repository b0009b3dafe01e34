"""Local Spark for tests, the example and the benchmarks: sessions and Spark's JVM Kafka connector.

:func:`local_spark_session` starts a small ``local[N]`` session whose Python workers run this
interpreter and import this checkout of aiokafkawire.  :func:`spark_kafka_connector_jars` resolves
Spark's own Kafka connector (``org.apache.spark:spark-sql-kafka-0-10_2.13``) at the installed
pyspark's version with Maven, once, into ``~/.cache/aiokafkawire/spark-kafka/<version>/``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing._maven import find_java, resolve_jars

__all__ = ["local_spark_session", "spark_kafka_connector_jars", "spark_version"]

_JAR_VERSION = re.compile(r"-\d[\w.+-]*\.jar$")


def spark_version() -> str:
    """The installed pyspark's version (``"4.2.0"``)."""
    import pyspark

    return str(pyspark.__version__)


def _artifact(jar_name: str) -> str:
    return _JAR_VERSION.sub("", jar_name)


def spark_kafka_connector_jars(version: str | None = None) -> list[str]:
    """Paths of Spark's Kafka connector jars for Spark ``version`` (default: the installed one).

    Jars that Spark already ships (Scala, Hadoop client, compression libraries, logging) are left
    out, as ``--packages`` would.  When Maven Central serves no connector for a patch release,
    the ``.0`` release of the same line is used.  Raises :class:`BrokerUnavailableError` without
    Java or Maven, or when neither version resolves.
    """
    find_java()
    wanted = version or spark_version()
    candidates = [wanted]
    major_minor = ".".join(wanted.split(".")[:2])
    if f"{major_minor}.0" != wanted:
        candidates.append(f"{major_minor}.0")
    failure: BrokerUnavailableError | None = None
    for candidate in candidates:
        try:
            directory = resolve_jars(
                "spark-kafka.pom.xml", "spark-kafka", candidate, {"spark.version": candidate}
            )
            break
        except BrokerUnavailableError as exc:
            failure = exc
    else:
        assert failure is not None
        raise failure
    import pyspark

    shipped = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(str(jar) for jar in directory.glob("*.jar") if _artifact(jar.name) not in shipped)


def local_spark_session(
    *,
    app_name: str = "aiokafkawire",
    cores: int = 2,
    jars: list[str] | None = None,
    driver_memory: str = "1g",
    config: dict[str, str] | None = None,
) -> Any:
    """A new ``local[cores]`` SparkSession on loopback, quiet, without UI.

    Spark starts its Python workers with ``$PYSPARK_PYTHON`` (else ``python3`` from PATH): it is
    set to this interpreter, and this checkout goes first on the workers' ``PYTHONPATH``.
    """
    import aiokafkawire

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    root = str(Path(aiokafkawire.__file__).resolve().parent.parent)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])

    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def require_java() -> None:
    """Raise :class:`BrokerUnavailableError` when no Java runtime is installed."""
    find_java()
