"""The documentation's notebooks run, top to bottom, in a real Jupyter kernel (no output is compared).

A notebook that raises fails the suite, so the lesson and the researcher's walk-through never drift
from the package. Each runs in a temporary working directory (the researcher's writes a Trainer's
output folder).
"""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "docs" / "notebooks").glob("*.ipynb"))


def test_the_site_has_both_notebooks() -> None:
    assert {p.stem for p in NOTEBOOKS} == {"lesson", "researcher"}


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_notebook_runs(path: Path, tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(path, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")  # shipped clean
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError naming the cell that failed
    assert any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")
