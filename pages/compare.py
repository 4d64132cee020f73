"""Compare: the current model against a pinned baseline (another model, or its random-initialised twin), both
at their own p*: totals, per-kind and per-layer differences, spectra overlaid."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.state import atlas, baseline, session, share
from dashboard.widgets import drilldown
from dashboard.widgets.export import clickable_cells, provenance, report_download, show_figure
from dashboard.widgets.presentation import folded, headline, metric_row
from dashboard.widgets.tables import show_table
from dashboard.wording.numbers import comparison_sentence, format_change, format_integer
from dashboard.wording.text import bound_note, plain
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis
from specbound.core.logspace import exp_array
from specbound.io.centred import ReferenceKind
from specbound.present.figures import bounds as figures
from specbound.present.figures.html_report import ReportSection
from specbound.present.figures.spectra import change_heatmaps, overlaid_spectra
from specbound.present.numbers import format_log
from specbound.studies.compare import compare, totals_agree

ensure_app_entry()

OVERLAY_KIND_KEY, OVERLAY_LAYER_KEY = "overlay_kind", "overlay_layer"
OVERLAY_KIND_CODEC = share.choice_codec({kind.value: kind.value.lower() for kind in Kind})
MODEL_LABEL, BASELINE_LABEL, CHANGE_LABEL = "Ours at p*: model", "Ours at p*: baseline", "model − baseline"

analysis = session.current_analysis()
name = atlas.display_name(session.current_model())

st.title("Compare")
st.caption(f"The open model, {plain(name)}, against a baseline, each at its own p*.")
baseline.controls()
pinned = baseline.current_analysis()


#: The fixed p at which the page shows that the two models do differ.
FIXED_P = 1.0
#: The sentence that explains equal totals begins so (tests read it).
WHY_AGREE = "Why the totals agree:"


def why_totals_agree(model: BoundAnalysis, base: BoundAnalysis, base_name: str) -> str | None:
    """Markdown that words :func:`specbound.studies.compare.totals_agree` with this model's numbers; None
    when the totals differ."""
    why = totals_agree(model, base, FIXED_P)
    if why is None:
        return None
    if why.counts_ranks:
        reason = (
            f"every one of the {format_integer(why.matrices)} matrices of both models takes p* = 0, where a "
            "matrix contributes √(rank · N) whatever the size of its singular values: ours = Σ √(rank · N) + √L "
            f"counts ranks only, and both models have the same ranks ({format_integer(why.rank_sum)} in all, "
            "full rank). Counting rank is the cheapest choice for both because every scale s_W lies above its "
            "break-even scale, below which some p > 0 would win."
        )
    else:
        reason = "the two models' matrices have the same ranks and take the same p*, so their terms coincide."
    (edelman, base_edelman), (fixed, base_fixed) = why.log_edelman, why.log_at_fixed_p
    return (
        f"**{WHY_AGREE}** {plain(reason)} "
        f"The two models **do** differ where sizes count: the Edelman-style proxy "
        f"({plain(format_log(edelman))} against {plain(format_log(base_edelman))}), ours at a "
        f"fixed p = {why.fixed_p:g} ({plain(format_log(fixed))} against {plain(format_log(base_fixed))}, in the "
        f"Bound explorer with p* off), the spectra below, and, on the page “Why p\\* wins”, the scales at which "
        f"p\\* would leave 0 (baseline: {plain(base_name)})."
    )


def show(base: baseline.Baseline, base_analysis: BoundAnalysis) -> None:
    """Everything about the model against ``base``."""
    base_name = baseline.name_of(base)
    if base == baseline.Baseline(session.current_model()):
        st.info(
            f"The baseline is the open model itself, {plain(name)}: open another model in the sidebar to "
            "compare the two, or compare with the random-initialised twin.",
            icon=":material/push_pin:",
        )
        return
    comparison = compare(analysis, base_analysis, None, None)
    source = provenance(f"{name} against {base_name}", "p*")

    with headline():
        row = metric_row()
        row.metric(MODEL_LABEL, format_log(comparison.model.log_ours_opt))
        row.metric(BASELINE_LABEL, format_log(comparison.baseline.log_ours_opt))
        row.metric(CHANGE_LABEL, format_change(comparison.model.log_ours_opt, comparison.baseline.log_ours_opt))
    st.markdown(f"**Baseline:** {plain(base_name)}")
    st.markdown(
        plain(
            comparison_sentence(
                f"Ours at p* for {name}",
                comparison.model.log_ours_opt,
                "its baseline's",
                comparison.baseline.log_ours_opt,
            )
            + " "
            + comparison_sentence(
                "Its Edelman-style proxy",
                comparison.model.log_edelman,
                "the baseline's",
                comparison.baseline.log_edelman,
            )
        )
    )
    if (why := why_totals_agree(analysis, base_analysis, base_name)) is not None:
        st.info(why, icon=":material/lightbulb:")
    bound_note(analysis.profile.shape)

    bars = figures.compare_bars(comparison, source=source)
    show_figure(bars, "compare_bars")

    st.subheader("Per kind and per layer")
    kinds = pd.DataFrame(
        {
            "kind": [kind.value for kind in comparison.kinds],
            "model": exp_array([comparison.log_kind_sums_model.get(kind, -math.inf) for kind in comparison.kinds]),
            "baseline": exp_array(
                [comparison.log_kind_sums_baseline.get(kind, -math.inf) for kind in comparison.kinds]
            ),
            "difference": [comparison.kind_difference[kind] for kind in comparison.kinds],
        }
    )
    layers = None
    if comparison.layers_match:
        layers = pd.DataFrame(
            {
                "layer": np.arange(len(comparison.log_layer_sums_model)),
                "model": exp_array(comparison.log_layer_sums_model),
                "baseline": exp_array(comparison.log_layer_sums_baseline),
                "difference": comparison.per_layer_difference,
            }
        )
    with folded("Σ c(W; p*) per kind and per layer (tables)"):
        kind_col, layer_col = st.columns(2)
        with kind_col:
            show_table(kinds, "compare_kinds")
        with layer_col:
            if layers is not None:
                show_table(layers, "compare_layers")
            else:
                st.caption(
                    "The two models have different depths, so their layers do not correspond: no per-layer differences."
                )

    st.subheader("Spectra overlaid")
    common_layers = list(range(min(analysis.profile.shape.num_layers, base_analysis.profile.shape.num_layers)))
    kind_col, layer_col = st.columns(2)
    with kind_col:
        both = [k.value for k in analysis.profile.model_kinds if k in base_analysis.profile.model_kinds]
        share.shared(OVERLAY_KIND_KEY, OVERLAY_KIND_CODEC, Kind.M_IN.value)
        if st.session_state[OVERLAY_KIND_KEY] not in both:  # a kind only one of the two models has
            st.session_state[OVERLAY_KIND_KEY] = Kind.M_IN.value
        kind = st.radio("Kind", both, horizontal=True, key=OVERLAY_KIND_KEY)
    with layer_col:
        share.shared(OVERLAY_LAYER_KEY, share.Codec(int, str), 0)
        if st.session_state[OVERLAY_LAYER_KEY] not in common_layers:
            st.session_state[OVERLAY_LAYER_KEY] = 0
        layer = st.selectbox("Layer", common_layers, key=OVERLAY_LAYER_KEY)
    overlay = overlaid_spectra(analysis.profile, base_analysis.profile, kind, int(layer), source=source)
    show_figure(overlay, "overlaid_spectra")

    changes = centred_section(base, base_analysis, base_name, source)

    report_download(
        "Compare",
        lambda: [
            ReportSection("Totals", [bars], note=f"Baseline: {base_name}"),
            ReportSection(
                "Per kind and per layer",
                tables=[kinds] + ([layers] if layers is not None else []),
                table_captions=["Σ c(W; p*) per kind", "Σ c(W; p*) per layer"],
            ),
            ReportSection("Spectra overlaid", [overlay]),
            *changes,
        ],
        model=name,
        p_text="p*",
        key="report_compare",
        shape=analysis.profile.shape,
        grid_m=analysis.grid_m,
    )


#: The adaptation's name on this page: the baseline is the reference W⁰ (SPEC §14).
CENTRED = ReferenceKind.BASE.adaptation
CENTRED_LABEL = "Ours centred at the baseline"
#: Key of the "what changed" map (its clicks open a matrix).
CHANGE_MAP_KEY = "change_heatmaps"


def centred_section(
    base: baseline.Baseline, base_analysis: BoundAnalysis, base_name: str, source: str
) -> list[ReportSection]:
    """The bound centred at the baseline and what the model changed from it, when the baseline's weights
    are a reference for the model's (same family and dimensions); else one line saying why not."""
    st.subheader("Centred at the baseline: what changed")
    centred = baseline.centred_reading(session.current_model(), base, base_analysis)
    if isinstance(centred, str):
        st.caption(f"No centred reading against {plain(base_name)}: {plain(centred)}.")
        return []
    delta = centred.schatten_profile
    changed = int((delta.rank > 0).sum())
    with st.container():
        row = metric_row()
        row.metric(CENTRED_LABEL, format_log(centred.optimal.log_total))
        row.metric(MODEL_LABEL, format_log(analysis.optimal.log_total))
        row.metric("Matrices changed", f"{format_integer(changed)} of {format_integer(delta.rank.size)}")
    st.markdown(
        plain(
            f"{CENTRED.capitalize()} (SPEC §14): each c(W; p) takes S_p, the rank and p* of the difference "
            f"W − W⁰ from the baseline, {base_name}, and keeps the scale s_W of the open model's own weights; "
            "a matrix left unchanged has rank 0 and adds nothing. "
            + comparison_sentence(
                "Centred", centred.optimal.log_total, "the uncentred total", analysis.optimal.log_total
            )
        )
    )
    changes = change_heatmaps(base_analysis.profile, delta, source=source)
    st.caption("Click a cell to open that matrix below: its spectrum beside the difference's, and its term.")
    locate = drilldown.change_cell(base_analysis.profile)
    show_figure(
        clickable_cells(changes),
        CHANGE_MAP_KEY,
        on_select=lambda: drilldown.from_chart(CHANGE_MAP_KEY, centred, locate),
    )
    index = drilldown.picker(centred)
    if index is not None:
        drilldown.detail(centred, index, centred.optimal, f"{source} · {CENTRED}")
    return [ReportSection(f"What changed, {CENTRED}", [changes], note=f"Reference W⁰: {base_name}")]


if pinned is None:
    st.info(
        "No baseline yet. Pin the open model (then open another one in the sidebar), or make its "
        "random-initialised twin: the same shape with untrained weights.",
        icon=":material/push_pin:",
    )
else:
    show(*pinned)
