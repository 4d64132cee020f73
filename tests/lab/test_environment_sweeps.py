"""The lab beyond one task and one family (SPEC §13): decoders through the normal analysis path, the
per-environment tables, old runs.csv files, and the smoke presets of two new environments."""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import pandas as pd
import pytest

import specbound
from specbound.cli import main
from specbound_lab.grid import preset_grid
from specbound_lab.records import read_runs
from specbound_lab.tables import (
    CORRELATIONS_CSV,
    ROBUST_CSV,
    RUN_COLUMNS,
    RUNS_CSV,
    VERDICT_CSV,
    lab_results,
    read_results,
    read_runs_csv,
)
from specbound_lab.tasks import MarkovTask, ModularTask
from specbound_lab.train import Family, LabError, RunSpec, TrainSettings, train_run
from specbound_lab.trajectory import analyse_run

_TINY = TrainSettings(steps=4, save_every=2, test_samples=64)


@pytest.mark.parametrize(
    ("family", "task"), [("llama", ModularTask()), ("neox", MarkovTask(length=8)), ("gpt2", MarkovTask(length=8))]
)
def test_a_decoder_checkpoint_analysed_by_the_lab_is_specbound_analyze(
    tmp_path: Path, family: str, task: ModularTask | MarkovTask
) -> None:
    spec = RunSpec(layers=2, hidden=16, heads=2, n_train=32, task=task, family=Family(family), settings=_TINY)
    result = train_run(spec, tmp_path)
    run = analyse_run(result, tmp_path, use_cache=False)
    final = run.final
    direct = specbound.analyze(str(tmp_path / final.checkpoint), use_cache=False)
    assert direct.family == {"neox": "gpt_neox"}.get(family, family)
    assert final.ours_log10 == pytest.approx(direct.ours_log10, rel=1e-12)
    assert final.edelman_log10 == pytest.approx(direct.edelman_log10, rel=1e-12)
    assert len(run.matrices) == len(direct.profile.ids)
    if family == "llama":  # grouped-query (H / 2 key/value heads) and a gated MLP: L (2H + 3) matrices
        assert len(run.matrices) == 2 * (2 * 2 + 3)
    if task.causal:  # next-token prediction: the gap is on the loss
        assert final.loss_gap and final.gap == pytest.approx(final.test_loss - final.train_loss)
        assert math.isfinite(final.test_loss)


def test_markov_runs_need_a_decoder_and_llama_an_even_head_count() -> None:
    with pytest.raises(LabError, match="decoder family"):
        RunSpec(layers=1, hidden=16, heads=2, n_train=8, task=MarkovTask())
    with pytest.raises(LabError, match="H must be even"):
        RunSpec(layers=1, hidden=15, heads=3, n_train=8, family=Family.LLAMA)
    with pytest.raises(LabError, match="n_train"):
        RunSpec(layers=1, hidden=16, heads=2, n_train=97**2, task=ModularTask(), family=Family.GPT2)
    name = RunSpec(layers=1, hidden=16, heads=2, n_train=8, task=MarkovTask(), family=Family.GPT2).name
    assert name.startswith("lab-gpt2-markov-L1-N16-H2-n8-") and "-v" not in name  # the default chain


def test_the_threshold_presets_are_unchanged() -> None:
    from specbound_lab.grid import PRESETS

    for name, grid in PRESETS.items():
        assert preset_grid(name) == grid
    assert preset_grid("smoke", "modular", "llama").family == "llama"
    assert all(s.task.kind == "markov" for s in preset_grid("smoke", "markov", "gpt2").specs())


def _sweep(out: Path, task: str, family: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["lab", "sweep", "--preset", "smoke", "--task", task, "--family", family, "--out", str(out)])
    assert status == 0
    return printed.getvalue()


@pytest.fixture(scope="module")
def two_environments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke presets of modular/llama and markov/gpt2, each run into its own directory and then
    into a shared one (the second run of each only reads the records back)."""
    root = tmp_path_factory.mktemp("envs")
    for task, family in (("modular", "llama"), ("markov", "gpt2")):
        out = root / f"{task}-{family}"
        text = _sweep(out, task, family)
        assert f"Verdict of {task}/{family}" in text
        runs = pd.read_csv(out / RUNS_CSV)
        assert tuple(runs.columns) == RUN_COLUMNS
        assert set(runs["task"]) == {task} and set(runs["family"]) == {family}
        assert runs["gap"].notna().all() and runs["run"].nunique() == 4
        table = pd.read_csv(out / CORRELATIONS_CSV)
        assert set(table["task"]) == {task} and set(table["family"]) == {family}
        assert {"kendall_tau", "kendall_tau_ci_low", "granulated_tau"} <= set(table.columns)
        if task == "markov":
            final = runs[runs["final"]]
            assert final["gap"].to_numpy() == pytest.approx((final["test_loss"] - final["train_loss"]).to_numpy())
            assert final["optimal_loss"].to_numpy() == pytest.approx(MarkovTask().optimal_loss)
            assert final["excess_loss"].to_numpy() == pytest.approx(
                (final["test_loss"] - final["optimal_loss"]).to_numpy()
            )
        import shutil

        shutil.copytree(out / "runs", root / "both" / "runs", dirs_exist_ok=True)
    return root


def test_the_smoke_presets_of_two_new_environments(two_environments: Path) -> None:
    assert (two_environments / "modular-llama" / ROBUST_CSV).is_file()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["lab", "show", str(two_environments / "markov-gpt2")]) == 0
    text = printed.getvalue()
    assert "test - train loss" in text and "Verdict of markov/gpt2: fixed budget" in text
    # a next-token environment needs no fit, but a smoke preset's seeds are under five: shown, not counted
    assert "Robust view" in text and "shown, not counted" in text


def test_two_environments_get_one_block_each_and_a_robust_view(two_environments: Path) -> None:
    both = two_environments / "both"
    results = read_results(both)
    assert [e.environment for e in results.environments] == ["markov/gpt2", "modular/llama"]
    assert all(e.runs == 4 for e in results.environments)
    # each environment's block is the correlations of its own runs, as in its own directory
    alone = read_results(two_environments / "markov-gpt2")
    for mine, theirs in zip(results.environments[0].correlations, alone.correlations, strict=True):
        assert mine.measure == theirs.measure
        assert mine.kendall_tau == pytest.approx(theirs.kendall_tau, nan_ok=True)
    assert [v.environment for v in results.verdicts] == ["markov/gpt2", "modular/llama"]
    markov, modular = results.verdicts
    assert (markov.status, markov.fitted_runs, markov.runs) == ("fixed budget", None, 4)
    assert modular.fitted_runs is not None and modular.fitted == (modular.fitted_runs >= 0.8 * 4)
    # the robust view reads the couplings of the environments that count (fitted, five seeds) only: a smoke
    # preset's are under five seeds, so none counts
    assert not any(v.counted for v in results.verdicts) and results.robust == ()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["lab", "show", str(both)]) == 0
    text = printed.getvalue()
    assert "== environment markov/gpt2 (4 runs)" in text and "== environment modular/llama (4 runs)" in text
    assert "Verdict of markov/gpt2" in text and "Verdict of modular/llama" in text
    from specbound_lab.tables import write_tables

    write_tables(both, read_runs(both))
    table = pd.read_csv(both / CORRELATIONS_CSV)
    assert list(dict.fromkeys(zip(table["task"], table["family"], strict=True))) == [
        ("markov", "gpt2"),
        ("modular", "llama"),
    ]
    frame = pd.read_csv(both / ROBUST_CSV)
    assert {"couplings", "min_pairs", "mean_sign_error", "p90_sign_error", "max_sign_error"} <= set(frame.columns)
    assert frame.empty
    verdict = pd.read_csv(both / VERDICT_CSV)
    assert list(dict.fromkeys(zip(verdict["task"], verdict["family"], strict=True))) == [
        ("markov", "gpt2"),
        ("modular", "llama"),
    ]
    assert lab_results(results.runs).robust == results.robust


def test_an_old_runs_csv_reads_as_threshold_on_bert(tmp_path: Path) -> None:
    from specbound_lab.reference import REFERENCE_DIR

    old = tmp_path / RUNS_CSV  # as the first reference was written, before the task and family columns
    pd.read_csv(REFERENCE_DIR / RUNS_CSV).drop(columns=["task", "family"]).to_csv(old, index=False)
    frame = read_runs_csv(old)
    assert set(frame["task"]) == {"threshold"} and set(frame["family"]) == {"bert"}
    assert set(RUN_COLUMNS) <= set(frame.columns)
    results = read_results(REFERENCE_DIR)
    assert [e.environment for e in results.environments] == ["threshold/bert"]
    assert results.correlations == results.environments[0].correlations


def test_one_sweep_over_several_environments(tmp_path: Path) -> None:
    args = ["lab", "sweep", "--preset", "smoke", "--task", "modular", "markov", "--family", "gpt2", "bert"]
    args += ["--n-train", "16", "64", "--seeds", "0", "--steps", "2", "--save-every", "1", "--out", str(tmp_path)]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(args) == 0
    text = printed.getvalue()
    # markov needs a decoder: three environments, modular/gpt2, modular/bert and markov/gpt2
    assert "2 runs of bert on modular-addition" in text and "2 runs of bert on markov" not in text
    runs = pd.read_csv(tmp_path / RUNS_CSV)
    assert set(zip(runs["task"], runs["family"], strict=True)) == {
        ("modular", "gpt2"),
        ("modular", "bert"),
        ("markov", "gpt2"),
    }
    table = pd.read_csv(tmp_path / CORRELATIONS_CSV)
    assert len(table) == 3 * table["measure"].nunique()
    verdict = pd.read_csv(tmp_path / VERDICT_CSV)
    assert set(zip(verdict["task"], verdict["family"], strict=True)) == {
        ("modular", "gpt2"),
        ("modular", "bert"),
        ("markov", "gpt2"),
    }
    assert "== environment markov/gpt2 (2 runs)" in text
    with pytest.raises(SystemExit):
        main(["lab", "sweep", "--task", "nonsense", "--out", str(tmp_path)])
    assert main(["lab", "sweep", "--task", "markov", "--family", "bert", "--out", str(tmp_path)]) == 1


def test_a_modular_sweep_writes_the_grokking_tables(two_environments: Path) -> None:
    from specbound_lab.grokking import GROKKING_CSV, GROKKING_SUMMARY_CSV, tracked_measures

    modular, markov = two_environments / "modular-llama", two_environments / "markov-gpt2"
    leads = pd.read_csv(modular / GROKKING_CSV)
    assert leads["run"].nunique() == 4 and set(leads["measure"]) == set(tracked_measures())
    assert {"saturation_step", "jump_step", "grokked", "move_step", "lead", "before"} <= set(leads.columns)
    assert not leads["grokked"].any()  # 100 steps: nothing groks, and the summary says so by being empty
    assert pd.read_csv(modular / GROKKING_SUMMARY_CSV).empty
    assert not (markov / GROKKING_CSV).exists()  # only the modular task's runs are read for grokking
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["lab", "show", str(modular)]) == 0
    text = printed.getvalue()
    assert "Grokking (modular task)" in text and "no run grokked" in text


def test_the_grok_preset_is_the_known_recipe_on_the_modular_task() -> None:
    from specbound_lab.grid import GROK, PRESET_NAMES

    assert GROK in PRESET_NAMES
    grid = preset_grid(GROK, "modular", "gpt2")
    (spec, *others) = grid.specs()
    assert isinstance(spec.task, ModularTask)
    assert len(others) == 9 and [s.seed for s in grid.specs()] == list(range(10))  # SPEC §13b: ten seeds
    assert (spec.family, spec.task.kind, spec.task.modulus, spec.layers, spec.hidden, spec.heads) == (
        "gpt2", "modular", 97, 1, 64, 4,
    )  # fmt: skip
    settings = spec.settings
    assert settings.batch_size == spec.n_train == 2823  # full batch, 30 % of the 97^2 pairs
    assert (settings.weight_decay, settings.learning_rate, settings.steps, settings.save_every) == (
        1.0,
        1e-3,
        3500,
        20,  # SPEC §13b: checkpoints at most 20 steps apart around the jump
    )
    assert settings.adam_beta2 == 0.98  # the sources' optimiser: no fall back to high training error
    assert "-v" in spec.name  # another optimiser than the sweeps' default: its own run names
    with pytest.raises(LabError, match="the grok preset trains on the modular task"):
        preset_grid(GROK, "threshold", "gpt2")


#: Every environment SPEC §13 adds: the new tasks on every family, the threshold task on the decoders.
_NEW_ENVIRONMENTS = [
    (task, family)
    for task in ("threshold", "parity", "modular", "markov")
    for family in ("bert", "gpt2", "llama", "neox")
    if (task, family) != ("threshold", "bert") and not (task == "markov" and family == "bert")
]


@pytest.mark.parametrize(("task", "family"), _NEW_ENVIRONMENTS, ids=lambda v: str(v))
def test_every_new_environment_has_a_smoke_preset_of_seconds_and_a_class_preset(task: str, family: str) -> None:
    smoke, klass = preset_grid("smoke", task, family), preset_grid("class", task, family)
    assert {(s.task.kind, s.family) for s in (*smoke.specs(), *klass.specs())} == {(task, family)}
    assert len(smoke.specs()) == 4 and len(klass.specs()) in (36, 48)
    if task != "threshold":  # the threshold task's presets are the same for every family
        assert smoke.settings.steps == 100 and smoke.settings.save_every == 50


def test_one_tiny_sweep_trains_every_new_environment(tmp_path: Path) -> None:
    """Each of the eleven environments trains, is analysed and gets its block and its verdict."""
    args = ["lab", "sweep", "--preset", "smoke", "--task", "threshold", "parity", "modular", "markov"]
    args += ["--family", "bert", "gpt2", "llama", "neox", "--layers", "1", "--hidden", "16", "--n-train", "16", "32"]
    args += ["--seeds", "0", "--steps", "2", "--save-every", "2", "--out", str(tmp_path)]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(args) == 0
    runs = pd.read_csv(tmp_path / RUNS_CSV)
    environments = set(zip(runs["task"], runs["family"], strict=True))
    assert environments == {*_NEW_ENVIRONMENTS, ("threshold", "bert")}
    verdict = pd.read_csv(tmp_path / VERDICT_CSV)
    assert set(zip(verdict["task"], verdict["family"], strict=True)) == environments
    markov = runs[runs["task"] == "markov"]
    assert (markov["gap"] == markov["test_loss"] - markov["train_loss"]).all()
