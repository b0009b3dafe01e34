"""A broker connection's lifecycle, declared as one transition table.

::

    NEW --connect--> CONNECTING --connected--> NEGOTIATING (ApiVersions)
    NEGOTIATING --authenticate--> AUTHENTICATING (SASL)
    NEGOTIATING | AUTHENTICATING --handshake_done--> READY
    READY --reauthenticate--> REAUTHENTICATING --handshake_done--> READY     (KIP-368)
    any live state --fail--> CLOSING --transport_gone--> CLOSED

A connection moves only through :data:`CONNECTION_LIFECYCLE`; an undeclared move raises
:class:`~aiokafkawire.errors.InvalidTransitionError` naming the state and the event.  The hot
path never consults the table: it compares the connection's state attribute
(``state is ConnectionState.READY``), one identity check per request as before.
"""

from __future__ import annotations

import enum

from aiokafkawire._fsm import TransitionTable

__all__ = ["CONNECTION_LIFECYCLE", "ConnectionState", "LifecycleEvent"]


class ConnectionState(enum.Enum):
    """Where a :class:`~aiokafkawire.net.connection.BrokerConnection` is in its life."""

    NEW = "new"  # constructed, not opened
    CONNECTING = "connecting"  # TCP (and TLS) connect under way
    NEGOTIATING = "negotiating"  # ApiVersions exchange
    AUTHENTICATING = "authenticating"  # first SASL exchange
    READY = "ready"  # requests flow
    REAUTHENTICATING = "reauthenticating"  # KIP-368: new requests wait, in-flight ones finish
    CLOSING = "closing"  # failed or closed: the sticky error is set, the transport is going
    CLOSED = "closed"  # the transport is gone


class LifecycleEvent(enum.Enum):
    """What moves a connection from one :class:`ConnectionState` to the next."""

    CONNECT = "connect"
    CONNECTED = "connected"
    AUTHENTICATE = "authenticate"
    HANDSHAKE_DONE = "handshake done"
    REAUTHENTICATE = "reauthenticate"
    FAIL = "fail"
    TRANSPORT_GONE = "transport gone"


_S = ConnectionState
_E = LifecycleEvent
_LIVE = (_S.NEW, _S.CONNECTING, _S.NEGOTIATING, _S.AUTHENTICATING, _S.READY, _S.REAUTHENTICATING)

#: The connection's whole lifecycle: ``(state, event) -> next state``.
CONNECTION_LIFECYCLE: TransitionTable[ConnectionState, LifecycleEvent] = TransitionTable.from_rows(
    "broker connection",
    [
        (_S.NEW, _E.CONNECT, _S.CONNECTING),
        (_S.CONNECTING, _E.CONNECTED, _S.NEGOTIATING),
        (_S.NEGOTIATING, _E.AUTHENTICATE, _S.AUTHENTICATING),
        (_S.NEGOTIATING, _E.HANDSHAKE_DONE, _S.READY),
        (_S.AUTHENTICATING, _E.HANDSHAKE_DONE, _S.READY),
        (_S.READY, _E.REAUTHENTICATE, _S.REAUTHENTICATING),
        (_S.REAUTHENTICATING, _E.HANDSHAKE_DONE, _S.READY),
        *((state, _E.FAIL, _S.CLOSING) for state in _LIVE),
        (_S.CLOSING, _E.TRANSPORT_GONE, _S.CLOSED),
    ],
)
