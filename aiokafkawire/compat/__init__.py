"""Compatibility layers: other clients' APIs on aiokafkawire's engine.

:func:`install_as_aiokafka` makes ``import aiokafka`` (and every ``aiokafka.*`` module a program
or framework imports) resolve to :mod:`aiokafkawire.compat.aiokafka`, as PyMySQL's
``install_as_MySQLdb()`` does for MySQLdb: existing code moves in one line.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings

__all__ = ["install_as_aiokafka", "uninstall_aiokafka"]

_PACKAGE = "aiokafkawire.compat.aiokafka"
_installed: dict[str, object] = {}


def install_as_aiokafka() -> None:
    """Register :mod:`aiokafkawire.compat.aiokafka` and its modules as ``aiokafka``.

    Call it before anything imports ``aiokafka``.  If the real aiokafka was imported already,
    its modules are replaced (objects taken from it before stay aiokafka's) and a
    ``RuntimeWarning`` says so.  Calling it again does nothing.
    """
    if _installed:
        return
    if "aiokafka" in sys.modules and not _is_ours(sys.modules["aiokafka"]):
        warnings.warn(
            "aiokafka was imported before install_as_aiokafka(); objects already taken from it "
            "stay aiokafka's. Call install_as_aiokafka() first.",
            RuntimeWarning,
            stacklevel=2,
        )
    root = importlib.import_module(_PACKAGE)
    modules = {"aiokafka": root}
    for info in pkgutil.walk_packages(root.__path__, prefix=_PACKAGE + "."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf.startswith("_"):
            continue
        modules["aiokafka" + info.name[len(_PACKAGE) :]] = importlib.import_module(info.name)
    for name in [n for n in sys.modules if n == "aiokafka" or n.startswith("aiokafka.")]:
        if name not in modules:
            del sys.modules[name]  # a real aiokafka module we do not replace must not linger
    sys.modules.update(modules)
    _installed.update(modules)


def uninstall_aiokafka() -> None:
    """Undo :func:`install_as_aiokafka`: ``import aiokafka`` finds the real one again."""
    for name, module in _installed.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]
    _installed.clear()


def _is_ours(module: object) -> bool:
    return getattr(module, "__name__", "").startswith(_PACKAGE)
