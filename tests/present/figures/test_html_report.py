"""The HTML report: one inline plotly.js, no external script, user text escaped, every table present."""

from __future__ import annotations

import base64
import gzip
import json
import re
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from specbound import __version__
from specbound.present.figures.html_report import FIGURE_DIGITS, FIGURES_ID, PLOTLY_ID, ReportSection, html_report
from specbound.present.figures.style import figure as styled_figure

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


def _unpacked(report: str, script_id: str) -> str:
    (packed,) = re.findall(rf'<script type="application/octet-stream" id="{script_id}">([^<]*)</script>', report)
    return gzip.decompress(base64.b64decode(packed)).decode("utf-8")


def test_plotly_is_embedded_once_and_nothing_is_fetched() -> None:
    report = _report()
    assert _unpacked(report, PLOTLY_ID) == get_plotlyjs()  # the whole library, once, packed
    assert get_plotlyjs()[:500] not in report  # not a second time as text
    assert report.count('class="plotly-graph-div"') == 3
    figures = json.loads(_unpacked(report, FIGURES_ID))
    assert [f["id"] for f in figures] == ["figure-0", "figure-1", "figure-2"]
    assert all(f'<div id="{f["id"]}" class="plotly-graph-div"' in report for f in figures)
    assert figures[0]["data"][0]["y"] == [3, 4] and figures[0]["config"]["displaylogo"] is False
    assert not re.search(r"<script[^>]*\bsrc\s*=", report)
    assert not re.search(r"""<(link|img|iframe)[^>]*(href|src)\s*=\s*["']https?:""", report)


def test_the_report_is_small_and_its_numbers_keep_what_the_charts_show() -> None:
    """plotly.js gzipped (1.5 MB, 2 MB in base64) instead of 4.8 MB of text; figure numbers to 7 digits."""
    values = np.array([np.pi * 10.0**k for k in range(-5, 40, 5)] + [np.nan, np.inf])
    wide = styled_figure([go.Scatter(x=np.arange(values.size), y=values)], "Values")
    report = html_report("Sizes", [ReportSection("One", figures=[wide])], model="m", p="p*")
    assert len(report.encode()) < 2.2e6 < len(get_plotlyjs())
    (figure,) = json.loads(_unpacked(report, FIGURES_ID))
    y = figure["data"][0]["y"]
    assert y[:-2] == [float(f"{v:.{FIGURE_DIGITS}g}") for v in values[:-2]] and y[-2:] == [None, None]
    assert y[1] == 1.0 * float(f"{np.pi:.7g}")  # rounded decimals, not float64's 17 digits
    assert figure["data"][0]["x"] == list(range(values.size))  # integers stay integers


def test_user_text_is_escaped_everywhere() -> None:
    report = _report()
    assert "<script>alert" not in report
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in report  # header, note, table cell


def test_header_and_tables() -> None:
    report = _report()
    assert "specbound " + __version__ in report and "2026-12-01 01:00 UTC" in report
    assert "p: <strong>p*</strong>" in report
    assert report.count("<table") == 2 and "<h3>Per layer</h3>" in report and "2.250 × 10¹²" in report
