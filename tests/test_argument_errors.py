"""Wrong arguments fail at the call with a typed KafkaError naming them (issue 14).

Before: a ``str`` value raised ``TypeError: sequence item 6: expected a bytes-like object``, a
``str`` header value ``can't concat str to bytearray``, dict headers ``ValueError: not enough
values to unpack``, ``max_poll_records=None`` ``TypeError: '<' not supported``; ``group_id=""``
was accepted (and never got an assignment), ``kafka://host:port`` was read as a host named
``kafka://host``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from aiokafkawire import Admin, Consumer, KafkaError, Producer, errors
from aiokafkawire.cluster.metadata import parse_bootstrap
from aiokafkawire.testing import MockCluster


@pytest.fixture
def topic(mock_cluster: MockCluster) -> str:
    name = f"types-{uuid.uuid4().hex[:8]}"
    mock_cluster.create_topic(name, partitions=2)
    return name


@pytest.mark.parametrize(
    ("kwargs", "exc_type", "message"),
    [
        ({"value": "text"}, TypeError, r"value must be bytes or None, got str; set a value_ser"),
        ({"value": b"v", "key": "k"}, TypeError, r"key must be bytes or None, got str"),
        ({"value": 42}, TypeError, r"value must be bytes or None, got int"),
        ({"value": b"v", "headers": [("h", "x")]}, TypeError, r"header 'h' must be bytes"),
        ({"value": b"v", "headers": [(b"h", b"x")]}, TypeError, r"\(str, bytes \| None\) pair"),
        ({"value": b"v", "headers": [("h",)]}, TypeError, r"\(str, bytes \| None\) pair"),
        ({"value": b"v", "headers": 5}, TypeError, r"headers must be a list"),
        ({"value": b"v", "partition": "0"}, TypeError, r"partition must be an int"),
        ({"value": b"v", "partition": 7}, ValueError, r"has 2 partitions; 7 is not one"),
        ({"value": b"v", "timestamp": "1"}, TypeError, r"timestamp must be an int"),
        ({"value": b"v", "timestamp": 1.5}, TypeError, r"timestamp must be an int"),
    ],
)
async def test_send_rejects_wrong_types_with_typed_errors(
    mock_cluster: MockCluster,
    topic: str,
    kwargs: dict[str, Any],
    exc_type: type[Exception],
    message: str,
) -> None:
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        await producer.send_and_wait(topic, b"first", partition=0)  # a batch is open
        with pytest.raises(KafkaError, match=message) as caught:
            await producer.send(topic, **kwargs)
        assert isinstance(caught.value, exc_type)
        # Nothing was half-appended: the producer keeps working on the same partitions.
        handles = [await producer.send(topic, b"after", partition=p) for p in (0, 1)]
        await producer.flush(10)
        assert all(h.done() and h.exception() is None for h in handles)


async def test_serializer_returning_wrong_type_is_named(
    mock_cluster: MockCluster, topic: str
) -> None:
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, value_serializer=lambda v: v
    ) as producer:
        with pytest.raises(errors.KafkaTypeError, match="value_serializer returned str"):
            await producer.send(topic, "text")


async def test_headers_as_mapping_and_bytes_like_values_are_accepted(
    mock_cluster: MockCluster, topic: str
) -> None:
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        metadata = await producer.send_and_wait(
            topic, bytearray(b"v"), key=memoryview(b"k"), headers={"a": b"1", "b": None}
        )
    assert metadata.topic == topic


async def test_send_rejects_a_non_string_topic(mock_cluster: MockCluster) -> None:
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        with pytest.raises(errors.KafkaTypeError, match="topic must be a non-empty str"):
            await producer.send(b"topic", b"v")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "exc_type", "message"),
    [
        ({"max_poll_records": None}, TypeError, "max_poll_records must be int, got NoneType"),
        ({"max_poll_records": 0}, ValueError, "max_poll_records must be at least 1"),
        ({"group_id": ""}, ValueError, "group_id must not be empty"),
        ({"group_id": 5}, TypeError, "group_id must be str or None"),
        ({"session_timeout_ms": "45000"}, TypeError, "session_timeout_ms must be int or float"),
        ({"enable_auto_commit": "yes"}, TypeError, "enable_auto_commit must be bool"),
        ({"auto_offset_reset": "smallest"}, ValueError, "auto_offset_reset must be one of"),
        ({"value_deserializer": "json"}, TypeError, "value_deserializer must be a callable"),
        ({"request_timeout_ms": None}, TypeError, "request_timeout_ms must be int or float"),
        ({"bootstrap_servers": 9092}, TypeError, "bootstrap_servers must be"),
        ({"bootstrap_servers": "kafka://localhost:9092"}, ValueError, "kafka:// is not supp"),
        ({"bootstrap_servers": "localhost:9092/"}, ValueError, "expected 'host:port'"),
    ],
)
def test_consumer_options_are_checked_at_construction(
    options: dict[str, Any], exc_type: type[Exception], message: str
) -> None:
    with pytest.raises(errors.ConfigError, match=message) as caught:
        Consumer("t", **options)
    assert isinstance(caught.value, exc_type)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"linger_ms": None}, "linger_ms must be int or float"),
        ({"batch_size": 1.5}, "batch_size must be int"),
        ({"transactional_id": ""}, "transactional_id must not be empty"),
        ({"key_serializer": b"x"}, "key_serializer must be a callable"),
        ({"max_in_flight_requests_per_connection": True}, "must be int, got bool"),
    ],
)
def test_producer_options_are_checked_at_construction(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(errors.ConfigError, match=message):
        Producer(**options)


def test_admin_refuses_a_url_scheme() -> None:
    with pytest.raises(errors.ConfigError, match="kafka:// is not supported"):
        Admin(bootstrap_servers="kafka://broker:9092")


def test_listener_prefixes_and_plain_addresses_still_parse() -> None:
    assert parse_bootstrap("PLAINTEXT://a:1,SASL_SSL://b:2,[::1]:3,c") == [
        ("a", 1),
        ("b", 2),
        ("::1", 3),
        ("c", 9092),
    ]


def test_error_classes_are_both_kafka_errors_and_builtin_errors() -> None:
    assert issubclass(errors.KafkaTypeError, KafkaError) and issubclass(
        errors.KafkaTypeError, TypeError
    )
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.ConfigTypeError, TypeError) and issubclass(
        errors.ConfigTypeError, errors.ConfigError
    )
