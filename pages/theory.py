"""Theory: the definitions behind the bound, each beside its live value for the current model, and a
synthetic-spectrum playground for teaching which Schatten index wins and why.
"""

from __future__ import annotations

import math

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.services import theory as live
from dashboard.state import atlas, choices, session, share
from dashboard.views.theory import playground_view
from dashboard.widgets.controls import DEFAULT_P
from dashboard.widgets.export import show_panels
from dashboard.widgets.presentation import bound_note, folded
from dashboard.wording.numbers import format_number, format_p
from dashboard.wording.text import code
from specbound.core.architecture import Kind
from specbound.core.bounds import grid_resolution, snap_to_grid
from specbound.core.defaults import L_PHI, P_MAX, RANK_TOL
from specbound.core.profile import MatrixId
from specbound.core.synthetic import Decay
from specbound.present.numbers import format_log, format_power
from specbound.present.report import ffn_widths

ensure_app_entry()

#: Scales s_W offered in the playground: powers of ten from 1e-6 to 1e6.
PLAYGROUND_SCALES = tuple(10.0**k for k in range(-6, 7))
PLAYGROUND_P_LABEL = "p* of the synthetic matrix"
#: Columns of the row of live values under a definition (the most any definition shows).
METRICS_PER_ROW = 3

analysis = session.current_analysis()
profile = analysis.profile
shape = profile.shape
labels = [matrix.label for matrix in profile.ids]

st.title("Theory")
with folded("Why spectrum-adaptive bounds"):  # the lecture notes fold away in presentation mode
    st.markdown(
        """
    Why does a Transformer with millions of weights generalise at all? Classical capacity measures count
    parameters and predict nothing useful. **Norm-based bounds** (Edelman et al., 2022, and later work) do
    better: they no longer grow polynomially with the hidden width or the sequence length. They still pay
    twice, though.

    * **Depth piles up.** Each layer's Lipschitz constant multiplies into the next one, so the complexity
      carries a product over layers, and in the best known norm-based results still a polynomial factor that
      grows like $L^{3/2}$.
    * **The norm radii are fixed before training.** A bound written with, say, (2,1) norms commits to that
      measure of size for every matrix. Trained weights do not cooperate: the attention products are exactly
      low rank (a head has only d = N/H dimensions), while the feed-forward matrices have slowly decaying
      spectra. One fixed norm cannot suit both.

    Sakai & Imaizumi (2026) replace the fixed norms by **Schatten quantities** S_p with an index p in [0, 2]
    that is picked **after training, separately for each matrix**. Small p counts rank, p = 2 is the Frobenius
    norm, and values in between interpolate: each matrix is split into a low-rank head and a tail that a
    Frobenius-type term controls. Because the choice is made on a finite grid of p values with a union
    bound over it, the guarantee survives the post-hoc choice. In representative regimes the dependence on
    depth drops from $L^{3/2}$ to √L or better, and the sequence length T enters only through a logarithm (a
    price of the ℓ₂-type covering argument behind the spectral approach).

    Below, every definition comes with its value for the model open in the sidebar.
    """
    )

st.subheader("Live values for the current model")
st.caption(
    f"{code(atlas.display_name(session.current_model()))}: L = {shape.num_layers}, N = {shape.hidden_size}, "
    f"{shape.num_heads} heads of d = {shape.head_dim}, d_ff = {ffn_widths(shape)}."
)
pick_col, p_col = st.columns([2, 3])
default_index = profile.index(MatrixId(shape.num_layers - 1, Kind.M_IN, expert=shape.experts[0]))  # top layer's M_in
choices.settled("theory_matrix", range(shape.num_matrices), default_index)
index = pick_col.selectbox("Matrix W", range(shape.num_matrices), format_func=labels.__getitem__, key="theory_matrix")
choices.choose({"theory_p": float(snap_to_grid(share.shared("theory_p", share.P_VALUE, DEFAULT_P), analysis.grid_m))})
p_value = p_col.slider(
    "Schatten index p (snapped to P_m)", 0.0, P_MAX, step=1.0 / analysis.grid_m, format="%.3f", key="theory_p"
)
p = float(snap_to_grid(p_value, analysis.grid_m))
values = live.readout(analysis, int(index), p)


def definition(latex: str, *metrics: tuple[str, str], note: str | None = None) -> None:
    """One definition: the formula across the page, its live values for the chosen matrix in a row beneath.

    Full width, so neither a long formula nor a long value is cut on a projector at 1024 px with the
    sidebar open; long formulas are written over several lines.
    """
    st.latex(latex)
    for column, (label, value) in zip(st.columns(METRICS_PER_ROW), metrics, strict=False):
        column.metric(label, value)
    if note:
        st.caption(note)


st.markdown(
    "**Singular values and numerical rank.** σ₁ ≥ σ₂ ≥ … of W, in float64; values at or below "
    "a relative threshold count as exact zeros."
)
definition(
    r"\operatorname{rank}(W) = \#\{\, i : \sigma_i > \tau\, k\, \max(\sigma_1, 1) \,\}",
    (live.RANK_LABEL, str(values.rank)),
    note=f"τ = {format_number(RANK_TOL, 1)} and k = min(rows, cols) of W (N for QK and V, whose rank is at most d).",
)
definition(
    r"\begin{gathered} S_p(W) = \sum_{i \le \operatorname{rank}(W)} \sigma_i^{\,p} \quad (p > 0) \\"
    r" S_0(W) = \operatorname{rank}(W) \end{gathered}",
    (live.SCHATTEN_LABEL, format_log(values.log_schatten)),
    note=f"At p = {format_p(p)}. p → 0 counts the rank, p = 1 is the nuclear norm, p = 2 the squared Frobenius norm.",
)

st.markdown("**How the layers above and around W scale its contribution.**")
definition(
    live.alpha_latex(shape),  # this family's layer factor (SPEC §11-§12): the paper's BERT for a BERT
    (live.ALPHA_LABEL, format_log(values.log_alpha)),
    note=f"L_φ = {analysis.l_phi:g} bounds the Lipschitz constant of this model's activation ({shape.activation}; "
    f"{L_PHI} for GELU); α = 1 for the top layer. Layer ℓ = {values.layer}.",
)
definition(
    live.gamma_latex(shape),  # every kind this family has, with its own local factor
    (live.GAMMA_LABEL, format_log(values.log_gamma)),
    (live.SCALE_LABEL, format_log(values.log_scale)),
)
if shape.gated:
    st.markdown(
        "**This model's MLP is gated**, x ↦ (φ(x M_gate) ⊙ x M_in) M_out. Its Jacobian is at most "
        "2 L_φ ‖M_gate‖₂ ‖M_in‖₂ on inputs of norm at most 1, so wherever the formulas above have ‖M_in‖₂ "
        "(in α and in γ of QK and V) read ν = 2 ‖M_gate‖₂ ‖M_in‖₂; the MLP's own matrices take "
        "γ(M_in) = 2 ‖M_out‖₂ ‖M_gate‖₂ and γ(M_gate) = 2 ‖M_out‖₂ ‖M_in‖₂."
    )
if shape.parallel:
    st.markdown(
        "**This model has a parallel residual**, x + Attn(x) + MLP(x): the branches add instead of composing, "
        "so a layer's factor in α is L_φ ν ‖M_out‖₂ + Σ_h ‖V_h‖₂ (1 + 4 ‖QK_h‖₂) instead of their product, and "
        "the attention kinds' local factors lose the MLP: γ(V_h) = 1, γ(QK_h) = 2 ‖V_h‖₂."
    )

if shape.moe:
    st.markdown(
        "**This model is a mixture of experts** (the router held fixed: its gate values are taken as given "
        "weights that add up to at most 1, though top-k routing is not continuous in its input). Wherever the "
        "formulas above have the MLP's factor ‖M_in‖₂ ‖M_out‖₂, read Φ, the largest routed expert's "
        "ν_e ‖M_out^e‖₂"
        + (" plus the shared expert's ν_s ‖M_out^s‖₂" if shape.shared_expert_size else "")
        + "; each expert's own matrices take the local factors of a gated MLP from that expert's norms."
    )
    st.latex(
        r"\Phi^{(\ell)} = \max_e \nu_e \|M_{\mathrm{out}}^{e}\|_2"
        + (r" + \nu_s \|M_{\mathrm{out}}^{s}\|_2" if shape.shared_expert_size else "")
        + r", \qquad \nu_e = 2\,\|M_{\mathrm{gate}}^{e}\|_2\, \|M_{\mathrm{in}}^{e}\|_2"
    )
    st.metric(live.MLP_FACTOR_LABEL, format_number(live.mlp_factor(profile, values.layer)))
if shape.encoder_decoder:
    st.markdown(
        "**This model is an encoder-decoder, read in series**: the encoder's layers, then the decoder's, each "
        "decoder layer three sub-blocks in turn (self-attention, cross-attention on the encoder's output, the "
        "MLP). A decoder layer's factor in α is A_self · A_x · L_φ Φ, and a matrix's local factor passes "
        "through the sub-blocks after it in its layer: for the decoder's self-attention γ(QK_h) = "
        "2 ‖V_h‖₂ A_x Φ and γ(V_h) = A_x Φ; for the cross-attention γ(QK_x,h) = 2 ‖V_x,h‖₂ Φ and "
        "γ(V_x,h) = Φ; the encoder's layers and the MLPs as above (Φ = ν ‖M_out‖₂ where the MLP is gated)."
    )
    st.latex(
        r"A_x^{(\ell)} = \sum_h \|V_{x,h}\|_2 \bigl(1 + 4\,\|QK_{x,h}\|_2\bigr), \qquad "
        r"\Phi^{(\ell)} = \|M_{\mathrm{in}}\|_2 \|M_{\mathrm{out}}\|_2"
    )
    cross = live.cross_factor(profile, values.layer)
    factors = st.columns(2)
    factors[0].metric(live.CROSS_FACTOR_LABEL, "— (an encoder layer)" if math.isnan(cross) else format_number(cross))
    factors[1].metric(live.MLP_FACTOR_LABEL, format_number(live.mlp_factor(profile, values.layer)))

st.markdown("**The contribution of one matrix, and its three landmark regimes.**")
definition(
    r"c(W; p) = S_p(W)^{\frac{1}{p+2}}\; s_W^{\frac{p}{p+2}}\; N^{\frac{p+1}{p+2}}",
    (live.CONTRIBUTION_LABEL, format_log(values.log_contribution)),
)
definition(
    r"\begin{aligned} c(W;0) &= \sqrt{\operatorname{rank}(W)\, N} \\ c(W;1) &= (\|W\|_*\, s_W)^{1/3} N^{2/3}"
    r" \\ c(W;2) &= \sqrt{\|W\|_F\, s_W}\; N^{3/4} \end{aligned}",
    *[(label, format_log(values.log_closed_form[q])) for q, label in live.CLOSED_FORM_LABELS.items()],
    note="Computed here from the rank and the norms directly, as a check on c(W; p) at p = 0, 1, 2.",
)

st.markdown("**Choosing p after training.** The guarantee covers a finite grid; each matrix takes its best point.")
definition(
    r"\begin{gathered} P_m = \{0, \tfrac1m, \tfrac2m, \dots, 2\} \\ m = \lceil L + \ln \max(N, 2) \rceil"
    r" \\ p^*_W = \operatorname*{arg\,min}_{p \in P_m} c(W; p) \end{gathered}",
    (live.GRID_LABEL, str(values.grid_m)),
    (live.P_OPT_LABEL, format_p(values.p_opt)),
    note=f"c(W; p*) = {format_log(values.log_contribution_opt)} (ties go to the smaller p).",
)

st.markdown("**The two proxies compared on the Scaling page.**")
definition(
    r"B_{\text{ours}} = \sum_{W} c(W; p^*_W) + \sqrt{L}",
    (live.OURS_LABEL, format_log(values.log_ours)),
    (live.OURS_AT_P_LABEL, format_log(values.log_ours_at_p)),
    note=f"The sum runs over all {shape.matrix_count_formula} = {shape.num_matrices} proxy matrices.",
)
definition(
    r"\begin{aligned} \xi^{(\ell)} = &\sum_h \bigl(\Phi^{(\ell)} \|V_h\|_2 \|QK_h\|_{2,1}\bigr)^{2/3} \\"
    r" &+ \sum_h \bigl(\Phi^{(\ell)} \|V_h\|_{2,1}\bigr)^{2/3} \\"
    r" &+ \bigl(\|M_{\mathrm{out}}\|_2 \|M_{\mathrm{in}}\|_{2,1}\bigr)^{2/3} \\ &+ \|M_{\mathrm{out}}\|_{2,1}^{2/3}"
    r" \end{aligned}",
    (live.XI_LABEL, format_log(values.log_xi)),
    note=None
    if shape.is_bert_like
    else "For this model ξ is written so that it extends: the sum over the layer's matrices W of "
    "(γᴱ_W ‖W‖₂,₁) to the power 2/3, with γᴱ = γ for every kind except QK, where γᴱ = γ / 2.",
)
definition(
    r"B_{\text{Edelman}} = \Bigl(1 + \sum_\ell \bigl(\alpha^{(\ell)}\bigr)^{2/3} \xi^{(\ell)}\Bigr)^{3/2}",
    (live.EDELMAN_LABEL, format_log(values.log_edelman)),
    note="The exponent 3/2 on a sum over L layers is where the $L^{3/2}$ depth dependence comes from.",
)
bound_note(shape)

st.divider()
st.subheader("Playground: a synthetic spectrum")
st.info(
    "**Synthetic, not from any model.** Choose how the singular values of an imaginary matrix decay and "
    "watch which p wins.",
    icon=":material/science:",
)
# controls in two rows of four columns and p* beside the grid's slider, so that on a 1024 x 768 screen the
# charts they move sit on the same screen as them
spectrum_col, rate_col, scale_col, grid_col = st.columns(4)
rank = spectrum_col.slider("Rank", 1, 512, 64, key="play_rank")
# opens on a power-law decay, where p* lies between the rank and the Frobenius ends and moves with each control
decay = Decay(
    spectrum_col.selectbox(
        "Decay law", list(Decay), index=list(Decay).index(Decay.POWER), format_func=lambda d: d.value, key="play_decay"
    )
)
rate = rate_col.slider(
    "Decay rate",
    0.0,
    3.0,
    1.0,
    step=0.05,
    key="play_rate",
    help="power law: σᵢ = σ₁ · i to the power −rate; exponential: σᵢ = σ₁ · e to the power −rate · (i − 1); "
    "step: σ₁ for the first quarter, σ₁ · 10 to the power −rate after; flat ignores it.",
)
top = rate_col.number_input("Top value σ₁", min_value=1e-3, max_value=1e3, value=1.0, key="play_top")
scale = scale_col.select_slider(
    "Scale s_W", PLAYGROUND_SCALES, value=1.0, key="play_scale", format_func=lambda s: format_power(math.log10(s), 1)
)
width = scale_col.number_input("Width N", min_value=2, max_value=8192, value=512, step=64, key="play_width")
grid_m = grid_col.slider(
    "Grid m of P_m",
    1,
    40,
    grid_resolution(shape.num_layers, int(width)),
    key="play_m",
    help=f"The grid's resolution m. Default ⌈L + ln N⌉ with the current model's depth L = {shape.num_layers} "
    "and this width.",
)
playground = playground_view(
    int(rank), decay, float(rate), float(top), scale=float(scale), width=int(width), grid_m=int(grid_m)
)
grid_col.metric(PLAYGROUND_P_LABEL, playground.p_opt)
show_panels(playground.panels, "playground")
st.caption(playground.sentence)
st.caption(
    "A sharply low-rank spectrum favours small p; a large scale s_W pushes p* down and a small one pushes it "
    "up, towards the Frobenius end."
)
