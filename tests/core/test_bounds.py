"""Bound terms against the formulas of SPEC §3, written out again here as plain scalar loops."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, TypedDict

import numpy as np
import pytest
from hand_profiles import HAND_NORM21, HAND_SHAPE, HAND_SPECTRA, make_profile

from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import (
    BoundAnalysis,
    BoundSettings,
    PAssignment,
    grid_resolution,
    log_schatten,
    log_schatten_table,
    optimal_index,
    p_grid,
    snap_to_grid,
)
from specbound.core.defaults import L_PHI
from specbound.core.engine import compute_profile
from specbound.core.logspace import LOG_MAX
from specbound.core.matrices import LayerWeights
from specbound.core.profile import MatrixId, matrix_ids


@pytest.fixture
def hand() -> BoundAnalysis:
    return BoundAnalysis.from_profile(make_profile(HAND_SHAPE, HAND_SPECTRA, HAND_NORM21))


def c_closed(s_p: float, scale: float, p: float, n: int) -> float:
    return float(s_p ** (1 / (p + 2)) * scale ** (p / (p + 2)) * n ** ((p + 1) / (p + 2)))


def test_alpha_gamma_scale_by_hand(hand: BoundAnalysis) -> None:
    # f^(1) = L_phi ||M_in|| ||M_out|| sum_h ||V_h|| (1 + 4 ||QK_h||) = 1.13 * 2 * 5 * (2 * 7 + 1 * 3)
    np.testing.assert_allclose(np.exp(hand.log_alpha), [1.13 * 2 * 5 * 17, 1.0], rtol=1e-14)
    # gamma: QK 2 ||V_h|| ||M_out|| ||M_in||, V ||M_out|| ||M_in||, M_in ||M_out||, M_out 1
    np.testing.assert_allclose(hand.gamma, [24, 48, 12, 12, 3, 1, 40, 20, 10, 10, 5, 1], rtol=1e-14)
    alpha = np.repeat([192.1, 1.0], 6)
    np.testing.assert_allclose(np.exp(hand.log_scale), hand.gamma * alpha * 2, rtol=1e-13)


def test_grid_and_optimal_p_by_hand(hand: BoundAnalysis) -> None:
    assert hand.grid_m == 4 == math.ceil(2 + math.log(4))
    grid = np.arange(9) / 4
    np.testing.assert_allclose(hand.grid, grid)
    scales = np.exp(hand.log_scale)
    expected_total = math.sqrt(2)
    for i, spectrum in enumerate(HAND_SPECTRA):
        values = [c_closed(len(spectrum) if p == 0 else sum(x**p for x in spectrum), scales[i], p, 4) for p in grid]
        best = int(np.argmin(values))
        assert hand.p_opt[i] == grid[best], i
        expected_total += values[best]
    assert hand.evaluate().total == pytest.approx(expected_total, rel=1e-12)


def test_edelman_by_hand(hand: BoundAnalysis) -> None:
    sigma1 = [s[0] for s in HAND_SPECTRA]
    alpha = [192.1, 1.0]
    total = 1.0
    for layer in range(2):
        v = sigma1[6 * layer + 2 : 6 * layer + 4]  # xi uses ||QK||_{2,1}, not ||QK||_2
        m_in, m_out = sigma1[6 * layer + 4], sigma1[6 * layer + 5]
        n21 = HAND_NORM21[6 * layer : 6 * layer + 6]
        xi = sum((m_out * m_in * v[h] * n21[h]) ** (2 / 3) + (m_out * m_in * n21[2 + h]) ** (2 / 3) for h in range(2))
        xi += (m_out * n21[4]) ** (2 / 3) + n21[5] ** (2 / 3)
        assert math.exp(hand.log_xi[layer]) == pytest.approx(xi, rel=1e-13)
        total += alpha[layer] ** (2 / 3) * xi
    assert hand.edelman == pytest.approx(total**1.5, rel=1e-12)


def test_closed_forms_at_p_0_1_2(hand: BoundAnalysis) -> None:
    profile, n = hand.profile, 4
    scale = np.exp(hand.log_scale)
    np.testing.assert_allclose(hand.evaluate(0.0).contribution, np.sqrt(profile.rank * n), rtol=1e-14)
    np.testing.assert_allclose(
        hand.evaluate(1.0).contribution, np.cbrt(profile.nuclear_norm * scale) * n ** (2 / 3), rtol=1e-13
    )
    np.testing.assert_allclose(
        hand.evaluate(2.0).contribution, np.sqrt(profile.frobenius_norm * scale) * n**0.75, rtol=1e-13
    )


def test_schatten_at_p_0_is_the_rank_exactly() -> None:
    # a rank of 16 through exp(ln 16) is 15.999999999999998: S_0 is a count, and is given as one
    shape = ModelShape(num_layers=1, hidden_size=16, num_heads=1, ffn_size=16)
    analysis = BoundAnalysis.from_profile(make_profile(shape, [np.linspace(2.0, 1.0, 16).tolist()] * 4))
    schatten = analysis.evaluate(0.0).schatten
    assert schatten.tolist() == analysis.profile.rank.astype(float).tolist()
    at_one = analysis.evaluate(1.0).schatten
    assert np.all(schatten == 16.0) and np.all(at_one != np.rint(at_one))  # only p = 0 is a count


def test_schatten_ignores_values_below_the_rank_threshold_and_is_continuous_at_zero() -> None:
    sv = np.array([[2.0, 0.5, 1e-15, 1e-16]])  # the last two are rounding noise of a rank-2 matrix
    counted = sv > 1e-10 * 4 * 2.0
    assert np.exp(log_schatten(sv, counted, 0.0))[0] == 2.0
    for p in (1e-3, 1e-6, 1e-9):
        assert np.exp(log_schatten(sv, counted, p))[0] == pytest.approx(2.0, abs=2e-3 * p / 1e-3)
    # at p = 0.3 the noise alone would add 2 * (1e-15)^0.3-ish, about 6e-5: excluded exactly
    assert np.exp(log_schatten(sv, counted, 0.3))[0] == pytest.approx(2.0**0.3 + 0.5**0.3, rel=1e-15)


def test_schatten_sums_only_the_counted_values_of_each_row_at_its_own_p() -> None:
    """Parity with the dense masked sum, row by row, including a row with nothing counted."""
    rng = np.random.default_rng(7)
    sv = np.sort(rng.uniform(0.0, 30.0, size=(9, 16)), axis=1)[:, ::-1]
    counted = sv > rng.uniform(0.0, 30.0, size=(9, 1))  # a different rank per row
    counted[:, 0] = True  # rank at least 1 ...
    counted[4] = False  # ... except a zero matrix
    p = rng.uniform(0.0, 2.0, size=9)
    dense = np.array(
        [sum(v**q for v, c in zip(row, mask, strict=True) if c) for row, mask, q in zip(sv, counted, p, strict=True)]
    )
    got = log_schatten(sv, counted, p)
    assert got[4] == -np.inf
    keep = np.arange(9) != 4
    np.testing.assert_allclose(np.exp(got[keep]), dense[keep], rtol=1e-14)
    # the table is the same sum with one p for every row, column by column
    ps = np.array([0.0, 0.25, 1.0, 2.0])
    table = log_schatten_table(sv, counted, ps)
    for column, q in enumerate(ps):
        np.testing.assert_array_equal(table[:, column], log_schatten(sv, counted, q))
    np.testing.assert_array_equal(table[keep, 0], np.log(counted[keep].sum(axis=1)))  # S_0 is the rank


def test_zero_matrix_contributes_nothing() -> None:
    spectra = [s[:] for s in HAND_SPECTRA]
    spectra[1] = [0.0]  # QK of layer 0, head 1
    analysis = BoundAnalysis.from_profile(make_profile(HAND_SHAPE, spectra, HAND_NORM21))
    assert analysis.profile.rank[1] == 0
    for p in (None, 0.0, 0.5, 2.0):
        assert analysis.evaluate(p).contribution[1] == 0.0
    assert analysis.p_opt[1] == 0.0
    assert math.isfinite(analysis.evaluate().total)


def test_grid_resolution_and_snapping() -> None:
    assert grid_resolution(6, 384) == 12  # ceil(6 + 5.95)
    assert grid_resolution(12, 768) == 19  # ceil(12 + 6.64)
    assert grid_resolution(1, 1) == 2  # ln max(N, 2) = ln 2
    np.testing.assert_allclose(p_grid(3), [0, 1 / 3, 2 / 3, 1, 4 / 3, 5 / 3, 2])
    np.testing.assert_allclose(snap_to_grid(np.array([0.1, 0.2, 1.9, 2.5]), 3), np.array([0.0, 1 / 3, 2.0, 2.0]))
    with pytest.raises(ValueError):
        p_grid(0)


def test_ties_go_to_the_smaller_p() -> None:
    # S_p = r for all p (all sigma = 1) and s = sqrt(r / N) make c(W; p) = sqrt(r N) for every p.
    r, n = 4, 16
    grid = p_grid(4)
    log_c = np.array([(math.log(r) + p * math.log(math.sqrt(r / n)) + (p + 1) * math.log(n)) / (p + 2) for p in grid])
    assert np.ptp(log_c) < 1e-14
    assert optimal_index(log_c[None, :])[0] == 0
    assert optimal_index(np.array([[3.0, 1.0, 1.0, 2.0]]))[0] == 1


def test_transformer_lens_names_its_ov_circuit_our_v(hand: BoundAnalysis) -> None:
    assert Kind("OV") is Kind.V and Kind("ov") is Kind.V and Kind("OV_x") is Kind.V_X and Kind("qk") is Kind.QK
    with pytest.raises(ValueError):
        Kind("MLP")
    by_alias = hand.evaluate(PAssignment(by_kind={"OV": 0.5}))  # type: ignore[dict-item]
    np.testing.assert_array_equal(by_alias.p, hand.evaluate(PAssignment(by_kind={Kind.V: 0.5})).p)
    np.testing.assert_array_equal(hand.profile.mask("OV"), hand.profile.mask(Kind.V))  # type: ignore[arg-type]  # the alias a user may type


def test_p_assignment_precedence(hand: BoundAnalysis) -> None:
    assignment = PAssignment(
        default=2.0, by_kind={Kind.QK: 1.0}, by_layer={1: 0.5}, by_matrix={MatrixId(1, Kind.QK, 0): None}
    )
    p = assignment.resolve(hand.profile, hand.p_opt)
    expected = np.array([1.0, 1.0, 2.0, 2.0, 2.0, 2.0, hand.p_opt[6], 0.5, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(p, expected)
    terms = hand.evaluate(assignment)
    np.testing.assert_array_equal(terms.p, expected)
    with pytest.raises(ValueError):
        PAssignment(default=2.5).resolve(hand.profile, hand.p_opt)


#: Settings over the hand profile (layer 0: QK h0-h1, V h0-h1, M_in, M_out; then layer 1 the same):
#: a default, QK and V own p, layer 1 its p* and one matrix of layer 1 its own p.
SETTINGS = PAssignment(
    default=2.0,
    by_kind={Kind.QK: 1.0, Kind.V: 0.25},
    by_layer={1: None},
    by_matrix={MatrixId(1, Kind.M_IN, None): 0.5},
)


def _moved(assignment: PAssignment, setting: dict[str, Any], p: float) -> PAssignment:
    """``assignment`` with one setting (the default, a kind or a layer) set to p."""
    if "kind" in setting:
        return replace(assignment, by_kind={**assignment.by_kind, setting["kind"]: p})
    if "layer" in setting:
        return replace(assignment, by_layer={**assignment.by_layer, setting["layer"]: p})
    return replace(assignment, default=p)


@pytest.mark.parametrize(
    ("setting", "rows"),
    [({}, [4, 5]), ({"kind": Kind.QK}, [0, 1]), ({"kind": Kind.V}, [2, 3]), ({"layer": 1}, [6, 7, 8, 9, 11])],
)
def test_a_setting_decides_the_matrices_no_more_specific_one_covers(
    hand: BoundAnalysis, setting: dict[str, Any], rows: list[int]
) -> None:
    decided = SETTINGS.decided_by(hand.profile, **setting)
    np.testing.assert_array_equal(np.flatnonzero(decided), rows)
    # exactly these move when the setting does
    before = _moved(SETTINGS, setting, 0.0).resolve(hand.profile, hand.p_opt)
    after = _moved(SETTINGS, setting, 1.5).resolve(hand.profile, hand.p_opt)
    np.testing.assert_array_equal(before != after, decided)


def test_a_setting_names_a_kind_or_a_layer_not_both(hand: BoundAnalysis) -> None:
    with pytest.raises(ValueError, match="not both"):
        SETTINGS.decided_by(hand.profile, kind=Kind.QK, layer=0)


@pytest.mark.parametrize("setting", [{}, {"kind": Kind.QK}, {"kind": Kind.V}, {"layer": 1}, {"layer": 0}])
def test_a_sweep_gives_the_totals_of_evaluate_bit_for_bit(hand: BoundAnalysis, setting: dict[str, Any]) -> None:
    ps = np.array([0.0, 0.1, 0.5, 1.0, 4 / 3, 2.0])
    sweep = hand.sweep(hand.evaluate(SETTINGS), SETTINGS.decided_by(hand.profile, **setting), ps)
    np.testing.assert_array_equal(sweep.ps, ps)
    assert sweep.log_total.shape == ps.shape
    for j, p in enumerate(ps):
        terms = hand.evaluate(_moved(SETTINGS, setting, float(p)))
        assert sweep.log_total[j] == terms.log_total  # the same sum, not merely close


def test_a_sweep_holds_where_the_totals_overflow() -> None:
    shape = ModelShape(num_layers=60, hidden_size=4, num_heads=1, ffn_size=4)
    analysis = BoundAnalysis.from_profile(make_profile(shape, [[1e3, 1e3]] * shape.num_matrices))
    settings = PAssignment(default=1.0, by_layer={0: 0.0})
    ps = analysis.grid
    sweep = analysis.sweep(analysis.evaluate(settings), settings.decided_by(analysis.profile), ps)
    assert np.all(np.isfinite(sweep.log_total)) and sweep.log_total[-1] > LOG_MAX  # the total itself overflows
    for j in (0, len(ps) // 2, len(ps) - 1):
        assert sweep.log_total[j] == analysis.evaluate(replace(settings, default=float(ps[j]))).log_total


def test_sums_per_layer_and_kind(hand: BoundAnalysis) -> None:
    terms = hand.evaluate(1.0)
    c = terms.contribution
    np.testing.assert_allclose(terms.per_layer(2), [c[:6].sum(), c[6:].sum()])
    np.testing.assert_allclose(np.exp(terms.log_per_layer(2)), [c[:6].sum(), c[6:].sum()], rtol=1e-14)
    log_per_kind = terms.log_per_kind()
    assert list(log_per_kind) == [Kind.QK, Kind.V, Kind.M_IN, Kind.M_OUT]  # a BERT's kinds, no M_gate
    assert math.exp(log_per_kind[Kind.QK]) == pytest.approx(c[[0, 1, 6, 7]].sum(), rel=1e-14)
    assert math.exp(log_per_kind[Kind.M_OUT]) == pytest.approx(c[[5, 11]].sum(), rel=1e-14)
    assert terms.total == pytest.approx(c.sum() + math.sqrt(2), rel=1e-14)


def test_l_phi_and_grid_settings(hand: BoundAnalysis) -> None:
    other = BoundAnalysis.from_profile(hand.profile, BoundSettings(l_phi=2.0, grid_m=2))
    assert other.grid_m == 2 and other.grid.size == 5
    assert math.exp(other.log_alpha[0]) == pytest.approx(2.0 * 2 * 5 * 17)
    assert L_PHI == 1.13


def test_overflow_is_carried_in_logs() -> None:
    shape = ModelShape(num_layers=60, hidden_size=4, num_heads=1, ffn_size=4)
    spectra = [[1e3, 1e3]] * shape.num_matrices  # every f^(k) is about 1e12: alpha^(0) ~ 1e700
    analysis = BoundAnalysis.from_profile(make_profile(shape, spectra))
    assert analysis.log_alpha[0] / math.log(10) > 700
    assert analysis.edelman == math.inf and math.isfinite(analysis.log_edelman)
    terms = analysis.evaluate(2.0)
    assert np.isinf(terms.contribution[0]) and np.isfinite(terms.log_contribution[0])
    assert terms.total == math.inf and math.isfinite(terms.log_total)
    log_qk, qk_rows = terms.log_per_kind()[Kind.QK], terms.log_contribution[terms.kinds == Kind.QK.value]
    assert math.isfinite(log_qk) and log_qk == pytest.approx(np.logaddexp.reduce(qk_rows), rel=1e-12)
    assert math.isfinite(analysis.evaluate().total)  # p* = 0 stays finite: sqrt(rank N)


# --- the whole pipeline against a dense reference ---------------------------------------------------


class _DenseLayer(TypedDict):
    """One layer's proxy matrices formed densely: per head QK_h and V_h, then M_in and M_out."""

    QK: list[np.ndarray]
    V: list[np.ndarray]
    M_in: np.ndarray
    M_out: np.ndarray


#: (alpha_l per layer, gamma per matrix, scale per matrix, the dense matrices, Edelman's total)
DenseReference = tuple[list[float], list[float], list[float], list[np.ndarray], float]


def dense_reference(layers: list[LayerWeights], shape: ModelShape, l_phi: float = L_PHI) -> DenseReference:
    """Every proxy matrix formed densely from the HF weights, then the SPEC formulas as loops."""
    d = shape.head_dim
    mats: list[_DenseLayer] = []
    for w in layers:
        assert w.ffn_in is not None and w.ffn_out is not None  # a dense MLP
        qk = [w.query[h * d : (h + 1) * d].T @ w.key[h * d : (h + 1) * d] for h in range(shape.num_heads)]
        v = [w.value[h * d : (h + 1) * d].T @ w.attn_out.T[h * d : (h + 1) * d] for h in range(shape.num_heads)]
        mats.append(_DenseLayer(QK=qk, V=v, M_in=w.ffn_in.T, M_out=w.ffn_out.T))

    def spec(m: np.ndarray) -> float:
        return float(np.linalg.svd(m, compute_uv=False)[0])

    def n21(m: np.ndarray) -> float:
        return float(np.linalg.norm(m, axis=0).sum())

    factors = [
        l_phi
        * spec(m["M_in"])
        * spec(m["M_out"])
        * sum(spec(m["V"][h]) * (1 + 4 * spec(m["QK"][h])) for h in range(shape.num_heads))
        for m in mats
    ]
    alphas = [math.prod(factors[k] for k in range(layer + 1, len(mats))) for layer in range(len(mats))]
    gammas: list[float] = []
    matrices: list[np.ndarray] = []
    edelman = 1.0
    for layer, m in enumerate(mats):
        mlp = spec(m["M_out"]) * spec(m["M_in"])
        gammas += [2 * spec(m["V"][h]) * mlp for h in range(shape.num_heads)] + [mlp] * shape.num_heads
        gammas += [spec(m["M_out"]), 1.0]
        matrices += m["QK"] + m["V"] + [m["M_in"], m["M_out"]]
        xi = sum(
            (mlp * spec(m["V"][h]) * n21(m["QK"][h])) ** (2 / 3) + (mlp * n21(m["V"][h])) ** (2 / 3)
            for h in range(shape.num_heads)
        )
        xi += (spec(m["M_out"]) * n21(m["M_in"])) ** (2 / 3) + n21(m["M_out"]) ** (2 / 3)
        edelman += alphas[layer] ** (2 / 3) * xi
    layer_of = [i.layer for i in matrix_ids(shape)]
    scales = [g * alphas[layer_of[i]] * shape.num_layers for i, g in enumerate(gammas)]
    return alphas, gammas, scales, matrices, edelman**1.5


def test_pipeline_matches_dense_reference() -> None:
    shape = ModelShape(num_layers=2, hidden_size=12, num_heads=3, ffn_size=20)
    rng = np.random.default_rng(11)
    n, f = 12, 20
    layers = [
        LayerWeights(
            query=rng.standard_normal((n, n)) * 0.3,
            key=rng.standard_normal((n, n)) * 0.3,
            value=rng.standard_normal((n, n)) * 0.3,
            attn_out=rng.standard_normal((n, n)) * 0.3,
            ffn_in=rng.standard_normal((f, n)) * 0.3,
            ffn_out=rng.standard_normal((n, f)) * 0.3,
        )
        for _ in range(2)
    ]
    analysis = BoundAnalysis.from_profile(compute_profile(layers, shape))
    alphas, gammas, scales, matrices, edelman = dense_reference(layers, shape)
    np.testing.assert_allclose(np.exp(analysis.log_alpha), alphas, rtol=1e-12)
    np.testing.assert_allclose(analysis.gamma, gammas, rtol=1e-12)
    np.testing.assert_allclose(np.exp(analysis.log_scale), scales, rtol=1e-12)
    assert analysis.edelman == pytest.approx(edelman, rel=1e-12)
    for p in (0.0, 0.5, 1.0, 2.0):
        terms = analysis.evaluate(p)
        for i, matrix in enumerate(matrices):
            sv = np.linalg.svd(matrix, compute_uv=False)
            kept = sv[sv > 1e-10 * min(matrix.shape) * max(sv[0], 1.0)]
            s_p = kept.size if p == 0 else float((kept**p).sum())
            assert terms.contribution[i] == pytest.approx(c_closed(s_p, scales[i], p, n), rel=1e-11), (p, i)
    assert list(analysis.profile.rank[:6]) == [4] * 6  # d = 4 for QK and V
