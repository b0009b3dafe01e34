"""create_batch/send_batch to chosen partitions, read back in order."""

import asyncio

from _common import BOOTSTRAP, new_topic
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


async def main() -> None:
    topic = await new_topic("compat-batch", partitions=2)
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP)
    await producer.start()
    try:
        futures = []
        for partition in (0, 1):
            batch = producer.create_batch()
            for i in range(5):
                appended = batch.append(key=None, value=f"{partition}-{i}".encode(), timestamp=None)
                assert appended is not None
            assert batch.record_count() == 5
            futures.append(await producer.send_batch(batch, topic, partition=partition))
        metas = await asyncio.gather(*futures)
        assert [(m.partition, m.offset) for m in metas] == [(0, 0), (1, 0)], metas
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    consumer.assign(tps)
    await consumer.start()
    try:
        await consumer.seek_to_beginning(*tps)
        got: dict[int, list[str]] = {0: [], 1: []}
        deadline = asyncio.get_running_loop().time() + 30
        while sum(map(len, got.values())) < 10 and asyncio.get_running_loop().time() < deadline:
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                got[tp.partition].extend(r.value.decode() for r in records)
        assert got == {p: [f"{p}-{i}" for i in range(5)] for p in (0, 1)}, got
        ends = await consumer.end_offsets(tps)
        assert ends == {tps[0]: 5, tps[1]: 5}, ends
    finally:
        await consumer.stop()
    print("ok")


asyncio.run(main())
