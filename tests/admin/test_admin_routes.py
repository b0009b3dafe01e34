"""The admin client's request routes under the shared retry policy, against a scripted cluster
(no broker): what is tried again, how often, and what is raised in the end."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from aiokafkawire import errors
from aiokafkawire.admin import Admin
from aiokafkawire.admin._core import ATTEMPTS


class ScriptedCluster:
    """Answers each send with the next scripted outcome (an exception is raised)."""

    def __init__(self, outcomes: list[Any]) -> None:
        self.outcomes = outcomes
        self.sends = 0
        self.invalidated = 0
        self.refreshed = 0
        self.metadata = SimpleNamespace(controller_id=1, brokers={1: object()})

    def _next(self) -> Any:
        self.sends += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def coordinator(self, key: str, kind: str = "group") -> Any:
        return SimpleNamespace(node_id=7)

    async def send_to_coordinator(self, *args: Any, **kwargs: Any) -> Any:
        return self._next()

    async def send(self, node_id: int, request: Any, version: int | None = None) -> Any:
        return self._next()

    def invalidate_coordinator(self, key: str, kind: str = "group") -> None:
        self.invalidated += 1

    async def refresh_metadata(self, topics: Any = None) -> Any:
        self.refreshed += 1
        return self.metadata

    async def close(self) -> None:
        pass

    def abandon(self) -> None:  # an Admin never closed calls it when collected
        pass


def scripted_admin(outcomes: list[Any]) -> tuple[Admin, ScriptedCluster]:
    admin = Admin(bootstrap_servers="localhost:1", retry_backoff_ms=1, retry_backoff_max_ms=2)
    cluster = ScriptedCluster(outcomes)
    admin._cluster = cluster  # type: ignore[assignment]
    admin._started = True
    return admin, cluster


def answer(code: int = 0) -> Any:
    return SimpleNamespace(error_code=code, topics=[])


async def test_coordinator_refusals_look_the_coordinator_up_again_until_it_answers() -> None:
    not_coordinator = errors.NotCoordinatorError.code
    loading = errors.CoordinatorLoadInProgressError.code
    admin, cluster = scripted_admin([answer(not_coordinator), answer(loading), answer()])
    response, node = await admin._coordinator_call("g", object())
    assert (response.error_code, node) == (0, 7)
    assert (cluster.sends, cluster.invalidated) == (3, 2)


async def test_a_coordinator_refusal_in_a_partition_counts_too() -> None:
    loading = SimpleNamespace(error_code=errors.CoordinatorLoadInProgressError.code)
    refused = SimpleNamespace(error_code=0, topics=[SimpleNamespace(partitions=[loading])])
    admin, cluster = scripted_admin([refused, answer()])
    await admin._coordinator_call("g", object())
    assert cluster.sends == 2


async def test_a_coordinator_that_never_answers_is_a_timeout_after_the_attempts() -> None:
    refusal = answer(errors.CoordinatorNotAvailableError.code)
    admin, cluster = scripted_admin([refusal] * ATTEMPTS)
    with pytest.raises(errors.KafkaTimeoutError, match="coordinator of group 'g'") as caught:
        await admin._coordinator_call("g", object())
    assert isinstance(caught.value.__cause__, errors.CoordinatorNotAvailableError)
    assert cluster.sends == ATTEMPTS


async def test_other_errors_are_answers_not_retries() -> None:
    admin, cluster = scripted_admin([answer(errors.GroupAuthorizationFailedError.code)])
    response, _ = await admin._coordinator_call("g", object())
    assert response.error_code == errors.GroupAuthorizationFailedError.code
    assert cluster.sends == 1


async def test_lost_connections_to_the_coordinator_are_retried_then_raised() -> None:
    lost = errors.KafkaConnectionError("gone")
    admin, cluster = scripted_admin([lost] * ATTEMPTS)
    with pytest.raises(errors.KafkaConnectionError):
        await admin._coordinator_call("g", object())
    assert cluster.sends == ATTEMPTS


async def test_the_controller_is_followed_through_a_metadata_refresh() -> None:
    admin, cluster = scripted_admin([errors.KafkaConnectionError("moved"), "created"])
    assert await admin._send_controller(object()) == "created"
    assert (cluster.sends, cluster.refreshed) == (2, 1)


async def test_an_unreachable_controller_is_a_timeout() -> None:
    admin, cluster = scripted_admin([errors.KafkaConnectionError("down")] * ATTEMPTS)
    with pytest.raises(errors.KafkaTimeoutError, match="controller"):
        await admin._send_controller(object())
    assert cluster.sends == ATTEMPTS
