"""Shared by the programs: a fresh topic through aiokafka's admin client."""

import os
import uuid

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

BOOTSTRAP = os.environ["BOOTSTRAP"]


async def new_topic(prefix: str, partitions: int = 1) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        errors = (await admin.create_topics([NewTopic(topic, partitions, 1)])).to_object()
        assert errors["topic_errors"][0]["error_code"] == 0, errors
    finally:
        await admin.close()
    return topic
