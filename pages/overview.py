"""Overview, the landing page: which model is open, the headline numbers, why p* is what it is, where to go next."""

from __future__ import annotations

import streamlit as st

from dashboard import atlas, data
from dashboard.headline import headline_sentence
from dashboard.numbers import format_value, times_in_words
from dashboard.presentation import folded, headline, metric_row
from dashboard.routing import ensure_app_entry
from dashboard.text import EDELMAN_LABEL, OPTIMAL_LABEL, bound_note, model_card_caption, plain
from specbound.families import family_name
from specbound.logspace import to_log10

ensure_app_entry()

#: Metric labels of the Overview (tests read them).
RATIO_LABEL = "Edelman-style ÷ ours"
P_STAR_LABEL = "p* summary"
#: The three steps of the tour: page, label, what it shows.
TOUR: tuple[tuple[str, str, str, str], ...] = (
    (
        "pages/bounds.py",
        "1 · Bound explorer",
        ":material/tune:",
        "Move p for every matrix, per kind or per layer, and watch each term and the total change.",
    ),
    (
        "pages/why.py",
        "2 · Why p* wins",
        ":material/lightbulb:",
        "Which p each matrix picks, and the scale s_W at which a p above 0 would start to win.",
    ),
    (
        "pages/compare.py",
        "3 · Compare",
        ":material/compare_arrows:",
        "The trained model against its random-initialised twin, or any other model pinned as a baseline.",
    ),
)
#: Short definitions of the symbols used on every page.
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("QK", "per attention head, the query-key product W_Qᵀ W_K restricted to the head: N × N, rank at most d."),
    ("V", "per head, the value map times its slice of the output projection: N × N, rank at most d."),
    ("M_gate", "per layer of a gated MLP (Llama-family decoders), the gate's matrix (N × d_ff)."),
    ("M_in", "per layer, the feed-forward block's first matrix (N × d_ff; the up projection of a gated MLP)."),
    ("M_out", "per layer, the feed-forward block's second matrix (d_ff × N)."),
    ("α⁽ℓ⁾", "depth factor: the product, over the layers above ℓ, of their Lipschitz bounds (1 at the top)."),
    ("γ", "local factor: the spectral norms of the other matrices of W's own layer that W passes through."),
    ("s_W", "scale of a matrix, s_W = γ · α⁽ℓ⁾ · L: how much W's size is magnified in the bound."),
    ("S_p", "Schatten quantity Σ σᵢ^p over W's singular values: p = 0 counts the rank, p = 2 is ‖W‖_F²."),
    ("c(W; p)", "a matrix's contribution, S_p^(1/(p+2)) · s_W^(p/(p+2)) · N^((p+1)/(p+2)); p* minimises it."),
)

analysis = data.current_analysis()
profile, shape = analysis.profile, analysis.profile.shape
name = atlas.display_name(data.current_model())
summary, sentence = data.explanation_for(data.current_model())

st.title("Overview")
with st.container(border=True):
    st.markdown(f"**Model:** {plain(name)} · family {plain(family_name(shape.family))}")
    st.caption(model_card_caption(shape, analysis.grid_m))
    if shape.is_bert_like:
        st.caption("An encoder of the block the paper's BERT-adapted proxies treat: no adaptation.")
    else:
        st.markdown(
            "**Adapted proxy.** This model departs from the paper's BERT encoder; the numbers below are the "
            "same proxies with these adaptations:\n"
            + "\n".join(f"- **{a.value}**: {plain(a.explanation)}" for a in shape.adaptations)
        )

log_ours, log_edelman = analysis.optimal.log_total, analysis.log_edelman
with headline():
    row = metric_row()
    row.metric(OPTIMAL_LABEL, format_value(log_ours), help=f"log10 = {float(to_log10(log_ours)):.2f}")
    row.metric(EDELMAN_LABEL, format_value(log_edelman), help=f"log10 = {float(to_log10(log_edelman)):.2f}")
    if log_edelman >= log_ours:
        row.metric(RATIO_LABEL, times_in_words(log_edelman - log_ours))
    else:
        row.metric("ours ÷ Edelman-style", times_in_words(log_ours - log_edelman))
st.markdown(f"**{plain(headline_sentence(analysis))}**")
bound_note(shape)

st.subheader("Which p each matrix takes")
st.metric(P_STAR_LABEL, summary.headline())
st.markdown(plain(sentence))

st.subheader("A tour in three steps")
for page, label, icon, what in TOUR:
    st.page_link(page, label=label, icon=icon)
    st.caption(what)

st.subheader("Glossary")
with folded("Symbols"):
    st.markdown("\n".join(f"- **{symbol}**: {meaning}" for symbol, meaning in GLOSSARY))
