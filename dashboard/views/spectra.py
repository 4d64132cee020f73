"""The Spectra page's view: singular-value profiles and cumulative energy of the chosen layers and kinds,
per-head heatmaps of one head kind, and the table of every matrix's sizes, ranks and norms.

Example:

    >>> import specbound
    >>> from specbound.core.bounds import BoundAnalysis
    >>> analysis = BoundAnalysis.from_profile(specbound.analyze("minilm-l6").profile)
    >>> view = spectra_view(analysis, model="minilm", layers=[0, 5], kinds=["QK", "M_in"], heads=[],
    ...                     experts=None, normalise=False, head_kind=Kind.QK, source="minilm · spectra")
    >>> len(view.profiles), len(view.heatmaps)  # one panel per chosen kind; rank, stable rank, σ₁
    (2, 3)
    >>> [section.heading for section in view.report()]
    ['Singular values', 'QK heads', 'Every matrix']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from dashboard.views.common import ReportHeading, clickable_cells
from specbound.core.architecture import DECODER, ENCODER, Expert, Kind
from specbound.core.bounds import BoundAnalysis
from specbound.present.figures import spectra as figures
from specbound.present.figures.html_report import ReportSection
from specbound.present.figures.style import split_panels

#: The report's title and the page's.
TITLE = "Spectra"
#: What the page's figures and report say about p: the spectra do not depend on it.
P_TEXT = "independent of p"


@dataclass(frozen=True)
class SpectraView:
    """The spectra of the chosen matrices, one head kind's heatmaps and the matrix table."""

    heading: ReportHeading
    #: σ_i against i, one panel per kind; empty when no layer or no kind is chosen
    profiles: tuple[go.Figure, ...]
    #: the cumulative share of Σσ², one panel per kind; empty likewise
    energy: tuple[go.Figure, ...]
    head_kind: Kind
    #: numerical rank, stable rank and σ₁ per layer and head of ``head_kind`` (cells clickable): three
    #: panels, or an encoder-decoder's encoder map beside its decoder map
    heatmaps: tuple[go.Figure, ...]
    #: heatmap panels to a row (None: all in one row)
    heatmaps_per_row: int | None
    #: sizes, ranks and norms of every matrix (:meth:`specbound.core.profile.SpectralProfile.to_frame`)
    table: pd.DataFrame

    def report(self) -> Sequence[ReportSection]:
        """The page's sections in its order, with its figures and table."""
        return [
            ReportSection("Singular values", [*self.profiles, *self.energy]),
            ReportSection(f"{self.head_kind.value} heads", self.heatmaps),
            ReportSection("Every matrix", tables=[self.table]),
        ]


def _heatmaps(analysis: BoundAnalysis, head_kind: Kind, source: str) -> tuple[tuple[go.Figure, ...], int | None]:
    """The head heatmaps as panels: an encoder-decoder's encoder and decoder side by side (the
    cross-attention in the decoder only), any other model's three quantities split into panels."""
    profile = analysis.profile
    if profile.shape.encoder_decoder:
        stacks = [stack for stack in (ENCODER, DECODER) if figures.head_layers(profile, head_kind, stack)]
        return tuple(
            clickable_cells(figures.head_heatmaps(profile, head_kind, source=source, stack=s)) for s in stacks
        ), 2
    panels = split_panels(
        clickable_cells(figures.head_heatmaps(profile, head_kind, source=source)),
        titles=[f"{head_kind.value} heads: {quantity}" for quantity in figures.HEATMAP_QUANTITIES],
    )
    return tuple(panels), None


def spectra_view(
    analysis: BoundAnalysis,
    *,
    model: str,
    layers: Sequence[int],
    kinds: Sequence[str],
    heads: Sequence[int],
    experts: Sequence[Expert] | None,
    normalise: bool,
    head_kind: Kind,
    source: str,
) -> SpectraView:
    """The spectra of ``kinds`` in ``layers`` (the heads in ``heads`` one by one, none: their median and
    range; ``experts`` of a mixture of experts; divided by σ₁ with ``normalise``) and the heatmaps of
    ``head_kind``; every figure subtitled ``source``."""
    profile = analysis.profile
    profiles: tuple[go.Figure, ...] = ()
    energy: tuple[go.Figure, ...] = ()
    if layers and kinds:
        chosen_heads = list(heads) or None
        profiles = tuple(
            split_panels(
                figures.singular_value_profiles(
                    profile, layers, kinds, normalise=normalise, heads=chosen_heads, experts=experts, source=source
                )
            )
        )
        energy = tuple(
            split_panels(
                figures.cumulative_energy_curves(
                    profile, layers, kinds, heads=chosen_heads, experts=experts, source=source
                )
            )
        )
    heatmaps, per_row = _heatmaps(analysis, head_kind, source)
    return SpectraView(
        heading=ReportHeading(TITLE, model, P_TEXT, profile.shape, analysis.grid_m),
        profiles=profiles,
        energy=energy,
        head_kind=head_kind,
        heatmaps=heatmaps,
        heatmaps_per_row=per_row,
        table=profile.to_frame(),
    )
