"""Java / librdkafka property names map to aiokafkawire options (issue 20, item 4)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from aiokafkawire import Admin, Consumer, Producer
from aiokafkawire.client_properties import PROPERTIES, translate_properties
from aiokafkawire.errors import ConfigError, ConfigTypeError


def test_a_confluent_kafka_producer_config_configures_the_producer() -> None:
    producer = Producer.from_config(
        {
            "bootstrap.servers": "broker-a:9092,broker-b:9093",
            "linger.ms": "7",
            "acks": "1",
            "enable.idempotence": "false",
            "compression.type": "lz4",
            "message.max.bytes": 2_000_000,
            "queue.buffering.max.kbytes": "1024",
            "client.id": "billing",
        }
    )
    assert producer.linger_ms == 7
    assert producer.acks == 1
    assert producer.max_request_size == 2_000_000
    assert producer.buffer_memory == 1024 * 1024
    assert producer.idempotent is False
    assert producer.config.client_id == "billing"
    assert producer.config.bootstrap_servers == "broker-a:9092,broker-b:9093"


def test_java_consumer_properties_and_librdkafka_spellings_configure_the_consumer() -> None:
    consumer = Consumer.from_config(
        {
            "bootstrap.servers": "localhost:9092",
            "group.id": "g",
            "auto.offset.reset": "smallest",
            "enable.auto.commit": "false",
            "fetch.wait.max.ms": "100",
            "partition.assignment.strategy": "range,cooperative-sticky",
            "session.timeout.ms": 45000,
            "client_rack": "r1",
        }
    )
    options = consumer._options
    assert options.auto_offset_reset == "earliest"
    assert options.fetch_max_wait_ms == 100
    assert [a.name for a in options.assignors] == ["range", "cooperative-sticky"]


def test_an_unsupported_property_is_named_with_the_nearest_known_one() -> None:
    with pytest.raises(ConfigError, match=r"'linger\.msx' \(did you mean 'linger\.ms'\?\)"):
        Producer.from_config({"bootstrap.servers": "h:1", "linger.msx": 5})
    with pytest.raises(ConfigError, match=r"batch\.num\.messages"):
        Producer.from_config({"batch.num.messages": 100})
    # a producer property is not a consumer one
    with pytest.raises(ConfigError, match=r"linger\.ms"):
        Consumer.from_config({"linger.ms": 5})


def test_wrong_values_fail_naming_the_property() -> None:
    with pytest.raises(ConfigTypeError, match=r"linger\.ms must be an integer"):
        translate_properties("producer", {"linger.ms": "soon"})
    with pytest.raises(ConfigTypeError, match=r"enable\.auto\.commit must be true or false"):
        translate_properties("consumer", {"enable.auto.commit": "maybe"})
    with pytest.raises(ConfigError, match="acks must be all, -1, 0 or 1"):
        translate_properties("producer", {"acks": "2"})


def test_jaas_config_gives_the_sasl_credentials_and_they_stay_out_of_the_repr() -> None:
    admin = Admin.from_config(
        {
            "bootstrap.servers": "h:9092",
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                'username="alice" password="s3cret-pw";'
            ),
        }
    )
    options = translate_properties(
        "admin",
        {
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="bob" password="pw";'
        },
    )
    assert options == {"sasl_plain_username": "bob", "sasl_plain_password": "pw"}
    assert "s3cret-pw" not in repr(admin) and "s3cret-pw" not in repr(vars(admin))
    with pytest.raises(ConfigError, match="PlainLoginModule and ScramLoginModule"):
        translate_properties(
            "admin",
            {"sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"},
        )


def test_tls_properties_build_one_ssl_context(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    options = translate_properties(
        "producer",
        {
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca_file),
            "ssl.endpoint.identification.algorithm": "",
        },
    )
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname is False
    assert context.verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.type=JKS is not supported"):
        translate_properties("producer", {"ssl.truststore.location": str(ca_file)})


def test_every_mapped_option_exists_on_its_clients() -> None:
    import inspect

    from aiokafkawire.client_config import COMMON_OPTION_NAMES

    own = {
        "producer": set(inspect.signature(Producer.__init__).parameters),
        "consumer": set(inspect.signature(Consumer.__init__).parameters),
        "admin": set(),
    }
    for prop in PROPERTIES:
        for client in prop.clients:
            assert prop.option in own[client] | COMMON_OPTION_NAMES, (client, prop)


def test_the_confluent_kafka_guide_lists_exactly_the_mapped_properties() -> None:
    from aiokafkawire.client_properties import properties_table

    guide = Path(__file__).resolve().parent.parent / "docs" / "migrating-from-confluent-kafka.md"
    text = guide.read_text(encoding="utf-8")
    marker = "<!-- properties-table: generated from aiokafkawire/client_properties.py"
    table = text.split(marker, 1)[1].split("-->", 1)[1].lstrip("\n")
    assert table.strip() == properties_table().strip(), "regenerate it with properties_table()"


def test_common_options_typed_dict_lists_every_common_option() -> None:
    from aiokafkawire.client_config import COMMON_OPTION_NAMES, CommonOptions

    assert set(CommonOptions.__annotations__) == set(COMMON_OPTION_NAMES)
