"""The dashboard's modules import each other without a circle, counting imports made inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

from import_graph import assert_no_cycle, find_cycle, import_graph

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dashboard"


def test_no_import_circle_in_the_dashboard() -> None:
    graph = import_graph(PACKAGE)
    assert (
        "dashboard.safety" in graph["dashboard.state.atlas"]
    )  # the graph is read: the atlas source uses the visitor rules
    assert_no_cycle(PACKAGE)


def test_the_cycle_finder_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_every_visitor_name_goes_through_the_one_policy() -> None:
    """Only the visitor rules turn a name into a model reference: no other dashboard module calls
    ``specbound.io.models.resolve`` (which would look for a directory of that name on the server)."""
    for path in PACKAGE.rglob("*.py"):
        if path.stem == "safety":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "specbound.io.models":
                assert "resolve" not in {a.name for a in node.names}, path.name
            if isinstance(node, ast.Attribute) and node.attr == "resolve" and isinstance(node.value, ast.Name):
                assert node.value.id != "models", path.name


def test_the_figures_know_the_presentation_key() -> None:
    from dashboard.widgets import export, presentation

    assert vars(presentation)["PRESENT_KEY"] == export.PRESENT_KEY  # the name the widget reads
