"""librdkafka's in-process mock Kafka cluster, driven through :mod:`ctypes`.

librdkafka (bundled in the ``confluent-kafka`` wheel) ships a mock cluster: N brokers listening on
loopback ports, served by librdkafka's own threads, with knobs for partition leaders, broker
outages, round-trip delays, coordinators, injected request errors and advertised API versions.
:class:`MockCluster` owns one such cluster and the ``rd_kafka_t`` handle it needs.

Lifetime and threads: librdkafka serves the brokers on its own native threads; every control call
below is a synchronous request to those threads, safe from any Python thread.  A lock serialises
control calls against :meth:`MockCluster.close`, so the C objects are never used after they are
destroyed; the ``rd_kafka_t`` stays alive until the cluster is destroyed.  Arguments passed to C
are Python ``bytes``/ctypes objects that live for the duration of the call, and librdkafka copies
what it keeps.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import glob
import importlib.util
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from aiokafkawire.errors import ConfigError
from aiokafkawire.testing._errors import BrokerUnavailableError, MockClusterError
from aiokafkawire.testing._probe import probe_api_versions
from aiokafkawire.testing._process import EndsOnExit

__all__ = ["MockCluster", "MockRequest", "find_librdkafka", "librdkafka_version"]

LIBRDKAFKA_ENV_VAR = "AIOKAFKAWIRE_LIBRDKAFKA"
_RD_KAFKA_PRODUCER = 0
_RD_KAFKA_CONF_OK = 0
_ERRSTR_SIZE = 512
# ctypes refuses calls with more than 1024 arguments; variadic (error, rtt) pairs are pushed in
# chunks well below that.
_VARARG_PAIRS_PER_CALL = 200

_c_void_p = ctypes.c_void_p
_c_char_p = ctypes.c_char_p
_c_int = ctypes.c_int
_c_int16 = ctypes.c_int16
_c_int32 = ctypes.c_int32
_c_int64 = ctypes.c_int64
_c_size_t = ctypes.c_size_t

# name -> (restype, argtypes); rd_kafka_resp_err_t is a C enum, i.e. int.
_SIGNATURES: dict[str, tuple[Any, list[Any] | None]] = {
    "rd_kafka_version": (_c_int, []),
    "rd_kafka_version_str": (_c_char_p, []),
    "rd_kafka_err2str": (_c_char_p, [_c_int]),
    "rd_kafka_err2name": (_c_char_p, [_c_int]),
    "rd_kafka_conf_new": (_c_void_p, []),
    "rd_kafka_conf_set": (_c_int, [_c_void_p, _c_char_p, _c_char_p, _c_char_p, _c_size_t]),
    "rd_kafka_conf_destroy": (None, [_c_void_p]),
    "rd_kafka_new": (_c_void_p, [_c_int, _c_void_p, _c_char_p, _c_size_t]),
    "rd_kafka_destroy": (None, [_c_void_p]),
    "rd_kafka_mock_cluster_new": (_c_void_p, [_c_void_p, _c_int]),
    "rd_kafka_mock_cluster_destroy": (None, [_c_void_p]),
    "rd_kafka_mock_cluster_bootstraps": (_c_char_p, [_c_void_p]),
    "rd_kafka_mock_clear_request_errors": (None, [_c_void_p, _c_int16]),
    "rd_kafka_mock_push_request_errors_array": (
        None,
        [_c_void_p, _c_int16, _c_size_t, ctypes.POINTER(_c_int)],
    ),
    # Variadic: (mcluster, int32 broker_id, int16 ApiKey, size_t cnt, ...(int err, int rtt_ms)).
    "rd_kafka_mock_broker_push_request_error_rtts": (_c_int, None),
    "rd_kafka_mock_broker_error_stack_cnt": (
        _c_int,
        [_c_void_p, _c_int32, _c_int16, ctypes.POINTER(_c_size_t)],
    ),
    "rd_kafka_mock_topic_set_error": (None, [_c_void_p, _c_char_p, _c_int]),
    "rd_kafka_mock_topic_create": (_c_int, [_c_void_p, _c_char_p, _c_int, _c_int]),
    "rd_kafka_mock_topic_delete": (_c_int, [_c_void_p, _c_char_p]),
    "rd_kafka_mock_partition_set_leader": (_c_int, [_c_void_p, _c_char_p, _c_int32, _c_int32]),
    "rd_kafka_mock_partition_set_follower": (_c_int, [_c_void_p, _c_char_p, _c_int32, _c_int32]),
    "rd_kafka_mock_partition_set_follower_wmarks": (
        _c_int,
        [_c_void_p, _c_char_p, _c_int32, _c_int64, _c_int64],
    ),
    "rd_kafka_mock_broker_set_down": (_c_int, [_c_void_p, _c_int32]),
    "rd_kafka_mock_broker_set_up": (_c_int, [_c_void_p, _c_int32]),
    "rd_kafka_mock_broker_set_rtt": (_c_int, [_c_void_p, _c_int32, _c_int]),
    "rd_kafka_mock_broker_set_rack": (_c_int, [_c_void_p, _c_int32, _c_char_p]),
    "rd_kafka_mock_telemetry_set_requested_metrics": (
        _c_int,
        [_c_void_p, ctypes.POINTER(_c_char_p), _c_size_t],
    ),
    "rd_kafka_mock_telemetry_set_push_interval": (_c_int, [_c_void_p, _c_int64]),
    "rd_kafka_mock_coordinator_set": (_c_int, [_c_void_p, _c_char_p, _c_char_p, _c_int32]),
    "rd_kafka_mock_set_apiversion": (_c_int, [_c_void_p, _c_int16, _c_int16, _c_int16]),
    "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [_c_void_p, _c_int32]),
    "rd_kafka_mock_start_request_tracking": (None, [_c_void_p]),
    "rd_kafka_mock_stop_request_tracking": (None, [_c_void_p]),
    "rd_kafka_mock_clear_requests": (None, [_c_void_p]),
    "rd_kafka_mock_get_requests": (
        ctypes.POINTER(_c_void_p),
        [_c_void_p, ctypes.POINTER(_c_size_t)],
    ),
    "rd_kafka_mock_request_destroy_array": (None, [ctypes.POINTER(_c_void_p), _c_size_t]),
    "rd_kafka_mock_request_id": (_c_int32, [_c_void_p]),
    "rd_kafka_mock_request_api_key": (_c_int16, [_c_void_p]),
    "rd_kafka_mock_request_timestamp": (_c_int64, [_c_void_p]),
}
# Present in librdkafka >= 2.x mock builds; the cluster works without them.
_OPTIONAL = {
    "rd_kafka_mock_topic_delete",
    "rd_kafka_mock_broker_push_request_error_rtts",
    "rd_kafka_mock_broker_error_stack_cnt",
    "rd_kafka_mock_group_initial_rebalance_delay_ms",
    "rd_kafka_mock_start_request_tracking",
    "rd_kafka_mock_stop_request_tracking",
    "rd_kafka_mock_clear_requests",
    "rd_kafka_mock_get_requests",
    "rd_kafka_mock_request_destroy_array",
    "rd_kafka_mock_request_id",
    "rd_kafka_mock_request_api_key",
    "rd_kafka_mock_request_timestamp",
    "rd_kafka_mock_broker_set_rack",
    "rd_kafka_mock_partition_set_follower_wmarks",
    "rd_kafka_mock_telemetry_set_requested_metrics",
    "rd_kafka_mock_telemetry_set_push_interval",
}


class _ErrorCodeLike(Protocol):
    code: int


ErrorCode = int | type[_ErrorCodeLike] | _ErrorCodeLike
"""A Kafka error code: an int, or an error class/instance with a ``code`` (BrokerResponseError)."""


class MockRequest(NamedTuple):
    """One request a mock broker received while request tracking was on."""

    broker_id: int
    api_key: int
    #: librdkafka's monotonic clock, microseconds
    timestamp_us: int


def find_librdkafka() -> str:
    """Locate the librdkafka shared library, preferring the one bundled with confluent-kafka.

    Order: ``$AIOKAFKAWIRE_LIBRDKAFKA``; ``confluent_kafka.libs/librdkafka*.so*`` beside the
    installed ``confluent_kafka`` package (without importing it); the system's ``rdkafka``.
    Raises :class:`BrokerUnavailableError` if none is found.
    """
    override = os.environ.get(LIBRDKAFKA_ENV_VAR)
    if override:
        if not os.path.isfile(override):
            raise BrokerUnavailableError(f"${LIBRDKAFKA_ENV_VAR}={override!r} is not a file")
        return override
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is not None and spec.origin is not None:
        site = Path(spec.origin).resolve().parent.parent
        for pattern in ("confluent_kafka.libs/librdkafka*.so*", "confluent_kafka.libs/*.dylib"):
            found = sorted(glob.glob(str(site / pattern)))
            if found:
                return found[0]
    system = ctypes.util.find_library("rdkafka")
    if system:
        return system
    raise BrokerUnavailableError(
        "librdkafka not found: install confluent-kafka (its wheel bundles librdkafka) "
        f"or set ${LIBRDKAFKA_ENV_VAR}"
    )


_library_lock = threading.Lock()
_library: ctypes.CDLL | None = None


def _load_library() -> ctypes.CDLL:
    global _library
    with _library_lock:
        if _library is None:
            path = find_librdkafka()
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                raise BrokerUnavailableError(f"cannot load librdkafka from {path}: {exc}") from exc
            for name, (restype, argtypes) in _SIGNATURES.items():
                try:
                    func = getattr(lib, name)
                except AttributeError:
                    if name in _OPTIONAL:
                        continue
                    raise BrokerUnavailableError(
                        f"{path} lacks {name}: a librdkafka built with the mock cluster is needed"
                    ) from None
                func.restype = restype
                if argtypes is not None:
                    func.argtypes = argtypes
            _library = lib
        return _library


def librdkafka_version() -> str:
    """Version string of the librdkafka that :class:`MockCluster` uses."""
    raw = _load_library().rd_kafka_version_str()
    return raw.decode() if raw else "unknown"


def _error_code(error: ErrorCode) -> int:
    if isinstance(error, int):
        return error
    code = getattr(error, "code", None)
    if not isinstance(code, int):
        raise ConfigError(f"not an error code: {error!r}")
    return code


def _destroy(lib: ctypes.CDLL, rk: int, mcluster: int | None) -> None:
    # Order matters: the cluster uses rk for bookkeeping, so it must go first.
    if mcluster:
        lib.rd_kafka_mock_cluster_destroy(mcluster)
    lib.rd_kafka_destroy(rk)


#: JoinGroup, Heartbeat, LeaveGroup, SyncGroup: the newest versions librdkafka 2.16's mock parses
#: correctly (it advertises later, flexible, versions but reads them as non-flexible).
MOCK_GROUP_API_CAPS = {11: 5, 12: 3, 13: 2, 14: 3}


class MockCluster(EndsOnExit):
    """A librdkafka mock cluster with ``num_brokers`` brokers (ids 1..N) on loopback ports.

    Usable as a context manager (``with`` and ``async with``); :meth:`close` is idempotent.
    Every control method raises :class:`MockClusterError` when librdkafka reports an error and
    ``RuntimeError`` after :meth:`close`.
    """

    def __init__(
        self,
        num_brokers: int = 3,
        *,
        group_initial_rebalance_delay_ms: int | None = None,
        log_level: int = 3,
        cap_group_apis: bool = True,
    ) -> None:
        """Create and start the cluster.

        ``group_initial_rebalance_delay_ms`` sets the broker setting of that name (librdkafka's
        default, ``None``, is 3000 ms before the first classic-group assignment; 0 makes group
        tests fast).  ``log_level`` is librdkafka's syslog level for the owning handle (3 =
        errors only).  ``cap_group_apis`` limits JoinGroup/Heartbeat/LeaveGroup/SyncGroup to the
        versions the mock really parses (it advertises flexible versions it then misreads,
        dropping the connection); turn it off to test that behaviour itself.
        """
        if num_brokers < 1:
            raise ConfigError("a mock cluster needs at least one broker")
        self._lib = _load_library()
        self._lock = threading.RLock()
        self._rk, self._mcluster = self._create(num_brokers, log_level)
        self._finalizer: weakref.finalize[..., MockCluster] | None = weakref.finalize(
            self, _destroy, self._lib, self._rk, self._mcluster
        )
        raw = self._lib.rd_kafka_mock_cluster_bootstraps(self._mcluster)
        self._bootstrap_servers: str = raw.decode()
        # librdkafka lists the brokers in creation order, i.e. by id 1..N.
        self._addresses: dict[int, tuple[str, int]] = {}
        for broker_id, address in enumerate(self._bootstrap_servers.split(","), start=1):
            host, _, port = address.rpartition(":")
            self._addresses[broker_id] = (host, int(port))
        self.num_brokers = num_brokers
        self._default_api_versions: dict[int, tuple[int, int]] | None = None
        if group_initial_rebalance_delay_ms is not None:
            self.set_group_initial_rebalance_delay(group_initial_rebalance_delay_ms)
        if cap_group_apis:
            implemented = self.default_api_versions
            for api_key, top in MOCK_GROUP_API_CAPS.items():
                if api_key in implemented:
                    low, high = implemented[api_key]
                    self.set_api_version(api_key, low, min(high, top))

    def _create(self, num_brokers: int, log_level: int) -> tuple[int, int]:
        lib = self._lib
        errstr = ctypes.create_string_buffer(_ERRSTR_SIZE)
        conf = lib.rd_kafka_conf_new()
        if not conf:
            raise MockClusterError("rd_kafka_conf_new failed")
        settings = {"log_level": str(log_level), "client.id": "aiokafkawire-mock-cluster"}
        for key, value in settings.items():
            res = lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr, _ERRSTR_SIZE)
            if res != _RD_KAFKA_CONF_OK:
                lib.rd_kafka_conf_destroy(conf)
                raise MockClusterError(f"rd_kafka_conf_set({key}) failed: {errstr.value!r}")
        rk = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, _ERRSTR_SIZE)
        if not rk:
            # rd_kafka_new takes ownership of conf only on success.
            lib.rd_kafka_conf_destroy(conf)
            raise MockClusterError(f"rd_kafka_new failed: {errstr.value.decode(errors='replace')}")
        mcluster = lib.rd_kafka_mock_cluster_new(rk, num_brokers)
        if not mcluster:
            lib.rd_kafka_destroy(rk)
            raise MockClusterError("rd_kafka_mock_cluster_new failed")
        return rk, mcluster

    # ----------------------------------------------------------------------------- properties

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated ``host:port`` of every broker, in broker-id order."""
        return self._bootstrap_servers

    @property
    def broker_ids(self) -> list[int]:
        """The broker ids, ``[1, ..., num_brokers]``."""
        return list(self._addresses)

    def broker_address(self, broker_id: int) -> tuple[str, int]:
        """``(host, port)`` of one broker."""
        try:
            return self._addresses[broker_id]
        except KeyError:
            raise ConfigError(f"no broker {broker_id} in this mock cluster") from None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._finalizer is None

    # ------------------------------------------------------------------------------- plumbing

    def _call(self, name: str, *args: Any) -> Any:
        with self._lock:
            if self._finalizer is None:
                raise RuntimeError("MockCluster is closed")
            func = getattr(self._lib, name, None)
            if func is None:
                raise NotImplementedError(f"this librdkafka has no {name}")
            # Wrapped explicitly: a bare int would be passed as a 32-bit C int to variadic calls.
            return func(_c_void_p(self._mcluster), *args)

    def _check(self, name: str, *args: Any) -> None:
        code = self._call(name, *args)
        if code:
            self._raise(name, code)

    def _raise(self, what: str, code: int) -> None:
        name = (self._lib.rd_kafka_err2name(code) or b"?").decode()
        text = (self._lib.rd_kafka_err2str(code) or b"").decode()
        raise MockClusterError(f"{what} failed: {name} ({code}): {text}", code=code, name=name)

    def _broker(self, broker_id: int) -> int:
        # -1 addresses every broker in the calls that accept it.
        if broker_id != -1 and broker_id not in self._addresses:
            raise ConfigError(f"no broker {broker_id} in this mock cluster")
        return broker_id

    # ----------------------------------------------------------------------- topics/partitions

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> None:
        """Create a topic (the mock has no CreateTopics API; clients may also auto-create)."""
        if partitions < 1 or replication_factor < 1:
            raise ConfigError("partitions and replication_factor must be at least 1")
        self._check("rd_kafka_mock_topic_create", name.encode(), partitions, replication_factor)

    def delete_topic(self, name: str) -> None:
        """Delete a topic."""
        self._check("rd_kafka_mock_topic_delete", name.encode())

    def set_topic_error(self, topic: str, error: ErrorCode) -> None:
        """Make Metadata (and AddPartitionsToTxn) report ``error`` for ``topic``; 0 clears it."""
        self._call("rd_kafka_mock_topic_set_error", topic.encode(), _error_code(error))

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Move a partition's leadership (-1: no leader); creates the topic if needed."""
        self._check(
            "rd_kafka_mock_partition_set_leader", topic.encode(), partition, self._broker(broker_id)
        )

    def set_partition_follower(self, topic: str, partition: int, broker_id: int) -> None:
        """Set the preferred read replica that Fetch redirects consumers to (KIP-392)."""
        self._check("rd_kafka_mock_partition_set_follower", topic.encode(), partition, broker_id)

    def set_follower_watermarks(self, topic: str, partition: int, low: int, high: int) -> None:
        """Set the follower's low/high watermarks (-1 reverts to the leader's)."""
        self._check(
            "rd_kafka_mock_partition_set_follower_wmarks", topic.encode(), partition, low, high
        )

    # -------------------------------------------------------------------------------- brokers

    def broker_down(self, broker_id: int) -> None:
        """Disconnect a broker's clients and refuse new connections (no leader change)."""
        self._check("rd_kafka_mock_broker_set_down", self._broker(broker_id))

    def broker_up(self, broker_id: int) -> None:
        """Let a broker accept connections again."""
        self._check("rd_kafka_mock_broker_set_up", self._broker(broker_id))

    def set_broker_rtt(self, broker_id: int, rtt_ms: int) -> None:
        """Delay every response of a broker (-1: all brokers) by ``rtt_ms`` milliseconds."""
        self._check("rd_kafka_mock_broker_set_rtt", self._broker(broker_id), rtt_ms)

    def set_telemetry(self, requested_metrics: list[str], push_interval_ms: int) -> None:
        """What GetTelemetrySubscriptions answers (KIP-714): metric name prefixes (``[""]``:
        all, ``[]``: none, the default) and the push interval (default 300,000 ms)."""
        names = (_c_char_p * len(requested_metrics))(*(m.encode() for m in requested_metrics))
        self._check("rd_kafka_mock_telemetry_set_requested_metrics", names, len(requested_metrics))
        self._check("rd_kafka_mock_telemetry_set_push_interval", push_interval_ms)

    def set_broker_rack(self, broker_id: int, rack: str) -> None:
        """Set the rack a broker reports in Metadata."""
        self._check("rd_kafka_mock_broker_set_rack", self._broker(broker_id), rack.encode())

    def set_coordinator(
        self, kind: Literal["group", "transaction"], key: str, broker_id: int
    ) -> None:
        """Pin the coordinator of a group id or transactional id to ``broker_id``."""
        if kind not in ("group", "transaction"):
            raise ConfigError(f"coordinator kind must be 'group' or 'transaction', not {kind!r}")
        self._check("rd_kafka_mock_coordinator_set", kind.encode(), key.encode(), broker_id)

    def set_group_initial_rebalance_delay(self, delay_ms: int) -> None:
        """Set ``group.initial.rebalance.delay.ms`` of the whole cluster (speeds up group tests)."""
        self._call("rd_kafka_mock_group_initial_rebalance_delay_ms", delay_ms)

    # ---------------------------------------------------------------------------- API versions

    @property
    def default_api_versions(self) -> dict[int, tuple[int, int]]:
        """What the mock implements: ``api_key -> (min, max)`` as it advertised at creation.

        Learnt with one ApiVersions request the first time it is needed, so ask for it before
        changing versions with :meth:`set_api_version`.
        """
        if self._default_api_versions is None:
            host, port = self.broker_address(self.broker_ids[0])
            self._default_api_versions = probe_api_versions(host, port).api_versions
        return dict(self._default_api_versions)

    def set_api_version(self, api_key: int, min_version: int, max_version: int) -> None:
        """Restrict the version range the cluster advertises and accepts for ``api_key``.

        The range must lie within what the mock implements (:attr:`default_api_versions`;
        librdkafka does not check this itself); see :meth:`disable_api`.
        """
        implemented = self.default_api_versions.get(api_key)
        if implemented is None:
            raise ConfigError(f"the mock cluster does not implement API key {api_key}")
        if not implemented[0] <= min_version <= max_version <= implemented[1]:
            raise ConfigError(
                f"API key {api_key}: versions {min_version}-{max_version} are outside the "
                f"implemented range {implemented[0]}-{implemented[1]}"
            )
        self._check("rd_kafka_mock_set_apiversion", api_key, min_version, max_version)

    def disable_api(self, api_key: int) -> None:
        """Stop advertising (and serving) ``api_key``."""
        self._check("rd_kafka_mock_set_apiversion", api_key, -1, -1)

    # --------------------------------------------------------------------------- error injection

    def push_request_errors(self, api_key: int, errors: Iterable[ErrorCode]) -> None:
        """Fail the next ``len(errors)`` requests of ``api_key`` (any broker) with these codes.

        Codes are consumed in order, one per request; 0 lets a request through.  librdkafka's
        ``-195`` (``_TRANSPORT``) makes the broker drop the connection instead of answering.
        """
        codes = [_error_code(e) for e in errors]
        if not codes:
            return
        array = (_c_int * len(codes))(*codes)
        self._call("rd_kafka_mock_push_request_errors_array", api_key, len(codes), array)

    def push_broker_request_errors(
        self,
        broker_id: int,
        api_key: int,
        errors: Sequence[ErrorCode | tuple[ErrorCode, int]],
    ) -> None:
        """Queue errors (optionally with a response delay) on one broker for ``api_key``.

        Each entry is an error code, or ``(error code, rtt_ms)`` to also delay that response.
        Broker errors take precedence over cluster-wide ones pushed by
        :meth:`push_request_errors`.
        """
        pairs: list[tuple[int, int]] = []
        for entry in errors:
            if isinstance(entry, tuple):
                pairs.append((_error_code(entry[0]), int(entry[1])))
            else:
                pairs.append((_error_code(entry), 0))
        self._broker(broker_id)
        for start in range(0, len(pairs), _VARARG_PAIRS_PER_CALL):
            chunk = pairs[start : start + _VARARG_PAIRS_PER_CALL]
            varargs: list[Any] = []
            for code, rtt in chunk:
                # Variadic ints are promoted to int; pass them as C ints explicitly.
                varargs += [_c_int(code), _c_int(rtt)]
            self._check(
                "rd_kafka_mock_broker_push_request_error_rtts",
                _c_int32(broker_id),
                _c_int16(api_key),
                _c_size_t(len(chunk)),
                *varargs,
            )

    def broker_error_stack_count(self, broker_id: int, api_key: int) -> int:
        """How many errors pushed with :meth:`push_broker_request_errors` are still queued."""
        count = _c_size_t(0)
        self._check(
            "rd_kafka_mock_broker_error_stack_cnt",
            self._broker(broker_id),
            api_key,
            ctypes.byref(count),
        )
        return count.value

    def clear_request_errors(self, api_key: int) -> None:
        """Drop the cluster-wide errors still queued for ``api_key``."""
        self._call("rd_kafka_mock_clear_request_errors", api_key)

    # -------------------------------------------------------------------------- request tracking

    def start_request_tracking(self) -> None:
        """Record every request the brokers receive (see :meth:`requests`)."""
        self._call("rd_kafka_mock_start_request_tracking")

    def stop_request_tracking(self) -> None:
        """Stop recording requests (librdkafka 2.16 also forgets the recorded ones)."""
        self._call("rd_kafka_mock_stop_request_tracking")

    def clear_requests(self) -> None:
        """Forget the recorded requests."""
        self._call("rd_kafka_mock_clear_requests")

    def requests(self) -> list[MockRequest]:
        """The requests recorded since tracking started, oldest first.

        librdkafka records the broker id, API key and arrival time, not the API version.
        """
        with self._lock:
            count = _c_size_t(0)
            array = self._call("rd_kafka_mock_get_requests", ctypes.byref(count))
            if not array:
                return []
            lib = self._lib
            try:
                return [
                    MockRequest(
                        lib.rd_kafka_mock_request_id(array[i]),
                        lib.rd_kafka_mock_request_api_key(array[i]),
                        lib.rd_kafka_mock_request_timestamp(array[i]),
                    )
                    for i in range(count.value)
                ]
            finally:
                lib.rd_kafka_mock_request_destroy_array(array, count.value)

    # ------------------------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Stop every broker and free the cluster and its handle; idempotent."""
        with self._lock:
            finalizer, self._finalizer = self._finalizer, None
            if finalizer is not None:
                finalizer()

    async def close_async(self) -> None:
        """:meth:`close` in a worker thread (joining librdkafka's threads can take a moment)."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> MockCluster:
        return self

    async def __aenter__(self) -> MockCluster:
        return self

    def _end(self) -> None:
        self.close()

    async def _end_async(self) -> None:
        await self.close_async()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self._bootstrap_servers
        return f"<MockCluster {self.num_brokers} brokers {state}>"
