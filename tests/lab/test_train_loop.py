"""The hoisted training loop against the former one: the same run gives the same record, bit for bit.

The pre-registered study trains with the lab while it changes, so a change to the loop may not move a
single bit of a record on one machine and one thread count: every float of a run trained by the
hoisted loop (minibatches drawn a block at a time, AdamW's multi-tensor update) is compared with ``==``
against the same run trained in this process by the former loop (``hoisted=False``: one draw per step,
the per-parameter AdamW), on a run of each family the study trains (bert and gpt2), with a minibatch
smaller than the training set (so the draws matter) and trained until it fits (so the fitted step is
compared too). Exact equality is the claim here; it is not compared across machines.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from specbound_lab import train
from specbound_lab.train import (
    BATCH_BLOCK,
    Family,
    RunSpec,
    TrainResult,
    TrainSettings,
    _hoisted_batches,
    _per_step_batches,
    train_run,
)

#: Past one block of draws (BATCH_BLOCK steps), a fit check every 20 steps, a batch of 24 from 40.
SETTINGS = TrainSettings(
    steps=2 * BATCH_BLOCK + 30, save_every=100, fit_every=20, until_fit=True, batch_size=24, test_samples=64,
    learning_rate=3e-3, model_measures=False,
)  # fmt: skip


def _spec(family: Family) -> RunSpec:
    return RunSpec(layers=2, hidden=16, heads=2, n_train=40, seed=3, settings=SETTINGS, family=family)


def _weights(directory: Path, result: TrainResult) -> list[dict[str, torch.Tensor]]:
    """The saved weights of every checkpoint of the run."""
    return [load_file(directory / step.checkpoint / "model.safetensors") for step in result.steps]


@pytest.mark.parametrize("family", [Family.BERT, Family.GPT2])
def test_the_hoisted_loop_gives_the_former_loops_record_bit_for_bit(family: Family, tmp_path: Path) -> None:
    spec = _spec(family)
    former = train_run(spec, tmp_path / "former", compile=False, hoisted=False)
    hoisted = train_run(spec, tmp_path / "hoisted", compile=False)
    assert len(former.steps) >= 2  # step 0 and at least one later checkpoint
    assert former.steps[-1].step > BATCH_BLOCK  # the run drew more than one block
    # every float of every saved step: exact (the dataclasses compare field by field with ==)
    assert hoisted.steps == former.steps
    assert hoisted.params == former.params
    for then, now in zip(_weights(tmp_path / "former", former), _weights(tmp_path / "hoisted", hoisted), strict=True):
        assert then.keys() == now.keys()
        for name in then:
            assert torch.equal(then[name], now[name]), name


def test_the_loops_differ_where_a_step_would_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above can fail: a hoisted loop whose draws are off by one block step changes the record."""
    spec = _spec(Family.BERT)
    former = train_run(spec, tmp_path / "former", compile=False, hoisted=False)

    def shifted(ids: torch.Tensor, labels: torch.Tensor, batch: int, generator: torch.Generator):  # type: ignore[no-untyped-def]
        batches = _hoisted_batches(ids, labels, batch, generator)
        next(batches)  # skip one step's rows
        return batches

    monkeypatch.setattr(train, "_hoisted_batches", shifted)
    assert train_run(spec, tmp_path / "shifted", compile=False).steps != former.steps


@pytest.mark.parametrize(("n", "batch"), [(50, 7), (1, 1), (6, 6)])
def test_hoisted_minibatches_are_the_per_step_draws(n: int, batch: int) -> None:
    """The rows of 2.5 blocks of steps, drawn a block at a time, are the per-step draws (the whole set
    when the batch is the set: a run's batch is at most n)."""
    ids, labels = torch.arange(n * 3).reshape(n, 3), torch.arange(n)  # (n, 3), (n,)
    hoisted = _hoisted_batches(ids, labels, batch, torch.Generator().manual_seed(7))
    former = _per_step_batches(ids, labels, batch, torch.Generator().manual_seed(7))
    for _ in range(5 * BATCH_BLOCK // 2):
        (a_ids, a_labels), (b_ids, b_labels) = next(hoisted), next(former)
        assert torch.equal(a_ids, b_ids) and torch.equal(a_labels, b_labels)
        assert a_ids.shape == (batch, 3)


def test_fused_adamw_is_another_run_off_by_default(tmp_path: Path) -> None:
    """The fused AdamW kernel rounds differently: off by default, a run with it named apart and recorded
    with the setting, identical at step 0 (no update yet) and apart after (training at these learning
    rates is chaotic: the rounding moves the trajectory, here the fitted step by one or more checks)."""
    spec = _spec(Family.BERT)
    fused_spec = replace(spec, settings=replace(SETTINGS, fused_adam=True))
    assert not SETTINGS.fused_adam and not TrainSettings().fused_adam
    assert fused_spec.name != spec.name and "fused_adam" not in spec.to_dict()["settings"]
    assert fused_spec.to_dict()["settings"]["fused_adam"] is True
    default = train_run(spec, tmp_path / "default", compile=False)
    fused = train_run(fused_spec, tmp_path / "fused", compile=False)
    assert fused.steps[0] == default.steps[0]
    assert fused.steps[1:] != default.steps[1:]
    assert not math.isclose(fused.steps[-1].train_loss, default.steps[-1].train_loss, rel_tol=1e-6)
