"""A consumer without group_id reads every partition of its topics (no commits)."""

import asyncio

from _common import BOOTSTRAP, new_topic
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


async def main() -> None:
    topic = await new_topic("compat-nogroup", partitions=3)
    async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=5) as producer:
        for i in range(30):
            await producer.send(topic, str(i).encode(), partition=i % 3)
        await producer.flush()

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest")
    await consumer.start()
    try:
        values = set()
        deadline = asyncio.get_running_loop().time() + 30
        while len(values) < 30 and asyncio.get_running_loop().time() < deadline:
            batch = await consumer.getmany(timeout_ms=1000)
            for tp, records in batch.items():
                assert tp.topic == topic
                values.update(int(r.value) for r in records)
        assert values == set(range(30)), sorted(values)
        assert consumer.assignment() == {TopicPartition(topic, p) for p in range(3)}
        for p in range(3):
            assert await consumer.position(TopicPartition(topic, p)) == 10
        # seek and read again, still without a group
        tp = TopicPartition(topic, 1)
        consumer.seek(tp, 8)
        record = await consumer.getone(tp)
        assert (record.partition, record.offset) == (1, 8), record
    finally:
        await consumer.stop()
    print("ok")


asyncio.run(main())
