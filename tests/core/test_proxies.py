"""One vocabulary for the proxies: every place that writes a proxy's name reads it from
:class:`specbound.core.proxies.Proxy`, and those names are the ones the package's files have always had
(a renamed column would orphan every table written before)."""

from __future__ import annotations

import pytest

from specbound.api.analysis import Analysis
from specbound.api.runs import step_row
from specbound.core.bounds import BoundAnalysis
from specbound.core.proxies import FIXED_P_PROXIES, PROXIES, Proxy
from specbound.present.figures import scaling as scaling_figures
from specbound.studies import scaling
from specbound_lab.registry import MEASURES


def test_each_proxy_has_the_names_its_files_have_always_had() -> None:
    names = {proxy: (proxy.key, proxy.column, proxy.label, proxy.described, proxy.study_label) for proxy in PROXIES}
    assert names == {
        Proxy.OURS: ("ours", "ours_log10", "ours at p*", "ours at p*", "ours (p*)"),
        Proxy.EDELMAN: ("edelman", "edelman_log10", "Edelman-style", "Edelman-style proxy", "Edelman et al."),
        Proxy.P0: ("ours_p0", "ours_p0_log10", "ours at p = 0", "ours at p = 0 (rank)", "p = 0 (rank)"),
        Proxy.P1: ("ours_p1", "ours_p1_log10", "ours at p = 1", "ours at p = 1 (nuclear norm)", "p = 1 (nuclear)"),
        Proxy.P2: ("ours_p2", "ours_p2_log10", "ours at p = 2", "ours at p = 2 (Frobenius)", "p = 2 (Frobenius)"),
    }
    assert [proxy.fixed_p for proxy in FIXED_P_PROXIES] == [0.0, 1.0, 2.0]
    assert Proxy.OURS.fixed_p is None and Proxy.EDELMAN.fixed_p is None


def test_the_study_the_trajectories_the_figures_and_the_lab_read_it(minilm: BoundAnalysis) -> None:
    assert vars(scaling)["Proxy"] is Proxy and vars(scaling)["PROXIES"] == PROXIES  # the names the study reads
    assert list(scaling_figures.PROXY_LABELS.values()) == [
        "ours (p*)",
        "Edelman et al.",
        "p = 0 (rank)",
        "p = 1 (nuclear)",
        "p = 2 (Frobenius)",
    ]
    row = step_row(0, Analysis(minilm))
    assert {proxy.column for proxy in PROXIES} <= set(row)
    for proxy in FIXED_P_PROXIES:  # the column holds that proxy's value, not a neighbour's
        assert row[proxy.column] == pytest.approx(minilm.evaluate(proxy.fixed_p).log_total / 2.302585092994046)
    for proxy in PROXIES:
        measure = MEASURES[proxy.key]
        assert (measure.column, measure.label, measure.screen_name) == (
            proxy.column,
            f"log10 {proxy.label}",
            proxy.described,
        )
    frame = scaling.summaries_frame([scaling.summarize(minilm)])
    assert {proxy.value for proxy in PROXIES} | {f"{proxy.value}_log10" for proxy in PROXIES} <= set(frame.columns)
