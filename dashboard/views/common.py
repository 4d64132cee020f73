"""What every page view shares: the heading of its HTML report, heatmaps whose cells can be clicked, and a
saved step's spectra with every head drawn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from specbound.core.architecture import Expert, ModelShape
    from specbound.core.profile import SpectralProfile
    from specbound.present.figures.html_report import ReportSection


@dataclass(frozen=True)
class ReportHeading:
    """What a report says above its sections: the page's title, the model, the p its numbers are at,
    and the model's shape and p grid for the model card (:func:`dashboard.widgets.export.model_card_section`)."""

    title: str
    model: str
    p_text: str
    shape: ModelShape
    grid_m: int


class PageView(Protocol):
    """A page's view as :func:`dashboard.widgets.export.report_download` reads it."""

    @property
    def heading(self) -> ReportHeading: ...

    def report(self) -> Sequence[ReportSection]:
        """The view's sections, in the page's order, with the very figures and tables the page shows."""
        ...


def clickable_cells(fig: go.Figure) -> go.Figure:
    """Make every heatmap cell clickable: an invisible marker on each cell, one trace per heatmap, in order.

    Plotly selects points of scatter traces only, so a click on a bare heatmap reaches no ``on_select``
    callback. The markers' trace numbers follow the heatmaps' (heatmap n gets trace H + n, where H is
    the number of heatmaps), with the cell's x and y. Returns ``fig``, changed in place.
    """
    import plotly.graph_objects as go

    heatmaps = [trace for trace in fig.data if trace.type == "heatmap"]
    for trace in heatmaps:
        z = np.asarray(trace.z)  # (rows, columns)
        xs = list(trace.x) if trace.x is not None else list(range(z.shape[1]))
        ys = list(trace.y) if trace.y is not None else list(range(z.shape[0]))
        fig.add_trace(
            go.Scatter(
                x=[x for _ in ys for x in xs],
                y=[y for y in ys for _ in xs],
                mode="markers",
                name=f"{trace.name} cells",
                marker={"size": 16, "opacity": 0},
                hoverinfo="none",
                showlegend=False,
                xaxis=trace.xaxis,
                yaxis=trace.yaxis,
            )
        )
    fig.update_layout(clickmode="event+select")
    return fig


def step_spectra(profile: SpectralProfile, experts: Sequence[Expert] | None = None) -> tuple[go.Figure, ...]:
    """A training step's singular-value profiles, every head drawn one by one, one panel per kind (the
    MLPs of ``experts`` in a mixture of experts): what the Lab and Training runs pages show at a step."""
    from specbound.present.figures.spectra import singular_value_profiles
    from specbound.present.figures.style import split_panels

    heads = range(profile.shape.num_heads)
    return tuple(split_panels(singular_value_profiles(profile, heads=heads, experts=experts)))
