"""The Theory page's playground: an imaginary matrix's spectrum, c(W; p) over the grid, and which p wins.

Example, a power-law spectrum of rank 64 at scale 1 in width 512:

    >>> from specbound.core.synthetic import Decay
    >>> view = playground_view(64, Decay.POWER, 1.0, 1.0, scale=1.0, width=512, grid_m=8)
    >>> view.p_opt
    '1.125'
    >>> view.sentence
    'Winner: in between: neither rank nor Frobenius alone. Numerical rank 64; N = 512 (at least the rank).'
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from dashboard.wording.numbers import format_p
from specbound.core.defaults import P_MAX
from specbound.core.synthetic import Decay, SyntheticCurve, contribution_curve, synthetic_spectrum
from specbound.present.figures.style import split_panels
from specbound.present.figures.theory import PLAYGROUND_TITLES, playground_figure


def regime(curve: SyntheticCurve) -> str:
    """Which end of the grid wins: the rank (p = 0), the Frobenius norm (p = 2), or neither."""
    if curve.p_opt == 0:
        return "the rank end (p = 0)"
    if curve.p_opt == P_MAX:
        return "the Frobenius end (p = 2)"
    return "in between: neither rank nor Frobenius alone"


@dataclass(frozen=True)
class PlaygroundView:
    """The synthetic matrix's p*, which regime it is in, and its spectrum and c(W; p) as panels."""

    p_opt: str
    sentence: str
    panels: tuple[go.Figure, ...]


def playground_view(
    rank: int, decay: Decay, rate: float, top: float, *, scale: float, width: int, grid_m: int
) -> PlaygroundView:
    """A spectrum of ``rank`` values from ``top`` decaying by ``decay`` at ``rate``
    (:func:`specbound.core.synthetic.synthetic_spectrum`), its c(W; p) at scale ``scale`` in width
    ``width`` (at least the rank) on the grid P_m of ``grid_m``."""
    spectrum = synthetic_spectrum(rank, decay, rate, top)
    n = max(width, rank)
    curve = contribution_curve(spectrum, hidden_size=n, scale=scale, grid_m=grid_m)
    return PlaygroundView(
        p_opt=format_p(curve.p_opt),
        sentence=f"Winner: {regime(curve)}. Numerical rank {curve.rank}; N = {n} (at least the rank).",
        panels=tuple(split_panels(playground_figure(spectrum, curve), titles=PLAYGROUND_TITLES)),
    )
