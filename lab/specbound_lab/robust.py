"""Dziugaite et al.'s robust view of a measure (2020, "In search of robust measures of generalization",
§3-4): a measure is judged by its sign-errors over many small, controlled experiments, and by the worst
of them, not by one correlation over every run.

An environment in their sense is a **coupling**: two hyperparameter configurations of one task ×
family that differ in exactly one hyperparameter, compared seed for seed (run i of the first
configuration against run j of the second, with the same seed). On a coupled pair the sign-error of a
measure C against the gap g is

    (1 − sgn(C_j − C_i) · sgn(g_j − g_i)) / 2,

0 when the measure orders the pair as the gap does, 1 when it orders it the other way, ½ on a tie in C
(their convention: a measure that cannot tell two runs apart is right half the time). A pair whose
gap difference is within noise, |g_j − g_i| ≤ 1.96 √(se_i² + se_j²) with se the test errors'
standard errors (an exact tie of the gaps always), is left out and counted, as their code leaves out
pairs within a Hoeffding bound; so is a pair where either run's value is missing or censored. A
coupling's sign-error is the mean over the pairs it keeps and needs at least :data:`MIN_COUPLED_PAIRS` of them.

Over the couplings of every environment that counts (fitted, five seeds: :mod:`specbound_lab.verdict`),
a measure's sign-errors form a distribution: the Lab page draws its CDF, and :class:`RobustSummary`
gives its worst case (SPEC §13's criterion), 90th percentile and mean, and its mean per hyperparameter
axis. :func:`robust_verdict` reads them: it leads with the worst case and the 90th percentile, and it
names a "best" measure (the smallest mean sign-error) only where the paired interval of its difference
from the runner-up excludes 0. The interval resamples *configurations*: a draw takes every
configuration of the couplings K times with replacement, and a coupling counts as often as both its
configurations were drawn (the product of their multiplicities), so the couplings that share a
configuration move together; every measure sees the same draws (a paired difference).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .correlation import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    PairedTest,
    Verdict,
    bootstrap_counts,
    cluster_ids,
    paired_tests,
)
from .grid import FROM_SCRATCH, HYPERPARAMETER_AXES, SEED_AXIS
from .registry import is_baseline
from .tasks import Task
from .train import Family, LabError, family_of, task_of

if TYPE_CHECKING:
    import pandas as pd

#: A coupled pair whose gap difference is within this many standard errors of the difference is noise.
NOISE_Z: float = 1.96
#: A coupling counts with at least this many kept (noise-free, uncensored) seed pairs.
MIN_COUPLED_PAIRS: int = 2
#: The columns of runs.csv that make a configuration (every hyperparameter but the seed); those a
#: table lacks (an older one) are left out.
CONFIGURATION_COLUMNS: tuple[str, ...] = (*HYPERPARAMETER_AXES, "steps", "until_fit")


def configuration_columns(frame: pd.DataFrame) -> list[str]:
    """The configuration columns ``frame`` has; ``fine_tuning`` only where some run was fine-tuned (a
    sweep trained from scratch keeps the configurations it had before fine-tuning existed)."""
    columns = [c for c in CONFIGURATION_COLUMNS if c in frame.columns]
    if "fine_tuning" in columns and (frame["fine_tuning"] == FROM_SCRATCH).all():
        columns.remove("fine_tuning")
    return columns


def environment_name(task: Task | str, family: Family | str, fine_tuned: bool = False) -> str:
    """``task/family``, and `` fine-tuned`` for runs that start from a pretrained base.

    >>> environment_name(Task.MARKOV, Family.GPT2), environment_name("threshold", "bert", fine_tuned=True)
    ('markov/gpt2', 'threshold/bert fine-tuned')
    """
    return f"{task}/{family}" + (" fine-tuned" if fine_tuned else "")


def split_environment(name: str) -> tuple[Task, Family, bool]:
    """(task, family, fine-tuned) of an environment's name (:func:`environment_name`; LabError for an
    unknown task or family).

    >>> split_environment("markov/gpt2")
    (<Task.MARKOV: 'markov'>, <Family.GPT2: 'gpt2'>, False)
    """
    task, _, rest = name.partition("/")
    family, _, tuned = rest.partition(" ")
    return task_of(task), family_of(family), tuned == "fine-tuned"


def environment_of(row: pd.Series) -> str:
    """The environment of a runs.csv row (:func:`environment_name`)."""
    fine_tuning = row.get("fine_tuning", FROM_SCRATCH)
    return environment_name(row["task"], row["family"], isinstance(fine_tuning, str) and fine_tuning != FROM_SCRATCH)


@dataclass(frozen=True)
class Coupling:
    """Two configurations of one environment that differ in ``axis`` alone, with their seed pairs: row
    indices (i, j) into the frame, i the configuration with the smaller value of the axis."""

    environment: str
    axis: str
    low: str  # the two configurations (JSON)
    high: str
    pairs: tuple[tuple[int, int], ...]
    noise: tuple[bool, ...]  # per pair, whether its gap difference is within noise


def setting_order(value: object) -> float:
    """Where an axis value sits on its axis: the number itself, and for the ``fine_tuning`` axis the
    trained rank (``lora{r}`` at r, ``full`` above every rank), so a coupling's "low" side is the smaller."""
    if isinstance(value, str):
        if value.startswith("lora") and value[4:].isdigit():
            return float(value[4:])
        return math.inf
    return float(value)  # type: ignore[arg-type]


def couplings(frame: pd.DataFrame, noise_filter: bool = True) -> tuple[Coupling, ...]:
    """Every coupling of the runs of ``frame`` (one environment's final rows), seed for seed."""
    columns = configuration_columns(frame)
    configs: dict[tuple[object, ...], dict[int, int]] = defaultdict(dict)  # configuration -> seed -> row
    for position, (_, row) in enumerate(frame.iterrows()):
        config, seed = tuple(row[c] for c in columns), int(row[SEED_AXIS])
        if seed in configs[config]:
            other = frame.iloc[configs[config][seed]]
            raise LabError(
                f"runs {other.get('run', '?')} and {row.get('run', '?')} share every hyperparameter and the seed "
                f"in runs.csv: the verdict cannot tell them apart (train them into separate directories)"
            )
        configs[config][seed] = position
    gap = frame["gap"].to_numpy(dtype=np.float64)
    se = frame["test_error_se"].to_numpy(dtype=np.float64)
    environment = environment_of(frame.iloc[0]) if len(frame) else ""
    found = []
    keys = sorted(configs, key=lambda k: json.dumps(k, default=str))
    for a_index, a in enumerate(keys):
        for b in keys[a_index + 1 :]:
            differing = [c for c, u, v in zip(columns, a, b, strict=True) if u != v]
            if len(differing) != 1:
                continue
            axis = differing[0]
            position = columns.index(axis)
            low, high = (a, b) if setting_order(a[position]) < setting_order(b[position]) else (b, a)
            seeds = sorted(set(configs[low]) & set(configs[high]))
            if not seeds:
                continue  # no seed in common: nothing to compare seed for seed
            pairs = tuple((configs[low][s], configs[high][s]) for s in seeds)
            # within noise: |Δg| ≤ 1.96 √(se_i² + se_j²); an exact tie of the gaps (two errors of 0, whose
            # standard errors are 0 too) orders nothing either, filter or not
            noise = tuple(
                gap[i] == gap[j] or (noise_filter and abs(gap[i] - gap[j]) <= NOISE_Z * math.hypot(se[i], se[j]))
                for i, j in pairs
            )
            found.append(
                Coupling(
                    environment,
                    axis,
                    json.dumps(dict(zip(columns, low, strict=True)), default=str),
                    json.dumps(dict(zip(columns, high, strict=True)), default=str),
                    pairs,
                    noise,
                )
            )
    return tuple(found)


@dataclass(frozen=True)
class CoupledSignError:
    """One measure on one coupling: its sign-error over the kept pairs (NaN under the minimum)."""

    coupling: Coupling
    sign_error: float
    kept: int  # pairs with a value of the measure on both runs, outside noise
    censored: int  # pairs left out because a run's value is censored (or missing)

    @property
    def counted(self) -> bool:
        return self.kept >= MIN_COUPLED_PAIRS


def coupled_sign_errors(values: np.ndarray, gap: np.ndarray, found: Sequence[Coupling]) -> tuple[CoupledSignError, ...]:
    """The measure's sign-error on every coupling: mean over the kept pairs of (1 − sgn ΔC sgn Δg) / 2
    (a tie in C counts ½; a pair within noise, or with a non-finite value, is not kept)."""
    out = []
    for coupling in found:
        errors, censored = [], 0
        for (i, j), noisy in zip(coupling.pairs, coupling.noise, strict=True):
            if noisy:
                continue
            if not (math.isfinite(values[i]) and math.isfinite(values[j])):
                censored += 1
                continue
            errors.append((1.0 - np.sign(values[j] - values[i]) * np.sign(gap[j] - gap[i])) / 2.0)
        kept = len(errors)
        error = float(np.mean(errors)) if kept >= MIN_COUPLED_PAIRS else math.nan
        out.append(CoupledSignError(coupling, error, kept, censored))
    return tuple(out)


@dataclass(frozen=True)
class RobustSummary:
    """One measure's coupled sign-errors over every fitted environment (Dziugaite et al.'s robust view)."""

    measure: str
    errors: tuple[float, ...]  # one per coupling that counts, in environment order
    axes: tuple[str, ...]  # the axis of each
    environments: tuple[str, ...]  # the environment of each
    #: the two configurations of each (JSON), within its environment: what the paired bootstrap resamples
    sides: tuple[tuple[str, str], ...] = ()

    def keys(self) -> tuple[tuple[str, str, str], ...]:
        """(environment, low, high) of each coupling: the same coupling under every measure."""
        return tuple((e, low, high) for e, (low, high) in zip(self.environments, self.sides, strict=True))

    @property
    def couplings(self) -> int:
        return len(self.errors)

    @property
    def mean(self) -> float:
        return float(np.mean(self.errors)) if self.errors else math.nan

    @property
    def p90(self) -> float:
        """The 90th percentile (linear interpolation between order statistics, numpy's default)."""
        return float(np.percentile(self.errors, 90)) if self.errors else math.nan

    @property
    def max(self) -> float:
        return float(np.max(self.errors)) if self.errors else math.nan

    def by_axis(self) -> dict[str, float]:
        """The mean sign-error per hyperparameter axis, axes in order of first appearance."""
        out: dict[str, list[float]] = defaultdict(list)
        for axis, error in zip(self.axes, self.errors, strict=True):
            out[axis].append(error)
        return {axis: float(np.mean(errors)) for axis, errors in out.items()}


def robust_summaries(coupled: Mapping[str, Sequence[CoupledSignError]]) -> tuple[RobustSummary, ...]:
    """Each measure's summary over its coupled sign-errors (by measure name, in order), of the couplings
    that count."""
    out = []
    for name, errors in coupled.items():
        counted = [c for c in errors if c.counted]
        out.append(
            RobustSummary(
                name,
                tuple(c.sign_error for c in counted),
                tuple(c.coupling.axis for c in counted),
                tuple(c.coupling.environment for c in counted),
                tuple((c.coupling.low, c.coupling.high) for c in counted),
            )
        )
    return tuple(out)


def mean_difference_draws(
    a: RobustSummary, b: RobustSummary, draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED
) -> tuple[float, np.ndarray]:
    """mean sign-error of ``a`` − that of ``b`` over the couplings both count, and its draws from a bootstrap
    over configurations (module docstring): a coupling's weight in a draw is the product of its two
    configurations' multiplicities, and a draw's mean is Σ w e / Σ w (NaN where no coupling is drawn).

    >>> one = RobustSummary("a", (0.0, 1.0), ("n", "n"), ("e", "e"), (("x", "y"), ("y", "z")))
    >>> two = RobustSummary("b", (0.5, 0.5), ("n", "n"), ("e", "e"), (("x", "y"), ("y", "z")))
    >>> mean_difference_draws(one, two)[0]
    0.0
    """
    mine = dict(zip(a.keys(), a.errors, strict=True))
    theirs = dict(zip(b.keys(), b.errors, strict=True))
    shared = [k for k in mine if k in theirs]
    if not shared:
        return math.nan, np.full(draws, np.nan)
    difference = np.array([mine[k] - theirs[k] for k in shared])  # (C,)
    labels = [f"{e}\n{side}" for e, low, high in shared for side in (low, high)]
    ids = cluster_ids(labels, len(labels)).reshape(len(shared), 2)  # (C, 2) configuration index of each side
    counts = bootstrap_counts(int(ids.max()) + 1, draws, seed)  # (B, K)
    weights = counts[:, ids[:, 0]] * counts[:, ids[:, 1]]  # (B, C)
    total = weights.sum(axis=1)
    sample = np.divide(weights @ difference, total, out=np.full(draws, np.nan), where=total > 0)
    return float(difference.mean()), sample


@dataclass(frozen=True)
class RobustVerdict:
    """What the robust view says, read in SPEC §13's order: the worst case first, then the 90th percentile,
    then the mean with a paired interval.

    ``worst`` and ``p90`` hold every row (the trivial baselines too) at the smallest value of that
    statistic (ties all named). ``leader`` has the smallest mean sign-error, ``runner_up`` the next;
    ``against_runner_up`` is their paired test (the difference runner-up − leader, positive when the
    leader errs less), and ``best`` is the leader only where it is ``BETTER`` (its interval excludes 0;
    None otherwise: no measure is told apart). ``baseline`` is the trivial baseline with the smallest
    mean (read in its declared direction), and ``against_baseline`` the leader against it, paired the
    same way and Holm-adjusted over every measure compared with that baseline (its ``family``).
    """

    couplings: int
    worst: tuple[RobustSummary, ...]
    p90: tuple[RobustSummary, ...]
    leader: RobustSummary
    runner_up: RobustSummary | None
    against_runner_up: PairedTest | None
    baseline: RobustSummary | None
    against_baseline: PairedTest | None

    @property
    def best(self) -> RobustSummary | None:
        test = self.against_runner_up
        return self.leader if test is not None and test.verdict is Verdict.BETTER else None


def _paired(a: RobustSummary, b: RobustSummary) -> PairedTest:
    """a against b on the mean sign-error (lower is better), one comparison (no family to adjust for)."""
    (test,) = paired_tests({a.measure: mean_difference_draws(a, b)}, b.measure, higher_is_better=False)
    return test


def robust_verdict(rows: Sequence[RobustSummary]) -> RobustVerdict | None:
    """The robust view's reading (:class:`RobustVerdict`) over the measures on every coupling (those recorded
    in fewer environments stand on other couplings and are not compared); None without a coupling."""
    counted = [r for r in rows if r.couplings]
    if not counted:
        return None
    total = max(r.couplings for r in counted)
    full = [r for r in counted if r.couplings == total]
    measures = [r for r in full if not is_baseline(r.measure)] or full
    baselines = [r for r in full if is_baseline(r.measure)]
    worst = min(r.max for r in full)
    p90 = min(r.p90 for r in full)
    ranked = sorted(measures, key=lambda r: (r.mean, r.p90, r.max))
    leader = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else None
    baseline = min(baselines, key=lambda r: (r.mean, r.p90, r.max)) if baselines else None
    return RobustVerdict(
        total,
        tuple(r for r in full if math.isclose(r.max, worst, abs_tol=1e-12)),
        tuple(r for r in full if math.isclose(r.p90, p90, abs_tol=1e-12)),
        leader,
        runner_up,
        _paired(leader, runner_up) if runner_up is not None else None,
        baseline,
        _against(leader, measures, baseline) if baseline is not None and baseline is not leader else None,
    )


def _against(leader: RobustSummary, measures: Sequence[RobustSummary], baseline: RobustSummary) -> PairedTest:
    """The leader against the baseline on the mean sign-error, Holm-adjusted over every measure compared
    with that baseline (the leader was picked among them, so its test is one of a family)."""
    differences = {r.measure: mean_difference_draws(r, baseline) for r in measures if r is not baseline}
    tests = paired_tests(differences, baseline.measure, higher_is_better=False)
    return next(t for t in tests if t.measure == leader.measure)
