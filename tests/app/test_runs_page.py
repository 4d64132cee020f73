"""The Training runs page: a trajectory from the operator's directory, drawn from its stored spectra."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from app_harness import run_clean

from dashboard.safety import SERVER_PATHS_ENV
from dashboard.services import runs as service
from dashboard.wording.text import plain
from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.logspace import LOG10_E, to_log10
from specbound.core.profile import MatrixId
from specbound.io.atlas import save_atlas
from specbound.present.numbers import format_log
from specbound.studies.twin import random_twin


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


def test_without_a_trajectory_of_ones_own_the_page_says_how_and_shows_the_shipped_runs(
    landing_app, monkeypatch
) -> None:
    monkeypatch.delenv(service.RUNS_DIR_ENV, raising=False)
    landing_app.switch_page("pages/runs.py")
    run_clean(landing_app)
    assert any("No trajectory of your own here yet" in i.value for i in landing_app.info)
    options = landing_app.selectbox(key="runs_run").options
    # the grokking preset's ten seeds, then one run per depth x width of the decoder and threshold sweeps
    assert len(options) == 10 + 4 + 4 and all(o.startswith("small ") and o.endswith(", shipped)") for o in options)
    assert sum("GPT-2 decoder trained by the lab on the modular addition task" in o for o in options) == 10
    assert sum("GPT-2 decoder trained by the lab on the Markov next-token task" in o for o in options) == 4
    # each by what it is, never by its run id: the ten grokking seeds differ by their seed alone
    records = [run.lab for run in service.shipped_runs()]
    assert not any(record.name in o for record, o in zip(records, options, strict=True))
    assert [f"seed {r.spec.seed}," in o and f"L = {r.spec.layers}, N = {r.spec.hidden}" in o
            for r, o in zip(records, options, strict=True)] == [True] * len(options)  # fmt: skip
    assert len(set(options)) == len(options)


def test_a_shipped_grokking_run_is_drawn_with_its_jump_and_its_measured_accuracies(
    landing_app, monkeypatch, figure_titled
) -> None:
    """SPEC §13: the Training runs page draws a grokking run offline: accuracies and every proxy on one
    step axis, the fit and the jump marked, the rule's reading in words; the proxies from its spectra."""
    from dashboard.wording.vocabulary import measure_name
    from specbound_lab import reference
    from specbound_lab.grokking import grokking_runs, run_sentence

    monkeypatch.delenv(service.RUNS_DIR_ENV, raising=False)
    at = landing_app
    at.switch_page("pages/runs.py")
    run_clean(at)
    record = reference.load_reference(reference.GROKKING_REFERENCE_DIR).runs[1]
    at.selectbox(key="runs_run").set_value(f"{service.SHIPPED}:{record.name}")
    run_clean(at)
    assert not at.error
    (grokking,) = grokking_runs([record])
    assert grokking.event.grokked and grokking.seed == 1
    (sentence,) = [m.value for m in at.markdown if "Training accuracy reaches" in m.value]
    assert sentence == plain(run_sentence(grokking, measure_name))
    assert f"test accuracy moves at step {grokking.event.jump_step:,}" in run_sentence(grokking)
    figure = figure_titled(at, "seed 1 groks")
    names = [t["name"] for t in figure["data"]]
    assert names[:2] == ["train accuracy", "test accuracy"]
    assert list(figure["data"][1]["y"]) == pytest.approx(list(grokking.test_accuracy), rel=1e-12)
    marked = sorted(shape["x0"] for shape in figure["layout"]["shapes"] if shape["xref"] == "x")
    assert marked == [grokking.event.saturation_step, grokking.event.jump_step]
    errors = figure_titled(at, "Errors and gap")
    assert next(t["y"] for t in errors["data"] if t["name"] == "test error (± 1 s.e.)") == pytest.approx(
        [s.test_error for s in record.steps], rel=1e-12
    )
    final = BoundAnalysis.from_profile(
        reference.step_profile(reference.GROKKING_REFERENCE_DIR, record, record.final.step)
    )
    (ours,) = [m.value for m in at.metric if m.label == "Ours at p*"]
    assert ours == format_log(float(to_log10(final.optimal.log_total)) / LOG10_E)
    assert float(to_log10(final.optimal.log_total)) == pytest.approx(record.final.ours_log10, rel=1e-12)


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
        assert ours == format_log(float(to_log10(expected.optimal.log_total)) / LOG10_E)
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Losses the Trainer logged" in t for t in titles)
    assert any("Proxies through training" in t for t in titles)


def test_an_uploaded_atlas_is_grouped_into_runs_by_member_name(tmp_path) -> None:
    profiles = _trajectory(tmp_path / "one")
    (run,) = service.uploaded_runs(tuple(profiles))
    assert (run.name, list(run.steps), run.origin) == ("tiny-run", [0, 50, 100], service.UPLOADED)
    frame = service.trajectory_csv_frame.__wrapped__(run.key, run)  # type: ignore[attr-defined]
    assert list(frame["step"]) == [0, 50, 100]
    assert frame["ours_log10"].tolist() == pytest.approx(
        [float(to_log10(BoundAnalysis.from_profile(p).optimal.log_total)) for p in profiles], rel=1e-15
    )


# --- hostile runs: one bad run never takes the page down --------------------------------


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
    from specbound.api.runs import parse_step

    assert parse_step(text) == step


# --- runs of every shape: stacks and experts come from each step's model (SPEC §12) -------------------


def _twin_of(shape: ModelShape, name: str, seed: int):
    import dataclasses

    return dataclasses.replace(random_twin(shape, model="x", initializer_range=0.05, seed=seed), model=name)


#: An encoder-decoder (2 + 2 layers, T5's relu MLP), a mixture of experts (Mixtral's layout) and a dense model.
T5_SHAPE = ModelShape(4, 32, 4, 48, encoder_layers=2, family="t5", activation="relu")
MOE_SHAPE = ModelShape(2, 32, 4, 48, num_kv_heads=2, mlp="gated", family="mixtral", activation="silu",
                       num_experts=4, experts_per_token=2)  # fmt: skip
DENSE_SHAPE = ModelShape(2, 32, 4, 48)


@pytest.mark.parametrize(
    ("shapes", "panels"),
    [
        ((T5_SHAPE, T5_SHAPE), [["QK", "V", "MLP"], ["QK", "V", "QK_x", "V_x", "MLP"]]),
        ((MOE_SHAPE, MOE_SHAPE), [["p* of QK heads"], ["p* of V heads"], ["p* per layer"]]),
        ((DENSE_SHAPE, MOE_SHAPE, T5_SHAPE), [["QK", "V", "MLP"], ["QK", "V", "QK_x", "V_x", "MLP"]]),
    ],
    ids=["encoder-decoder", "mixture of experts", "dense, experts and stacks in one run"],
)
def test_a_run_of_any_shape_draws_its_steps_stacks_and_experts(
    landing_app, tmp_path, monkeypatch, plotly_specs, shapes, panels
) -> None:
    """An encoder-decoder's step draws the encoder's and the decoder's p* maps side by side (the
    decoder's with QK_x and V_x); a mixture of experts' step offers its experts; a run whose steps
    change shape draws each step as its own model. The last step is the one shown first."""
    directory = tmp_path / "runs" / "shapes"
    directory.mkdir(parents=True)
    profiles = [_twin_of(shape, f"shaped@{10 * i}", seed=i) for i, shape in enumerate(shapes)]
    save_atlas(profiles, directory / "trajectory.npz")
    monkeypatch.setenv(service.RUNS_DIR_ENV, str(tmp_path / "runs"))
    at = landing_app
    at.switch_page("pages/runs.py")
    run_clean(at)
    assert at.selectbox(key="runs_run").value == "server:shaped"
    for step in [10 * i for i in range(len(shapes))]:
        at.select_slider(key="runs_step").set_value(step)
        run_clean(at)
        assert not at.exception and not at.error, [e.value for e in at.error]
    last = profiles[-1].shape
    maps = [f for f in plotly_specs(at) if "p*" in f["layout"].get("title", {}).get("text", "")]
    titles = [[a["text"] for a in f["layout"].get("annotations", []) if a.get("yref") == "paper"] for f in maps]
    if last.encoder_decoder:
        assert [[t for t in ts if t in {"QK", "V", "QK_x", "V_x", "MLP"}] for ts in titles] == panels
        decoder = BoundAnalysis.from_profile(profiles[-1]).p_opt
        drawn = next(t["z"] for t in maps[1]["data"] if t.get("name") == "QK_x")
        assert np.asarray(drawn, dtype=float).ravel().tolist() == pytest.approx(
            [decoder[profiles[-1].index(MatrixId(layer, Kind.QK_X, h))] for layer in (2, 3) for h in range(4)]
        )
    else:
        shown = [[f["layout"]["title"]["text"].split("<br>")[0]] for f in maps if len(f["data"]) == 1]
        assert shown == panels
    if last.moe:
        picker = at.selectbox(key="runs_expert")
        assert picker.options == ["expert 0", "expert 1", "expert 2", "expert 3"]
        picker.set_value("expert 2")
        run_clean(at)
        strip = next(t for f in plotly_specs(at) for t in f["data"] if t.get("name", "").endswith("(expert 2)"))
        expected = BoundAnalysis.from_profile(profiles[-1]).p_opt
        kinds = (Kind.M_GATE, Kind.M_IN, Kind.M_OUT)
        np.testing.assert_allclose(
            np.asarray(strip["z"], dtype=float),
            [[expected[profiles[-1].index(MatrixId(layer, kind, expert=2))] for kind in kinds] for layer in (0, 1)],
            rtol=1e-12,
        )
