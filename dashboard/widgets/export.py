"""Getting tables and figures out of the dashboard: CSV downloads, Plotly's image export, HTML reports.

app.py imports this module for the sidebar's format picker, so plotly and pandas are imported where
they are used: the landing page needs neither, and the first page after a start comes sooner.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import streamlit as st

from dashboard.state.atlas import shown_member
from dashboard.state.mode import presenting

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from dashboard.views.common import PageView
    from specbound.core.architecture import ModelShape
    from specbound.core.profile import SpectralProfile
    from specbound.present.figures.html_report import ReportSection

#: Session-state key of the sidebar's choice of image format for Plotly's download button.
FIGURE_FORMAT_KEY = "figure_format"
FIGURE_FORMATS = ("png", "svg")
#: Session-state key of presentation mode (:data:`dashboard.widgets.presentation.PRESENT_KEY`; a test keeps them equal).
PRESENT_KEY = "present"


def figure_format_picker() -> None:
    """Sidebar radio: which format the camera button of every chart saves."""
    st.radio(
        "Figure download format",
        FIGURE_FORMATS,
        key=FIGURE_FORMAT_KEY,
        horizontal=True,
        format_func=str.upper,
        help="Used by the camera icon in the top-right corner of each chart.",
    )


def show_figure(
    fig: go.Figure,
    key: str,
    *,
    on_select: Callable[[], None] | None = None,
    half: bool = False,
    share: float | None = None,
) -> None:
    """Render a figure full width; its camera button saves it as PNG or SVG (see the sidebar).

    With ``on_select``, a click on a point (a bar, a heatmap cell) selects it and calls ``on_select``.
    ``half``: the figure sits in one of two columns, so its title wraps to fit; ``share``: the part of
    the page's width it has, for narrower columns. In presentation mode every figure gets large dark
    type whose titles fit (:func:`specbound.present.figures.style.for_projector`).
    """
    from specbound.present.figures.style import fit_share, for_projector

    width = share if share is not None else 0.5 if half else 1.0

    # the saved file names the model it shows: the subtitle starts with it (see provenance)
    model = str(fig.layout.title.subtitle.text or "").split(" · ")[0]
    filename = f"{_safe(model)}-{key}" if model else key
    # presentation mode (dashboard.widgets.presentation, which imports this)
    if st.session_state.get(PRESENT_KEY, False):
        fig = for_projector(fig, min(width, 0.5))
    else:
        fig = fit_share(fig, width)
    image_format = st.session_state.get(FIGURE_FORMAT_KEY, FIGURE_FORMATS[0])
    selection: dict[str, Any] = {"on_select": on_select, "selection_mode": "points"} if on_select is not None else {}
    config: dict[str, Any] = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format, "filename": filename, "scale": 2},
    }
    st.plotly_chart(fig, key=key, config=config, **selection)


def show_panels(
    figures: Sequence[go.Figure],
    key: str,
    *,
    per_row: int | None = None,
    widths: Sequence[float] | None = None,
    on_select: Callable[[int], Callable[[], None]] | None = None,
) -> list[str]:
    """Figures of one panel each (:func:`specbound.present.figures.style.split_panels`) side by side in columns,
    ``per_row`` to a row (all in one row by default), with relative ``widths``.

    Streamlit stacks columns on a narrow screen (under about 640 px), so a phone shows one panel
    under the other instead of squeezing titles, colour bars and ticks into each other. Titles wrap
    to their column. ``on_select(n)`` gives the click callback of panel n. Returns the charts' keys.
    """
    per_row = per_row or len(figures)
    keys = []
    for start in range(0, len(figures), per_row):
        row = figures[start : start + per_row]
        weights = list(widths[: len(row)]) if widths else [1.0] * per_row
        columns = st.columns(weights if widths else per_row, gap="small")
        for offset, (column, fig) in enumerate(zip(columns, row, strict=False)):
            number = start + offset
            with column:
                chart_key = f"{key}_{number}"
                share = weights[offset] / sum(weights)
                show_figure(fig, chart_key, on_select=on_select(number) if on_select else None, share=share)
                keys.append(chart_key)
    return keys


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "model"


def safe_file_part(text: str) -> str:
    """Words as one safe part of a file name: ``"centred at my-base"`` -> ``centred-at-my-base``."""
    return _safe("-".join(text.split()))


def file_stem(profile: SpectralProfile) -> str:
    """A safe file-name stem for downloads about one model: its short name (a local directory's last
    component, never the server's path to it: ``my-lora``, not ``tmp_abc_my-lora``; a lab run's words,
    not its run id: :func:`~dashboard.state.atlas.shown_member`) with anything odd replaced."""
    return name_stem(shown_member(profile.model))


def name_stem(name: str) -> str:
    """A name as a safe file-name stem: every run of characters other than letters, digits, dots,
    hyphens and underscores one underscore (``lab encoder L2 N64 …, step 500`` -> ``lab_encoder_L2_N64_…_step_500``)."""
    return _safe(name)


#: What a download button does to the page when pressed: nothing. The file is made by a callable
#: when the button is pressed; a rerun would only redraw the view and give every button on it a new
#: file id, and a second button pressed during that rerun would ask for an id already dropped.
NO_RERUN: Final = "ignore"


def csv_download(
    frame: pd.DataFrame | Callable[[], pd.DataFrame], filename: str, key: str, label: str = "Download CSV"
) -> None:
    """A button that saves ``frame`` (or what it returns) as CSV, written only when the button is
    pressed, never on a rerun: the explorer's tables change with every slider move."""

    def write() -> bytes:
        table = frame() if callable(frame) else frame
        return str(table.to_csv(index=False)).encode()

    st.download_button(label, write, file_name=filename, mime="text/csv", key=key, on_click=NO_RERUN)


def provenance(model: str, p_text: str) -> str:
    """The subtitle every exported figure carries: which model and which p it shows. In presentation
    mode the page's heading names the model, and a long name would crowd the narrow panels of a
    projector (the p* map's three), so the subtitle keeps the p alone."""
    return p_text if presenting() else f"{model} · {p_text}"


def model_card_section(shape: ModelShape, grid_m: int) -> ReportSection:
    """The report's first section: the model's family and shape (the Overview's model card) and each
    adaptation of the proxy with its plain explanation (SPEC §11-§12), so that a report read away from
    the dashboard says which formulas its numbers come from."""
    import pandas as pd

    from dashboard.wording.text import model_card_caption
    from specbound.present.figures.html_report import ReportSection

    if shape.is_bert_like:
        return ReportSection(
            "Model card",
            note=f"Family {shape.family}: a BERT-family encoder, read with the paper's proxies as stated. "
            f"{model_card_caption(shape, grid_m)}.",
        )
    adaptations = pd.DataFrame(
        {
            "adaptation": [a.value for a in shape.adaptations],
            "what it changes": [a.explanation for a in shape.adaptations],
        }
    )
    return ReportSection(
        "Model card",
        tables=[adaptations],
        note=f"Family {shape.family}, read with the adapted proxy. {model_card_caption(shape, grid_m)}.",
        table_captions=["The adaptations of the proxy"],
    )


def report_download(view: PageView, *, key: str) -> None:
    """A button that saves a self-contained HTML report (figures and tables, opens offline) of ``view``.

    The report is the page's own view (:mod:`dashboard.views`): its sections hold the very figures and
    tables the page draws, so it cannot show anything else. It is written only when the button is
    pressed (``view.report()`` is called then), never on a rerun. It opens with the model card
    (:func:`model_card_section`); its tables are written as the page shows them
    (:func:`dashboard.widgets.tables.as_text_frame`: the same headers, the same number format, "—" for an
    empty cell), so the report reads like the page.
    """
    heading = view.heading

    def build() -> str:
        from dataclasses import replace

        from dashboard.widgets.tables import as_text_frame
        from specbound.present.figures.html_report import html_report

        every = [model_card_section(heading.shape, heading.grid_m), *view.report()]
        shown = [replace(s, tables=[as_text_frame(t) for t in s.tables]) for s in every]
        return html_report(heading.title, shown, model=heading.model, p=heading.p_text)

    st.download_button(
        "Download this view as an HTML report",
        build,
        file_name=f"{_safe(heading.model)}-{_safe(heading.title)}.html",
        mime="text/html",
        key=key,
        on_click=NO_RERUN,
        icon=":material/description:",
        help="Figures and tables in one file that opens offline: for a collaborator or a slide.",
    )
