"""Why p* wins: which p each matrix takes, its rank against the structural maximum, and per matrix the scale
s_W against the break-even scale below which some p > 0 would beat counting rank."""

from __future__ import annotations

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.state import atlas, data, session, share
from dashboard.views.why import TITLE, p_star_varies, why_view
from dashboard.widgets import drilldown
from dashboard.widgets import lab as lab_widgets
from dashboard.widgets.experts import expert_picker
from dashboard.widgets.export import csv_download, file_stem, provenance, report_download, show_figure, show_panels
from dashboard.widgets.presentation import bound_note, folded
from dashboard.widgets.tables import show_table
from dashboard.wording.numbers import format_integer, format_p
from dashboard.wording.text import plain
from specbound.core.architecture import Expert, Kind
from specbound.present.figures.bounds import PStarPanels

ensure_app_entry()

RANK_KIND_KEY = "rank_kind"
RANK_KIND_CODEC = share.choice_codec({kind.value: kind.value.lower() for kind in Kind})
P_STAR_MAP_KEY = "p_star_map"

analysis = session.current_analysis()
profile = analysis.profile
name = atlas.display_name(session.current_model())
summary, sentence = data.explanation_for(session.current_model())
source = provenance(name, "p*")

st.title(TITLE)
st.markdown(f"**{plain(summary.headline())}.** {plain(sentence)}")
bound_note(analysis.profile.shape)


def one_p_star(only: float) -> None:
    """Every matrix takes ``only``: say so instead of a map of one colour, and offer a model where p* varies."""
    st.info(
        f"All {format_integer(summary.total)} matrices take p* = {format_p(only).rstrip('0').rstrip('.') or '0'}: "
        "the map of p* would be one block of colour and its histogram one bar, so neither is drawn. "
        "The scales below show how far each matrix is from choosing another p.",
        icon=":material/info:",
    )
    lab_widgets.open_varied_button()


def show_p_star_map(panels: PStarPanels, map_expert: Expert) -> None:
    """The p* map (its cells open a matrix); an encoder-decoder's encoder map beside its decoder map."""

    def locate(n: int) -> drilldown.Locate:
        stack = panels.stacks[n]
        if stack is not None:
            return drilldown.p_star_stack_cell(profile.shape, stack)
        return drilldown.p_star_panel_cell(n, map_expert)

    show_panels(
        list(panels.figures),
        P_STAR_MAP_KEY,
        widths=panels.widths,
        on_select=lambda n: lambda: drilldown.from_chart(f"{P_STAR_MAP_KEY}_{n}", analysis, locate(n)),
    )


st.subheader("p* of every matrix")
map_expert = None
if not p_star_varies(summary):
    one_p_star(next(iter(summary.used())))
else:
    st.caption("Click a cell to open that matrix below.")
    map_expert = expert_picker(profile.shape, "p_star_expert")
map_place = st.container()

st.subheader("Rank against its structural maximum")
st.caption(
    f"{', '.join(k.value for k in profile.shape.head_kinds)} heads can reach rank d = {profile.shape.head_dim} "
    f"(the head size), {', '.join(k.value for k in profile.shape.layer_kinds)} min(N, d_ff): a full-rank "
    "matrix pays the full √(rank · N) at p = 0."
)
model_kinds = [kind.value for kind in profile.model_kinds]
share.shared_choice(RANK_KIND_KEY, RANK_KIND_CODEC, model_kinds, Kind.QK.value)  # M_gate from a gated model's link
rank_kind = st.radio("Kind", model_kinds, horizontal=True, key=RANK_KIND_KEY)

view = why_view(analysis, summary, sentence, model=name, map_expert=map_expert, rank_kind=rank_kind, source=source)
if view.p_map is not None and view.histogram is not None:
    with map_place:
        show_p_star_map(view.p_map, map_expert)
        show_figure(view.histogram, "p_star_histogram")
show_figure(view.ranks, "rank_against_maximum")

st.subheader("Scale against break-even")
st.caption(
    plain(
        "Each point is one matrix: across, its break-even scale s*_W (below which some p > 0 beats "
        "counting rank); up, its own scale s_W = γ · α⁽ℓ⁾ · L (how strongly the bound magnifies it). "
        "Above the diagonal every p > 0 costs more than counting rank, so p* = 0; below it, some p > 0 wins. "
        "A column of points means the matrices share one break-even scale."
    )
)
show_figure(view.break_even, "break_even")
with folded("Per matrix (table)"):
    show_table(view.shown_table, "break_even_table", on_select=lambda: drilldown.from_table("break_even_table"))
    csv_download(
        view.table, f"{file_stem(profile)}-break-even.csv", "download_break_even", "Download the break-even table (CSV)"
    )

st.subheader("One matrix")
index = drilldown.picker(analysis)
if index is not None:
    drilldown.detail(analysis, index, analysis.optimal, source)

report_download(view, key="report_why")
