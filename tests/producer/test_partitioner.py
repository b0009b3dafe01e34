"""Tests for the producer partitioners (pure logic, plus one cross-check against librdkafka)."""

from __future__ import annotations

import ctypes
import glob
import itertools
import os
import random
import time
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiokafkawire.errors import ConfigError, UnknownTopicError
from aiokafkawire.producer import partitioner
from aiokafkawire.producer.partitioner import (
    CallablePartitioner,
    DefaultPartitioner,
    Partitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    create_partitioner,
    murmur2,
    partition_for_key,
)

# Expected values from the Java client's UtilsTest.testMurmur2.
JAVA_MURMUR2_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


def reference_murmur2(data: bytes) -> int:
    """A deliberately plain, byte-at-a-time MurmurHash2 (seed 0x9747b28c), signed like Java."""

    def mul(a: int, b: int) -> int:
        return (a * b) % 2**32

    m = 0x5BD1E995
    h = 0x9747B28C ^ len(data)
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = mul(k, m)
        k ^= k >> 24
        k = mul(k, m)
        h = mul(h, m) ^ k
    tail = data[whole:]
    if tail:
        for shift, byte in enumerate(tail):
            h ^= byte << (8 * shift)
        h = mul(h, m)
    h ^= h >> 13
    h = mul(h, m)
    h ^= h >> 15
    return h - 2**32 if h >= 2**31 else h


@pytest.mark.parametrize(("data", "expected"), JAVA_MURMUR2_VECTORS)
def test_murmur2_matches_java_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@given(st.binary(max_size=200))
@settings(max_examples=300, deadline=None)
def test_murmur2_matches_reference_for_every_length(data: bytes) -> None:
    assert murmur2(data) == reference_murmur2(data)


def test_murmur2_covers_all_tail_lengths_and_signs() -> None:
    seen_signs = set()
    for length in range(0, 13):
        data = bytes(range(200, 200 + length))
        value = murmur2(data)
        assert -(2**31) <= value < 2**31
        assert value == reference_murmur2(data)
        seen_signs.add(value < 0)
    assert seen_signs == {True, False}


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=5000))
@settings(max_examples=200, deadline=None)
def test_partition_for_key_is_java_to_positive_modulo(key: bytes, count: int) -> None:
    # Java: Utils.toPositive(murmur2(key)) % numPartitions, toPositive = value & 0x7fffffff.
    expected = (reference_murmur2(key) & 0x7FFFFFFF) % count
    assert partition_for_key(key, count) == expected
    assert DefaultPartitioner().partition("t", key, list(range(count)), [0]) == expected


def test_keyed_records_use_all_partitions_not_only_available() -> None:
    partitioner = DefaultPartitioner()
    partitions = list(range(10))
    keys = [f"key-{i}".encode() for i in range(200)]
    chosen = {partitioner.partition("t", key, partitions, [3]) for key in keys}
    # With only partition 3 available, a hash over "available" would always give 3.
    assert len(chosen) == 10
    for key in keys:
        assert partitioner.partition("t", key, partitions, [3]) == partition_for_key(key, 10)


def test_empty_key_is_hashed_not_sticky() -> None:
    partitioner = DefaultPartitioner()
    partitions = list(range(7))
    assert partitioner.partition("t", b"", partitions, partitions) == partition_for_key(b"", 7)


def drive_sticky(
    partitioner: Partitioner,
    topic: str,
    partitions: Sequence[int],
    available: Sequence[int],
    batches: int,
    records_per_batch: int = 5,
) -> Iterator[int]:
    """Yield the sticky partition of each batch, completing a batch every few records."""
    for _ in range(batches):
        chosen = {
            partitioner.partition(topic, None, partitions, available)
            for _ in range(records_per_batch)
        }
        assert len(chosen) == 1, "a keyless batch must stick to one partition"
        (partition,) = chosen
        yield partition
        partitioner.on_new_batch(topic, partition)


@pytest.mark.parametrize("cls", [DefaultPartitioner, UniformStickyPartitioner])
def test_sticky_changes_partition_only_on_new_batch(cls: type[Partitioner]) -> None:
    partitioner = cls(rng=random.Random(7))  # type: ignore[call-arg]
    partitions = list(range(6))
    sequence = list(drive_sticky(partitioner, "t", partitions, partitions, batches=200))
    assert all(a != b for a, b in itertools.pairwise(sequence)), "next batch must move on"
    assert set(sequence) == set(partitions), "every partition gets batches eventually"


@pytest.mark.parametrize("cls", [DefaultPartitioner, UniformStickyPartitioner])
def test_sticky_picks_only_available_partitions(cls: type[Partitioner]) -> None:
    partitioner = cls(rng=random.Random(3))  # type: ignore[call-arg]
    partitions = list(range(8))
    available = [1, 4, 6]
    sequence = list(drive_sticky(partitioner, "t", partitions, available, batches=60))
    assert set(sequence) == set(available)


def test_sticky_with_single_or_no_available_partition() -> None:
    partitioner = DefaultPartitioner(rng=random.Random(1))
    partitions = list(range(4))
    assert set(drive_sticky(partitioner, "one", partitions, [2], batches=5)) == {2}
    # Nothing available: fall back to all partitions, like Java.
    assert set(drive_sticky(partitioner, "none", partitions, [], batches=40)) == set(partitions)


def test_sticky_next_partition_is_uniform_over_the_others() -> None:
    partitioner = DefaultPartitioner(rng=random.Random(42))
    partitions = list(range(4))
    sequence = list(drive_sticky(partitioner, "t", partitions, partitions, batches=1201))
    following_zero = Counter(b for a, b in itertools.pairwise(sequence) if a == 0)
    assert set(following_zero) == {1, 2, 3}
    expected = sum(following_zero.values()) / 3
    assert all(abs(n - expected) < expected * 0.35 for n in following_zero.values())


def test_topic_without_partitions_is_an_error() -> None:
    with pytest.raises(UnknownTopicError):
        DefaultPartitioner().partition("t", None, [], [])
    with pytest.raises(UnknownTopicError):
        RoundRobinPartitioner().partition("t", None, [], [])


def test_sticky_ignores_batches_of_other_partitions() -> None:
    partitioner = DefaultPartitioner(rng=random.Random(5))
    partitions = list(range(5))
    sticky = partitioner.partition("t", None, partitions, partitions)
    for other in partitions:
        if other != sticky:
            partitioner.on_new_batch("t", other)  # e.g. a batch of keyed records completed
    assert partitioner.partition("t", None, partitions, partitions) == sticky


def test_sticky_state_is_per_topic_and_per_instance() -> None:
    first = DefaultPartitioner(rng=random.Random(11))
    second = DefaultPartitioner(rng=random.Random(11))
    partitions = list(range(50))
    a = first.partition("a", None, partitions, partitions)
    b = first.partition("b", None, partitions, partitions)
    first.on_new_batch("a", a)
    assert first.partition("b", None, partitions, partitions) == b
    assert first.partition("a", None, partitions, partitions) != a
    # ``second`` saw none of ``first``'s batches, so it still sticks to its first choice.
    s = second.partition("a", None, partitions, partitions)
    assert second.partition("a", None, partitions, partitions) == s
    assert not hasattr(DefaultPartitioner, "_current")


def test_sticky_repicks_when_partition_count_shrinks() -> None:
    partitioner = UniformStickyPartitioner(rng=random.Random(2))
    chosen = partitioner.partition("t", b"k", list(range(100)), list(range(100)))
    partitions = list(range(min(chosen, 3)))
    if not partitions:
        partitions = [0]
    assert partitioner.partition("t", b"k", partitions, partitions) in partitions


def test_uniform_sticky_ignores_keys() -> None:
    partitioner = UniformStickyPartitioner(rng=random.Random(9))
    partitions = list(range(16))
    keys = [f"k{i}".encode() for i in range(50)]
    chosen = {partitioner.partition("t", key, partitions, partitions) for key in keys}
    assert len(chosen) == 1


def test_round_robin_cycles_available_partitions_per_topic() -> None:
    partitioner = RoundRobinPartitioner()
    partitions = list(range(6))
    available = [0, 2, 5]
    got = [partitioner.partition("t", b"same-key", partitions, available) for _ in range(7)]
    assert got == [0, 2, 5, 0, 2, 5, 0]
    assert [partitioner.partition("u", None, partitions, []) for _ in range(7)] == [
        0,
        1,
        2,
        3,
        4,
        5,
        0,
    ]
    partitioner.on_new_batch("t", 0)  # no effect
    assert partitioner.partition("t", None, partitions, available) == 2


def test_callable_partitioner_receives_arguments_and_is_validated() -> None:
    calls: list[tuple[bytes | None, Sequence[int], Sequence[int]]] = []

    def last_available(key: bytes | None, all_p: Sequence[int], avail: Sequence[int]) -> int:
        calls.append((key, all_p, avail))
        return avail[-1]

    partitioner = CallablePartitioner(last_available)
    assert partitioner.partition("t", b"k", [0, 1, 2], [0, 1]) == 1
    assert calls == [(b"k", [0, 1, 2], [0, 1])]
    partitioner.on_new_batch("t", 1)

    with pytest.raises(ConfigError):
        CallablePartitioner(lambda k, a, v: 3).partition("t", None, [0, 1, 2], [0])
    with pytest.raises(ConfigError):
        CallablePartitioner(lambda k, a, v: "1").partition("t", None, [0, 1, 2], [0])  # type: ignore[arg-type, return-value]


def test_create_partitioner() -> None:
    assert isinstance(create_partitioner(), DefaultPartitioner)
    assert isinstance(create_partitioner("round_robin"), RoundRobinPartitioner)
    assert isinstance(create_partitioner("uniform_sticky"), UniformStickyPartitioner)
    first = create_partitioner(DefaultPartitioner)
    assert isinstance(first, DefaultPartitioner)
    assert create_partitioner(DefaultPartitioner) is not first
    instance = RoundRobinPartitioner()
    assert create_partitioner(instance) is instance
    wrapped = create_partitioner(lambda key, all_p, avail: 0)
    assert isinstance(wrapped, CallablePartitioner)
    assert wrapped.partition("t", None, [0, 1], [1]) == 0
    with pytest.raises(ConfigError):
        create_partitioner("no-such-partitioner")
    with pytest.raises(ConfigError):
        create_partitioner(42)  # type: ignore[arg-type]


def test_keyed_path_is_fast() -> None:
    partitioner = DefaultPartitioner()
    partitions = list(range(12))
    keys = [f"user-{i:010d}-{i * 7919:x}".encode() for i in range(20_000)]
    started = time.perf_counter()
    for key in keys:
        partitioner.partition("t", key, partitions, partitions)
    # About 2 µs per key on a laptop; generous so a loaded CI machine passes.
    assert time.perf_counter() - started < 1.0


# --- cross-check against librdkafka's murmur2_random partitioner ---------------------------------


class _LibrdkafkaMockCluster:
    """A librdkafka mock cluster created through ctypes, so a topic can get 7 partitions."""

    def __init__(self) -> None:
        import confluent_kafka

        package_dir = os.path.dirname(confluent_kafka.__file__)
        libs_dir = os.path.join(package_dir, os.pardir, "confluent_kafka.libs")
        candidates = glob.glob(os.path.join(libs_dir, "librdkafka*.so*"))
        if not candidates:
            pytest.skip("confluent-kafka wheel without a bundled librdkafka")
        lib = ctypes.CDLL(candidates[0])
        lib.rd_kafka_conf_new.restype = ctypes.c_void_p
        lib.rd_kafka_conf_set.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        lib.rd_kafka_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        lib.rd_kafka_handle_mock_cluster.restype = ctypes.c_void_p
        lib.rd_kafka_handle_mock_cluster.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_topic_create.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_int,
        ]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        self._lib = lib
        errors = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        for name, value in ((b"test.mock.num.brokers", b"1"), (b"log_level", b"3")):
            if lib.rd_kafka_conf_set(conf, name, value, errors, len(errors)) != 0:
                pytest.skip(f"librdkafka rejected {name!r}: {errors.value!r}")
        self._handle = lib.rd_kafka_new(0, conf, errors, len(errors))  # 0: producer handle
        if not self._handle:
            pytest.skip(f"cannot start a librdkafka mock cluster: {errors.value!r}")
        self._cluster = lib.rd_kafka_handle_mock_cluster(self._handle)
        self.bootstrap_servers: str = lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()

    def create_topic(self, name: str, partitions: int) -> None:
        code = self._lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions, 1)
        assert code == 0, f"rd_kafka_mock_topic_create failed with {code}"

    def close(self) -> None:
        self._lib.rd_kafka_destroy(self._handle)


@pytest.fixture
def librdkafka_mock_cluster() -> Iterator[_LibrdkafkaMockCluster]:
    pytest.importorskip("confluent_kafka")
    cluster = _LibrdkafkaMockCluster()
    try:
        yield cluster
    finally:
        cluster.close()


def sample_keys(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    keys = [b"", "ключ".encode(), "鍵🔑".encode(), b"\x00\xff\x80\x7f"]
    alphabet = "abcXYZ019-_ äöüßé中文🙂"
    while len(keys) < count:
        length = rng.randrange(0, 41)
        if rng.random() < 0.5:
            keys.append(rng.randbytes(length))
        else:
            text = "".join(rng.choice(alphabet) for _ in range(length))
            keys.append(text.encode()[:40])
    return keys


@pytest.mark.integration
def test_keyed_partition_matches_librdkafka_murmur2_random(
    librdkafka_mock_cluster: _LibrdkafkaMockCluster,
) -> None:
    from confluent_kafka import Producer

    topic, partition_count = "partitioner-check", 7
    librdkafka_mock_cluster.create_topic(topic, partition_count)
    producer = Producer(
        {
            "bootstrap.servers": librdkafka_mock_cluster.bootstrap_servers,
            "partitioner": "murmur2_random",
            "linger.ms": 5,
            "log_level": 3,
        }
    )
    keys = sample_keys(300, seed=20260101)
    delivered: list[tuple[bytes, int]] = []
    failures: list[object] = []

    def on_delivery(error: object, message: object) -> None:
        if error is not None:
            failures.append(error)
        else:
            delivered.append((message.key(), message.partition()))  # type: ignore[attr-defined]

    for key in keys:
        producer.produce(topic, key=key, value=b"v", on_delivery=on_delivery)
    remaining = producer.flush(10)
    assert remaining == 0 and not failures, (remaining, failures)
    assert len(delivered) == len(keys)
    for key, partition in delivered:
        assert partition == partition_for_key(key, partition_count), key
    assert len({partition for _, partition in delivered}) == partition_count


_compiled = partitioner._COMPILED


@pytest.mark.skipif(_compiled is None, reason="the C murmur2 is not built")
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=70), st.integers(1, 10_000))
def test_compiled_murmur2_matches_the_pure_reference(data: bytes, count: int) -> None:
    assert _compiled is not None
    compiled_murmur2, compiled_partition_for_key = _compiled
    assert compiled_murmur2(data) == partitioner.pure_murmur2(data)
    assert compiled_murmur2(bytearray(data)) == partitioner.pure_murmur2(data)
    assert compiled_partition_for_key(data, count) == partitioner.pure_partition_for_key(
        data, count
    )
    # bytes are read directly; anything else through the buffer protocol
    assert compiled_partition_for_key(memoryview(data), count) == compiled_partition_for_key(
        data, count
    )


@pytest.mark.skipif(_compiled is None, reason="the C murmur2 is not built")
def test_compiled_partition_for_key_rejects_bad_input() -> None:
    assert _compiled is not None
    _, compiled_partition_for_key = _compiled
    with pytest.raises(ZeroDivisionError):
        compiled_partition_for_key(b"k", 0)
    with pytest.raises(TypeError):
        compiled_partition_for_key("not bytes", 3)
