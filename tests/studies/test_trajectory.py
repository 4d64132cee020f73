"""The bound's terms at one step, :class:`specbound.studies.trajectory.StepTerms`: each number is the
analysis's own, the row is ``trajectory.csv``'s, centred terms are those of W − W⁰, and the lab's run
records hold the same terms as the library computes from their stored spectra."""

from __future__ import annotations

import numpy as np
import pytest

from specbound.api.analysis import analyze
from specbound.api.runs import step_row
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis
from specbound.core.proxies import PROXIES, Proxy
from specbound.studies.trajectory import StepTerms
from specbound_lab.reference import FIT_REFERENCE_DIR, load_reference, step_profile

LN10 = np.log(10.0)


def test_each_term_is_the_analysis_own(minilm: BoundAnalysis) -> None:
    terms = StepTerms.of(7, minilm)
    assert terms.proxies[Proxy.OURS] == pytest.approx(minilm.optimal.log_total / LN10, rel=1e-15)
    assert terms.proxies[Proxy.EDELMAN] == pytest.approx(minilm.log_edelman / LN10, rel=1e-15)
    for p, proxy in ((0.0, Proxy.P0), (1.0, Proxy.P1), (2.0, Proxy.P2)):  # not a neighbour's p
        assert terms.proxies[proxy] == pytest.approx(minilm.evaluate(p).log_total / LN10, rel=1e-15)
    np.testing.assert_array_equal(terms.p_opt, minilm.p_opt)
    np.testing.assert_allclose(terms.log10_alpha, minilm.log_alpha / LN10, rtol=1e-15)
    assert len(terms.log10_alpha) == 6 and len(terms.p_opt) == minilm.profile.shape.num_matrices
    assert terms.p_opt_mean == pytest.approx(float(np.mean(minilm.p_opt)))
    assert terms.p_opt_zero_share == pytest.approx(float(np.mean(minilm.p_opt == 0)))
    assert terms.centred is None


def test_the_row_is_trajectory_csvs(minilm: BoundAnalysis) -> None:
    row = StepTerms.of(7, minilm).row()
    assert list(row) == [  # the header of every trajectory.csv written so far
        "step",
        "ours_log10",
        "edelman_log10",
        "ours_p0_log10",
        "ours_p1_log10",
        "ours_p2_log10",
        "p_opt_mean",
        "p_opt_median",
        "p_opt_zero_share",
        *(f"log10_alpha_L{layer}" for layer in range(6)),
    ]
    assert row["step"] == 7


def test_centred_terms_are_those_of_the_difference() -> None:
    result = analyze("finetune-full", base="finetune-base")
    row = step_row(3, result)
    terms = StepTerms.of(3, result.bounds, result.centred)
    assert terms.centred is not None and row["ours_centred_log10"] == terms.centred.ours_log10
    assert terms.centred.ours_log10 == pytest.approx(result.ours_centred_log10)
    assert result.centred is not None
    delta = result.centred.schatten_profile
    assert terms.centred.distance_frobenius == pytest.approx(float(delta.frobenius_norm.sum()), rel=1e-15)
    assert sum(terms.centred.distance_by_kind.values()) == pytest.approx(terms.centred.distance_frobenius)
    assert set(terms.centred.distance_by_kind) <= set(Kind) and terms.centred.changed_matrices > 0


def test_a_lab_record_holds_the_terms_of_its_stored_spectra() -> None:
    run = load_reference(FIT_REFERENCE_DIR).runs[0]
    record = run.final
    computed = StepTerms.of(record.step, BoundAnalysis.from_profile(step_profile(FIT_REFERENCE_DIR, run, record.step)))
    held = record.terms
    assert held.step == computed.step and held.p_opt == pytest.approx(computed.p_opt, abs=1e-12)
    assert held.log10_alpha == pytest.approx(computed.log10_alpha, rel=1e-12)
    for proxy in PROXIES:
        assert held.proxies[proxy] == pytest.approx(computed.proxies[proxy], rel=1e-9), proxy
