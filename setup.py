"""Optional C accelerators; all other metadata lives in pyproject.toml.

The extensions ``aiokafkawire.protocol.records._crecords`` (record batches),
``aiokafkawire.producer._cmurmur2`` (keyed partitioning), ``aiokafkawire.producer._cproducer``
(the common case of ``Producer.send``) and ``aiokafkawire.spark._carrow`` (Arrow columns of
consumer records for the Spark source) are built when a C compiler and the Python headers are
available.  If building it fails for any reason, installation still succeeds
and the pure-Python implementation is used.  ``AIOKAFKAWIRE_NO_EXTENSIONS=1`` skips the build.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing: the extension is an accelerator only."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers, unsupported platform ...
            self._skip("the C extensions", exc)

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type == "unix":
            ext.extra_compile_args = [*ext.extra_compile_args, "-Wall"]
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._skip(ext.name, exc)

    @staticmethod
    def _skip(what: str, exc: BaseException) -> None:
        print(
            f"WARNING: could not build {what} ({exc}); the pure-Python implementation is used",
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

setup(ext_modules=ext_modules, cmdclass={"build_ext": OptionalBuildExt})
