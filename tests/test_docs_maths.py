"""The documentation site's maths: written in LaTeX, rendered to MathML at build time by the site's hook
(``docs/hooks/generate.py``), with each family's α and γ taken from the code of the Theory page."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("latex2mathml", reason="the docs toolchain (requirements-docs.txt) is not installed")
markdown = pytest.importorskip("markdown")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "hooks" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _html(text: str) -> str:
    """Markdown as the site converts it (arithmatex in generic mode marks the maths)."""
    html: str = markdown.markdown(
        text,
        extensions=["tables", "pymdownx.arithmatex"],
        extension_configs={"pymdownx.arithmatex": {"generic": True}},
    )
    return html


def test_inline_and_display_maths_become_mathml(hook: ModuleType) -> None:
    html = hook.to_mathml(_html("Here $a < b$ holds.\n\n$$\n\\begin{aligned} x &= 1 \\\\ y &= 2 \\end{aligned}\n$$\n"))
    assert "arithmatex" not in html and "\\(" not in html and "\\[" not in html
    inline, block = re.findall(r'<math [^>]*display="(\w+)"', html)
    assert (inline, block) == ("inline", "block")
    assert "<mo>&#x0003C;</mo>" in html and "&amp;" not in html  # "<" unescaped once, then MathML's own; no "&"
    table = html[html.index("<mtable") :]
    assert table.count("<mtr>") == 2  # one row per line, not a line-break hint browsers ignore
    assert '<mtd columnalign="right" style="text-align: right">' in table


def test_gathered_lines_are_rows_and_cases_keep_their_columns(hook: ModuleType) -> None:
    html = hook.to_mathml(
        _html(
            "$$\n\\begin{gathered} \\gamma = \\begin{cases} a & b \\\\ c & d \\end{cases} \\\\ s = 1"
            " \\end{gathered}\n$$\n"
        )
    )
    assert html.count("<mtable") == 2 and html.count("<mtr>") == 4  # two lines; the cases' two rows
    assert html.count('style="text-align: left"') == 4


def test_the_maths_page_writes_each_family_from_the_theory_page_code(
    hook: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = hook.maths_page()
    assert hook.MATHS_FAMILIES_MARK not in page
    for model_type in hook.MATHS_FAMILIES:
        assert f"(`{model_type}`)" in page
    t5 = page[page.index("(`t5`)") :]
    assert "A_x^{(k)}" in t5 and "QK_x" not in page[: page.index("(`t5`)")]  # cross-attention: T5 alone
    html = hook.to_mathml(_html(page))
    assert "\\[" not in html and "\\(" not in html and html.count("<math ") >= 2 * len(hook.MATHS_FAMILIES) + 20

    import dashboard.services.theory

    monkeypatch.setattr(dashboard.services.theory, "alpha_latex", lambda shape: r"\alpha = \mathrm{changed}")
    assert hook.maths_page().count(r"\alpha = \mathrm{changed}") == len(hook.MATHS_FAMILIES)
