"""No import cycle among the modules of a package (issue 24).

The graph is built from the source with :mod:`ast`, not by importing: every ``import`` and
``from ... import`` statement counts, wherever it stands (module level, under
``if TYPE_CHECKING:``, inside a function), because a cycle hidden behind ``TYPE_CHECKING`` or a
function-level import is still a cycle of responsibilities. Relative imports are resolved.
``from pkg import name`` is an edge to ``pkg.name`` when that is a module of the package, to
``pkg`` (its ``__init__``) otherwise. The implicit import of a module's parent packages is not
an edge (every submodule of a package whose ``__init__`` re-exports it would be in a cycle).

Only modules of the package under test are nodes: a cycle through another package is that
package's test's business. Each package that is cycle-free gets a line in ``PACKAGES``.
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parent.parent

# Packages whose modules must not import each other in a circle.
PACKAGES = [
    "aiokafkawire.consumer",
    "aiokafkawire.producer",
    "aiokafkawire.net",
    "aiokafkawire.cluster",
]


class Edge(NamedTuple):
    target: str
    where: str  # file (relative to the directory holding the top-level package):line


def _modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package rooted at ``root``: dotted name -> file."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    # In a package's __init__, level 1 is the package itself.
    keep = len(parts) - node.level + (1 if is_package else 0)
    if keep <= 0:
        raise ValueError(f"{module}: relative import beyond the top-level package")
    base = ".".join(parts[:keep])
    return f"{base}.{node.module}" if node.module else base


def _imports(module: str, path: Path, modules: dict[str, Path], top: Path) -> Iterator[Edge]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    shown = path.relative_to(top).as_posix()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield Edge(alias.name, f"{shown}:{node.lineno}")
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, is_package, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    yield Edge(sub, f"{shown}:{node.lineno}")
                elif base in modules:
                    yield Edge(base, f"{shown}:{node.lineno}")


def import_graph(root: Path, package: str) -> dict[str, dict[str, Edge]]:
    """module -> {imported module of the same package -> the first import statement}."""
    modules = _modules(root, package)
    top = root.parents[package.count(".")]
    graph: dict[str, dict[str, Edge]] = {}
    for module, path in modules.items():
        edges: dict[str, Edge] = {}
        for edge in _imports(module, path, modules, top):
            edges.setdefault(edge.target, edge)
        graph[module] = edges
    return graph


def _components(graph: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """Strongly connected components (iterative Tarjan), in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(sorted(component))
    return sorted(result)


def _shortest_cycle(graph: dict[str, dict[str, Edge]], start: str, within: set[str]) -> list[str]:
    """The shortest path start -> ... -> start inside one component (BFS)."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node]):
            if child not in within:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    raise AssertionError(f"{start} is in a component but on no cycle")


def find_cycles(graph: dict[str, dict[str, Edge]]) -> list[str]:
    """One line per cycle: each component of more than one module (or a module importing
    itself), shown as the shortest cycle through each of its modules, with the statements."""
    found: list[str] = []
    for component in _components(graph):
        members = set(component)
        if len(component) == 1 and component[0] not in graph[component[0]]:
            continue
        seen: set[tuple[str, ...]] = set()
        for module in component:
            cycle = _shortest_cycle(graph, module, members)
            # The same circle found from another of its modules: show it once.
            turn = cycle[:-1].index(min(cycle[:-1]))
            key = tuple(cycle[turn:-1] + cycle[:turn])
            if key in seen:
                continue
            seen.add(key)
            steps = [f"{a} ({graph[a][b].where})" for a, b in itertools.pairwise(cycle)]
            found.append(" -> ".join([*steps, cycle[-1]]))
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package: str) -> None:
    root = REPO.joinpath(*package.split("."))
    assert (root / "__init__.py").is_file(), f"{package} is not a package of this checkout"
    graph = import_graph(root, package)
    assert len(graph) > 1
    cycles = find_cycles(graph)
    assert not cycles, f"{len(cycles)} import cycle(s) in {package}:\n" + "\n".join(cycles)


def test_the_finder_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The checker itself: cycles through TYPE_CHECKING, function-level and relative imports
    are found, and an acyclic package passes."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\nA = 1\n"
    )
    (pkg / "b.py").write_text("def f():\n    from pkg import a\n    return a\nB = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from .. import sub\nfrom ..sub import d\n")
    (pkg / "sub" / "d.py").write_text("import pkg.sub.c\n")
    (pkg / "e.py").write_text("import os\nfrom . import a\n")
    graph = import_graph(pkg, "pkg")
    assert set(graph["pkg.a"]) == {"pkg.b"}
    assert set(graph["pkg.b"]) == {"pkg.a"}
    assert set(graph["pkg.sub.c"]) == {"pkg.sub", "pkg.sub.d"}
    cycles = find_cycles(graph)
    assert len(cycles) == 2, cycles
    assert cycles[0].startswith("pkg.a (") and "pkg.b (" in cycles[0]
    assert "pkg/a.py:3" in cycles[0] and "pkg/b.py:2" in cycles[0]
    assert cycles[1].startswith("pkg.sub.c (") and cycles[1].endswith("-> pkg.sub.c")
    (pkg / "b.py").write_text("B = 1\n")
    (pkg / "sub" / "d.py").write_text("import pkg.sub\n")
    assert find_cycles(import_graph(pkg, "pkg")) == []
    # A module importing itself is a cycle too.
    (pkg / "e.py").write_text("from pkg import e\n")
    assert find_cycles(import_graph(pkg, "pkg")) == ["pkg.e (pkg/e.py:1) -> pkg.e"]
