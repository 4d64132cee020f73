"""Flatness of a trained model around its weights: Jiang et al.'s magnitude-aware PAC-Bayes flatness and
worst-case sharpness, from forward passes over the training set.

Jiang, Neyshabur, Mobahi, Krishnan & Bengio (2020, "Fantastic Generalization Measures and Where to Find
Them", section 7 and appendix C; measures ``pacbayes.mag.flatness`` and ``sharpness.mag.flatness``),
with L̂(w) the training error (the 0–1 loss on the whole training set) and a target rise δ = 0.1:

* PAC-Bayes flatness. σ′ is the largest σ such that multiplicative Gaussian noise on every weight,
  u_i ~ N(0, σ² w_i² + ε²), raises the expected training error by at most δ:
  E_u[L̂(w + u)] − L̂(w) ≤ δ. The expectation is a mean over ``draws`` fixed standard-normal draws z
  (u = sqrt(σ² w² + ε²) · z, the same z for every σ, so the search is over one deterministic function
  of σ). The measure is 1 / σ′².
* Sharpness. α′ is the largest α such that no perturbation in the relative box
  |u_i| ≤ α (|w_i| + ε) found by ``ascent_steps`` steps of projected sign-gradient ascent on the
  training cross-entropy (from u = 0, step 2α(|w| + ε) / steps, clipped to the box) raises the
  training error by more than δ (the largest error over the iterates counts). The measure is 1 / α′².

Both σ′ and α′ are found by bisection on log2 of the scale in [2^low, 2^high] = [2^-10, 2] for a fixed
number of halvings; a model that stays within δ at the top of the range gets the top (its measure is
the smallest the search can tell), one that leaves it at the bottom gets the bottom: such a run is
*censored* (:func:`censoring_values`). The budget is Jiang et al.'s, as SPEC §13b asks: 15 halvings,
10 noise draws, the training error on the whole training set. A larger measure means a sharper
minimum, which Jiang et al. found to go with a larger gap. ε = 10⁻³ as in Jiang et al.

Both searches stop a probe as soon as its answer is known, which changes no result: a PAC-Bayes
probe stops drawing once the rises so far already exceed δ · draws (the mean cannot come back under δ,
each rise being at least −L̂(w)), or once the rises so far plus the most the remaining draws can add
(1 − L̂(w) each) stay within it; a sharpness probe stops its ascent at the first iterate that raises
the error by more than δ (the worst iterate counts). ``early_stop=False`` runs every draw and step,
for a benchmark or a check of that claim.

Nothing is computed twice: the sharpness ascent starts from u = 0 for every α, so its first iterate's
error and gradient signs are computed once per search (not once per bisection step: a third of the
ascent's gradient passes), and |w| + ε and w² are computed once; every error is measured under
``torch.inference_mode``, through a compiled graph when the model is one
(:mod:`~specbound_lab.compiled`). The results are those of computing everything afresh, bit for bit.
A run's searches are given its summary forward (:func:`~specbound_lab.compiled.summary_route`: the last
layer computed at the position the classifier reads alone), the same logits up to float reordering.
The noise draws of one σ are evaluated one after another: batched through ``torch.func.vmap`` (each
draw's weights stacked) they measured 0.7x as fast on one core (BERT L = 2, N = 64, 300 examples).

torch is imported inside the functions; the model's weights are restored after every probe.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_CHUNK = 4096  # examples per forward pass
_MARGIN = 1e-9  # an early stop decides only answers this far from δ (rounding cannot flip them)


@dataclass(frozen=True)
class FlatnessSettings:
    """The searches' constants (defaults: Jiang et al.'s δ, ε and budget, SPEC §13b)."""

    target: float = 0.1  # δ: the allowed rise of the training error
    epsilon: float = 1e-3  # ε: the additive part of the noise scale
    draws: int = 10  # noise draws per σ (PAC-Bayes)
    ascent_steps: int = 3  # gradient-ascent steps per α (sharpness)
    halvings: int = 15  # bisection steps on log2 of the scale: a resolution of 11 / 2^15 octave
    low: float = -10.0  # log2 of the smallest scale searched
    high: float = 1.0  # log2 of the largest scale searched
    #: the first this many training examples (an i.i.d. sample, so a random subset); None: all of them
    examples: int | None = None
    #: stop a probe once its answer is known (the module docstring; no result changes)
    early_stop: bool = True


DEFAULT_FLATNESS = FlatnessSettings()


def bisect_scale(fits: Callable[[float], bool], settings: FlatnessSettings = DEFAULT_FLATNESS) -> float:
    """The largest scale 2^t with ``fits(2^t)`` True, t in [low, high), by ``halvings`` bisection steps
    on t (``fits`` is assumed to hold below some threshold and fail above it). The ends are not tried:
    a model that fits everywhere gets 2^(high - 2^-halvings (high - low)), one that fits nowhere 2^low."""
    low, high = settings.low, settings.high
    for _ in range(settings.halvings):
        middle = 0.5 * (low + high)
        if fits(2.0**middle):
            low = middle
        else:
            high = middle
    result: float = 2.0**low
    return result


def _error(model: Any, ids: torch.Tensor, labels: torch.Tensor) -> float:
    """The error rate of the model on a labelled set, under ``torch.inference_mode`` (no autograd state;
    a :mod:`~specbound_lab.compiled` evaluation graph runs compiled there)."""
    import torch

    wrong = 0
    with torch.inference_mode():
        for start in range(0, ids.shape[0], _CHUNK):
            logits = model(input_ids=ids[start : start + _CHUNK]).logits  # (chunk, 2)
            wrong += int((logits.argmax(dim=1) != labels[start : start + _CHUNK]).sum())
    return wrong / ids.shape[0]


@contextmanager
def _restored(parameters: list[torch.Tensor]) -> Iterator[list[torch.Tensor]]:
    """The parameters' current values (copies); the parameters are set back to them on exit."""
    import torch

    saved = [p.detach().clone() for p in parameters]
    try:
        yield saved
    finally:
        with torch.no_grad():
            for p, w in zip(parameters, saved, strict=True):
                p.copy_(w)


def pacbayes_sigma(
    model: Any, ids: torch.Tensor, labels: torch.Tensor, *, seed: int, settings: FlatnessSettings = DEFAULT_FLATNESS
) -> float:
    """σ′: the largest σ whose noise N(0, σ² w² + ε²) raises the mean training error by at most δ."""
    import torch

    ids, labels = ids[: settings.examples], labels[: settings.examples]
    model.eval()
    parameters = list(model.parameters())
    base = _error(model, ids, labels)
    generator = torch.Generator().manual_seed(seed)
    with _restored(parameters) as weights:
        noise = [
            [torch.randn(w.shape, generator=generator, dtype=w.dtype) for w in weights] for _ in range(settings.draws)
        ]

        allowed = settings.target * settings.draws  # the most the rises may add up to
        squares = [w.square() for w in weights]  # hoisted: the same w² for every σ and draw

        def fits(sigma: float) -> bool:
            rise = 0.0
            for index, draw in enumerate(noise):
                with torch.no_grad():
                    for p, w, w2, z in zip(parameters, weights, squares, draw, strict=True):
                        p.copy_(w + torch.sqrt(sigma**2 * w2 + settings.epsilon**2) * z)
                rise += _error(model, ids, labels) - base
                if settings.early_stop:  # a margin leaves near-ties to the full sum below
                    left = settings.draws - index - 1
                    if rise - left * base > allowed + _MARGIN:  # even rises of -base from here leave it above
                        return False
                    if rise + left * (1.0 - base) < allowed - _MARGIN:  # even rises of 1 - base leave it within
                        return True
            return rise / settings.draws <= settings.target

        return bisect_scale(fits, settings)


def sharpness_alpha(
    model: Any, ids: torch.Tensor, labels: torch.Tensor, *, settings: FlatnessSettings = DEFAULT_FLATNESS
) -> float:
    """α′: the largest α whose box |u| ≤ α (|w| + ε) holds no ascent point raising the training error by δ."""
    import torch

    ids, labels = ids[: settings.examples], labels[: settings.examples]
    model.eval()
    parameters = list(model.parameters())
    base = _error(model, ids, labels)
    with _restored(parameters) as weights:
        # the first iterate is u = 0 for every α: its error and gradient signs are computed once
        model.zero_grad(set_to_none=True)
        logits = model(input_ids=ids).logits  # (n, 2)
        first_rise = float((logits.argmax(dim=1) != labels).double().mean()) - base
        torch.nn.functional.cross_entropy(logits, labels).backward()
        first_signs = [p.grad.sign() if p.grad is not None else torch.zeros_like(p) for p in parameters]
        model.zero_grad(set_to_none=True)
        del logits
        magnitudes = [w.abs() + settings.epsilon for w in weights]  # hoisted: |w| + ε for every α

        def fits(alpha: float) -> bool:
            boxes = [alpha * m for m in magnitudes]
            worst = max(0.0, first_rise)
            if settings.early_stop and worst > settings.target:
                return False
            shifts = []
            for box, sign in zip(boxes, first_signs, strict=True):
                u = 2.0 * box / settings.ascent_steps * sign  # from u = 0: the first step of the ascent
                shifts.append(torch.minimum(torch.maximum(u, -box), box))
            for _ in range(1, settings.ascent_steps):
                with torch.no_grad():
                    for p, w, u in zip(parameters, weights, shifts, strict=True):
                        p.copy_(w + u)
                model.zero_grad(set_to_none=True)
                logits = model(input_ids=ids).logits  # (n, 2)
                worst = max(worst, float((logits.argmax(dim=1) != labels).double().mean()) - base)
                if settings.early_stop and worst > settings.target:
                    model.zero_grad(set_to_none=True)
                    return False  # the worst iterate counts: this one already leaves the box's budget
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


def censoring_values(settings: FlatnessSettings = DEFAULT_FLATNESS) -> tuple[float, float]:
    """The two values a search's measure 1/s² takes when the search hits an end of its range (SPEC §13b:
    such a run is *censored*, its value only a bound): a model that stays within δ at every scale tried
    gets the top scale, 2^(high − (high − low) / 2^halvings), the smallest measure; one that leaves it at
    every scale gets 2^low, the largest. With the defaults: 0.2653 and 2^20."""
    top = settings.high - (settings.high - settings.low) / 2**settings.halvings
    return inverse_square(2.0**top), inverse_square(2.0**settings.low)


def inverse_square(scale: float) -> float:
    """1 / s², Jiang et al.'s flatness measure of a largest admissible scale s."""
    return 1.0 / scale**2 if scale > 0 else math.inf
