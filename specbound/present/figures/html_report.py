"""A self-contained HTML report of the current view: figures and tables in one file that opens offline.

plotly.js is embedded exactly once, so the file needs no network; it and the figures travel gzipped
(base64 in the page) and a short script unpacks them with the browser's own ``DecompressionStream``
and draws every figure. plotly.js alone is 4.8 MB as text and 1.5 MB gzipped, which took a report
from 4.9 MB to about 2 MB. The figures' numbers are written with :data:`FIGURE_DIGITS` significant
digits, more than any chart or hover shows, instead of float64's 17. Tables stay plain HTML, readable
without the script. Every piece of user-given text (title, model name, headings, notes, table cells)
is HTML-escaped, and a figure's texts are data inside the packed JSON: a model name is never markup.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.utils import PlotlyJSONEncoder

from ..._version import __version__
from ..numbers import MISSING, format_number
from .style import decoded

if TYPE_CHECKING:
    import pandas as pd

#: Minimal styling, inline like everything else.
REPORT_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
header p { margin: 0.2em 0; color: #555; }
.table { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
.totals { display: flex; flex-wrap: wrap; gap: 0.5em 2em; margin: 0.5em 0 1em 0; }
.totals div { min-width: 12em; } .totals b { display: block; font-size: 1.4em; white-space: nowrap; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f2f2f2; }
"""


#: Significant digits of every number in a report's figures (the charts and hovers show at most 6).
FIGURE_DIGITS: int = 7
#: Ids of the packed plotly.js and figures in the page.
PLOTLY_ID, FIGURES_ID = "specbound-plotly-gz", "specbound-figures-gz"
#: The figures' options in a report (as on the page, without the logo).
FIGURE_CONFIG: dict[str, Any] = {"responsive": True, "displaylogo": False}
#: Unpacks plotly.js and the figures, then draws each figure into its div. A browser without
#: DecompressionStream (before 2023) gets a sentence in place of each chart; the tables still read.
BOOTSTRAP_JS = f"""
(async () => {{
  const charts = document.querySelectorAll(".plotly-graph-div");
  if (typeof DecompressionStream === "undefined") {{
    const note = "This browser cannot unpack the charts: open the file in a current one.";
    charts.forEach(c => {{ c.textContent = note; }});
    return;
  }}
  const unpack = async (id) => {{
    const bytes = Uint8Array.from(atob(document.getElementById(id).textContent.trim()), c => c.charCodeAt(0));
    return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  }};
  const library = document.createElement("script");
  library.textContent = await unpack("{PLOTLY_ID}");
  document.head.appendChild(library);
  for (const figure of JSON.parse(await unpack("{FIGURES_ID}"))) {{
    await Plotly.newPlot(document.getElementById(figure.id), figure.data, figure.layout, figure.config);
  }}
}})();
"""


@dataclass(frozen=True)
class ReportSection:
    """One heading with an optional note, figures and tables (DataFrames), in that order.

    ``table_captions[i]``, when given, is shown above ``tables[i]``; ``totals`` (label, value as the page
    writes it) are shown as the page's headline numbers, before the figures.
    """

    heading: str
    figures: Sequence[go.Figure] = ()
    tables: Sequence[pd.DataFrame] = ()
    note: str = ""
    table_captions: Sequence[str] = ()
    totals: Sequence[tuple[str, str]] = ()


def _table_html(frame: pd.DataFrame) -> str:
    table = frame.to_html(index=False, escape=True, border=0, na_rep=MISSING, float_format=format_number)
    return f'<div class="table">{table}</div>'


def _totals_html(totals: Sequence[tuple[str, str]]) -> str:
    cells = "".join(f"<div>{html.escape(label)}<b>{html.escape(value)}</b></div>" for label, value in totals)
    return f'<div class="totals">{cells}</div>'


def _round(value: float) -> float | None:
    if not math.isfinite(value):
        return None  # JSON has no NaN or infinity; Plotly draws a gap, as for None
    return float(f"{value:.{FIGURE_DIGITS}g}")


def _plain_data(value: Any) -> Any:
    """A figure's JSON with every array a list and every float rounded to :data:`FIGURE_DIGITS` digits.

    Plotly writes numpy arrays as base64 typed arrays (``{"dtype", "bdata"}``), exact and incompressible;
    rounded decimals are what the charts show and pack several times smaller.
    """
    if isinstance(value, dict):
        if set(value) >= {"dtype", "bdata"}:
            return _plain_data(decoded(value))
        return {key: _plain_data(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return _plain_data(value.tolist())
    if isinstance(value, (list, tuple)):
        return [_plain_data(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return _round(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


def _packed(text: str) -> str:
    """``text`` gzipped and in base64, for a ``<script type="application/octet-stream">`` of the page."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


@cache
def _packed_plotlyjs() -> str:
    return _packed(get_plotlyjs())


def _figure_div(figure_id: str, figure: go.Figure) -> str:
    height = figure.layout.height or 450
    return f'<div id="{figure_id}" class="plotly-graph-div" style="height:{int(height)}px; width:100%;"></div>'


def html_report(
    title: str, sections: Sequence[ReportSection], *, model: str, p: str, created: datetime | None = None
) -> str:
    """One HTML document: a header (title, model, p, date, specbound version) and the sections."""
    created = created or datetime.now(UTC)
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        f"<style>{REPORT_CSS}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>{esc(title)}</h1>",
        f"<p>Model: <strong>{esc(model)}</strong> · p: <strong>{esc(p)}</strong></p>",
        f"<p>Created {esc(created.strftime('%Y-%m-%d %H:%M %Z'))} with specbound {esc(__version__)}. "
        "The numbers are proxies of the bound's leading complexity factor, not generalization gaps.</p>",
        "</header>",
    ]
    figures: list[dict[str, Any]] = []
    for section in sections:
        parts.append(f"<section><h2>{esc(section.heading)}</h2>")
        if section.totals:
            parts.append(_totals_html(section.totals))
        if section.note:
            parts.append(f"<p>{esc(section.note)}</p>")
        for figure in section.figures:
            figure_id = f"figure-{len(figures)}"
            parts.append(_figure_div(figure_id, figure))
            spec = figure.to_plotly_json()
            figures.append({"id": figure_id, "data": spec["data"], "layout": spec["layout"], "config": FIGURE_CONFIG})
        for n, table in enumerate(section.tables):
            if n < len(section.table_captions):
                parts.append(f"<h3>{esc(section.table_captions[n])}</h3>")
            parts.append(_table_html(table))
        parts.append("</section>")
    if figures:
        packed_figures = _packed(json.dumps(_plain_data(figures), cls=PlotlyJSONEncoder, separators=(",", ":")))
        parts += [
            f'<script type="application/octet-stream" id="{PLOTLY_ID}">{_packed_plotlyjs()}</script>',
            f'<script type="application/octet-stream" id="{FIGURES_ID}">{packed_figures}</script>',
            f"<script>{BOOTSTRAP_JS}</script>",
        ]
    parts += ["</body>", "</html>"]
    return "\n".join(parts)
