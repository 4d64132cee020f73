"""The Scaling page's view of one growth study: its notes, each proxy's growth against width and against
depth (or why there is no curve along an axis), the fitted exponents and the models, for the proxies
shown.

Example, the lab's shipped encoders (the final checkpoints of its depth x width family):

    >>> from specbound.core.bounds import BoundAnalysis
    >>> from specbound.studies.scaling import Proxy, ScalingStudy, summarize
    >>> from specbound_lab import reference
    >>> from specbound_lab.reference import THRESHOLD_REFERENCE
    >>> runs = reference.family(reference.load_reference(THRESHOLD_REFERENCE.directory).runs)
    >>> profiles = [reference.step_profile(THRESHOLD_REFERENCE.directory, run, run.final.step) for run in runs]
    >>> study = ScalingStudy.from_summaries([summarize(BoundAnalysis.from_profile(p)) for p in profiles])
    >>> view = scaling_view(study, [Proxy.OURS, Proxy.EDELMAN])
    >>> [(growth.axis.value, len(growth.panels) > 0) for growth in view.growth]
    [('N', True), ('L', True)]
    >>> list(view.measured["agreement"])  # two depths and two widths: a slope, but no interval
    ['no interval', 'no interval', 'not predicted', 'not predicted']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from specbound.core.proxies import Proxy
from specbound.present.figures.scaling import growth_figure_depth, growth_figure_width, measured_sentence
from specbound.present.figures.style import split_panels
from specbound.studies.scaling import (
    COMPARED,
    PREDICTED_GROWTH,
    Axis,
    ScalingStudy,
    measured_growth,
    measured_growth_frame,
)

#: How each axis is drawn: the growth against width at fixed depth, then against depth at fixed width.
GROWTH_FIGURES = {Axis.WIDTH: growth_figure_width, Axis.DEPTH: growth_figure_depth}


@dataclass(frozen=True)
class Growth:
    """The proxies' growth along one axis: one figure per panel, or why there is no curve."""

    axis: Axis
    panels: tuple[go.Figure, ...]
    #: why there is no curve along this axis (None when there are panels)
    missing: str | None


@dataclass(frozen=True)
class ScalingView:
    """One growth study, for the proxies shown."""

    #: what the study had to leave out or assume, in words
    notes: tuple[str, ...]
    #: against width, then against depth
    growth: tuple[Growth, ...]
    #: the fitted exponents of the proxies shown (the study's ``exponents_frame``, those rows)
    exponents: pd.DataFrame
    #: one row per model: its (L, N) and every proxy
    models: pd.DataFrame
    #: ours and Edelman's measured exponent in L and in N beside the predicted one (the study's
    #: :func:`~specbound.studies.scaling.measured_growth`), and the same in sentences
    measured: pd.DataFrame
    measured_sentences: tuple[str, ...]


def _growth(study: ScalingStudy, axis: Axis, proxies: Sequence[Proxy]) -> Growth:
    curves = [c for c in study.curves(axis) if c.proxy in proxies]
    if not curves:
        fixed = "depth L" if axis is Axis.WIDTH else "width N"
        missing = (
            f"No curve against {axis.value}: it needs two models of the same {fixed} with different "
            f"{axis.value}, one of them at the reference {axis.value} = {study.reference(axis)}."
        )
        return Growth(axis, (), missing)
    exponents = [e for e in study.exponents if e.proxy in proxies]
    # the laws the theory predicts (against depth; none is stated against width), drawn dotted
    figure = GROWTH_FIGURES[axis](curves, exponents, predicted=PREDICTED_GROWTH)
    return Growth(axis, tuple(split_panels(figure)), None)


def scaling_view(study: ScalingStudy, proxies: Sequence[Proxy]) -> ScalingView:
    """``study`` for ``proxies`` (ours and Edelman's, and the fixed-p regimes when asked for)."""
    exponents = study.exponents_frame()
    measured = measured_growth(study, [p for p in COMPARED if p in proxies])
    return ScalingView(
        notes=tuple(study.notes),
        growth=tuple(_growth(study, axis, proxies) for axis in GROWTH_FIGURES),
        exponents=exponents[exponents["proxy"].isin([p.value for p in proxies])],
        models=study.models_frame(),
        measured=measured_growth_frame(measured),
        measured_sentences=tuple(measured_sentence(row) for row in measured),
    )
