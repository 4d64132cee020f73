"""Bound explorer: choose p (globally, per kind, per layer) and watch every term of the proxy change.

Everything that depends on p is one fragment: a control move reruns only it (not the sidebar, not the
p-independent figures), and it only calls ``analysis.evaluate`` on the cached analysis: no file
access, no SVD. The headline row above the controls stays at the top of the window while they move,
and its total follows the p sliders in the browser before the rerun (:mod:`dashboard.widgets.live_total`).
The baseline buttons and the tables are drawn only when their section is opened: every element on
the page costs the browser work on each move (see :func:`dashboard.widgets.presentation.on_demand`).
"""

from __future__ import annotations

import time
from functools import cache

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard.routing import ensure_app_entry
from dashboard.state import atlas, baseline, choices, session, share
from dashboard.views.bounds import LAYER_TABLE_LABELS, TITLE, ExplorerView, depth_figure, explorer_view
from dashboard.widgets import drilldown
from dashboard.widgets.controls import CONTROL_DEFAULTS, PChoice, held_choice, p_controls
from dashboard.widgets.export import (
    csv_download,
    file_stem,
    provenance,
    report_download,
    safe_file_part,
    show_figure,
)
from dashboard.widgets.headline import explorer_headline
from dashboard.widgets.live_total import live_total
from dashboard.widgets.presentation import bound_note, headline, let_headline_through, on_demand
from dashboard.widgets.tables import EXPLORER_TABLES_KEY, show_table
from dashboard.wording.text import with_centring
from specbound.core.bounds import BoundTerms
from specbound.present.figures.bounds import SumsView
from specbound.present.report import centred_label
from specbound.studies.compare import compare

ensure_app_entry()

#: How the per-layer sums are drawn (story of issue 10: layer 0 hides the rest on a linear axis).
SUMS_VIEW_KEY = "sums_view"
SUMS_VIEWS = {
    SumsView.LOG: "log axis",
    SumsView.SHARE: "share of each layer",
    SumsView.LINEAR: "stacked values",
}
SUMS_CODEC = share.choice_codec({view: view.value for view in SUMS_VIEWS})

analysis = session.current_analysis()
profile = analysis.profile
model = atlas.display_name(session.current_model())
st.title(TITLE)
#: with the switch on, the whole page reads the bound centred at the pinned baseline (SPEC §14)
centring = baseline.explorer_centring(session.current_model())
#: "centred at BASE" while the switch is on: every metric, chart subtitle, table and file name says it
centred_at = None if centring is None else centred_label(centring[1])
if centring is not None:
    analysis = centring[0]
labels = [matrix.label for matrix in profile.ids]
model_file = file_stem(profile) + ("" if centred_at is None else f"-{safe_file_part(centred_at)}")
#: the depth factors do not depend on p: drawn below the explorer, built there once per run (after the first chart)
depth = cache(lambda: depth_figure(analysis, provenance(model, with_centring("independent of p", centred_at))))

bound_note(analysis.profile.shape)


def show_headline(slot: DeltaGenerator, choice: PChoice) -> BoundTerms:
    """Fill ``slot`` with the totals at ``choice`` (against the pinned baseline, if any); returns the terms."""
    start = time.perf_counter()
    terms = analysis.evaluate(choice.assignment)
    elapsed_ms = 1e3 * (time.perf_counter() - start)
    pinned = None if centring is not None else baseline.pinned_analysis()  # centred: the baseline is W⁰
    comparison = compare(analysis, pinned[1], choice.assignment) if pinned else None
    centred = "" if centred_at is None else f" · {centred_at}"
    with slot.container():
        explorer_headline(
            analysis,
            terms,
            comparison,
            baseline.name_of(pinned[0]) if pinned else None,
            f"{choice.summary}{centred} · terms evaluated in {elapsed_ms:.2f} ms from the cached spectra",
            centred_at,
        )
    return terms


def chosen_curves() -> list[int]:
    """The matrices whose c(W; p) curves are drawn (by default layer L − 1's QK h0, V h0, M_in, M_out)."""
    top_layer_rows = profile.rows_of(layers=[profile.shape.num_layers - 1], heads=[0])
    default_rows = [labels[i] for i in top_layer_rows]
    # a selection made on another model keeps the matrices this one has, else falls back to the default
    choices.trimmed("curve_matrices", share.shared("curve_matrices", share.TEXTS, default_rows), labels, default_rows)
    return [labels.index(label) for label in st.multiselect("Matrices", labels, key="curve_matrices")]


def every_term(view: ExplorerView) -> None:
    """The per-matrix, per-layer and per-kind tables with their CSV downloads (drawn while open)."""
    st.caption(
        "Per matrix: the p used, c(W; p), p* and c(W; p*), then S_p, s_W = γ α⁽ℓ⁾ L and the norms "
        "(scroll sideways; the matrix stays in view). Click a row to open that matrix above; click a "
        "header to sort."
    )
    show_table(view.terms_table, "terms_table", on_select=lambda: drilldown.from_table("terms_table"))
    csv_download(view.terms_table, f"{model_file}-terms.csv", "download_terms", "Download the per-matrix terms (CSV)")
    st.caption(
        "Per layer: Σ c(W; p) of each kind and of all kinds, and Edelman's layer sum ξ⁽ℓ⁾. The depth "
        "factors α⁽ℓ⁾ are in the chart below; the CSV has them too."
    )
    show_table(view.layer_table.drop(columns=["log10_alpha"]), "layers_table", labels=LAYER_TABLE_LABELS)
    csv_download(view.layer_table, f"{model_file}-layers.csv", "download_layers", "Download the per-layer sums (CSV)")
    show_table(view.kind_table, "kind_sums")


@st.fragment
def explorer() -> None:
    """Headline, controls and every p-dependent figure and table; reruns alone when a control moves.

    A moved control's value is in the session state before this runs, so the new total is shown (and
    sent, see :func:`let_headline_through`) before anything else is drawn. The first time, the headline
    is drawn from the controls' defaults under the link's values, so a click on the page or a shared
    link shows its numbers before any control or chart; it is drawn again only if the controls, once
    drawn, say otherwise. Then the widgets, each above the place its figure will take; then one view
    (:func:`dashboard.views.bounds.explorer_view`) is built from their choices and drawn into those
    places, and the report is that view.
    """
    with headline():
        slot = st.empty()
    # on a first visit the controls are not drawn yet: their defaults, under what a link put in place
    held = held_choice(analysis, {**CONTROL_DEFAULTS, **st.session_state.to_dict()})
    if held is not None:
        terms = show_headline(slot, held)
        let_headline_through()  # the total first, then the controls and the figures
    choice = p_controls(analysis)
    if choice != held:
        terms = show_headline(slot, choice)
    live_total(analysis, choice, terms)  # the total follows the sliders in the browser before the next rerun
    if (box := on_demand("Compare with a baseline", baseline.CONTROLS_SECTION_KEY)) is not None:
        with box:
            baseline.controls()

    totals_place = st.container()
    st.subheader(with_centring("Where the total comes from", centred_at))
    share.shared(SUMS_VIEW_KEY, SUMS_CODEC, SumsView.LOG)
    sums_view = st.radio(
        "Per-layer sums", list(SUMS_VIEWS), format_func=SUMS_VIEWS.__getitem__, horizontal=True, key=SUMS_VIEW_KEY
    )
    sums_place = st.container()
    st.subheader(with_centring("c(W; p) against p", centred_at))
    curve_rows = chosen_curves()

    source = provenance(model, with_centring(choice.summary, centred_at))
    view = explorer_view(
        analysis,
        terms,
        assignment=choice.assignment,
        p_text=choice.summary,
        model=model,
        sums_view=sums_view,
        curve_rows=curve_rows,
        depth=depth,
        source=source,
        centring=centred_at,
    )
    totals_place.caption(view.sentence)
    with totals_place:
        show_figure(view.proxies, "proxy_comparison")
    with sums_place:
        show_figure(view.sums, "term_sums")
        st.caption(view.shares_sentence)
    if view.curves is not None:
        show_figure(view.curves, "contribution_curves")

    st.subheader(with_centring("One matrix", centred_at))
    index = drilldown.picker(analysis)
    if index is not None:
        drilldown.detail(analysis, index, terms, source, centred_at)

    st.subheader(with_centring("Every term", centred_at))
    if (box := on_demand("Tables per matrix, per layer and per kind (CSV)", EXPLORER_TABLES_KEY)) is not None:
        with box:
            every_term(view)

    report_download(view, key="report_bounds")
    share.publish()  # a fragment rerun skips app.py: keep the link in step with these controls here


explorer()

st.subheader(with_centring("Depth factors", centred_at))
show_figure(depth(), "depth_factors")
