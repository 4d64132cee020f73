"""Hostile input to trajectories: a trajectory's resume files are checked, and its atlas reads back.

A re-run of ``specbound trajectory`` takes a step as done only when its record names the step, the
source and the settings, its profile file has the SHA-256 the record gives, and the profile (checked
as any atlas) is named ``NAME@STEP``; the row is then recomputed from the profile. A record without
its step, another step's profile, an edited row or an edited profile are analysed again, never an
internal error and never taken as they are. Whatever the tool writes as an atlas it reads back.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from atlas_files import write_atlas
from cli_runner import run_cli
from hand_profiles import ONE_LAYER, make_profile
from tiny_models import save_model, save_tiny

import specbound
from specbound.api.runs import RunSettings, SavedStep, TrajectoryResult, checkpoint_of, run_trajectory
from specbound.core.limits import LIMITS
from specbound.core.profile import SpectralProfile
from specbound.io.atlas import AtlasError, load_atlas, save_atlas

STEPS = (2, 4, 6)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """checkpoint-2, -4 and -6 of a tiny BERT encoder whose weights move between steps."""
    out = tmp_path_factory.mktemp("trajectory") / "run"
    for step in STEPS:
        save_tiny(out / f"checkpoint-{step}", layers=1, hidden=16, heads=2, ffn=24, vocab_size=30, seed=step)
    return out


def _checkpoints(run_dir: Path) -> list[SavedStep]:
    return [checkpoint_of(run_dir / f"checkpoint-{s}", default_step=s) for s in STEPS]


def _run(run_dir: Path, out: Path) -> tuple[TrajectoryResult, list[str]]:
    lines: list[str] = []
    result = run_trajectory(_checkpoints(run_dir), out, RunSettings(name="run"), report=lines.append)
    return result, lines


def _record(out: Path, step: int) -> Path:
    return out / "steps" / f"step-{step}.json"


def test_a_clean_rerun_skips_every_step_and_writes_the_same_table(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "t"
    first, _ = _run(run_dir, out)
    table = (out / "trajectory.csv").read_bytes()
    again, lines = _run(run_dir, out)
    assert (first.analysed, again.analysed) == (3, 0)
    assert all("skipped, already done" in line for line in lines)
    assert (out / "trajectory.csv").read_bytes() == table  # recomputed from the profiles, bit for bit
    assert [p.model for p in load_atlas(out / "trajectory.npz")] == ["run@2", "run@4", "run@6"]


def _drop_step(record: dict[str, Any]) -> None:
    del record["step"]


def _step_as_text(record: dict[str, Any]) -> None:
    record["step"] = "4"


def _edit_row(record: dict[str, Any]) -> None:
    record["row"]["ours_log10"] = -99.0


def _no_digest(record: dict[str, Any]) -> None:
    del record["profile_sha256"]


def _old_schema(record: dict[str, Any]) -> None:
    record["schema"] = 1


@pytest.mark.parametrize("edit", [_drop_step, _step_as_text, _no_digest, _old_schema, lambda r: r.clear()])
def test_a_record_that_is_not_the_steps_own_is_analysed_again(
    run_dir: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], object]
) -> None:
    out = tmp_path / "t"
    _run(run_dir, out)
    table = (out / "trajectory.csv").read_bytes()
    record = json.loads(_record(out, 4).read_text())
    edit(record)
    _record(out, 4).write_text(json.dumps(record))
    again, lines = _run(run_dir, out)
    assert again.analysed == 1 and "step 4: done" in "\n".join(lines)
    assert (out / "trajectory.csv").read_bytes() == table


def test_an_edited_row_is_never_taken(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "t"
    _run(run_dir, out)
    table = (out / "trajectory.csv").read_bytes()
    record = json.loads(_record(out, 4).read_text())
    _edit_row(record)
    _record(out, 4).write_text(json.dumps(record))
    again, _ = _run(run_dir, out)
    assert again.analysed == 0  # the profile is intact: the row comes from it again
    assert (out / "trajectory.csv").read_bytes() == table
    assert -99.0 not in [row["ours_log10"] for row in again.rows]


def test_another_steps_profile_is_analysed_again(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "t"
    _run(run_dir, out)
    table = (out / "trajectory.csv").read_bytes()
    steps = out / "steps"
    shutil.copyfile(steps / "step-2.npz", steps / "step-4.npz")
    # even with the record's digest made to match, the profile is named run@2, not run@4
    record = json.loads(_record(out, 4).read_text())
    import hashlib

    record["profile_sha256"] = hashlib.sha256((steps / "step-4.npz").read_bytes()).hexdigest()
    _record(out, 4).write_text(json.dumps(record))
    again, _ = _run(run_dir, out)
    assert again.analysed == 1
    assert (out / "trajectory.csv").read_bytes() == table
    assert [p.model for p in load_atlas(out / "trajectory.npz")] == ["run@2", "run@4", "run@6"]


def test_an_edited_profile_is_analysed_again(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "t"
    _run(run_dir, out)
    table = (out / "trajectory.csv").read_bytes()
    profile = load_atlas(out / "steps" / "step-4.npz")[0]

    def scale(
        manifest: dict[str, Any], arrays: dict[str, np.ndarray]
    ) -> None:  # a careful tamperer: the atlas's own checksums are recomputed
        arrays["m0_singular_values"] = arrays["m0_singular_values"] * 2

    write_atlas(out / "steps" / "step-4.npz", [profile], edit=scale)
    assert load_atlas(out / "steps" / "step-4.npz")[0].singular_values.max() == 2 * profile.singular_values.max()
    again, _ = _run(run_dir, out)
    assert again.analysed == 1
    assert (out / "trajectory.csv").read_bytes() == table


# --- atlases the tool writes, it reads back ---------------------------------------------------------------


def _tiny(name: str) -> SpectralProfile:
    return dataclasses.replace(make_profile(ONE_LAYER, [[1.0], [1.0], [1.0], [1.0]]), model=name)


def test_a_three_hundred_step_atlas_is_written_and_read_back(tmp_path: Path) -> None:
    profiles = [_tiny(f"run@{step}") for step in range(300)]
    path = save_atlas(profiles, tmp_path / "trajectory.npz")
    assert [p.model for p in load_atlas(path)] == [p.model for p in profiles]
    shown = run_cli("atlas", "show", str(path))
    assert shown.returncode == 0, shown.stderr


@pytest.mark.parametrize(
    ("limit", "value", "words"),
    [
        ("max_atlas_models", 2, "it would hold 3 models, above the limit of 2"),
        ("max_atlas_member_bytes", 300, "its member manifest would take"),
        ("max_atlas_total_bytes", 3000, "its members would take"),
        ("max_manifest_bytes", 100, "its manifest would be too long"),
        ("max_atlas_file_bytes", 1000, "it would take"),
    ],
)
def test_an_atlas_above_a_limit_is_refused_before_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, value: int, words: str
) -> None:
    import specbound.io.atlas as atlas_module

    monkeypatch.setattr(atlas_module, "LIMITS", dataclasses.replace(LIMITS, **{limit: value}))
    path = tmp_path / "a.npz"
    with pytest.raises(AtlasError, match=r"a\.npz is not written") as caught:
        save_atlas([_tiny(f"run@{i}") for i in range(3)], path)
    assert words in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file left


def test_each_limit_checked_on_writing_is_one_the_reader_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Just below each limit the writer writes, and the reader (with the same limits) reads it back."""
    import specbound.io.atlas as atlas_module

    profiles = [_tiny(f"run@{i}") for i in range(3)]
    path = save_atlas(profiles, tmp_path / "a.npz")
    with np.load(path, allow_pickle=False) as data:
        members = {key: data[key] for key in data.files}
    from specbound.io.atlas import _npy_bytes

    sizes = {key: _npy_bytes(array) for key, array in members.items()}
    tight = dataclasses.replace(
        LIMITS,
        max_atlas_models=3,
        max_atlas_member_bytes=max(sizes.values()),
        max_atlas_total_bytes=sum(sizes.values()),
        max_atlas_file_bytes=path.stat().st_size,
    )
    monkeypatch.setattr(atlas_module, "LIMITS", tight)
    path.unlink()
    assert [p.model for p in load_atlas(save_atlas(profiles, path))] == ["run@0", "run@1", "run@2"]


def test_a_trajectory_above_the_atlas_limits_keeps_its_table_and_step_files(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import specbound.io.atlas as atlas_module

    out = tmp_path / "t"
    _run(run_dir, out)
    assert (out / "trajectory.npz").is_file()
    monkeypatch.setattr(atlas_module, "LIMITS", dataclasses.replace(LIMITS, max_atlas_models=2))
    result, lines = _run(run_dir, out)
    assert [row["step"] for row in result.rows] == [2, 4, 6]
    assert not (out / "trajectory.npz").exists()  # never an older atlas beside a newer table
    assert [f.name for f in result.files] == ["trajectory.csv"]
    assert any("trajectory.npz is not written: it would hold 3 models" in line for line in lines)
    for step in STEPS:
        assert load_atlas(out / "steps" / f"step-{step}.npz")[0].model == f"run@{step}"


def test_the_rows_equal_an_analysis_of_each_step(run_dir: Path, tmp_path: Path) -> None:
    result, _ = _run(run_dir, tmp_path / "t")
    for row in result.rows:
        direct = specbound.analyze(run_dir / f"checkpoint-{row['step']}", use_cache=False)
        assert row["ours_log10"] == pytest.approx(direct.ours_log10, rel=1e-15)


# --- records keyed by the files' contents, the reference checked once (issue 59) ------------------------


def _replace_weights(directory: Path, seed: int) -> None:
    """Weights of the same sizes and names, other values: what a path and settings cannot tell apart."""
    replacement = directory.parent / f"replacement-{seed}"
    save_tiny(replacement, layers=1, hidden=16, heads=2, ffn=24, vocab_size=30, seed=seed)
    for path in replacement.iterdir():
        shutil.copyfile(path, directory / path.name)
    shutil.rmtree(replacement)


def test_a_step_whose_weights_were_replaced_is_analysed_again(run_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    out = tmp_path / "t"
    _run(run, out)
    _replace_weights(run / "checkpoint-4", seed=40)
    again, lines = _run(run, out)
    assert again.analysed == 1 and "step 4: done" in "\n".join(lines)
    row = next(r for r in again.rows if r["step"] == 4)
    expected = specbound.analyze(str(run / "checkpoint-4"), use_cache=False)
    assert row["ours_log10"] == pytest.approx(expected.ours_log10, rel=1e-12)


def test_a_reference_whose_weights_were_replaced_analyses_every_step_again(run_dir: Path, tmp_path: Path) -> None:
    run, base = tmp_path / "run", tmp_path / "base"
    shutil.copytree(run_dir, run)
    save_tiny(base, layers=1, hidden=16, heads=2, ffn=24, vocab_size=30, seed=99)
    out = tmp_path / "t"
    settings = RunSettings(name="run", reference=str(base))
    run_trajectory(_checkpoints(run), out, settings)
    _replace_weights(base, seed=98)
    again = run_trajectory(_checkpoints(run), out, settings)
    assert again.analysed == 3
    expected = specbound.analyze(str(run / "checkpoint-6"), base=str(base), use_cache=False)
    row = next(r for r in again.rows if r["step"] == 6)
    assert row["ours_centred_log10"] == pytest.approx(expected.ours_centred_log10, rel=1e-12)
    record = json.loads(_record(out, 6).read_text())
    assert set(record["fingerprints"]) == {"source", "reference"} and all(record["fingerprints"].values())


def test_a_logged_loss_beyond_64_bits_is_a_number_not_an_internal_error(run_dir: Path, tmp_path: Path) -> None:
    """trainer_state.json is JSON: a loss logged as the whole number 10^20 is read as the number it is."""
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    state = {"global_step": 4, "log_history": [{"step": 4, "loss": 10**20, "eval_loss": 10**400}]}
    (run / "checkpoint-4" / "trainer_state.json").write_text(json.dumps(state))
    out = tmp_path / "t"
    result = run_cli("trajectory", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    row = next(r for r in csv.DictReader(io.StringIO((out / "trajectory.csv").read_text())) if r["step"] == "4")
    assert float(row["loss"]) == 1e20 and row.get("eval_loss", "") == ""  # beyond float64's range: not logged


@pytest.fixture
def adapter_run(tmp_path: Path) -> Path:
    """A project as peft leaves it (``models/my-base``, ``models/my-lora`` recording the relative path
    ``models/my-base``) and a run of two adapter checkpoints under ``outputs/run`` that record it too."""
    pytest.importorskip("peft")
    from peft_projects import ADAPTER, make_project

    root = make_project(tmp_path / "project")
    for step in (1, 2):
        shutil.copytree(root / ADAPTER, root / "outputs" / "run" / f"checkpoint-{step}")
    return root


def _adapter_steps(root: Path, out: Path) -> TrajectoryResult:
    steps = [checkpoint_of(root / "outputs" / "run" / f"checkpoint-{s}", default_step=s) for s in (1, 2)]
    return run_trajectory(steps, out, RunSettings(name="run"))


@pytest.mark.parametrize("elsewhere_has_a_base", [True, False])
def test_an_adapter_steps_record_holds_the_base_the_analysis_uses(
    adapter_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere_has_a_base: bool
) -> None:
    """A LoRA step's fingerprint covers the base the analysis merges it into, found as the loader
    finds it (beside the adapter's folders, before the working directory): run from another folder,
    a re-run skips the unchanged steps (their fingerprints were unknown, so every re-run analysed
    every step again), and replacing the real base's weights analyses them again (a folder holding a
    ``models/my-base`` of its own gave the fingerprint of that one, and the old numbers were kept)."""
    from peft_projects import BASE, llama

    elsewhere = tmp_path / "elsewhere"
    if elsewhere_has_a_base:
        save_model(llama(5), elsewhere / BASE)
    elsewhere.mkdir(exist_ok=True)
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "t"
    assert _adapter_steps(adapter_run, out).analysed == 2
    assert _adapter_steps(adapter_run, out).analysed == 0  # nothing changed: both skipped
    record = json.loads(_record(out, 2).read_text())
    assert record["fingerprints"]["source"] is not None
    save_model(llama(7), adapter_run / BASE)  # the base the analysis really uses, same sizes
    again = _adapter_steps(adapter_run, out)
    assert again.analysed == 2
    expected = specbound.analyze(str(adapter_run / "outputs" / "run" / "checkpoint-2"), use_cache=False)
    row = next(r for r in again.rows if r["step"] == 2)
    assert row["ours_log10"] == pytest.approx(expected.ours_log10, rel=1e-12)


def test_an_unreadable_reference_is_one_line_before_any_step(run_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    out = tmp_path / "t"
    result = run_cli("trajectory", str(run_dir), "--out", str(out), "--reference", str(broken))
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("specbound") and "the reference" in line and "cannot be used" in line
    assert not out.exists()  # nothing written


def test_a_reference_of_other_dimensions_is_one_line_before_any_step(run_dir: Path, tmp_path: Path) -> None:
    wider = tmp_path / "wider"
    save_tiny(wider, layers=1, hidden=32, heads=2, ffn=24, vocab_size=30, seed=1)
    with pytest.raises(specbound.SpecboundError, match="hidden_size is 32 there and 16 here") as caught:
        run_trajectory(_checkpoints(run_dir), tmp_path / "t", RunSettings(name="run", reference=str(wider)))
    assert "\n" not in str(caught.value) and not (tmp_path / "t").exists()
