"""The documentation's notebooks, stored with their outputs, and how the site shows them.

A class opens the lesson on the site and sees its figures and numbers at once: the notebooks under
``docs/notebooks`` are committed *executed*, and the site renders what they hold (mkdocs-jupyter with
``execute: false``: building the site runs no kernel). What keeps a stored output honest is the test
suite: ``tests/test_notebooks.py`` executes each notebook again in a real kernel and compares every
output with the stored one (:func:`differences`: text and figures, numbers to a relative
:data:`RTOL`), so a change of the package that moves a number fails until the notebooks are stored
again with ``make notebooks`` (``python docs/hooks/notebooks.py``).

Stored outputs are made stable and viewable here:

* every Plotly figure keeps its JSON (what JupyterLab draws) and gains a ``text/html`` rendering that
  calls the page's own copy of plotly.js (:func:`with_html`; the site serves plotly.min.js from the
  installed plotly, so a figure draws offline), its element id taken from the notebook and the cell,
  not a random one;
* what varies from run to run is left out: the kernel's warnings on stderr, the cells' timings and
  the Trainer's run-time figures (:data:`VOLATILE`); a fresh kernel numbers the cells 1, 2, ... as
  a reader's run would;
* on the site, the maths of markdown cells (``$...$``, ``$$...$$``) is written as MathML at build time
  (:func:`notebook_maths`), as every other page's is (``generate.py``).
"""

from __future__ import annotations

import copy
import html as htmllib
import math
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = ROOT / "docs" / "notebooks"
#: Relative tolerance on every number of a stored output against a fresh run (and 1e-9 absolute).
RTOL, ATOL = 1e-4, 1e-9
#: How long one cell may run (seconds): the notebooks take seconds on the bundled and lab models.
CELL_TIMEOUT_S = 300
#: The mimetype of a Plotly figure in a notebook.
PLOTLY_MIME = "application/vnd.plotly.v1+json"
#: Numbers in printed text that change from run to run: the Trainer's timings.
VOLATILE = re.compile(r"'(train_runtime|train_samples_per_second|train_steps_per_second)': '?[-+0-9.e]+'?")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def execute(path: Path, workdir: Path) -> Any:
    """The notebook at ``path`` run top to bottom in a fresh python3 kernel, in ``workdir`` (a cell that
    raises raises here, naming the cell)."""
    import nbclient
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(workdir)}},
    ).execute()
    return notebook


def cleaned(notebook: Any, name: str) -> Any:
    """The executed ``notebook`` as it is stored: stderr dropped, the Trainer's timings blanked, and an
    HTML rendering beside every Plotly figure (:func:`with_html`)."""
    notebook = copy.deepcopy(notebook)
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        kept = []
        for index, output in enumerate(cell.outputs):
            if output.output_type == "stream" and output.name == "stderr":
                continue
            if output.output_type == "stream":
                output.text = VOLATILE.sub(r"'\1': …", output.text)
            if PLOTLY_MIME in output.get("data", {}):
                output.data["text/html"] = with_html(output.data[PLOTLY_MIME], f"{name}-{number}-{index}")
            kept.append(output)
        cell.outputs = kept
    return notebook


def with_html(figure: dict[str, Any], element_id: str) -> str:
    """A Plotly figure as HTML that draws with the page's plotly.js (no copy of the library inlined)."""
    import plotly.io as pio

    return pio.to_html(
        figure,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        div_id=element_id,
        default_width="100%",
        config={"responsive": True, "displaylogo": False},
        validate=False,
    )


def store(path: Path, workdir: Path) -> None:
    """Execute the notebook at ``path`` and write it back with its outputs (:func:`cleaned`)."""
    import nbformat

    nbformat.write(cleaned(execute(path, workdir), path.stem), path)


def comparable(notebook: Any) -> list[list[Any]]:
    """Per code cell, what is compared: each output's printed text and each figure's JSON (never the
    HTML rendering, which only repeats the JSON)."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        outputs: list[Any] = []
        for output in cell.outputs:
            if output.output_type == "stream" and output.name == "stdout":
                outputs.append(VOLATILE.sub(r"'\1': …", output.text))
            elif output.output_type in ("execute_result", "display_data"):
                data = output.get("data", {})
                outputs.append(data[PLOTLY_MIME] if PLOTLY_MIME in data else data.get("text/plain", ""))
            elif output.output_type == "error":
                outputs.append(f"error: {output.ename}")
        cells.append(outputs)
    return cells


def differences(stored: Any, fresh: Any, where: str = "") -> list[str]:
    """Where ``fresh`` differs from ``stored`` (nested lists, dicts, strings and numbers): numbers
    compared to :data:`RTOL` / :data:`ATOL`, and so are the numbers inside strings; the rest exactly."""
    if isinstance(stored, dict) and isinstance(fresh, dict):
        if set(stored) != set(fresh):
            return [f"{where}: keys {sorted(set(stored) ^ set(fresh))} differ"]
        return [d for key in stored for d in differences(stored[key], fresh[key], f"{where}.{key}")]
    if isinstance(stored, list) and isinstance(fresh, list):
        if len(stored) != len(fresh):
            return [f"{where}: {len(stored)} items stored, {len(fresh)} now"]
        return [
            d for k, (a, b) in enumerate(zip(stored, fresh, strict=True)) for d in differences(a, b, f"{where}[{k}]")
        ]
    if isinstance(stored, bool) or isinstance(fresh, bool) or stored is None or fresh is None:
        return [] if stored == fresh else [f"{where}: {stored!r} stored, {fresh!r} now"]
    if isinstance(stored, int | float) and isinstance(fresh, int | float):
        return [] if _close(float(stored), float(fresh)) else [f"{where}: {stored!r} stored, {fresh!r} now"]
    if isinstance(stored, str) and isinstance(fresh, str):
        if _NUMBER.sub("#", stored) != _NUMBER.sub("#", fresh):
            return [f"{where}: text differs: {stored[:200]!r} stored, {fresh[:200]!r} now"]
        pairs = zip(_NUMBER.findall(stored), _NUMBER.findall(fresh), strict=True)
        if all(_close(float(a), float(b)) or _same_digits(a, b) for a, b in pairs):
            return []
        return [f"{where}: numbers differ: {stored[:200]!r} stored, {fresh[:200]!r} now"]
    return [] if stored == fresh else [f"{where}: {stored!r} stored, {fresh!r} now"]


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)


def _same_digits(a: str, b: str) -> bool:
    """Two printed roundings one unit apart in their last digit (10^2.442 against 10^2.443): the same
    number to the precision printed, whatever side of the rounding a last ulp fell."""
    if "." not in a or "." not in b or len(a.split(".")[1]) != len(b.split(".")[1]):
        return False
    unit = 10.0 ** -len(a.split(".")[1])
    return abs(float(a) - float(b)) <= unit * (1 + 1e-9)


# --- on the site --------------------------------------------------------------------------------------

#: Where the site serves plotly.js (copied from the installed plotly when the site is built).
PLOTLY_JS = "javascripts/plotly.min.js"
#: The rendered markdown of a notebook's markdown cell, as nbconvert's lab template writes it.
MARKDOWN_CELL = re.compile(
    r'(<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown[^"]*"[^>]*>)(.*?)(</div>)', re.DOTALL
)
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(.+?)(?<![\\$])\$")


def plotly_js() -> bytes:
    """The minified plotly.js of the installed plotly package."""
    import plotly

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()


def notebook_maths(content: str) -> str:
    """The maths of every markdown cell of a rendered notebook as MathML (latex2mathml, at build time):
    ``$$...$$`` as a block, ``$...$`` inline; code cells and outputs are left as they are."""
    from latex2mathml.converter import convert

    def tex(text: str) -> str:
        return htmllib.unescape(text).strip()

    def cell(match: re.Match[str]) -> str:
        body = _DISPLAY_MATH.sub(lambda m: convert(tex(m[1]), display="block"), match[2])
        body = _INLINE_MATH.sub(lambda m: convert(tex(m[1]), display="inline"), body)
        return match[1] + body + match[3]

    return MARKDOWN_CELL.sub(cell, content)


def with_plotly_script(content: str, script_url: str) -> str:
    """A notebook page that holds a Plotly figure, with the site's plotly.js loaded before it."""
    if "Plotly.newPlot" not in content:
        return content
    return f'<script src="{script_url}"></script>\n' + content


def main(argv: list[str]) -> int:
    """Execute every notebook (or those named) and store it with its outputs."""
    import tempfile

    paths = [Path(a).resolve() for a in argv] or sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
    for path in paths:
        with tempfile.TemporaryDirectory() as workdir:
            store(path, Path(workdir))
        print(f"stored {path.relative_to(ROOT)} with its outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
