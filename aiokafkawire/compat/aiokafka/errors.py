"""``aiokafka.errors`` on aiokafkawire's exception hierarchy.

Every name aiokafka 0.14 exports is here.  Where aiokafkawire has the same error, the name *is*
aiokafkawire's class (``NotLeaderForPartitionError`` is ``errors.NotLeaderOrFollowerError``), so
``except`` clauses written for either library catch what the engine raises.  Broker errors are
matched by error code; the few client-side errors aiokafkawire has no counterpart for are
subclasses of the nearest aiokafkawire class.  ``for_code`` and ``errno`` work as in aiokafka.
"""

from __future__ import annotations

from aiokafkawire import errors as _ours
from aiokafkawire.errors import (
    AuthenticationError,
    BrokerResponseError,
    ClientClosedError,
    CommitFailedError,
    CompressionLibraryMissingError,
    ConfigError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    KafkaValueError,
    NoBrokersAvailableError,
    NoOffsetForPartitionError,
    ProducerFencedClientError,
    ProtocolError,
    RecordTooLargeError,
    UnsupportedVersionForBrokerError,
    error_for_code,
)

# ------------------------------------------------------------------ client-side errors
# aiokafka name -> the aiokafkawire class that is raised for the same condition.
ConsumerStoppedError = ClientClosedError
ProducerClosed = ClientClosedError
IllegalArgumentError = KafkaValueError
IllegalOperation = IllegalStateError
NoBrokersAvailable = NoBrokersAvailableError
KafkaProtocolError = ProtocolError
IncompatibleBrokerVersion = UnsupportedVersionForBrokerError
AuthenticationFailedError = AuthenticationError
KafkaConfigurationError = ConfigError
ProducerFenced = ProducerFencedClientError
UnsupportedCodecError = CompressionLibraryMissingError


class NodeNotReadyError(KafkaConnectionError):
    """A broker connection is not ready (aiokafka name; aiokafkawire raises its parent)."""


class KafkaUnavailableError(KafkaConnectionError):
    """No broker answered (aiokafka name; aiokafkawire raises ``NoBrokersAvailableError``)."""


class CorrelationIdError(ProtocolError):
    """A response's correlation id matched no request (aiokafkawire raises ``ProtocolError``)."""


class Cancelled(KafkaError):
    """A request was cancelled (aiokafka name)."""

    retriable = True


class TooManyInFlightRequests(KafkaError):
    """Too many requests are outstanding on a connection (aiokafka name)."""

    retriable = True


class StaleMetadata(KafkaError):
    """The cached metadata is out of date (aiokafka name)."""

    retriable = True


class MetadataEmptyBrokerList(KafkaError):
    """The metadata named no broker (aiokafka name)."""

    retriable = True


class UnrecognizedBrokerVersion(KafkaError):
    """The broker's version could not be recognised (aiokafka name)."""


class AuthenticationMethodNotSupported(AuthenticationError):
    """The SASL mechanism is not supported (aiokafka name)."""


class QuotaViolationError(KafkaError):
    """A quota was exceeded (aiokafka name)."""


class NoError(BrokerResponseError):
    """Broker error 0: NONE (aiokafka exports it; nothing raises it)."""

    code = 0
    name = "NONE"


# ------------------------------------------------------------------ broker errors by code
# aiokafka's names for broker error codes: each is aiokafkawire's class for the code.
_BROKER_NAMES: dict[str, int] = {
    "UnknownError": -1,
    "OffsetOutOfRangeError": 1,
    "CorruptRecordException": 2,
    "InvalidMessageError": 2,
    "UnknownTopicOrPartitionError": 3,
    "InvalidFetchRequestError": 4,
    "LeaderNotAvailableError": 5,
    "NotLeaderForPartitionError": 6,
    "RequestTimedOutError": 7,
    "BrokerNotAvailableError": 8,
    "ReplicaNotAvailableError": 9,
    "MessageSizeTooLargeError": 10,
    "StaleControllerEpochError": 11,
    "OffsetMetadataTooLargeError": 12,
    "StaleLeaderEpochCodeError": 13,
    "GroupLoadInProgressError": 14,
    "CoordinatorLoadInProgressError": 14,
    "GroupCoordinatorNotAvailableError": 15,
    "CoordinatorNotAvailableError": 15,
    "NotCoordinatorForGroupError": 16,
    "NotCoordinatorError": 16,
    "InvalidTopicError": 17,
    "RecordListTooLargeError": 18,
    "NotEnoughReplicasError": 19,
    "NotEnoughReplicasAfterAppendError": 20,
    "InvalidRequiredAcksError": 21,
    "IllegalGenerationError": 22,
    "InconsistentGroupProtocolError": 23,
    "InvalidGroupIdError": 24,
    "UnknownMemberIdError": 25,
    "InvalidSessionTimeoutError": 26,
    "RebalanceInProgressError": 27,
    "InvalidCommitOffsetSizeError": 28,
    "TopicAuthorizationFailedError": 29,
    "GroupAuthorizationFailedError": 30,
    "ClusterAuthorizationFailedError": 31,
    "InvalidTimestampError": 32,
    "UnsupportedSaslMechanismError": 33,
    "IllegalSaslStateError": 34,
    "UnsupportedVersionError": 35,
    "TopicAlreadyExistsError": 36,
    "InvalidPartitionsError": 37,
    "InvalidReplicationFactorError": 38,
    "InvalidReplicationAssignmentError": 39,
    "InvalidConfigurationError": 40,
    "NotControllerError": 41,
    "InvalidRequestError": 42,
    "UnsupportedForMessageFormatError": 43,
    "PolicyViolationError": 44,
    "OutOfOrderSequenceNumber": 45,
    "DuplicateSequenceNumber": 46,
    "InvalidProducerEpoch": 47,
    "InvalidTxnState": 48,
    "InvalidProducerIdMapping": 49,
    "InvalidTransactionTimeout": 50,
    "ConcurrentTransactions": 51,
    "TransactionCoordinatorFenced": 52,
    "TransactionalIdAuthorizationFailed": 53,
    "SecurityDisabled": 54,
    "OperationNotAttempted": 55,
    "KafkaStorageError": 56,
    "LogDirNotFound": 57,
    "SaslAuthenticationFailed": 58,
    "UnknownProducerId": 59,
    "ReassignmentInProgress": 60,
    "DelegationTokenAuthDisabled": 61,
    "DelegationTokenNotFound": 62,
    "DelegationTokenOwnerMismatch": 63,
    "DelegationTokenRequestNotAllowed": 64,
    "DelegationTokenAuthorizationFailed": 65,
    "DelegationTokenExpired": 66,
    "InvalidPrincipalType": 67,
    "NonEmptyGroup": 68,
    "GroupIdNotFound": 69,
    "FetchSessionIdNotFound": 70,
    "InvalidFetchSessionEpoch": 71,
    "ListenerNotFound": 72,
    "MemberIdRequired": 79,
}
globals().update({name: error_for_code(code) for name, code in _BROKER_NAMES.items()})


def for_code(error_code: int) -> type[BrokerResponseError]:
    """The exception class for a broker error code (aiokafka's ``for_code``)."""
    if error_code == 0:
        return NoError
    return error_for_code(error_code)


# aiokafka keeps this mapping public; it maps every code to its class.
kafka_errors: dict[int, type[BrokerResponseError]] = {
    0: NoError,
    **{code: error_for_code(code) for code in _ours.ERRORS_BY_CODE},
}

__all__ = [
    "AuthenticationFailedError",
    "AuthenticationMethodNotSupported",
    "BrokerResponseError",
    "Cancelled",
    "CommitFailedError",
    "ConsumerStoppedError",
    "CorrelationIdError",
    "IllegalArgumentError",
    "IllegalOperation",
    "IllegalStateError",
    "IncompatibleBrokerVersion",
    "KafkaConfigurationError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaProtocolError",
    "KafkaTimeoutError",
    "KafkaUnavailableError",
    "MetadataEmptyBrokerList",
    "NoBrokersAvailable",
    "NoError",
    "NoOffsetForPartitionError",
    "NodeNotReadyError",
    "ProducerClosed",
    "ProducerFenced",
    "QuotaViolationError",
    "RecordTooLargeError",
    "StaleMetadata",
    "TooManyInFlightRequests",
    "UnrecognizedBrokerVersion",
    "UnsupportedCodecError",
    "for_code",
    "kafka_errors",
    *sorted(_BROKER_NAMES),
]
