"""The reference shipped in the package parses, everything in it is labelled as a lab model, and re-training
two of its runs lands within the stated tolerance of what it ships."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from specbound.cli import main
from specbound.core.bounds import BoundAnalysis
from specbound.io.atlas import load_atlas, read_manifest
from specbound.io.models import parse_miniature_alias
from specbound_lab import reference
from specbound_lab.records import LAB_LABEL
from specbound_lab.registry import centred_measures, correlated_measures, direction_measures
from specbound_lab.sweep import run_sweep
from specbound_lab.tables import CORRELATIONS_CSV, RUN_COLUMNS, RUNS_CSV, measure_value, read_results, read_runs_csv
from specbound_lab.train import LabError
from specbound_lab.trajectory import DEFAULT_BOUNDS, RunTrajectory

if TYPE_CHECKING:
    from .conftest import SmokeSweep

#: The columns of SPEC §13 that a runs.csv or correlations.csv written before it lacks.
#: Columns a rewritten runs.csv has beside a shipped one written before them: the environment, the loss
#: columns, the fine-tuning axis, and the CENTRED measures (empty: they need the weights, not shipped).
_NEW_COLUMNS = (
    "task",
    "family",
    "test_loss",
    "optimal_loss",
    "excess_loss",
    "fine_tuning",
    "base_task_error",  # forgetting, recorded by fine-tunes of the shipped base
    *(c for m in centred_measures() for c in (m.column, f"{m.name}_per_n_log10")),
    *(m.column for m in direction_measures()),  # intruder dimensions (SPEC §14b)
)


def _check_reference(directory: Path, shipped: reference.ShippedReference = reference.THRESHOLD_REFERENCE) -> None:
    manifest = reference.read_reference_manifest(directory)
    if shipped.family == "bert":
        assert manifest["label"] == LAB_LABEL and "not a BERT Miniature" in manifest["label"]
    else:
        assert manifest["label"] == f"small {shipped.models} trained by the specbound lab"
    assert manifest["weights_shipped"] is False and manifest["regenerate"] == shipped.regenerate
    results = read_results(directory)
    assert len(results.runs) == manifest["runs"] > 0
    assert all(r.name.startswith("lab-") and parse_miniature_alias(r.name) is None for r in results.runs)
    assert {(r.spec.task.kind, r.spec.family) for r in results.runs} == {(shipped.task, shipped.family)}
    runs = read_runs_csv(directory / RUNS_CSV)  # the first reference's file predates the task and family columns
    assert tuple(runs.columns) == RUN_COLUMNS and set(runs["task"]) == {shipped.task}
    assert len(runs) == sum(len(r.steps) for r in results.runs)
    assert runs["run"].str.startswith("lab-").all()
    table = pd.read_csv(directory / CORRELATIONS_CSV)
    recorded = [m.name for m in correlated_measures() if any(math.isfinite(measure_value(r, m)) for r in results.runs)]
    assert list(table["measure"]) == recorded  # the measures its runs recorded, in registration order
    assert {"ours", "edelman", "inverse_n", "params"} <= set(recorded)
    for row, computed in zip(table.itertuples(), results.correlations, strict=True):
        assert row.runs == computed.runs == len(results.runs)
        assert row.kendall_tau == pytest.approx(computed.kendall_tau, nan_ok=True)
        assert row.granulated_tau == pytest.approx(computed.granulated_tau, nan_ok=True)
    atlas = directory / reference.ATLAS_FILE
    profiles = load_atlas(atlas)
    assert [p.model for p in profiles] == manifest["atlas_models"]
    names = {r.name: r for r in results.runs}
    for profile in profiles:
        run = names[profile.model]
        assert "/" not in profile.model and parse_miniature_alias(profile.model) is None
        assert (profile.shape.num_layers, profile.shape.hidden_size) == (run.spec.layers, run.spec.hidden)
    assert len(read_manifest(atlas).entries) == len({(r.spec.layers, r.spec.hidden) for r in results.runs})
    assert not list(directory.rglob("*.safetensors"))
    _check_step_atlases(directory, results.runs)


def _check_step_atlases(directory: Path, runs: tuple[RunTrajectory, ...]) -> None:
    """Every saved step of every run has its profile (by name, in step order), and a step's profile is
    found by :func:`reference.step_profile` (the first, a middle and the last step of each run: each
    lookup reads the run's atlas again, and the grokking runs have 176 steps)."""
    for run in runs:
        profiles = load_atlas(directory / "runs" / run.name / reference.STEPS_ATLAS_FILE)
        assert [p.model for p in profiles] == [reference.step_member(run.name, s.step) for s in run.steps]
        for k in sorted({0, len(run.steps) // 2, len(run.steps) - 1}):
            assert reference.step_profile(directory, run, run.steps[k].step).model == profiles[k].model
        for record, profile in zip(run.steps, profiles, strict=True):  # every step's terms are the record's
            analysis = BoundAnalysis.from_profile(profile, DEFAULT_BOUNDS)
            assert analysis.evaluate().log_total / math.log(10) == pytest.approx(record.ours_log10, rel=1e-12)
            assert analysis.log_edelman / math.log(10) == pytest.approx(record.edelman_log10, rel=1e-12)
            assert tuple(float(p) for p in analysis.p_opt) == record.p_opt
    with pytest.raises(LabError, match="no saved step 7"):
        reference.step_profile(directory, runs[0], 7)


def test_export_of_the_smoke_sweep(smoke_sweep: SmokeSweep, tmp_path: Path) -> None:
    written = reference.export_reference(smoke_sweep.out, tmp_path / "ref", sweep_seconds=12.5)
    assert written[0].name == reference.MANIFEST_FILE
    _check_reference(tmp_path / "ref")
    assert reference.read_reference_manifest(tmp_path / "ref")["sweep_seconds"] == 12.5
    reference.export_reference(smoke_sweep.out, tmp_path / "ref")  # again, untimed: the same runs keep it
    assert reference.read_reference_manifest(tmp_path / "ref")["sweep_seconds"] == 12.5
    # a lab directory with checkpoints and no steps atlas: the profile comes from the checkpoint
    run = read_results(smoke_sweep.out).runs[0]
    from_checkpoint = reference.step_profile(smoke_sweep.out, run, run.final.step)
    from_atlas = reference.step_profile(tmp_path / "ref", run, run.final.step)
    assert from_checkpoint.model == from_atlas.model == f"{run.name}@{run.final.step}"
    assert (from_checkpoint.singular_values == from_atlas.singular_values).all()
    (profile,) = load_atlas(tmp_path / "ref" / reference.ATLAS_FILE)  # smoke: one depth x width cell
    assert profile.model == "lab-L2-N32-H2-n512-q0-s0-t200"  # noise 0, first seed, largest n


@pytest.mark.parametrize("shipped", reference.EXPORTED, ids=lambda s: s.key)
def test_every_shipped_reference_parses_and_is_labelled_as_lab_models(shipped: reference.ShippedReference) -> None:
    _check_reference(shipped.directory, shipped)
    size = sum(p.stat().st_size for p in shipped.directory.rglob("*") if p.is_file())
    # the grokking seeds keep the spectra of all 176 checkpoints each (its rule reads every step, 20
    # apart); every other reference keeps at most a few checkpoints per run
    assert size < (9_000_000 if shipped is reference.GROKKING_REFERENCE else 5_000_000)


def test_the_decoder_reference_shows_trained_decoders_whose_p_star_moves() -> None:
    """SPEC §13: offline, a visitor sees trained decoders with varying p*, their gap on the loss."""
    runs = reference.load_reference(reference.DECODER_REFERENCE_DIR).runs
    assert len(runs) == 36 and {r.spec.family for r in runs} == {"gpt2"}
    assert all(r.final.loss_gap and r.final.gap == r.final.test_loss - r.final.train_loss for r in runs)
    assert all(set(r.steps[0].p_opt) == {2.0} for r in runs)  # at initialisation every p* is 2 ...
    final = [p for r in runs for p in r.final.p_opt]
    assert min(final) == 0.0 and sum(p < 2.0 for p in final) > len(final) / 2  # ... and training moves most


def test_an_export_names_the_shipped_reference_of_its_environment_and_refuses_the_others() -> None:
    assert reference.shipped_reference("class") is reference.THRESHOLD_REFERENCE
    assert reference.shipped_reference("class", "markov", "gpt2") is reference.DECODER_REFERENCE
    assert reference.shipped_reference("grok", "modular", "gpt2") is reference.GROKKING_REFERENCE
    assert reference.THRESHOLD_REFERENCE.regenerate == reference.REGENERATE
    with pytest.raises(LabError, match="no reference is shipped for --preset class --task modular --family llama"):
        reference.shipped_reference("class", "modular", "llama")  # it would have replaced the threshold reference


def test_the_shipped_reference_parses_and_is_labelled_as_lab_models(capsys: pytest.CaptureFixture[str]) -> None:
    _check_reference(reference.REFERENCE_DIR)
    assert main(["lab", "show"]) == 0
    printed = capsys.readouterr().out
    assert "trained by the specbound lab" in printed and "not BERT Miniatures" in printed
    manifest = reference.read_reference_manifest()
    assert manifest["runs"] == len(reference.load_reference().runs) >= 40
    assert "sparse-threshold" in manifest["task"]
    size = sum(p.stat().st_size for p in reference.REFERENCE_DIR.rglob("*") if p.is_file())
    assert size < 5_000_000


#: Two of the cheapest reference runs (one layer, width 32), one with label noise.
RETRAINED = ("lab-L1-N32-H2-n100-q0-s0-t500", "lab-L1-N32-H2-n400-q0.1-s1-t500")


@pytest.mark.slow  # trains two reference runs (about 15 s on 2 cores)
def test_retrained_reference_runs_land_within_the_stated_tolerance(tmp_path: Path) -> None:
    shipped = reference.load_reference()
    same_platform = reference.read_reference_manifest().get("platform") == reference.platform_fingerprint()
    specs = [shipped.run(name).spec for name in RETRAINED]
    retrained = run_sweep(specs, tmp_path).results
    for name in RETRAINED:
        run, original = retrained.run(name), shipped.run(name)
        assert [s.step for s in run.steps] == [s.step for s in original.steps]
        start = reference.retrain_deviations(run, original, step=0)
        for quantity, difference in start.items():  # before the optimiser: the same to rounding
            assert difference <= 1e-9 * max(1.0, abs(original.steps[0].value(quantity))), quantity
        final = reference.retrain_deviations(run, original)
        assert set(final) == set(reference.RETRAIN_TOLERANCE)  # every measure was compared
        if same_platform:  # the machine that made the reference repeats it bit for bit
            # (the measures registered since the reference was made are compared where it has them)
            pairs = zip(run.steps, original.steps, strict=True)
            steps = tuple(replace(s, values={k: s.values[k] for k in o.values}) for s, o in pairs)
            assert steps == original.steps, f"{name} no longer repeats exactly on the reference's platform"
        for quantity, difference in final.items():
            assert difference <= reference.RETRAIN_TOLERANCE[quantity], (name, quantity, difference)


def _same_numbers(shipped: object, now: object, where: str) -> None:
    """JSON values alike: floats to 1e-12 (relative, or absolute near zero), everything else exactly."""
    if isinstance(shipped, dict):
        assert isinstance(now, dict) and shipped.keys() == now.keys(), where
        for key in shipped:
            _same_numbers(shipped[key], now[key], f"{where}.{key}")
    elif isinstance(shipped, list):
        assert isinstance(now, list) and len(now) == len(shipped), where
        for i, (a, b) in enumerate(zip(shipped, now, strict=True)):
            _same_numbers(a, b, f"{where}[{i}]")
    elif isinstance(shipped, float):
        assert isinstance(now, float) and math.isclose(now, shipped, rel_tol=1e-12, abs_tol=1e-12), where
    else:
        assert now == shipped, where


def test_remeasure_recomputes_only_the_named_measures_from_the_stored_spectra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped files hold what the code computes now: to rounding on any machine (another BLAS kernel
    moves the last bit of a bootstrap interval), and bit for bit between two recomputations in one run."""
    import json
    import shutil

    copies = [tmp_path / "ref", tmp_path / "again"]
    for copy in copies:
        shutil.copytree(reference.REFERENCE_DIR, copy)
        assert main(["lab", "remeasure", str(copy), "--measure", "alpha", "alpha_hat", "alpha_skipped"]) == 0
        assert "recomputed alpha, alpha_hat, alpha_skipped" in capsys.readouterr().out
    copy = copies[0]
    for path in reference.REFERENCE_DIR.rglob("*"):
        if not path.is_file():
            continue
        relative = path.relative_to(reference.REFERENCE_DIR)
        assert (copies[1] / relative).read_bytes() == (copy / relative).read_bytes(), relative
        if path.suffix == ".csv":  # rewritten with the task, family and loss columns beside the shipped ones
            shipped, rewritten = pd.read_csv(path), pd.read_csv(copy / relative)
            pd.testing.assert_frame_equal(rewritten[shipped.columns], shipped, rtol=1e-12, atol=1e-12)
            assert set(rewritten.columns) - set(shipped.columns) <= set(_NEW_COLUMNS)
        elif path.suffix == ".json":
            _same_numbers(json.loads(path.read_text()), json.loads((copy / relative).read_text()), str(relative))
        else:  # the spectra themselves are read, never rewritten
            assert (copy / relative).read_bytes() == path.read_bytes(), relative
    run = read_results(copy).runs[0]
    with pytest.raises(LabError, match="'sharpness' cannot be recomputed from stored spectra"):
        reference.remeasure(copy, ("sharpness",))
    assert read_results(copy).runs[0] == run


def _stderr_line(capsys: pytest.CaptureFixture[str]) -> str:
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


def test_remeasure_refuses_in_the_cli_s_one_line_and_names_the_file_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A measure that is not recomputable is refused by name, with the ones that are, in the line every
    error of the CLI has; a write that fails names the file (a directory where runs.csv goes)."""
    import shutil

    copy = tmp_path / "class"
    shutil.copytree(reference.REFERENCE_DIR, copy)
    for run in sorted((copy / "runs").iterdir())[1:]:  # one run of a few steps is enough to write the tables
        shutil.rmtree(run)
    assert main(["lab", "remeasure", str(copy), "--measure", "alpha", "no_such_measure"]) == 1
    line = _stderr_line(capsys)
    assert line.startswith("specbound: error: 'no_such_measure' cannot be recomputed from stored spectra"), line
    assert "alpha_hat" in line and str(tmp_path) not in line
    (copy / "runs.csv").unlink()
    (copy / "runs.csv").mkdir()
    assert main(["lab", "remeasure", str(copy), "--measure", "alpha"]) == 1
    assert _stderr_line(capsys) == "specbound: error: runs.csv: Is a directory"
    assert not list(copy.glob(".specbound-tmp.*"))  # the temporary file went with the failed write


def test_a_shipped_run_keeps_its_first_last_and_evenly_spaced_steps() -> None:
    """A run at the fit preset's cap saved 61 checkpoints: a reference keeps eleven, the final one (what
    every verdict reads) always; the grokking reference, whose rule needs every step, keeps them all."""
    from dataclasses import replace

    run = reference.load_reference().runs[0]
    long = replace(run, steps=tuple(replace(run.steps[0], step=100 * k) for k in range(61)))
    kept = reference.shipped_steps(long, 11)
    assert [s.step for s in kept.steps] == list(range(0, 6001, 600)) and kept.final == long.final
    assert reference.shipped_steps(long, None) is long and reference.shipped_steps(run, 11) is run
    assert reference.FIT_REFERENCE.max_steps == 11 and reference.GROKKING_REFERENCE.max_steps is None
    fit = reference.load_reference(reference.FIT_REFERENCE_DIR)
    assert all(len(r.steps) <= 11 for r in fit.runs) and reference.read_reference_manifest(reference.FIT_REFERENCE_DIR)[
        "steps_per_run"
    ].startswith("at most 11")
