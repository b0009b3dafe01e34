"""Moved to :mod:`aiokafkawire._waits` (net/ uses it too and must not import consumer/)."""

from aiokafkawire._waits import timeout_after, wait_event

__all__ = ["timeout_after", "wait_event"]
