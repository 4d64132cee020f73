"""A self-contained HTML report of the current view: figures and tables in one file that opens offline.

plotly.js is embedded inline exactly once (before the first figure), every figure after it reuses it,
so the file needs no network. Every piece of user-given text (title, model name, headings, notes,
table cells) is HTML-escaped: a model name is data, never markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from .. import __version__
from ..numbers import MISSING, format_number

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
    plotly_embedded = False
    for section in sections:
        parts.append(f"<section><h2>{esc(section.heading)}</h2>")
        if section.totals:
            parts.append(_totals_html(section.totals))
        if section.note:
            parts.append(f"<p>{esc(section.note)}</p>")
        for figure in section.figures:
            parts.append(
                figure.to_html(
                    full_html=False,
                    include_plotlyjs=not plotly_embedded,
                    default_width="100%",
                    config={"responsive": True, "displaylogo": False},
                )
            )
            plotly_embedded = True
        for n, table in enumerate(section.tables):
            if n < len(section.table_captions):
                parts.append(f"<h3>{esc(section.table_captions[n])}</h3>")
            parts.append(_table_html(table))
        parts.append("</section>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts)
