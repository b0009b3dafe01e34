"""aiokafkawire's single exception hierarchy, rooted at :class:`KafkaError`.

Broker error codes map to generated classes (:mod:`aiokafkawire.errors.codes`); look them up with
:func:`error_for_code` or raise them with :func:`raise_for_code`.
"""

from __future__ import annotations

from aiokafkawire.errors.actions import *  # noqa: F403
from aiokafkawire.errors.base import *  # noqa: F403
from aiokafkawire.errors.base import BrokerResponseError, UnsupportedVersionForBrokerError
from aiokafkawire.errors.codes import *  # noqa: F403
from aiokafkawire.errors.codes import ERRORS_BY_CODE, InvalidRecordStateError


class UnknownBrokerError(BrokerResponseError):
    """A broker returned an error code this client's error table does not know."""

    name = "UNKNOWN"


class AcquisitionLockTimeoutError(InvalidRecordStateError):
    """A share-group record was acknowledged after its acquisition lock had expired.

    The broker has made the record available again (it may already be with another consumer),
    so the acknowledgement was not applied.  Raised or reported by the share consumer; it is an
    :class:`InvalidRecordStateError`, as the broker would answer.
    """


class ShareGroupsUnsupportedError(UnsupportedVersionForBrokerError):
    """The cluster does not serve share groups (KIP-932)."""


_UNKNOWN_BY_CODE: dict[int, type[BrokerResponseError]] = {}


def error_for_code(code: int) -> type[BrokerResponseError]:
    """Return the exception class for a broker error code (a subclass is made for unknown codes)."""
    try:
        return ERRORS_BY_CODE[code]
    except KeyError:
        pass
    cls = _UNKNOWN_BY_CODE.get(code)
    if cls is None:
        cls = type(f"UnknownBrokerError{code}", (UnknownBrokerError,), {"code": code})
        _UNKNOWN_BY_CODE[code] = cls
    return cls


def raise_for_code(code: int, message: str | None = "") -> None:
    """Raise the exception for ``code`` unless it is 0 (no error)."""
    if code:
        raise error_for_code(code)(message or "")
