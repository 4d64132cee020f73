"""The Training runs page: a trajectory from the operator's directory, drawn from its stored spectra."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from app_harness import run_clean

from dashboard import runs as service
from dashboard.safety import SERVER_PATHS_ENV
from dashboard.text import format_log_value
from specbound.architecture import ModelShape
from specbound.atlas import save_atlas
from specbound.bounds import BoundAnalysis
from specbound.logspace import LOG10_E, to_log10
from specbound.twin import random_twin


def _trajectory(directory: Path) -> list:
    """A run of three steps (random twins of growing σ, as if training stretched the weights)."""
    directory.mkdir(parents=True)
    profiles = []
    for step, sigma in ((0, 0.02), (50, 0.05), (100, 0.2)):
        twin = random_twin(ModelShape(2, 32, 4, 48), model="x", initializer_range=sigma, seed=step)
        profiles.append(twin.__class__(f"tiny-run@{step}", twin.revision, twin.shape, twin.singular_values,
                                       twin.full_dims, twin.norm_21, twin.norm_11))  # fmt: skip
    save_atlas(profiles, directory / "trajectory.npz")
    with open(directory / "trajectory.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", "loss", "eval_loss"])
        writer.writerows([[0, 0.7, 0.71], [50, 0.5, 0.6], [100, 0.3, 0.55]])
    return profiles


def test_the_page_says_how_to_get_a_trajectory_when_there_is_none(landing_app, monkeypatch) -> None:
    monkeypatch.delenv(service.RUNS_DIR_ENV, raising=False)
    landing_app.switch_page("pages/runs.py")
    run_clean(landing_app)
    assert any("No trajectory here yet" in i.value for i in landing_app.info)


def test_a_trajectory_of_the_operators_directory_is_drawn_step_by_step(landing_app, tmp_path, monkeypatch) -> None:
    profiles = _trajectory(tmp_path / "runs" / "tiny")
    monkeypatch.setenv(service.RUNS_DIR_ENV, str(tmp_path / "runs"))
    at = landing_app
    at.switch_page("pages/runs.py")
    run_clean(at)
    assert at.selectbox(key="runs_run").value == "server:tiny-run"
    assert at.select_slider(key="runs_step").value == 100  # opens at the last step
    for step, profile in zip((0, 50, 100), profiles, strict=True):
        at.select_slider(key="runs_step").set_value(step)
        run_clean(at)
        expected = BoundAnalysis.from_profile(profile)
        (ours,) = [m.value for m in at.metric if m.label == "Ours at p*"]
        assert ours == format_log_value(float(to_log10(expected.optimal.log_total)) / LOG10_E)
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Losses the Trainer logged" in t for t in titles)
    assert any("Proxies through training" in t for t in titles)


def test_an_uploaded_atlas_is_grouped_into_runs_by_member_name(tmp_path) -> None:
    profiles = _trajectory(tmp_path / "one")
    (run,) = service.uploaded_runs(tuple(profiles))
    assert (run.name, list(run.steps), run.origin) == ("tiny-run", [0, 50, 100], service.UPLOADED)
    frame = service.trajectory_frame.__wrapped__(run.key, run)  # type: ignore[attr-defined]
    assert list(frame["step"]) == [0, 50, 100]
    assert frame["ours_log10"].tolist() == pytest.approx(
        [float(to_log10(BoundAnalysis.from_profile(p).optimal.log_total)) for p in profiles], rel=1e-15
    )


# --- hostile runs (third round): one bad run never takes the page down --------------------------------


def _named(profile, name: str):
    import dataclasses

    return dataclasses.replace(profile, model=name)


def test_bad_steps_and_losses_cost_only_themselves(landing_app, tmp_path, monkeypatch) -> None:
    runs = tmp_path / "runs"
    profiles = _trajectory(runs / "good")
    bad = runs / "bad"
    bad.mkdir()
    steps = ["abc", "²", "١٢", "9" * 5000, "-3", " 7", "12"]
    save_atlas([_named(profiles[i % 3], f"odd-run@{s}") for i, s in enumerate(steps)], bad / "trajectory.npz")
    with open(bad / "trajectory.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", "loss", "eval_loss"])
        writer.writerows([["abc", 0.5, 0.6], ["²", 0.5, 0.6], ["9" * 5000, 0.1, 0.1], [12, "abc", "inf"]])
    server = "/srv/specbound/models/private-bert"
    save_atlas([_named(profiles[0], f"{server}@5"), _named(profiles[1], f"{server}@10")], runs / "callback.npz")
    monkeypatch.setenv(service.RUNS_DIR_ENV, str(runs))  # the operator's setting; visitors name no path
    monkeypatch.delenv(SERVER_PATHS_ENV)
    at = landing_app
    at.switch_page("pages/runs.py")
    run_clean(at)
    options = at.selectbox(key="runs_run").options
    assert any("tiny-run" in o for o in options)
    assert any("odd-run (1 step" in o for o in options)  # only "12" is a step
    assert not any("/srv/" in o for o in options) and any("private-bert (2 steps" in o for o in options)
    for key in list(service.operator_runs()):
        at.selectbox(key="runs_run").set_value(key.key)
        run_clean(at)  # no exception on any run
    (odd,) = [r for r in service.operator_runs() if r.name == "odd-run"]
    assert list(odd.steps) == [12] and odd.logged == {12: {}}  # "abc" and "inf" are no losses


@pytest.mark.parametrize(
    ("text", "step"),
    [("12", 12), ("0", 0), ("abc", None), ("²", None), ("١٢", None), ("9" * 5000, None), ("-3", None), (" 7", None),
     ("1e3", None), ("", None), (True, None), (12.0, 12), (12.5, None), (float("nan"), None), (7, 7), (-1, None)],
)  # fmt: skip
def test_a_step_is_ascii_digits_only(text, step) -> None:
    from specbound.runs import parse_step

    assert parse_step(text) == step
