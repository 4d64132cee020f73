"""Why p* wins: break-even scales against their closed form, and against BoundAnalysis's own p*."""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np
import pytest
from hand_profiles import ONE_LAYER, flat_one_layer, profile_from_spectra

from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import BoundAnalysis, log_contribution_table, optimal_index, p_grid
from specbound.core.profile import MatrixId
from specbound.present.explain import (
    break_even,
    explain_p_star,
    log_break_even_table,
    p_star_by_kind,
    p_star_summary,
    rank_and_maximum,
    structural_rank,
)
from specbound.present.numbers import format_power
from specbound.studies.twin import random_twin


@pytest.mark.parametrize("sigma, rank, n", [(0.3, 4, 4), (2.0, 32, 384), (1e-3, 7, 64)])
def test_flat_spectrum_break_even_is_sqrt_rank_over_n_over_sigma(sigma: float, rank: int, n: int) -> None:
    sv, counted = np.full((1, rank), sigma), np.ones((1, rank), dtype=bool)
    grid = p_grid(10)
    table = log_break_even_table(sv, counted, grid[1:], n)
    # S_p = r sigma^p: b(p) = (1/2) ln(r / N) - ln sigma for every p > 0
    np.testing.assert_allclose(table, 0.5 * math.log(rank / n) - math.log(sigma), rtol=1e-12, atol=1e-12)
    # the real contribution formula flips at s*: p* = 0 just above it, p* = 2 just below
    log_star = table[0, 0]
    for shift, expected in ((+0.01, 0), (-0.01, len(grid) - 1)):
        log_c = log_contribution_table(sv, counted, np.array([log_star + shift]), grid, n)
        assert optimal_index(log_c)[0] == expected


# Flat spectra of rank 4 = N on one layer: s* = 1 / sigma; s_W = 2 v m_out m_in, m_out m_in, m_out, 1.


class FlatValues(TypedDict):
    """The four values of :func:`hand_profiles.flat_one_layer`'s matrices."""

    qk: float
    v: float
    m_in: float
    m_out: float


MIXED = FlatValues(qk=0.2, v=2.0, m_in=1.5, m_out=0.5)  # s_W sigma = 0.6, 1.5, 0.75, 0.5


def test_break_even_predicts_the_analysis_p_star_on_flat_spectra() -> None:
    analysis = BoundAnalysis.from_profile(flat_one_layer(**MIXED))
    even = break_even(analysis)
    sigma = np.array([MIXED[k] for k in ("qk", "v", "m_in", "m_out")])
    scale = np.array([2 * 2.0 * 0.5 * 1.5, 0.5 * 1.5, 0.5, 1.0])
    np.testing.assert_allclose(10**even.log10_scale, scale, rtol=1e-12)
    np.testing.assert_allclose(even.log10_break_even, -np.log10(sigma), rtol=1e-12, atol=1e-12)
    # below the break-even a flat spectrum's c(W; p) falls all the way to p = 2; above it p = 0 wins
    np.testing.assert_array_equal(analysis.p_opt, [2.0, 0.0, 2.0, 2.0])
    np.testing.assert_array_equal(even.p_zero_wins, [False, True, False, False])
    # b(p) is the same for every p, so the first grid point p > 0 already wins
    first = 1 / analysis.grid_m
    np.testing.assert_array_equal(even.first_winning_p, [first, np.nan, first, first])


@pytest.mark.parametrize("sigma", [0.05, 0.1, 0.12, 0.3])
def test_break_even_agrees_with_p_star_on_random_models(sigma: float) -> None:
    analysis = BoundAnalysis.from_profile(random_twin(ModelShape(2, 32, 4, 48), model="x", initializer_range=sigma))
    even = break_even(analysis)
    np.testing.assert_array_equal(analysis.p_opt > 0, even.log10_scale < even.log10_break_even)
    grid, log_c = analysis.grid, analysis.log_contribution_grid
    for i in np.flatnonzero(np.isfinite(even.first_winning_p)):
        k = int(np.flatnonzero(grid == even.first_winning_p[i])[0])
        assert log_c[i, k] < log_c[i, 0] and np.all(log_c[i, 1:k] >= log_c[i, 0])


def test_a_zero_matrix_has_no_break_even() -> None:
    analysis = BoundAnalysis.from_profile(profile_from_spectra(ONE_LAYER, [[1.0] * 4, [], [1.0] * 4, [1.0] * 4]))
    even = break_even(analysis)
    assert even.log10_break_even[1] == -np.inf and np.isnan(even.first_winning_p[1]) and even.p_zero_wins[1]
    assert "1 zero matrices contribute nothing" in explain_p_star(analysis)


def test_p_star_summary_counts_per_value_and_kind() -> None:
    analysis = BoundAnalysis.from_profile(flat_one_layer(**MIXED))
    summary = p_star_summary(analysis)
    assert summary.total == 4 and summary.used() == {0.0: 1, 2.0: 3}
    assert summary.used(Kind.V) == {0.0: 1} and summary.used(Kind.QK) == {2.0: 1}
    assert summary.headline() == "p* = 2 for 3 of 4 matrices"
    assert len(summary.counts) == len(analysis.grid) == 2 * analysis.grid_m + 1


def test_p_star_by_kind_uses_the_profile_layout() -> None:
    analysis = BoundAnalysis.from_profile(random_twin(ModelShape(2, 32, 4, 48), model="x", initializer_range=0.1))
    layout = p_star_by_kind(analysis)
    assert layout[Kind.QK].shape == (2, 4) and layout[Kind.M_OUT].shape == (2,)
    prof = analysis.profile
    assert layout[Kind.V][1, 3] == analysis.p_opt[prof.index(MatrixId(1, Kind.V, 3))]
    np.testing.assert_array_equal(prof.assemble(layout), analysis.p_opt)


def test_sentence_when_every_p_star_is_zero() -> None:
    analysis = BoundAnalysis.from_profile(random_twin(ModelShape(3, 32, 4, 48), model="x", initializer_range=0.3))
    even = break_even(analysis)
    sentence = explain_p_star(analysis)
    assert sentence.startswith("p* = 0 for all 30 matrices because their scales s_W are ")
    assert f"{format_power(even.log10_scale.min())} to {format_power(even.log10_scale.max())}" in sentence
    assert f"(at most {format_power(even.log10_break_even.max())})" in sentence
    assert f"depth factor α (up to {format_power(np.log10(np.exp(analysis.log_alpha)).max())})" in sentence
    assert "^" not in sentence and "e+" not in sentence


def test_sentence_when_every_p_star_is_two_and_when_mixed() -> None:
    # s_W = 2 (0.05)^3, 0.05^2, 0.05, 1 and s* = 1 / 0.05 = 20: the largest scale is 1.3 decades below
    low = BoundAnalysis.from_profile(flat_one_layer(0.05, 0.05, 0.05, 0.05))
    assert explain_p_star(low).startswith(
        "p* = 2 for all 4 nonzero matrices because their scales s_W (2.5 × 10⁻⁴ to "
        "1.0) lie far below their break-even scales (at least 20)"
    )
    mixed = explain_p_star(BoundAnalysis.from_profile(flat_one_layer(**MIXED)))
    assert mixed.startswith("p* = 0 for 1 of 4 matrices, whose scales s_W (0.75) lie above their break-even")
    assert "p* = 2 for the other 3 (1 QK, 1 M_in, 1 M_out)" in mixed


def test_rank_against_its_structural_maximum() -> None:
    shape = ModelShape(2, 32, 4, 24)
    prof = random_twin(shape, model="x")
    maximum = structural_rank(prof)
    assert list(prof.per_head(maximum, Kind.QK).ravel()) == [8] * 8
    assert list(prof.per_layer(maximum, Kind.M_IN)) == [24, 24]
    rank, top = rank_and_maximum(prof)
    np.testing.assert_array_equal(rank, top)  # a Gaussian matrix has full rank
