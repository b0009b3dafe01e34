"""The :class:`Admin` client: every family of admin calls over one core."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from aiokafkawire.client_properties import translate_properties


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

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Admin:
        """A admin configured with Java or librdkafka property names.

        ``Admin.from_config({"bootstrap.servers": "host:9092", ...})``: each property maps to
        one option (see :data:`aiokafkawire.client_properties.PROPERTIES`); aiokafkawire's own
        option names may be mixed in.  An unsupported property raises ConfigError naming it.
        """
        return cls(**translate_properties("admin", config))
