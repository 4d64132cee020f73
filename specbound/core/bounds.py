"""Bound terms of the spectrum-adaptive proxy (Sakai & Imaizumi 2026) and of the Edelman-style proxy.

Notation (all norms of the row-vector proxy matrices of :mod:`specbound.core.matrices`, of layer l unless
marked; the block's layout comes from its :class:`~specbound.core.architecture.ModelShape`, SPEC §11):

    S_p(W)      = sum of sigma_i^p over sigma_i above the rank threshold (p > 0); S_0 = rank
    nu          = ||M_in||_2 (plain MLP),  2 ||M_gate||_2 ||M_in||_2 (gated MLP): the MLP's input norm
    Phi^(k)     = nu ||M_out||_2, the MLP's factor without L_phi; in a mixture of experts (router
                  held fixed, SPEC §12) max_e nu_e ||M_out^e||_2 (+ nu_s ||M_out^s||_2, shared expert)
    A^(k)       = sum_h ||V^(k,h)||_2 (1 + 4 ||QK^(k,h)||_2)          (the attention branch)
    A_x^(k)     = sum_h ||V_x^(k,h)||_2 (1 + 4 ||QK_x^(k,h)||_2)      (a decoder layer's cross-attention in
                  an encoder-decoder, read in series: encoder layers first; 1 for every other layer)
    f^(k)       = L_phi Phi^(k) A^(k) A_x^(k)                         (sequential blocks)
                  L_phi Phi^(k) + A^(k)                               (parallel residual)
    alpha^(l)   = prod_{k > l} f^(k)                                  (1 for the top layer)
    gamma       = 2 ||V^(l,h)||_2 A_x Phi (QK),  A_x Phi (V)                    (sequential)
                  2 ||V_x^(l,h)||_2 Phi (QK_x),  Phi (V_x)                      (cross-attention)
                  2 ||V^(l,h)||_2 (QK),  1 (V)                                  (parallel residual)
                  ||M_out||_2 (M_in, plain), 2 ||M_out||_2 ||M_gate||_2 (M_in, gated),
                  2 ||M_out||_2 ||M_in||_2 (M_gate),  1 (M_out); an expert's from its own norms
    s_W         = max(gamma alpha^(l) L, smallest positive float)
    c(W; p)     = S_p(W)^(1/(p+2)) s_W^(p/(p+2)) N^((p+1)/(p+2))
    P_m         = {0, 1/m, ..., 2},  m = ceil(L + ln max(N, 2))
    ours        = sum_W c(W; p_W) + sqrt(L)
    xi^(l)      = sum_W (gamma^E_W ||W||_{2,1})^(2/3) over the layer's matrices, gamma^E = gamma / 2
                  for QK and QK_x and gamma for every other kind (for BERT: Edelman et al.'s sum exactly)
    edelman     = (1 + sum_l (alpha^(l))^(2/3) xi^(l))^(3/2)

Centred at a reference W⁰ (SPEC §14, :mod:`specbound.io.centred`), S_p, the rank and ||.||_{2,1} are those
of W - W⁰ (``BoundAnalysis.from_profile(..., delta=...)``) and every scale stays that of W:

    ours_centred = sum_W c_ref(W; p_W) + sqrt(L),  c_ref = S_p(W - W⁰)^(1/(p+2)) s_W^(p/(p+2)) N^((p+1)/(p+2))

alpha and the Edelman proxy overflow float64 for deep or large-norm models, so every product is
carried as a natural logarithm; plain values are exp() of those and may be inf.

References: Sakai & Imaizumi, "Spectrum-Adaptive Generalization Bounds for Trained Deep Transformers"
(arXiv 2605.07297); Edelman, Goel, Kakade & Zhang, "Inductive Biases and Variable Creation in
Self-Attention Mechanisms" (ICML 2022).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .architecture import Kind, ModelShape
from .defaults import P_MAX
from .limits import LIMITS
from .logspace import LOG_TINY, exp_array, exp_or_inf, logsumexp, safe_log
from .profile import MatrixId, SpectralProfile
from .values import is_genuine_int, is_real_number

# --- elementary formulas: arrays in, numbers out --------------------------------------------------


def grid_resolution(num_layers: int, hidden_size: int) -> int:
    """m = ceil(L + ln max(N, 2)), at least 1: the post-hoc grid has spacing 1/m."""
    return max(1, math.ceil(num_layers + math.log(max(hidden_size, 2))))


def p_grid(m: int) -> np.ndarray:
    """P_m = {0, 1/m, 2/m, ..., 2}: the 2m + 1 indices the theorem's guarantee covers."""
    if m < 1:
        raise ValueError(f"the grid resolution m must be at least 1, got {m}")
    return np.arange(int(P_MAX * m) + 1) / m


#: Points of the fine p axis on which c(W; p) curves are drawn (spacing P_MAX / (points - 1)).
FINE_P_POINTS: int = 201


def fine_p_axis(points: int = FINE_P_POINTS) -> np.ndarray:
    """An evenly spaced p axis over [0, P_MAX] for drawing c(W; p) between the grid points."""
    return np.linspace(0.0, P_MAX, points)


def snap_to_grid(p: np.ndarray | float, m: int) -> np.ndarray:
    """Nearest point of P_m for each p (halves round to the even multiple of 1/m)."""
    return np.clip(np.round(np.asarray(p, dtype=np.float64) * m) / m, 0.0, P_MAX)


def log_schatten(singular_values: np.ndarray, counted: np.ndarray, p: np.ndarray | float) -> np.ndarray:
    """ln S_p per matrix: S_p = sum sigma_i^p over the counted singular values; S_0 = their number.

    singular_values and counted (the mask sigma_i > threshold) are (M, K); p is a scalar or (M,).
    Values at or below the threshold contribute exactly zero for every p, so S_p -> S_0 as p -> 0+.
    A matrix with nothing counted (a zero matrix) gives ln 0 = -inf.
    """
    p = np.broadcast_to(np.asarray(p, dtype=np.float64), singular_values.shape[:1])
    return _log_schatten_counted(*_counted(singular_values, counted), p)


def log_schatten_table(singular_values: np.ndarray, counted: np.ndarray, ps: np.ndarray) -> np.ndarray:
    """ln S_p of every matrix (rows) at every p in ps (columns), the same p for all rows: (M, len(ps))."""
    values, rows = _counted(singular_values, counted)
    return np.stack([_log_schatten_counted(values, rows, np.full(len(counted), p)) for p in np.asarray(ps)], axis=1)


def _counted(singular_values: np.ndarray, counted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The counted singular values, flat in row order, and the row (matrix) each belongs to.

    Only these enter S_p, and they are few: a QK or V matrix of a head stores N values of which at
    most d are counted (32 of 384 in MiniLM), so powering the flat list instead of the (M, K) block
    does about a sixth of the work on a BERT.
    """
    return singular_values[counted], np.nonzero(counted)[0]


def _log_schatten_counted(values: np.ndarray, rows: np.ndarray, p: np.ndarray) -> np.ndarray:
    """ln S_p per matrix from the flat counted values; p is (M,)."""
    return safe_log(np.bincount(rows, weights=values ** p[rows], minlength=len(p)))


def log_contribution(log_s_p: np.ndarray, log_scale: np.ndarray, p: np.ndarray | float, hidden_size: int) -> np.ndarray:
    """ln c(W; p) = [ln S_p + p ln s_W + (p + 1) ln N] / (p + 2)."""
    p = np.asarray(p, dtype=np.float64)
    result: np.ndarray = (log_s_p + p * log_scale + (p + 1.0) * math.log(hidden_size)) / (p + 2.0)
    return result


#: Two contributions within this relative distance count as a tie, resolved to the smaller p: the
#: closed forms can tie exactly (e.g. S_p constant and s_W = sqrt(S_0 / N)) while rounding does not.
TIE_RTOL: float = 1e-12


def optimal_index(log_c_grid: np.ndarray) -> np.ndarray:
    """Index of the smallest c(W; p) along the last axis, ties (within TIE_RTOL) to the smaller p."""
    best = np.min(log_c_grid, axis=-1, keepdims=True)
    result: np.ndarray = np.argmax(log_c_grid <= best + TIE_RTOL, axis=-1)
    return result


def log_contribution_table(
    singular_values: np.ndarray, counted: np.ndarray, log_scale: np.ndarray, ps: np.ndarray, hidden_size: int
) -> np.ndarray:
    """ln c(W; p) of every matrix (rows) at every p in ps (columns): (M, len(ps))."""
    ps = np.asarray(ps, dtype=np.float64)
    log_s = log_schatten_table(singular_values, counted, ps)  # (M, len(ps))
    return log_contribution(log_s, np.reshape(log_scale, (-1, 1)), ps[None, :], hidden_size)


def log_mlp_input_norm(spec: Mapping[Kind, np.ndarray]) -> np.ndarray:
    """ln nu per layer: ||M_in||_2, or 2 ||M_gate||_2 ||M_in||_2 when the layers have an M_gate.

    For the gated MLP x -> phi(x M_gate) * (x M_in) the product rule with phi(0) = 0 bounds the
    Jacobian by 2 L_phi ||M_gate||_2 ||M_in||_2 on inputs of norm <= 1; L_phi stays outside, as in
    the plain formula. ``spec`` maps each MLP kind to its (L,) spectral norms.
    """
    if Kind.M_GATE in spec:
        return math.log(2.0) + safe_log(spec[Kind.M_GATE]) + safe_log(spec[Kind.M_IN])
    return safe_log(spec[Kind.M_IN])


def log_mlp_factor(spec: Mapping[Kind, np.ndarray], shape: ModelShape) -> np.ndarray:
    """ln Phi per layer, (L,): the MLP's factor without L_phi, nu ||M_out||_2.

    In a mixture of experts ``spec`` holds (L, U) norms, one column per expert of
    :attr:`ModelShape.experts`. With the router held fixed the layer's output is sum_e g_e MLP_e(x)
    (+ g_s MLP_s(x)) with given gate values, sum_e g_e <= 1 and g_s <= 1 (a sigmoid), so its Lipschitz
    factor is at most max_e nu_e ||M_out^e|| (+ nu_s ||M_out^s|| for the shared expert, SPEC §12).
    """
    log_each = log_mlp_input_norm(spec) + safe_log(spec[Kind.M_OUT])  # (L,) or (L, U)
    if not shape.moe:
        return log_each
    routed = log_each[:, : shape.num_experts].max(axis=1)  # (L,) the largest routed expert
    if shape.shared_expert_size:
        result: np.ndarray = np.logaddexp(routed, log_each[:, shape.num_experts])  # + the shared expert
        return result
    result = routed
    return result


def log_attention_factor(spec_v: np.ndarray, spec_qk: np.ndarray) -> np.ndarray:
    """ln A per layer, A = sum_h ||V_h|| (1 + 4 ||QK_h||), from (L, H) spectral norms."""
    return safe_log((spec_v * (1.0 + 4.0 * spec_qk)).sum(axis=1))


def log_cross_factor(spec: Mapping[Kind, np.ndarray], shape: ModelShape) -> np.ndarray:
    """ln A_x per layer, (L,): a decoder layer's cross-attention factor sum_h ||V_x,h|| (1 + 4 ||QK_x,h||)
    in an encoder-decoder (SPEC §12, in series); ln 1 = 0 for every layer without a cross-attention."""
    log_cross = np.zeros(shape.num_layers)
    if shape.encoder_decoder:
        log_cross[list(shape.layers_with(Kind.QK_X))] = log_attention_factor(spec[Kind.V_X], spec[Kind.QK_X])
    return log_cross


def log_layer_factors(
    log_phi: np.ndarray,
    spec_v: np.ndarray,
    spec_qk: np.ndarray,
    l_phi: float,
    *,
    parallel: bool = False,
    log_cross: np.ndarray | None = None,
) -> np.ndarray:
    """ln f^(k) per layer. log_phi: (L,) ln Phi (:func:`log_mlp_factor`); spec_v, spec_qk: (L, H) spectral
    norms; log_cross: (L,) ln A_x of an encoder-decoder's cross-attentions (:func:`log_cross_factor`).

    Sequential blocks compose, so f = L_phi Phi A (A_x: a decoder layer's three sub-blocks in turn); a
    parallel residual adds its two branches, f = L_phi Phi + A, with A = sum_h ||V_h|| (1 + 4 ||QK_h||).
    """
    log_attention = log_attention_factor(spec_v, spec_qk)  # (L,)
    log_mlp = math.log(l_phi) + log_phi  # (L,)
    if parallel:
        result: np.ndarray = np.logaddexp(log_mlp, log_attention)
        return result
    result = log_mlp + log_attention + (0.0 if log_cross is None else log_cross)
    return result


def log_alpha(log_factors: np.ndarray) -> np.ndarray:
    """ln alpha^(l) = sum over k > l of ln f^(k); the top layer gets ln 1 = 0."""
    above = np.cumsum(log_factors[::-1])[::-1]  # sum over k >= l
    return np.append(above[1:], 0.0)


@dataclass(frozen=True, eq=False)
class LocalFactors:
    """ln gamma of each kind (the bound's local factor) and ln gamma^E (the Edelman-style proxy's).

    Per head kind an (L_k, H) array (L_k: the layers with the kind), or (L_k, 1) when every head of a
    layer shares it; per MLP kind (L,), or (L, U), one column per expert, in a mixture of experts.
    """

    log_gamma: dict[Kind, np.ndarray]
    log_gamma_edelman: dict[Kind, np.ndarray]


def log_local_factors(spec: Mapping[Kind, np.ndarray], shape: ModelShape) -> LocalFactors:
    """gamma and gamma^E of every kind from the spectral norms ``spec`` (per kind, (L, H) or (L,)).

    Sequential blocks: QK 2 ||V_h|| Phi, V Phi (Phi = nu ||M_out||, the largest expert's plus the
    shared one's in a mixture of experts). A parallel residual's attention branch does not pass
    through the MLP: QK 2 ||V_h||, V 1. The MLP kinds, from the norms of their own MLP (expert):
    M_in ||M_out|| (plain) or 2 ||M_out|| ||M_gate|| (gated), M_gate 2 ||M_out|| ||M_in||, M_out 1.
    In a decoder layer of an encoder-decoder the self-attention's output passes the cross-attention
    before the MLP: QK 2 ||V_h|| A_x Phi, V A_x Phi; the cross-attention's QK_x 2 ||V_x,h|| Phi, V_x Phi.
    gamma^E halves QK's and QK_x's gamma.
    """
    L = shape.num_layers
    log_v = safe_log(spec[Kind.V])  # (L, H)
    log_out = safe_log(spec[Kind.M_OUT])  # (L,) or (L, U)
    if shape.parallel:
        v_part = np.zeros((L, 1))  # gamma(V_h) = 1
    else:
        v_part = log_mlp_factor(spec, shape)[:, None]  # (L, 1): ln Phi
    self_part = v_part + log_cross_factor(spec, shape)[:, None]  # (L, 1): ln A_x Phi (A_x = 1 outside a decoder)
    gamma_e = {Kind.QK: self_part + log_v, Kind.V: self_part}  # (L, H), (L, 1)
    gamma = {Kind.QK: math.log(2.0) + log_v + self_part, Kind.V: self_part}
    if shape.encoder_decoder:
        decoder = list(shape.layers_with(Kind.QK_X))
        log_vx, x_part = safe_log(spec[Kind.V_X]), v_part[decoder]  # (L_dec, H), (L_dec, 1): ln Phi
        gamma_e |= {Kind.QK_X: x_part + log_vx, Kind.V_X: x_part}
        gamma |= {Kind.QK_X: math.log(2.0) + log_vx + x_part, Kind.V_X: x_part}
    if shape.gated:
        gamma[Kind.M_GATE] = math.log(2.0) + log_out + safe_log(spec[Kind.M_IN])
        gamma[Kind.M_IN] = math.log(2.0) + log_out + safe_log(spec[Kind.M_GATE])
    else:
        gamma[Kind.M_IN] = log_out
    gamma[Kind.M_OUT] = np.zeros_like(log_out)
    for kind in shape.layer_kinds:
        gamma_e[kind] = gamma[kind]
    return LocalFactors(gamma, gamma_e)


def log_edelman(
    log_alpha_: np.ndarray, log_gamma_edelman: np.ndarray, norm_21: np.ndarray, shape: ModelShape
) -> tuple[np.ndarray, float]:
    """(ln xi^(l) per layer, ln of the Edelman-style proxy); log_gamma_edelman and norm_21 are (M,)."""
    terms = (2 / 3) * (log_gamma_edelman + safe_log(norm_21))  # (M,) ln (gamma^E ||W||_{2,1})^(2/3)
    starts = shape.layer_starts
    log_xi = np.array([logsumexp(terms[starts[k] : starts[k + 1]]) for k in range(shape.num_layers)])  # (L,)
    inner = logsumexp(np.append((2 / 3) * log_alpha_ + log_xi, 0.0))  # ln(1 + sum_l ...)
    return log_xi, 1.5 * float(inner)


# --- the user's choice of p ---------------------------------------------------------------------


def check_indices(p: np.ndarray) -> np.ndarray:
    """``p`` itself when every index lies in [0, P_MAX]; ValueError naming the first that does not
    (NaN included: a comparison with NaN is false, so the test is written as the range it accepts)."""
    bad = ~((p >= 0) & (p <= P_MAX))
    if np.any(bad):
        raise ValueError(f"Schatten indices must lie in [0, {P_MAX:g}], got {p.flat[int(np.argmax(bad))]:g}")
    return p


@dataclass(frozen=True)
class PAssignment:
    """Which Schatten index each matrix uses. None anywhere means the post-hoc optimum p*.

    The most specific setting wins: ``by_matrix`` over ``by_layer`` over ``by_kind`` over ``default``.

    Examples:
        >>> analysis = BoundAnalysis.from_profile(specbound.load_profile("minilm-l6"))
        >>> chosen = PAssignment(default=2.0, by_kind={Kind.QK: 0.0}, by_layer={5: 1.0})
        >>> p = analysis.evaluate(chosen).p
        >>> [float(p[analysis.profile.index(MatrixId(layer, kind, 0))]) for layer, kind in
        ...     [(0, Kind.V), (0, Kind.QK), (5, Kind.QK)]]  # default; kind over default; layer over kind
        [2.0, 0.0, 1.0]
        >>> analysis.evaluate(PAssignment()).total == analysis.optimal.total  # None everywhere: p*
        True
    """

    default: float | None = None
    by_kind: Mapping[Kind, float | None] = field(default_factory=dict)
    by_layer: Mapping[int, float | None] = field(default_factory=dict)
    by_matrix: Mapping[MatrixId, float | None] = field(default_factory=dict)

    def resolve(self, profile: SpectralProfile, p_opt: np.ndarray) -> np.ndarray:
        """The index of every matrix, (M,), in profile order."""
        p = np.array(p_opt if self.default is None else np.full(len(p_opt), self.default), dtype=float)

        def apply(mask: np.ndarray, value: float | None) -> None:
            p[mask] = p_opt[mask] if value is None else value

        for kind, value in self.by_kind.items():
            apply(profile.mask(Kind(kind)), value)
        for layer, value in self.by_layer.items():
            apply(profile.layers == layer, value)
        for matrix, value in self.by_matrix.items():
            apply(np.arange(len(p)) == profile.index(matrix), value)
        return check_indices(p)

    def decided_by(self, profile: SpectralProfile, *, kind: Kind | None = None, layer: int | None = None) -> np.ndarray:
        """(M,) mask of the matrices whose p one setting decides: the default (no argument), a kind or a layer.

        A setting decides the matrices it covers that no more specific setting covers; moving it moves
        exactly these, whatever value it takes.
        """
        if kind is not None and layer is not None:
            raise ValueError("name one setting: a kind or a layer, not both")
        rows = np.ones(len(profile.ids), dtype=bool)
        if kind is not None:
            rows &= profile.mask(Kind(kind))
        if layer is not None:
            rows &= profile.layers == layer
        if kind is None and layer is None:
            for covered_kind in self.by_kind:
                rows &= ~profile.mask(Kind(covered_kind))
        if layer is None:
            for covered_layer in self.by_layer:
                rows &= profile.layers != covered_layer
        for matrix in self.by_matrix:
            rows[profile.index(matrix)] = False
        return rows


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundSettings:
    """Constants of the proxy. l_phi=None takes the model's activation constant (1.13 for GELU, SPEC
    §11); grid_m=None takes m = ceil(L + ln max(N, 2)).

    Examples:
        >>> profile = specbound.load_profile("minilm-l6")
        >>> analysis = BoundAnalysis.from_profile(profile)
        >>> analysis.l_phi, analysis.grid_m  # GELU's constant; m = ceil(6 + ln 384) = 12
        (1.13, 12)
        >>> BoundAnalysis.from_profile(profile, BoundSettings(grid_m=4)).grid.tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]
    """

    l_phi: float | None = None
    grid_m: int | None = None

    def __post_init__(self) -> None:
        if self.l_phi is not None and not (
            is_real_number(self.l_phi, finite=True) and 0 < self.l_phi <= LIMITS.max_l_phi
        ):
            raise ValueError(f"L_phi must be a positive number of at most {LIMITS.max_l_phi:g}, got {self.l_phi}")
        if self.grid_m is not None and not (is_genuine_int(self.grid_m) and 1 <= self.grid_m <= LIMITS.max_grid_m):
            raise ValueError(
                f"the grid resolution m must be an integer from 1 to {LIMITS.max_grid_m}, got {self.grid_m}"
            )


@dataclass(frozen=True, eq=False)
class BoundTerms:
    """Every term of the spectrum-adaptive proxy for one assignment of p (natural logs, per matrix).

    The total is Σ_W c(W; p) + √L; ``log_total`` is its natural log, kept so that totals far beyond
    float64 still compare.

    Examples:
        >>> analysis = BoundAnalysis.from_profile(specbound.load_profile("minilm-l6"))
        >>> terms = analysis.evaluate(1.0)  # the nuclear norm for every matrix
        >>> f"{terms.total:.4e}", round(terms.sqrt_depth, 4)
        ('1.4986e+12', 2.4495)
        >>> bool(abs(terms.contribution.sum() + terms.sqrt_depth - terms.total) < 1e-3 * terms.total)
        True
        >>> {kind.value: round(value, 2) for kind, value in terms.log_per_kind().items()}
        {'QK': 27.6, 'V': 26.83, 'M_in': 24.77, 'M_out': 23.98}
    """

    p: np.ndarray  # (M,)
    log_schatten: np.ndarray  # (M,) ln S_p
    log_contribution: np.ndarray  # (M,) ln c(W; p)
    layers: np.ndarray  # (M,)
    kinds: np.ndarray  # (M,)
    sqrt_depth: float  # sqrt(L)

    @cached_property
    def contribution(self) -> np.ndarray:
        return exp_array(self.log_contribution)

    @cached_property
    def schatten(self) -> np.ndarray:
        """S_p per matrix; at p = 0 exactly the rank (S_0 counts the singular values above the threshold,
        an integer that exp(ln S_0) would miss by a rounding: 15.999999999999998 for 16)."""
        values = exp_array(self.log_schatten)
        return np.where(self.p == 0.0, np.rint(values), values)

    @cached_property
    def log_total(self) -> float:
        """ln(sum_W c(W; p) + sqrt(L))."""
        return float(logsumexp(np.append(self.log_contribution, math.log(self.sqrt_depth))))

    @property
    def total(self) -> float:
        return exp_or_inf(self.log_total)

    def per_layer(self, num_layers: int) -> np.ndarray:
        """Sum of c(W; p) over the matrices of each layer, (L,)."""
        return np.bincount(self.layers, weights=self.contribution, minlength=num_layers)

    def log_per_layer(self, num_layers: int) -> np.ndarray:
        """(L,) ln of the sum of c(W; p) over each layer's matrices (finite where the sums overflow)."""
        return np.array([logsumexp(self.log_contribution[self.layers == layer]) for layer in range(num_layers)])

    @property
    def model_kinds(self) -> tuple[Kind, ...]:
        """The kinds present, in profile order."""
        present = set(self.kinds.tolist())
        return tuple(kind for kind in Kind if kind.value in present)

    def log_per_kind(self) -> dict[Kind, float]:
        """ln of the sum of c(W; p) over each kind of the model (finite unless it has only zero matrices)."""
        return {kind: float(logsumexp(self.log_contribution[self.kinds == kind.value])) for kind in self.model_kinds}


@dataclass(frozen=True, eq=False)
class Sweep:
    """The total at each position of one setting of p (see :meth:`BoundAnalysis.sweep`)."""

    ps: np.ndarray  # (P,) the positions
    log_total: np.ndarray  # (P,) ln(sum_W c(W; p) + sqrt(L)) at each


@dataclass(frozen=True, eq=False)
class BoundAnalysis:
    """Everything about the bound that does not depend on p, precomputed once from a profile.

    Build with :meth:`from_profile`; then :meth:`evaluate` gives the terms for any assignment of p
    with array arithmetic over the cached singular values only (no SVD, no file access).

    Examples:
        >>> analysis = BoundAnalysis.from_profile(specbound.load_profile("minilm-l6"))
        >>> round(analysis.optimal.total, 2)  # ours, at every matrix's p*
        20573.03
        >>> float(analysis.p_opt.max())  # MiniLM's depth factor is so large that p* = 0 everywhere
        0.0
        >>> f"{analysis.edelman:.3e}"  # the norm-based baseline with the same α
        '6.854e+28'
        >>> analysis.evaluate(2.0).total > analysis.optimal.total  # p* is the minimum over the grid
        True
    """

    profile: SpectralProfile
    settings: BoundSettings
    l_phi: float  # the L_phi in force: the setting, else the model's activation constant
    grid_m: int
    log_alpha: np.ndarray  # (L,)
    log_gamma: np.ndarray  # (M,)
    log_scale: np.ndarray  # (M,)
    log_contribution_grid: np.ndarray  # (M, 2m + 1) ln c(W; p) on P_m
    p_opt_index: np.ndarray  # (M,) column of p* in the grid: argmin over P_m, ties to the smaller p
    log_xi: np.ndarray  # (L,)
    log_edelman: float
    #: the spectra whose S_p, rank and (2,1) norms enter c(W; p) and ξ: None for the profile's own, or
    #: those of the differences W - W⁰ from a reference (SPEC §14, :mod:`specbound.io.centred`)
    delta: SpectralProfile | None = None

    @classmethod
    def from_profile(
        cls,
        profile: SpectralProfile,
        settings: BoundSettings = BoundSettings(),
        *,
        delta: SpectralProfile | None = None,
    ) -> BoundAnalysis:
        """Every p-independent term from ``profile``; with ``delta`` (the profile of W - W⁰, the same
        shape) the proxy centred at the reference: S_p, the rank and ‖·‖₂,₁ of the difference, the
        scales s_W (γ, α) of the actual weights (SPEC §14)."""
        shape = profile.shape
        if delta is not None and (delta.shape != shape or delta.singular_values.shape != profile.singular_values.shape):
            raise ValueError("the difference's profile must have the model's shape")
        schatten = profile if delta is None else delta
        L, N = shape.num_layers, shape.hidden_size
        l_phi = shape.l_phi if settings.l_phi is None else float(settings.l_phi)
        spec = profile.by_kind(profile.spectral_norm)  # (L, H) per head kind, (L,) per MLP kind

        log_factors = log_layer_factors(
            log_mlp_factor(spec, shape),
            spec[Kind.V],
            spec[Kind.QK],
            l_phi,
            parallel=shape.parallel,
            log_cross=log_cross_factor(spec, shape),
        )
        log_alpha_ = log_alpha(log_factors)

        local = log_local_factors(spec, shape)
        log_gamma = profile.assemble(local.log_gamma)
        log_scale = np.maximum(log_gamma + log_alpha_[profile.layers] + math.log(L), LOG_TINY)

        m = settings.grid_m or grid_resolution(L, N)
        log_c_grid = log_contribution_table(
            schatten.singular_values, schatten.above_threshold, log_scale, p_grid(m), N
        )  # (M, 2m + 1)

        log_xi, log_edel = log_edelman(log_alpha_, profile.assemble(local.log_gamma_edelman), schatten.norm_21, shape)
        return cls(
            profile,
            settings,
            l_phi,
            m,
            log_alpha_,
            log_gamma,
            log_scale,
            log_c_grid,
            optimal_index(log_c_grid),
            log_xi,
            log_edel,
            delta,
        )

    @property
    def schatten_profile(self) -> SpectralProfile:
        """The spectra behind S_p: the profile's own, or the difference's when centred."""
        return self.profile if self.delta is None else self.delta

    @property
    def grid(self) -> np.ndarray:
        """P_m = {0, 1/m, ..., 2}."""
        return p_grid(self.grid_m)

    @cached_property
    def p_opt(self) -> np.ndarray:
        """(M,) the post-hoc optimum p*_W of every matrix (the grid point at ``p_opt_index``)."""
        result: np.ndarray = self.grid[self.p_opt_index]
        return result

    @cached_property
    def log_contribution_opt(self) -> np.ndarray:
        """(M,) ln c(W; p*_W), read off the grid table."""
        return np.take_along_axis(self.log_contribution_grid, self.p_opt_index[:, None], axis=1)[:, 0]

    @cached_property
    def gamma(self) -> np.ndarray:
        return exp_array(self.log_gamma)

    @property
    def edelman(self) -> float:
        return exp_or_inf(self.log_edelman)

    @cached_property
    def optimal(self) -> BoundTerms:
        """The terms at p*, the spectrum-adaptive proxy itself (computed once: it does not depend on p)."""
        return self._terms(self.p_opt)

    def evaluate(self, p: PAssignment | np.ndarray | float | None = None) -> BoundTerms:
        """Terms for an assignment of p: a PAssignment, a per-matrix array, one float, or None for p*."""
        if p is None:
            return self.optimal
        if isinstance(p, PAssignment):
            p = p.resolve(self.profile, self.p_opt)
        return self._terms(p)

    def _terms(self, p: np.ndarray | float) -> BoundTerms:
        p = check_indices(np.broadcast_to(np.asarray(p, dtype=np.float64), self.p_opt.shape))
        prof = self.schatten_profile
        log_s = log_schatten(prof.singular_values, prof.above_threshold, p)
        return BoundTerms(
            p=p.copy(),
            log_schatten=log_s,
            log_contribution=log_contribution(log_s, self.log_scale, p, prof.shape.hidden_size),
            layers=prof.layers,
            kinds=prof.kinds,
            sqrt_depth=math.sqrt(prof.shape.num_layers),
        )

    def sweep(self, terms: BoundTerms, rows: np.ndarray, ps: np.ndarray) -> Sweep:
        """The total with the matrices in ``rows`` set to each p in ``ps``, the rest as in ``terms``.

        What a slider shows at each of its positions: ``terms`` are the terms now (from :meth:`evaluate`),
        ``rows`` the matrices the slider decides (see :meth:`PAssignment.decided_by`). One table of
        c(W; p) over ``ps`` serves every position. Each position's c(W; p) and total are bit for bit
        those of :meth:`evaluate` with that setting (the same arithmetic per matrix, the same sum).
        """
        ps = np.asarray(ps, dtype=np.float64)
        moved = self.contribution_curves(ps, np.flatnonzero(rows))  # (R, P)
        log_c = np.repeat(terms.log_contribution[None, :], len(ps), axis=0)  # (P, M): one row per position
        log_c[:, rows] = moved.T
        log_sqrt_depth = math.log(terms.sqrt_depth)
        return Sweep(ps=ps, log_total=np.array([logsumexp(np.append(position, log_sqrt_depth)) for position in log_c]))

    def contribution_curves(self, ps: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """ln c(W; p) for the selected matrices (rows) at every p in ps: (rows, len(ps))."""
        prof = self.schatten_profile
        return log_contribution_table(
            prof.singular_values[rows], prof.above_threshold[rows], self.log_scale[rows], ps, prof.shape.hidden_size
        )
