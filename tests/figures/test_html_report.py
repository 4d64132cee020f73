"""The HTML report: one inline plotly.js, no external script, user text escaped, every table present."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from specbound import __version__
from specbound.figures.html_report import ReportSection, html_report
from specbound.figures.style import figure as styled_figure

EVIL = "<script>alert('x')</script>"


def _report() -> str:
    figure = styled_figure([go.Bar(x=[1, 2], y=[3, 4])], "Bars", source=f"{EVIL} · p*")
    tables = [pd.DataFrame({"layer": [0, 1], "c": [1.5, 2.25e12]}), pd.DataFrame({"kind": [EVIL]})]
    sections = [
        ReportSection("Spectra", figures=[figure, figure], note=EVIL),
        ReportSection("Bound terms", figures=[figure], tables=tables, table_captions=["Per layer", "Kinds"]),
    ]
    return html_report(
        f"Report on {EVIL}", sections, model=EVIL, p="p*", created=datetime(2026, 12, 1, 1, 0, tzinfo=UTC)
    )


def test_plotly_is_embedded_once_and_nothing_is_fetched() -> None:
    report = _report()
    assert report.count(get_plotlyjs()[:500]) == 1
    assert report.count('class="plotly-graph-div"') == 3
    assert not re.search(r"<script[^>]*\bsrc\s*=", report)
    assert not re.search(r"""<(link|img|iframe)[^>]*(href|src)\s*=\s*["']https?:""", report)


def test_user_text_is_escaped_everywhere() -> None:
    report = _report()
    assert "<script>alert" not in report
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in report  # header, note, table cell


def test_header_and_tables() -> None:
    report = _report()
    assert "specbound " + __version__ in report and "2026-12-01 01:00 UTC" in report
    assert "p: <strong>p*</strong>" in report
    assert report.count("<table") == 2 and "<h3>Per layer</h3>" in report and "2.250 × 10¹²" in report
