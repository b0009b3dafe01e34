"""Optional C accelerators; all other metadata lives in pyproject.toml.

The extensions ``aiokafkawire.protocol.records._crecords`` (record batches),
``aiokafkawire.producer._cmurmur2`` (keyed partitioning), ``aiokafkawire.producer._cproducer``
(the common case of ``Producer.send``), ``aiokafkawire.spark._carrow`` (Arrow columns of
consumer records for the Spark source) and ``aiokafkawire.compat.aiokafka.consumer._ccompat``
(aiokafka's records for the compat consumer) are built when a C compiler and the Python headers are
available.  If building one fails for any reason, installation still succeeds and the
pure-Python implementation is used; the failure is written into the package
(``aiokafkawire/_build_failures.txt``), so that ``import aiokafkawire`` warns about it once, where
the user sees it (pip shows a build's own output only with ``-v``).
``AIOKAFKAWIRE_NO_EXTENSIONS=1`` skips the build (no warning: pure Python was chosen).
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Read by aiokafkawire/_compiled.py: one line per accelerator that failed to build.
FAILURES_FILE = os.path.join("aiokafkawire", "_build_failures.txt")


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing: the extension is an accelerator only."""

    def run(self) -> None:
        self._failures: list[str] = []
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers, unsupported platform ...
            self._skip("the C extensions", exc)
        target = FAILURES_FILE if self.inplace else os.path.join(self.build_lib, FAILURES_FILE)
        if self._failures:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as handle:
                handle.write("".join(f"{line}\n" for line in self._failures))
        elif os.path.exists(target):
            os.remove(target)

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type == "unix":
            ext.extra_compile_args = [*ext.extra_compile_args, "-Wall"]
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._skip(ext.name, exc)

    def _skip(self, what: str, exc: BaseException) -> None:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        self._failures.append(f"{what}: {reason}")
        print(
            f"WARNING: could not build {what} ({reason}); the pure-Python implementation is used",
            file=sys.stderr,
        )


def _no_extensions() -> bool:
    return os.environ.get("AIOKAFKAWIRE_NO_EXTENSIONS", "").strip() not in ("", "0")


# The records accelerator's C interface, used by the producer's fast path too.
RECORDS_API_HEADER = "aiokafkawire/protocol/records/_crecords_api.h"
ext_modules = []
if not _no_extensions() and sys.implementation.name == "cpython":
    ext_modules.append(
        Extension(
            "aiokafkawire.protocol.records._crecords",
            sources=["aiokafkawire/protocol/records/_crecords.c"],
            depends=[RECORDS_API_HEADER],
            optional=True,
        )
    )
    ext_modules.append(
        Extension(
            "aiokafkawire.producer._cmurmur2",
            sources=["aiokafkawire/producer/_cmurmur2.c"],
            optional=True,
        )
    )
    ext_modules.append(
        Extension(
            "aiokafkawire.producer._cproducer",
            sources=["aiokafkawire/producer/_cproducer.c"],
            depends=[RECORDS_API_HEADER],
            optional=True,
        )
    )
    ext_modules.append(
        Extension(
            "aiokafkawire.spark._carrow",
            sources=["aiokafkawire/spark/_carrow.c"],
            optional=True,
        )
    )
    ext_modules.append(
        Extension(
            "aiokafkawire.compat.aiokafka.consumer._ccompat",
            sources=["aiokafkawire/compat/aiokafka/consumer/_ccompat.c"],
            optional=True,
        )
    )

setup(ext_modules=ext_modules, cmdclass={"build_ext": OptionalBuildExt})
