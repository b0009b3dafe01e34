"""Local Spark for tests, the example and the benchmarks: sessions and Spark's JVM Kafka connector.

:func:`local_spark_session` starts a small ``local[N]`` session whose Python workers run this
interpreter and import this checkout of aiokafkawire.  :func:`spark_kafka_connector_jars` resolves
Spark's own Kafka connector (``org.apache.spark:spark-sql-kafka-0-10_2.13``) at the installed
pyspark's version with Maven, once, into ``~/.cache/aiokafkawire/spark-kafka/<version>/``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing._maven import find_java, resolve_jars
from aiokafkawire.testing.tansu import find_free_port

__all__ = [
    "StandaloneCluster",
    "local_spark_session",
    "spark_kafka_connector_jars",
    "spark_version",
]

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


def _python_env() -> dict[str, str]:
    """Environment for Spark processes: this interpreter, this checkout first on the path."""
    import aiokafkawire

    root = str(Path(aiokafkawire.__file__).resolve().parent.parent)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        paths.insert(0, root)
    return {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(paths),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


class StandaloneCluster:
    """A Spark standalone cluster on loopback: one master and ``workers`` workers, each its own
    process (``spark-class`` of the installed pyspark), each worker with its own work directory
    (executors run there, so a task's working directory tells which worker ran it).

    ``start()`` waits until every worker has registered; ``stop()`` ends the processes it
    started (SIGTERM, then SIGKILL) and removes the directories.  Use as a context manager.

    With ``distinct_hosts``, worker ``n`` binds to loopback address ``127.0.0.<n + 2>`` instead
    of ``127.0.0.1``, so Spark sees the workers as separate hosts: it never runs a speculative
    copy of a task on a host where the task already runs, so speculation needs this (Linux
    routes all of ``127.0.0.0/8`` to loopback; other systems may need aliases).
    """

    def __init__(
        self, *, workers: int = 2, cores: int = 1, memory: str = "1g", distinct_hosts: bool = False
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.worker_hosts = [
            f"127.0.0.{n + 2}" if distinct_hosts else "127.0.0.1" for n in range(workers)
        ]
        self.port = 0
        self.url = ""
        self._processes: list[subprocess.Popen[bytes]] = []
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self.worker_dirs: list[Path] = []

    def _spark_class(
        self, *args: str, log: Path, host: str = "127.0.0.1"
    ) -> subprocess.Popen[bytes]:
        import pyspark

        spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
        env = _python_env()
        env["SPARK_HOME"] = str(Path(pyspark.__file__).parent)
        env["SPARK_LOCAL_IP"] = host  # the executors a worker starts bind there too
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(spark_class), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self._processes.append(process)
        return process

    def start(self, timeout: float = 180.0) -> StandaloneCluster:
        """Start master and workers; raise :class:`BrokerUnavailableError` if they do not come."""
        find_java()
        self._dir = tempfile.TemporaryDirectory(prefix="aiokafkawire-spark-cluster-")
        root = Path(self._dir.name)
        self.port = find_free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        master_log = root / "master.log"
        try:
            self._spark_class(
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1",
                "--port", str(self.port),
                "--webui-port", str(find_free_port()),
                log=master_log,
            )  # fmt: skip
            for number in range(self.workers):
                work = root / f"worker-{number}"
                work.mkdir()
                self.worker_dirs.append(work)
                self._spark_class(
                    "org.apache.spark.deploy.worker.Worker",
                    "--host", self.worker_hosts[number],
                    "--cores", str(self.cores),
                    "--memory", self.memory,
                    "--work-dir", str(work),
                    "--webui-port", str(find_free_port()),
                    self.url,
                    log=root / f"worker-{number}.log",
                    host=self.worker_hosts[number],
                )  # fmt: skip
            self._wait_registered(master_log, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_registered(self, master_log: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = master_log.read_text(errors="replace") if master_log.exists() else ""
            if text.count("Registering worker") >= self.workers:
                return
            dead = [p.args for p in self._processes if p.poll() is not None]
            if dead:
                raise BrokerUnavailableError(f"a Spark cluster process exited: {dead}\n{text}")
            time.sleep(0.5)
        raise BrokerUnavailableError(
            f"the Spark workers did not register within {timeout:.0f} s at {self.url}"
        )

    def session(self, *, app_name: str = "aiokafkawire-cluster", jars: list[str] | None = None,
                config: dict[str, str] | None = None) -> Any:  # fmt: skip
        """A SparkSession of this cluster: one executor per worker, ``cores`` cores each."""
        os.environ.update(
            {k: v for k, v in _python_env().items() if k.startswith(("PYSPARK", "PYTHONPATH"))}
        )
        settings = {
            "spark.master": self.url,
            "spark.executor.cores": str(self.cores),
            "spark.cores.max": str(self.cores * self.workers),
            "spark.executor.memory": "512m",
            "spark.executorEnv.PYTHONPATH": _python_env()["PYTHONPATH"],
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
            **(config or {}),
        }
        return local_spark_session(app_name=app_name, jars=jars, config=settings)

    def stop(self) -> None:
        """Stop every process this cluster started and remove its directories."""
        for process in reversed(self._processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in reversed(self._processes):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(10)
        self._processes.clear()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


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
