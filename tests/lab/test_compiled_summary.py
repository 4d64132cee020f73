"""The searches' summary-position forward: the full model's logits (and gradients) within 1e-5 on bert
and gpt2, the same flatness and sharpness within a bisection step, the full model where a family has
none, with one line why.

The models are the lab's own (transformers' classes built by :func:`~specbound_lab.train.build_model`)
with weights drawn at 20 times the initialiser's scale, so that the logits are of order one and differ
from example to example: a wrong slice, a missing residual or a misplaced layer norm moves them by
far more than the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from specbound.core import torch_threads
from specbound_lab import train
from specbound_lab.compiled import forward_flops, summary_flops, summary_route
from specbound_lab.flatness import FlatnessSettings, pacbayes_sigma, sharpness_alpha
from specbound_lab.tasks import MarkovTask
from specbound_lab.train import Family, RunSpec, TrainSettings, _probe_model, build_model, model_inputs, train_run

#: |summary − full| on logits of order one (float32; the sums of the last layer run in another order).
TOLERANCE = 1e-5


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """One thread, as a run searches (several threads on a loaded machine wait on each other per op)."""
    with torch_threads(1):
        yield


def _model_and_inputs(family: Family, layers: int, causal: bool) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """A model of the lab with large random weights, its probe's inputs and labels (64 examples)."""
    task = MarkovTask() if causal else RunSpec(1, 8, 2, 1).task
    spec = RunSpec(layers=layers, hidden=32, heads=4, n_train=64, family=family, task=task)
    torch.manual_seed(5)
    model = build_model(spec).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.4)  # the initialiser's 0.02, 20 times
    sample, _ = spec.task.datasets(64, 1, 0)
    ids, labels = model_inputs(sample, spec.task.vocab_size, family, causal)
    return model, ids, labels


CASES = [
    pytest.param(Family.BERT, 1, False, id="bert-L1"),
    pytest.param(Family.BERT, 3, False, id="bert-L3"),
    pytest.param(Family.GPT2, 2, False, id="gpt2-classifier-L2"),
    pytest.param(Family.GPT2, 2, True, id="gpt2-lm-L2"),
]


@pytest.mark.parametrize(("family", "layers", "causal"), CASES)
def test_summary_logits_are_the_full_models(family: Family, layers: int, causal: bool) -> None:
    model, ids, labels = _model_and_inputs(family, layers, causal)
    full, probe_ids, _ = _probe_model(model, ids, labels, causal)  # a language model: its last position
    head, why = summary_route(model)
    assert why is None and type(head).__name__ == "SummaryHead"
    summary, same_ids, _ = _probe_model(head, ids, labels, causal)
    assert torch.equal(same_ids, probe_ids)  # the probe of a language model drops the last token either way
    with torch.inference_mode():
        expected = full(input_ids=probe_ids).logits  # (n, C) or (n, V)
        got = summary(input_ids=probe_ids).logits
    assert got.shape == expected.shape == (64, 18 if causal else 2)
    assert float(expected.std()) > 0.1  # logits of order one that vary: the comparison can fail
    assert torch.allclose(got, expected, rtol=0.0, atol=TOLERANCE), float((got - expected).abs().max())
    assert {id(p) for p in head.parameters()} == {id(p) for p in model.parameters()}  # the model's own


@pytest.mark.parametrize(("family", "layers", "causal"), CASES)
def test_summary_gradients_are_the_full_models(family: Family, layers: int, causal: bool) -> None:
    """The sharpness ascent differentiates the training loss: the same gradient through either forward
    (the last layer's query and feed-forward at other positions get none in both)."""
    model, ids, labels = _model_and_inputs(family, layers, causal)
    full, probe_ids, probe_labels = _probe_model(model, ids, labels, causal)
    head, _ = summary_route(model)
    grads = []
    for route in (full, head):
        model.zero_grad(set_to_none=True)
        logits = route(input_ids=probe_ids).logits
        torch.nn.functional.cross_entropy(logits, probe_labels).backward()
        grads.append([p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()])
    largest = max(float(g.abs().max()) for g in grads[0])
    assert largest > 1e-3
    for a, b in zip(*grads, strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6 * largest)


@pytest.mark.parametrize("family", [Family.LLAMA, Family.NEOX])
def test_a_family_without_a_summary_forward_is_evaluated_in_full_with_one_line(family: Family) -> None:
    model = build_model(RunSpec(layers=1, hidden=8, heads=2, n_train=4, family=family))
    head, why = summary_route(model)
    assert head is model
    name = type(model).__name__
    assert why == f"the summary-position forward is written for bert and gpt2: a {name} is evaluated in full"


def test_a_llama_run_says_once_that_its_searches_run_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(train, "_SAID", set())
    settings = TrainSettings(steps=2, save_every=2, test_samples=8)
    spec = RunSpec(layers=1, hidden=8, heads=2, n_train=8, family=Family.LLAMA, settings=settings)
    lines: list[str] = []
    for name in ("a", "b"):
        result = train_run(spec, tmp_path / name, compile=False, notice=lines.append)
        assert set(result.model_values) == {"pacbayes_flatness", "sharpness"}
    name = "LlamaForSequenceClassification"
    assert lines == [f"the summary-position forward is written for bert and gpt2: a {name} is evaluated in full"]


@pytest.mark.parametrize(("family", "layers", "causal"), CASES[1:])
def test_the_searches_find_the_same_scales_through_the_summary_forward(
    family: Family, layers: int, causal: bool
) -> None:
    """Jiang et al.'s budget (15 halvings, 10 draws) on the full model and on its summary forward: the
    same σ′ and α′ (an error one example apart near δ could move a bracket: one resolution step,
    11 / 2^15 octave, allowed for that)."""
    model, ids, labels = _model_and_inputs(family, layers, causal)
    head, _ = summary_route(model)
    step = 11 / 2**15
    settings = FlatnessSettings()
    full_view = _probe_model(model, ids, labels, causal)
    summary_view = _probe_model(head, ids, labels, causal)
    sigma = [pacbayes_sigma(*view, seed=1, settings=settings) for view in (full_view, summary_view)]
    alpha = [sharpness_alpha(*view, settings=settings) for view in (full_view, summary_view)]
    assert abs(math.log2(sigma[0]) - math.log2(sigma[1])) <= step + 1e-12
    assert abs(math.log2(alpha[0]) - math.log2(alpha[1])) <= step + 1e-12
    assert 2.0**-10 < sigma[0] < 2.0 and 2.0**-10 < alpha[0] < 2.0  # found inside the range, not censored


def test_summary_flops_count_the_last_layer_at_one_position() -> None:
    """t = 17 tokens, N = 16, L = 2: one full layer, then keys and values at t positions and the query,
    output projection, feed-forward and one query's attention at one."""
    t, n = 17, 16
    spec = RunSpec(layers=2, hidden=16, heads=2, n_train=8)
    full_layer = 2 * t * 4 * n * n + 2 * t * 2 * 4 * n * n + 4 * t * t * n
    last = 2 * t * 2 * n * n + 2 * 2 * n * n + 2 * 2 * 4 * n * n + 4 * t * n
    assert summary_flops(spec) == full_layer + last
    assert forward_flops(spec) == 2 * full_layer
