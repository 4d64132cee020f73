"""The Scaling page's view: each axis's growth panels or why there is none, and the exponents of the
proxies shown only, on the lab's shipped depth x width family of encoders."""

from __future__ import annotations

import pytest

from dashboard.views.scaling import scaling_view
from specbound.core.bounds import BoundAnalysis
from specbound.core.proxies import Proxy
from specbound.studies.scaling import Axis, ModelSummary, ScalingStudy, summarize
from specbound_lab import reference
from specbound_lab.reference import THRESHOLD_REFERENCE

SHOWN = [Proxy.OURS, Proxy.EDELMAN]


@pytest.fixture(scope="module")
def summaries() -> list[ModelSummary]:
    directory = THRESHOLD_REFERENCE.directory
    runs = reference.family(reference.load_reference(directory).runs)
    profiles = [reference.step_profile(directory, run, run.final.step) for run in runs]
    return [summarize(BoundAnalysis.from_profile(p)) for p in profiles]


def test_both_axes_grow_and_only_the_shown_proxies_are_fitted(summaries: list[ModelSummary]) -> None:
    study = ScalingStudy.from_summaries(summaries)
    view = scaling_view(study, SHOWN)
    assert [g.axis for g in view.growth] == [Axis.WIDTH, Axis.DEPTH]
    assert all(g.panels and g.missing is None for g in view.growth)
    assert set(view.exponents["proxy"]) == {p.value for p in SHOWN}
    every = scaling_view(study, [*SHOWN, Proxy.P0, Proxy.P1, Proxy.P2])
    assert set(every.exponents["proxy"]) == {p.value for p in (*SHOWN, Proxy.P0, Proxy.P1, Proxy.P2)}
    assert len(view.models) == len(summaries)


def test_an_axis_without_two_sizes_says_why_it_has_no_curve(summaries: list[ModelSummary]) -> None:
    depth_one = [s for s in summaries if s.num_layers == min(m.num_layers for m in summaries)]
    assert len({s.hidden_size for s in depth_one}) >= 2  # widths vary at this depth, depths do not
    view = scaling_view(ScalingStudy.from_summaries(depth_one), SHOWN)
    width, depth = view.growth
    assert width.panels and width.missing is None
    assert depth.panels == () and depth.missing is not None
    assert depth.missing.startswith("No curve against L: it needs two models of the same width N with different L")
