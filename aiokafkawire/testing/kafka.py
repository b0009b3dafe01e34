"""Run real Apache Kafka (KRaft mode) as child JVM processes for tests: :class:`KafkaCluster`.

The broker's jars come from Maven Central (``org.apache.kafka:kafka_2.13``), resolved once into
``~/.cache/aiokafkawire/kafka/<version>/`` (see :mod:`aiokafkawire.testing._maven`). Each node is
one JVM in combined mode (broker and KRaft controller), so a 3-node cluster is three processes
with a three-voter quorum: killing one keeps a majority. Log directories live in a temporary
directory removed at :meth:`KafkaCluster.stop`; every JVM is stopped by pid, and the parent-death
signal stops them if the test process itself is killed.

Listeners: ``PLAINTEXT`` always (brokers talk to each other on it, and with an authorizer its
anonymous principal is a super user, for the fixture's own admin work); optionally ``SSL``,
``SASL_PLAINTEXT`` and ``SASL_SSL``. SASL listeners enable PLAIN (users from ``sasl_users`` plus
``admin``), SCRAM-SHA-256/512 (credentials created at run time, e.g. with
``Admin.alter_user_scram_credentials``) and OAUTHBEARER with Kafka's unsecured JWS validator.
TLS certificates come from a ``trustme`` CA made per cluster.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from aiokafkawire.errors import ConfigError, KafkaTimeoutError
from aiokafkawire.testing._errors import BrokerStartError, BrokerUnavailableError
from aiokafkawire.testing._maven import find_java, resolve_jars
from aiokafkawire.testing._probe import probe_api_versions
from aiokafkawire.testing._process import (
    ChildProcessServer,
    die_with_this_process,
    stop_until_stopped,
    terminate,
    time_left_to_start,
)
from aiokafkawire.testing.tansu import find_free_port

__all__ = [
    "KAFKA_3_VERSIONS",
    "KAFKA_4_VERSIONS",
    "KafkaCluster",
    "kafka_jars",
    "newest_kafka_version",
]

# Candidates, newest first: the fixture uses the first that Maven resolves (cached afterwards).
KAFKA_4_VERSIONS: tuple[str, ...] = ("4.4.0", "4.3.1", "4.2.1", "4.1.2", "4.0.2")
# 3.9 is the last line serving the oldest protocol versions (Kafka 4.0 removed them, KIP-896).
KAFKA_3_VERSIONS: tuple[str, ...] = ("3.9.2", "3.9.1", "3.9.0")

LISTENER_KINDS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
ADMIN_USER = "admin"
ADMIN_PASSWORD = "admin-secret"  # a throwaway test broker's credential
_CONTROLLER = "CONTROLLER"
_LOG_TAIL_LINES = 40

# Small heaps and one GC thread: three brokers must fit on 2 cores and a few GB.
DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms96m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xss512k",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
)

# Broker settings that make a test cluster quick without changing what clients see: no wait
# before a group's first rebalance, fewer internal-topic partitions to create on first use.
_TEST_DEFAULTS: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    # Tests use short session timeouts (Tansu's first join waits half of it); Kafka's floor is 6 s.
    "group.min.session.timeout.ms": "1000",
    # KIP-848 groups: heartbeats every 0.5 s instead of 5 s, so assignments settle quickly.
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    # Share groups (KIP-932) likewise: heartbeats (which carry assignments) every 0.5 s instead
    # of 5 s, 6 s sessions instead of 45 s, and group-level record locks as short as 1 s allowed
    # (15 s is Kafka's floor) for the lock-expiry tests.
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.session.timeout.ms": "6000",
    "group.share.min.session.timeout.ms": "3000",
    "group.share.min.record.lock.duration.ms": "1000",
    # Client quotas measure over (num - 1) windows: 1 s instead of 10 s, so a test's quota
    # throttles after a second's worth of bytes, for seconds rather than tens of seconds.
    "quota.window.size.seconds": "1",
    "quota.window.num": "2",
    "offsets.topic.num.partitions": "10",
    "transaction.state.log.num.partitions": "10",
    "share.coordinator.state.topic.num.partitions": "3",
    "num.partitions": "1",
    # No time retention: Kafka deletes records whose timestamp is older than retention.ms (7 days)
    # at each retention check (30 s after start, then every 5 min), active segment included, so a
    # test writing fixed old timestamps lost its records to whichever check fell mid-test.
    "log.retention.ms": "-1",
    "log.flush.interval.messages": str(2**63 - 1),
    "num.network.threads": "2",
    "num.io.threads": "4",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
}


def _slf4j_binding(version: str) -> dict[str, str]:
    if version.startswith("3."):
        return {
            "slf4j.binding.groupId": "org.slf4j",
            "slf4j.binding.artifactId": "slf4j-reload4j",
            "slf4j.binding.version": "1.7.36",
        }
    return {
        "slf4j.binding.groupId": "org.apache.logging.log4j",
        "slf4j.binding.artifactId": "log4j-slf4j-impl",
        "slf4j.binding.version": "2.25.5",
    }


def kafka_jars(version: str) -> Path:
    """The directory of Apache Kafka ``version``'s broker jars, resolved by Maven on first use."""
    return resolve_jars(
        "kafka-broker.pom.xml",
        "kafka",
        version,
        {"kafka.version": version, **_slf4j_binding(version)},
    )


_newest: dict[str, str] = {}


def newest_kafka_version(line: str = "4") -> str:
    """The newest version of the Kafka ``line`` ("4" or "3") whose jars resolve here."""
    if line in _newest:
        return _newest[line]
    candidates = KAFKA_4_VERSIONS if line == "4" else KAFKA_3_VERSIONS
    problems = []
    for version in candidates:
        try:
            kafka_jars(version)
        except BrokerUnavailableError as exc:
            problems.append(f"{version}: {exc}")
            if "no Maven" in str(exc):
                break
            continue
        _newest[line] = version
        return version
    raise BrokerUnavailableError(
        f"no Apache Kafka {line}.x could be resolved; " + "; ".join(problems)
    )


def _random_cluster_id() -> str:
    # Kafka's Uuid text form: URL-safe base64 of 16 bytes, unpadded; never starting with '-'
    # (the storage tool's argument parser would read it as an option).
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _finalize(processes: list[subprocess.Popen[bytes]], workdir: str) -> None:
    # Safety net for a cluster that was never stopped (garbage collection or interpreter exit).
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


@dataclass
class _Node:
    node_id: int
    directory: Path
    ports: dict[str, int]
    process: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None
    paused: bool = False

    @property
    def log_path(self) -> Path:
        return self.directory / "broker.log"

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"


class KafkaCluster(ChildProcessServer):  # long: listener, TLS, SASL and ACL set-up
    """Apache Kafka brokers (KRaft, combined broker+controller nodes) as child processes.

    Use it as a context manager, synchronous or asynchronous::

        with KafkaCluster(brokers=3) as cluster:
            producer = Producer(bootstrap_servers=cluster.bootstrap_servers)

    ``version`` is a Kafka release ("4.4.0", "3.9.2"), ``"4"``/``"3"`` for the newest of that
    line that resolves, or ``None`` for the newest 4.x. ``config`` adds or overrides broker
    properties. ``listeners`` picks the listeners beside PLAINTEXT; ``sasl_users`` adds PLAIN users
    (``admin``/``admin-secret`` always exists); ``ssl_client_auth`` is ``"none"``, ``"requested"``
    or ``"required"`` on the SSL listeners; ``authorizer=True`` installs the ACL authorizer with
    ``User:admin`` and ``User:ANONYMOUS`` (the PLAINTEXT listener) as super users.
    ``extra_classpath`` adds directories or jars after the broker's (plugins such as
    :class:`~aiokafkawire.testing.telemetry.TelemetryRecorder`).
    """

    def __init__(
        self,
        *,
        brokers: int = 1,
        version: str | None = None,
        config: Mapping[str, str | int] | None = None,
        listeners: Sequence[str] = ("PLAINTEXT",),
        sasl_users: Mapping[str, str] | None = None,
        ssl_client_auth: str = "none",
        authorizer: bool = False,
        tls_hostnames: Sequence[str] = ("localhost", "127.0.0.1"),
        host: str = "127.0.0.1",
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
        extra_classpath: Sequence[str] = (),
        startup_timeout: float = 180.0,
        stop_timeout: float = 30.0,
    ) -> None:
        """Configure (but do not start) the cluster; see the class docstring."""
        if brokers < 1:
            raise ConfigError("brokers must be at least 1")
        unknown = [name for name in listeners if name not in LISTENER_KINDS]
        if unknown:
            raise ConfigError(f"unknown listener(s) {unknown}; choose from {LISTENER_KINDS}")
        if ssl_client_auth not in ("none", "requested", "required"):
            raise ConfigError("ssl_client_auth must be 'none', 'requested' or 'required'")
        self.num_brokers = brokers
        self._requested_version = version
        self.version: str | None = None
        self._extra_config = {key: str(value) for key, value in (config or {}).items()}
        self.listener_names: tuple[str, ...] = tuple(dict.fromkeys(["PLAINTEXT", *listeners]))
        self.sasl_users = {ADMIN_USER: ADMIN_PASSWORD, **dict(sasl_users or {})}
        self.ssl_client_auth = ssl_client_auth
        self.authorizer = authorizer
        self.tls_hostnames = tuple(tls_hostnames)
        self.host = host
        self.jvm_options = tuple(jvm_options)
        self.extra_classpath = tuple(extra_classpath)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.cluster_id = _random_cluster_id()
        self._workdir: str | None = None
        self._nodes: dict[int, _Node] = {}
        self._java: str | None = None
        self._classpath: str | None = None
        self._finalizer: weakref.finalize[..., KafkaCluster] | None = None
        # Every JVM ever started, shared with the finalizer (the safety net at exit).
        self._processes: list[subprocess.Popen[bytes]] = []
        self.ca_path: str | None = None
        self.client_cert_path: str | None = None
        self.client_key_path: str | None = None
        self.api_versions: dict[int, tuple[int, int]] = {}

    # ----------------------------------------------------------------------------- properties

    @property
    def broker_ids(self) -> list[int]:
        """The node ids (1..N)."""
        return list(range(1, self.num_brokers + 1))

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of every node's PLAINTEXT listener, comma-separated."""
        return self.bootstrap_for("PLAINTEXT")

    def bootstrap_for(self, listener: str) -> str:
        """Bootstrap string of ``listener`` ("SSL", "SASL_PLAINTEXT", ...) on every node."""
        if listener not in self.listener_names:
            raise ConfigError(f"listener {listener} is not configured: {self.listener_names}")
        self._require_started()
        return ",".join(f"{self.host}:{node.ports[listener]}" for node in self._nodes.values())

    def address(self, node_id: int, listener: str = "PLAINTEXT") -> tuple[str, int]:
        """``(host, port)`` of one node's listener."""
        return self.host, self._node(node_id).ports[listener]

    def pid(self, node_id: int) -> int | None:
        """Process id of a node's JVM, or ``None`` when it is not running."""
        process = self._node(node_id).process
        return process.pid if process is not None and process.poll() is None else None

    def running(self, node_id: int) -> bool:
        """Whether a node's JVM is alive (a paused one counts as alive)."""
        return self.pid(node_id) is not None

    @property
    def log_dir(self) -> Path:
        """The temporary directory holding every node's data, configuration and log."""
        self._require_started()
        assert self._workdir is not None
        return Path(self._workdir)

    def logs(self, node_id: int) -> str:
        """Everything node ``node_id`` wrote to its log so far (all of its runs)."""
        path = self._node(node_id).log_path
        return path.read_text(errors="replace") if path.exists() else ""

    # -------------------------------------------------------------------------- start / stop

    def start(self) -> KafkaCluster:
        """Resolve the jars, format every node, start them and wait until all serve clients.

        Raises :class:`BrokerUnavailableError` when Java or Maven is missing or the version
        cannot be resolved, :class:`BrokerStartError` when a node exits early, and
        :class:`KafkaTimeoutError` past ``startup_timeout``; both name the node's log file and
        show its last lines.
        """
        if self._workdir is not None:
            raise RuntimeError("KafkaCluster is already started")
        deadline = time.monotonic() + self.startup_timeout
        self._java = find_java()
        self.version = self._resolve_version()
        self._classpath = os.pathsep.join(
            [str(kafka_jars(self.version) / "*"), *self.extra_classpath]
        )
        self._workdir = tempfile.mkdtemp(prefix="aiokafkawire-kafka-")
        self._finalizer = weakref.finalize(self, _finalize, self._processes, self._workdir)
        try:
            self._allocate_nodes()
            if any(name.endswith("SSL") for name in self.listener_names):
                self._make_certificates()
            for node in self._nodes.values():
                node.config_path.write_text(self._server_properties(node))
            self._format_storage(deadline)
            for node in self._nodes.values():
                self._launch(node)
            for node in self._nodes.values():
                self._wait_serving(node, deadline)
            self._wait_registered(self.num_brokers, deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL past ``stop_timeout``) and remove the log
        directories; idempotent."""
        nodes = list(self._nodes.values())
        stoppers = [
            threading.Thread(target=self._stop_node, args=(node, self.stop_timeout))
            for node in nodes
        ]
        for thread in stoppers:
            thread.start()
        for thread in stoppers:
            thread.join()
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        self._nodes = {}

    # ------------------------------------------------------------------------- node control

    def stop_broker(self, node_id: int, timeout: float | None = None) -> None:
        """Controlled shutdown of one node (SIGTERM; SIGKILL if it takes over ``timeout`` s)."""
        self._stop_node(self._node(node_id), self.stop_timeout if timeout is None else timeout)

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL one node: no controlled shutdown, no flush."""
        node = self._node(node_id)
        if node.process is not None and node.process.poll() is None:
            node.process.kill()
            node.process.wait(timeout=30)
        node.paused = False
        self._close_log(node)

    def pause_broker(self, node_id: int) -> None:
        """SIGSTOP one node: its sockets stay open but nothing answers.

        Returns once every thread of the JVM has stopped, not merely once the signal is sent.
        """
        node = self._node(node_id)
        if node.process is None or node.process.poll() is not None:
            raise BrokerStartError(f"Kafka node {node_id} is not running")
        node.paused = True  # from the signal on: stopping the node sends SIGCONT first
        stop_until_stopped(node.process)

    def resume_broker(self, node_id: int) -> None:
        """SIGCONT a paused node."""
        node = self._node(node_id)
        if node.process is not None and node.process.poll() is None:
            node.process.send_signal(signal.SIGCONT)
        node.paused = False

    def start_broker(self, node_id: int, timeout: float | None = None) -> None:
        """Start a stopped or killed node again (same ports and data) and wait until it serves
        clients and is registered with the controller quorum."""
        node = self._node(node_id)
        if node.process is not None and node.process.poll() is None:
            raise BrokerStartError(f"Kafka node {node_id} is already running")
        deadline = time.monotonic() + (self.startup_timeout if timeout is None else timeout)
        self._launch(node)
        self._wait_serving(node, deadline)
        self._wait_registered(len([n for n in self._nodes.values() if self._alive(n)]), deadline)

    # ---------------------------------------------------------------------------- internals

    def _require_started(self) -> None:
        if not self._nodes:
            raise RuntimeError("KafkaCluster is not started")

    def _node(self, node_id: int) -> _Node:
        self._require_started()
        try:
            return self._nodes[node_id]
        except KeyError:
            raise ConfigError(f"no Kafka node {node_id}; nodes are {self.broker_ids}") from None

    @staticmethod
    def _alive(node: _Node) -> bool:
        return node.process is not None and node.process.poll() is None

    def _resolve_version(self) -> str:
        requested = self._requested_version
        if requested is None or requested in ("4", "3"):
            return newest_kafka_version(requested or "4")
        kafka_jars(requested)
        return requested

    def _allocate_nodes(self) -> None:
        assert self._workdir is not None
        taken: set[int] = set()

        def free_port() -> int:
            while True:
                port = find_free_port(self.host)
                if port not in taken:
                    taken.add(port)
                    return port

        for node_id in self.broker_ids:
            directory = Path(self._workdir) / f"node-{node_id}"
            (directory / "data").mkdir(parents=True)
            ports = {name: free_port() for name in (*self.listener_names, _CONTROLLER)}
            self._nodes[node_id] = _Node(node_id, directory, ports)

    def _make_certificates(self) -> None:
        try:
            import trustme
            from cryptography.hazmat.primitives import serialization
        except ImportError as exc:
            raise BrokerUnavailableError(
                "TLS listeners need trustme and cryptography (pip install trustme)"
            ) from exc
        assert self._workdir is not None
        tls = Path(self._workdir) / "tls"
        tls.mkdir()
        ca = trustme.CA(key_type=trustme.KeyType.RSA)
        server = ca.issue_cert(*self.tls_hostnames, key_type=trustme.KeyType.RSA)
        client = ca.issue_cert("client.aiokafkawire.test", key_type=trustme.KeyType.RSA)

        def pkcs8(pem: bytes) -> bytes:
            # Kafka's PEM key store reads PKCS#8 keys only; trustme writes traditional RSA keys.
            key = serialization.load_pem_private_key(pem, password=None)
            return key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )

        ca.cert_pem.write_to_path(str(tls / "ca.pem"))
        server_pem = pkcs8(server.private_key_pem.bytes()) + b"".join(
            blob.bytes() for blob in server.cert_chain_pems
        )
        (tls / "server.pem").write_bytes(server_pem)
        (tls / "client-cert.pem").write_bytes(
            b"".join(blob.bytes() for blob in client.cert_chain_pems)
        )
        (tls / "client-key.pem").write_bytes(pkcs8(client.private_key_pem.bytes()))
        self.ca_path = str(tls / "ca.pem")
        self.client_cert_path = str(tls / "client-cert.pem")
        self.client_key_path = str(tls / "client-key.pem")

    def _server_properties(self, node: _Node) -> str:  # long: one line per broker property
        n = self.num_brokers
        voters = ",".join(
            f"{other.node_id}@{self.host}:{other.ports[_CONTROLLER]}"
            for other in self._nodes.values()
        )
        listeners = [f"{name}://{self.host}:{node.ports[name]}" for name in self.listener_names]
        protocol_map = [f"{name}:{name}" for name in self.listener_names]
        props: dict[str, str] = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": _CONTROLLER,
            "listeners": ",".join(
                [*listeners, f"{_CONTROLLER}://{self.host}:{node.ports[_CONTROLLER]}"]
            ),
            "advertised.listeners": ",".join(listeners),
            "listener.security.protocol.map": ",".join([*protocol_map, f"{_CONTROLLER}:PLAINTEXT"]),
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(node.directory / "data"),
            "offsets.topic.replication.factor": str(min(n, 3)),
            "transaction.state.log.replication.factor": str(min(n, 3)),
            "transaction.state.log.min.isr": str(min(n, 2)),
            "share.coordinator.state.topic.replication.factor": str(min(n, 3)),
            "share.coordinator.state.topic.min.isr": str(min(n, 2)),
            **_TEST_DEFAULTS,
        }
        if any(name.endswith("SSL") for name in self.listener_names):
            assert self.ca_path is not None
            props.update(
                {
                    "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": str(Path(self.ca_path).parent / "server.pem"),
                    "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": self.ca_path,
                    "ssl.client.auth": self.ssl_client_auth,
                    "ssl.endpoint.identification.algorithm": "https",
                }
            )
        sasl_listeners = [name for name in self.listener_names if name.startswith("SASL")]
        if sasl_listeners:
            props["sasl.enabled.mechanisms"] = ",".join(SASL_MECHANISMS)
            plain_users = " ".join(
                f'user_{user}="{password}"' for user, password in self.sasl_users.items()
            )
            scram = "org.apache.kafka.common.security.scram.ScramLoginModule"
            modules = {
                "plain": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{ADMIN_USER}" password="{ADMIN_PASSWORD}" {plain_users};',
                "scram-sha-256": f"{scram} required;",
                "scram-sha-512": f"{scram} required;",
                "oauthbearer": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
                f' required unsecuredLoginStringClaim_sub="{ADMIN_USER}";',
            }
            for listener in sasl_listeners:
                for mechanism, module in modules.items():
                    props[f"listener.name.{listener.lower()}.{mechanism}.sasl.jaas.config"] = module
        if self.authorizer:
            props["authorizer.class.name"] = (
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
            )
            props["super.users"] = f"User:{ADMIN_USER};User:ANONYMOUS"
        props.update(self._extra_config)
        return "".join(f"{key}={value}\n" for key, value in props.items())

    def _jvm_command(self, main_class: str, *args: str) -> list[str]:
        assert self._java is not None and self._classpath is not None and self._workdir is not None
        logging_config = self._write_logging_config()
        return [
            self._java,
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={logging_config[0]}",
            # Keep logging through the broker's own shutdown hook (log4j 2 would stop first).
            "-Dlog4j2.shutdownHookEnabled=false",
            f"-Dlog4j.configuration=file:{logging_config[1]}",
            "-cp",
            self._classpath,
            main_class,
            *args,
        ]

    def _write_logging_config(self) -> tuple[Path, Path]:
        assert self._workdir is not None
        log4j2 = Path(self._workdir) / "log4j2.properties"
        log4j1 = Path(self._workdir) / "log4j.properties"
        if not log4j2.exists():
            # INFO from the broker, WARN from its chattiest parts; to stdout, which is the log.
            log4j2.write_text(
                "status = warn\n"
                "appender.out.type = Console\n"
                "appender.out.name = OUT\n"
                "appender.out.layout.type = PatternLayout\n"
                "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
                "rootLogger.level = INFO\n"
                "rootLogger.appenderRef.out.ref = OUT\n"
                "logger.state.name = state.change.logger\n"
                "logger.state.level = WARN\n"
                "logger.log.name = kafka.log\n"
                "logger.log.level = WARN\n"
                "logger.storage.name = org.apache.kafka.storage\n"
                "logger.storage.level = WARN\n"
            )
            log4j1.write_text(
                "log4j.rootLogger=INFO, out\n"
                "log4j.appender.out=org.apache.log4j.ConsoleAppender\n"
                "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
                "log4j.logger.state.change.logger=WARN\n"
                "log4j.logger.kafka.log=WARN\n"
            )
        return log4j2, log4j1

    def _format_storage(self, deadline: float) -> None:
        running: list[tuple[_Node, subprocess.Popen[bytes]]] = []
        for node in self._nodes.values():
            command = self._jvm_command(
                "kafka.tools.StorageTool",
                "format",
                "-t",
                self.cluster_id,
                "-c",
                str(node.config_path),
                "--ignore-formatted",
            )
            running.append(
                (
                    node,
                    subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                    ),
                )
            )
        problems = []
        for node, process in running:
            try:
                output, _ = process.communicate(timeout=max(deadline - time.monotonic(), 1.0))
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
                problems.append(f"node {node.node_id}: storage format timed out")
                continue
            if process.returncode != 0:
                problems.append(
                    f"node {node.node_id}: storage format exited {process.returncode}:\n"
                    + output.decode(errors="replace")[-3000:]
                )
        if problems:
            raise BrokerStartError("Kafka storage format failed: " + "\n".join(problems))

    def _launch(self, node: _Node) -> None:
        self._close_log(node)
        log = open(node.log_path, "ab")  # kept open while the JVM runs
        try:
            process = subprocess.Popen(
                die_with_this_process() + self._jvm_command("kafka.Kafka", str(node.config_path)),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                close_fds=True,
                cwd=node.directory,
            )
        except OSError as exc:
            log.close()
            raise BrokerStartError(f"cannot execute {self._java}: {exc}") from exc
        node.process, node.log, node.paused = process, log, False
        self._processes.append(process)

    def _failure_detail(self, node: _Node) -> str:
        lines = self.logs(node.node_id).splitlines()[-_LOG_TAIL_LINES:]
        return f"log file {node.log_path}; last lines:\n" + "\n".join(lines)

    def _wait_serving(self, node: _Node, deadline: float) -> None:
        port = node.ports["PLAINTEXT"]
        delay = 0.1
        last_problem: BaseException | None = None
        name = f"Kafka node {node.node_id} ({self.version})"
        while True:
            assert node.process is not None
            remaining = time_left_to_start(
                node.process,
                deadline,
                lambda code: (
                    f"{name} exited with status {code} before serving on port {port}; "
                    f"{self._failure_detail(node)}"
                ),
                lambda: (  # called at once, in this iteration
                    f"{name} did not answer ApiVersions on {self.host}:{port} within "
                    f"{self.startup_timeout:.0f}s (last problem: {last_problem!r}); "  # noqa: B023
                    f"{self._failure_detail(node)}"
                ),
            )
            try:
                info = probe_api_versions(self.host, port, version=3, timeout=min(5.0, remaining))
            except OSError as exc:
                last_problem = exc
            else:
                if info.error_code == 0 and info.api_versions:
                    self.api_versions = info.api_versions
                    return
                last_problem = BrokerStartError(f"ApiVersions error {info.error_code}")
            time.sleep(min(delay, max(deadline - time.monotonic(), 0)))
            delay = min(delay * 1.5, 1.0)

    def _wait_registered(self, expected: int, deadline: float) -> None:
        """Wait until every running node sees ``expected`` unfenced brokers in its metadata."""
        nodes = [node for node in self._nodes.values() if self._alive(node) and not node.paused]
        for node in nodes:
            seen: Iterable[int] = ()
            while True:
                remaining = deadline - time.monotonic()
                try:
                    seen = _metadata_broker_ids(self.host, node.ports["PLAINTEXT"], timeout=5.0)
                except OSError:
                    seen = ()
                if len(list(seen)) >= expected:
                    break
                if remaining <= 0:
                    raise KafkaTimeoutError(
                        f"Kafka node {node.node_id} sees brokers {sorted(seen)} after "
                        f"{self.startup_timeout:.0f}s, expected {expected}; "
                        f"{self._failure_detail(node)}"
                    )
                time.sleep(0.2)

    def _stop_node(self, node: _Node, grace: float) -> None:
        if node.process is not None:
            terminate(node.process, grace)
        node.paused = False
        self._close_log(node)

    @staticmethod
    def _close_log(node: _Node) -> None:
        if node.log is not None:
            node.log.close()
            node.log = None

    def __repr__(self) -> str:
        state = self.bootstrap_servers if self._nodes else "not started"
        version = self.version or self._requested_version
        return f"<KafkaCluster {version} x{self.num_brokers} {state}>"


def _metadata_broker_ids(host: str, port: int, timeout: float) -> list[int]:
    """The broker ids in a Metadata v12 answer (no topics) from ``host:port``."""
    from aiokafkawire.protocol.framing import KafkaFraming
    from aiokafkawire.protocol.messages.metadata import MetadataRequest

    framing = KafkaFraming(client_id="aiokafkawire-kafka-fixture")
    _, frame, _ = framing.send_request(MetadataRequest(topics=[]), 12)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(frame)
        while True:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("broker closed the connection")
            events = framing.receive_data(data)
            if events:
                response = events[0].response
                return [broker.node_id for broker in response.brokers]
