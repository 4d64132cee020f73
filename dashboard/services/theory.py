"""The Theory page's live numbers: every quantity of SPEC §3 for one matrix of the current model.

:func:`readout` is plain array arithmetic over a cached :class:`~specbound.core.bounds.BoundAnalysis`
(no Streamlit, no file access), so the page and its tests read the same numbers. Values that can
overflow float64 are carried as natural logs, like everywhere else in specbound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specbound.core.architecture import SHARED_EXPERT, Expert, Kind, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.profile import MatrixId, SpectralProfile

#: Metric labels of the live values (tests look them up by these).
RANK_LABEL = "numerical rank"
SCHATTEN_LABEL = "S_p(W) at the chosen p"
ALPHA_LABEL = "α⁽ℓ⁾ (depth factor)"
GAMMA_LABEL = "γ (local factor)"
SCALE_LABEL = "s_W = γ α⁽ℓ⁾ L"
CONTRIBUTION_LABEL = "c(W; p) at the chosen p"
MLP_FACTOR_LABEL = "Φ⁽ℓ⁾ of this layer"
CROSS_FACTOR_LABEL = "A_x⁽ℓ⁾ of this layer"
CLOSED_FORM_LABELS = {0.0: "c(W; 0) closed form", 1.0: "c(W; 1) closed form", 2.0: "c(W; 2) closed form"}
GRID_LABEL = "m (grid P_m)"
P_OPT_LABEL = "p* of this matrix"
OURS_LABEL = "spectrum-adaptive proxy at p*"
OURS_AT_P_LABEL = "spectrum-adaptive proxy, every matrix at the chosen p"
XI_LABEL = "ξ⁽ℓ⁾ of this layer"
EDELMAN_LABEL = "Edelman-style proxy"


@dataclass(frozen=True)
class Readout:
    """Everything the Theory page shows for matrix ``index`` at the uniform index ``p`` (logs are natural)."""

    label: str
    layer: int
    p: float
    rank: int
    log_schatten: float
    log_alpha: float
    log_gamma: float
    log_scale: float
    log_contribution: float
    log_closed_form: dict[float, float]  # p = 0, 1, 2 from the closed forms (norms, not S_p)
    grid_m: int
    p_opt: float
    log_contribution_opt: float
    log_ours: float
    log_ours_at_p: float
    log_xi: float
    log_edelman: float


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def readout(analysis: BoundAnalysis, index: int, p: float) -> Readout:
    """The live values of one matrix: its terms at p, the closed forms at p = 0, 1, 2, p*, the totals."""
    profile = analysis.profile
    n = profile.shape.hidden_size
    layer = int(profile.layers[index])
    terms = analysis.evaluate(float(p))
    log_s = float(analysis.log_scale[index])
    rank = int(profile.rank[index])
    closed = {
        0.0: 0.5 * (_log(rank) + math.log(n)),
        1.0: (_log(float(profile.nuclear_norm[index])) + log_s) / 3.0 + 2.0 / 3.0 * math.log(n),
        2.0: 0.5 * (_log(float(profile.frobenius_norm[index])) + log_s) + 0.75 * math.log(n),
    }
    return Readout(
        label=profile.ids[index].label,
        layer=layer,
        p=float(p),
        rank=rank,
        log_schatten=float(terms.log_schatten[index]),
        log_alpha=float(analysis.log_alpha[layer]),
        log_gamma=float(analysis.log_gamma[index]),
        log_scale=log_s,
        log_contribution=float(terms.log_contribution[index]),
        log_closed_form=closed,
        grid_m=analysis.grid_m,
        p_opt=float(analysis.p_opt[index]),
        log_contribution_opt=float(analysis.log_contribution_opt[index]),
        log_ours=analysis.evaluate().log_total,
        log_ours_at_p=terms.log_total,
        log_xi=float(analysis.log_xi[layer]),
        log_edelman=float(analysis.log_edelman),
    )


def _norm(profile: SpectralProfile, layer: int, kind: Kind, head: int | None = None, expert: Expert = None) -> float:
    """‖W‖₂ of one matrix of the profile."""
    return float(profile.spectral_norm[profile.index(MatrixId(layer, kind, head, expert))])


def mlp_factor(profile: SpectralProfile, layer: int) -> float:
    """Φ⁽ℓ⁾, the layer's MLP factor without L_φ (SPEC §12): ‖M_in‖₂ ‖M_out‖₂ for a plain MLP, ν ‖M_out‖₂
    with ν = 2 ‖M_gate‖₂ ‖M_in‖₂ for a gated one, and for a mixture of experts the largest routed
    expert's ν_e ‖M_out^e‖₂ plus the shared expert's, the router's gate values held fixed."""
    shape = profile.shape

    def one(expert: Expert) -> float:
        inner = _norm(profile, layer, Kind.M_IN, expert=expert)
        if shape.gated:
            inner *= 2.0 * _norm(profile, layer, Kind.M_GATE, expert=expert)
        return inner * _norm(profile, layer, Kind.M_OUT, expert=expert)

    if not shape.moe:
        return one(None)
    routed = max(one(e) for e in shape.experts if e != SHARED_EXPERT)
    return routed + (one(SHARED_EXPERT) if SHARED_EXPERT in shape.experts else 0.0)


def cross_factor(profile: SpectralProfile, layer: int) -> float:
    """A_x⁽ℓ⁾ = Σ_h ‖V_x,h‖₂ (1 + 4 ‖QK_x,h‖₂), the cross-attention's factor of an encoder-decoder's
    decoder layer (SPEC §12); NaN for a layer without cross-attention."""
    if not profile.shape.has_cross(layer):
        return math.nan
    return sum(
        _norm(profile, layer, Kind.V_X, h) * (1.0 + 4.0 * _norm(profile, layer, Kind.QK_X, h))
        for h in range(profile.shape.num_heads)
    )


# --- the family's own formulas (SPEC §11-§12), as LaTeX ---------------------------------------------------

_NORM = r"\|{}\|_2"


def _n(matrix: str) -> str:
    return _NORM.format(matrix)


_M_IN, _M_OUT, _M_GATE = r"M_{\mathrm{in}}", r"M_{\mathrm{out}}", r"M_{\mathrm{gate}}"


def mlp_factor_latex(shape: ModelShape) -> str:
    """Φ⁽ℓ⁾, the MLP's factor without L_φ, as this family computes it: ‖M_in‖ ‖M_out‖ (plain), ν ‖M_out‖
    with ν = 2 ‖M_gate‖ ‖M_in‖ (gated), the largest expert's (plus the shared expert's) in a mixture."""
    if shape.moe:
        shared = r" + \nu_s \|M_{\mathrm{out}}^{s}\|_2" if shape.shared_expert_size else ""
        return (
            r"\Phi^{(\ell)} = \max_e \nu_e \|M_{\mathrm{out}}^{e}\|_2" + shared + r", \quad \nu_e = 2\,"
            r"\|M_{\mathrm{gate}}^{e}\|_2 \|M_{\mathrm{in}}^{e}\|_2"
        )
    if shape.gated:
        return rf"\Phi^{{(\ell)}} = \nu\, {_n(_M_OUT)}, \quad \nu = 2\, {_n(_M_GATE)} {_n(_M_IN)}"
    return rf"\Phi^{{(\ell)}} = {_n(_M_IN)}\, {_n(_M_OUT)}"


def alpha_latex(shape: ModelShape) -> str:
    """α⁽ℓ⁾ = ∏_{k > ℓ} f⁽ᵏ⁾ with this family's layer factor f: L_φ Φ A (sequential, times A_x in an
    encoder-decoder's decoder layers) or L_φ Φ + A (parallel residual); A the attention's factor."""
    attention = r"A^{(k)} = \sum_h \|V^{(k,h)}\|_2 \bigl(1 + 4\,\|QK^{(k,h)}\|_2\bigr)"
    if shape.parallel:
        factor = r"\bigl(L_\varphi\, \Phi^{(k)} + A^{(k)}\bigr)"
    elif shape.encoder_decoder:
        factor = r"L_\varphi\, \Phi^{(k)} A^{(k)} A_x^{(k)}"
    else:
        factor = r"L_\varphi\, \Phi^{(k)} A^{(k)}"
    cross = (
        r" \\ A_x^{(k)} &= \sum_h \|V_x^{(k,h)}\|_2 \bigl(1 + 4\,\|QK_x^{(k,h)}\|_2\bigr)"
        r" \text{ (decoder layers; 1 elsewhere)}"
        if shape.encoder_decoder
        else ""
    )
    return (
        rf"\begin{{aligned}} \alpha^{{(\ell)}} &= \prod_{{k > \ell}} {factor} \\ {attention.replace('=', '&=', 1)}"
        rf"{cross} \\ {mlp_factor_latex(shape).replace('=', '&=', 1)} \end{{aligned}}"
    )


def gamma_latex(shape: ModelShape) -> str:
    """γ of every kind this family has (SPEC §11-§12), one case per kind, and s_W = γ α⁽ℓ⁾ L."""
    after = r"A_x \Phi^{(\ell)}" if shape.encoder_decoder else r"\Phi^{(\ell)}"
    if shape.parallel:  # the branches add: the attention's kinds see no MLP after them
        cases = [(r"2\,\|V^{(\ell,h)}\|_2", "QK"), ("1", "V")]
    else:
        cases = [(rf"2\,\|V^{{(\ell,h)}}\|_2\, {after}", "QK"), (after, "V")]
    if shape.encoder_decoder:
        cases += [(r"2\,\|V_x^{(\ell,h)}\|_2\, \Phi^{(\ell)}", "QK_x"), (r"\Phi^{(\ell)}", "V_x")]
    expert = "^{e}" if shape.moe else ""
    if shape.gated:
        cases += [
            (
                rf"2\,\|M_{{\mathrm{{out}}}}{expert}\|_2 \|M_{{\mathrm{{in}}}}{expert}\|_2",
                rf"M_{{\mathrm{{gate}}}}{expert}",
            ),
            (
                rf"2\,\|M_{{\mathrm{{out}}}}{expert}\|_2 \|M_{{\mathrm{{gate}}}}{expert}\|_2",
                rf"M_{{\mathrm{{in}}}}{expert}",
            ),
        ]
    else:
        cases.append((_n(_M_OUT), _M_IN))
    cases.append(("1", rf"M_{{\mathrm{{out}}}}{expert}"))
    rows = r" \\ ".join(f"{value} & {_kind_tex(kind)}" for value, kind in cases)
    scale = r"s_W = \gamma\, \alpha^{(\ell)}\, L"
    return rf"\begin{{gathered}} \gamma = \begin{{cases}} {rows} \end{{cases}} \\ {scale} \end{{gathered}}"


def _kind_tex(kind: str) -> str:
    """A kind's name in a formula: upright letters (QK_x as QK_x), a matrix symbol as it is."""
    if "\\" in kind:
        return kind
    name, _, sub = kind.partition("_")
    return rf"\mathrm{{{name}}}" + (rf"_{{\mathrm{{{sub}}}}}" if sub else "")
