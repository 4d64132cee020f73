"""What makes a verdict credible (SPEC §13b): the lab's verdict on each measure, from runs.csv alone.

Every number here is a function of the final rows of a lab directory's ``runs.csv`` (one row per run),
so anyone can recompute it from the shipped table. For each *environment* (one task × family):

* **Runs that fit.** A classification run has fitted its training set when its final training
  cross-entropy is at most :data:`~specbound_lab.train.FIT_LOSS` = 0.01 (Jiang et al. 2020, §4) or,
  with label noise, its training error is 0 (every flipped label memorised). The verdict reads fitted
  runs only, and says how many of how many; an environment where fewer than :data:`MIN_FITTED_SHARE`
  = 80 % fitted is *not fitted*: shown, and kept out of every summary over environments. A next-token
  task is stochastic (its training loss cannot reach 0): it trains for a fixed budget, every run is
  read, and its training loss is set against the chain's entropy rate (below it: memorising).
* **τ with honest intervals.** Kendall's τ-b over runs, its 95 % interval from a bootstrap over
  *configurations* (the seeds of one configuration share its n, depth and width, so they are drawn
  together); Jiang et al.'s granulated τ over the hyperparameter axes, resampled jointly, with the
  seed's ψ reported apart as seed noise (:mod:`specbound_lab.correlation`).
* **Confounders.** τ within strata of n and within strata of the parameter count: τ-b over the pairs
  of runs that share n (resp. the parameter count). A measure whose τ vanishes within strata orders
  model size or data size, not generalization. For a next-token task also τ within strata of the final
  training loss against the entropy rate (:data:`FIT_STRATA` equal strata of the excess loss), since a
  run that memorises its sequences has both a low training loss and a large gap.
* **Pooled sign-error** = (1 − τ_a) / 2 over all pairs, a tie in the measure counting ½, with the
  number of tied pairs: the all-pairs statistic of the lab's earlier robust view, under its own name.
* **Dziugaite et al.'s robust view** over the couplings of the environment's runs
  (:mod:`specbound_lab.robust`: configurations that differ in one hyperparameter, seed for seed, ties
  ½, a noise filter); over the couplings of every fitted environment, each measure's distribution of
  sign-errors, its mean, 90th percentile and maximum (:func:`robust_view`). For a next-token task the
  gap is on the loss, whose standard error runs.csv does not hold: its pairs are not filtered (the
  verdict says so).
* **Censored values.** A flatness or sharpness search that hit an end of its range gives a bound, not a
  value (:meth:`~specbound_lab.registry.Measure.is_censored`): such a run is counted and shown, and
  left out of that measure's statistics (never a value, never a tie).

The trivial baselines (1/n, the optimisation steps, the final training loss, the parameter count) and
the normalised forms √(C / n) are measures of :mod:`specbound_lab.registry` like any other, so they
are rows of every table here.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from .correlation import (
    Interval,
    PairedTest,
    TauDifference,
    compare_taus,
    correlate,
    kendall_tau_a,
    paired_tests,
    tau_b_differences,
)
from .grid import FROM_SCRATCH, HYPERPARAMETER_AXES, SEED_AXIS
from .registry import MEASURES, Measure, baseline_measures, correlated_measures, is_baseline
from .robust import (
    CoupledSignError,
    RobustSummary,
    configuration_columns,
    coupled_sign_errors,
    couplings,
    environment_of,
    robust_summaries,
    setting_order,
    split_environment,
)
from .tasks import Task
from .train import Family, fits_training_set, standard_error

if TYPE_CHECKING:
    import pandas as pd

#: An environment is fitted when at least this share of its runs fitted.
MIN_FITTED_SHARE: float = 0.8
#: An environment counts (its table is a verdict, its couplings join the robust view) with at least this
#: many seeds per configuration (SPEC §13b); one with fewer is shown, not counted.
MIN_SEEDS: int = 5
#: A next-token environment's runs fall into this many strata of equal size by their final training loss
#: minus the entropy rate (SPEC §13b: "τ also within strata of it").
FIT_STRATA: int = 3
#: The hyperparameter axes of the granulated τ (the seed is its noise axis).
GRANULATED_AXES: tuple[str, ...] = HYPERPARAMETER_AXES


class Outcome(Enum):
    """What a verdict asks its measures to order, a column of runs.csv: the generalization gap (every
    environment, SPEC §13b) or, for a fine-tune of the lab's base, forgetting, its error on the base's own
    task (``base_task_error``, SPEC §14b: Shuttleworth et al. 2025 tie intruder dimensions to it).

    >>> Outcome.FORGETTING.column, Outcome.FORGETTING.noun
    ('base_task_error', 'forgetting')
    """

    GAP = "gap"
    FORGETTING = "base_task_error"

    @property
    def column(self) -> str:
        """Its column in runs.csv."""
        return self.value

    @property
    def noun(self) -> str:
        """Its name in a sentence."""
        return "the gap" if self is Outcome.GAP else "forgetting"

    def standard_errors(self, frame: pd.DataFrame) -> np.ndarray:
        """Each run's standard error of the outcome, for the couplings' noise filter: the gap's is the test
        error's (runs.csv's ``test_error_se``); forgetting's is √(e (1 − e) / m) of an error e measured on
        m = :data:`~specbound_lab.finetune.FORGETTING_SAMPLES` fresh samples of the base's task."""
        if self is Outcome.GAP:
            gap_errors: np.ndarray = frame["test_error_se"].to_numpy(dtype=np.float64)
            return gap_errors
        from .finetune import FORGETTING_SAMPLES

        errors = frame[self.column].to_numpy(dtype=np.float64)
        return np.array([standard_error(e, FORGETTING_SAMPLES) if math.isfinite(e) else math.nan for e in errors])


# --- τ within strata and the pooled sign-error --------------------------------------------------------


def stratified_tau(x: np.ndarray, y: np.ndarray, strata: Sequence[object]) -> tuple[float, int]:
    """(τ-b over the pairs of runs in the same stratum, the number of such pairs): Σ sx·sy / √(Σ|sx| Σ|sy|)
    with the sums over within-stratum pairs only (NaN when no such pair is untied in both)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    labels = np.array([json.dumps(s, sort_keys=True, default=str) for s in strata])
    i, j = np.triu_indices(x.size, k=1)
    same = labels[i] == labels[j]
    i, j = i[same], j[same]
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    untied = float(np.abs(sx).sum()) * float(np.abs(sy).sum())
    return (float((sx * sy).sum() / math.sqrt(untied)) if untied > 0 else math.nan), int(i.size)


def fit_strata(excess_loss: np.ndarray, strata: int = FIT_STRATA) -> list[int]:
    """The stratum of each run, 0 to ``strata`` − 1, by the rank of its excess training loss (equal
    sizes, the lowest first; ties broken by order)."""
    order = np.argsort(np.asarray(excess_loss, dtype=np.float64), kind="stable")
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.arange(order.size)
    return [int(r * strata // max(order.size, 1)) for r in ranks]


def pooled_sign_error(x: np.ndarray, y: np.ndarray) -> tuple[float, int, int]:
    """((1 − τ_a) / 2, pairs, pairs tied in the measure): over all pairs, a tie counting ½."""
    pairs = x.size * (x.size - 1) // 2
    if pairs == 0:
        return math.nan, 0, 0
    i, j = np.triu_indices(x.size, k=1)
    tied = int(np.count_nonzero(x[i] == x[j]))
    return (1.0 - kendall_tau_a(x, y)) / 2.0, pairs, tied


# --- one environment ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasureVerdict:
    """One measure in one environment, over its fitted runs."""

    measure: str
    runs: int  # runs with a value (censored ones excluded)
    censored: int
    kendall_tau: float
    kendall_tau_ci: Interval
    granulated_tau: float
    granulated_tau_ci: Interval
    seed_noise: float
    tau_within_n: float
    tau_within_params: float
    pooled_sign_error: float
    pairs: int
    tied_pairs: int
    coupled: tuple[CoupledSignError, ...]
    #: a next-token task's τ within strata of the training loss against the entropy rate (NaN otherwise)
    tau_within_fit: float = math.nan

    @property
    def coupled_summary(self) -> RobustSummary:
        """Its sign-errors on the couplings that count, and their count, mean, 90th percentile and worst."""
        (summary,) = robust_summaries({self.measure: self.coupled})
        return summary


@dataclass(frozen=True)
class DesignGap:
    """The mean gap of one adaptation (``lora4``, ``full``) at one n, over its fitted runs only: what a
    fine-tuning design shows before any measure is read."""

    n_train: int
    setting: str
    runs: int
    fitted_runs: int
    mean_gap: float  # over the fitted runs (NaN when none fitted)


def design_gaps(frame: pd.DataFrame, outcome: Outcome = Outcome.GAP) -> tuple[DesignGap, ...]:
    """Per n and per fine-tuning setting (by trained rank, ``full`` last), the fitted runs' mean gap (or
    mean ``outcome``: forgetting), from an environment's final runs.csv rows (empty for runs trained from
    scratch). Read per n, since n moves the gap more than any setting does and the unfitted runs are not
    spread evenly over n."""
    if "fine_tuning" not in frame.columns:
        return ()
    tuned = frame[frame["fine_tuning"].astype(str) != FROM_SCRATCH]
    if tuned.empty:
        return ()
    fits = np.array(
        [
            fits_training_set(float(r.train_loss), float(r.train_error), float(r.label_noise))
            for r in tuned.itertuples()
        ],
        dtype=bool,
    )
    out = []
    for n in sorted(set(tuned["n_train"])):
        at_n = (tuned["n_train"] == n).to_numpy()
        for setting in sorted(set(tuned["fine_tuning"][at_n]), key=setting_order):
            rows = at_n & (tuned["fine_tuning"] == setting).to_numpy()
            gaps = tuned[outcome.column].to_numpy(dtype=np.float64)[rows & fits]
            gaps = gaps[np.isfinite(gaps)]
            out.append(
                DesignGap(
                    int(n), str(setting), int(rows.sum()), int((rows & fits).sum()),
                    float(gaps.mean()) if gaps.size else math.nan,
                )
            )  # fmt: skip
    return tuple(out)


@dataclass(frozen=True)
class EnvironmentVerdict:
    """Every measure's verdict in one environment, and what the verdict stands on."""

    environment: str
    runs: int
    fitted_runs: int | None  # None for a next-token task (a fixed budget, no fit criterion)
    configurations: int  # of every run (the design), fitted or not
    seeds: int  # the most seeds of one configuration
    loss_gap: bool
    entropy_rate: float  # the chain's (next-token tasks), NaN otherwise
    below_entropy: int  # runs whose final training loss is below the entropy rate (memorising)
    couplings: int
    coupled_pairs: int
    noise_pairs: int
    measures: tuple[MeasureVerdict, ...]
    #: the measure with the highest τ (the baselines apart) against the strongest trivial baseline (the
    #: highest τ read in its declared direction), paired-bootstrapped over configurations; None without both
    against_baseline: TauDifference | None = None
    #: every measure (the baselines apart) against that baseline on τ_b, paired over configurations and
    #: Holm-adjusted over the measures compared (:func:`~specbound_lab.correlation.paired_tests`)
    baseline_tests: tuple[PairedTest, ...] = ()
    #: a fine-tuning environment's mean gap per n and setting over its fitted runs (:func:`design_gaps`)
    design: tuple[DesignGap, ...] = ()
    #: what the measures are asked to order (the gap; forgetting in :func:`forgetting_verdicts`)
    outcome: Outcome = Outcome.GAP

    @property
    def counted(self) -> bool:
        """Whether its table is a verdict and its couplings join the robust view: fitted (or a fixed budget)
        with at least :data:`MIN_SEEDS` seeds per configuration."""
        return self.fitted and self.seeds >= MIN_SEEDS

    @property
    def not_counted_because(self) -> str:
        """Why it is shown and not counted, in words ("" when it counts)."""
        reasons = []
        if not self.fitted:
            reasons.append(f"under {MIN_FITTED_SHARE:.0%} of its runs fitted")
        if self.seeds < MIN_SEEDS:
            reasons.append(f"{self.seeds} seed{'s' if self.seeds != 1 else ''} per configuration, under {MIN_SEEDS}")
        return " and ".join(reasons)

    def test_of(self, name: str) -> PairedTest | None:
        """The Holm-adjusted test of measure ``name`` against the strongest baseline (None if it has none)."""
        return next((t for t in self.baseline_tests if t.measure == name), None)

    @property
    def fitted(self) -> bool:
        """At least :data:`MIN_FITTED_SHARE` of the runs fitted (always, for a next-token task)."""
        return self.fitted_runs is None or self.fitted_runs >= MIN_FITTED_SHARE * self.runs

    @property
    def status(self) -> str:
        if self.fitted_runs is None:
            return "fixed budget"
        return "fitted" if self.fitted else "not fitted"

    @property
    def task(self) -> Task:
        return split_environment(self.environment)[0]

    @property
    def family(self) -> Family:
        """The model family alone (bert), a fine-tuning environment's too."""
        return split_environment(self.environment)[1]

    @property
    def fine_tuned(self) -> bool:
        """Its runs start from a pretrained base."""
        return split_environment(self.environment)[2]

    def measure(self, name: str) -> MeasureVerdict:
        return next(m for m in self.measures if m.measure == name)


def _measure_values(frame: pd.DataFrame, measure: Measure) -> tuple[np.ndarray, int]:
    """The measure's column as floats read in its declared direction (times its ``orientation``: the final
    training loss turned round), censored values as NaN, and how many were censored."""
    raw = frame[measure.column].to_numpy(dtype=np.float64)
    censored = np.array([math.isfinite(v) and measure.is_censored(v) for v in raw], dtype=bool)
    values = raw * float(measure.orientation)
    values[censored] = math.nan
    return values, int(censored.sum())


def verdict_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, int | None]:
    """The rows of one environment's final runs.csv rows that its verdict reads, renumbered from 0, and
    the number of fitted runs: the runs that fitted their training set, or every run of a next-token task
    (a fixed budget: None fitted)."""
    if Task(frame["task"].iloc[0]).causal:
        return frame.reset_index(drop=True), None
    fits = [
        fits_training_set(float(r.train_loss), float(r.train_error), float(r.label_noise)) for r in frame.itertuples()
    ]
    return frame[fits].reset_index(drop=True), int(sum(fits))


def environment_verdict(
    frame: pd.DataFrame, measures: Sequence[Measure] | None = None, outcome: Outcome = Outcome.GAP
) -> EnvironmentVerdict:
    """The verdict of one environment from its final runs.csv rows (every row of ``frame`` one run): how
    each measure orders the gap, or another ``outcome`` (forgetting), under the same rules (fitted runs,
    intervals over configurations, the couplings' noise filter on that outcome's standard error).

    A measure that no run of the environment recorded (a runs.csv written before the measure existed)
    has no verdict there: it is left out, not shown as an empty row."""
    measures = tuple(measures) if measures is not None else correlated_measures()
    measures = tuple(m for m in measures if m.column in frame.columns and frame[m.column].notna().any())
    loss_gap = Task(frame["task"].iloc[0]).causal
    used, fitted_runs = verdict_rows(frame)
    if loss_gap:
        entropy = float(frame["optimal_loss"].iloc[0])
        below = int((frame["train_loss"] < entropy).sum())
    else:
        entropy, below = math.nan, 0
    columns = configuration_columns(used)
    configs = [json.dumps({c: used.at[i, c] for c in columns}, default=str) for i in range(len(used))]
    axes = [a for a in (*GRANULATED_AXES, SEED_AXIS) if a in used.columns]
    fixed = [c for c in columns if c not in axes]  # settings no axis varies, which a group must share
    keys = [
        {**{a: used.at[i, a] for a in axes}, "fixed": json.dumps({c: used.at[i, c] for c in fixed}, default=str)}
        for i in range(len(used))
    ]
    if outcome is Outcome.GAP:
        found = couplings(used, noise_filter=not loss_gap)
    else:  # the couplings read the outcome as the gap, its standard error as the test error's
        outcome_view = used.assign(gap=used[outcome.column], test_error_se=outcome.standard_errors(used))
        found = couplings(outcome_view, noise_filter=not loss_gap)
    gap = used[outcome.column].to_numpy(dtype=np.float64)
    per_measure = []
    values_of: dict[str, np.ndarray] = {}
    for measure in measures:
        values, censored = _measure_values(used, measure)
        values_of[measure.name] = values
        (correlation,) = correlate({measure.name: values}, gap, keys, axes, noise_axes=(SEED_AXIS,), clusters=configs)
        finite = np.isfinite(values) & np.isfinite(gap)
        x, y = values[finite], gap[finite]
        within_n, _ = stratified_tau(x, y, used["n_train"].to_numpy()[finite].tolist())
        within_params, _ = stratified_tau(x, y, used["params"].to_numpy()[finite].tolist())
        within_fit = math.nan
        if loss_gap:
            excess = used["train_loss"].to_numpy(dtype=np.float64)[finite] - entropy
            within_fit, _ = stratified_tau(x, y, fit_strata(excess))
        pooled, pairs, tied = pooled_sign_error(x, y)
        per_measure.append(
            MeasureVerdict(
                measure.name,
                int(finite.sum()),
                censored,
                correlation.kendall_tau,
                correlation.kendall_tau_ci,
                correlation.granulated_tau,
                correlation.granulated_tau_ci,
                correlation.seed_noise,
                within_n,
                within_params,
                pooled,
                pairs,
                tied,
                coupled_sign_errors(values, gap, found),
                within_fit,
            )
        )
    against = _against_baseline(per_measure, values_of, gap, keys, axes, configs)
    tests = _baseline_tests(per_measure, values_of, gap, configs)
    design = frame.reset_index(drop=True)  # configurations and seeds of every run, fitted or not
    every = [json.dumps({c: design.at[i, c] for c in columns}, default=str) for i in range(len(design))]
    seeds = max((len(v) for v in _seeds_by_config(every, design).values()), default=0)
    return EnvironmentVerdict(
        environment_of(frame.iloc[0]),
        len(frame),
        fitted_runs,
        len(set(every)),
        seeds,
        bool(loss_gap),
        entropy,
        below,
        len(found),
        sum(len(c.pairs) for c in found),
        sum(sum(c.noise) for c in found),
        tuple(per_measure),
        against,
        tests,
        design_gaps(frame, outcome),
        outcome,
    )


def _against_baseline(
    measures: Sequence[MeasureVerdict],
    values_of: dict[str, np.ndarray],
    gap: np.ndarray,
    keys: Sequence[dict[str, object]],
    axes: Sequence[str],
    configs: Sequence[str],
) -> TauDifference | None:
    """τ(best measure) − τ(strongest baseline), paired over configurations; every measure is read in its
    declared direction (the values already are), so a baseline is never turned to suit the data."""
    floor = strongest_baseline(measures)
    candidates = [m for m in measures if np.isfinite(m.kendall_tau) and not is_baseline(m.measure)]
    if not candidates or floor is None:
        return None
    best = max(candidates, key=lambda m: m.kendall_tau)
    return compare_taus(
        best.measure,
        values_of[best.measure],
        floor.measure,
        values_of[floor.measure],
        gap,
        keys,
        axes,
        noise_axes=(SEED_AXIS,),
        clusters=configs,
    )


def strongest_baseline(measures: Sequence[MeasureVerdict]) -> MeasureVerdict | None:
    """The trivial baseline with the highest τ, each read in its declared direction (None without one)."""
    baselines = [m for m in measures if np.isfinite(m.kendall_tau) and is_baseline(m.measure)]
    return max(baselines, key=lambda m: m.kendall_tau) if baselines else None


def _baseline_tests(
    measures: Sequence[MeasureVerdict], values_of: dict[str, np.ndarray], gap: np.ndarray, configs: Sequence[str]
) -> tuple[PairedTest, ...]:
    """Every measure with a τ (the baselines apart) against the strongest baseline: τ_b difference paired over
    configurations, Holm-adjusted over the measures compared (so a "beats" among many candidates is one
    the family-wise error rate allows)."""
    floor = strongest_baseline(measures)
    candidates = [m.measure for m in measures if np.isfinite(m.kendall_tau) and not is_baseline(m.measure)]
    if floor is None or not candidates:
        return ()
    differences = tau_b_differences(
        {name: values_of[name] for name in candidates}, values_of[floor.measure], gap, clusters=configs
    )
    return paired_tests(differences, floor.measure)


def _seeds_by_config(configs: Sequence[str], frame: pd.DataFrame) -> dict[str, set[int]]:
    seeds: dict[str, set[int]] = defaultdict(set)
    for config, seed in zip(configs, frame[SEED_AXIS], strict=True):
        seeds[config].add(int(seed))
    return seeds


def verdicts(final_rows: pd.DataFrame) -> tuple[EnvironmentVerdict, ...]:
    """The verdict of every environment of a runs.csv's final rows, environments in table order."""
    frame = final_rows.reset_index(drop=True)
    names = list(dict.fromkeys(environment_of(row) for _, row in frame.iterrows()))
    return tuple(
        environment_verdict(frame[[environment_of(row) == name for _, row in frame.iterrows()]]) for name in names
    )


#: The measures a fine-tuning environment asks whether they order forgetting and the gap (SPEC §14b):
#: intruder dimensions and the proxies centred at the base. Beside them sit the trivial baselines (among
#: them the trained-parameter count, which orders LoRA's ranks below full fine-tuning, and the optimisation
#: steps), and Holm's adjustment runs over these candidates only.
DIRECTION_CANDIDATES: tuple[str, ...] = (
    "intruders",
    "ours_init",
    "distance_frobenius",
    "spectral_init",
    "bartlett_init",
)


@dataclass(frozen=True)
class ForgettingVerdict:
    """Whether intruder dimensions and the centred proxies order forgetting and the gap in one fine-tuning
    environment: two verdicts (:func:`environment_verdict`, SPEC §13b's rules: fitted runs, intervals over
    configurations, ties, the minimum seeds, Holm over :data:`DIRECTION_CANDIDATES` against the strongest
    trivial baseline) over the same runs and the same measures, one per outcome."""

    forgetting: EnvironmentVerdict
    gap: EnvironmentVerdict

    @property
    def environment(self) -> str:
        return self.forgetting.environment

    @property
    def counted(self) -> bool:
        """Whether it is a verdict (fitted, at least :data:`MIN_SEEDS` seeds per configuration)."""
        return self.forgetting.counted


def forgetting_verdicts(final_rows: pd.DataFrame) -> tuple[ForgettingVerdict, ...]:
    """The forgetting verdict of every fine-tuning environment of a runs.csv's final rows whose runs
    recorded their error on the base's task (``base_task_error``; none in a runs.csv written before it),
    environments in table order.

    >>> import pandas as pd
    >>> forgetting_verdicts(pd.DataFrame({"gap": [0.1]}))  # no base_task_error column: no verdict
    ()
    """
    frame = final_rows.reset_index(drop=True)
    if "base_task_error" not in frame.columns:
        return ()
    measures = (*(MEASURES[name] for name in DIRECTION_CANDIDATES), *baseline_measures())
    environments = [environment_of(row) for _, row in frame.iterrows()]
    out = []
    for name in dict.fromkeys(environments):
        rows = frame[[e == name for e in environments]]
        if not split_environment(name)[2] or not rows[Outcome.FORGETTING.column].notna().any():
            continue
        out.append(
            ForgettingVerdict(
                environment_verdict(rows, measures, Outcome.FORGETTING), environment_verdict(rows, measures)
            )
        )
    return tuple(out)


def robust_view(verdicts: Sequence[EnvironmentVerdict]) -> tuple[RobustSummary, ...]:
    """Each measure's coupled sign-errors over the environments that count (fitted, at least
    :data:`MIN_SEEDS` seeds per configuration; one that does not is kept out of every summary), in the
    order of the measures."""
    fitted_envs = [v for v in verdicts if v.counted]
    if not fitted_envs:
        return ()
    coupled: dict[str, list[CoupledSignError]] = {m.measure: [] for m in fitted_envs[0].measures}
    for verdict in fitted_envs:
        for m in verdict.measures:
            coupled.setdefault(m.measure, []).extend(m.coupled)
    return robust_summaries(coupled)
