"""The one place that decides between the compiled accelerators and pure Python.

Every optional C extension has a complete pure-Python twin.  A module that has an accelerator
asks :func:`load_accelerator` for it and falls back to its pure path on ``None``; nothing else
reads ``AIOKAFKAWIRE_PURE_PYTHON`` (set it to a non-empty value other than ``0`` to force the
pure paths everywhere, which the tests do to check both).
"""

from __future__ import annotations

import importlib
import os
import warnings
from pathlib import Path
from types import ModuleType
from typing import TypeVar

__all__ = [
    "ACCELERATORS",
    "accelerated",
    "build_failures",
    "fast_fields",
    "load_accelerator",
    "pure_python_forced",
    "warn_about_build_failures",
]

PURE_PYTHON_VARIABLE = "AIOKAFKAWIRE_PURE_PYTHON"

_NamedTuple = TypeVar("_NamedTuple", bound=type)

#: Every optional C extension ``setup.py`` builds, by full module name, with what it speeds up.
ACCELERATORS: dict[str, str] = {
    "aiokafkawire.protocol.records._crecords": "record batch v2 encoding and decoding",
    "aiokafkawire.producer._cmurmur2": "the murmur2 hash of keyed partitioning",
    "aiokafkawire.producer._cproducer": "the common case of Producer.send",
    "aiokafkawire.spark._carrow": "Arrow columns of consumer records for the Spark source",
    "aiokafkawire.compat.aiokafka.consumer._ccompat": "aiokafka's records for the compat consumer",
}


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


def accelerated() -> dict[str, bool]:
    """Which C accelerators are in use: ``{module name: True if used}`` for each of
    :data:`ACCELERATORS`.  All are False when ``AIOKAFKAWIRE_PURE_PYTHON`` forces the pure paths
    or when the package was installed without a C compiler (or with
    ``AIOKAFKAWIRE_NO_EXTENSIONS=1``); the results are the same either way, only slower."""
    return {module: load_accelerator(module) is not None for module in ACCELERATORS}


# Written by setup.py's build_ext when an accelerator failed to compile (absent otherwise).
_BUILD_FAILURES = Path(__file__).with_name("_build_failures.txt")


def build_failures() -> list[str]:
    """The accelerators that failed to compile when this copy was installed, with the reason."""
    try:
        text = _BUILD_FAILURES.read_text(encoding="utf-8")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()]


def warn_about_build_failures() -> None:
    """Warn (a ``RuntimeWarning``) when the installation could not compile an accelerator.

    pip shows a build's output only with ``-v``, so this is where a failed compile becomes
    visible.  Installing with ``AIOKAFKAWIRE_NO_EXTENSIONS=1`` chooses pure Python and does not
    warn; neither does ``AIOKAFKAWIRE_PURE_PYTHON=1``, which asks for the pure paths anyway.
    """
    failures = build_failures()
    if failures and not pure_python_forced():
        warnings.warn(
            "aiokafkawire was installed without some of its C accelerators, so it runs the "
            "(same, slower) pure-Python code: "
            + "; ".join(failures)
            + ". Reinstall with a C compiler and the Python headers, or with "
            "AIOKAFKAWIRE_NO_EXTENSIONS=1 to choose pure Python without this warning.",
            RuntimeWarning,
            stacklevel=3,
        )


def fast_fields(cls: _NamedTuple) -> _NamedTuple:
    """Class decorator: ``cls`` (a NamedTuple class read in hot loops) with its fields as member
    descriptors when the records accelerator is built; unchanged otherwise.

    Python 3.11 specialises reads of member descriptors but not of the ``_tuplegetter``
    properties ``NamedTuple`` makes: ``record.value`` costs ~40 ns less.  Nothing else changes
    (the values, the docstrings, read-only fields, ``_asdict``, pickling, unpacking).
    """
    records = load_accelerator("aiokafkawire.protocol.records._crecords")
    if records is not None:
        records.fields_as_members(cls)
    return cls
