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

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard.routing import ensure_app_entry
from dashboard.state import atlas, baseline, session, share
from dashboard.widgets import drilldown
from dashboard.widgets.controls import CONTROL_DEFAULTS, PChoice, held_choice, p_controls
from dashboard.widgets.export import csv_download, file_stem, provenance, report_download, show_figure
from dashboard.widgets.headline import (
    explorer_headline,
    headline_sentence,
    kind_shares,
    kind_shares_sentence,
    total_texts,
)
from dashboard.widgets.live_total import live_total
from dashboard.widgets.presentation import headline, let_headline_through, on_demand
from dashboard.widgets.tables import EXPLORER_TABLES_KEY, show_table
from dashboard.wording.numbers import comparison_sentence, format_number
from dashboard.wording.text import BOUND_NOTE, EDELMAN_LABEL, OPTIMAL_LABEL, SQRT_DEPTH_LABEL, TOTAL_LABEL, bound_note
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundTerms, PAssignment
from specbound.core.logspace import exp_array
from specbound.io.centred import ReferenceKind
from specbound.present.figures import bounds as figures
from specbound.present.figures.html_report import ReportSection
from specbound.present.figures.style import Quantity
from specbound.present.numbers import format_log
from specbound.present.report import layer_frame, terms_frame
from specbound.studies.compare import compare

ensure_app_entry()

#: How the per-layer sums are drawn (story of issue 10: layer 0 hides the rest on a linear axis).
SUMS_VIEW_KEY = "sums_view"
SUMS_VIEWS = {
    figures.SumsView.LOG: "log axis",
    figures.SumsView.SHARE: "share of each layer",
    figures.SumsView.LINEAR: "stacked values",
}
SUMS_CODEC = share.choice_codec({view: view.value for view in SUMS_VIEWS})

analysis = session.current_analysis()
profile = analysis.profile
model = atlas.display_name(session.current_model())
st.title("Bound explorer")
#: with the switch on, the whole page reads the bound centred at the pinned baseline (SPEC §14)
centring = baseline.explorer_centring(session.current_model())
if centring is not None:
    analysis = centring[0]
labels = [matrix.label for matrix in profile.ids]
model_file = file_stem(profile)

bound_note(analysis.profile.shape)


def show_headline(slot: DeltaGenerator, choice: PChoice) -> BoundTerms:
    """Fill ``slot`` with the totals at ``choice`` (against the pinned baseline, if any); returns the terms."""
    start = time.perf_counter()
    terms = analysis.evaluate(choice.assignment)
    elapsed_ms = 1e3 * (time.perf_counter() - start)
    pinned = None if centring is not None else baseline.current_analysis()  # centred: the baseline is W⁰
    comparison = compare(analysis, pinned[1], choice.assignment) if pinned else None
    centred = "" if centring is None else f" · {ReferenceKind.BASE.adaptation} {centring[1]}"
    with slot.container():
        explorer_headline(
            analysis,
            terms,
            comparison,
            baseline.name_of(pinned[0]) if pinned else None,
            f"{choice.summary}{centred} · terms evaluated in {elapsed_ms:.2f} ms from the cached spectra",
        )
    return terms


def choice_sentence(terms: BoundTerms, choice: PChoice) -> str:
    """How ours at the p in use compares with the Edelman-style proxy (the sentence follows the controls)."""
    if choice.assignment == PAssignment():
        return headline_sentence(analysis)
    return comparison_sentence("Ours at the chosen p", terms.log_total, "the Edelman-style proxy", analysis.log_edelman)


def report_totals(terms: BoundTerms) -> list[tuple[str, str]]:
    """The headline's numbers as the page writes them, for the report."""
    value, change = total_texts(terms.log_total, analysis.optimal.log_total)
    return [
        (TOTAL_LABEL, f"{value} ({change})"),
        (OPTIMAL_LABEL, format_log(analysis.optimal.log_total)),
        (EDELMAN_LABEL, format_log(analysis.log_edelman)),
        (SQRT_DEPTH_LABEL, format_number(terms.sqrt_depth)),
    ]


def depth_figure() -> go.Figure:
    """α⁽ℓ⁾ and ξ⁽ℓ⁾ per layer (independent of p)."""
    return figures.depth_factors(analysis, source=provenance(model, "independent of p"))


def terms_table(terms: BoundTerms) -> pd.DataFrame:
    """Every term per matrix at ``terms``, named by matrix."""
    table = terms_frame(analysis, terms)
    table.insert(0, "matrix", labels)
    return table


#: The per-layer table's headers on screen, under a caption that says they are sums of c(W; p).
LAYER_TABLE_LABELS = {f"sum_c_{kind.value}": kind.value for kind in Kind} | {"sum_c": "all kinds"}


def kind_table(terms: BoundTerms) -> pd.DataFrame:
    """Σ c(W; p) per kind and its share of the total (the caption's shares)."""
    log_sums, shares = terms.log_per_kind(), kind_shares(terms)
    kinds = terms.model_kinds
    return pd.DataFrame(
        {
            "kind": [k.value for k in kinds],
            "sum_c": exp_array([log_sums[k] for k in kinds]),
            "share": [shares[k] for k in kinds],
        }
    )


@st.fragment
def explorer() -> None:
    """Headline, controls and every p-dependent figure and table; reruns alone when a control moves.

    A moved control's value is in the session state before this runs, so the new total is shown (and
    sent, see :func:`let_headline_through`) before anything else is drawn. The first time, the headline
    is drawn from the controls' defaults under the link's values, so a click on the page or a shared
    link shows its numbers before any control or chart; it is drawn again only if the controls, once
    drawn, say otherwise.
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
    source = provenance(model, choice.summary)
    if (box := on_demand("Compare with a baseline", baseline.CONTROLS_SECTION_KEY)) is not None:
        with box:
            baseline.controls()

    st.caption(choice_sentence(terms, choice))
    proxies = figures.proxy_comparison(
        {
            Quantity.OURS_AT_P: terms.log_total,
            Quantity.OURS: analysis.optimal.log_total,
            Quantity.EDELMAN: analysis.log_edelman,
        },
        source=source,
    )
    show_figure(proxies, "proxy_comparison")

    st.subheader("Where the total comes from")
    share.shared(SUMS_VIEW_KEY, SUMS_CODEC, figures.SumsView.LOG)
    view = st.radio(
        "Per-layer sums", list(SUMS_VIEWS), format_func=SUMS_VIEWS.__getitem__, horizontal=True, key=SUMS_VIEW_KEY
    )
    sums = figures.term_sums(analysis, terms, view, source=source)
    show_figure(sums, "term_sums")
    st.caption(kind_shares_sentence(terms))

    st.subheader("c(W; p) against p")
    top_layer_rows = profile.rows_of(layers=[profile.shape.num_layers - 1], heads=[0])  # QK h0, V h0, M_in, M_out
    default_rows = [labels[i] for i in top_layer_rows]
    # a selection made on another model keeps the matrices this one has, else falls back to the default
    kept = [label for label in share.shared("curve_matrices", share.TEXTS, default_rows) if label in labels]
    st.session_state["curve_matrices"] = kept or default_rows
    chosen = st.multiselect("Matrices", labels, key="curve_matrices")
    curves = (
        figures.contribution_curves(analysis, [labels.index(c) for c in chosen], terms, source=source)
        if chosen
        else None
    )
    if curves is not None:
        show_figure(curves, "contribution_curves")

    st.subheader("One matrix")
    index = drilldown.picker(analysis)
    if index is not None:
        drilldown.detail(analysis, index, terms, source)

    st.subheader("Every term")
    if (box := on_demand("Tables per matrix, per layer and per kind (CSV)", EXPLORER_TABLES_KEY)) is not None:
        with box:
            st.caption(
                "Per matrix: the p used, c(W; p), p* and c(W; p*), then S_p, s_W = γ α⁽ℓ⁾ L and the norms "
                "(scroll sideways; the matrix stays in view). Click a row to open that matrix above; click a "
                "header to sort."
            )
            table = terms_table(terms)
            show_table(table, "terms_table", on_select=lambda: drilldown.from_table("terms_table"))
            csv_download(table, f"{model_file}-terms.csv", "download_terms", "Download the per-matrix terms (CSV)")
            layers_table = layer_frame(analysis, terms)
            st.caption(
                "Per layer: Σ c(W; p) of each kind and of all kinds, and Edelman's layer sum ξ⁽ℓ⁾. The depth "
                "factors α⁽ℓ⁾ are in the chart below; the CSV has them too."
            )
            show_table(layers_table.drop(columns=["log10_alpha"]), "layers_table", labels=LAYER_TABLE_LABELS)
            csv_download(
                layers_table, f"{model_file}-layers.csv", "download_layers", "Download the per-layer sums (CSV)"
            )
            show_table(kind_table(terms), "kind_sums")

    report_download(
        "Bound explorer",
        lambda: [
            ReportSection(
                "Totals",
                [proxies],
                note=f"{choice_sentence(terms, choice)} {BOUND_NOTE}",
                totals=report_totals(terms),
            ),
            ReportSection("Where the total comes from", [sums], [kind_table(terms)]),
            ReportSection("c(W; p) against p", [curves] if curves is not None else []),
            ReportSection(
                "Every term",
                tables=[terms_table(terms), layer_frame(analysis, terms)],
                table_captions=["Per matrix", "Per layer"],
            ),
            ReportSection("Depth factors", [depth_figure()]),
        ],
        model=model,
        p_text=choice.summary,
        key="report_bounds",
        shape=analysis.profile.shape,
        grid_m=analysis.grid_m,
    )
    share.publish()  # a fragment rerun skips app.py: keep the link in step with these controls here


explorer()

st.subheader("Depth factors")
show_figure(depth_figure(), "depth_factors")
