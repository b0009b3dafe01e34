"""aiokafka's first examples: produce with send/send_and_wait, consume in a group, commit."""

import asyncio
import os
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError

BOOTSTRAP = os.environ["BOOTSTRAP"]


async def main() -> None:
    topic = f"compat-simple-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(topic, 2, 1)])
        errors = response.to_object()["topic_errors"]
        assert [(e["topic"], e["error_code"]) for e in errors] == [(topic, 0)], errors
        again = (await admin.create_topics([NewTopic(topic, 2, 1)])).to_object()
        assert again["topic_errors"][0]["error_code"] == TopicAlreadyExistsError.errno
        assert topic in await admin.list_topics()
    finally:
        await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP)
    await producer.start()
    try:
        meta = await producer.send_and_wait(topic, b"first", key=b"k", partition=0)
        assert (meta.topic, meta.partition, meta.offset) == (topic, 0, 0), meta
        assert meta.topic_partition == TopicPartition(topic, 0)
        futures = [
            await producer.send(
                topic, f"v{i}".encode(), partition=i % 2, timestamp_ms=1_700_000_000_000 + i
            )
            for i in range(10)
        ]
        results = await asyncio.gather(*futures)
        assert all(r.offset >= 0 for r in results)
        # aiokafka reports the first timestamp of the batch for every record of it (a bug the
        # guide lists); aiokafkawire reports each record's own.
        assert 1_700_000_000_000 <= results[3].timestamp <= 1_700_000_000_003
        assert await producer.partitions_for(topic) == {0, 1}
    finally:
        await producer.stop()

    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=BOOTSTRAP,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        value_deserializer=lambda v: v.decode(),
    )
    await consumer.start()
    try:
        seen = []
        async for msg in consumer:
            seen.append(msg.value)
            assert msg.checksum is None
            assert msg.serialized_value_size == len(msg.value.encode())
            if len(seen) == 11:
                break
        assert sorted(seen) == sorted(["first"] + [f"v{i}" for i in range(10)]), seen
        await consumer.commit()
        tp0 = TopicPartition(topic, 0)
        assert await consumer.committed(tp0) == await consumer.position(tp0)
        assert consumer.subscription() == frozenset({topic})
        assert consumer.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    finally:
        await consumer.stop()
    try:
        await consumer.getone()
    except KafkaError:
        pass  # ConsumerStoppedError in aiokafka (not a KafkaError there), see below
    except Exception as exc:
        from aiokafka.errors import ConsumerStoppedError

        assert isinstance(exc, ConsumerStoppedError), exc
    else:
        raise AssertionError("getone() after stop() did not raise")
    print("ok")


asyncio.run(main())
