"""aiokafkawire.consumer.share: the asyncio share consumer (share groups, KIP-932).

One job per module: :mod:`.membership` (ShareGroupHeartbeat), :mod:`.session` (the share-session
epoch state machine), :mod:`.acknowledgements` (acquired ranges and acknowledgement batches),
:mod:`.fetcher` (ShareFetch / ShareAcknowledge per leader) and :mod:`.consumer` (the public
:class:`ShareConsumer`).
"""

from aiokafkawire.consumer.share.consumer import ShareConsumer
from aiokafkawire.consumer.share.records import (
    AcknowledgementOutcome,
    AcknowledgeType,
    ShareRecord,
)

__all__ = ["AcknowledgeType", "AcknowledgementOutcome", "ShareConsumer", "ShareRecord"]
