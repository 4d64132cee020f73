"""The Theory page's playground view: which end of the grid a synthetic spectrum's p* lands on, in words.

For a flat spectrum of rank r every S_p is r, so c(W; p) = r^(1/(p+2)) s^(p/(p+2)) N^((p+1)/(p+2)): a
large scale s makes every p > 0 dearer (p* = 0), a tiny one makes p = 2 the cheapest."""

from __future__ import annotations

import pytest

from dashboard.views.theory import playground_view
from specbound.core.synthetic import Decay


@pytest.mark.parametrize(
    ("rank", "decay", "scale", "p_opt", "regime"),
    [
        (64, Decay.FLAT, 1e6, "0.000", "the rank end (p = 0)"),
        (512, Decay.FLAT, 1e-6, "2.000", "the Frobenius end (p = 2)"),
        (64, Decay.POWER, 1.0, "1.125", "in between: neither rank nor Frobenius alone"),
    ],
)
def test_the_winner_is_said_in_words(rank: int, decay: Decay, scale: float, p_opt: str, regime: str) -> None:
    view = playground_view(rank, decay, 1.0, 1.0, scale=scale, width=512, grid_m=8)
    assert view.p_opt == p_opt
    assert view.sentence == f"Winner: {regime}. Numerical rank {rank}; N = 512 (at least the rank)."
    assert len(view.panels) == 2  # the spectrum, and c(W; p) over the grid


def test_the_width_is_at_least_the_rank() -> None:
    view = playground_view(600, Decay.EXPONENTIAL, 0.01, 1.0, scale=1.0, width=512, grid_m=8)
    assert view.sentence.endswith("Numerical rank 600; N = 600 (at least the rank).")
