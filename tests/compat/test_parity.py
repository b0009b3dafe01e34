"""The compatibility layer has aiokafka 0.14's public API (issue 20).

Introspects the real aiokafka and ``aiokafkawire.compat.aiokafka`` side by side: every public
name of the modules frameworks import exists in the layer, with the same parameter names, order,
kinds and defaults for every public method; every exception name is an exception of aiokafkawire's
hierarchy.  What the layer leaves out is listed, with the reason, in
docs/migrating-from-aiokafka.md ("Not provided"), and that list is checked both ways.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from aiokafkawire.errors import KafkaError

aiokafka = pytest.importorskip("aiokafka")

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "migrating-from-aiokafka.md"
MODULES = [
    "",
    ".structs",
    ".errors",
    ".abc",
    ".admin",
    ".helpers",
    ".partitioner",
    ".producer",
    ".consumer",
    ".coordinator.protocol",
    ".coordinator.assignors.abstract",
    ".coordinator.assignors.roundrobin",
    ".coordinator.assignors.range",
    ".coordinator.assignors.sticky.sticky_assignor",
]


def _public(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", module.__name__) == module.__name__
    ]


def _default(value: Any) -> Any:
    if value is inspect.Parameter.empty or isinstance(value, (int, str, float, bool, type(None))):
        return value
    if isinstance(value, tuple):
        return tuple(getattr(item, "__name__", repr(item)) for item in value)
    if isinstance(value, type):
        return value.__name__
    return type(value).__name__  # sentinels and default instances: compared by their type


def _shape(function: Any) -> list[tuple[str, Any, Any]]:
    signature = inspect.signature(function)
    return [(p.name, p.kind, _default(p.default)) for p in signature.parameters.values()]


def _callables(cls: type) -> dict[str, Any]:
    found = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith(("builtins", "typing", "abc")):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") and name != "__init__":
                continue
            if isinstance(value, (classmethod, staticmethod)) or inspect.isfunction(value):
                found[name] = value
    return found


def _differences() -> tuple[set[str], list[str]]:
    """(names the layer lacks, signature mismatches) found by introspection."""
    missing: set[str] = set()
    mismatches: list[str] = []
    for suffix in MODULES:
        real = importlib.import_module("aiokafka" + suffix)
        ours = importlib.import_module("aiokafkawire.compat.aiokafka" + suffix)
        for name in _public(real):
            qualified = f"aiokafka{suffix}.{name}"
            if not hasattr(ours, name):
                missing.add(qualified)
                continue
            theirs, mine = getattr(real, name), getattr(ours, name)
            if not inspect.isclass(theirs) or issubclass(theirs, BaseException):
                continue
            for attr in _callables(theirs):
                if not hasattr(mine, attr):
                    missing.add(f"{qualified}.{attr}")
                    continue
                try:
                    wanted, got = _shape(getattr(theirs, attr)), _shape(getattr(mine, attr))
                except (TypeError, ValueError):
                    continue
                if wanted != got:
                    mismatches.append(f"{qualified}.{attr}: aiokafka {wanted}, ours {got}")
    return missing, mismatches


def _not_provided_in_guide() -> set[str]:
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## Not provided by the compatibility layer", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(aiokafka[\w.]*)` \|", section, flags=re.MULTILINE))


def test_every_public_name_and_signature_matches_or_is_listed_in_the_guide() -> None:
    missing, mismatches = _differences()
    listed = _not_provided_in_guide()
    assert not mismatches, "\n".join(mismatches)
    assert missing - listed == set(), f"missing and not listed in the guide: {missing - listed}"
    assert listed - missing == set(), f"listed as not provided but present: {listed - missing}"


def test_every_aiokafka_exception_is_one_of_ours() -> None:
    import aiokafka.errors as real_errors

    from aiokafkawire.compat.aiokafka import errors as compat_errors

    names = [
        name
        for name, value in vars(real_errors).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == real_errors.__name__
    ]
    assert len(names) >= 100
    for name in names:
        ours = getattr(compat_errors, name)
        assert issubclass(ours, KafkaError), name
        errno = getattr(getattr(real_errors, name), "errno", None)
        if isinstance(errno, int):
            assert ours.errno == errno, name
            assert compat_errors.for_code(errno).errno == errno


def test_broker_errors_are_the_engines_classes_so_except_clauses_work_both_ways() -> None:
    from aiokafkawire import errors
    from aiokafkawire.compat.aiokafka import errors as compat_errors

    assert compat_errors.NotLeaderForPartitionError is errors.NotLeaderOrFollowerError
    assert compat_errors.KafkaError is errors.KafkaError
    assert compat_errors.ConsumerStoppedError is errors.ClientClosedError
    assert compat_errors.KafkaConfigurationError is errors.ConfigError
    with pytest.raises(compat_errors.NotLeaderForPartitionError):
        errors.raise_for_code(6, "moved")


def test_install_as_aiokafka_serves_every_module_frameworks_import() -> None:
    import subprocess
    import sys

    program = (
        "from aiokafkawire.compat import install_as_aiokafka\n"
        "install_as_aiokafka()\n"
        "import aiokafka, aiokafka.admin.client, aiokafka.errors\n"
        "from aiokafka.producer.producer import _missing\n"
        "from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor\n"
        "from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor\n"
        "from aiokafka.consumer.consumer import AIOKafkaConsumer\n"
        "assert aiokafka.AIOKafkaConsumer is AIOKafkaConsumer\n"
        "assert aiokafka.__name__.startswith('aiokafkawire.compat'), aiokafka.__name__\n"
        "print(aiokafka.__version__)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.14.0"


def test_member_metadata_and_assignment_bytes_equal_aiokafkas() -> None:
    from aiokafka.coordinator import protocol as real

    from aiokafkawire.compat.aiokafka.coordinator import protocol as ours

    metadata = (1, ["a", "bb"], b"\x01data")
    assert ours.ConsumerProtocolMemberMetadata(*metadata).encode() == (
        real.ConsumerProtocolMemberMetadata(*metadata).encode()
    )
    assignment = (0, [("a", [0, 2]), ("bb", [1])], b"")
    encoded = real.ConsumerProtocolMemberAssignment(*assignment).encode()
    assert ours.ConsumerProtocolMemberAssignment(*assignment).encode() == encoded
    decoded = ours.ConsumerProtocolMemberAssignment.decode(encoded)
    assert decoded.partitions() == [("a", 0), ("a", 2), ("bb", 1)]
    assert decoded.get_item("version") == 0
