"""Bound explorer: choose p (globally, per kind, per layer) and watch every term of the proxy change.

A slider move only calls ``analysis.evaluate`` on the cached analysis: no file access, no SVD.
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from dashboard import data
from dashboard.controls import p_controls
from dashboard.export import csv_download, file_stem, show_figure
from dashboard.routing import ensure_app_entry
from dashboard.text import (EDELMAN_LABEL, OPTIMAL_LABEL, SQRT_DEPTH_LABEL, TOTAL_LABEL, bound_note,
                            format_log_value)
from specbound.figures import bounds as figures
from specbound.report import layer_frame, terms_frame

ensure_app_entry()

analysis = data.current_analysis()
profile = analysis.profile
labels = [matrix.label for matrix in profile.ids]
model_file = file_stem(profile)

st.title("Bound explorer")
choice = p_controls(analysis)

start = time.perf_counter()
terms = analysis.evaluate(choice.assignment)
elapsed_ms = 1e3 * (time.perf_counter() - start)
optimal = analysis.evaluate()

with st.container(key="bound_totals"):
    ours_col, best_col, edelman_col, depth_col = st.columns(4)
    ours_col.metric(TOTAL_LABEL, format_log_value(terms.log_total))
    best_col.metric(OPTIMAL_LABEL, format_log_value(optimal.log_total))
    edelman_col.metric(EDELMAN_LABEL, format_log_value(analysis.log_edelman))
    depth_col.metric(SQRT_DEPTH_LABEL, f"{terms.sqrt_depth:.4g}")
bound_note()
st.caption(f"{choice.summary} · terms evaluated in {elapsed_ms:.2f} ms from the cached spectra")

show_figure(figures.proxy_comparison({"ours at the chosen p": terms.log_total, "ours at p*": optimal.log_total,
                                      "Edelman-style": analysis.log_edelman}), "proxy_comparison")

st.subheader("Where the total comes from")
sums_col, kinds_col = st.columns([2, 1])
with sums_col:
    show_figure(figures.term_sums(analysis, terms), "term_sums")
with kinds_col:
    per_kind = terms.per_kind()
    kind_table = pd.DataFrame({"kind": [k.value for k in per_kind], "sum_c": list(per_kind.values())})
    kind_table["share"] = kind_table["sum_c"] / terms.total
    st.dataframe(kind_table, hide_index=True, key="kind_sums", column_config={
        "sum_c": st.column_config.NumberColumn("Σ c(W; p)", format="scientific"),
        "share": st.column_config.NumberColumn("share of total", format="percent"),
    })
bound_note()
show_figure(figures.depth_factors(analysis), "depth_factors")

st.subheader("c(W; p) against p")
top_layer_rows = profile.rows_of(layers=[profile.shape.num_layers - 1], heads=[0])  # head 0 of QK and V, M_in, M_out
default_rows = [labels[i] for i in top_layer_rows]
# a selection made on another model keeps the matrices this one has, else falls back to the default
kept = [label for label in st.session_state.get("curve_matrices", []) if label in labels]
st.session_state["curve_matrices"] = kept or default_rows
chosen = st.multiselect("Matrices", labels, key="curve_matrices")
if chosen:
    show_figure(figures.contribution_curves(analysis, [labels.index(c) for c in chosen], terms), "contribution_curves")
bound_note()

st.subheader("Every term")
st.caption("Per matrix: γ, log10 scale s_W = γ α⁽ℓ⁾ L, the p used, S_p and c(W; p), beside p* and c(W; p*). "
           "Click a column header to sort.")
table = terms_frame(analysis, terms)
table.insert(0, "matrix", labels)
st.dataframe(table, hide_index=True, key="terms_table")
csv_download(table, f"{model_file}-terms.csv", "download_terms", "Download the per-matrix terms (CSV)")
layers_table = layer_frame(analysis, terms)
st.dataframe(layers_table, hide_index=True, key="layers_table")
csv_download(layers_table, f"{model_file}-layers.csv", "download_layers", "Download the per-layer sums (CSV)")
bound_note()
