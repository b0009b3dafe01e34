"""Shared test configuration.

The embedded-broker fixtures (``tansu_broker``, ``mock_cluster``, ``kafka_bootstrap``) come from the
``aiokafkawire.testing.pytest_plugin`` plugin, which is opt-in: this file loads it
(``pytest_plugins``), as a user's conftest does.

``AIOKAFKAWIRE_TEST_LOOP=uvloop`` runs every asyncio test on uvloop instead of the standard loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

pytest_plugins = ["aiokafkawire.testing.pytest_plugin"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SPEC_ROOT = REPO_ROOT / "specs" / "kafka-4.4.0"


@pytest.fixture(scope="session")
def spec_root() -> Path:
    """The official Kafka message specs and error table, vendored in the repository."""
    return SPEC_ROOT


if os.environ.get("AIOKAFKAWIRE_TEST_LOOP", "") == "uvloop":
    import uvloop

    def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item
    ) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
        """Every asyncio test runs on a uvloop loop."""
        return {"uvloop": uvloop.new_event_loop}
