"""aiokafka's SSL example: a context from ``create_ssl_context`` (CA, client certificate and
key: the listener requires client authentication), then admin, produce and consume over TLS.

Needs a TLS listener: ``BOOTSTRAP`` is its address and ``CAFILE``/``CERTFILE``/``KEYFILE`` the
PEM files (``test_programs.py`` starts a broker for it).
"""

import asyncio
import os
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError
from aiokafka.helpers import create_ssl_context

BOOTSTRAP = os.environ["BOOTSTRAP"]
SECURE = {
    "security_protocol": "SSL",
    "ssl_context": create_ssl_context(
        cafile=os.environ["CAFILE"],
        certfile=os.environ["CERTFILE"],
        keyfile=os.environ["KEYFILE"],
    ),
}


async def main() -> None:
    topic = f"compat-ssl-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP, **SECURE)
    await admin.start()
    try:
        errors = (await admin.create_topics([NewTopic(topic, 1, 1)])).to_object()
        assert errors["topic_errors"][0]["error_code"] == 0, errors
    finally:
        await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, **SECURE)
    await producer.start()
    try:
        for i in range(5):
            meta = await producer.send_and_wait(topic, f"secret {i}".encode(), key=b"k")
            assert (meta.topic, meta.partition, meta.offset) == (topic, 0, i), meta
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=BOOTSTRAP,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **SECURE,
    )
    await consumer.start()
    try:
        seen = []
        while len(seen) < 5:
            batches = await consumer.getmany(timeout_ms=10_000)
            assert batches, "no records within 10 s"
            for records in batches.values():
                seen.extend(record.value for record in records)
        assert seen == [f"secret {i}".encode() for i in range(5)], seen
        await consumer.commit()
        assert await consumer.committed(TopicPartition(topic, 0)) == 5
    finally:
        await consumer.stop()

    # The same listener with a context that does not trust the broker's CA: no connection.
    untrusting = AIOKafkaProducer(
        bootstrap_servers=BOOTSTRAP,
        security_protocol="SSL",
        ssl_context=create_ssl_context(),
        request_timeout_ms=5_000,
    )
    try:
        await asyncio.wait_for(untrusting.start(), 60)
    except KafkaConnectionError:
        pass
    else:
        raise AssertionError("a context without the broker's CA connected")
    finally:
        await untrusting.stop()
    print("ok")


asyncio.run(main())
