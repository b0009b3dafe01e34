"""The one place that decides between the compiled accelerators and pure Python.

Every optional C extension has a complete pure-Python twin.  A module that has an accelerator
asks :func:`load_accelerator` for it and falls back to its pure path on ``None``; nothing else
reads ``AIOKAFKAWIRE_PURE_PYTHON`` (set it to a non-empty value other than ``0`` to force the
pure paths everywhere, which the tests do to check both).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["load_accelerator", "pure_python_forced"]

PURE_PYTHON_VARIABLE = "AIOKAFKAWIRE_PURE_PYTHON"


def pure_python_forced() -> bool:
    """Whether the environment forces the pure-Python paths (read at each call, for tests)."""
    return os.environ.get(PURE_PYTHON_VARIABLE, "").strip() not in ("", "0")


def load_accelerator(module: str) -> ModuleType | None:
    """The compiled module ``module`` (a full dotted name), or None when pure Python is forced
    or the extension was not built (no compiler at install time, another interpreter...)."""
    if pure_python_forced():
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
