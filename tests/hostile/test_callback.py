"""Hostile input to the Trainer callback: it never stops a training run.

Every case trains a real ``transformers.Trainer`` for a few steps. What can be checked before training
(arguments, the atlas's folder, the model's family) is refused when the callback is made or attached,
with one line; what goes wrong at a step (weights turned NaN, an atlas that can no longer be written,
an atlas full) is one warning, and training runs to its last step.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from tiny_models import save_model, tiny_model

from specbound.api.integrations import LOG_PREFIX, SpecboundCallback
from specbound.core.errors import SpecboundError
from specbound.core.limits import LIMITS
from specbound.io.atlas import load_atlas

STEPS = 12
LOGGER = "specbound.api.integrations"


def _bert(seed: int = 0) -> Any:
    return tiny_model(
        layers=1, hidden=16, heads=2, ffn=24, vocab_size=30, num_labels=2, seed=seed,
        head="BertForSequenceClassification",
    )  # fmt: skip


def _trainer(
    tmp_path: Path,
    model: Any = None,
    *,
    logging_steps: float = 4,
    callbacks: list[Any] | None = None,
    data: list[dict[str, Any]] | None = None,
) -> Any:
    import torch
    import transformers

    model = model if model is not None else _bert()
    if data is None:
        ids = torch.randint(1, 30, (32, 8), generator=torch.Generator().manual_seed(0))
        data = [{"input_ids": i, "labels": int(i[0] % 2)} for i in ids]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=STEPS,
        per_device_train_batch_size=8,
        logging_steps=logging_steps,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    return transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks)


def _logged_steps(trainer: Any) -> list[int]:
    return [e["step"] for e in trainer.state.log_history if f"{LOG_PREFIX}ours_log10" in e]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


# --- checked before training, with one line -----------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"every_steps": "3"}, "not the string '3'"),
        ({"every_steps": 2.5}, "not 2.5"),
        ({"every_steps": True}, "not true"),
        ({"every_steps": -1}, "at least 0"),
        ({"on_save": "no"}, "on_save must be True or False, not the string 'no'"),
        ({"name": "run@3"}, "without '@'"),
        ({"l_phi": float("nan")}, "L_phi"),
        ({"grid_m": "5"}, "grid resolution"),
        ({"atlas": ""}, "atlas must be a file path"),
        (
            {"reference": 42},
            'reference must be "init", a model name or path, or a model in memory (a PreTrainedModel), not 42',
        ),
        ({"reference": 3.5}, "not 3.5 (float)"),
        ({"reference": ["init"]}, "(list)"),
        ({"reference": True}, "not true (bool)"),
        ({"reference": "  "}, "a model in memory, not the string ''"),
        ({"reference": {"bert.weight": 0}}, "give the PreTrainedModel, not its state_dict"),
    ],
)
def test_arguments_that_cannot_work_are_refused_when_the_callback_is_made(
    arguments: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValueError) as caught:
        SpecboundCallback(**arguments)
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_atlas_in_a_missing_folder_or_that_is_a_folder_is_refused_before_training(tmp_path: Path) -> None:
    with pytest.raises(SpecboundError, match="its parent is not an existing directory"):
        SpecboundCallback(atlas=tmp_path / "no-such-folder" / "trajectory.npz")
    (tmp_path / "runs").mkdir()
    with pytest.raises(SpecboundError, match="is a directory: name a file"):
        SpecboundCallback(atlas=tmp_path / "runs")


def _tiny_xlnet() -> Any:
    """A model of a family specbound does not read (XLNet), small enough to train in a test."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.XLNetConfig(vocab_size=30, d_model=16, n_layer=1, n_head=2, d_inner=24)
    model = transformers.XLNetLMHeadModel(config)
    ids = torch.randint(1, 30, (16, 6), generator=torch.Generator().manual_seed(0))
    return model, [{"input_ids": i, "labels": i.flip(0)} for i in ids]


def test_a_family_the_analysis_refuses_is_refused_at_attach_and_idle_in_callbacks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model, data = _tiny_xlnet()
    trainer = _trainer(tmp_path / "a", model, data=data)
    with pytest.raises(SpecboundError, match=r"cannot analyse this model: model type 'xlnet' is not supported"):
        SpecboundCallback.attach(trainer, every_steps=2)
    assert not any(isinstance(c, SpecboundCallback) for c in trainer.callback_handler.callbacks)
    # given in callbacks=[...], where nothing can be refused before train(): one warning, then idle
    callback = SpecboundCallback(every_steps=2)
    trainer = _trainer(tmp_path / "b", model, data=data, callbacks=[callback])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        trainer.train()
    assert trainer.state.global_step == STEPS
    assert _logged_steps(trainer) == []
    (warning,) = _warnings(caplog)
    assert "cannot analyse this model and stays idle" in warning and "'xlnet' is not supported" in warning


# --- at a step: one warning, and training goes on -------------------------------------------------------


class _PoisonAt:
    """A callback that turns one weight NaN after optimizer step ``step`` (before ours measures it)."""

    def __new__(cls, step: int) -> Any:
        import torch
        from transformers import TrainerCallback

        class Poison(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> Any:
                if state.global_step == step:
                    with torch.no_grad():
                        model.bert.encoder.layer[0].attention.self.query.weight[0, 0] = float("nan")
                return control

        return Poison()


def test_weights_that_turn_nan_mid_run_give_one_warning_per_step_and_training_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    trainer = _trainer(tmp_path, callbacks=[_PoisonAt(6)])
    callback = SpecboundCallback.attach(trainer, every_steps=4, atlas=tmp_path / "trajectory.npz", name="run")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        trainer.train()
    assert trainer.state.global_step == STEPS
    assert _logged_steps(trainer) == [4]  # steps 8 and 12 hold NaN weights
    warnings = _warnings(caplog)
    assert [w.split(" is not analysed")[0] for w in warnings] == ["specbound: step 8", "specbound: step 12"]
    assert all("NaN" in w for w in warnings)
    assert [p.model for p in load_atlas(tmp_path / "trajectory.npz")] == ["run@4"]
    assert sorted(callback.profiles) == [4]


def test_a_fractional_logging_steps_is_a_share_of_the_run(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, logging_steps=0.25)  # transformers' rule: every ceil(12 * 0.25) = 3 steps
    SpecboundCallback.attach(trainer)
    trainer.train()
    assert _logged_steps(trainer) == [3, 6, 9, 12]


def test_an_atlas_whose_folder_disappears_mid_run_is_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from transformers import TrainerCallback

    folder = tmp_path / "atlases"
    folder.mkdir()

    class RemoveFolder(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if state.global_step == 5:
                shutil.rmtree(folder)
            return control

    trainer = _trainer(tmp_path, callbacks=[RemoveFolder()])
    callback = SpecboundCallback.attach(trainer, every_steps=4, atlas=folder / "trajectory.npz", name="run")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        trainer.train()
    assert trainer.state.global_step == STEPS
    assert _logged_steps(trainer) == [4, 8, 12]  # the values are still logged
    warnings = _warnings(caplog)
    assert len(warnings) == 2 and all("the atlas trajectory.npz is not written at step" in w for w in warnings)
    assert sorted(callback.profiles) == [4]  # what the atlas last held


def test_an_atlas_that_would_pass_its_limits_keeps_the_steps_before(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import specbound.io.atlas as atlas_module

    monkeypatch.setattr(atlas_module, "LIMITS", dataclasses.replace(LIMITS, max_atlas_models=2))
    trainer = _trainer(tmp_path)
    SpecboundCallback.attach(trainer, every_steps=3, atlas=tmp_path / "trajectory.npz", name="run")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        trainer.train()
    assert _logged_steps(trainer) == [3, 6, 9, 12]
    (warning,) = _warnings(caplog)  # once, not at every later step
    assert "it would hold 3 models, above the limit of 2" in warning and "keeps the steps up to 6" in warning
    assert [p.model for p in load_atlas(tmp_path / "trajectory.npz")] == ["run@3", "run@6"]


def test_the_default_run_name_never_shows_the_folders_of_the_machine(tmp_path: Path) -> None:
    from transformers import BertForSequenceClassification

    saved = tmp_path / "deep" / "folders" / "my-bert"
    save_model(_bert(), saved)
    model = BertForSequenceClassification.from_pretrained(saved)
    assert model.config._name_or_path == str(saved)  # what transformers records: the absolute path
    trainer = _trainer(tmp_path, model)
    SpecboundCallback.attach(trainer, every_steps=6, atlas=tmp_path / "trajectory.npz")
    trainer.train()
    names = [p.model for p in load_atlas(tmp_path / "trajectory.npz")]
    assert names == ["my-bert@6", "my-bert@12"]
    assert all(str(tmp_path) not in name for name in names)


def test_a_hub_id_stays_the_run_name() -> None:
    from specbound.api.integrations import run_name

    model = _bert()
    model.config._name_or_path = "prajjwal1/bert-tiny"
    assert run_name(model) == "prajjwal1/bert-tiny"
    model.config._name_or_path = ""
    assert run_name(model) == "BertForSequenceClassification"
