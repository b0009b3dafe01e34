"""``aiokafka.helpers``: ``create_ssl_context`` (aiokafkawire's takes aiokafka's arguments)."""

from __future__ import annotations

from aiokafkawire.net.tls import create_ssl_context

__all__ = ["create_ssl_context"]
