"""A model against a baseline, on flat one- and two-layer profiles whose terms are known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hand_profiles import flat_one_layer, profile_from_spectra

from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import BoundAnalysis, PAssignment
from specbound.core.profile import SpectralProfile
from specbound.core.proxies import Proxy
from specbound.studies.compare import compare

TWO_LAYERS = ModelShape(num_layers=2, hidden_size=4, num_heads=1, ffn_size=4)


def analysis_of(profile: SpectralProfile) -> BoundAnalysis:
    return BoundAnalysis.from_profile(profile)


def test_totals_and_kind_sums_at_p_zero_by_hand() -> None:
    # model: one layer of rank-4 matrices (c = sqrt(4 * 4) = 4 each); baseline: ranks 1, 2, 3, 4
    model = analysis_of(flat_one_layer(2.0, 2.0, 2.0, 2.0, model="A"))
    baseline = analysis_of(
        profile_from_spectra(flat_one_layer(1, 1, 1, 1).shape, [[3.0], [3.0] * 2, [3.0] * 3, [3.0] * 4], model="B")
    )
    result = compare(model, baseline, p=0.0)
    assert result.model.model == "A" and result.baseline.model == "B"
    assert result.model.plain_at == pytest.approx(4 * 4 + 1)
    base = 2 * (1 + math.sqrt(2) + math.sqrt(3) + 2) + 1  # sqrt(r * 4) summed, plus sqrt(L) = 1
    assert result.baseline.plain_at == pytest.approx(base)
    assert result.log10_ratio_at == pytest.approx(math.log10(17 / base))
    assert set(result.log10_ratio) == {Proxy.OURS, Proxy.EDELMAN}
    ours = (model.optimal.log_total - baseline.optimal.log_total) / math.log(10)
    assert result.log10_ratio[Proxy.OURS] == pytest.approx(ours)
    assert result.log10_ratio[Proxy.EDELMAN] == pytest.approx((model.log_edelman - baseline.log_edelman) / math.log(10))
    expected = {Kind.QK: 4 - 2, Kind.V: 4 - 2 * math.sqrt(2), Kind.M_IN: 4 - 2 * math.sqrt(3), Kind.M_OUT: 0.0}
    for kind, value in expected.items():
        assert result.kind_difference[kind] == pytest.approx(value, abs=1e-12)
    assert result.per_layer_difference is not None
    np.testing.assert_allclose(result.per_layer_difference, np.array([16 - (base - 1)]))
    assert result.change_against_baseline == pytest.approx(17 - base)


def test_change_against_p_star() -> None:
    # flat spectra: s_W = 2 v m_out m_in, m_out m_in, m_out, 1 with s* = 1 / sigma; here every p* = 0
    model = analysis_of(flat_one_layer(2.0, 2.0, 2.0, 2.0))
    assert set(model.p_opt) == {0.0}
    # at p = 2: c = sqrt(||W||_F s_W) N^(3/4) with ||W||_F = sqrt(4) * 2 = 4 and s_W = 16, 4, 2, 1
    at_two = sum(math.sqrt(4 * s) * 4**0.75 for s in (16, 4, 2, 1)) + 1
    result = compare(model, model, p=2.0)
    assert result.model.plain_at == pytest.approx(at_two)
    assert result.model.plain[Proxy.OURS] == pytest.approx(17)  # p* = 0 everywhere: 4 matrices of c = 4, plus 1
    assert result.change_against_p_opt == pytest.approx(at_two - 17)
    assert result.change_against_baseline == 0.0
    at_star = compare(model, model, p=2.0, baseline_p=PAssignment())  # the baseline at its own p*
    assert at_star.change_against_baseline == pytest.approx(at_two - 17)


def test_depths_that_differ_give_no_layer_difference() -> None:
    one = analysis_of(flat_one_layer(2.0, 2.0, 2.0, 2.0))
    two = analysis_of(profile_from_spectra(TWO_LAYERS, [[2.0] * 4] * 8))
    result = compare(one, two, p=0.0)
    assert not result.layers_match and result.per_layer_difference is None
    np.testing.assert_allclose(np.exp(result.log_layer_sums_baseline), [16.0, 16.0])
    assert result.kind_difference[Kind.V] == pytest.approx(4 - 8)
    with pytest.raises(ValueError, match="baseline its own"):
        compare(one, two, p=np.zeros(4))


def test_why_two_totals_agree_counts_ranks_at_p_star_zero() -> None:
    """Two full-rank models of one shape whose every p* is 0 have the same total, Σ √(rank · N) + √L,
    whatever their weights; at a fixed p and in the Edelman-style proxy, their sizes tell them apart."""
    from specbound.studies.compare import totals_agree

    shape = ModelShape(1, 4, 2, 8)
    rng = np.random.default_rng(0)
    spectra = [np.sort(rng.uniform(5.0, 9.0, 2))[::-1] for _ in range(4)] + [np.full(4, 50.0), np.full(4, 40.0)]
    big = BoundAnalysis.from_profile(profile_from_spectra(shape, spectra))
    small = BoundAnalysis.from_profile(profile_from_spectra(shape, [s / 2 for s in spectra]))
    assert (big.p_opt == 0).all() and (small.p_opt == 0).all()  # every scale above its break-even
    why = totals_agree(big, small, 1.0)
    assert why is not None and why.counts_ranks and why.matrices == 6 and why.rank_sum == 4 * 2 + 2 * 4
    expected = math.log(sum(math.sqrt(r * 4) for r in (2, 2, 2, 2, 4, 4)) + 1.0)  # Σ √(rank · N) + √L
    assert big.optimal.log_total == pytest.approx(expected, rel=1e-12)
    assert why.log_edelman[0] > why.log_edelman[1] and why.log_at_fixed_p[0] > why.log_at_fixed_p[1]
    other = BoundAnalysis.from_profile(profile_from_spectra(shape, [s[:1] for s in spectra[:4]] + spectra[4:]))
    assert totals_agree(big, other, 1.0) is None  # rank 1 heads: another total
