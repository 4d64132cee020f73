"""Compare: the current model against a pinned baseline (another model, or its random-initialised twin), both
at their own p*: totals, per-kind and per-layer differences, spectra overlaid."""

from __future__ import annotations

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.state import atlas, baseline, session, share
from dashboard.views.compare import (
    CHANGED_HEADING,
    TITLE,
    CentredView,
    compare_view,
    overlay_kinds,
    overlay_layers,
)
from dashboard.widgets import drilldown
from dashboard.widgets.export import provenance, report_download, show_figure
from dashboard.widgets.presentation import bound_note, folded, headline, metric_row
from dashboard.widgets.tables import show_table
from dashboard.wording.text import plain
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis
from specbound.present.report import centred_label

ensure_app_entry()

OVERLAY_KIND_KEY, OVERLAY_LAYER_KEY = "overlay_kind", "overlay_layer"
OVERLAY_KIND_CODEC = share.choice_codec({kind.value: kind.value.lower() for kind in Kind})
#: Keys of the "what changed" maps, in size and in direction (their clicks open a matrix).
CHANGE_MAP_KEY, INTRUDER_MAP_KEY = "change_heatmaps", "intruder_heatmaps"

analysis = session.current_analysis()
name = atlas.display_name(session.current_model())

st.title(TITLE)
st.caption(f"The open model, {plain(name)}, against a baseline, each at its own p*.")
baseline.controls()
pinned = baseline.pinned_analysis()


def overlay_choice(base_analysis: BoundAnalysis) -> tuple[str, int]:
    """The kind and layer whose spectra are overlaid (a link's choice the two models lack falls back)."""
    kind_col, layer_col = st.columns(2)
    with kind_col:
        both = overlay_kinds(analysis, base_analysis)  # a kind only one of the two models has is not offered
        share.shared_choice(OVERLAY_KIND_KEY, OVERLAY_KIND_CODEC, both, Kind.M_IN.value)
        kind = st.radio("Kind", both, horizontal=True, key=OVERLAY_KIND_KEY)
    with layer_col:
        common_layers = overlay_layers(analysis, base_analysis)
        share.shared_choice(OVERLAY_LAYER_KEY, share.Codec(int, str), common_layers, 0)
        layer = st.selectbox("Layer", common_layers, key=OVERLAY_LAYER_KEY)
    return kind, int(layer)


def show(base: baseline.Baseline, base_analysis: BoundAnalysis) -> None:
    """Everything about the model against ``base``: the widgets, then one view, drawn in the page's order."""
    base_name = baseline.name_of(base)
    if base == baseline.Baseline(session.current_model()):
        st.info(
            f"The baseline is the open model itself, {plain(name)}: open another model in the sidebar to "
            "compare the two, or compare with the random-initialised twin.",
            icon=":material/push_pin:",
        )
        return
    source = provenance(f"{name} against {base_name}", "p*")
    head, totals_place = headline(), st.container()  # the sticky headline stays a child of the page
    st.subheader("Spectra overlaid")
    kind, layer = overlay_choice(base_analysis)
    directions = baseline.directions_wanted()  # the switch is drawn beside the maps; its value decides this
    view = compare_view(
        analysis,
        base_analysis,
        name=name,
        base_name=base_name,
        overlay_kind=kind,
        overlay_layer=layer,
        centred=lambda: baseline.centred_reading(session.current_model(), base, base_analysis),
        source=source,
        directions=(lambda: baseline.directions_reading(session.current_model(), base)) if directions else None,
    )

    with head:
        row = metric_row()
        for label, value in view.totals:
            row.metric(label, value)
    with totals_place:
        st.markdown(f"**Baseline:** {plain(base_name)}")
        st.markdown(plain(view.sentence))
        if view.why is not None:
            st.info(view.why, icon=":material/lightbulb:")
        bound_note(analysis.profile.shape)
        show_figure(view.bars, "compare_bars")
        st.subheader("Per kind and per layer")
        with folded("Σ c(W; p*) per kind and per layer (tables)"):
            kind_col, layer_col = st.columns(2)
            with kind_col:
                show_table(view.kinds, "compare_kinds")
            with layer_col:
                if view.layers is not None:
                    show_table(view.layers, "compare_layers")
                else:
                    st.caption(
                        "The two models have different depths, so their layers do not correspond: "
                        "no per-layer differences."
                    )
    show_figure(view.overlay, "overlaid_spectra")

    st.subheader(f"{plain(centred_label(base_name)).capitalize()}. {CHANGED_HEADING}")
    if isinstance(view.centred, str):
        st.caption(f"No centred reading against {plain(base_name)}: {plain(view.centred)}.")
    else:
        show_centred(view.centred, base_analysis, source)

    report_download(view, key="report_compare")


def show_centred(centred: CentredView, base_analysis: BoundAnalysis, source: str) -> None:
    """The bound centred at the baseline, the maps of what changed in size and in direction side by side
    (their cells open a matrix) and that matrix."""
    with st.container():
        row = metric_row()
        for label, value in centred.totals:
            row.metric(label, value)
    st.markdown(plain(centred.sentence))
    baseline.directions_switch()
    st.caption("Click a cell to open that matrix below: its spectrum beside the difference's, and its term.")
    locate = drilldown.change_cell(base_analysis.profile)
    size_col, direction_col = st.columns(2)
    with size_col:
        show_figure(
            centred.changes,
            CHANGE_MAP_KEY,
            on_select=lambda: drilldown.from_chart(CHANGE_MAP_KEY, centred.analysis, locate),
        )
    with direction_col:
        if isinstance(centred.intruders, str):
            st.caption(f"No map of directions: {plain(centred.intruders)}.")
        else:
            show_figure(
                centred.intruders,
                INTRUDER_MAP_KEY,
                on_select=lambda: drilldown.from_chart(INTRUDER_MAP_KEY, centred.analysis, locate),
            )
    if centred.direction_sentence:
        st.caption(plain(centred.direction_sentence))
    index = drilldown.picker(centred.analysis)
    if index is not None:
        drilldown.detail(
            centred.analysis, index, centred.analysis.optimal, f"{source} · {centred.label}", centred.label
        )


if pinned is None and (refused := baseline.link_refusal()) is not None:
    st.warning(plain(refused), icon=":material/link_off:")
if pinned is None:
    st.info(
        "No baseline yet. Pin the open model (then open another one in the sidebar), or make its "
        "random-initialised twin: the same shape with untrained weights.",
        icon=":material/push_pin:",
    )
else:
    show(*pinned)
