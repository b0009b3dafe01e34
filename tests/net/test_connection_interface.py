"""The handshake, SASL and direct reads drive a connection through its public interface only
(issue 24, room 4): no module of ``net/`` reaches into another's object for a private member.

Checked on the source (:mod:`ast`): in the modules that are handed a connection, no attribute
access on it (``connection._x``, ``self._connection._x``) names a private member.  The members
they may use are the Protocols :class:`~aiokafkawire.net.handshake.HandshakeChannel` and
:class:`~aiokafkawire.net.direct_reads.ReceivePath`, which the connection satisfies (mypy checks
the call sites; the test below checks the members exist).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from aiokafkawire.net import direct_reads, handshake
from aiokafkawire.net.connection import BrokerConnection

NET = Path(handshake.__file__).resolve().parent

# Names under which these modules hold a connection.
CONNECTION_NAMES = {"connection", "_connection"}


def _private_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__"):
            continue
        holder = node.value
        name = (
            holder.id
            if isinstance(holder, ast.Name)
            else holder.attr
            if isinstance(holder, ast.Attribute)
            else None
        )
        if name in CONNECTION_NAMES:
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return sorted(found)


@pytest.mark.parametrize("module", ["handshake.py", "direct_reads.py"])
def test_no_private_member_of_the_connection_is_used(module: str) -> None:
    assert _private_uses(NET / module) == []


def test_the_checker_sees_a_private_use(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "def f(connection, self):\n    connection._fail(1)\n    self._connection._x\n"
    )
    assert _private_uses(source) == ["m.py:2: connection._fail", "m.py:3: self._connection._x"]


@pytest.mark.parametrize("protocol", [handshake.HandshakeChannel, direct_reads.ReceivePath])
def test_the_connection_has_every_member_of_the_interfaces(protocol: type) -> None:
    members = [
        name for name in {*protocol.__annotations__, *vars(protocol)} if not name.startswith("_")
    ]
    assert members
    connection = BrokerConnection("127.0.0.1", 1)
    for name in members:
        assert hasattr(connection, name), name
        declared = getattr(protocol, name, None)
        if inspect.isfunction(declared):
            assert callable(getattr(connection, name)), name
