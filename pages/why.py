"""Why p* wins: which p each matrix takes, its rank against the structural maximum, and per matrix the scale
s_W against the break-even scale below which some p > 0 would beat counting rank."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.services import lab
from dashboard.state import atlas, data, session, share
from dashboard.widgets import drilldown
from dashboard.widgets.experts import expert_picker
from dashboard.widgets.export import (
    clickable_cells,
    csv_download,
    file_stem,
    provenance,
    report_download,
    show_figure,
    show_panels,
)
from dashboard.widgets.presentation import folded
from dashboard.widgets.tables import show_table
from dashboard.wording.numbers import format_integer, format_p
from dashboard.wording.text import bound_note, plain
from specbound.core.architecture import Kind
from specbound.present.explain import break_even
from specbound.present.figures import bounds as figures
from specbound.present.figures.html_report import ReportSection
from specbound.present.figures.spectra import rank_against_maximum

ensure_app_entry()

RANK_KIND_KEY = "rank_kind"
RANK_KIND_CODEC = share.choice_codec({kind.value: kind.value.lower() for kind in Kind})
P_STAR_MAP_KEY = "p_star_map"

analysis = session.current_analysis()
profile = analysis.profile
name = atlas.display_name(session.current_model())
summary, sentence = data.explanation_for(session.current_model())
source = provenance(name, "p*")

st.title("Why p* wins")
st.markdown(f"**{plain(summary.headline())}.** {plain(sentence)}")
bound_note(analysis.profile.shape)

st.subheader("p* of every matrix")
used = summary.used()
p_star_figures = []
if len(used) == 1:  # one value for all: the map would be one block, the histogram one bar
    (only,) = used
    st.info(
        f"All {format_integer(summary.total)} matrices take p* = {format_p(only).rstrip('0').rstrip('.') or '0'}: "
        "the map of p* would be one block of colour and its histogram one bar, so neither is drawn. "
        "The scales below show how far each matrix is from choosing another p.",
        icon=":material/info:",
    )
    varied = lab.varied_p_star_run()
    if varied is not None:
        key, step = varied
        st.button(
            "Open a model where p* varies",
            key="why_open_varied",
            on_click=lab.open_as_model,
            args=(key, step),
            help=f"A small Transformer trained by the lab and shipped with specbound ({lab.split_key(key)[1]}, step "
            f"{step}), whose matrices take different p*.",
        )
    if message := st.session_state.pop(lab.OPEN_ERROR_KEY, None):
        st.error(plain(message))
else:
    st.caption("Click a cell to open that matrix below.")
    map_expert = expert_picker(profile.shape, "p_star_expert")
    # the encoder's map and the decoder's (with QK_x, V_x) side by side, or one map's panels
    panels = figures.p_star_map_panels(analysis, source=source, expert=map_expert, prepare=clickable_cells)
    p_map = list(panels.figures)

    def locate(n: int) -> drilldown.Locate:
        stack = panels.stacks[n]
        if stack is not None:
            return drilldown.p_star_stack_cell(profile.shape, stack)
        return drilldown.p_star_panel_cell(n, map_expert)

    show_panels(
        p_map,
        P_STAR_MAP_KEY,
        widths=panels.widths,
        on_select=lambda n: lambda: drilldown.from_chart(f"{P_STAR_MAP_KEY}_{n}", analysis, locate(n)),
    )
    histogram = figures.p_star_histogram(analysis, source=source)
    show_figure(histogram, "p_star_histogram")
    p_star_figures = [*p_map, histogram]

st.subheader("Rank against its structural maximum")
st.caption(
    f"{', '.join(k.value for k in profile.shape.head_kinds)} heads can reach rank d = {profile.shape.head_dim} "
    f"(the head size), {', '.join(k.value for k in profile.shape.layer_kinds)} min(N, d_ff): a full-rank "
    "matrix pays the full √(rank · N) at p = 0."
)
model_kinds = [kind.value for kind in profile.model_kinds]
share.shared(RANK_KIND_KEY, RANK_KIND_CODEC, Kind.QK.value)
if st.session_state[RANK_KIND_KEY] not in model_kinds:  # M_gate from a link made on a gated model
    st.session_state[RANK_KIND_KEY] = Kind.QK.value
rank_kind = st.radio("Kind", model_kinds, horizontal=True, key=RANK_KIND_KEY)
ranks = rank_against_maximum(profile, rank_kind, source=source)
show_figure(ranks, "rank_against_maximum")

st.subheader("Scale against break-even")
st.caption(
    plain(
        "Each point is one matrix: across, its break-even scale s*_W (below which some p > 0 beats "
        "counting rank); up, its own scale s_W = γ · α⁽ℓ⁾ · L (how strongly the bound magnifies it). "
        "Above the diagonal every p > 0 costs more than counting rank, so p* = 0; below it, some p > 0 wins. "
        "A column of points means the matrices share one break-even scale."
    )
)
even_figure = figures.break_even_figure(analysis, source=source)
show_figure(even_figure, "break_even")
even = break_even(analysis)
table = pd.DataFrame(
    {
        "matrix": [m.label for m in profile.ids],
        "p_opt": analysis.p_opt,
        "log10_scale": even.log10_scale,
        "log10_break_even": even.log10_break_even,
        "decades_above": even.decades_above,
        "first_winning_p": even.first_winning_p,
        "rank": profile.rank,
    }
)
# on screen, "p = 0 wins" instead of an empty (NaN) cell, and the columns that fit a projector: the
# decades above s*_W are the difference of the two scales shown, the ranks are in the chart above;
# the CSV keeps every column, and NaN
shown = table.drop(columns=["decades_above", "rank"]).assign(
    first_winning_p=[format_p(p) if p == p else "none: p = 0 wins" for p in table["first_winning_p"]]
)
with folded("Per matrix (table)"):
    show_table(shown, "break_even_table", on_select=lambda: drilldown.from_table("break_even_table"))
    csv_download(
        table, f"{file_stem(profile)}-break-even.csv", "download_break_even", "Download the break-even table (CSV)"
    )

st.subheader("One matrix")
index = drilldown.picker(analysis)
if index is not None:
    drilldown.detail(analysis, index, analysis.optimal, source)

report_download(
    "Why p* wins",
    lambda: [
        ReportSection("p* of every matrix", p_star_figures, note=f"{summary.headline()}. {sentence}"),
        ReportSection("Rank against its structural maximum", [ranks]),
        ReportSection("Scale against break-even", [even_figure], [table]),
    ],
    model=name,
    p_text="p*",
    key="report_why",
    shape=analysis.profile.shape,
    grid_m=analysis.grid_m,
)
