"""Pages of the documentation site written from the code at build time (an mkdocs hook).

Nothing on these pages is a hand-kept copy of something the code knows: the limits table is read from
:class:`specbound.core.limits.Limits` (each field's value and the comment above it), the families table from
the adapter registry and :class:`specbound.core.architecture.Adaptation`, the command line from its own
argparse parser, the JSON fields from :func:`specbound.present.report.analysis_json` run on a small model,
the package layout from each module's docstring, and the lab's verdict from the shipped CSVs
(:func:`specbound_lab.views.verdict_report`, what ``specbound lab report`` prints). Delete a
docstring, a limit or an adaptation and the page changes with it.
"""

from __future__ import annotations

import dataclasses
import html as htmllib
import importlib
import inspect
import io
import pkgutil
import re
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]


# --- the pages ---------------------------------------------------------------------------------------


def limits_page() -> str:
    """Every field of ``Limits``: its value (bytes in KiB/MiB/GiB) and the comment written above it."""
    from specbound.core import limits

    comments = _field_comments(limits.Limits)
    rows = ["| limit | value | what it bounds |", "|---|---|---|"]
    for field in dataclasses.fields(limits.Limits):
        value = getattr(limits.LIMITS, field.name)
        rows.append(f"| `{field.name}` | {_shown(field.name, value)} | {comments.get(field.name, '')} |")
    doc = inspect.getdoc(limits) or ""
    return (
        "# Limits\n\n"
        + doc.split("\n\n")[0]
        + "\n\nRead from `specbound.core.limits.LIMITS` when this page was built. The download cap (default "
        f"{limits.DEFAULT_MAX_DOWNLOAD_MB} MB) is the one an operator sets: `${limits.MAX_DOWNLOAD_ENV_VAR}` "
        "or `--max-download-gb`.\n\n" + "\n".join(rows) + "\n"
    )


def _field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment lines right above each field of a dataclass, joined; a plain ``#`` comment
    names the group of the fields under it, which inherit it where they have none of their own."""
    source = inspect.getsource(cls).splitlines()
    comments: dict[str, str] = {}
    pending: list[str] = []
    group = ""
    for line in source:
        text = line.strip()
        if text.startswith("#:"):
            pending.append(text[2:].strip())
            continue
        if text.startswith("#"):
            group, pending = text[1:].strip(), []
            continue
        name = text.split(":", 1)[0].strip()
        if name.isidentifier() and ":" in text and "=" in text:
            note = " ".join(pending) or group
            comments[name] = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", note).replace("|", "\\|")
        pending = []
    return comments


def _shown(name: str, value: Any) -> str:
    if name.endswith("_bytes") and isinstance(value, int):
        for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
            if value >= size and value % size == 0:
                return f"{value // size} {unit}"
    if isinstance(value, float) and (value >= 1e6 or 0 < value < 1e-3):
        return f"{value:.0e}"
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def families_page() -> str:
    """Every supported ``model_type``: its family, and the adaptations and activation the adapter reads
    from transformers' default config of that type (a given checkpoint's config may add or drop some:
    grouped-query attention only with fewer key/value heads, ...); then every adaptation explained."""
    import transformers

    from specbound.core.architecture import ACTIVATION_LIPSCHITZ, Adaptation
    from specbound.io.families import ADAPTERS
    from specbound.io.families.registry import family_name

    rows = ["| family | `model_type` | adaptations (default config) | activation (L_φ) |", "|---|---|---|---|"]
    for model_type, adapter in ADAPTERS.items():
        shape = adapter.shape(transformers.AutoConfig.for_model(model_type).to_dict(), model_type)
        named = ", ".join(a.value for a in shape.adaptations) or "none: the paper's own block"
        lipschitz = ACTIVATION_LIPSCHITZ[shape.activation]
        rows.append(f"| {family_name(model_type)} | `{model_type}` | {named} | {shape.activation} ({lipschitz:g}) |")
    explained = "\n".join(f"- **{a.value}**: {a.explanation}." for a in Adaptation)
    return (
        "# Families\n\nEvery family specbound reads (`specbound/io/families/`), with the adaptations of the proxy "
        "its adapter names on transformers' default config of that `model_type`, as registered when this "
        "page was built. A checkpoint's own config decides its own (the CLI's header, the JSON's "
        "`adaptations` and the dashboard's model card name them for the open model).\n\n"
        + "\n".join(rows)
        + "\n\n## The adaptations\n\nEach departure from the paper's BERT encoder, as every output names it:\n\n"
        + explained
        + "\n\nHow each is read, and what the reading does not cover, is told on [Models](../guide/models.md).\n"
    )


def cli_page() -> str:
    """Every command's ``--help``, as the parser prints it."""
    from specbound.cli import build_parser

    parser = build_parser()
    sections = ["# Command line\n", "Each command's help, as `specbound COMMAND --help` prints it.\n"]
    sections.append(_help_block("specbound", parser))
    for path, sub in _subparsers(parser):
        sections.append(_help_block(" ".join(["specbound", *path]), sub))
    return "\n".join(sections)


def _subparsers(parser: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    import argparse

    found = []
    for action in parser._actions:  # argparse keeps the sub-commands here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(((*path, name), sub))
                found += _subparsers(sub, (*path, name))
    return found


def _help_block(title: str, parser: Any) -> str:
    text = parser.format_help().replace("```", "'''")
    return f"## `{title}`\n\n```text\n{text.rstrip()}\n```\n"


def json_page() -> str:
    """The prose of the JSON reference (hand-written, in ``reference/json-text.md``) and the fields the
    package prints, read from ``analysis_json`` of small models of each kind."""
    from specbound.core.architecture import Mlp, ModelShape
    from specbound.core.bounds import BoundAnalysis
    from specbound.present.report import analysis_json

    shapes = {
        "a BERT encoder": ModelShape(2, 8, 2, 16),
        "a mixture of experts": ModelShape(2, 8, 2, 16, mlp=Mlp.GATED, num_experts=2, experts_per_token=1),
        "an encoder-decoder": ModelShape(4, 8, 2, 16, encoder_layers=2),
    }
    blocks = []
    for label, shape in shapes.items():
        data = analysis_json(BoundAnalysis.from_profile(_ones(shape)))
        matrix = data.pop("matrices")[0]
        blocks.append(
            f"**{label}**: object fields `{', '.join(data)}`; `proxies` fields "
            f"`{', '.join(data['proxies'])}`; each matrix `{', '.join(matrix)}`."
        )
    text = (ROOT / "docs" / "reference" / "json-text.md").read_text(encoding="utf-8")
    return (
        text.rstrip() + "\n\n## The fields, read from the code\n\nWhat `analysis_json` writes for three small models "
        "when this page was built (`--base` and `--power-law` add the fields described above):\n\n"
        + "\n\n".join(blocks)
        + "\n"
    )


def _ones(shape: Any) -> Any:
    import numpy as np

    from specbound.core.profile import SpectralProfile, full_dims_of

    m, n = shape.num_matrices, shape.hidden_size
    sv = np.zeros((m, n))
    sv[:, 0] = 1.0
    return SpectralProfile("tiny", "", shape, sv, full_dims_of(shape), np.ones(m), np.ones(m))


def layout_page() -> str:
    """Every module of the library and of the lab beside it, with the first paragraph of its docstring."""
    import specbound
    import specbound_lab

    lines = [
        "# Package layout\n",
        "Each module of `specbound`, then of the lab beside it (`specbound_lab`, its own distribution in "
        "`lab/`, which imports only the names the library's layers list in `__all__`), with the first "
        "paragraph of its own docstring (read when this page was built). The [API reference](api.md) "
        "documents the public functions and classes.\n",
    ]
    for package in (specbound, specbound_lab):
        lines.append(f"\n## `{package.__name__}`\n")
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            try:
                loaded = importlib.import_module(module.name)
            except ImportError:  # an optional extra (the Trainer callback needs transformers)
                continue
            first = (inspect.getdoc(loaded) or "").split("\n\n")[0].replace("\n", " ")
            lines.append(f"- `{module.name}`: {first}")
    return "\n".join(lines) + "\n"


def lab_verdict_page() -> str:
    """The verdict of every shipped lab reference, from the shipped CSVs: ``specbound lab report``."""
    from specbound.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        status = main(["lab", "report"])
    if status:
        raise RuntimeError(f"specbound lab report failed (status {status}): the shipped references are incomplete")
    report = out.getvalue().replace("# ", "## ", 1)
    intro = (ROOT / "docs" / "lab" / "verdict-text.md").read_text(encoding="utf-8")
    return answer_first(intro).rstrip() + "\n\n" + report + "\n" + grokking_section()


def answer_first(intro: str) -> str:
    """The verdict page's prose with the lab's answer right under its title: the one sentence
    :func:`specbound_lab.answer.shipped_answer` computes from the shipped ``verdict.csv`` tables, as the
    Lab page opens on it."""
    from specbound_lab.answer import shipped_answer

    title, _, rest = intro.partition("\n")
    if not title.startswith("# "):
        raise RuntimeError("docs/lab/verdict-text.md must open with its title")
    answer = shipped_answer().sentence().replace("*", "\\*")  # p* is not emphasis
    return (
        f"{title}\n\n**{answer}**\n\nComputed from the shipped tables when this page was built; the τ of every "
        "measure in every environment, and the rules behind them, follow.\n" + rest
    )


def grokking_section() -> str:
    """The shipped grokking seeds as ``specbound lab show`` reads them: each seed's saturation and jump,
    and every measure's lead against its circular-shift null, the positive control and the power check."""
    from specbound.cli import main
    from specbound_lab.reference import GROKKING_REFERENCE_DIR

    out = io.StringIO()
    with redirect_stdout(out):
        status = main(["lab", "show", str(GROKKING_REFERENCE_DIR)])
    if status:
        raise RuntimeError(f"specbound lab show of the grokking reference failed (status {status})")
    text = out.getvalue()
    start = text.index("Grokking (modular task)")
    return (
        "## Grokking: the shipped seeds\n\nPrinted by `specbound lab show` on the shipped grokking runs.\n\n```text\n"
        + text[start:].rstrip()
        + "\n```\n"
    )


#: The families whose α and γ the maths page writes out: the paper's encoder and each departure from it
#: (causal, gated, parallel residual, experts with and without a shared expert, encoder-decoder).
MATHS_FAMILIES = ("bert", "gpt2", "llama", "gpt_neox", "mixtral", "qwen2_moe", "t5")
MATHS_FAMILIES_MARK = "<!-- each family's alpha and gamma -->"


def maths_page() -> str:
    """The hand-written maths (``maths-text.md``) with, at its mark, each family's α and γ as the
    dashboard's Theory page writes them (:mod:`dashboard.services.theory`), for transformers' default config of a
    few model types: the formulas come from the code that computes the Theory page, not from a copy."""
    import transformers

    if str(ROOT) not in sys.path:  # the dashboard is a folder of the repository, not an installed package
        sys.path.insert(0, str(ROOT))
    from dashboard.services.theory import alpha_latex, gamma_latex
    from specbound.io.families import ADAPTERS
    from specbound.io.families.registry import family_name

    sections = [
        "## Each family's α and γ\n\nThe paper's block is BERT's; every other family adapts α (its layer "
        "factor) and γ (what follows a matrix in its layer) as SPEC §11-§12 derive, with $\\Phi$ the MLP's "
        "factor and $A$ the attention's. These are written by the same code as the dashboard's Theory "
        "page, for transformers' default config of each `model_type`; [Families](reference/families.md) "
        "lists every type and its adaptations."
    ]
    for model_type in MATHS_FAMILIES:
        shape = ADAPTERS[model_type].shape(transformers.AutoConfig.for_model(model_type).to_dict(), model_type)
        named = ", ".join(a.value for a in shape.adaptations) or "the paper's own block"
        sections.append(
            f"### {family_name(model_type)} (`{model_type}`)\n\n{named.capitalize()}.\n\n"
            f"$$\n{alpha_latex(shape)}\n$$\n\n$$\n{gamma_latex(shape)}\n$$"
        )
    text = (ROOT / "docs" / "maths-text.md").read_text(encoding="utf-8")
    if MATHS_FAMILIES_MARK not in text:
        raise RuntimeError(f"docs/maths-text.md lost its mark {MATHS_FAMILIES_MARK!r}")
    return text.replace(MATHS_FAMILIES_MARK, "\n\n".join(sections))


#: Maths as pymdownx.arithmatex marks it (generic mode): inline ``\\(...\\)`` in a span, display
#: ``\\[...\\]`` in a div.
_MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*\\(?P<open>[(\[])(?P<tex>.*?)\\[)\]]\s*</(?P=tag)>', re.DOTALL
)


#: LaTeX environments latex2mathml writes as one row with a line-break hint that browsers ignore, and the
#: ones it writes as a table of rows instead: ``aligned`` (right | left columns) and ``gathered`` (centred).
_AS_TABLES = {"aligned": "align*", "gathered": "matrix"}
#: MathML Core (Chromium's) ignores a cell's ``columnalign``: the same alignment as CSS.
_COLUMN_ALIGN = re.compile(r'<mtd columnalign="(left|right|center)">')


def to_mathml(html: str) -> str:
    """Every formula arithmatex marked, as MathML: browsers draw it natively, so the site renders its
    maths offline, with no script and no font to fetch (latex2mathml, at build time)."""
    from latex2mathml.converter import convert

    def one(match: re.Match[str]) -> str:
        tex = htmllib.unescape(match["tex"]).strip()
        for env, table in _AS_TABLES.items():
            for edge in ("begin", "end"):
                tex = tex.replace(f"\\{edge}{{{env}}}", f"\\{edge}{{{table}}}")
        mathml = convert(tex, display="block" if match["open"] == "[" else "inline")
        return _COLUMN_ALIGN.sub(r'<mtd columnalign="\1" style="text-align: \1">', mathml)

    return _MATH.sub(one, html)


def included(path: str) -> Callable[[], str]:
    """A file of the repository shown as a page at the site's root (SECURITY.md, benchmarks/README.md,
    CHANGELOG.md): its links into ``docs/`` read from there."""

    def page() -> str:
        return (ROOT / path).read_text(encoding="utf-8").replace("](docs/", "](").replace("](../docs/", "](")

    return page


#: Generated page -> how it is written.
PAGES: dict[str, Callable[[], str]] = {
    "maths.md": maths_page,
    "reference/limits.md": limits_page,
    "reference/families.md": families_page,
    "reference/cli.md": cli_page,
    "reference/json.md": json_page,
    "reference/layout.md": layout_page,
    "lab/verdict.md": lab_verdict_page,
    "security.md": included("SECURITY.md"),
    "benchmarks.md": included("benchmarks/README.md"),
    "changelog.md": included("CHANGELOG.md"),
}


def _notebooks() -> Any:
    """``notebooks.py`` beside this hook (how the stored notebooks are shown), loaded by its path: mkdocs
    loads a hook as a file, not as a package."""
    import importlib.util

    if "specbound_docs_notebooks" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "specbound_docs_notebooks", Path(__file__).with_name("notebooks.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["specbound_docs_notebooks"]


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages to the site, and the plotly.js the notebooks' figures draw with (mkdocs
    hook)."""
    for uri, write in PAGES.items():
        files.append(File.generated(config, uri, content=write()))
    notebooks = _notebooks()
    files.append(File.generated(config, notebooks.PLOTLY_JS, content=notebooks.plotly_js()))
    return files


def on_page_content(html: str, page: Any, **_: Any) -> str:
    """Render the page's maths as MathML; on a notebook, its markdown cells' maths too, and load plotly.js
    before its figures (mkdocs hook)."""
    if page.file.src_uri.endswith(".ipynb"):
        from mkdocs.utils import get_relative_url

        notebooks = _notebooks()
        html = notebooks.with_plotly_script(
            notebooks.notebook_maths(html), get_relative_url(notebooks.PLOTLY_JS, page.url)
        )
    return to_mathml(html)
