"""The ``grid`` command on tiny local checkpoints: outputs, numbers, resuming and missing models."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tiny_models import MakeCheckpoint

from specbound.api.batch import record_slug
from specbound.cli import main
from specbound.core.bounds import BoundAnalysis
from specbound.io.atlas import load_atlas
from specbound.io.loading import load_profile

DEPTHS = (1, 2, 3)
WIDTHS = (16, 32)
OUTPUTS = (
    "models.csv",
    "matrices.csv",
    "curves.csv",
    "exponents.csv",
    "predicted.csv",
    "growth_L.html",
    "growth_N.html",
)


@pytest.fixture
def family(make_checkpoint: MakeCheckpoint) -> dict[tuple[int, int], Path]:
    """Six tiny BERT encoders, L in {1, 2, 3} by N in {16, 32}, two heads each."""
    return {
        (l, n): make_checkpoint(layers=l, hidden=n, heads=2, ffn=24, seed=10 * l + n) for l in DEPTHS for n in WIDTHS
    }


def _record_files(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted((out / "models").iterdir())}


def test_grid_writes_every_output_with_the_direct_numbers(
    family: dict[tuple[int, int], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, atlas = tmp_path / "study", tmp_path / "study.npz"
    dirs = [str(d) for d in family.values()]
    assert main(["grid", "--models", *dirs, "--out", str(out), "--atlas", str(atlas)]) == 0
    printed = capsys.readouterr().out
    assert printed.count(": done, L=") == len(family) and "6 of 6 models available" in printed
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    assert not (out / "missing.csv").exists()
    assert len(list((out / "models").glob("*.json"))) == len(family)

    models = pd.read_csv(out / "models.csv").set_index("name")
    matrices = pd.read_csv(out / "matrices.csv")
    analyses = {}
    for (layers, width), directory in family.items():
        analysis = BoundAnalysis.from_profile(load_profile(str(directory)))
        name = str(directory.resolve())
        analyses[layers, width] = analysis
        row = models.loc[name]
        assert (row["L"], row["N"], row["H"]) == (layers, width, 2)
        expected = {
            "ours": analysis.evaluate().log_total,
            "edelman": analysis.log_edelman,
            "p=0": analysis.evaluate(0.0).log_total,
            "p=1": analysis.evaluate(1.0).log_total,
            "p=2": analysis.evaluate(2.0).log_total,
        }
        for proxy, log_value in expected.items():
            assert row[f"{proxy}_log10"] == pytest.approx(log_value / math.log(10), rel=1e-13)
            assert row[proxy] == pytest.approx(math.exp(log_value), rel=1e-13)
        # p = 0 in closed form: sum_W sqrt(rank N) + sqrt(L)
        rank = analysis.profile.rank
        assert row["p=0"] == pytest.approx(np.sqrt(rank * width).sum() + math.sqrt(layers), rel=1e-13)
        table = matrices[matrices["model"] == name]
        assert len(table) == layers * (2 * 2 + 2)
        np.testing.assert_allclose(table["contribution"], analysis.evaluate().contribution, rtol=1e-13)
        np.testing.assert_array_equal(table["p_opt"], analysis.p_opt)

    # exponents: least-squares slope of ln(ours) against ln L at N = 16, and the pooled one
    exponents = pd.read_csv(out / "exponents.csv")
    ours = exponents[(exponents["proxy"] == "ours") & (exponents["against"] == "L")]
    ours_l = ours[ours["model"] == "power"].set_index("fixed", drop=False)
    logs = {key: a.evaluate().log_total for key, a in analyses.items()}
    y_16 = [logs[l, 16] for l in DEPTHS]
    (slope_16, _), (ss_res_16,), *_ = np.polyfit(np.log(DEPTHS), y_16, 1, full=True)
    assert ours_l.loc[16, "slope"] == pytest.approx(slope_16, rel=1e-10)
    # three depths: one residual degree of freedom, se = √(SS_res / 1 / S_xx)
    x = np.log(np.array(DEPTHS, dtype=float))
    sxx = (x - x.mean()) @ (x - x.mean())
    assert ours_l.loc[16, "residual_df"] == 1 and not ours_l.loc[16, "few_points"]
    assert ours_l.loc[16, "slope_se"] == pytest.approx(math.sqrt(ss_res_16 / sxx), rel=1e-8)
    assert ours_l.loc[16, "ci_high"] - slope_16 == pytest.approx(
        12.706204736174696 * math.sqrt(ss_res_16 / sxx), rel=1e-8
    )
    assert ours_l.loc[16, "r_squared_within"] == pytest.approx(ours_l.loc[16, "r_squared"], rel=1e-12)
    rate_16 = ours[(ours["model"] == "log-linear") & (ours["fixed"] == 16)]
    assert rate_16["slope"].item() == pytest.approx(np.polyfit(DEPTHS, y_16, 1)[0], rel=1e-10)
    assert rate_16["better_fit"].item() == ours_l.loc[16, "better_fit"] in {"power", "log-linear", "undecided"}
    pooled = ours_l[ours_l["fixed"].isna()]
    within = sum((x - x.mean()) @ (y - y.mean()) for y in (np.array([logs[l, n] for l in DEPTHS]) for n in WIDTHS)) / (
        len(WIDTHS) * sxx
    )
    assert pooled["slope"].item() == pytest.approx(within, rel=1e-10)
    assert pooled["residual_df"].item() == 6 - 2 - 1
    edelman_n = exponents[(exponents["proxy"] == "edelman") & (exponents["against"] == "N") & (exponents["fixed"] == 2)]
    assert edelman_n["slope"].item() == pytest.approx(
        (analyses[2, 32].log_edelman - analyses[2, 16].log_edelman) / math.log(2), rel=1e-10
    )
    assert edelman_n["few_points"].item() and math.isnan(edelman_n["slope_se"].item())  # two widths
    assert set(pd.read_csv(out / "curves.csv")["reference"]) == {1, 16}
    assert not (out / "notes.txt").exists()

    html = (out / "growth_L.html").read_text()
    assert re.search(r"<script[^>]*\bsrc=", html) is None  # plotly.js is inlined: works offline
    assert len(html) > 1_000_000 and "Plotly.newPlot" in html
    imported = load_atlas(atlas)
    assert {p.model for p in imported} == {str(d.resolve()) for d in family.values()}
    for profile in imported:
        original = load_profile(profile.model)
        assert profile.singular_values.tobytes() == original.singular_values.tobytes()


def test_every_model_of_an_atlas_joins_the_study_and_each_exponent_meets_its_prediction(
    family: dict[tuple[int, int], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--from-atlas``: the offline route (the lab's scaling grid is an atlas); predicted.csv holds the
    pooled power-law slopes of exponents.csv beside √L and L^(3/2), an interval from three depths, none
    from two widths, and the command prints each as a sentence."""
    from specbound.io.atlas import save_atlas

    atlas = tmp_path / "family.npz"
    save_atlas([load_profile(str(d)) for d in family.values()], atlas)
    out = tmp_path / "study"
    assert main(["grid", "--from-atlas", str(atlas), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "6 of 6 models available" in printed and "L2-H128" not in printed  # no miniature asked for
    predicted = pd.read_csv(out / "predicted.csv")
    exponents = pd.read_csv(out / "exponents.csv")
    pooled = exponents[exponents["fixed"].isna() & (exponents["model"] == "power")].set_index(["proxy", "against"])
    assert [tuple(r) for r in predicted[["proxy", "against"]].itertuples(index=False)] == [
        ("ours", "L"),
        ("edelman", "L"),
        ("ours", "N"),
        ("edelman", "N"),
    ]
    for row in predicted.itertuples():
        fit = pooled.loc[(row.proxy, row.against)]
        assert row.measured_exponent == pytest.approx(fit["slope"], rel=1e-12)
        assert (row.num_sizes, row.num_points) == (fit["num_sizes"], fit["num_points"])
    depth, width = predicted[predicted["against"] == "L"], predicted[predicted["against"] == "N"]
    assert list(depth["predicted_exponent"]) == [0.5, 1.5] and list(depth["predicted_law"]) == ["√L", "L^(3/2)"]
    assert (depth["num_sizes"] == 3).all() and (depth["ci_low"] < depth["measured_exponent"]).all()
    keys = list(zip(depth["proxy"], depth["against"], strict=True))
    np.testing.assert_allclose(depth["ci_high"], pooled.loc[keys]["ci_high"], rtol=1e-12)
    assert width["ci_low"].isna().all() and set(width["agreement"]) == {"not predicted"}  # two widths: no interval
    assert set(depth["agreement"]) <= {"holds", "steeper", "flatter"}
    sentences = [line for line in printed.splitlines() if " in depth L: " in line or " in width N: " in line]
    assert len(sentences) == 4 and sentences[0].startswith("ours (p*) in depth L: measured L^")
    assert "95 % t-interval" in sentences[0] and "t-interval" not in sentences[2]  # none from two widths
    assert "predicted √L (L^0.5)" in sentences[0]


def test_an_unreadable_atlas_fails_in_one_line_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not an atlas")
    out = tmp_path / "study"
    assert main(["grid", "--from-atlas", str(bad), "--out", str(out)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specbound")
    assert not out.exists()


def test_a_rerun_skips_what_is_done(
    family: dict[tuple[int, int], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "study"
    args = ["grid", "--models", *map(str, family.values()), "--out", str(out)]
    assert main(args) == 0
    first_models = (out / "models.csv").read_text()
    records = _record_files(out)
    assert len(records) == 2 * len(family)  # a JSON record and a matrix table per model
    capsys.readouterr()

    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.count("skipped, already done") == len(family) and ": done," not in printed
    assert "0 analysed now, 6 already done" in printed
    assert _record_files(out) == records  # nothing rewritten
    assert (out / "models.csv").read_text() == first_models

    # lose one record (an interrupted run): only that model is analysed again
    redo = str(family[2, 32].resolve())
    (out / "models" / f"{record_slug(redo)}.json").unlink()
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.count("skipped, already done") == len(family) - 1 and printed.count(": done,") == 1
    after = _record_files(out)
    assert {k for k in after if after[k] != records.get(k)} == {
        f"{record_slug(redo)}.json",
        f"{record_slug(redo)}.matrices.csv",
    }
    assert (out / "models.csv").read_text() == first_models


def test_missing_models_are_listed_and_the_others_succeed(
    family: dict[tuple[int, int], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the miniature is not in the (test) Hub cache
    out = tmp_path / "study"
    good = [str(family[1, 16]), str(family[2, 16])]
    assert main(["grid", "--models", good[0], "no-such-model", "L2-H128", good[1], "--out", str(out)]) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if ": missing:" in line]
    assert len(lines) == 2 and lines[0].startswith("[2/4] no-such-model") and "L2-H128" in lines[1]
    assert "2 of 4 models available" in captured.out and "2 missing" in captured.out
    missing = pd.read_csv(out / "missing.csv")
    assert list(missing["name"]) == ["no-such-model", "L2-H128"]
    assert "not in the local Hugging Face cache" in missing["reason"][1]
    assert "google/bert_uncased_L-2_H-128_A-2" in missing["how_to_get"][1]
    assert "miniature alias" in missing["how_to_get"][0]
    assert len(pd.read_csv(out / "models.csv")) == 2
    # two models of one width: a curve against L, none against N
    curves = pd.read_csv(out / "curves.csv")
    assert set(curves["against"]) == {"L"} and set(curves["fixed"]) == {16}


def test_curves_without_the_reference_model_are_left_out_with_a_note(
    family: dict[tuple[int, int], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the L = 1, N = 32 model, the curve against L at N = 32 is not normalised at L = 2."""
    out = tmp_path / "study"
    dirs = [str(d) for key, d in family.items() if key != (1, 32)]
    assert main(["grid", "--models", *dirs, "--out", str(out)]) == 0
    note = (
        "No curve against L at N = 32: the study has no model with L = 1 and N = 32, and every curve "
        "against L is normalised at L = 1 (the smallest L in the study)."
    )
    assert f"note: {note}" in capsys.readouterr().out
    assert (out / "notes.txt").read_text() == note + "\n"
    curves = pd.read_csv(out / "curves.csv")
    against_l = curves[curves["against"] == "L"]
    assert set(against_l["fixed"]) == {16} and set(against_l["reference"]) == {1}
    assert (against_l[against_l["x"] == 1]["ratio"] == 1.0).all()
    exponents = pd.read_csv(out / "exponents.csv")  # the fit at N = 32 still uses L = 2 and 3
    fit_32 = exponents[(exponents["against"] == "L") & (exponents["fixed"] == 32) & (exponents["model"] == "power")]
    assert list(fit_32["num_points"]) == [2] * 5 and fit_32["few_points"].all()

    assert main(["grid", "--models", *map(str, family.values()), "--out", str(out)]) == 0  # the model is back
    assert not (out / "notes.txt").exists()


def test_nothing_analysed_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "study"
    assert main(["grid", "--models", "no-such-model", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the model could not be analysed" in err[0]
    assert list(pd.read_csv(out / "missing.csv")["name"]) == ["no-such-model"]


def test_default_grid_is_the_24_miniatures() -> None:
    from specbound.api.batch import miniature_names

    assert len(miniature_names()) == 24 and miniature_names()[0] == "L2-H128"
    assert miniature_names([4, 2], [256]) == ["L2-H256", "L4-H256"]
