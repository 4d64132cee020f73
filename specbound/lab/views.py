"""What the Lab page shows, as plain tables and arrays: a run's trajectory, its p* map at one step,
and every measure beside the gap over the final checkpoints of a sweep.

Pure functions of finished runs (:class:`~specbound.lab.trajectory.RunTrajectory`); the figures of
:mod:`specbound.figures.lab` draw them and the dashboard only picks what to draw. Proxies stay in
log10, as the records keep them; parameter count, Σ‖W‖_F² and the flatness measures are plain
positive numbers (drawn on log axes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .correlation import TauDifference, Verdict
from .grid import AXES
from .registry import MEASURES, recorded_measures
from .robust import RobustRow
from .tables import measure_value
from .trajectory import RunTrajectory

if TYPE_CHECKING:
    import pandas as pd

#: How each measure is named on screen, and whether it is drawn on a linear axis (True: a log10 or an
#: exponent) or on a log axis (a plain positive number), from :data:`specbound.lab.registry.MEASURES`.
MEASURE_LABELS: dict[str, tuple[str, bool]] = {m.name: (m.label, m.linear_axis) for m in MEASURES.values()}


def trajectory_frame(run: RunTrajectory) -> pd.DataFrame:
    """One row per saved step: errors (with the test error's standard error), losses, the gap (on the loss
    for next-token prediction), every recorded measure
    under its column (the proxies in log10; the MODEL measures on the final row only, NaN before), the
    bound's log10 α per layer (``log10_alpha_L{l}``) and the mean p*."""
    import pandas as pd

    rows = []
    for s in run.steps:
        row: dict[str, float] = {
            "step": s.step,
            "train_error": s.train_error,
            "test_error": s.test_error,
            "test_error_se": s.test_error_se,
            "train_loss": s.train_loss,
            "test_loss": s.test_loss,
            "gap": s.gap,
        }
        row.update({m.column: s.value(m.name) for m in recorded_measures()})
        row["p_opt_mean"] = float(np.mean(s.p_opt))
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
        row.update({m.name: measure_value(run, m) for m in MEASURES.values()})
        rows.append(row)
    return pd.DataFrame(rows)


def _signed(value: float) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:+.2f}"


def _statistic(name: str, difference: float, low: float, high: float, verdict: Verdict, other: str) -> str:
    interval = f"{_signed(difference)} (95 % interval {_signed(low)} to {_signed(high)})"
    if verdict is Verdict.INDISTINGUISHABLE:
        return f"{name} differs by {interval}, not distinguishable from {other}"
    return f"{name} differs by {interval}, distinguishably {verdict.value} than {other}"


def comparison_sentence(difference: TauDifference, name: Callable[[str], str] | None = None) -> str:
    """One sentence on whether ``difference.measure`` is distinguishable from ``difference.other`` on this
    sweep, on τ and on the granulated τ (distinguishable: the paired interval of the difference excludes 0).

    ``name`` (measure -> plain words) names both measures by those words alone, as the dashboard
    does; without it, a measure is its label with its short name, as the CLI prints it."""
    if name is not None:
        label, other = name(difference.measure), name(difference.other)
    else:
        label = f"{MEASURE_LABELS.get(difference.measure, (difference.measure, True))[0]} ({difference.measure})"
        other = difference.other
    if difference.runs < 2:
        return f"{label}: fewer than two runs have both it and {other}."
    tau = _statistic(
        "τ",
        difference.kendall_tau,
        difference.kendall_tau_ci.low,
        difference.kendall_tau_ci.high,
        difference.kendall_verdict,
        other,
    )
    granulated = _statistic(
        "granulated τ",
        difference.granulated_tau,
        difference.granulated_tau_ci.low,
        difference.granulated_tau_ci.high,
        difference.granulated_verdict,
        other,
    )
    return f"{label}: {tau}; {granulated}."


def robust_sentence(rows: Sequence[RobustRow], name: Callable[[str], str] | None = None) -> str:
    """One sentence from the robust view's numbers: how many environments, the measure whose worst
    sign-error is smallest (and where it is worst), and ours at p*'s worst, each with its environment."""
    name = name or (lambda measure: measure)
    defined = [r for r in rows if r.defined]
    if not defined:
        return "No environment has two runs ordered differently by a measure and the gap yet: there is no sign-error."
    environments = len(defined[0].environments)
    best = min(defined, key=lambda r: (r.worst, r.mean))
    sentence = (
        f"Over {environments} environment{'s' if environments != 1 else ''}, {name(best.measure)} has the "
        f"smallest worst-case sign-error, {best.worst:.2f} (in {best.worst_environment}; mean {best.mean:.2f})"
    )
    ours = next((r for r in defined if r.measure == "ours"), None)
    if ours is not None and ours is not best:
        sentence += (
            f"; {name('ours')} orders {ours.worst:.0%} of the run pairs against the gap in its worst environment, "
            f"{ours.worst_environment} (mean {ours.mean:.2f})"
        )
    return sentence + ". A sign-error of 0.5 is chance."
