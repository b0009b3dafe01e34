"""The one error classification table: every code of Kafka's table has exactly one action."""

from __future__ import annotations

import pytest

from aiokafkawire import errors
from aiokafkawire.errors import ErrorAction, action_for, action_of
from aiokafkawire.errors.actions import ERROR_ACTIONS
from aiokafkawire.errors.codes import ERRORS_BY_CODE


def test_every_generated_code_has_an_action() -> None:
    assert set(ERRORS_BY_CODE) <= set(ERROR_ACTIONS)
    assert ERROR_ACTIONS[0] is ErrorAction.NONE


@pytest.mark.parametrize(
    ("error", "action"),
    [
        (errors.NotCoordinatorError, ErrorAction.FIND_COORDINATOR),
        (errors.CoordinatorNotAvailableError, ErrorAction.FIND_COORDINATOR),
        (errors.CoordinatorLoadInProgressError, ErrorAction.FIND_COORDINATOR),
        (errors.NotLeaderOrFollowerError, ErrorAction.REFRESH_METADATA),
        (errors.UnknownTopicOrPartitionError, ErrorAction.REFRESH_METADATA),
        (errors.NotEnoughReplicasError, ErrorAction.RETRY),
        (errors.RequestTimedOutError, ErrorAction.RETRY),
        (errors.TopicAuthorizationFailedError, ErrorAction.FATAL),
        (errors.MessageTooLargeError, ErrorAction.FATAL),
        (errors.InvalidProducerEpochError, ErrorAction.FATAL),
    ],
)
def test_actions_follow_kafkas_table(
    error: type[errors.BrokerResponseError], action: ErrorAction
) -> None:
    assert action_for(error.code) is action
    assert action_of(error("x")) is action


def test_classification_agrees_with_the_generated_flags() -> None:
    for code, cls in ERRORS_BY_CODE.items():
        action = action_for(code)
        if code in errors.COORDINATOR_CODES or code == 0:
            continue
        assert action.retriable == cls.retriable, cls
        assert (action is ErrorAction.REFRESH_METADATA) == cls.invalid_metadata, cls


def test_unknown_codes_and_client_errors() -> None:
    assert action_for(31_337) is ErrorAction.FATAL
    assert action_of(errors.error_for_code(31_337)()) is ErrorAction.FATAL
    assert action_of(errors.KafkaConnectionError("gone")) is ErrorAction.REFRESH_METADATA
    assert action_of(errors.KafkaTimeoutError("slow")) is ErrorAction.RETRY
    assert action_of(errors.AuthenticationError("no")) is ErrorAction.FATAL
    assert action_of(ValueError("bug")) is ErrorAction.FATAL
    assert not ErrorAction.NONE.retriable and not ErrorAction.FATAL.retriable
