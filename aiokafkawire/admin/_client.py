"""The :class:`Admin` client: every family of admin calls over one core."""

from __future__ import annotations

from aiokafkawire.admin.acls import AclCalls
from aiokafkawire.admin.configs import ConfigCalls
from aiokafkawire.admin.groups import GroupCalls
from aiokafkawire.admin.log_dirs import LogDirCalls
from aiokafkawire.admin.offsets import OffsetCalls
from aiokafkawire.admin.quotas import QuotaCalls
from aiokafkawire.admin.scram import ScramCalls
from aiokafkawire.admin.share_groups import ShareGroupCalls
from aiokafkawire.admin.topics import TopicCalls
from aiokafkawire.admin.transactions import TransactionCalls


class Admin(
    TopicCalls,
    ConfigCalls,
    GroupCalls,
    ShareGroupCalls,
    OffsetCalls,
    AclCalls,
    ScramCalls,
    QuotaCalls,
    TransactionCalls,
    LogDirCalls,
):
    """Administrative operations on a Kafka cluster.

    ``async with Admin(bootstrap_servers="host:9092") as admin: await admin.create_topics(...)``.
    Accepts the common client options (``client_id``, ``request_timeout_ms``, security, ...).
    """
