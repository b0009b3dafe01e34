"""The old home of the share-group admin types, now in :mod:`aiokafkawire.admin.share_groups`.

Kept so that ``from aiokafkawire.consumer.share.admin import ShareGroupDescription`` (the path
the docs showed before) still works.  The admin client sits above the consumer, so the names are
looked up on first use rather than imported here.
"""

from __future__ import annotations

import importlib
from typing import Any

_MOVED = frozenset(
    {"ShareGroupDescription", "ShareGroupListing", "ShareGroupOffset", "ShareMemberDescription"}
)


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("aiokafkawire.admin.share_groups"), name)
