"""Grokking: does a measure move before test accuracy jumps?

On modular addition with strong weight decay, small Transformers fit their training set early and
generalize much later: test accuracy jumps long after training accuracy saturates (Power et al. 2022).
A complexity measure that tracks generalization could be expected to change before that jump. This
module states the rule by which "before" is decided and applies it to a run's trajectory:

* training accuracy **saturates** at the first step where it reaches ``saturation`` (0.99): the
  training set is memorised, and everything a measure does before is the fit itself (every norm
  grows from its initial value), which says nothing about what comes next. So curves are read from
  there on;
* curves are read **smoothed** (a running median over ``SMOOTHING_WINDOW`` = 3 checkpoints, so one
  noisy checkpoint cannot make a move) from a **multi-checkpoint origin** y_0, the smoothed value at
  s_0 (the running median there spans s_0 and the next checkpoint: the checkpoints before s_0 belong
  to the fit and are left out), or the median of the first ``ORIGIN_CHECKPOINTS`` smoothed values
  where that is set higher (SPEC §13b);
* a curve's **move step**, from a starting step s_0, is the first recorded step at which it has
  covered half of its excursion: with y_* the smoothed value farthest from y_0 at or after s_0, the
  first step with |y - y_0| ≥ |y_* - y_0| / 2 (the midpoint of its range, seen from where it started).
  A curve that stays constant never moves (None);
* the **jump** is the move step of test accuracy from saturation;
* a run **groks** when training accuracy saturates while test accuracy is still below ``REACHED``
  (0.9), and test accuracy ends at or above it;
* a measure **moves before the jump** when its move step (from saturation as well) is earlier than
  the jump; its **lead** is jump - move step, in optimizer steps (positive: earlier).

Across seeds a measure's row gives the median, lowest and highest lead and the share of seeds in
which it moved first. A verdict needs at least :data:`MIN_SEEDS` = 10 seeds that grokked, and "before"
needs more than a positive median lead: the median lead must exceed the 95th percentile of the same
statistic under a **null that can reject**: each seed's curve has its **increments shifted circularly
within a window around its jump** (from saturation to as far past the jump, :func:`jump_window`; a random
shift of at least one checkpoint, :data:`NULL_PERMUTATIONS` draws, seeded; :func:`shift_increments`).
The shifted curve keeps its shape (its steps and their sizes, and no wrap-around jump, which shifting the
values themselves would add) and its values outside the window, and loses its timing against the jump:
under the null a move lands anywhere in the window, as often after the jump as before it. (An earlier
null permuted each curve in time: its steps then carry no order, the running median moves at once, and
the null's 95th percentile sat at the largest lead the data allow, so nothing could ever be called
"before".)

Two checks say whether the design can answer at all, and where either fails every verdict but "never"
and "too few seeds" is **inconclusive**:

* a **positive control**, a known progress measure of grokking under weight decay (Nanda et al. 2023:
  the weight norm; here Σ‖W‖_F² of the proxy matrices, :data:`POSITIVE_CONTROL`, the one recorded at
  every checkpoint): it must itself be called "before";
* a **power check** (:func:`power_check`): on the runs' own checkpoints and jumps, a synthetic curve (a
  logistic step) that moves :data:`POWER_LEAD_SHARE` of the way from saturation to the jump before the
  jump must be called "before", and one that moves at the jump must not.

A measure whose median lead is positive but inside its null is inconclusive too (the null could not
reject); "not before" is said only of a median lead at or below 0, in a design that passes both checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .tasks import Task

if TYPE_CHECKING:
    import pandas as pd

    from .trajectory import RunTrajectory

#: Training accuracy at which a run counts as having fit its training set.
SATURATION: float = 0.99
#: Test accuracy a run must end at (or above) to count as having generalized.
REACHED: float = 0.9
#: Checkpoints of the running median that smooths every curve the rule reads.
SMOOTHING_WINDOW: int = 3
#: Smoothed checkpoints from s_0 whose median is a curve's origin: 1, the smoothed value at s_0 (which
#: already spans two checkpoints); more would let a move within those checkpoints pass unseen.
ORIGIN_CHECKPOINTS: int = 1
#: Seeds that grokked a verdict needs (SPEC §13b).
MIN_SEEDS: int = 10
#: Draws of the circular-shift null (each seed's curve shifted at random within its window), and the seed.
NULL_PERMUTATIONS: int = 1000
NULL_SEED: int = 0
#: The positive control: Σ‖W‖_F² of the proxy matrices, a weight norm.
POSITIVE_CONTROL: str = "frobenius"
#: The power check's synthetic curve moves this share of the way from saturation to the jump before the jump.
POWER_LEAD_SHARE: float = 0.75
#: The verdicts a measure's row can carry.
BEFORE, NOT_BEFORE, INCONCLUSIVE, NEVER, TOO_FEW = "before", "not before", "inconclusive", "never", "too few seeds"


def running_median(values: Sequence[float] | np.ndarray, window: int = SMOOTHING_WINDOW) -> np.ndarray:
    """The centred running median of ``values`` over ``window`` points (fewer at the ends)."""
    v = np.asarray(values, dtype=np.float64)
    half = window // 2
    if half == 0 or v.size < 2:
        return v.copy()
    if half == 1:  # the rule's window, without nanmedian's cost (the null reads it thousands of times)
        a, b, c = v[:-2], v[1:-1], v[2:]
        middle = np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))  # median of three
        return np.concatenate([[(v[0] + v[1]) / 2], middle, [(v[-2] + v[-1]) / 2]])
    padded = np.concatenate([np.full(half, np.nan), v, np.full(half, np.nan)])
    result: np.ndarray = np.nanmedian(np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1), axis=1)  # (n,)
    return result


def excursion_shares(
    steps: Sequence[int],
    values: Sequence[float],
    start: int | None = None,
    *,
    window: int = SMOOTHING_WINDOW,
    origin_checkpoints: int = ORIGIN_CHECKPOINTS,
) -> list[float | None]:
    """How far the smoothed curve has gone, at each step, from its origin towards its farthest value,
    in [0, 1] (what the rule compares with 1/2); None before ``start``, where a value is not finite, and
    everywhere for a constant curve. ``window`` and ``origin_checkpoints`` of 1 read the raw curve from
    its value at ``start``."""
    kept = [
        i
        for i, (s, v) in enumerate(zip(steps, values, strict=True))
        if math.isfinite(v) and (start is None or s >= start)
    ]
    shares: list[float | None] = [None] * len(steps)
    if len(kept) < 2:
        return shares
    smooth = running_median(np.asarray(values, dtype=np.float64)[kept], window)
    distance = np.abs(smooth - np.median(smooth[:origin_checkpoints]))  # from the origin, at each kept step
    excursion = float(distance.max())
    if excursion == 0:
        return shares
    for i, d in zip(kept, distance / excursion, strict=True):
        shares[i] = float(d)
    return shares


def move_step(
    steps: Sequence[int],
    values: Sequence[float],
    start: int | None = None,
    *,
    window: int = SMOOTHING_WINDOW,
    origin_checkpoints: int = ORIGIN_CHECKPOINTS,
) -> int | None:
    """The first step at which the smoothed ``values`` have covered half of their excursion from their
    origin, read from step ``start`` on (default: the first step; see the module docstring); None for a
    constant curve or one without two finite values.

    Non-finite values are left out (a step whose measure could not be computed)."""
    shares = excursion_shares(steps, values, start, window=window, origin_checkpoints=origin_checkpoints)
    return next((int(s) for s, share in zip(steps, shares, strict=True) if share is not None and share >= 0.5), None)


@dataclass(frozen=True)
class GrokEvent:
    """When training accuracy saturated and test accuracy jumped (None where it never did)."""

    saturation_step: int | None
    jump_step: int | None
    final_test_accuracy: float
    #: test accuracy when training accuracy saturated (NaN when it never did)
    test_accuracy_at_saturation: float = math.nan

    @property
    def grokked(self) -> bool:
        """Training accuracy saturated, test accuracy then still lay below ``REACHED`` and ended at or
        above it: the jump came after the fit."""
        return (
            self.saturation_step is not None
            and self.jump_step is not None
            and self.test_accuracy_at_saturation < REACHED <= self.final_test_accuracy
            and self.jump_step > self.saturation_step
        )


def grok_event(
    steps: Sequence[int],
    train_accuracy: Sequence[float],
    test_accuracy: Sequence[float],
    *,
    saturation: float = SATURATION,
) -> GrokEvent:
    """The saturation step (first step with training accuracy ≥ ``saturation``) and the jump (the
    move step of test accuracy from there; from the first step when training accuracy never saturates)."""
    saturated = next((int(s) for s, a in zip(steps, train_accuracy, strict=True) if a >= saturation), None)
    at_saturation = math.nan if saturated is None else float(test_accuracy[list(steps).index(saturated)])
    return GrokEvent(saturated, move_step(steps, test_accuracy, saturated), float(test_accuracy[-1]), at_saturation)


@dataclass(frozen=True)
class MeasureLead:
    """One measure in one run: its move step and how many steps before the jump it came."""

    measure: str
    move_step: int | None
    jump_step: int | None

    @property
    def lead(self) -> float:
        """jump - move step (NaN when either is missing): positive when the measure moved first."""
        if self.move_step is None or self.jump_step is None:
            return math.nan
        return float(self.jump_step - self.move_step)

    @property
    def before(self) -> bool:
        return self.lead > 0


def measure_leads(
    steps: Sequence[int], curves: Mapping[str, Sequence[float]], event: GrokEvent
) -> tuple[MeasureLead, ...]:
    """Each measure's move step, read from the saturation step, against the run's jump."""
    start = event.saturation_step
    return tuple(MeasureLead(name, move_step(steps, values, start), event.jump_step) for name, values in curves.items())


@dataclass(frozen=True)
class LeadSummary:
    """One measure across seeds: its leads (one per seed that grokked), the null's 95th percentile of
    their median (NaN when not computed) and the verdict they support."""

    measure: str
    leads: tuple[float, ...]
    null_p95: float = math.nan
    #: whether the design can answer (the positive control is "before" and the power check passes);
    #: where it cannot, every verdict but "never" and "too few seeds" is "inconclusive"
    powered: bool = True

    @property
    def finite(self) -> np.ndarray:
        values = np.asarray(self.leads, dtype=float)
        result: np.ndarray = values[np.isfinite(values)]
        return result

    @property
    def median(self) -> float:
        return float(np.median(self.finite)) if self.finite.size else math.nan

    @property
    def low(self) -> float:
        return float(self.finite.min()) if self.finite.size else math.nan

    @property
    def high(self) -> float:
        return float(self.finite.max()) if self.finite.size else math.nan

    @property
    def share_before(self) -> float:
        """The share of seeds in which the measure moved before the jump (a seed where it never
        moved counts as not before)."""
        return float(np.mean([lead > 0 for lead in self.leads])) if self.leads else math.nan

    @property
    def rule_verdict(self) -> str:
        """The rule alone, before the design's checks: "never", "too few seeds", "before" (a positive median
        lead above the null's 95th percentile), "inconclusive" (positive, inside the null, or no null)
        or "not before" (a median lead at or below 0)."""
        if not self.finite.size:
            return NEVER
        if len(self.leads) < MIN_SEEDS:
            return TOO_FEW
        if self.median > 0:
            return BEFORE if math.isfinite(self.null_p95) and self.median > self.null_p95 else INCONCLUSIVE
        return NOT_BEFORE

    @property
    def verdict(self) -> str:
        """:attr:`rule_verdict`, made "inconclusive" where the design cannot answer (``powered`` False)
        (SPEC §13b)."""
        verdict = self.rule_verdict
        if not self.powered and verdict in (BEFORE, NOT_BEFORE):
            return INCONCLUSIVE
        return verdict


def summarize_leads(per_seed: Sequence[Sequence[MeasureLead]]) -> tuple[LeadSummary, ...]:
    """Per measure (in the order of the first seed), its leads over the seeds given."""
    names = [lead.measure for lead in per_seed[0]] if per_seed else []
    return tuple(
        LeadSummary(name, tuple(next(m.lead for m in seed if m.measure == name) for seed in per_seed)) for name in names
    )


# --- a lab run's trajectory -----------------------------------------------------------------------


def tracked_measures() -> tuple[str, ...]:
    """The measures whose trajectory is read: every CHECKPOINT measure of the registry that is
    correlated with the gap (the MODEL measures exist at the final step only)."""
    from .registry import checkpoint_measures

    return tuple(m.name for m in checkpoint_measures() if m.correlated)


@dataclass(frozen=True)
class RunGrokking:
    """One run read by the rule: its accuracies by step, its event and each measure's lead."""

    name: str
    seed: int
    steps: tuple[int, ...]
    train_accuracy: tuple[float, ...]
    test_accuracy: tuple[float, ...]
    curves: Mapping[str, tuple[float, ...]]
    event: GrokEvent
    leads: tuple[MeasureLead, ...]


def run_grokking(run: RunTrajectory, measures: Sequence[str] | None = None) -> RunGrokking:
    """The rule applied to a lab run: accuracy is 1 - error at every saved step."""
    names = tuple(measures) if measures is not None else tracked_measures()
    steps = tuple(s.step for s in run.steps)
    train = tuple(1.0 - s.train_error for s in run.steps)
    test = tuple(1.0 - s.test_error for s in run.steps)
    curves = {name: tuple(s.value(name) for s in run.steps) for name in names}
    event = grok_event(steps, train, test)
    return RunGrokking(run.name, run.spec.seed, steps, train, test, curves, event, measure_leads(steps, curves, event))


def jump_window(run: RunGrokking) -> np.ndarray:
    """The indices of the saved steps in the run's window around its jump: from saturation to as far past
    the jump as the jump is past saturation (clipped at the last step), so the jump sits at its middle."""
    start, jump = run.event.saturation_step, run.event.jump_step
    if start is None or jump is None:
        return np.zeros(0, dtype=np.int64)
    end = 2 * jump - start
    return np.flatnonzero([start <= s <= end for s in run.steps])


def shift_increments(curve: np.ndarray, window: np.ndarray, shift: int) -> np.ndarray:
    """The curve with its increments inside ``window`` (contiguous indices) rotated by ``shift``: the value at
    the window's start stays, each later one is that start plus the rotated increments' running sum, so the
    curve keeps its shape (its steps, their sizes, no wrap-around jump) and its values outside the window
    (the increments sum to the same), and its moves land elsewhere in the window.

    >>> shift_increments(np.array([0.0, 0.0, 1.0, 1.0, 1.0]), np.arange(5), 2).tolist()  # the step moves by 2
    [0.0, 0.0, 0.0, 0.0, 1.0]
    """
    out = np.asarray(curve, dtype=np.float64).copy()
    if window.size < 3 or not np.isfinite(out[window]).all():
        return out
    increments = np.diff(out[window])  # (w − 1,)
    out[window[1:]] = out[window[0]] + np.cumsum(np.roll(increments, shift))
    return out


def null_median_leads(
    runs: Sequence[RunGrokking], measure: str, permutations: int = NULL_PERMUTATIONS, seed: int = NULL_SEED
) -> np.ndarray:
    """(permutations,) the median lead over ``runs`` of ``measure`` when each run's curve has its increments
    shifted circularly within its window around the jump (:func:`jump_window`, :func:`shift_increments`) by
    a random shift of 1 to w − 2 checkpoints (the values outside the window, and the jump, stay): the rule
    applied to curves of the same shape whose timing is taken away from the jump. NaN where no shifted
    curve moves."""
    rng = np.random.default_rng([seed, sum(ord(c) for c in measure)])
    medians = np.full(permutations, np.nan)
    prepared = [(run, np.asarray(run.curves[measure], dtype=float), jump_window(run)) for run in runs]
    for b in range(permutations):
        leads = []
        for run, curve, window in prepared:
            shift = int(rng.integers(1, window.size - 1)) if window.size >= 3 else 0
            moved = move_step(run.steps, shift_increments(curve, window, shift).tolist(), run.event.saturation_step)
            if moved is not None and run.event.jump_step is not None:
                leads.append(run.event.jump_step - moved)
        if leads:
            medians[b] = float(np.median(leads))
    return medians


def _summary(runs: Sequence[RunGrokking], measure: str, permutations: int, powered: bool = True) -> LeadSummary:
    """One measure's leads over ``runs`` (which grokked) with its circular-shift null's 95th percentile."""
    leads = tuple(next(m.lead for m in run.leads if m.measure == measure) for run in runs)
    null = null_median_leads(runs, measure, permutations)
    p95 = float(np.percentile(null[np.isfinite(null)], 95)) if np.isfinite(null).any() else math.nan
    return LeadSummary(measure, leads, p95, powered)


def synthetic_curve(steps: Sequence[int], move: float, width: float) -> tuple[float, ...]:
    """A logistic step 1 / (1 + exp(−(s − move) / width)) at each step: a curve that moves at ``move``."""
    s = np.asarray(steps, dtype=np.float64)
    return tuple(float(v) for v in 1.0 / (1.0 + np.exp(-np.clip((s - move) / width, -50.0, 50.0))))


def with_synthetic(runs: Sequence[RunGrokking], name: str, lead_share: float) -> tuple[RunGrokking, ...]:
    """The runs with one more curve ``name``: a logistic step that moves ``lead_share`` of the way from each
    run's saturation to its jump before the jump (0: at the jump; negative: after it), two checkpoints wide."""
    out = []
    for run in runs:
        start, jump = run.event.saturation_step, run.event.jump_step
        assert start is not None and jump is not None
        spacing = float(np.median(np.diff(run.steps))) if len(run.steps) > 1 else 1.0
        curve = synthetic_curve(run.steps, jump - lead_share * (jump - start), 2.0 * spacing)
        curves = {**run.curves, name: curve}
        lead = MeasureLead(name, move_step(run.steps, curve, start), jump)
        out.append(replace(run, curves=curves, leads=(*run.leads, lead)))
    return tuple(out)


@dataclass(frozen=True)
class PowerCheck:
    """The rule and its null on synthetic curves laid on the runs' own checkpoints and jumps: one that leads
    by ``lead_share`` of the way from saturation to the jump, and one that moves at the jump."""

    lead_share: float
    leading: LeadSummary
    at_jump: LeadSummary

    @property
    def passes(self) -> bool:
        """The leading curve is called "before" and the one at the jump is not."""
        return self.leading.rule_verdict == BEFORE and self.at_jump.rule_verdict != BEFORE


def power_check(
    runs: Sequence[RunGrokking], lead_share: float = POWER_LEAD_SHARE, permutations: int = NULL_PERMUTATIONS
) -> PowerCheck:
    """Whether the rule and its null find a lead these runs could show (:class:`PowerCheck`); ``runs`` are
    those that grokked."""
    grokked = with_synthetic(with_synthetic(runs, "synthetic_leading", lead_share), "synthetic_at_jump", 0.0)
    return PowerCheck(
        lead_share,
        _summary(grokked, "synthetic_leading", permutations),
        _summary(grokked, "synthetic_at_jump", permutations),
    )


@dataclass(frozen=True)
class GrokkingVerdict:
    """Every measure's row over the seeds that grokked, with the design's two checks: the positive control's
    own row (read by the rule alone) and the power check. ``powered``: both pass."""

    summaries: tuple[LeadSummary, ...]
    control: LeadSummary | None
    power: PowerCheck | None

    @property
    def powered(self) -> bool:
        return (
            self.control is not None
            and self.control.rule_verdict == BEFORE
            and self.power is not None
            and self.power.passes
        )


def grokking_verdict(runs: Sequence[RunGrokking], permutations: int = NULL_PERMUTATIONS) -> GrokkingVerdict:
    """The rule, its null and the design's checks over the runs that grokked (none: an empty verdict)."""
    grokked = [run for run in runs if run.event.grokked]
    if not grokked:
        return GrokkingVerdict((), None, None)
    names = [lead.measure for lead in grokked[0].leads]
    raw = [_summary(grokked, name, permutations) for name in names]
    control = next((s for s in raw if s.measure == POSITIVE_CONTROL), None)
    power = power_check(grokked, permutations=permutations) if len(grokked) >= MIN_SEEDS else None
    checked = GrokkingVerdict(tuple(raw), control, power)
    powered = checked.powered
    return GrokkingVerdict(tuple(replace(s, powered=powered) for s in raw), control, power)


def grokking_summary(runs: Sequence[RunGrokking], permutations: int = NULL_PERMUTATIONS) -> tuple[LeadSummary, ...]:
    """Per measure, its leads over the runs that grokked (none: an empty table), with the 95th percentile
    of its circular-shift null and the design's checks applied (:func:`grokking_verdict`)."""
    return grokking_verdict(runs, permutations).summaries


# --- tables ----------------------------------------------------------------------------------------

#: The files a lab directory gains when it holds runs of the modular task.
GROKKING_CSV, GROKKING_SUMMARY_CSV = "grokking.csv", "grokking_summary.csv"
#: The power check's two synthetic curves over the runs that grokked (:func:`power_frame`).
GROKKING_POWER_CSV = "grokking_power.csv"
#: The power check's curves as :func:`power_frame` names them.
LEADING_CURVE, AT_JUMP_CURVE = "synthetic_leading", "synthetic_at_jump"


def grokking_runs(runs: Sequence[RunTrajectory]) -> tuple[RunGrokking, ...]:
    """The rule applied to every run of the modular task (the task on which models grok), in order."""
    return tuple(run_grokking(run) for run in runs if run.spec.task.kind is Task.MODULAR)


def leads_frame(runs: Sequence[RunGrokking]) -> pd.DataFrame:
    """One row per run and measure: the run's saturation, jump and whether it grokked, the measure's
    move step and lead."""
    import pandas as pd

    rows = [
        {
            "run": run.name,
            "seed": run.seed,
            "saturation_step": run.event.saturation_step,
            "jump_step": run.event.jump_step,
            "test_accuracy_at_saturation": run.event.test_accuracy_at_saturation,
            "final_test_accuracy": run.event.final_test_accuracy,
            "grokked": run.event.grokked,
            "measure": lead.measure,
            "move_step": lead.move_step,
            "lead": lead.lead,
            "before": lead.before,
        }
        for run in runs
        for lead in run.leads
    ]
    return pd.DataFrame(rows)


def _summary_row(s: LeadSummary) -> list[object]:
    """One row of :func:`summary_frame`, in its columns' order."""
    return [
        s.measure,
        len(s.leads),
        s.median,
        s.low,
        s.high,
        s.share_before,
        s.null_p95,
        s.rule_verdict,
        s.powered,
        s.verdict,
    ]


def summary_frame(summaries: Sequence[LeadSummary]) -> pd.DataFrame:
    """One row per measure: its leads over the seeds that grokked, their median, range, the share of
    seeds in which it moved first, the circular-shift null's 95th percentile of the median lead, what the
    rule alone says, whether the design can answer (the positive control and the power check pass), and
    the verdict."""
    import pandas as pd

    columns = [
        "measure",
        "seeds",
        "median_lead",
        "lowest_lead",
        "highest_lead",
        "share_before",
        "null_p95",
        "rule_verdict",
        "powered",
        "verdict",
    ]
    return pd.DataFrame(
        [_summary_row(s) for s in summaries],
        columns=columns,
    )


def power_frame(power: PowerCheck | None, seeds: Sequence[int]) -> pd.DataFrame:
    """grokking_power.csv: the power check's two synthetic curves (:func:`power_check`), one row per curve
    and seed that grokked (``seeds``, in the order of the check's leads): ``curve`` (``synthetic_leading``,
    ``synthetic_at_jump``), ``lead_share`` (how far before the jump the curve moves), ``seed``, the curve's
    ``lead`` on that seed and its null's 95th percentile of the median lead (``null_p95``); no rows
    without a check (fewer seeds grokked than a verdict needs)."""
    import pandas as pd

    columns = ["curve", "lead_share", "seed", "lead", "null_p95"]
    if power is None:
        return pd.DataFrame(columns=columns)
    rows = [
        [curve, power.lead_share if curve == LEADING_CURVE else 0.0, seed, lead, summary.null_p95]
        for curve, summary in ((LEADING_CURVE, power.leading), (AT_JUMP_CURVE, power.at_jump))
        for seed, lead in zip(seeds, summary.leads, strict=True)
    ]
    return pd.DataFrame(rows, columns=columns)


def grokking_sentence(
    runs: Sequence[RunGrokking],
    name_of: Callable[[str], str] = str,
    ours: str = "ours",
    *,
    summaries: Sequence[LeadSummary] | None = None,
    verdict: GrokkingVerdict | None = None,
) -> str:
    """What the runs show, in words computed from their numbers: how many grokked and when; whether the
    design can answer (the positive control and the power check); which measures moved before the jump
    beyond their circular-shift null, or that the verdicts are inconclusive, or, under :data:`MIN_SEEDS`
    seeds, that no verdict is given; and the leads of ours at p* and of the positive control against their
    nulls.

    ``verdict``: :func:`grokking_verdict` of ``runs``, when the caller holds it already (its null shifts
    every measure's curves a thousand times: seconds for ten seeds); computed here otherwise
    (``summaries``, the older argument, is read as that verdict's rows)."""
    grokked = [run for run in runs if run.event.grokked]
    if not grokked:
        return f"None of the {len(runs)} runs grokked, so no measure can be said to move before a jump."
    saturation = int(np.median([run.event.saturation_step for run in grokked]))
    jump = int(np.median([run.event.jump_step for run in grokked]))
    opening = (
        f"{len(grokked)} of {len(runs)} seeds grok: training accuracy reaches {SATURATION:g} by step {saturation:,} "
        f"and test accuracy moves at step {jump:,} (medians)."
    )
    if verdict is None:
        verdict = grokking_verdict(runs) if summaries is None else GrokkingVerdict(tuple(summaries), None, None)
    rows = verdict.summaries
    if len(grokked) < MIN_SEEDS:
        middle = (
            f" With {len(grokked)} seed{'s' if len(grokked) != 1 else ''} that grokked (a verdict needs {MIN_SEEDS}), "
            "no measure is said to move before the jump; the leads below are measurements, set against what "
            "circularly shifted curves give."
        )
    else:
        middle = _design_words(verdict, name_of)
    return opening + middle + _own_leads(rows, verdict, name_of, ours)


def _design_words(verdict: GrokkingVerdict, name_of: Callable[[str], str]) -> str:
    """Whether the design can answer (the power check, the positive control), then which measures moved
    before the jump beyond their null, or that none did, and how many are inconclusive."""
    rows = verdict.summaries
    middle = ""
    power = verdict.power
    if power is not None:
        share = f"{power.lead_share:.0%} of the way from saturation to the jump"
        middle += (
            f" Power check: a synthetic curve that moves {share} (median lead {power.leading.median:+,.0f} "
            f"steps, null 95th percentile {power.leading.null_p95:+,.0f}) is "
            f"{'called' if power.leading.rule_verdict == BEFORE else 'not called'} before, and one that moves "
            f"at the jump is {'not ' if power.at_jump.rule_verdict != BEFORE else ''}called before"
            f"{'' if power.passes else ': the rule cannot find a lead these runs could show'}."
        )
    control = verdict.control
    if control is not None:
        middle += (
            f" The positive control, {name_of(control.measure)}, is "
            f"{'called' if control.rule_verdict == BEFORE else 'not called'} before (median lead "
            f"{control.median:+,.0f} steps, null 95th percentile {control.null_p95:+,.0f})."
        )
    first = [s for s in rows if s.verdict == BEFORE]
    open_rows = [s for s in rows if s.verdict == INCONCLUSIVE]
    if verdict.control is not None and not verdict.powered:
        middle += (
            f" So the design cannot answer: every measure that moved is inconclusive ({len(open_rows)} of "
            f"{len(rows)}), none is said to move before the jump or not."
        )
    elif first:
        names = ", ".join(
            f"{name_of(s.measure)} (median {s.median:+,.0f} steps, null 95th percentile {s.null_p95:+,.0f})"
            for s in first
        )
        middle += f" Moved before the jump beyond the circular-shift null: {names}."
    else:
        middle += " No measure's median lead beats its circular-shift null."
    if verdict.powered and open_rows:
        middle += f" Inconclusive (a positive median lead inside its null): {len(open_rows)} measures."
    return middle


def _own_leads(rows: Sequence[LeadSummary], verdict: GrokkingVerdict, name_of: Callable[[str], str], ours: str) -> str:
    """The leads of ours at p* and of the positive control (where the design's check has not named it
    already) against their nulls' 95th percentiles."""
    closing = ""
    for measure in (ours, POSITIVE_CONTROL):
        own = next((s for s in rows if s.measure == measure), None)
        if own is None or not own.finite.size or (measure == POSITIVE_CONTROL and verdict.control is not None):
            continue
        subject = name_of(measure) + (" (the positive control)" if measure == POSITIVE_CONTROL else "")
        closing += (
            f" {subject[:1].upper()}{subject[1:]}: median lead {own.median:+,.0f} steps (from {own.low:+,.0f} to "
            f"{own.high:+,.0f}), against {own.null_p95:+,.0f} for the null's 95th percentile: {own.verdict}."
        )
    return closing


def run_sentence(run: RunGrokking, name_of: Callable[[str], str] = str, ours: str = "ours") -> str:
    """One run read by the rule, in words from its numbers: when it saturated and jumped, which measures
    moved first and where ours at p* moved."""
    event = run.event
    if not event.grokked:
        fit = (
            f"never reaches {SATURATION:g}"
            if event.saturation_step is None
            else f"reaches {SATURATION:g} at step {event.saturation_step:,}"
        )
        final = f"final test accuracy {event.final_test_accuracy:.3f}"
        return f"This run does not grok by the rule: training accuracy {fit}, {final}."
    opening = (
        f"Training accuracy reaches {SATURATION:g} at step {event.saturation_step:,}, when test accuracy is "
        f"{event.test_accuracy_at_saturation:.3f}; test accuracy moves at step {event.jump_step:,} and ends at "
        f"{event.final_test_accuracy:.3f}."
    )
    first = [lead for lead in run.leads if lead.before]
    middle = (
        " Moved before the jump: " + ", ".join(f"{name_of(m.measure)} ({m.lead:+,.0f} steps)" for m in first) + "."
        if first
        else " No measure moved before the jump."
    )
    own = next((lead for lead in run.leads if lead.measure == ours), None)
    if own is None or own.move_step is None:
        return opening + middle
    subject = name_of(ours)
    return opening + middle + f" {subject[:1].upper()}{subject[1:]} moves at step {own.move_step:,} ({own.lead:+,.0f})."
