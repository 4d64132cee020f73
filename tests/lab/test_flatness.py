"""PAC-Bayes flatness and sharpness on a one-weight classifier whose answers are known in closed form."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from functools import partial
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from specbound.core import torch_threads
from specbound_lab.flatness import (
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


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """The searches on one thread, as in a run (two threads on a loaded machine wait on each other)."""
    with torch_threads(1):
        yield


IDS = torch.tensor([0, 1] * 20)
LABELS = IDS.clone()


def test_bisection_finds_a_threshold_within_its_resolution() -> None:
    for threshold in (0.003, 0.3, 1.5):
        found = bisect_scale(partial(operator.ge, threshold))  # s <= threshold
        assert threshold / RESOLUTION <= found <= threshold
    assert bisect_scale(lambda s: True) == pytest.approx(2.0 / RESOLUTION)  # fits everywhere: just below the top
    assert bisect_scale(lambda s: False) == 2.0**DEFAULT_FLATNESS.low  # fits nowhere: the bottom


def test_pacbayes_sigma_of_one_weight() -> None:
    # with w = 1 the noise is sqrt(sigma^2 + eps^2) z_d; a draw turns every example wrong when
    # 1 + sqrt(sigma^2 + eps^2) z_d < 0. With 10 draws, one crossing is a rise of 1/10 = delta (allowed) and
    # two are 0.2 > 0.1, so sigma' is the largest sigma with sqrt(sigma^2 + eps^2) < 1 / |z_(2)|, z_(2) the
    # second-smallest draw.
    seed = 11
    generator = torch.Generator().manual_seed(seed)
    z = sorted(
        float(torch.randn((1,), generator=generator, dtype=torch.float64)) for _ in range(DEFAULT_FLATNESS.draws)
    )
    assert z[1] < -0.6  # this seed puts the threshold inside the searched range
    expected = math.sqrt(1.0 / z[1] ** 2 - DEFAULT_FLATNESS.epsilon**2)
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


def test_the_budget_is_jiang_et_al_s() -> None:
    # SPEC §13b: at least 15 bisections and 10 noise draws, on the whole training set
    assert DEFAULT_FLATNESS.halvings >= 15 and DEFAULT_FLATNESS.draws >= 10
    assert DEFAULT_FLATNESS.examples is None


def test_early_stops_change_no_result_on_a_trained_classifier(monkeypatch: pytest.MonkeyPatch) -> None:
    from specbound_lab.train import RunSpec, TrainSettings, build_model, model_inputs

    spec = RunSpec(layers=1, hidden=8, heads=2, n_train=96, settings=TrainSettings(steps=1))
    train, _ = spec.task.datasets(spec.n_train, 1, 0)
    ids, labels = model_inputs(train, spec.task.vocab_size)
    torch.manual_seed(0)
    model = build_model(spec)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-2)
    for _ in range(40):  # a partly fitted model, so that probes pass and fail at different draws
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    from specbound_lab import flatness

    passes: list[int] = []
    error = flatness._error

    def counted(*args: Any) -> float:
        passes.append(1)
        return error(*args)

    monkeypatch.setattr(flatness, "_error", counted)
    quick = FlatnessSettings(halvings=6)
    full = FlatnessSettings(halvings=6, early_stop=False)
    sigma = pacbayes_sigma(model, ids, labels, seed=3, settings=quick)
    quick_passes = len(passes)
    assert sigma == pacbayes_sigma(model, ids, labels, seed=3, settings=full)
    assert quick_passes < len(passes) - quick_passes  # some probe did stop early
    assert sharpness_alpha(model, ids, labels, settings=quick) == sharpness_alpha(model, ids, labels, settings=full)


def _sharpness_afresh(model: Any, ids: torch.Tensor, labels: torch.Tensor, settings: FlatnessSettings) -> float:
    """The sharpness search with nothing hoisted: every bisection step runs its whole ascent from u = 0
    (the search as first written, the dense reference of :func:`sharpness_alpha`)."""
    from specbound_lab.flatness import _error, _restored

    model.eval()
    parameters = list(model.parameters())
    base = _error(model, ids, labels)
    with _restored(parameters) as weights:

        def fits(alpha: float) -> bool:
            boxes = [alpha * (w.abs() + settings.epsilon) for w in weights]
            shifts = [torch.zeros_like(w) for w in weights]
            worst = 0.0
            for _ in range(settings.ascent_steps):
                with torch.no_grad():
                    for p, w, u in zip(parameters, weights, shifts, strict=True):
                        p.copy_(w + u)
                model.zero_grad(set_to_none=True)
                logits = model(input_ids=ids).logits  # (n, 2)
                worst = max(worst, float((logits.argmax(dim=1) != labels).double().mean()) - base)
                torch.nn.functional.cross_entropy(logits, labels).backward()
                with torch.no_grad():
                    for p, u, box in zip(parameters, shifts, boxes, strict=True):
                        grad = p.grad if p.grad is not None else torch.zeros_like(u)
                        u.add_(2.0 * box / settings.ascent_steps * grad.sign())
                        torch.minimum(torch.maximum(u, -box), box, out=u)
            with torch.no_grad():
                for p, w, u in zip(parameters, weights, shifts, strict=True):
                    p.copy_(w + u)
            worst = max(worst, _error(model, ids, labels) - base)
            model.zero_grad(set_to_none=True)
            return worst <= settings.target

        return bisect_scale(fits, settings)


@pytest.mark.parametrize("family", ["bert", "gpt2", "llama", "neox"])
def test_the_hoisted_ascent_equals_the_search_computed_afresh(family: str) -> None:
    """The first iterate (u = 0) computed once per search gives the bisection of every step recomputing
    it, bit for bit, on a partly trained classifier of each family (its weights are restored too)."""
    from specbound_lab.train import Family, RunSpec, TrainSettings, build_model, model_inputs

    spec = RunSpec(layers=1, hidden=8, heads=2, n_train=96, family=Family(family), settings=TrainSettings(steps=1))
    train, _ = spec.task.datasets(spec.n_train, 1, 0)
    ids, labels = model_inputs(train, spec.task.vocab_size, family)
    torch.manual_seed(0)
    model = build_model(spec)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-2)
    for _ in range(30):  # a partly fitted model: some steps of the bisection pass, others fail
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    before = [p.detach().clone() for p in model.parameters()]
    settings = FlatnessSettings(halvings=6, early_stop=False)
    hoisted = sharpness_alpha(model, ids, labels, settings=settings)
    afresh = _sharpness_afresh(model, ids, labels, settings)
    assert all(torch.equal(p, w) for p, w in zip(model.parameters(), before, strict=True))
    assert hoisted == afresh
    low, high = 2.0**settings.low, 2.0**settings.high
    assert low < hoisted < high  # a search that moved: both ends are censored answers
