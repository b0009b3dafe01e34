"""The roots of aiokafkawire's exception hierarchy and the errors raised on the client side.

Everything this library raises on purpose derives from :class:`KafkaError`.  Errors that a broker
reports by code derive from :class:`BrokerResponseError`; their classes are generated from the
official error table into :mod:`aiokafkawire.errors.codes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "AdminOperationError",
    "AuthenticationError",
    "AuthorizationError",
    "BackgroundTaskError",
    "BrokerResponseError",
    "BufferFullError",
    "ClientClosedError",
    "CommitFailedError",
    "CompressionLibraryMissingError",
    "ConfigError",
    "ConfigTypeError",
    "ConnectionClosedError",
    "CorruptRecordError",
    "EncodeError",
    "FrameTooLargeError",
    "IllegalStateError",
    "InvalidTransitionError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "KafkaTypeError",
    "KafkaValueError",
    "MisroutedConnectionError",
    "NoBrokersAvailableError",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeClientError",
    "ProducerFencedClientError",
    "ProtocolError",
    "RebalanceInProgressClientError",
    "RecordTooLargeError",
    "SslAuthenticationError",
    "TransactionAbortedError",
    "UnknownCodecError",
    "UnknownMagicError",
    "UnknownTopicError",
    "UnsupportedVersionForBrokerError",
]


class KafkaError(Exception):
    """Root of every error aiokafkawire raises on purpose.

    ``retriable`` tells whether repeating the same operation later may succeed.
    """

    retriable: ClassVar[bool] = False

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(message or self._default_message(), *args)

    @property
    def message(self) -> str:
        """The human-readable message."""
        return str(self.args[0]) if self.args else ""

    def _default_message(self) -> str:
        doc = type(self).__doc__ or ""
        return doc.strip().splitlines()[0] if doc.strip() else type(self).__name__


class AuthenticationError(KafkaError):
    """Authentication with the broker failed (bad credentials, mechanism, or SASL exchange)."""


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake failed on a certificate: unknown CA, host name mismatch, or the
    broker refused (or required) a client certificate.  Not retriable: trying again fails the
    same way."""


class AuthorizationError(KafkaError):
    """The authenticated principal may not perform the operation."""


class BrokerResponseError(KafkaError):
    """An error code returned by a broker; one subclass exists per code of the error table.

    ``description`` is Apache Kafka's own description of the error (its ``Errors`` enum): the
    message of an exception raised without one.
    """

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    invalid_metadata: ClassVar[bool] = False
    description: ClassVar[str] = ""
    #: The error code under the name kafka-python and aiokafka give it (the same as ``code``).
    errno: ClassVar[int] = -1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.errno = cls.code

    def __str__(self) -> str:
        text = self.message
        prefix = f"[Error {self.code}] {self.name}"
        return f"{prefix}: {text}" if text else prefix

    def _default_message(self) -> str:
        return self.description


# ---------------------------------------------------------------------------------------------
# Client-side errors
# ---------------------------------------------------------------------------------------------


class KafkaValueError(KafkaError, ValueError):
    """An argument has the right type but a value the call cannot accept."""


class KafkaTypeError(KafkaError, TypeError):
    """An argument has the wrong type (the message names it and what was expected)."""


class ConfigError(KafkaValueError):
    """A configuration value is invalid (a ``ValueError``; see also :class:`ConfigTypeError`)."""


class ConfigTypeError(ConfigError, KafkaTypeError):
    """A configuration option has the wrong type; both a ``ValueError`` and a ``TypeError``."""


class KafkaConnectionError(KafkaError):
    """A connection to a broker could not be established or was lost."""

    retriable = True


class ConnectionClosedError(KafkaConnectionError):
    """The connection was closed while a request was outstanding."""


class MisroutedConnectionError(KafkaConnectionError):
    """A connection reached another cluster or another broker than the metadata promised
    (KIP-1242: the broker refused the cluster id and node id sent in ApiVersions v5).  The
    connection is closed before any request of the client goes out on it."""


class NoBrokersAvailableError(KafkaConnectionError):
    """None of the bootstrap or known brokers could be reached."""


class KafkaTimeoutError(KafkaError, TimeoutError):
    """An operation did not complete within its timeout on the client side.

    Also a builtin ``TimeoutError``, so ``except TimeoutError`` catches it as well.
    """

    retriable = True


class ProtocolError(KafkaError):
    """The peer broke the Kafka protocol: malformed frame, correlation id mismatch, bad encoding."""


class FrameTooLargeError(ProtocolError):
    """A frame exceeded the configured maximum size."""


class EncodeError(KafkaValueError):
    """A value cannot be expressed in the protocol version chosen for a request."""


class UnsupportedVersionForBrokerError(KafkaError):
    """No protocol version of an API is supported by both this client and the broker."""


class CorruptRecordError(KafkaError):
    """A record batch or message failed its CRC check or is structurally invalid."""


class UnknownCodecError(KafkaError):
    """A record batch names a compression codec this client does not know."""


class UnknownMagicError(KafkaError):
    """A record batch or message has an unknown magic (format version) byte."""


class CompressionLibraryMissingError(KafkaError):
    """The library needed for a compression codec is not installed."""


class BufferFullError(KafkaTimeoutError):
    """The producer's buffer stayed full for longer than ``max_block_ms``."""


class RecordTooLargeError(KafkaValueError):
    """A record is larger than the producer's ``max_request_size`` (or ``buffer_memory``)."""


class ClientClosedError(KafkaError):
    """The client was used after it was closed."""


class BackgroundTaskError(KafkaError):
    """A client's background task ended without its owner stopping it (a bug, never silent)."""


class UnknownTopicError(KafkaError):
    """A topic is not known to the cluster after the bounded wait for its metadata."""

    retriable = True


class IllegalStateError(KafkaError):
    """An operation was called in a state that does not allow it."""


class InvalidTransitionError(IllegalStateError):
    """A state machine was asked for a transition its table does not declare.

    Raised by :class:`aiokafkawire._fsm.TransitionTable`; names the machine, the state it was in
    and the event it was given, so the bug (ours, never the user's) can be found from the message.
    """

    def __init__(self, machine: str, state: object, event: object) -> None:
        super().__init__(f"{machine}: no transition from {state} on {event}")
        self.machine = machine
        self.state = state
        self.event = event


class CommitFailedError(KafkaError):
    """An offset commit cannot complete: the group rebalanced or the member was fenced."""


class RebalanceInProgressClientError(CommitFailedError):
    """A commit was attempted while the group was rebalancing; retry after the rebalance."""

    retriable = True


class ProducerFencedClientError(KafkaError):
    """Another producer with the same ``transactional_id`` fenced this one; it cannot continue."""


class TransactionAbortedError(KafkaError):
    """The record was dropped because its transaction was aborted before it was sent."""


class OffsetOutOfRangeClientError(KafkaError):
    """The fetch position is out of range and ``auto_offset_reset`` is ``"none"``."""


class NoOffsetForPartitionError(KafkaError):
    """A partition has no committed offset and ``auto_offset_reset`` is ``"none"``."""


class AdminOperationError(KafkaError):
    """An admin call failed for at least one of its items (topics, groups, partitions, ...).

    ``results`` holds every item's result, successful ones included, keyed as the call returns
    them; ``errors`` maps each failed item to its error.  Pass ``raise_on_error=False`` to the
    admin call to get the results back instead of this exception.  ``retriable`` is true when
    every failure is retriable.
    """

    def __init__(
        self, operation: str, results: Mapping[Any, Any], failures: Mapping[Any, KafkaError]
    ) -> None:
        self.operation = operation
        self.results: Mapping[Any, Any] = results
        self.errors: Mapping[Any, KafkaError] = failures
        shown = "; ".join(f"{item}: {error}" for item, error in list(failures.items())[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(
            f"{operation} failed for {len(failures)} of {len(results)} items: {shown}{more}"
        )

    @property
    def retriable(self) -> bool:  # type: ignore[override]
        """True when every failed item may succeed if the call is repeated."""
        return bool(self.errors) and all(e.retriable for e in self.errors.values())
