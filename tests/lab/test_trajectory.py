"""Trajectory terms equal what ``specbound analyze CHECKPOINT --json`` prints for the saved checkpoint."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pytest

from specbound_lab.records import read_runs

if TYPE_CHECKING:
    from .conftest import SmokeSweep

ROOT = Path(__file__).resolve().parents[2]


def analyze_json(checkpoint: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "specbound.cli", "analyze", str(checkpoint), "--json", *extra],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def dense_measures(matrices: list[dict[str, Any]], layers: int) -> tuple[float, float, float]:
    """(sum ||W||_F^2, log10 prod of block spectral norms, log10 Bartlett) from the JSON's per-matrix norms."""
    frob = sum(m["frobenius_norm"] ** 2 for m in matrices)
    log_prod, ratios = 0.0, 0.0
    for layer in range(layers):
        for kind in ("QK", "V", "M_in", "M_out"):
            block = [m for m in matrices if m["layer"] == layer and m["kind"] == kind]
            spectral = sum(m["spectral_norm"] for m in block)
            log_prod += math.log10(spectral)
            ratios += (sum(m["norm_21"] for m in block) / spectral) ** (2 / 3)
    return frob, log_prod, log_prod + 1.5 * math.log10(ratios)


def test_terms_equal_the_analyze_command(smoke_sweep: SmokeSweep) -> None:
    out = smoke_sweep.out
    run = read_runs(out)[0]
    table = pd.read_csv(out / "runs.csv")
    for step in (run.steps[0], run.final):
        checkpoint = out / "runs" / run.name / step.checkpoint
        row = table[(table["run"] == run.name) & (table["step"] == step.step)].iloc[0]
        assert out / row["checkpoint"] == checkpoint
        at_p = {p: analyze_json(checkpoint, "--p", f"{p:g}") for p in (0.0, 1.0, 2.0)}
        reference = at_p[0.0]
        assert step.ours_log10 == pytest.approx(reference["proxies"]["ours_log10"], rel=1e-12)
        assert row["ours_log10"] == pytest.approx(reference["proxies"]["ours_log10"], rel=1e-12)
        assert row["ours"] == pytest.approx(reference["proxies"]["ours"], rel=1e-12)
        assert step.edelman_log10 == pytest.approx(reference["proxies"]["edelman_log10"], rel=1e-12)
        for p, name in ((0.0, "ours_p0"), (1.0, "ours_p1"), (2.0, "ours_p2")):
            assert step.value(name) == pytest.approx(at_p[p]["proxies"]["at_p_log10"], rel=1e-12)
        np.testing.assert_allclose(step.log10_alpha, reference["log10_alpha"], rtol=1e-12, atol=1e-14)
        assert list(step.p_opt) == [m["p_opt"] for m in reference["matrices"]]
        assert step.grid_m == reference["grid_m"]
        frob, log_prod, log_bartlett = dense_measures(reference["matrices"], reference["num_layers"])
        assert step.value("frobenius") == pytest.approx(frob, rel=1e-10)
        assert step.value("spectral_product") == pytest.approx(log_prod, rel=1e-10)
        assert step.value("bartlett") == pytest.approx(log_bartlett, rel=1e-10)
    assert run.steps[0].step == 0 and run.final.step == run.spec.settings.steps
    # the flatness measures need the model: the final step has them, the earlier ones do not
    assert run.final.value("pacbayes_flatness") > 0 and run.final.value("sharpness") > 0
    assert all(math.isnan(s.value("sharpness")) for s in run.steps[:-1])
    assert all(s.value("alpha") > 1 and s.value("alpha_skipped") == 0 for s in run.steps)  # width 32: d = 16
    assert table[table["final"]]["sharpness"].notna().all() and table[~table["final"]]["sharpness"].isna().all()
