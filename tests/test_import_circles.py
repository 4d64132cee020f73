"""The specbound package's modules, subpackages included, import each other without a circle, counting
imports made inside functions too (the finder itself is tested with the dashboard's graph)."""

from __future__ import annotations

from pathlib import Path

from import_graph import assert_no_cycle, find_cycle, import_graph

PACKAGE = Path(__file__).resolve().parents[1] / "specbound"


def test_the_graph_reads_subpackages_and_function_level_imports() -> None:
    graph = import_graph(PACKAGE)
    assert "specbound.io.families.registry" in graph["specbound.io.families"]  # a subpackage's own modules
    assert "specbound.io.loading" in graph["specbound.api.analysis"]  # imported inside a function only
    assert "specbound.core.limits" in graph["specbound.io.families.config"]  # a relative import two levels up


def test_a_submodule_importing_its_package_closes_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .part import VALUE\n")
    (package / "part.py").write_text("def value():\n    from . import OTHER\n    return OTHER\n")
    assert find_cycle(import_graph(package)) == ["pkg", "pkg.part", "pkg"]


def test_no_import_circle_in_specbound() -> None:
    assert_no_cycle(PACKAGE)
