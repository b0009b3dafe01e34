"""A local-state consumer: its rebalance listener seeks to offsets kept outside Kafka."""

import asyncio
import uuid

from _common import BOOTSTRAP, new_topic
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener


class LocalState:
    def __init__(self) -> None:
        self.offsets: dict = {}

    def start_of(self, tp) -> int:
        return self.offsets.get(tp, 5)


class SeekingListener(ConsumerRebalanceListener):
    def __init__(self, consumer: AIOKafkaConsumer, state: LocalState) -> None:
        self.consumer = consumer
        self.state = state
        self.assigned: list = []

    async def on_partitions_revoked(self, revoked) -> None:
        for tp in revoked:
            self.state.offsets[tp] = await self.consumer.position(tp)

    async def on_partitions_assigned(self, assigned) -> None:
        for tp in assigned:
            self.consumer.seek(tp, self.state.start_of(tp))
        self.assigned.extend(assigned)


async def main() -> None:
    topic = await new_topic("compat-listener", partitions=2)
    async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP) as producer:
        for i in range(20):
            await producer.send(topic, str(i).encode(), partition=i % 2)
        await producer.flush()

    consumer = AIOKafkaConsumer(
        bootstrap_servers=BOOTSTRAP,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10000,
    )
    state = LocalState()
    listener = SeekingListener(consumer, state)
    consumer.subscribe([topic], listener=listener)
    await consumer.start()
    try:
        first: dict[int, int] = {}
        deadline = asyncio.get_running_loop().time() + 45
        while len(first) < 2 and asyncio.get_running_loop().time() < deadline:
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                first.setdefault(tp.partition, records[0].offset)
        assert first == {0: 5, 1: 5}, first
        assert len(listener.assigned) == 2
    finally:
        await consumer.stop()
    print("ok")


asyncio.run(main())
