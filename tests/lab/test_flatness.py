"""PAC-Bayes flatness and sharpness on a one-weight classifier whose answers are known in closed form."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from specbound.lab.flatness import (
    DEFAULT_FLATNESS,
    FlatnessSettings,
    bisect_scale,
    inverse_square,
    pacbayes_sigma,
    sharpness_alpha,
)

#: log2 width of the last bisection bracket: results lie within this factor below the threshold
RESOLUTION = 2.0 ** ((DEFAULT_FLATNESS.high - DEFAULT_FLATNESS.low) / 2**DEFAULT_FLATNESS.halvings)


class OneWeight(torch.nn.Module):
    """logits (0, w x) with x = +-1 from input ids 0 / 1: with w = 1 every example is right, and the whole
    set turns wrong at once when w crosses 0."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))

    def forward(self, input_ids: torch.Tensor) -> SimpleNamespace:
        x = 2.0 * input_ids.double() - 1.0  # (n,)
        return SimpleNamespace(logits=torch.stack([torch.zeros_like(x), self.w * x], dim=1))  # (n, 2)


IDS = torch.tensor([0, 1] * 20)
LABELS = IDS.clone()


def test_bisection_finds_a_threshold_within_its_resolution() -> None:
    for threshold in (0.003, 0.3, 1.5):
        found = bisect_scale(lambda s, t=threshold: s <= t)
        assert threshold / RESOLUTION <= found <= threshold
    assert bisect_scale(lambda s: True) == pytest.approx(2.0 / RESOLUTION)  # fits everywhere: just below the top
    assert bisect_scale(lambda s: False) == 2.0**DEFAULT_FLATNESS.low  # fits nowhere: the bottom


def test_pacbayes_sigma_of_one_weight() -> None:
    # with w = 1 the noise is sqrt(sigma^2 + eps^2) z_d; a draw turns every example wrong when
    # 1 + sqrt(sigma^2 + eps^2) z_d < 0. With 4 draws, one crossing is a rise of 1/4 > 0.1, so sigma' is the
    # largest sigma with sqrt(sigma^2 + eps^2) < 1 / |min z|.
    seed = 11
    generator = torch.Generator().manual_seed(seed)
    z = [float(torch.randn((1,), generator=generator, dtype=torch.float64)) for _ in range(DEFAULT_FLATNESS.draws)]
    assert min(z) < -0.6  # this seed puts the threshold inside the searched range
    expected = math.sqrt(1.0 / min(z) ** 2 - DEFAULT_FLATNESS.epsilon**2)
    model = OneWeight()
    sigma = pacbayes_sigma(model, IDS, LABELS, seed=seed)
    assert expected / RESOLUTION <= sigma <= expected
    assert float(model.w.detach()) == 1.0  # the weights are restored
    assert inverse_square(sigma) == pytest.approx(1.0 / sigma**2)


def test_sharpness_alpha_of_one_weight() -> None:
    # the ascent pushes w down to the edge of its box, 1 - alpha (1 + eps): every example turns wrong
    # beyond alpha = 1 / (1 + eps)
    model = OneWeight()
    alpha = sharpness_alpha(model, IDS, LABELS)
    expected = 1.0 / (1.0 + DEFAULT_FLATNESS.epsilon)
    assert expected / RESOLUTION <= alpha <= expected
    assert float(model.w.detach()) == 1.0 and model.w.grad is None
    # a looser target cannot make the minimum sharper: a rise of up to 1 is always allowed
    assert sharpness_alpha(model, IDS, LABELS, settings=FlatnessSettings(target=1.0)) >= alpha
