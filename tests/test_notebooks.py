"""The documentation's notebooks are stored with their outputs, and those outputs are what the package
computes today: each notebook runs again, top to bottom, in a real Jupyter kernel, and every printed
number and every figure is compared with the stored one (docs/hooks/notebooks.py, to a relative 1e-4).

A notebook that raises fails the suite, and so does one whose stored outputs drifted from the package
(store them again with ``make notebooks``). The site shows the stored outputs: the lesson's page, as
mkdocs-jupyter and the site's hook render it, holds its figures, its numbers and its maths as MathML.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))


def _hook(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"docs_hooks_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


notebooks = _hook("notebooks")


def _code_outputs(notebook: Any) -> list[list[Any]]:
    return [cell.outputs for cell in notebook.cells if cell.cell_type == "code"]


def test_the_site_has_both_notebooks() -> None:
    assert {p.stem for p in NOTEBOOKS} == {"lesson", "researcher"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_code_cell_is_stored_with_its_outputs(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(path, as_version=4)
    outputs = _code_outputs(notebook)
    assert outputs and all(outputs), "a code cell has no stored output: run `make notebooks`"
    counts = [cell.execution_count for cell in notebook.cells if cell.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1))  # run top to bottom in one fresh kernel
    for cell in outputs:
        for output in cell:
            assert not (output.output_type == "stream" and output.name == "stderr")  # warnings are not stored
            assert output.output_type != "error"
            if notebooks.PLOTLY_MIME in output.get("data", {}):  # a figure draws on the site and in JupyterLab
                assert "Plotly.newPlot" in output.data["text/html"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_stored_outputs_are_what_the_notebook_computes(path: Path, tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    stored = nbformat.read(path, as_version=4)
    fresh = notebooks.cleaned(notebooks.execute(path, tmp_path), path.stem)  # raises naming a failing cell
    found = notebooks.differences(notebooks.comparable(stored), notebooks.comparable(fresh))
    assert not found, "stored outputs drifted (run `make notebooks`):\n" + "\n".join(found[:10])


def test_the_comparison_sees_a_moved_number_and_forgives_a_last_digit() -> None:
    """The check can fail: a figure's value moved by 1e-3 and a printed number changed are found; a
    printed rounding one unit off in its last digit and a value within 1e-4 relative are not."""
    figure = {"data": [{"y": [1.0, 2.0]}], "layout": {"title": {"text": "τ = +0.22"}}}
    moved = {"data": [{"y": [1.0, 2.002]}], "layout": {"title": {"text": "τ = +0.22"}}}
    assert notebooks.differences([figure], [moved]) == ["[0].data[0].y[1]: 2.0 stored, 2.002 now"]
    assert notebooks.differences(["ours = 10^2.44"], ["ours = 10^2.54"])
    assert notebooks.differences(["ours = 10^2.44"], ["theirs = 10^2.44"])
    assert not notebooks.differences(["ours = 10^2.442"], ["ours = 10^2.443"])
    assert not notebooks.differences([{"y": [3.0]}], [{"y": [3.0001]}])
    timing = "{'train_runtime': '11.43', 'loss': '4.3'}"
    assert notebooks.VOLATILE.sub(r"'\1': …", timing) == "{'train_runtime': …, 'loss': '4.3'}"


def test_the_lesson_page_shows_figures_numbers_and_maths() -> None:
    """The lesson as the site renders it (mkdocs-jupyter's conversion of the stored notebook, then the
    site's hook): every figure of the notebook is drawn by Plotly.newPlot, after the site's plotly.js;
    its printed numbers are there; the maths is MathML, with no dollar sign and no caret left in prose;
    and the two sections a class ends on exist."""
    pytest.importorskip("mkdocs_jupyter")
    nbformat = pytest.importorskip("nbformat")
    from mkdocs_jupyter.convert import nb2html

    path = next(p for p in NOTEBOOKS if p.stem == "lesson")
    page = notebooks.with_plotly_script(notebooks.notebook_maths(nb2html(str(path))), "../../" + notebooks.PLOTLY_JS)
    stored = nbformat.read(path, as_version=4)
    figures = sum(notebooks.PLOTLY_MIME in o.get("data", {}) for cell in _code_outputs(stored) for o in cell)
    assert figures >= 7
    assert page.count("Plotly.newPlot(") == figures
    assert page.index('src="../../javascripts/plotly.min.js"') < page.index("Plotly.newPlot(")
    printed = "".join(o.text for cell in _code_outputs(stored) for o in cell if o.output_type == "stream")
    for number in ("ours = 10^", "Does the bound predict the gap here?", "measured L^"):
        assert number in printed and number in page
    assert re.search(r"ours = 10\^\d+\.\d\d", page)
    markdown = [m[2] for m in notebooks.MARKDOWN_CELL.finditer(page)]
    assert len(markdown) == sum(cell.cell_type == "markdown" for cell in stored.cells)
    assert not any("$" in cell or "^{" in cell for cell in markdown)
    assert page.count("<math") >= 20 and 'display="block"' in page
    for heading in ("6. Depth and width", "7. Does the bound predict the gap?"):
        assert heading in page
