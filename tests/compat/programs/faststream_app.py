"""A FastStream Kafka application: a group subscriber, a batch subscriber, manual acks."""

import asyncio
import uuid

from _common import BOOTSTRAP, new_topic
from faststream import AckPolicy
from faststream.kafka import KafkaBroker, KafkaMessage


async def main() -> None:
    plain, batched, manual = [await new_topic(f"compat-fs-{kind}") for kind in "pbm"]
    group = f"fs-{uuid.uuid4().hex[:8]}"
    broker = KafkaBroker(BOOTSTRAP)
    got_plain: list[str] = []
    got_batches: list[list[str]] = []
    acked: list[str] = []
    done = asyncio.Event()

    def check_done() -> None:
        if len(got_plain) == 3 and sum(map(len, got_batches)) == 5 and len(acked) == 2:
            done.set()

    @broker.subscriber(plain, group_id=group, auto_offset_reset="earliest")
    async def on_plain(body: str) -> None:
        got_plain.append(body)
        check_done()

    @broker.subscriber(batched, group_id=group + "-b", batch=True, auto_offset_reset="earliest")
    async def on_batch(bodies: list[str]) -> None:
        got_batches.append(bodies)
        check_done()

    @broker.subscriber(
        manual, group_id=group + "-m", auto_offset_reset="earliest", ack_policy=AckPolicy.MANUAL
    )
    async def on_manual(body: str, message: KafkaMessage) -> None:
        await message.ack()
        acked.append(body)
        check_done()

    async with broker:
        await broker.start()
        for i in range(3):
            await broker.publish(f"plain-{i}", plain)
        await broker.publish_batch(*[f"batch-{i}" for i in range(5)], topic=batched)
        for i in range(2):
            await broker.publish(f"manual-{i}", manual, key=b"k")
        await asyncio.wait_for(done.wait(), 60)
    assert sorted(got_plain) == [f"plain-{i}" for i in range(3)], got_plain
    assert sorted(b for batch in got_batches for b in batch) == [f"batch-{i}" for i in range(5)]
    assert acked == ["manual-0", "manual-1"], acked
    print("ok")


asyncio.run(main())
