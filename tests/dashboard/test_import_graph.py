"""The dashboard's modules import each other without a circle, counting imports made inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dashboard"


def _imports(path: Path) -> set[str]:
    """The ``dashboard`` modules that ``path`` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from . import x / from .x import y
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith("dashboard"):
                parts = node.module.split(".")
                found.update([parts[1]] if len(parts) > 1 else [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("dashboard."))
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return (found & modules) - {path.stem}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph``, or None."""
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


def test_no_import_circle_in_the_dashboard() -> None:
    graph = {path.stem: _imports(path) for path in PACKAGE.glob("*.py")}
    assert "safety" in graph["atlas"]  # the graph is read: the atlas source uses the visitor rules
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_every_visitor_name_goes_through_the_one_policy() -> None:
    """Only the visitor rules turn a name into a model reference: no other dashboard module calls
    ``specbound.models.resolve`` (which would look for a directory of that name on the server)."""
    for path in PACKAGE.glob("*.py"):
        if path.stem == "safety":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "specbound.models":
                assert "resolve" not in {a.name for a in node.names}, path.name
            if isinstance(node, ast.Attribute) and node.attr == "resolve" and isinstance(node.value, ast.Name):
                assert node.value.id != "models", path.name


def test_the_figures_know_the_presentation_key() -> None:
    from dashboard import export, presentation

    assert export.PRESENT_KEY == presentation.PRESENT_KEY
