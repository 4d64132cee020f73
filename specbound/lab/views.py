"""What the Lab page shows, as plain tables and arrays: a run's trajectory, its p* map at one step,
and every measure beside the gap over the final checkpoints of a sweep.

Pure functions of finished runs (:class:`~specbound.lab.trajectory.RunTrajectory`); the figures of
:mod:`specbound.figures.lab` draw them and the dashboard only picks what to draw. Proxies stay in
log10, as the records keep them; parameter count and Σ‖W‖_F² are plain numbers (drawn on log axes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .sweep import AXES, MEASURES
from .trajectory import RunTrajectory

if TYPE_CHECKING:
    import pandas as pd

#: How each measure of :data:`specbound.lab.sweep.MEASURES` is named on screen, and whether its value
#: is already a log10 (then drawn on a linear axis) or a plain positive number (drawn on a log axis).
MEASURE_LABELS: dict[str, tuple[str, bool]] = {
    "ours": ("log10 ours at p*", True),
    "ours_p0": ("log10 ours at p = 0", True),
    "ours_p1": ("log10 ours at p = 1", True),
    "ours_p2": ("log10 ours at p = 2", True),
    "edelman": ("log10 Edelman-style", True),
    "params": ("parameters", False),
    "frobenius": ("Σ‖W‖_F²", False),
    "spectral_product": ("log10 Π‖W‖₂", True),
    "bartlett": ("log10 Bartlett et al.", True),
}


def trajectory_frame(run: RunTrajectory) -> pd.DataFrame:
    """One row per saved step: errors (with the test error's standard error), gap, every proxy in
    log10, log10 alpha per layer (``log10_alpha_L{l}``) and the mean p*."""
    import pandas as pd

    rows = []
    for s in run.steps:
        row = {
            "step": s.step,
            "train_error": s.train_error,
            "test_error": s.test_error,
            "test_error_se": s.test_error_se,
            "gap": s.gap,
            "ours_log10": s.ours_log10,
            "ours_p0_log10": s.ours_p0_log10,
            "ours_p1_log10": s.ours_p1_log10,
            "ours_p2_log10": s.ours_p2_log10,
            "edelman_log10": s.edelman_log10,
            "p_opt_mean": float(np.mean(s.p_opt)),
        }
        row.update({f"log10_alpha_L{layer}": value for layer, value in enumerate(s.log10_alpha)})
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class PStarMap:
    """p* of every matrix of a run at one step, laid out layer x matrix-within-layer."""

    step: int
    columns: tuple[str, ...]  # "QK h0", ..., "V h0", ..., ["M_gate",] "M_in", "M_out"
    values: np.ndarray  # (L, matrices per layer), row l = layer l

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(range(self.values.shape[0]))


def p_star_map(run: RunTrajectory, step: int) -> PStarMap:
    """The p* map of ``run`` at a saved ``step`` (ValueError if it was not saved).

    The record keeps p* in profile order, layer by layer with the same matrices each (2H + 2 for the
    lab's encoders), so the map is that vector reshaped; the column names are the matrix labels
    without their layer.
    """
    record = next((s for s in run.steps if s.step == step), None)
    if record is None:
        raise ValueError(f"{run.name} has no saved step {step}")
    layers = run.spec.layers
    per_layer = len(run.matrices) // layers
    values = np.asarray(record.p_opt, dtype=np.float64).reshape(layers, per_layer)  # (L, per layer)
    columns = tuple(label.split(" ", 1)[1] for label in run.matrices[:per_layer])
    return PStarMap(step, columns, values)


def sweep_frame(runs: Sequence[RunTrajectory]) -> pd.DataFrame:
    """One row per run's final checkpoint: its axes, train and test error, gap, and every measure."""
    import pandas as pd

    rows = []
    for run in runs:
        spec, final = run.spec, run.final
        row: dict[str, object] = {
            "run": run.name,
            **{a: getattr(spec, a) for a in AXES},
            "step": final.step,
            "train_error": final.train_error,
            "test_error": final.test_error,
            "gap": final.gap,
        }
        row.update({name: measure(run) for name, measure in MEASURES.items()})
        rows.append(row)
    return pd.DataFrame(rows)
