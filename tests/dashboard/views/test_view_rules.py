"""The views are the pages' one source of figures: they draw nothing (no Streamlit loaded, no widget, no
session state), and every page with a report draws its view's figures and hands that view to the
report. Their examples run with the package's others (``tests/test_docstring_examples.py``)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
VIEWS = sorted((ROOT / "dashboard" / "views").glob("*.py"))
#: The pages that offer an HTML report, each with its view builder.
REPORT_PAGES = {"bounds": "explorer_view", "compare": "compare_view", "spectra": "spectra_view", "why": "why_view"}
#: What a view may not import: it would draw, or read the session.
DRAWING = ("streamlit", "dashboard.widgets", "dashboard.state", "dashboard.services", "dashboard.routing", "pages")


def imported_modules(tree: ast.AST) -> set[str]:
    """Every module an AST imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def draws(module: str) -> bool:
    return any(module == bad or module.startswith(f"{bad}.") for bad in DRAWING)


def test_the_rule_recognises_a_drawing_import() -> None:
    tree = ast.parse("import math\ndef f():\n    from dashboard.widgets.export import show_figure\n")
    assert {m for m in imported_modules(tree) if draws(m)} == {"dashboard.widgets.export"}
    assert not draws("dashboard.views.common") and not draws("streamlitish") and draws("streamlit.runtime")


@pytest.mark.parametrize("path", VIEWS, ids=lambda p: p.stem)
def test_a_view_draws_nothing(path: Path) -> None:
    imports = imported_modules(ast.parse(path.read_text(encoding="utf-8")))
    assert not {m for m in imports if draws(m)}, path.name


def test_the_views_and_the_wording_load_no_streamlit() -> None:
    """Not even through a module they import (the wording used to hold a note that drew itself)."""
    modules = [f"dashboard.views.{p.stem}" for p in VIEWS if p.stem != "__init__"]
    modules += [f"dashboard.wording.{p.stem}" for p in (ROOT / "dashboard" / "wording").glob("*.py")]
    script = f"import sys\nfor m in {modules!r}: __import__(m)\nprint(sorted({{n.split('.')[0] for n in sys.modules}}))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "lab")])}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    loaded = done.stdout
    assert "'dashboard'" in loaded and "'plotly'" in loaded  # the modules were imported
    assert "'streamlit'" not in loaded


@pytest.mark.parametrize(("page", "builder"), REPORT_PAGES.items())
def test_a_report_page_hands_its_view_to_the_report(page: str, builder: str) -> None:
    """The page builds one view and gives that view to ``report_download``: it makes no report section
    and no figure of its own for the report."""
    source = (ROOT / "pages" / f"{page}.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert "ReportSection" not in source and "html_report" not in source
    built = [
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        for target in node.targets
        if isinstance(target, ast.Name) and getattr(node.value.func, "id", None) == builder
    ]
    assert built == ["view"], built
    reports = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "report_download"
    ]
    assert len(reports) == 1 and [ast.unparse(a) for a in reports[0].args] == ["view"]


#: What each report page draws with ``show_figure`` or ``show_panels``: its view's figures (or a part of
#: its view: Compare's centred reading, the p* map's panels), and on Spectra one figure the report leaves
#: out on purpose, the eigenvalue spectrum of the one matrix opened in the drill-down.
DRAWN = {
    "bounds": {"view.proxies", "view.sums", "view.curves", "depth()"},
    "compare": {"view.bars", "view.overlay", "centred.changes", "centred.intruders"},
    "spectra": {"view.profiles", "view.energy", "view.heatmaps", "esd_figure(profile, index, source=source)"},
    "why": {"list(panels.figures)", "view.histogram", "view.ranks", "view.break_even"},
    # no report, but one view all the same
    "runs": {
        "view.proxies",
        "view.alpha",
        "view.errors",
        "view.grokking",
        "view.losses",
        "list(at_step.p_map.figures)",
        "at_step.spectra",
    },
    "scaling": {"growth.panels"},
    "theory": {"playground.panels"},
    "lab": {
        "answer.forest",
        "shown.proxies",
        "shown.alpha",
        "shown.errors",
        "shown.p_distribution",
        "shown.power_law",
        "shown.p_map",
        "step_spectra(profile)",
        "sweep.measures",
        "sweep.differences",
        "sweep.robust_cdf",
        "sweep.grokking_figure(seed)",
    },
}


@pytest.mark.parametrize("page", DRAWN)
def test_a_page_draws_the_figures_of_its_view(page: str) -> None:
    """A figure a page built inline would be drawn and left out of its report: each figure it draws is
    named here, and (the drill-down's apart) each comes from its view."""
    tree = ast.parse((ROOT / "pages" / f"{page}.py").read_text(encoding="utf-8"))
    drawn = {
        ast.unparse(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("show_figure", "show_panels")
    }
    assert drawn == DRAWN[page]


def test_every_page_that_draws_a_figure_is_held_to_its_view() -> None:
    """A new page that draws figures joins :data:`DRAWN`, so its figures are held to come from a view."""
    drawing = set()
    for path in sorted((ROOT / "pages").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        if any(getattr(call.func, "id", None) in ("show_figure", "show_panels") for call in calls):
            drawing.add(path.stem)
    assert drawing == set(DRAWN)
