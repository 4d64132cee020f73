"""Overview, the landing page: which model is open, the headline numbers, why p* is what it is, where to go next."""

from __future__ import annotations

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.state import atlas, data, session
from dashboard.widgets.presentation import folded, headline, metric_row
from dashboard.wording import vocabulary
from dashboard.wording.numbers import times_in_words
from dashboard.wording.text import BOUND_NOTE, EDELMAN_LABEL, OPTIMAL_LABEL, model_card_caption, plain
from dashboard.wording.totals import headline_sentence
from specbound.io.families import family_name
from specbound.present.numbers import format_log

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
        "Which p each matrix picks, and the scale $s_W$ at which a p above 0 would start to win.",
    ),
    (
        "pages/compare.py",
        "3 · Compare",
        ":material/compare_arrows:",
        "The trained model against its random-initialised twin, or any other model pinned as a baseline.",
    ),
)
#: The product and what it is for, in one sentence each (the page's first lines).
PRODUCT_NAME = "specbound"
PURPOSE = (
    "**How much can a trained Transformer's weights say about how well it generalizes?** specbound reads a "
    "model's weight matrices, computes their singular values, and turns them into the complexity term of "
    "two generalization bounds: the spectrum-adaptive bound of Sakai & Imaizumi (2026), *ours*, and the "
    "norm-based bound of Edelman et al. (2022)."
)
#: What p is, beside the headline (the bound's one free choice, which the lesson turns on).
WHAT_P_IS = (
    r"Each weight matrix enters *ours* through a Schatten quantity $S_p = \sum_i \sigma_i^{\,p}$ of its singular "
    r"values, with its own $p$ between 0 ($S_0$ counts the rank) and 2 ($S_2$ is the squared Frobenius norm); "
    r"p\* is the $p$ that makes that matrix's term smallest, chosen after training from the grid $P_m$ on "
    "which the theorem's guarantee holds."
)
#: How to read the three numbers.
HOW_TO_READ = (
    "Both numbers are complexity measures: **lower is better**, since a smaller complexity term promises a "
    "smaller gap between training and test error. They are proxies (constants and the 1/√n factor left out), "
    "so compare them with each other and across models, not with an error rate."
)
analysis = session.current_analysis()
profile, shape = analysis.profile, analysis.profile.shape
name = atlas.display_name(session.current_model())
summary, sentence = data.explanation_for(session.current_model())
log_ours, log_edelman = analysis.optimal.log_total, analysis.log_edelman

st.title(PRODUCT_NAME)
st.markdown(PURPOSE)

with headline():
    row = metric_row()
    row.metric(OPTIMAL_LABEL, format_log(log_ours), help=vocabulary.help_for("ours"))
    row.metric(EDELMAN_LABEL, format_log(log_edelman), help=vocabulary.help_for("edelman"))
    if log_edelman >= log_ours:
        row.metric(RATIO_LABEL, times_in_words(log_edelman - log_ours), help=vocabulary.help_for("ratio"))
    else:
        row.metric("ours ÷ Edelman-style", times_in_words(log_ours - log_edelman), help=vocabulary.help_for("ratio"))
st.markdown(f"**{plain(headline_sentence(analysis))}** {HOW_TO_READ}")
st.markdown(WHAT_P_IS)

tour = st.container(horizontal=True, gap="small")
for page, label, icon, what in TOUR:
    tour.page_link(page, label=label, icon=icon, help=what)

st.caption(f"Model: {plain(name)} · family {plain(family_name(shape.family))}. {BOUND_NOTE}")

st.subheader("Which p each matrix takes")
st.metric(P_STAR_LABEL, summary.headline())
st.markdown(plain(sentence))

st.subheader("The model")
with st.container(border=True):
    st.caption(model_card_caption(shape, analysis.grid_m))
    if shape.is_bert_like:
        st.caption("An encoder of the block the paper's BERT-adapted proxies treat: no adaptation.")
    else:
        st.markdown(
            "**Adapted proxy.** This model departs from the paper's BERT encoder; the numbers above are the "
            "same proxies with these adaptations:\n"
            + "\n".join(f"- **{a.value}**: {plain(a.explanation)}" for a in shape.adaptations)
        )

st.subheader("A tour in three steps")
for page, label, icon, what in TOUR:
    st.page_link(page, label=label, icon=icon)
    st.caption(what)

st.subheader("Glossary")
with folded("Symbols"):
    st.markdown(vocabulary.glossary_markdown())
