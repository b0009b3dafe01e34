"""What a client does about an error: the one classification table (franz-go's ``kerr`` spirit).

Every broker error code maps to one :class:`ErrorAction`, derived from the generated error
classes (:mod:`aiokafkawire.errors.codes`: ``retriable`` and ``invalid_metadata`` come from
Kafka's own error table), so a call site asks ``action_for(code)`` instead of keeping its own
set of codes.  The table is computed once at import; codes the table does not know are fatal.

Order of precedence, first match wins:

1. ``NONE`` for code 0.
2. ``FIND_COORDINATOR`` for the coordinator errors (:data:`COORDINATOR_CODES`): the request went
   to a broker that is not (or not yet) the coordinator; look the coordinator up again, then
   retry.  COORDINATOR_LOAD_IN_PROGRESS is among them: looking up again is harmless and finds
   the same broker while it loads, which is what this client has always done.
3. ``REFRESH_METADATA`` for errors that say the client's metadata is stale (leader moved,
   unknown topic or partition, ...): refresh, then retry.
4. ``RETRY`` for any other retriable error: retry after a backoff.
5. ``FATAL`` for everything else: raise to the caller.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from aiokafkawire.errors.base import (
    BrokerResponseError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProtocolError,
)
from aiokafkawire.errors.codes import (
    ERRORS_BY_CODE,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    FencedLeaderEpochError,
    FencedMemberEpochError,
    FetchSessionIdNotFoundError,
    FetchSessionTopicIdErrorError,
    GroupIdNotFoundError,
    IllegalGenerationError,
    InvalidFetchSessionEpochError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    StaleMemberEpochError,
    TelemetryTooLargeError,
    ThrottlingQuotaExceededError,
    TransactionCoordinatorFencedError,
    UnknownLeaderEpochError,
    UnknownMemberIdError,
    UnknownProducerIdError,
    UnknownSubscriptionIdError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
    UnsupportedVersionError,
)

__all__ = [
    "COORDINATOR_CODES",
    "COORDINATOR_ERRORS",
    "COORDINATOR_LOOKUP_ERRORS",
    "ERROR_ACTIONS",
    "FENCING_ERRORS",
    "FETCH_SESSION_CODES",
    "GROUP_MEMBERSHIP_CODES",
    "LEADER_CHANGED_CODES",
    "LEADER_EPOCH_CODES",
    "MEMBER_FENCED_CODES",
    "NOT_A_CONSUMER_GROUP_CODES",
    "NOT_FOUND_ERRORS",
    "SEQUENCE_ERRORS",
    "STALE_LEADER_CODES",
    "TELEMETRY_RESUBSCRIBE_LATER_CODES",
    "TELEMETRY_RESUBSCRIBE_NOW_CODES",
    "TXN_UNRETRIABLE_ERRORS",
    "UNREACHABLE_ERRORS",
    "ErrorAction",
    "action_for",
    "action_of",
    "retriable_in_background",
]


class ErrorAction(enum.Enum):
    """What to do about an error before (maybe) trying again."""

    NONE = "none"
    RETRY = "retry"
    REFRESH_METADATA = "refresh metadata"
    FIND_COORDINATOR = "find coordinator"
    FATAL = "fatal"

    @property
    def retriable(self) -> bool:
        """Whether the operation may be tried again after the action."""
        return self not in (ErrorAction.NONE, ErrorAction.FATAL)


#: The errors that mean "ask for the coordinator again".
COORDINATOR_ERRORS: tuple[type[BrokerResponseError], ...] = (
    NotCoordinatorError,
    CoordinatorNotAvailableError,
    CoordinatorLoadInProgressError,
)
COORDINATOR_CODES: frozenset[int] = frozenset(cls.code for cls in COORDINATOR_ERRORS)


def _classify(cls: type[BrokerResponseError]) -> ErrorAction:
    if cls.code == 0:
        return ErrorAction.NONE
    if cls.code in COORDINATOR_CODES:
        return ErrorAction.FIND_COORDINATOR
    if cls.invalid_metadata:
        return ErrorAction.REFRESH_METADATA
    if cls.retriable:
        return ErrorAction.RETRY
    return ErrorAction.FATAL


#: Broker error code -> action, for every code in Kafka's error table.
ERROR_ACTIONS: Mapping[int, ErrorAction] = MappingProxyType(
    {code: _classify(cls) for code, cls in ERRORS_BY_CODE.items()} | {0: ErrorAction.NONE}
)


def action_for(code: int) -> ErrorAction:
    """The action for a broker error code (``FATAL`` for a code the table does not know)."""
    return ERROR_ACTIONS.get(code, ErrorAction.FATAL)


def action_of(exc: BaseException) -> ErrorAction:
    """The action for an exception: a broker error by its code, a lost connection refreshes
    metadata (the broker may be gone), any other retriable :class:`KafkaError` is retried, and
    everything else is fatal."""
    if isinstance(exc, BrokerResponseError):
        return action_for(exc.code)
    if isinstance(exc, KafkaConnectionError):
        return ErrorAction.REFRESH_METADATA
    if isinstance(exc, KafkaError) and exc.retriable:
        return ErrorAction.RETRY
    return ErrorAction.FATAL


def retriable_in_background(exc: BaseException) -> bool:
    """Whether a background loop (a group's join loop, its heartbeats) tries again after ``exc``.

    What :func:`action_of` retries, and also a malformed answer (:class:`ProtocolError`): the
    connection that read it is closed, and a new one may fare better.  The Java client's
    ``NetworkClient`` likewise drops a connection whose answer it cannot read, and its
    coordinator sees a (retriable) disconnect.  A caller with a deadline gets the
    :class:`ProtocolError` instead, as :func:`action_of` says.
    """
    return isinstance(exc, ProtocolError) or action_of(exc).retriable


# Errors that say more than their action: the groups a protocol step decides on, each defined
# once here (from the generated classes) rather than as a set of codes at the call site.


def _codes(*classes: type[BrokerResponseError]) -> frozenset[int]:
    return frozenset(cls.code for cls in classes)


#: The member's generation (classic) or epoch (KIP-848) is not the group's any more: a commit
#: with it is refused, the partitions may be another member's, the member rejoins.
GROUP_MEMBERSHIP_CODES = _codes(
    IllegalGenerationError,
    UnknownMemberIdError,
    FencedInstanceIdError,
    StaleMemberEpochError,
    FencedMemberEpochError,
)
#: KIP-848: the coordinator does not know the member or its epoch; it rejoins with epoch 0.
MEMBER_FENCED_CODES = _codes(FencedMemberEpochError, UnknownMemberIdError)
#: The leader epoch a request carried is not the current leader's (KIP-320).
LEADER_EPOCH_CODES = _codes(FencedLeaderEpochError, UnknownLeaderEpochError)
#: The partition's leader changed: a position read under the old one is validated (KIP-320).
LEADER_CHANGED_CODES = _codes(FencedLeaderEpochError, NotLeaderOrFollowerError)
#: Retried by the table, but the fetch path looks the leader up again all the same: the leader
#: may have moved, or the topic id changed.
STALE_LEADER_CODES = _codes(
    UnknownLeaderEpochError, OffsetNotAvailableError, FetchSessionTopicIdErrorError
)
#: KIP-227: the fetch session is gone or out of step: start over with a full fetch.
FETCH_SESSION_CODES = _codes(FetchSessionIdNotFoundError, InvalidFetchSessionEpochError)
#: The errors worth another FindCoordinator: the answering broker is gone, or is not (yet) the
#: coordinator (Java's ``FindCoordinator`` handling retries both).
COORDINATOR_LOOKUP_ERRORS: tuple[type[KafkaError], ...] = (
    KafkaConnectionError,
    *COORDINATOR_ERRORS,
)

#: KIP-848 ConsumerGroupDescribe's answers for a group to describe with DescribeGroups instead
#: (Java's Admin does the same fallback): not a consumer-protocol group (or none at all), or a
#: broker without KIP-848 groups (Kafka 3.9).
NOT_A_CONSUMER_GROUP_CODES = _codes(GroupIdNotFoundError, UnsupportedVersionError)

# Producer: idempotence and transactions.

#: The idempotent producer's sequence errors (KIP-360, Java's ``TransactionManager``): an
#: earlier batch of the partition failed, or the broker forgot the producer id; the batch is
#: resent in order, after the epoch bump when the sequence has to start over.
SEQUENCE_ERRORS: tuple[type[BrokerResponseError], ...] = (
    OutOfOrderSequenceNumberError,
    UnknownProducerIdError,
)
#: Another producer with the same ``transactional_id`` (or a newer epoch) took over (Java's
#: ``ProducerFencedException``; KIP-588's INVALID_PRODUCER_EPOCH, KIP-447's coordinator
#: fencing): fatal for this producer.
FENCING_ERRORS: tuple[type[BrokerResponseError], ...] = (
    ProducerFencedError,
    InvalidProducerEpochError,
    TransactionCoordinatorFencedError,
)
#: A transaction step (EndTxn) no retry can fix: fenced, or the transaction's state moved on
#: without this client (INVALID_TXN_STATE: already committed or aborted, Java treats it as fatal).
TXN_UNRETRIABLE_ERRORS: tuple[type[BrokerResponseError], ...] = (
    *FENCING_ERRORS,
    InvalidTxnStateError,
)

# Client telemetry (KIP-714, "Error handling": what a client does after each answer).

#: GetTelemetrySubscriptions again at once: the subscription changed (UNKNOWN_SUBSCRIPTION_ID)
#: or the compression the client chose is refused (UNSUPPORTED_COMPRESSION_TYPE).
TELEMETRY_RESUBSCRIBE_NOW_CODES = _codes(
    UnknownSubscriptionIdError, UnsupportedCompressionTypeError
)
#: GetTelemetrySubscriptions again after the push interval: the push was too large
#: (TELEMETRY_TOO_LARGE) or throttled (THROTTLING_QUOTA_EXCEEDED).
TELEMETRY_RESUBSCRIBE_LATER_CODES = _codes(TelemetryTooLargeError, ThrottlingQuotaExceededError)

# The command line's exit codes (``aiokafkawire.cli.exit_codes``).

#: The topic, partition or group named does not exist (exit code NOT_FOUND).
NOT_FOUND_ERRORS: tuple[type[KafkaError], ...] = (
    UnknownTopicOrPartitionError,
    GroupIdNotFoundError,
)
#: No broker answered in time (exit code UNREACHABLE).
UNREACHABLE_ERRORS: tuple[type[KafkaError], ...] = (KafkaConnectionError, KafkaTimeoutError)
