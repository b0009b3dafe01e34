"""Registry formats of the Spark source and sink (issue 22): Confluent-framed Avro, Protobuf and
JSON Schema keys and values as typed columns, checked against confluent-kafka's own serializers
and deserializers on Apache Kafka and a real registry (Apicurio)."""

from __future__ import annotations

import datetime
import json
import time
from typing import Any

import pytest
from _spark_helpers import create_topic

from aiokafkawire.errors import ConfigError
from aiokafkawire.spark._options import parse_options
from aiokafkawire.spark._registry_format import parse_registry_options
from aiokafkawire.testing.registry import SchemaRegistryServer

ck_registry = pytest.importorskip("confluent_kafka.schema_registry")
ck_avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
ck_serialization = pytest.importorskip("confluent_kafka.serialization")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# confluent-kafka's serializers (2.16) first ask the registry for the topic's subject
# associations, an API Apicurio does not serve; the topic strategy is what these tests mean.
TOPIC_SUBJECTS: dict[str, Any] = {"subject.name.strategy.type": "TOPIC"}


def their_registry(registry: SchemaRegistryServer) -> Any:
    """confluent-kafka's registry client with a request timeout: it has none by default, and
    a request the registry never answers would hang the suite instead of being retried."""
    return ck_registry.SchemaRegistryClient({"url": registry.url, "timeout": 30})


UTC = datetime.timezone.utc
_FIELDS: list[dict[str, Any]] = [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "price", "type": "double"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "int"}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {
        "name": "address",
        "type": {
            "type": "record",
            "name": "Address",
            "fields": [{"name": "city", "type": "string"}],
        },
    },
]
ORDER_V1 = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": _FIELDS})
ORDER_V2 = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [*_FIELDS, {"name": "email", "type": "string", "default": "none"}],
    }
)
BASE_MS = (int(time.time()) - 3600) * 1000
COUNT = 200  # half written with v1, half with v2


def order(i: int, v2: bool) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": i,
        "name": f"order-{i}",
        "price": i * 1.5,
        "tags": [f"t{i % 3}"] * (i % 3),
        "attrs": {"n": i} if i % 2 else {},
        "note": None if i % 4 else f"note {i}",
        "created": datetime.datetime.fromtimestamp((BASE_MS + i) / 1000, UTC),
        "address": {"city": f"city-{i % 5}"},
    }
    if v2:
        record["email"] = f"o{i}@example.org"
    return record


def as_row(record: dict[str, Any]) -> tuple:
    """What the test compares: every field, the timestamp as epoch milliseconds."""
    return (
        record["id"], record["name"], record["price"], list(record["tags"]),
        dict(record["attrs"]), record["note"],
        int(record["created"].timestamp() * 1000), record["address"]["city"],
        record.get("email", "none"),
    )  # fmt: skip


def produce_with_confluent(bootstrap: str, registry: SchemaRegistryServer, topic: str) -> None:
    from confluent_kafka import Producer

    client = their_registry(registry)
    key_serializer = ck_avro.AvroSerializer(client, '"string"', conf=TOPIC_SUBJECTS)
    writers = {
        False: ck_avro.AvroSerializer(client, ORDER_V1, conf=TOPIC_SUBJECTS),
        True: ck_avro.AvroSerializer(client, ORDER_V2, conf=TOPIC_SUBJECTS),
    }
    key_ctx = ck_serialization.SerializationContext(topic, ck_serialization.MessageField.KEY)
    value_ctx = ck_serialization.SerializationContext(topic, ck_serialization.MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(COUNT):
        v2 = i >= COUNT // 2
        producer.produce(
            topic,
            key=key_serializer(f"k{i}", key_ctx),
            value=None if i == 7 else writers[v2](order(i, v2), value_ctx),
            partition=i % 2,
        )
    assert producer.flush(60) == 0


def test_confluent_avro_read_by_spark_into_typed_columns(
    spark: Any, bootstrap: str, schema_registry: SchemaRegistryServer
) -> None:
    topic = create_topic(bootstrap, 2, "registry-read")
    produce_with_confluent(bootstrap, schema_registry, topic)
    df = (
        spark.read.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("keyFormat", "avro")
        .option("valueFormat", "avro")
        .option("schema.registry.url", schema_registry.url)
        .load()
    )
    # the schema comes from the subject's latest version (v2), typed
    value_type = df.schema["value"].dataType
    assert [f.name for f in value_type.fields][-1] == "email"
    assert df.schema["key"].dataType.simpleString() == "string"
    assert value_type["tags"].dataType.simpleString() == "array<string>"
    assert value_type["created"].dataType.simpleString() == "timestamp"
    rows = df.selectExpr(
        "key", "value.id", "value.name", "value.price", "value.tags", "value.attrs", "value.note",
        "unix_millis(value.created)", "value.address.city", "value.email", "value is null",
    ).collect()  # fmt: skip
    got = {r[0]: (tuple(r[1:10]) if not r[10] else None) for r in rows}
    expected = {
        f"k{i}": None if i == 7 else as_row(order(i, i >= COUNT // 2)) for i in range(COUNT)
    }
    # v1 records read into the v2 schema get the added field's default
    assert got == expected


def test_spark_avro_write_read_by_confluent(
    spark: Any, bootstrap: str, schema_registry: SchemaRegistryServer
) -> None:
    from confluent_kafka import Consumer
    from pyspark.sql import Row

    topic = create_topic(bootstrap, 1, "registry-write")
    client = their_registry(schema_registry)
    schema_id = client.register_schema(f"{topic}-value", ck_registry.Schema(ORDER_V2, "AVRO"))
    records = [order(i, True) for i in range(50)]
    rows = [
        Row(key=f"k{r['id']}".encode(), value=Row(**{**r, "address": Row(**r["address"])}))
        for r in records
    ]
    df = spark.createDataFrame(rows, f"key binary, value {_ddl()}")
    (
        df.write.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("valueFormat", "avro")
        .option("schema.registry.url", schema_registry.url)
        .mode("append")
        .save()
    )
    deserializer = ck_avro.AvroDeserializer(client, conf=TOPIC_SUBJECTS)
    ctx = ck_serialization.SerializationContext(topic, ck_serialization.MessageField.VALUE)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: dict[bytes, Any] = {}
    try:
        deadline = time.monotonic() + 60
        while len(got) < len(records) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            assert int.from_bytes(message.value()[1:5], "big") == schema_id
            got[message.key()] = deserializer(message.value(), ctx)
    finally:
        consumer.close()
    assert {k.decode(): as_row(v) for k, v in got.items()} == {
        f"k{r['id']}": as_row(r) for r in records
    }


def _ddl() -> str:
    return (
        "struct<id: bigint, name: string, price: double, tags: array<string>, "
        "attrs: map<string, int>, note: string, created: timestamp, "
        "address: struct<city: string>, email: string>"
    )


def test_registry_options_are_checked() -> None:
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}
    assert parse_options({**base, "valueformat": "avro"}, mode="batch") is not None
    with pytest.raises(ConfigError, match="did you mean 'valueFormat'"):
        parse_options({**base, "valuformat": "avro"}, mode="batch")
    options = parse_registry_options({**base, "valueFormat": "AVRO", "schema.registry.url": "u"})
    assert options is not None and options.column("value").subject == "t-value"
    with pytest.raises(ConfigError, match="must be one of avro, json, protobuf, not 'xml'"):
        parse_registry_options({**base, "valueFormat": "xml", "schema.registry.url": "u"})
    with pytest.raises(ConfigError, match=r"'schema\.registry\.url' must be set"):
        parse_registry_options({**base, "keyFormat": "avro"})
    with pytest.raises(ConfigError, match="'valueSubject' must be set"):
        parse_registry_options({"subscribe": "a,b", "valueFormat": "avro"})
    with pytest.raises(ConfigError, match="applies only with keyFormat or valueFormat"):
        parse_registry_options({**base, "schema.registry.url": "u"})
    with pytest.raises(ConfigError, match="'valueSchemaVersion' must be 'latest' or a version"):
        parse_registry_options({**base, "valueFormat": "avro", "valueSchemaVersion": "x"})
    secret = parse_registry_options(
        {**base, "valueFormat": "avro", "schema.registry.url": "u",
         "schema.registry.basic.auth.user.info": "me:hunter2"}
    )  # fmt: skip
    assert "hunter2" not in repr(secret)


# ---------------------------------------------------------------------- Protobuf

_PB_COUNT = 40


def _order_files() -> tuple[Any, Any]:
    """``shop/address.proto`` and ``shop/order.proto`` (importing it and Timestamp), built as
    descriptors (protoc is not needed); Order is the file's first message."""
    from google.protobuf import descriptor_pb2

    f = descriptor_pb2.FieldDescriptorProto
    address = descriptor_pb2.FileDescriptorProto(
        name="shop/address.proto", package="shop", syntax="proto3"
    )
    address.message_type.add(name="Address").field.add(
        name="city", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL
    )
    proto = descriptor_pb2.FileDescriptorProto(
        name="shop/order.proto", package="shop", syntax="proto3",
        dependency=["google/protobuf/timestamp.proto", "shop/address.proto"],
    )  # fmt: skip
    order_type = proto.message_type.add(name="Order")
    for number, (name, kind, label, type_name) in enumerate(
        [
            ("id", f.TYPE_INT64, f.LABEL_OPTIONAL, ""),
            ("name", f.TYPE_STRING, f.LABEL_OPTIONAL, ""),
            ("price", f.TYPE_DOUBLE, f.LABEL_OPTIONAL, ""),
            ("tags", f.TYPE_STRING, f.LABEL_REPEATED, ""),
            ("attrs", f.TYPE_MESSAGE, f.LABEL_REPEATED, ".shop.Order.AttrsEntry"),
            ("status", f.TYPE_ENUM, f.LABEL_OPTIONAL, ".shop.Order.Status"),
            ("created", f.TYPE_MESSAGE, f.LABEL_OPTIONAL, ".google.protobuf.Timestamp"),
            ("address", f.TYPE_MESSAGE, f.LABEL_OPTIONAL, ".shop.Address"),
            ("count", f.TYPE_UINT64, f.LABEL_OPTIONAL, ""),
            ("lines", f.TYPE_MESSAGE, f.LABEL_REPEATED, ".shop.Order.Line"),
        ],
        start=1,
    ):
        field = order_type.field.add(name=name, number=number, type=kind, label=label)
        if type_name:
            field.type_name = type_name
    entry = order_type.nested_type.add(name="AttrsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=f.TYPE_INT32, label=f.LABEL_OPTIONAL)
    line = order_type.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    line.field.add(name="qty", number=2, type=f.TYPE_SINT32, label=f.LABEL_OPTIONAL)
    status = order_type.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    proto.message_type.add(name="Other").field.add(
        name="x", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL
    )
    return address, proto


def _order_class() -> Any:
    from google.protobuf import descriptor_pool, timestamp_pb2
    from google.protobuf.message_factory import GetMessageClass

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    for file in _order_files():
        pool.Add(file)
    return GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def pb_order(order_class: Any, i: int) -> Any:
    message = order_class(
        id=i, name=f"order-{i}", price=i * 1.5, tags=[f"t{i % 3}"] * (i % 3),
        attrs={"n": i} if i % 2 else {}, status=i % 2, count=2**63 + i,
        address={"city": f"city-{i % 5}"},
        lines=[{"sku": f"s{j}", "qty": -j} for j in range(i % 3)],
    )  # fmt: skip
    message.created.FromMilliseconds(BASE_MS + i)
    return message


def pb_row(message: Any) -> tuple:
    """What the test compares of an Order: every field, the timestamp as epoch milliseconds."""
    return (
        message.id, message.name, message.price, list(message.tags), dict(message.attrs),
        ["NEW", "PAID"][message.status], message.created.ToMilliseconds(),
        message.address.city, int(message.count),
        [(line.sku, line.qty) for line in message.lines],
    )  # fmt: skip


def test_confluent_protobuf_read_by_spark_into_typed_columns(
    spark: Any, bootstrap: str, schema_registry: SchemaRegistryServer
) -> None:
    from confluent_kafka import Producer

    ck_protobuf = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
    topic = create_topic(bootstrap, 1, "registry-pb-read")
    order_class = _order_class()
    client = their_registry(schema_registry)
    serializer = ck_protobuf.ProtobufSerializer(
        order_class, client, {"use.deprecated.format": False, **TOPIC_SUBJECTS}
    )
    ctx = ck_serialization.SerializationContext(topic, ck_serialization.MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(_PB_COUNT):
        value = None if i == 3 else serializer(pb_order(order_class, i), ctx)
        producer.produce(topic, key=f"k{i}".encode(), value=value)
    assert producer.flush(60) == 0
    df = (
        spark.read.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("valueFormat", "protobuf")
        .option("schema.registry.url", schema_registry.url)
        .load()
    )
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,name:string,price:double,tags:array<string>,attrs:map<string,int>,"
        "status:string,created:timestamp,address:struct<city:string>,count:decimal(20,0),"
        "lines:array<struct<sku:string,qty:int>>>"
    )
    rows = df.selectExpr(
        "cast(key as string)", "value.id", "value.name", "value.price", "value.tags",
        "value.attrs", "value.status", "unix_millis(value.created)", "value.address.city",
        "value.count", "transform(value.lines, l -> struct(l.sku, l.qty))", "value is null",
    ).collect()  # fmt: skip
    got = {
        r[0]: None if r[11] else (*r[1:9], int(r[9]), [tuple(line) for line in r[10]]) for r in rows
    }
    assert got == {
        f"k{i}": None if i == 3 else pb_row(pb_order(order_class, i)) for i in range(_PB_COUNT)
    }


def test_spark_protobuf_write_read_by_confluent(
    spark: Any, bootstrap: str, schema_registry: SchemaRegistryServer
) -> None:
    import base64

    from confluent_kafka import Consumer

    ck_protobuf = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
    topic = create_topic(bootstrap, 1, "registry-pb-write")
    client = their_registry(schema_registry)
    address, proto = _order_files()
    encoded = {f.name: base64.b64encode(f.SerializeToString()).decode() for f in (address, proto)}
    client.register_schema(
        "shop/address.proto", ck_registry.Schema(encoded["shop/address.proto"], "PROTOBUF")
    )
    address_version = client.get_latest_version("shop/address.proto").version
    schema_id = client.register_schema(
        f"{topic}-value",
        ck_registry.Schema(
            encoded["shop/order.proto"], "PROTOBUF",
            [ck_registry.SchemaReference("shop/address.proto", "shop/address.proto",
                                         address_version)],
        ),
    )  # fmt: skip
    order_class = _order_class()
    records = [pb_order(order_class, i) for i in range(_PB_COUNT)]
    rows = [(f"k{m.id}".encode(), *pb_spark_value(m)) for m in records]
    df = spark.createDataFrame(
        rows,
        "key binary, id bigint, name string, price double, tags array<string>, "
        "attrs map<string, int>, status string, created timestamp, city string, "
        "count decimal(20, 0), lines array<struct<sku: string, qty: int>>",
    ).selectExpr(
        "key", "struct(id, name, price, tags, attrs, status, created, "
        "struct(city) as address, count, lines) as value",
    )  # fmt: skip
    (
        df.write.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("valueFormat", "protobuf")
        .option("schema.registry.url", schema_registry.url)
        .mode("append")
        .save()
    )
    deserializer = ck_protobuf.ProtobufDeserializer(order_class, {"use.deprecated.format": False})
    ctx = ck_serialization.SerializationContext(topic, ck_serialization.MessageField.VALUE)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: dict[bytes, Any] = {}
    try:
        deadline = time.monotonic() + 60
        while len(got) < len(records) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            assert int.from_bytes(message.value()[1:5], "big") == schema_id
            got[message.key()] = deserializer(message.value(), ctx)
    finally:
        consumer.close()
    assert {k.decode(): pb_row(v) for k, v in got.items()} == {
        f"k{m.id}": pb_row(m) for m in records
    }


def pb_spark_value(message: Any) -> tuple:
    """An Order's fields as Spark takes them (the struct is assembled in SQL)."""
    import decimal

    return (
        message.id, message.name, message.price, list(message.tags), dict(message.attrs),
        ["NEW", "PAID"][message.status], message.created.ToDatetime(tzinfo=UTC),
        message.address.city, decimal.Decimal(message.count),
        [(line.sku, line.qty) for line in message.lines],
    )  # fmt: skip


# ---------------------------------------------------------------------- JSON Schema

ORDER_JSON = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "price": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
            "note": {"type": ["string", "null"]},
            "created": {"type": "string", "format": "date-time"},
            "paid": {"type": "boolean"},
            "address": {"$ref": "#/definitions/Address"},
        },
        "required": ["id", "name", "created"],
        "definitions": {
            "Address": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
)


def json_order(i: int) -> dict[str, Any]:
    created = datetime.datetime.fromtimestamp((BASE_MS + i) / 1000, UTC)
    record: dict[str, Any] = {
        "id": i, "name": f"order-{i}", "price": i * 1.5, "tags": [f"t{i % 3}"] * (i % 3),
        "attrs": {"n": i} if i % 2 else {}, "created": created.isoformat().replace("+00:00", "Z"),
        "paid": bool(i % 2), "address": {"city": f"city-{i % 5}"},
    }  # fmt: skip
    if i % 4 == 0:
        record["note"] = f"note {i}"
    return record


def json_row(record: dict[str, Any]) -> tuple:
    """What the test compares: every field, the timestamp as epoch milliseconds."""
    created = datetime.datetime.fromisoformat(record["created"].replace("Z", "+00:00"))
    return (
        record["id"], record["name"], record["price"], record["tags"], record["attrs"],
        record.get("note"), int(created.timestamp() * 1000), record["paid"],
        record["address"]["city"],
    )  # fmt: skip


def test_confluent_json_read_by_spark_into_typed_columns(
    spark: Any, bootstrap: str, schema_registry: SchemaRegistryServer
) -> None:
    from confluent_kafka import Producer

    ck_json = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
    topic = create_topic(bootstrap, 1, "registry-json-read")
    client = their_registry(schema_registry)
    serializer = ck_json.JSONSerializer(ORDER_JSON, client, conf=TOPIC_SUBJECTS)
    ctx = ck_serialization.SerializationContext(topic, ck_serialization.MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(_PB_COUNT):
        value = None if i == 3 else serializer(json_order(i), ctx)
        producer.produce(topic, key=f"k{i}".encode(), value=value)
    assert producer.flush(60) == 0
    df = (
        spark.read.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("valueFormat", "json")
        .option("schema.registry.url", schema_registry.url)
        .load()
    )
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,name:string,price:double,tags:array<string>,attrs:map<string,bigint>,"
        "note:string,created:timestamp,paid:boolean,address:struct<city:string>>"
    )
    rows = df.selectExpr(
        "cast(key as string)", "value.id", "value.name", "value.price", "value.tags",
        "value.attrs", "value.note", "unix_millis(value.created)", "value.paid",
        "value.address.city", "value is null",
    ).collect()  # fmt: skip
    got = {r[0]: None if r[10] else tuple(r[1:10]) for r in rows}
    assert got == {f"k{i}": None if i == 3 else json_row(json_order(i)) for i in range(_PB_COUNT)}


def test_spark_json_write_read_by_confluent(
    spark: Any, bootstrap: str, schema_registry: SchemaRegistryServer
) -> None:
    from confluent_kafka import Consumer

    ck_json = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
    topic = create_topic(bootstrap, 1, "registry-json-write")
    client = their_registry(schema_registry)
    schema_id = client.register_schema(f"{topic}-value", ck_registry.Schema(ORDER_JSON, "JSON"))
    records = [json_order(i) for i in range(_PB_COUNT)]
    rows = [(f"k{r['id']}".encode(), *json_spark_value(r)) for r in records]
    df = spark.createDataFrame(
        rows,
        "key binary, id bigint, name string, price double, tags array<string>, "
        "attrs map<string, bigint>, note string, created timestamp, paid boolean, city string",
    ).selectExpr(
        "key", "struct(id, name, price, tags, attrs, note, created, paid, "
        "struct(city) as address) as value",
    )  # fmt: skip
    (
        df.write.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("valueFormat", "json")
        .option("schema.registry.url", schema_registry.url)
        .mode("append")
        .save()
    )
    deserializer = ck_json.JSONDeserializer(ORDER_JSON)
    ctx = ck_serialization.SerializationContext(topic, ck_serialization.MessageField.VALUE)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: dict[bytes, Any] = {}
    try:
        deadline = time.monotonic() + 60
        while len(got) < len(records) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            assert int.from_bytes(message.value()[1:5], "big") == schema_id
            got[message.key()] = deserializer(message.value(), ctx)
    finally:
        consumer.close()
    assert {k.decode(): json_row(v) for k, v in got.items()} == {
        f"k{r['id']}": json_row(r) for r in records
    }


def json_spark_value(record: dict[str, Any]) -> tuple:
    """An order's fields as Spark takes them (the struct is assembled in SQL)."""
    created = datetime.datetime.fromisoformat(record["created"].replace("Z", "+00:00"))
    return (
        record["id"], record["name"], record["price"], record["tags"], record["attrs"],
        record.get("note"), created, record["paid"], record["address"]["city"],
    )  # fmt: skip


def test_json_schemas_spark_cannot_type_are_refused() -> None:
    pytest.importorskip("pyspark")
    from aiokafkawire.spark._registry_json import json_types

    with pytest.raises(ConfigError, match=r"#/properties/x: oneOf has no Spark type"):
        json_types({"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}]}}})
    with pytest.raises(ConfigError, match="is recursive"):
        node = {"type": "object", "properties": {"next": {"$ref": "#/definitions/N"}}}
        json_types({"$ref": "#/definitions/N", "definitions": {"N": node}})
    with pytest.raises(ConfigError, match=r"type \['string', 'integer'\] has no Spark type"):
        json_types({"type": ["string", "integer"]})
