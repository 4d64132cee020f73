"""The dashboard's layers import downward only, its pages write no session state, and its services draw
nothing.

The order is :data:`dashboard.LAYERS` (bottom first): a module may import its own layer and those
below it, never one above. Every import counts, at the top of a module, under ``TYPE_CHECKING`` and
inside a function alike (:mod:`import_graph`), for the package, its pages and ``app.py``; there are no
exceptions. A page reads ``st.session_state`` and never writes it (:mod:`dashboard.state.choices`,
:mod:`~dashboard.state.share` and :mod:`~dashboard.state.session` do), and uses its own service alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from import_graph import import_graph

from dashboard import LAYERS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dashboard"
PAGES = ROOT / "pages"
BESIDE = (PAGES, ROOT / "app.py")
#: What a service may use of Streamlit: its caches and the session's state (its jobs), and the column
#: settings of a table it describes; nothing that draws.
SERVICE_STREAMLIT = {"cache_data", "cache_resource", "session_state", "column_config"}
#: The services shared by more than one page, which any page may use.
SHARED_SERVICES = {"dashboard.services.jobs"}


def layer_of(module: str) -> int:
    """The index in :data:`dashboard.LAYERS` of the most specific layer that holds ``module``."""
    best = max((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), key=len)
    return LAYERS.index(best)


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of ``graph`` that points to a higher layer, written ``module -> imported``."""
    return sorted(f"{m} -> {i}" for m, imports in graph.items() for i in imports if layer_of(i) > layer_of(m))


def writes_session_state(tree: ast.AST) -> list[int]:
    """The lines of ``tree`` that write ``st.session_state``: an item set or deleted, an attribute set,
    or a mutating method called (``pop``, ``update``, ``setdefault``, ``clear``, ``__setitem__``, …)."""

    def is_state(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "session_state"

    def writes(node: ast.AST) -> bool:
        if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            return is_state(node.value) or is_state(node)
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and is_state(node.func.value)
            and (node.func.attr in {"pop", "popitem", "update", "setdefault", "clear", "__setitem__", "__delitem__"})
        )

    return sorted(node.lineno for node in ast.walk(tree) if writes(node))  # type: ignore[attr-defined]


def test_every_module_belongs_to_a_layer_and_every_layer_holds_one() -> None:
    graph = import_graph(PACKAGE, BESIDE)
    assert {LAYERS[layer_of(module)] for module in graph} == set(LAYERS)
    assert {"pages.lab", "pages.why", "app", "dashboard.state.choices"} <= graph.keys()


def test_the_graph_counts_imports_inside_functions_and_beside_the_package(tmp_path: Path) -> None:
    package = tmp_path / "dashboard"
    (package / "services").mkdir(parents=True)
    (package / "widgets").mkdir()
    for path in (package / "__init__.py", package / "services" / "__init__.py", package / "widgets" / "__init__.py"):
        path.write_text("")
    (package / "widgets" / "sidebar.py").write_text("")
    (package / "services" / "lab.py").write_text("def f():\n    from dashboard.widgets.sidebar import show\n")
    (tmp_path / "app.py").write_text("from dashboard.services import lab\n")
    graph = import_graph(package, (tmp_path / "app.py",))
    assert graph["dashboard.services.lab"] == {"dashboard.widgets.sidebar"}
    assert graph["app"] == {"dashboard.services.lab"}
    assert upward(graph) == ["dashboard.services.lab -> dashboard.widgets.sidebar"]


def test_no_import_points_upward() -> None:
    found = upward(import_graph(PACKAGE, BESIDE))
    assert found == [], "imports from a higher layer:\n" + "\n".join(found)


def test_the_rule_finds_every_kind_of_write() -> None:
    source = (
        "st.session_state['a'] = 1\n"
        "st.session_state.b = 2\n"
        "del st.session_state['c']\n"
        "st.session_state.pop('d', None)\n"
        "st.session_state.update(e=1)\n"
        "x = st.session_state.get('f')\n"
        "y = st.session_state['g']\n"
    )
    assert writes_session_state(ast.parse(source)) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("path", sorted([*PAGES.glob("*.py"), ROOT / "app.py"]), ids=lambda p: p.stem)
def test_a_page_writes_no_session_state(path: Path) -> None:
    assert writes_session_state(ast.parse(path.read_text(encoding="utf-8"))) == [], path.name


@pytest.mark.parametrize("path", sorted(PAGES.glob("*.py")), ids=lambda p: p.stem)
def test_a_page_uses_its_own_service_alone(path: Path) -> None:
    graph = import_graph(PACKAGE, (PAGES,))
    services = {m for m in graph[f"pages.{path.stem}"] if m.startswith("dashboard.services.")}
    assert services <= {f"dashboard.services.{path.stem}", *SHARED_SERVICES}, path.name


@pytest.mark.parametrize("path", sorted((PACKAGE / "services").glob("*.py")), ids=lambda p: p.stem)
def test_a_service_draws_nothing(path: Path) -> None:
    used = {
        node.attr
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "st"
    }
    assert used <= SERVICE_STREAMLIT, f"{path.name} uses st.{', st.'.join(sorted(used - SERVICE_STREAMLIT))}"
