"""Idempotent and transactional producers; read_committed sees committed records only."""

import asyncio
import uuid

from _common import BOOTSTRAP, new_topic
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


async def main() -> None:
    topic = await new_topic("compat-txn")
    async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, enable_idempotence=True) as producer:
        meta = await producer.send_and_wait(topic, b"idempotent")
        assert meta.offset == 0

    producer = AIOKafkaProducer(
        bootstrap_servers=BOOTSTRAP, transactional_id=f"compat-{uuid.uuid4().hex[:8]}"
    )
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send(topic, b"committed-1")
            await producer.send(topic, b"committed-2")
        await producer.begin_transaction()
        await producer.send(topic, b"aborted")
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send(topic, b"committed-3")
            await producer.send_offsets_to_transaction(
                {TopicPartition(topic, 0): 1}, f"g-{uuid.uuid4().hex[:6]}"
            )
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        bootstrap_servers=BOOTSTRAP, isolation_level="read_committed", auto_offset_reset="earliest"
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    await consumer.start()
    try:
        values = []
        end = (await consumer.end_offsets([tp]))[tp]
        deadline = asyncio.get_running_loop().time() + 30
        while await consumer.position(tp) < end and asyncio.get_running_loop().time() < deadline:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                values.extend(r.value for r in records)
        assert values == [b"idempotent", b"committed-1", b"committed-2", b"committed-3"], values
    finally:
        await consumer.stop()
    print("ok")


asyncio.run(main())
