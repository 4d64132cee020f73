"""One short run: it lowers the training error, saves loadable checkpoints from step 0, and repeats bit for bit
on the same machine (one thread; across machines the lab states a tolerance instead, see test_reference)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from specbound.core.progress import ProgressEvent
from specbound.io import FINETUNE_BASE
from specbound_lab.records import LAB_LABEL, lab_label
from specbound_lab.reference import (
    DECODER_REFERENCE,
    FINETUNE_REFERENCE,
    FIT_MARKOV_LLAMA_REFERENCE,
    THRESHOLD_REFERENCE,
)
from specbound_lab.robust import environment_name, split_environment
from specbound_lab.tasks import MarkovTask, Task, ThresholdTask
from specbound_lab.train import (
    Family,
    LabError,
    RunSpec,
    TrainingCancelled,
    TrainSettings,
    model_class_name,
    standard_error,
    train_run,
)
from specbound_lab.trajectory import spec_from_dict

SHORT = TrainSettings(steps=150, save_every=50, test_samples=1000)


def test_a_short_run_lowers_the_training_error(tmp_path: Path) -> None:
    spec = RunSpec(layers=2, hidden=32, heads=2, n_train=256, seed=0, settings=SHORT)
    events: list[ProgressEvent] = []
    result = train_run(spec, tmp_path, progress=events.append)
    assert [s.step for s in result.steps] == [0, 50, 100, 150]
    first, last = result.steps[0], result.steps[-1]
    assert first.train_error > 0.3  # an untrained classifier is near chance on a balanced task
    assert last.train_error < 0.05 and last.train_loss < first.train_loss / 4
    assert last.test_error < 0.25
    assert last.test_error_se == pytest.approx(standard_error(last.test_error, 1000))
    for s in result.steps:
        assert (tmp_path / s.checkpoint / "config.json").is_file()
        assert (tmp_path / s.checkpoint / "model.safetensors").is_file()
    assert events[-1].stage == "train" and events[-1].done == events[-1].total == 150
    # 2 layers of width 32: attention 4 (32*32 + 32) + 2 LayerNorms 4*32, MLP 2*32*128 + 128 + 32,
    # embeddings (10 + 17 + 1) * 32 + 2*32, pooler 32*32 + 32, classifier 2*32 + 2
    layer = 4 * (32 * 32 + 32) + 2 * 32 * 128 + 128 + 32 + 4 * 32
    assert result.params == 2 * layer + 28 * 32 + 64 + 32 * 32 + 32 + 66


def test_runs_are_reproducible(tmp_path: Path) -> None:
    spec = RunSpec(
        layers=1,
        hidden=16,
        heads=2,
        n_train=64,
        seed=5,
        task=ThresholdTask(label_noise=0.1),
        settings=TrainSettings(steps=30, save_every=15, test_samples=500),
    )
    a, b = train_run(spec, tmp_path / "a"), train_run(spec, tmp_path / "b")
    assert a.steps == b.steps
    assert a.model_values == b.model_values and set(a.model_values) == {"pacbayes_flatness", "sharpness"}
    assert all(0 < v < float("inf") for v in a.model_values.values())
    last = a.steps[-1].checkpoint
    assert (tmp_path / "a" / last / "model.safetensors").read_bytes() == (
        tmp_path / "b" / last / "model.safetensors"
    ).read_bytes()


def test_the_cancel_hook_stops_between_steps(tmp_path: Path) -> None:
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 7

    spec = RunSpec(layers=1, hidden=16, heads=2, n_train=32, settings=TrainSettings(steps=50, save_every=5))
    with pytest.raises(TrainingCancelled, match="cancelled at step 7"):
        train_run(spec, tmp_path, should_stop=stop)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-000000", "step-000005"]


@pytest.mark.parametrize("kwargs", [{"hidden": 30, "heads": 4}, {"layers": 0}, {"layers": 99}, {"n_train": 0}])
def test_invalid_runs_are_refused(kwargs: dict[str, Any]) -> None:
    values = {"layers": 1, "hidden": 16, "heads": 2, "n_train": 10, **kwargs}
    with pytest.raises(LabError):
        RunSpec(**values)


def test_save_steps_include_zero_and_the_last_step() -> None:
    assert TrainSettings(steps=10, save_every=4).save_steps == (0, 4, 8, 10)
    with pytest.raises(LabError):
        TrainSettings(steps=0)


def test_runs_that_train_differently_have_different_names() -> None:
    base = RunSpec(layers=1, hidden=16, heads=2, n_train=10)
    assert base.name == "lab-L1-N16-H2-n10-q0-s0-t600"
    other_lr = RunSpec(layers=1, hidden=16, heads=2, n_train=10, settings=TrainSettings(learning_rate=3e-4))
    other_task = RunSpec(layers=1, hidden=16, heads=2, n_train=10, task=ThresholdTask(vocab_size=6))
    names = {base.name, other_lr.name, other_task.name}
    assert len(names) == 3 and all(n.startswith("lab-L1-N16-H2-n10-q0-s0-t600-v") for n in names - {base.name})
    same_model = RunSpec(layers=1, hidden=16, heads=2, n_train=10, settings=TrainSettings(save_every=7))
    assert same_model.name == base.name


def test_a_run_trained_until_fit_ends_at_its_first_fitted_checkpoint(tmp_path: Path) -> None:
    """SPEC §13b: with until_fit a classification run trains until its training set is fitted (cross-entropy
    <= 0.01 or no training error, on the whole set, at a checkpoint) and ends there; steps is the cap."""
    from specbound_lab.train import FIT_LOSS, fits_training_set

    settings = TrainSettings(steps=3000, save_every=50, test_samples=200, until_fit=True)
    spec = RunSpec(layers=1, hidden=16, heads=2, n_train=32, seed=4, settings=settings)
    result = train_run(spec, tmp_path)
    steps = [r.step for r in result.steps]
    final = result.steps[-1]
    assert fits_training_set(final.train_loss, final.train_error) and final.step < settings.steps
    assert all(not fits_training_set(r.train_loss, r.train_error) for r in result.steps[:-1])  # the first one
    assert steps == list(range(0, final.step + 1, 50))
    assert final.train_loss <= FIT_LOSS  # clean labels: Jiang et al.'s loss, not a training error of 0
    plain = RunSpec(layers=1, hidden=16, heads=2, n_train=32, seed=4, settings=TrainSettings(steps=3000))
    assert spec.name != plain.name and spec.name.startswith(plain.name + "-v")  # another run than the fixed budget
    assert spec.to_dict()["settings"]["until_fit"] is True and "until_fit" not in plain.to_dict()["settings"]


def test_fit_checks_between_saves_end_the_run_where_saving_at_every_check_would(tmp_path: Path) -> None:
    """A fit check measures the training set alone: checking every 50 steps and saving every 1,000 ends at
    the same step with the same model as saving at every check, with only the first and last checkpoints."""
    every_check = TrainSettings(steps=3000, save_every=50, test_samples=200, until_fit=True)
    rare_saves = TrainSettings(steps=3000, save_every=1000, fit_every=50, test_samples=200, until_fit=True)
    dense = train_run(RunSpec(layers=1, hidden=16, heads=2, n_train=32, seed=4, settings=every_check), tmp_path / "a")
    sparse_spec = RunSpec(layers=1, hidden=16, heads=2, n_train=32, seed=4, settings=rare_saves)
    sparse = train_run(sparse_spec, tmp_path / "b")
    final = dense.steps[-1]
    assert [r.step for r in sparse.steps] == [0, final.step] and 0 < final.step < 1000
    assert sparse.steps[-1] == replace(final)  # the same losses, errors and checkpoint name, bit for bit
    assert sparse.model_values == dense.model_values
    assert sparse_spec.name == RunSpec(layers=1, hidden=16, heads=2, n_train=32, seed=4, settings=every_check).name
    other_cadence = replace(sparse_spec, settings=replace(rare_saves, fit_every=30))
    assert other_cadence.name != sparse_spec.name  # it may stop elsewhere: another run
    assert (
        sparse_spec.to_dict()["settings"]["fit_every"] == 50
        and "fit_every" not in RunSpec(1, 16, 2, 32).to_dict()["settings"]
    )


def test_a_next_token_run_trains_its_budget_even_until_fit(tmp_path: Path) -> None:
    from specbound_lab.tasks import MarkovTask

    settings = TrainSettings(steps=6, save_every=3, test_samples=8, until_fit=True)
    result = train_run(RunSpec(1, 16, 2, 4, task=MarkovTask(), settings=settings, family=Family.GPT2), tmp_path)
    assert [r.step for r in result.steps] == [0, 3, 6]


def test_the_learning_rate_is_an_axis_of_a_sweep_grid() -> None:
    from dataclasses import replace

    from specbound_lab.grid import PRESETS, grid_from_dict

    grid = replace(PRESETS["smoke"], learning_rates=(1e-3, 3e-3))
    specs = grid.specs()
    assert len(specs) == 2 * len(PRESETS["smoke"].specs())
    assert {s.settings.learning_rate for s in specs} == {1e-3, 3e-3} and len({s.name for s in specs}) == len(specs)
    from_file = grid_from_dict({"learning_rates": [1e-3, 3e-3], "settings": {"until_fit": True}})
    assert from_file.learning_rates == (1e-3, 3e-3) and from_file.settings.until_fit is True
    with pytest.raises(LabError, match="setting 'until_fit' must be true or false"):
        grid_from_dict({"settings": {"until_fit": 1}})


def test_adam_beta2_is_a_setting_that_names_its_runs_only_when_it_differs() -> None:
    """AdamW's second-moment decay: the default (torch's 0.999) keeps every earlier run's name and
    record; another value is another optimiser, so another run name, and is recorded."""
    from dataclasses import replace

    from specbound_lab.train import ADAM_BETA2, RunSpec, TrainSettings, _settings_dict

    spec = RunSpec(layers=1, hidden=32, heads=2, n_train=100)
    assert spec.settings.adam_beta2 == ADAM_BETA2 == 0.999
    assert "-v" not in spec.name and "adam_beta2" not in _settings_dict(spec.settings)
    other = replace(spec, settings=replace(spec.settings, adam_beta2=0.98))
    assert other.name != spec.name and other.name.startswith(spec.name + "-v")
    assert _settings_dict(other.settings)["adam_beta2"] == 0.98
    with pytest.raises(LabError, match="adam_beta2"):
        TrainSettings(adam_beta2=1.0)


def test_adam_beta2_reaches_the_optimiser(tmp_path: Path) -> None:
    """Two runs that differ in beta2 alone train differently from the first steps on."""
    from dataclasses import replace

    spec = RunSpec(
        layers=1, hidden=16, heads=2, n_train=64, settings=TrainSettings(steps=4, save_every=4, test_samples=64)
    )
    a = train_run(spec, tmp_path / "a")
    b = train_run(replace(spec, settings=replace(spec.settings, adam_beta2=0.5)), tmp_path / "b")
    assert a.steps[0].train_loss == b.steps[0].train_loss  # the same model at step 0
    assert a.steps[-1].train_loss != b.steps[-1].train_loss


def test_a_family_is_its_name_in_run_names_and_records() -> None:
    """Family is a StrEnum: a spec given the name holds the member, and names and records read as before."""
    name: str = "gpt2"  # a plain string, as --family and a record give it
    # the name where the member is typed, on purpose: RunSpec turns it into the member
    spec = RunSpec(layers=1, hidden=16, heads=2, n_train=4, task=MarkovTask(), family=name)  # type: ignore[arg-type]
    assert spec.family is Family.GPT2 and spec.family == name
    assert spec.name == "lab-gpt2-markov-L1-N16-H2-n4-q0-s0-t600"
    assert json.dumps(spec.to_dict()["family"]) == '"gpt2"'
    assert "family" not in RunSpec(layers=1, hidden=16, heads=2, n_train=4).to_dict()  # bert, as records always had
    assert spec_from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert spec_from_dict({k: v for k, v in RunSpec(1, 16, 2, 4).to_dict().items()}).family is Family.BERT
    with pytest.raises(LabError, match=r"^unknown family 'gpt3' \(known: bert, gpt2, llama, neox\)$"):
        RunSpec(layers=1, hidden=16, heads=2, n_train=4, family="gpt3")  # type: ignore[arg-type]
    with pytest.raises(
        LabError, match=r"the markov task is next-token prediction: use a decoder family \(gpt2, llama, neox\)"
    ):
        RunSpec(layers=1, hidden=16, heads=2, n_train=4, task=MarkovTask())
    with pytest.raises(LabError, match="H must be even, got 3"):
        RunSpec(layers=1, hidden=12, heads=3, n_train=4, family=Family.LLAMA)
    assert RunSpec(layers=1, hidden=16, heads=4, n_train=4, family=Family.LLAMA).kv_heads == 2
    assert RunSpec(layers=1, hidden=16, heads=4, n_train=4, family=Family.NEOX).kv_heads == 4


def test_a_family_s_words_live_in_one_place() -> None:
    assert [f.value for f in Family] == ["bert", "gpt2", "llama", "neox"]
    assert [f.words for f in Family] == ["BERT encoder", "GPT-2 decoder", "Llama decoder", "GPT-NeoX decoder"]
    assert [f.decoder for f in Family] == [False, True, True, True]
    assert (
        lab_label(Family.BERT) == LAB_LABEL == "small BERT encoder trained by the specbound lab (not a BERT Miniature)"
    )
    assert lab_label(Family.NEOX) == "small GPT-NeoX decoder trained by the specbound lab (not a released model)"
    assert (DECODER_REFERENCE.models, FIT_MARKOV_LLAMA_REFERENCE.models) == ("GPT-2 decoders", "Llama decoders")
    assert FINETUNE_REFERENCE.models == f"BERT encoders fine-tuned from {FINETUNE_BASE}"
    assert DECODER_REFERENCE.regenerate == (
        "specbound lab sweep --preset class --task markov --family gpt2 --out DIR --export-reference"
    )
    assert THRESHOLD_REFERENCE.regenerate == "specbound lab sweep --preset class --out DIR --export-reference"
    assert model_class_name(RunSpec(1, 16, 2, 4, task=MarkovTask(), family=Family.NEOX)) == "GPTNeoXForCausalLM"


def test_an_environment_s_name_splits_into_its_members() -> None:
    task, family, tuned = split_environment("markov/llama")
    assert (task, family, tuned) == (Task.MARKOV, Family.LLAMA, False) and task.causal and family.gated_mlp
    assert environment_name(Task.THRESHOLD, Family.BERT, fine_tuned=True) == "threshold/bert fine-tuned"
    with pytest.raises(LabError, match=r"unknown task 'sorting' \(known: threshold, parity, modular, markov\)"):
        split_environment("sorting/bert")
