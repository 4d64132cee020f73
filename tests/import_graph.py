"""The import graph of a package as its source writes it, and a finder of circles in it.

Every import counts: at the top of a module, under ``if TYPE_CHECKING:`` and inside a function, since
a circle closed by a function-level import is still a circle (it only fails later, and differently).
A submodule that imports its own package's ``__init__`` (``from . import name``) closes a circle
with the package, which imports the submodule; the parent packages Python imports on the way to a
submodule are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path


def _modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` and its subpackages, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(module: str, path: Path, node: ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The modules of the package that one ``from ... import ...`` names."""
    if node.level:
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    return {f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names}


def import_graph(package: Path, beside: tuple[Path, ...] = ()) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports, anywhere in its source.

    ``beside`` adds folders and files next to the package that use it without being part of it (a
    folder of scripts such as the dashboard's ``pages/``, an entry script such as ``app.py``): their
    modules join the graph under their dotted names from the package's parent (``pages.lab``, ``app``).
    """
    modules = _modules(package)
    for extra in beside:
        modules |= _modules(extra) if extra.is_dir() else {extra.stem: extra}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                found |= _imported(module, path, node, modules)
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
        graph[module] = (found & modules.keys()) - {module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its first module repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for other in sorted(graph[node]):
            if state.get(other) == 1:
                return [*stack[stack.index(other) :], other]
            if other not in state and (found := visit(other)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def assert_no_cycle(package: Path) -> None:
    """Fail with the circle, written ``a -> b -> a``, if ``package`` has one."""
    cycle = find_cycle(import_graph(package))
    assert cycle is None, " -> ".join(cycle or [])
