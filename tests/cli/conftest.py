"""Fixtures of the CLI tests: the command run against the session's Tansu broker."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from cli_helpers import make_topic, run_aiokafkawire, run_in_process

from aiokafkawire.testing import TansuBroker

CliRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(tansu_broker: TansuBroker) -> CliRunner:
    """Run a command against the session's Tansu broker (``-b ADDRESS`` is appended)."""

    def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return run_aiokafkawire(*args, "-b", tansu_broker.bootstrap_servers, **kwargs)

    return run


@pytest.fixture
def cli_fast(tansu_broker: TansuBroker) -> CliRunner:
    """Like ``cli``, in this process: for variants of a command ``cli`` already ran."""

    def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return run_in_process(*args, "-b", tansu_broker.bootstrap_servers, **kwargs)

    return run


@pytest.fixture
def name() -> Callable[[str], str]:
    """Unique topic/group names: the Tansu broker is shared by the whole session."""
    suffix = uuid.uuid4().hex[:8]
    return lambda prefix: f"cli-{prefix}-{suffix}"


@pytest.fixture(scope="session")
def records_topic(tansu_broker: TansuBroker) -> str:
    """A read-only topic: 3 partitions, 30 records (``value-i`` in partition ``i % 3``)."""
    make_topic(tansu_broker.bootstrap_servers, "cli-records", 3, 30)
    return "cli-records"
