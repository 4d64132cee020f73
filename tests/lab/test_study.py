"""The pre-registered study (specbound_lab.study): its design against the registration, its endpoints
re-computed with scipy alone, Holm and the bootstrap p-value in closed form, the fit rule, and the
``specbound lab study`` commands."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from specbound.cli import main
from specbound_lab.correlation import bootstrap_p_value, holm
from specbound_lab.limits import LAB_LIMITS
from specbound_lab.registry import MEASURES
from specbound_lab.study import (
    COMPARATORS,
    DESIGN,
    ENVIRONMENTS,
    SUBJECT,
    minimum_detectable_difference,
    pilot_rows,
    power_projection,
    projected_standard_error,
    read_final_rows,
    study_answer,
)
from specbound_lab.tables import RUNS_CSV

PREREGISTRATION = Path(__file__).parents[2] / "docs" / "lab" / "preregistration.md"
COLUMNS = {name: MEASURES[name].column for name in (SUBJECT, *(c.measure for c in COMPARATORS))}


def _synthetic_environment(
    rng: np.random.Generator, *, configurations: int = 6, seeds: int = 3, noise: float = 0.0
) -> pd.DataFrame:
    """Final runs.csv rows of one environment: two n strata, ``configurations`` x ``seeds`` runs each, every
    run fitted; ours follows the gap closely, the parameter count loosely, the rest is noise."""
    rows = []
    for n in (100, 300):
        for config in range(configurations):
            width = 32 * (1 + config % 3)
            for seed in range(seeds):
                gap = 0.1 * config + 0.01 * rng.standard_normal()
                rows.append(
                    {
                        "final": True,
                        "n_train": n,
                        "layers": 1 + config // 3,
                        "hidden": width,
                        "heads": 2,
                        "label_noise": noise,
                        "learning_rate": 1e-3,
                        "weight_decay": 0.01,
                        "batch_size": 64,
                        "steps": 6000,
                        "until_fit": True,
                        "seed": seed,
                        "train_loss": 0.005,
                        "train_error": 0.0,
                        "gap": gap,
                        COLUMNS["ours"]: gap + 0.001 * rng.standard_normal(),
                        COLUMNS["params"]: float(width * (1 + config // 3)),
                        COLUMNS["steps"]: float(rng.integers(100, 2000)),
                        COLUMNS["train_loss"]: rng.uniform(0.001, 0.01),
                        COLUMNS["edelman"]: rng.standard_normal(),
                        COLUMNS["ours_p0"]: rng.standard_normal(),
                        COLUMNS["ours_p2"]: gap + 0.05 * rng.standard_normal(),
                    }
                )
    return pd.DataFrame(rows)


def _number(text: str) -> float:
    """A number as the registration writes it: 64, 0.01 or 1.2·10⁻⁴."""
    mantissa, _, exponent = text.partition("·10⁻")
    digits = exponent.translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789"))
    return float(mantissa) * 10.0 ** -int(digits or 0)


def _orientation(name: str) -> int:
    return MEASURES[name].orientation


def test_the_endpoints_are_re_computed_from_runs_csv_with_scipy_alone() -> None:
    rng = np.random.default_rng(3)
    frames = {"threshold-bert": _synthetic_environment(rng), "threshold-gpt2": _synthetic_environment(rng)}
    answer = study_answer(frames, draws=300)
    assert [(c.environment, c.n_train) for c in answer.cells] == [
        ("threshold-bert", 100),
        ("threshold-bert", 300),
        ("threshold-gpt2", 100),
        ("threshold-gpt2", 300),
    ]
    for endpoint in answer.endpoints:
        expected = []
        for frame in frames.values():
            for _, cell in frame.groupby("n_train"):
                tau = {
                    name: kendalltau(_orientation(name) * cell[COLUMNS[name]], cell["gap"], variant="b").statistic
                    for name in (SUBJECT, endpoint.comparator.measure)
                }
                expected.append(tau[SUBJECT] - tau[endpoint.comparator.measure])
        assert endpoint.delta_tau == pytest.approx(float(np.mean(expected)), abs=1e-12)
    # Holm over the six p-values, in closed form
    p = [e.p_value for e in answer.endpoints]
    order = np.argsort(p)
    adjusted = np.maximum.accumulate([min(1.0, (len(p) - k) * p[i]) for k, i in enumerate(order)])
    assert [answer.endpoints[i].adjusted_p for i in order] == pytest.approx(list(adjusted), abs=1e-12)


def test_a_proxy_that_follows_the_gap_beats_noise_and_ties_itself() -> None:
    rng = np.random.default_rng(0)
    answer = study_answer({"threshold-bert": _synthetic_environment(rng, configurations=8)}, draws=500)
    by_name = {e.comparator.measure: e for e in answer.endpoints}
    # ours orders the gap almost perfectly; edelman and p = 0 here are noise
    for name in ("edelman", "ours_p0"):
        assert by_name[name].delta_tau > 0.5 and by_name[name].rejected
        assert by_name[name].interval.low > 0
        assert (
            by_name[name].sentence().startswith(f"({by_name[name].comparator.hypothesis}) Ours orders the gap better")
        )
    same = study_answer(
        {"threshold-bert": _synthetic_environment(rng).assign(**{COLUMNS["ours_p2"]: lambda f: f[COLUMNS["ours"]]})},
        draws=200,
    )
    tie = next(e for e in same.endpoints if e.comparator.measure == "ours_p2")
    assert tie.delta_tau == 0.0 and tie.p_value == 1.0 and not tie.rejected
    assert "cannot be told apart" in tie.sentence()


def test_runs_that_did_not_fit_are_left_out_and_an_unfitted_environment_is_named() -> None:
    rng = np.random.default_rng(1)
    frame = _synthetic_environment(rng)
    frame.loc[frame.index[:3], ["train_loss", "train_error"]] = [0.3, 0.1]  # three runs did not fit
    noisy = _synthetic_environment(rng, noise=0.15)
    noisy.loc[noisy.index[: len(noisy) // 2], ["train_loss", "train_error"]] = [0.2, 0.05]  # half memorised
    answer = study_answer({"threshold-bert": frame, "noisy-bert": noisy}, draws=100)
    first = answer.cells[0]
    assert (first.runs, first.fitted) == (18, 15)
    assert {c.environment for c in answer.cells} == {"threshold-bert"}
    assert answer.not_fitted == ("noisy-bert (50% fitted)",)
    assert any("Not fitted, left out: noisy-bert" in s for s in answer.sentences())
    # with labels flipped, no training error is a fit even above the loss threshold
    memorised = _synthetic_environment(rng, noise=0.15).assign(train_loss=0.05, train_error=0.0)
    assert study_answer({"noisy-bert": memorised}, draws=50).not_fitted == ()


def test_an_answer_is_interim_until_every_planned_run_is_trained() -> None:
    frame = _synthetic_environment(np.random.default_rng(2))  # 2 n x 6 configurations x 3 seeds
    assert len(frame) == 36
    complete = study_answer({"threshold-bert": frame}, draws=50, planned=36)
    assert not complete.interim and complete.sentences()[0].startswith("Over 36 fitted runs")
    partial = study_answer({"threshold-bert": frame}, draws=50, planned=37)
    assert partial.interim and partial.sentences()[0].startswith("Interim, not the pre-registered answer: 36 of")
    assert not study_answer({"threshold-bert": frame}, draws=50).interim  # no plan given: nothing to compare


def test_holm_and_the_bootstrap_p_value_in_closed_form() -> None:
    assert list(holm((0.01, 0.04, 0.03))) == pytest.approx([0.03, 0.06, 0.06])
    assert list(holm((0.2, math.nan, 0.01))) == pytest.approx([0.2, math.nan, 0.02], nan_ok=True)
    assert list(holm((0.5, 0.6))) == pytest.approx([1.0, 1.0])
    # 3 of 9 draws at or below 0: 2 * (3 + 1) / (9 + 1)
    assert bootstrap_p_value(np.array([-0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6])) == pytest.approx(0.8)
    assert bootstrap_p_value(np.linspace(0.1, 1.0, 99)) == pytest.approx(2 / 100)
    assert math.isnan(bootstrap_p_value(np.array([math.nan])))


def test_power_in_closed_form() -> None:
    # z_{1 - 0.05/12} = 2.6383, z_{0.8} = 0.8416
    assert minimum_detectable_difference(0.01, endpoints=6) == pytest.approx(0.034799, abs=1e-5)
    assert minimum_detectable_difference(0.01, endpoints=1) == pytest.approx((1.959964 + 0.841621) * 0.01, abs=1e-6)
    # 4 cells of 8 configurations to 6 of 144: s sqrt(32 / 864)
    s = projected_standard_error(0.06, cells=4, configurations=8, planned_cells=6, planned_configurations=144)
    assert s == pytest.approx(0.06 * math.sqrt(32 / 864))


def test_the_design_is_the_registered_one() -> None:
    text = PREREGISTRATION.read_text(encoding="utf-8")
    assert DESIGN.configurations == 72 and DESIGN.runs_per_environment == 720 and DESIGN.runs == 2160
    assert DESIGN.half_fraction and "**half fraction**" in text and not DESIGN.settings.model_measures
    assert f"**{DESIGN.configurations} configurations**" in text and f"**{DESIGN.runs:,} runs**" in text
    assert f"**{len(DESIGN.seeds)} seeds**" in text
    factors = dict(re.findall(r"^\| ([A-Za-z n()]+?) \| (.+?) \|$", text, flags=re.MULTILINE))
    numbers = {k: [_number(x) for x in re.findall(r"\d+(?:\.\d+)?(?:·10⁻[⁰-⁹¹²³]+)?", v)] for k, v in factors.items()}
    assert numbers["n (strata)"] == list(DESIGN.strata)
    assert numbers["depth L"] == list(DESIGN.layers)
    assert numbers["width N"][:3] == list(DESIGN.hidden) and numbers["width N"][3] == DESIGN.heads
    assert numbers["learning rate (AdamW)"][:4] == pytest.approx(list(DESIGN.learning_rates))
    assert numbers["batch size"] == list(DESIGN.batch_sizes)
    assert numbers["weight decay"] == list(DESIGN.weight_decays)
    assert [e.key for e in ENVIRONMENTS] == re.findall(r"^\| `([a-z0-9-]+)` \|", text, flags=re.MULTILINE)
    caps = {e.key: e.max_steps for e in ENVIRONMENTS}
    assert f"at most {caps['threshold-bert']:,} steps in the clean environments and {caps['noisy-bert']:,}" in text
    assert caps["threshold-gpt2"] == caps["threshold-bert"] and f"every {DESIGN.settings.fit_every}\n  steps" in text
    assert all(s.settings.steps == caps[e.key] for e in ENVIRONMENTS for s in DESIGN.corners(e))
    letters = re.findall(r"\(([a-f])\) ", text.split("## Hypotheses")[0])
    assert letters == [c.hypothesis for c in COMPARATORS]


def test_the_registered_power_table_is_what_the_pilot_gives() -> None:
    text = PREREGISTRATION.read_text(encoding="utf-8")
    rows = re.findall(
        r"^\| \(([a-f])\) [^|]+ \| ([−+][\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", text, re.MULTILINE
    )
    assert len(rows) == len(COMPARATORS)
    projection = {p.comparator.hypothesis: p for p in power_projection(study_answer(pilot_rows()))}
    for letter, delta, se, projected, detectable in rows:
        row = projection[letter]
        assert row.pilot_delta_tau == pytest.approx(float(delta.replace("−", "-")), abs=5e-4)
        assert row.pilot_standard_error == pytest.approx(float(se), abs=5e-4)
        assert row.projected_standard_error == pytest.approx(float(projected), abs=5e-5)
        assert row.detectable == pytest.approx(float(detectable), abs=5e-4)


def test_the_design_trains_seed_by_seed_within_the_grid_limit() -> None:
    environment = ENVIRONMENTS[2]
    full = DESIGN.grid(environment, seed=0)
    assert full.seeds == (0,) and len(full.specs()) == 2 * DESIGN.configurations * len(DESIGN.strata)
    assert len(full.specs()) <= LAB_LIMITS.max_grid_runs
    specs = DESIGN.specs(environment)
    assert len(specs) == len({s.name for s in specs}) == DESIGN.runs_per_environment
    assert {s.settings.batch_size for s in specs} == set(DESIGN.batch_sizes)
    assert {s.settings.weight_decay for s in specs} == set(DESIGN.weight_decays)
    assert {s.label_noise for s in specs} == {0.15} and {s.family for s in specs} == {"bert"}
    per_seed = DESIGN.configurations * len(DESIGN.strata)
    assert [s.seed for s in specs] == [seed for seed in DESIGN.seeds for _ in range(per_seed)]
    assert DESIGN.specs(environment, seeds=[3]) == specs[3 * per_seed : 4 * per_seed]
    assert not any(s.settings.model_measures for s in specs)


def test_the_half_fraction_meets_every_pair_at_two_learning_rates_and_keeps_the_corners() -> None:
    settings = DESIGN.optimisation_settings()
    assert len(settings) == 8 == len(set(settings))
    pairs: dict[tuple[int, float], set[float]] = {}
    rates: dict[float, set[tuple[int, float]]] = {}
    for s in settings:
        pairs.setdefault((s.batch_size, s.weight_decay), set()).add(s.learning_rate)
        rates.setdefault(s.learning_rate, set()).add((s.batch_size, s.weight_decay))
    assert len(pairs) == 4 and all(len(r) == 2 for r in pairs.values())
    assert set(rates) == set(DESIGN.learning_rates) and all(len(p) == 2 for p in rates.values())
    # every main effect balanced: each batch size and each decay at every learning rate once
    for values in rates.values():
        assert {b for b, _ in values} == set(DESIGN.batch_sizes) and {d for _, d in values} == set(DESIGN.weight_decays)
    # the outer rates pair "same end" settings, the inner ones opposite ends
    assert rates[6e-5] == rates[6e-4] == {(32, 0.01), (64, 0.1)}
    assert rates[1.3e-4] == rates[2.8e-4] == {(32, 0.1), (64, 0.01)}
    full = replace(DESIGN, half_fraction=False)
    assert full.configurations == 144 and len(full.specs(ENVIRONMENTS[0], seeds=[0])) == 288
    for environment in ENVIRONMENTS:
        assert set(DESIGN.corners(environment)) <= set(DESIGN.specs(environment, seeds=[0]))


def test_study_analyse_prints_the_answer_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(5)
    for key in ("threshold-bert", "noisy-bert"):
        (tmp_path / key).mkdir()
        _synthetic_environment(rng, noise=0.15 if key == "noisy-bert" else 0.0).to_csv(
            tmp_path / key / RUNS_CSV, index=False
        )
    assert main(["lab", "study", "analyse", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    # 72 of the design's 2,160 runs: an interim answer, said first
    assert printed.startswith("Interim, not the pre-registered answer: 72 of the design's 2,160 runs are trained. ")
    assert "Over 72 fitted runs in 4 cells" in printed.splitlines()[0]
    assert "(d) Ours orders the gap better than the Edelman-style proxy" in printed
    assert main(["lab", "study", "analyse", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [e["hypothesis"] for e in data["endpoints"]] == ["a", "b", "c", "d", "e", "f"]
    assert len(data["cells"]) == 4 and data["sentences"][0].startswith("Interim")
    assert data["interim"] is True and (data["runs_trained"], data["runs_planned"]) == (72, 2160)


def test_study_analyse_refuses_a_directory_without_a_study_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lab", "study", "analyse", str(tmp_path)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specbound") and "threshold-bert" in err[0]


def test_study_design_prints_the_size_and_the_projected_power(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "study", "design"]) == 0
    printed = capsys.readouterr().out
    assert (
        "3 environments x 2 n strata x 72 configurations (a half fraction of the optimisation settings) x 5 seeds "
        "= 2160 runs" in printed
    )
    assert "(f) the same proxy at p = 2" in printed


def test_study_run_trains_the_design_into_one_folder_per_environment_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import specbound_lab.study_cli as study_cli
    from specbound_lab.study import StudyDesign, StudyEnvironment

    tiny = StudyDesign(
        strata=(16,),
        layers=(1,),
        hidden=(8,),
        learning_rates=(1e-3,),
        batch_sizes=(8,),
        weight_decays=(0.01,),
        seeds=(0, 1),
    )
    quick = StudyEnvironment("threshold-bert", "bert", 0.0, "tiny BERT encoders", max_steps=20)
    monkeypatch.setattr(study_cli, "DESIGN", tiny)
    monkeypatch.setattr(study_cli, "environment_by_key", lambda key: quick)
    assert main(["lab", "study", "run", "--out", str(tmp_path), "--environment", "threshold-bert"]) == 0
    runs = pd.read_csv(tmp_path / "threshold-bert" / RUNS_CSV)
    assert sorted(runs.loc[runs["final"], "seed"]) == [0, 1] and set(runs["batch_size"]) == {8}
    # the study computes no MODEL measure: NaN in the table, recorded as switched off
    assert runs["pacbayes_flatness"].isna().all() and runs["sharpness"].isna().all()
    record = json.loads(next((tmp_path / "threshold-bert" / "runs").glob("*/trajectory.json")).read_text())
    assert record["spec"]["settings"]["model_measures"] is False and record["model_seconds"] < 0.05
    printed = capsys.readouterr().out
    assert "threshold-bert, seed 0: 1 trained now, 0 already done" in printed
    assert "threshold-bert, seed 1: 1 trained now, 0 already done" in printed
    assert printed.index("seed 0: 1 trained") < printed.index("seed 1: 1 trained")
    assert main(["lab", "study", "run", "--out", str(tmp_path), "--environment", "threshold-bert"]) == 0
    assert "threshold-bert, seed 1: 0 trained now, 1 already done" in capsys.readouterr().out

    # the corpus: a reference per environment (records and tables, no per-step atlases), no weights, the answer
    corpus = tmp_path / "corpus"
    assert main(["lab", "study", "corpus", str(tmp_path), str(corpus)]) == 0
    shipped = corpus / "threshold-bert"
    assert pd.read_csv(shipped / RUNS_CSV).equals(pd.read_csv(tmp_path / "threshold-bert" / RUNS_CSV))
    manifest = json.loads((shipped / "manifest.json").read_text())
    assert manifest["weights_shipped"] is False and manifest["runs"] == 2
    assert manifest["regenerate"] == "specbound lab study run --out STUDY --environment threshold-bert"
    assert len(list(shipped.glob("runs/*/trajectory.json"))) == 2 and manifest["step_atlases"] is None
    assert not list(shipped.glob("runs/*/profiles.npz")) and not list(corpus.rglob("*.safetensors"))
    assert (shipped / "atlas.npz").is_file() and not (shipped / "couplings.csv").exists()  # rebuilt from records
    answer = json.loads((corpus / "answer.json").read_text())
    # 20 steps fit nothing: the environment is shown as not fitted, and 2 of the tiny design's 6 runs are in
    assert answer["interim"] is True and (answer["runs_trained"], answer["runs_planned"]) == (2, 6)
    assert answer["not_fitted"] == ["threshold-bert (0% fitted)"] and answer["cells"] == []


def test_the_pilot_runs_the_corners_of_every_environment() -> None:
    for environment in ENVIRONMENTS:
        corners = DESIGN.corners(environment)
        assert len(corners) == 4 * len(DESIGN.strata) == len({s.name for s in corners})
        slow = [s for s in corners if s.settings.learning_rate == min(DESIGN.learning_rates)]
        assert {(s.settings.batch_size, s.settings.weight_decay) for s in slow} == {
            (max(DESIGN.batch_sizes), max(DESIGN.weight_decays))
        }
        assert {(s.layers, s.hidden) for s in corners} == {(1, 32), (4, 128)}
        assert {s.label_noise for s in corners} == {environment.label_noise}


def test_the_report_leads_with_the_shipped_study_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import specbound_lab.study as study
    from specbound_lab.study import ANSWER_FILE
    from specbound_lab.study_cli import answer_dict

    rng = np.random.default_rng(4)
    answer = study_answer({"threshold-bert": _synthetic_environment(rng, configurations=8)}, draws=200, planned=48)
    data = answer_dict(answer)
    markdown = study.answer_markdown(data)
    assert markdown.startswith("## The pre-registered study\n") and "(interim)" not in markdown.splitlines()[0]
    assert " ".join(answer.sentences()) in markdown
    edelman = next(e for e in answer.endpoints if e.comparator.measure == "edelman")
    row = next(line for line in markdown.splitlines() if line.startswith("| (d) the Edelman-style proxy |"))
    assert f"| {edelman.delta_tau:+.3f} | {edelman.interval.low:+.3f} to {edelman.interval.high:+.3f} |" in row
    assert f"| {edelman.detectable:.3f} |" in row
    assert markdown.count("| threshold-bert |") == 2  # a row per cell
    partial = study.answer_markdown({**data, "interim": True, "runs_trained": 24})
    assert partial.startswith("## The pre-registered study (interim)\n") and "24 of the design's 48 runs" in partial

    (tmp_path / ANSWER_FILE).write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(study, "STUDY_CORPUS_DIR", tmp_path)
    assert main(["lab", "report"]) == 0
    report = capsys.readouterr().out
    first_sweep = report.index("\n## ", report.index("## The pre-registered study") + 5)
    assert report.index("## The pre-registered study") < first_sweep
    assert report.startswith("# The lab's verdict on the shipped sweeps")


#: The endpoint measures' runs.csv columns and the direction in which each predicts a larger gap, as the
#: pre-registration states them (written out here, not read from the registry).
REGISTERED_COLUMNS = {
    "ours": ("ours_log10", 1),
    "params": ("params", 1),
    "steps": ("optimisation_steps", 1),
    "train_loss": ("final_train_loss", -1),
    "edelman": ("edelman_log10", 1),
    "ours_p0": ("ours_p0_log10", 1),
    "ours_p2": ("ours_p2_log10", 1),
}


def test_the_shipped_corpus_endpoints_are_re_computed_with_scipy_alone() -> None:
    from specbound_lab.study import ANSWER_FILE, STUDY_CORPUS_DIR
    from specbound_lab.study_cli import answer_dict

    shipped = json.loads((STUDY_CORPUS_DIR / ANSWER_FILE).read_text(encoding="utf-8"))
    cells: list[tuple[str, int, int, dict[str, float]]] = []  # (environment, n, fitted runs, τ_b by measure)
    deltas: dict[str, list[float]] = {c.measure: [] for c in COMPARATORS}
    trained = 0
    for environment in ENVIRONMENTS:
        path = STUDY_CORPUS_DIR / environment.key / RUNS_CSV
        if not path.is_file():
            continue
        final = pd.read_csv(path).query("final")
        trained += len(final)
        # the fit rule: cross-entropy at most 0.01, or with flipped labels no training error
        fitted = final[(final["train_loss"] <= 0.01) | ((final["label_noise"] > 0) & (final["train_error"] == 0))]
        if len(fitted) < 0.8 * len(final):
            continue  # not fitted: left out of every endpoint
        for n_train, cell in fitted.groupby("n_train"):
            configurations = cell.groupby(["layers", "hidden", "learning_rate", "batch_size", "weight_decay"]).ngroups
            if configurations < 2:
                continue
            tau = {
                name: kendalltau(sign * cell[column], cell["gap"], variant="b").statistic
                for name, (column, sign) in REGISTERED_COLUMNS.items()
            }
            cells.append((environment.key, int(n_train), len(cell), tau))
            for measure in deltas:
                deltas[measure].append(tau["ours"] - tau[measure])
    assert trained == shipped["runs_trained"] > 0 and shipped["runs_planned"] == DESIGN.runs
    assert [(c["environment"], c["n_train"], c["fitted"]) for c in shipped["cells"]] == [c[:3] for c in cells]
    for published, (*_, tau) in zip(shipped["cells"], cells, strict=True):
        assert published["tau_b"]["ours"] == pytest.approx(tau["ours"], abs=1e-9)
    for endpoint in shipped["endpoints"]:
        assert endpoint["delta_tau"] == pytest.approx(float(np.mean(deltas[endpoint["comparator"]])), abs=1e-9)
    # and the whole answer, intervals and adjusted p-values included, is the analysis of the shipped tables
    again = answer_dict(study_answer(read_final_rows(STUDY_CORPUS_DIR), planned=DESIGN.runs))
    assert again["sentences"] == shipped["sentences"] and len(again["cells"]) == len(shipped["cells"])
    for mine, theirs in zip(again["cells"], shipped["cells"], strict=True):
        assert mine["tau_b"] == pytest.approx(theirs["tau_b"], abs=1e-9)
        assert {k: v for k, v in mine.items() if k != "tau_b"} == {k: v for k, v in theirs.items() if k != "tau_b"}
    for mine, theirs in zip(again["endpoints"], shipped["endpoints"], strict=True):
        assert mine == pytest.approx(theirs, abs=1e-9)  # another machine's floats: a tolerance, never ==
