"""``specbound lab train | sweep | show`` end to end (the smoke sweep runs once per session)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from specbound.cli import main
from specbound_lab.records import read_runs
from specbound_lab.registry import correlated_measures
from specbound_lab.tables import CORRELATIONS_CSV, RUNS_CSV

if TYPE_CHECKING:
    from .conftest import SmokeSweep


@pytest.mark.slow  # the smoke sweep behind them trains six small runs
def test_smoke_sweep_writes_every_file(smoke_sweep: SmokeSweep) -> None:
    out = smoke_sweep.out
    assert "4 runs (4 trained now, 0 already done)" in smoke_sweep.stdout
    runs = pd.read_csv(out / RUNS_CSV)
    assert len(runs["run"].unique()) == 4 and set(runs["step"]) == {0, 100, 200}
    assert runs["run"].str.startswith("lab-L2-N32-H2-").all()
    table = pd.read_csv(out / CORRELATIONS_CSV)
    assert list(table["measure"]) == [m.name for m in correlated_measures()] and (table["runs"] == 4).all()
    final = runs[runs["final"]]
    assert (final["train_error"] <= runs[runs["step"] == 0]["train_error"].to_numpy()).all()


@pytest.mark.slow  # the smoke sweep behind them trains six small runs
def test_rerunning_the_smoke_sweep_trains_nothing(smoke_sweep: SmokeSweep, capsys: pytest.CaptureFixture[str]) -> None:
    before = {p: p.stat().st_mtime_ns for p in smoke_sweep.out.rglob("trajectory.json")}
    assert main(["lab", "sweep", "--preset", "smoke", "--out", str(smoke_sweep.out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("skipped, already done") == 4 and "0 trained now, 4 already done" in printed
    assert {p: p.stat().st_mtime_ns for p in before} == before


@pytest.mark.slow  # the smoke sweep behind them trains six small runs
def test_show_prints_the_correlation_table(smoke_sweep: SmokeSweep, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "show", str(smoke_sweep.out), "--runs"]) == 0
    printed = capsys.readouterr().out
    assert "final checkpoints of all 4 runs, fitted or not" in printed
    table = pd.read_csv(smoke_sweep.out / CORRELATIONS_CSV)
    for measure, tau in zip(table["measure"], table["kendall_tau"], strict=True):
        line = next(l for l in printed.splitlines() if l.split() and l.split()[0] == measure)
        assert line.split()[1] == ("n/a" if pd.isna(tau) else f"{tau:+.3f}")
    assert printed.count("lab-L2-N32-H2-") == 4


def test_train_joins_a_lab_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lab"
    assert (
        main(
            [
                "lab",
                "train",
                "--layers",
                "1",
                "--hidden",
                "16",
                "--heads",
                "2",
                "--n-train",
                "40",
                "--label-noise",
                "0.1",
                "--steps",
                "20",
                "--save-every",
                "10",
                "--seed",
                "3",
                "--test-samples",
                "300",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    name = "lab-L1-N16-H2-n40-q0.1-s3-t20"
    assert name in printed and "(1 run(s) there)" in printed
    (run,) = read_runs(out)
    assert run.name == name and [s.step for s in run.steps] == [0, 10, 20]
    assert run.spec.label_noise == 0.1 and run.final.test_samples == 300
    rows = pd.read_csv(out / RUNS_CSV)
    assert list(rows["step"]) == [0, 10, 20] and rows["checkpoint"].str.startswith(f"runs/{name}/").all()


def test_train_until_fit_checks_between_saves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lab"
    args = ["--layers", "1", "--hidden", "16", "--heads", "2", "--n-train", "32", "--seed", "4", "--steps", "3000"]
    saves = ["--save-every", "1000", "--until-fit", "--fit-every", "50", "--test-samples", "200"]
    assert main(["lab", "train", *args, *saves, "--out", str(out)]) == 0
    (run,) = read_runs(out)
    assert run.spec.settings.fit_every == 50 and run.spec.settings.until_fit
    steps = [s.step for s in run.steps]
    assert steps[0] == 0 and len(steps) == 2 and 0 < steps[1] < 1000 and steps[1] % 50 == 0
    assert run.final.train_loss <= 0.01  # it ended where it fitted, between two saves


def test_sweep_axes_and_settings_replace_the_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = tmp_path / "grid.json"
    grid.write_text('{"n_train": [64, 32], "settings": {"test_samples": 300}}')
    assert (
        main(
            [
                "lab",
                "sweep",
                "--grid",
                str(grid),
                "--label-noise",
                "0.1",
                "--hidden",
                "16",
                "--steps",
                "20",
                "--save-every",
                "10",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    assert "2 runs (2 trained now" in capsys.readouterr().out
    runs = read_runs(tmp_path / "o")
    assert [r.name for r in runs] == ["lab-L2-N16-H2-n32-q0.1-s0-t20", "lab-L2-N16-H2-n64-q0.1-s0-t20"]
    assert all(r.final.test_samples == 300 and r.spec.settings.save_every == 10 for r in runs)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["train", "--layers", "99", "--hidden", "16", "--heads", "2", "--n-train", "4", "--out", "x"],
            "must be an integer in [1, 12], got 99",
        ),
        (
            [
                "train",
                "--layers",
                "1",
                "--hidden",
                "16",
                "--heads",
                "2",
                "--n-train",
                "4",
                "--label-noise",
                "0.5",
                "--out",
                "x",
            ],
            "must be a number in [0, 0.5), got 0.5",
        ),
        (["sweep", "--preset", "huge", "--out", "x"], "invalid choice"),
    ],
)
def test_usage_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["lab", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_lab_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "lab",
                "train",
                "--layers",
                "1",
                "--hidden",
                "30",
                "--heads",
                "4",
                "--n-train",
                "4",
                "--out",
                str(tmp_path),
            ]
        )
        == 1
    )
    assert capsys.readouterr().err.strip() == "specbound: error: the width 30 is not divisible by 4 heads"
    assert main(["lab", "show", str(tmp_path / "nothing")]) == 1
    assert "is not a lab directory" in capsys.readouterr().err
    (tmp_path / "grid.json").write_text("[1, 2]")
    assert main(["lab", "sweep", "--grid", str(tmp_path / "grid.json"), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.strip() == "specbound: error: a grid must be a JSON object"


def test_show_compare_prints_the_paired_difference(capsys: pytest.CaptureFixture[str]) -> None:
    from specbound_lab import reference
    from specbound_lab.tables import comparison

    assert main(["lab", "show", "--compare", "ours", "spectral_product"]) == 0
    printed = capsys.readouterr().out
    difference = comparison(reference.load_reference().runs, "ours", "spectral_product")
    low, high = difference.kendall_tau_ci.low, difference.kendall_tau_ci.high
    assert f"tau(ours) - tau(spectral_product) = {difference.kendall_tau:+.3f} [{low:+.3f}, {high:+.3f}]" in printed
    from specbound_lab.views import comparison_sentence

    assert "95 % interval" in printed and comparison_sentence(difference) in printed
    table = printed.split("Verdict of ")[0]  # the correlation table, before the verdict
    for line in table.splitlines():  # every measure's row carries both intervals
        if line.split() and line.split()[0] == "ours":
            assert line.count("[") == 2
    assert main(["lab", "show", "--compare", "ours", "nonsense"]) == 1
    assert "unknown measure 'nonsense'" in capsys.readouterr().err
