"""The warning for a started client dropped without being stopped.

As aiokafka's "Unclosed AIOKafkaProducer": a ``ResourceWarning`` from the client's ``__del__``,
naming the client and saying how to stop it, and what was lost (records a producer had not
delivered).  The client's tasks ended before (``asyncio.run`` cancels them at loop shutdown; see
:mod:`aiokafkawire._tasks`): while they run they hold the client, so it is not collected then.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

log = logging.getLogger("aiokafkawire")


def warn_unclosed(
    client: object,
    name: str,
    stop_call: str,
    lost: str = "",
    *,
    _warn: Callable[..., Any] = warnings.warn,
) -> None:
    """Warn that ``client`` (of class ``name``) was started and never stopped.

    ``stop_call`` is the advice, e.g. ``producer.stop()`` (awaited); ``lost`` says what its drop
    cost (e.g. undelivered records), and is logged at ERROR too: a ResourceWarning is hidden by
    default, a loss must not be.  Never raises: it runs in ``__del__``, maybe at interpreter exit.
    """
    try:
        cost = f"; {lost}" if lost else ""
        message = (
            f"unclosed {name} {client!r}: it was started and never stopped{cost}. "
            f"Call `await {stop_call}` before dropping it, or use `async with {name}(...)`"
        )
        _warn(message, ResourceWarning, source=client, stacklevel=2)
        if lost:
            log.error("%s", message)
    except Exception:  # interpreter shutdown tore down what the warning needs: nothing to do
        pass
