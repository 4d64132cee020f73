"""Fine-tuning runs in the lab (SPEC §14 with §13b's rules): a run that starts from the shipped base,
in full or through a peft LoRA adapter, saved as merged checkpoints and read against its first step."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.numpy import load_file
from tiny_models import save_model

from specbound.io import FINETUNE_BASE as BASE_NAME
from specbound.io import directions_of, open_weights
from specbound.io.models import resolve
from specbound_lab.finetune import FINE_TUNE_TASK, base_task_error
from specbound_lab.grid import FINETUNE, preset_grid
from specbound_lab.robust import couplings
from specbound_lab.sweep import run_sweep
from specbound_lab.tables import FORGETTING_CSV, final_rows, lab_results, runs_frame, write_results
from specbound_lab.train import Family, LabError, RunSpec, TrainSettings
from specbound_lab.trajectory import RunTrajectory, StepRecord, spec_from_dict
from specbound_lab.tuning import LORA_TARGETS, FineTuning, FineTuningError

#: The shipped base's sizes: 2 layers of width 64, feed-forward 256, a two-class head.
LAYERS, HIDDEN, FFN = 2, 64, 256
SHORT = TrainSettings(steps=30, save_every=15, test_samples=500)


def _spec(rank: int, seed: int = 0) -> RunSpec:
    return RunSpec(
        layers=LAYERS,
        hidden=HIDDEN,
        heads=2,
        n_train=100,
        seed=seed,
        task=FINE_TUNE_TASK,
        settings=SHORT,
        fine_tuning=FineTuning(rank=rank),
    )


def _base_path() -> Path:
    """The fine-tuning base's folder (shipped, so never None)."""
    path = resolve(BASE_NAME).path
    assert path is not None
    return path


def _weights(directory: Path) -> dict[str, np.ndarray]:
    return {k: v.astype(np.float64) for k, v in load_file(directory / "model.safetensors").items()}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[RunTrajectory, ...]]:
    out = tmp_path_factory.mktemp("tuned")
    return out, run_sweep([_spec(0), _spec(2)], out).results.runs


def test_a_lora_run_changes_its_targets_by_rank_r_and_nothing_else(
    trained: tuple[Path, tuple[RunTrajectory, ...]],
) -> None:
    out, runs = trained
    run = next(r for r in runs if r.spec.fine_tuning == FineTuning(rank=2))
    base = _weights(_base_path())
    start, end = (_weights(out / "runs" / run.name / s.checkpoint) for s in (run.steps[0], run.final))
    assert start.keys() == base.keys()
    assert all(np.array_equal(start[k], base[k]) for k in base)  # step 0 is the base, bit for bit
    targeted = [k for k in base if k.endswith(".weight") and any(f"{t}.weight" in k for t in LORA_TARGETS)]
    assert len(targeted) == 6 * LAYERS
    for key in base:
        change = end[key] - base[key]
        if key in targeted:  # W⁰ + (α / r) B A: a change of rank exactly r
            assert np.linalg.matrix_rank(change, tol=1e-6 * np.abs(end[key]).max()) == 2, key
        elif key.startswith("classifier."):  # trained in full (modules_to_save)
            assert np.abs(change).max() > 0, key
        else:  # embeddings, layer norms, biases, the pooler: frozen
            assert np.array_equal(end[key], base[key]), key
    # the trained parameters: r (in + out) per targeted weight, and the classifier
    per_layer = 4 * (HIDDEN + HIDDEN) + (HIDDEN + FFN) + (FFN + HIDDEN)
    assert run.params == 2 * LAYERS * per_layer + (HIDDEN * 2 + 2)


def test_a_run_read_against_its_first_step_is_centred_at_the_base(
    trained: tuple[Path, tuple[RunTrajectory, ...]],
) -> None:
    _, runs = trained
    for run in runs:
        first = run.steps[0]
        assert first.value("ours_init") == pytest.approx(math.log10(math.sqrt(LAYERS)), abs=1e-12)  # every rank 0
        assert first.value("distance_frobenius") == 0.0
        assert run.final.value("distance_frobenius") > 0
        assert math.isfinite(run.final.value("bartlett_init")) and math.isfinite(run.final.value("spectral_init"))
    full = next(r for r in runs if r.spec.fine_tuning == FineTuning(rank=0))
    assert full.params == sum(int(v.size) for v in _weights(_base_path()).values())  # every weight trained


def test_intruders_are_recorded_at_every_step_against_the_base(trained: tuple[Path, tuple[RunTrajectory, ...]]) -> None:
    """SPEC §14b in the fine-tuning environment: at every saved step the count of intruder dimensions
    of the checkpoint against the run's first (the base), as specbound finds it; none at step 0."""
    out, runs = trained
    for run in runs:
        assert run.steps[0].value("intruders") == 0.0  # the base against itself
        first = open_weights(str(out / "runs" / run.name / run.steps[0].checkpoint))
        for step in run.steps:
            tuned = open_weights(str(out / "runs" / run.name / step.checkpoint))
            assert step.value("intruders") == float(directions_of(tuned, first).intruders.sum())
    frame = runs_frame(runs)
    assert frame["intruders"].notna().all() and str(frame["intruders"].dtype) == "Int64"
    assert frame[frame["final"]]["intruders"].sum() > 0  # the fine-tunes did move some directions


def test_forgetting_is_the_error_on_the_base_task_at_every_step(
    trained: tuple[Path, tuple[RunTrajectory, ...]], tmp_path: Path
) -> None:
    """The base's own task (positions 0, 5, 9), not the fine-tuning task: the base itself (step 0)
    is near-perfect there (0 of 4,000 wrong when it was shipped) while it is far off the new rule."""
    out, runs = trained
    for run in runs:
        start = run.steps[0]
        assert start.base_task_error <= 0.01 < 0.1 < start.test_error
        assert all(0.0 <= s.base_task_error <= 1.0 for s in run.steps)
        again = spec_from_dict(run.spec.to_dict())
        assert base_task_error(out / "runs" / run.name / run.final.checkpoint, again) == run.final.base_task_error
    frame = runs_frame(runs)
    np.testing.assert_array_equal(
        frame["base_task_error"].to_numpy(), [s.base_task_error for r in runs for s in r.steps]
    )
    record = runs[0].final.to_dict()
    assert StepRecord.from_dict(record).base_task_error == runs[0].final.base_task_error
    scratch = replace(_spec(0), fine_tuning=None)
    assert math.isnan(base_task_error(tmp_path, scratch))  # a run from scratch has no base task: nothing read
    with pytest.raises(ValueError, match="base_task_error must lie in"):
        StepRecord.from_dict({**record, "base_task_error": 1.5})


def test_fine_tuning_is_an_axis_of_its_own_environment(trained: tuple[Path, tuple[RunTrajectory, ...]]) -> None:
    _, runs = trained
    frame = runs_frame(runs)
    assert set(frame["fine_tuning"]) == {"full", "lora2"}
    final = final_rows(runs)
    (coupling,) = couplings(final, noise_filter=False)  # the two runs differ in how they adapt alone
    assert coupling.axis == "fine_tuning" and coupling.environment == "threshold/bert fine-tuned"
    assert '"lora2"' in coupling.low and '"full"' in coupling.high  # a rank below training in full


def test_a_fine_tuning_sweep_writes_shows_and_reports_its_forgetting_verdict(
    trained: tuple[Path, tuple[RunTrajectory, ...]], tmp_path: Path
) -> None:
    """The forgetting verdict of real fine-tuning runs (one seed: shown, not counted), its forgetting.csv
    (both outcomes, over the fitted runs only) and the section lab show and lab report print from them;
    its numbers are recomputed with scipy in tests/lab/test_forgetting_verdict.py."""
    from cli_runner import run_main

    out, runs = trained
    results = lab_results(runs)
    (row,) = results.forgetting
    assert row.environment == "threshold/bert fine-tuned" and not row.counted  # one seed per configuration
    written = write_results(tmp_path, results)
    assert tmp_path / FORGETTING_CSV in written
    table = pd.read_csv(tmp_path / FORGETTING_CSV)
    final = final_rows(runs)
    fitted = int(final["fitted"].astype(bool).sum())
    assert list(table["outcome"].unique()) == ["base_task_error", "gap"]
    assert set(table[table["measure"] == "intruders"]["runs_used"]) == {fitted}  # fitted runs only
    assert set(table["fitted_runs"]) == {fitted} and set(table["runs"]) == {len(runs)}
    assert "Forgetting (error on the base's own task) and the gap in threshold/bert fine-tuned" in run_main(
        "lab", "show", str(out)
    )
    report = run_main("lab", "report", str(out))
    assert "## Intruders, the centred proxies and forgetting" in report
    assert "1 seed per configuration, under 5" in report and "no verdict" in report
    assert f"{fitted} of {len(runs)} runs fitted their training set" in report


def test_a_spec_round_trips_with_its_fine_tuning_and_is_named_by_it() -> None:
    spec = _spec(4, seed=3)
    assert spec_from_dict(spec.to_dict()) == spec
    assert "-lora4-v" in spec.name and "-full-v" in _spec(0).name
    assert spec.name != replace(spec, fine_tuning=None).name
    assert replace(spec, fine_tuning=FineTuning(base="other", rank=4)).name != spec.name  # another base


def test_what_cannot_be_fine_tuned_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(FineTuningError, match="LoRA rank"):
        FineTuning(rank=-1)
    with pytest.raises(LabError, match="can be fine-tuned in full"):
        RunSpec(layers=2, hidden=64, heads=2, n_train=100, family=Family.GPT2, fine_tuning=FineTuning(rank=4))
    narrow = replace(_spec(0), hidden=32)
    with pytest.raises(LabError, match="the base finetune-base has hidden_size 64, the run needs 32"):
        run_sweep([narrow], tmp_path)


def test_a_base_of_another_family_or_a_lora_adapter_is_refused_naming_it(tmp_path: Path) -> None:
    """A Llama with every size of the run's BERT passes a check of sizes, and transformers'
    ``from_pretrained`` then loads none of its tensors: the run would train from random weights under
    the Llama's name. A LoRA adapter has no config.json: transformers' own ValueError said so."""
    import transformers

    from specbound_lab.train import model_config

    bert = model_config(_spec(0))
    llama = transformers.LlamaConfig(
        **{name: getattr(bert, name) for name in ("num_hidden_layers", "hidden_size", "num_attention_heads")},
        intermediate_size=bert.intermediate_size,
        vocab_size=bert.vocab_size,
    )
    save_model(transformers.LlamaForCausalLM(llama), tmp_path / "llama")
    other = replace(_spec(0), fine_tuning=FineTuning(base=str(tmp_path / "llama")))
    with pytest.raises(LabError, match=r"^the base .*llama is a llama model and the run a bert one") as caught:
        run_sweep([other], tmp_path / "out")
    assert "\n" not in str(caught.value)
    adapter = replace(_spec(0), fine_tuning=FineTuning(base="finetune-lora"))
    with pytest.raises(LabError, match="the base finetune-lora is a LoRA adapter, not a model"):
        run_sweep([adapter], tmp_path / "out2")


def test_the_finetune_preset() -> None:
    grid = preset_grid(FINETUNE)
    specs = grid.specs()
    assert len(specs) == 80 and len({s.name for s in specs}) == 80
    assert {s.fine_tuning.label for s in specs if s.fine_tuning} == {"full", "lora1", "lora4", "lora16"}
    assert {s.seed for s in specs} == set(range(5)) and {s.settings.learning_rate for s in specs} == {5e-4, 1e-3}
    assert all(s.settings.until_fit and s.task == FINE_TUNE_TASK for s in specs)
    with pytest.raises(LabError, match="fine-tunes the shipped BERT base"):
        preset_grid(FINETUNE, "markov", "gpt2")


def test_the_shipped_fine_tuning_verdict_names_its_environment() -> None:
    import pandas as pd

    from specbound_lab.reference import FINETUNE_REFERENCE
    from specbound_lab.robust import split_environment
    from specbound_lab.tables import VERDICT_CSV

    verdict = pd.read_csv(FINETUNE_REFERENCE.directory / VERDICT_CSV)
    assert set(verdict["family"]) == {"bert"} and verdict["fine_tuned"].all()  # the family alone, flagged
    assert set(verdict["status"]) == {"fitted"} and (verdict["fitted_runs"] == 73).all()
    assert (verdict["configurations"] == 16).all() and (verdict["seeds"] == 5).all()
    assert split_environment("threshold/bert fine-tuned") == ("threshold", "bert", True)
    assert split_environment("markov/gpt2") == ("markov", "gpt2", False)
