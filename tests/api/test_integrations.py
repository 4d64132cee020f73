"""The Trainer callback, with a real transformers ``Trainer`` on a tiny model for a few dozen steps.

Its values must be in ``state.log_history`` at the chosen steps and at each save, equal to what
``specbound.analyze`` gives for the weights of that step (the saved checkpoint of the step is analysed
independently), written to TensorBoard's event files, kept in the trajectory atlas, and the model
must train exactly as it would without the callback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tiny_models import save_model

import specbound
from specbound.api.integrations import LOG_PREFIX, SpecboundCallback
from specbound.io.atlas import load_atlas

STEPS = 24


def _trainer(tmp_path: Path, *, report_to: list[str], seed: int = 0, save_steps: int = 12) -> Any:
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=30, num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=16,  # two labels: the default
    )  # fmt: skip
    model = transformers.BertForSequenceClassification(config)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 30, (64, 8), generator=generator)
    labels = (ids[:, 0] % 2).long()
    data = [{"input_ids": i, "labels": y} for i, y in zip(ids, labels, strict=True)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=STEPS,
        per_device_train_batch_size=8,
        logging_steps=4,
        save_steps=save_steps,
        report_to=report_to,
        seed=seed,
        use_cpu=True,
        disable_tqdm=True,
    )
    return transformers.Trainer(model=model, args=args, train_dataset=data)


def test_the_trainer_logs_the_proxies_at_the_chosen_steps_and_at_each_save(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, report_to=["tensorboard"])
    callback = SpecboundCallback.attach(trainer, every_steps=8, atlas=tmp_path / "trajectory.npz", name="tiny")
    trainer.train()
    logged = {e["step"]: e for e in trainer.state.log_history if f"{LOG_PREFIX}ours_log10" in e}
    assert sorted(logged) == [8, 12, 16, 24]  # every 8 steps, and the saves at 12 and 24
    for step in (12, 24):  # a saved checkpoint: analysed from disk, it gives the logged numbers
        saved = specbound.analyze(tmp_path / "out" / f"checkpoint-{step}", use_cache=False)
        assert logged[step][f"{LOG_PREFIX}ours_log10"] == saved.ours_log10
        assert logged[step][f"{LOG_PREFIX}edelman_log10"] == saved.edelman_log10
        assert logged[step][f"{LOG_PREFIX}sum_c_QK_log10"] == pytest.approx(
            float(saved.optimal_terms.log_per_kind()[specbound.Kind.QK]) / 2.302585092994046, rel=1e-12
        )
        assert "loss" in logged[step]  # the values join the Trainer's own log of that step
    assert 0 <= logged[8][f"{LOG_PREFIX}p_opt_mean"] <= 2
    # TensorBoard's event files hold the values
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events_dir,) = {p.parent for p in (tmp_path / "out").rglob("events.out.tfevents.*")}
    accumulator = EventAccumulator(str(events_dir))
    accumulator.Reload()
    tag = next(t for t in accumulator.Tags()["scalars"] if t.endswith("specbound/ours_log10"))
    assert [e.step for e in accumulator.Scalars(tag)] == [8, 12, 16, 24]
    # the trajectory atlas keeps every profile, named by step
    profiles = load_atlas(tmp_path / "trajectory.npz")
    assert [p.model for p in profiles] == ["tiny@8", "tiny@12", "tiny@16", "tiny@24"]
    assert sorted(callback.profiles) == [8, 12, 16, 24]


def test_the_callback_leaves_training_unchanged(tmp_path: Path) -> None:
    import torch

    plain = _trainer(tmp_path / "a", report_to=[])
    plain.train()
    watched = _trainer(tmp_path / "b", report_to=[])
    watched.add_callback(SpecboundCallback(every_steps=4))  # after the other callbacks: log history only
    watched.train()
    assert watched.model.training == plain.model.training
    for (name, a), (_, b) in zip(plain.model.state_dict().items(), watched.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    losses = [e["loss"] for e in plain.state.log_history if "loss" in e]
    assert losses == [e["loss"] for e in watched.state.log_history if "loss" in e]
    assert sum(f"{LOG_PREFIX}ours_log10" in e for e in watched.state.log_history) == STEPS // 4


def test_a_negative_cadence_is_refused() -> None:
    with pytest.raises(ValueError, match="every_steps"):
        SpecboundCallback(every_steps=-1)


def test_the_callback_logs_the_distance_from_initialization(tmp_path: Path) -> None:
    """reference="init": the proxies centred at the weights as training began, and Σ ‖W - W⁰‖_F, equal
    to an independent analysis of the saved checkpoint against the saved initial weights."""
    import numpy as np
    import torch

    trainer = _trainer(tmp_path, report_to=[])
    save_model(trainer.model, tmp_path / "init")  # the weights as training begins
    SpecboundCallback.attach(trainer, every_steps=12, reference="init")
    trainer.train()
    logged = {e["step"]: e for e in trainer.state.log_history if f"{LOG_PREFIX}ours_centred_log10" in e}
    assert sorted(logged) == [12, 24]
    for step in (12, 24):
        saved = specbound.analyze(tmp_path / "out" / f"checkpoint-{step}", base=str(tmp_path / "init"), use_cache=False)
        assert logged[step][f"{LOG_PREFIX}ours_centred_log10"] == pytest.approx(saved.ours_centred_log10, rel=1e-12)
        assert saved.centred is not None
        delta = saved.centred.schatten_profile
        assert logged[step][f"{LOG_PREFIX}distance_frobenius"] == pytest.approx(delta.frobenius_norm.sum(), rel=1e-12)
        qk = logged[step][f"{LOG_PREFIX}distance_frobenius_QK"]
        assert qk == pytest.approx(delta.frobenius_norm[delta.mask(specbound.Kind.QK)].sum(), rel=1e-12)
    assert logged[24][f"{LOG_PREFIX}distance_frobenius"] > logged[12][f"{LOG_PREFIX}distance_frobenius"] > 0
    # the snapshot is a copy: training moved the model, not the reference
    init = specbound.analyze(tmp_path / "init", use_cache=False)
    assert not np.allclose(init.profile.singular_values, saved.profile.singular_values)
    assert torch.is_tensor(next(iter(trainer.model.state_dict().values())))


def test_an_empty_reference_is_refused() -> None:
    with pytest.raises(ValueError, match="reference"):
        SpecboundCallback(reference="")
