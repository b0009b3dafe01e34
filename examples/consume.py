"""Consume a topic as a member of a consumer group, committing after each batch.

python examples/consume.py --bootstrap localhost:9092 --group billing orders payments
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from aiokafkawire.consumer import Consumer, ConsumerRebalanceListener
from aiokafkawire.structs import TopicPartition


class PrintingListener(ConsumerRebalanceListener):
    """Shows how partitions move between the group's members."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        print("assigned:", sorted(assigned))

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        print("revoked:", sorted(revoked))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("topics", nargs="+")
    parser.add_argument("--bootstrap", default="localhost:9092")
    parser.add_argument("--group", default="aiokafkawire-example")
    parser.add_argument("--from-beginning", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)

    async with Consumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        enable_auto_commit=False,
        value_deserializer=lambda raw: raw.decode("utf-8", "replace") if raw else raw,
    ) as consumer:
        consumer.subscribe(args.topics, listener=PrintingListener())
        while True:
            batches = await consumer.getmany(timeout_ms=1000, max_records=500)
            for tp, records in batches.items():
                for record in records:
                    print(f"{tp.topic}[{tp.partition}]@{record.offset}: {record.value!r}")
            if batches:
                await consumer.commit()  # the positions after what was just printed


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
