"""The shipped scaling grid, the BERT Miniatures' offline stand-in: at least four depths by three widths of
one task and one family, one seed, said to be a stand-in with its cost; and its growth exponents fitted
again here, independently, by numpy's polyfit on the log-log values of its runs.csv."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

from specbound.core.bounds import BoundAnalysis
from specbound.core.proxies import Proxy
from specbound.io.atlas import load_atlas
from specbound.studies.scaling import Agreement, Axis, ScalingStudy, measured_growth, summarize
from specbound_lab import reference
from specbound_lab.grid import preset_grid
from specbound_lab.tables import RUNS_CSV

GRID = reference.SCALING_REFERENCE
ROOT = Path(__file__).resolve().parents[2]
#: The runs.csv column of each proxy the paper compares (log10 of the proxy at the final step).
COLUMNS = {Proxy.OURS: "ours_log10", Proxy.EDELMAN: "edelman_log10"}


@pytest.fixture(scope="module")
def final() -> pd.DataFrame:
    """One row per run of the grid: its final step, from the shipped runs.csv."""
    runs = pd.read_csv(GRID.directory / RUNS_CSV)
    return runs[runs["final"]].reset_index(drop=True)


@pytest.fixture(scope="module")
def study() -> ScalingStudy:
    """The package's study of the grid, from the spectra of the shipped atlas (not from runs.csv)."""
    profiles = load_atlas(GRID.directory / reference.ATLAS_FILE)
    return ScalingStudy.from_summaries(summarize(BoundAnalysis.from_profile(p)) for p in profiles)


def test_the_grid_is_four_depths_by_three_widths_of_one_environment_and_one_seed(final: pd.DataFrame) -> None:
    depths, widths = sorted(set(final["layers"])), sorted(set(final["hidden"]))
    assert len(depths) >= 4 and len(widths) == 3
    assert len(final) == len(depths) * len(widths)  # one run per (L, N)
    assert set(final["seed"]) == {0} and set(final["task"]) == {"threshold"} and set(final["family"]) == {"bert"}
    assert set(final["steps"]) == {500} and set(final["label_noise"]) == {0.0}
    assert set(final["run"]) == {spec.name for spec in preset_grid(GRID.preset).specs()}  # the preset, whole


def test_the_manifest_says_what_it_stands_in_for_and_what_it_cost() -> None:
    manifest = reference.read_reference_manifest(GRID.directory)
    assert "stand-in for the 24 BERT Miniatures" in manifest["stands_for"]
    assert "not a BERT Miniature" in manifest["label"]
    assert manifest["training_seconds"] > 0  # the cost: the runs' own training and measuring time
    assert manifest["regenerate"] == "specbound lab sweep --preset scaling --out DIR --export-reference"
    makefile = (ROOT / "Makefile").read_text()
    assert "specbound lab sweep --preset scaling --out $(LAB_DIR)-scaling --export-reference" in makefile


def _pooled(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[float, float, int]:
    """Slope, standard error and residual df of one common slope with an intercept per group, by polyfit on
    the values centred within their group (the common slope is the slope of the centred cloud)."""
    cx, cy = x.astype(float).copy(), y.astype(float).copy()
    for g in np.unique(groups):
        cx[groups == g] -= x[groups == g].mean()
        cy[groups == g] -= y[groups == g].mean()
    (slope, intercept), (ss_res,), *_ = np.polyfit(cx, cy, 1, full=True)
    assert abs(intercept) < 1e-9  # centred: the line passes through the origin
    df = len(x) - len(np.unique(groups)) - 1
    return float(slope), math.sqrt(ss_res / df / (cx @ cx)), df


#: Each size with the column that holds it and the column of the size held fixed.
SIZES = [(Axis.DEPTH, "layers", "hidden"), (Axis.WIDTH, "hidden", "layers")]


@pytest.mark.parametrize("proxy", [Proxy.OURS, Proxy.EDELMAN], ids=lambda p: p.value)
@pytest.mark.parametrize(("axis", "size", "other"), SIZES, ids=["L", "N"])
def test_fitted_exponents_match_polyfit_on_the_shipped_tables(
    final: pd.DataFrame, study: ScalingStudy, proxy: Proxy, axis: Axis, size: str, other: str
) -> None:
    log_b = final[COLUMNS[proxy]].to_numpy() * math.log(10)  # ln B, the study's scale
    log_size = np.log(final[size].to_numpy(dtype=float))
    for fixed, rows in final.groupby(other):  # each group's own line: np.polyfit, degree 1
        slope = np.polyfit(log_size[rows.index], log_b[rows.index], 1)[0]
        assert study.exponent(proxy, axis, fixed=int(fixed)).slope == pytest.approx(slope, rel=1e-9, abs=1e-9)
    slope, se, df = _pooled(log_size, log_b, final[other].to_numpy())
    (row,) = [r for r in measured_growth(study) if (r.proxy, r.against) == (proxy, axis)]
    assert row.fit is not None and row.fit.slope == pytest.approx(slope, rel=1e-9, abs=1e-9)
    assert row.fit.residual_df == df == len(final) - final[other].nunique() - 1
    half = student_t.ppf(0.975, df) * se  # a 95 % Student-t interval on the log-log slope
    assert row.interval == pytest.approx((slope - half, slope + half), rel=1e-7, abs=1e-9)
    assert row.fit.num_sizes == final[size].nunique() >= 3  # never an interval from two sizes
    if axis is Axis.DEPTH:
        assert row.predicted is not None and row.predicted.exponent == (0.5 if proxy is Proxy.OURS else 1.5)
        assert row.interval is not None
        low, high = row.interval
        side = Agreement.STEEPER if low > row.predicted.exponent else Agreement.FLATTER
        expected = Agreement.HOLDS if low <= row.predicted.exponent <= high else side
        assert row.agreement is expected
    else:
        assert row.predicted is None and row.agreement is Agreement.NOT_PREDICTED
