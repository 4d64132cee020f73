"""The pre-registered study: at a fixed training-set size, does the spectrum-adaptive proxy order the
generalization gap better than its comparators?

The protocol is the manual's pre-registration (``docs/lab/preregistration.md``), committed before the
study's first run was trained. This module is its design (:data:`DESIGN`, :data:`ENVIRONMENTS`) and its
analysis (:func:`study_answer`), so the document, the runs and the verdict read one definition.

**Cells and runs.** A cell is one environment at one training-set size n (a *stratum*). Within a cell
only the architecture (L, N), the optimisation (learning rate, batch size, weight decay) and the seed
vary, so n, which explains most of the gap's variance across strata, cannot carry a correlation. A run
counts where it fitted its training set (SPEC §13b: cross-entropy ≤ 0.01, or no training error with
noisy labels); an environment where fewer than 80 % of runs fitted is *not fitted* and left out.

**Endpoints.** For each comparator c (:data:`COMPARATORS`), the primary endpoint is

    Δτ_c = (1 / |K|) Σ_{k ∈ K} [ τ_b(ours, gap | k) − τ_b(c, gap | k) ],

K the fitted cells, τ_b Kendall's tau-b over the cell's fitted runs, every measure read in one
direction: a larger value predicts a larger gap. Δτ_c > 0 says ours orders the gap better than c.

**Uncertainty.** A paired cluster bootstrap: a draw resamples, in every cell independently, the
cell's configurations with replacement, all seeds of a configuration together
(:func:`~specbound_lab.correlation.cluster_counts`), and recomputes every τ on that same draw, so what
ours and c share cancels in the difference. The interval is the draws' 2.5 and 97.5 percentiles; the
two-sided p-value 2 min(P*(Δ ≤ 0), P*(Δ ≥ 0)) with the usual +1 correction; Holm's step-down adjustment
over the endpoints holds the family-wise error at α = 0.05.

**Power.** With the bootstrap standard error s of an endpoint, the smallest |Δτ| detected with
probability 1 − β at the Bonferroni level (Holm's first step, the most demanding) is

    δ_min = (z_{1 − α / (2m)} + z_{1 − β}) · s,

m the number of endpoints. A pilot's standard error projects to a design with more configurations and
cells as s · √((K_pilot · C_pilot) / (K · C)) (τ over C configurations has a variance of order 1 / C;
the mean over K independent cells divides it by K): an approximation, stated as one.

Example:

>>> DESIGN.configurations, DESIGN.runs_per_environment, DESIGN.runs
(72, 720, 2160)
>>> round(minimum_detectable_difference(0.01, endpoints=6), 4)
0.0348
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from .correlation import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    Interval,
    bootstrap_p_value,
    cluster_counts,
    holm,
    kendall_tau_b,
    percentile_interval,
    tau_b_draws,
)
from .grid import SweepGrid
from .registry import MEASURES
from .robust import configuration_columns
from .tables import RUNS_CSV
from .tasks import ThresholdTask
from .train import LabError, RunSpec, TrainSettings, fits_training_set
from .verdict import MIN_FITTED_SHARE

if TYPE_CHECKING:
    import pandas as pd

#: Where the study's corpus ships, inside the lab: one lab reference per environment and ``answer.json``.
STUDY_CORPUS_DIR = Path(__file__).parent / "study_corpus"

#: The corpus' file holding the answer computed from its runs.csv files (``study analyse --json``).
ANSWER_FILE = "answer.json"

#: The commit that registered the study (``docs/lab/preregistration.md``), before its first run.
REGISTRATION_COMMIT = "f9bf6fc42c0f12270ce51a5abf1d1f94efde5d21"
#: The registration's page in the manual, from the lab's pages.
PREREGISTRATION_PAGE = "preregistration.md"

#: The measure the study is about: the spectrum-adaptive proxy at p* (SPEC §3).
SUBJECT = "ours"


@dataclass(frozen=True)
class Comparator:
    """One primary endpoint's comparator: a registered measure, the hypothesis's letter and its words."""

    measure: str
    hypothesis: str
    words: str


#: The comparators of the primary endpoints, in the pre-registration's order (a) to (f).
COMPARATORS: tuple[Comparator, ...] = (
    Comparator("params", "a", "the parameter count"),
    Comparator("steps", "b", "the number of optimisation steps"),
    Comparator("train_loss", "c", "the final training loss"),
    Comparator("edelman", "d", "the Edelman-style proxy"),
    Comparator("ours_p0", "e", "the same proxy at p = 0"),
    Comparator("ours_p2", "f", "the same proxy at p = 2"),
)
#: The family-wise error rate Holm's adjustment holds over the endpoints.
ALPHA: float = 0.05
#: The power the design is sized for.
POWER: float = 0.8
#: The effect the design is sized to detect: |Δτ| = 0.05.
TARGET_DIFFERENCE: float = 0.05


@dataclass(frozen=True)
class StudyEnvironment:
    """One environment of the study: a task, a model family and a label-noise level, in its own lab
    directory ``<study>/<key>`` (each directory's tables are those of one environment)."""

    key: str
    family: str
    label_noise: float
    words: str
    #: the cap on optimisation steps of a run that has not fitted yet
    max_steps: int = 6000

    @property
    def task(self) -> ThresholdTask:
        return ThresholdTask(label_noise=self.label_noise)


#: The study's three environments: two whose gap nearly vanishes at these n, and one whose gap does not
#: (a sixth of the labels flipped, train and test, every run trained until it memorises its training set).
ENVIRONMENTS: tuple[StudyEnvironment, ...] = (
    StudyEnvironment("threshold-bert", "bert", 0.0, "BERT encoders on the sparse threshold task"),
    StudyEnvironment("threshold-gpt2", "gpt2", 0.0, "GPT-2 decoders on the sparse threshold task"),
    StudyEnvironment(
        "noisy-bert",
        "bert",
        0.15,
        "BERT encoders on the sparse threshold task with 15 % of labels flipped, trained until memorised",
        # memorising takes longer: in the pilot a 1-layer model of width 32 had not memorised its flipped
        # labels after 6,000 steps at any learning rate (training error 0.05 to 0.13)
        max_steps=20000,
    ),
)


@dataclass(frozen=True)
class StudyDesign:
    """The design of every environment: n strata x depth x width x the optimisation settings, with several
    seeds per configuration; every run trained until it fits (at most the environment's ``max_steps``,
    the fit checked every ``settings.fit_every`` steps), a checkpoint only at the start and at the fit
    (the study reads final values alone), the MODEL measures not computed (no endpoint reads them).

    The optimisation settings are a **half fraction** of learning rate x batch size x weight decay
    (:meth:`in_fraction`): at the outer learning rates batch size and weight decay move together, at the
    inner ones against each other, so each learning rate meets two of the four (batch, decay) pairs and
    each pair two learning rates. The three main effects stay unconfounded with one another; their only
    alias is the (batch x decay) interaction with the learning rate's curvature. It halves the cost of
    the full factorial, which this project's machine could not train in a few days.
    """

    strata: tuple[int, ...] = (100, 300)
    layers: tuple[int, ...] = (1, 2, 4)
    hidden: tuple[int, ...] = (32, 64, 128)
    heads: int = 2
    #: a decade, log-spaced, 6e-5 · 10^(k/3) rounded, k = 0..3 (at 1.2e-3 the pilot's 4-layer, width-128
    #: run did not fit: stuck at a training error of 0.36 after 6,000 steps; at 6e-4 it fitted)
    learning_rates: tuple[float, ...] = (6e-5, 1.3e-4, 2.8e-4, 6e-4)
    batch_sizes: tuple[int, ...] = (32, 64)
    weight_decays: tuple[float, ...] = (0.01, 0.1)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: train the half fraction of the optimisation settings (:meth:`in_fraction`); False: all of them
    half_fraction: bool = True
    settings: TrainSettings = field(
        default_factory=lambda: TrainSettings(fit_every=100, until_fit=True, model_measures=False)
    )

    def in_fraction(self, settings: TrainSettings) -> bool:
        """Whether an optimisation setting belongs to the design: every one of the full factorial, or, in
        the half fraction, those where "batch size and weight decay at the same end of their ranges"
        holds exactly at the outer learning rates (the smallest and the largest).

        >>> [(s.learning_rate, s.batch_size, s.weight_decay) for s in DESIGN.optimisation_settings()][:4]
        [(6e-05, 32, 0.01), (6e-05, 64, 0.1), (0.00013, 32, 0.1), (0.00013, 64, 0.01)]
        """
        if not self.half_fraction:
            return True
        rate = self.learning_rates.index(settings.learning_rate)
        outer = rate in (0, len(self.learning_rates) - 1)
        same_end = self.batch_sizes.index(settings.batch_size) == self.weight_decays.index(settings.weight_decay)
        return outer == same_end

    def optimisation_settings(self) -> tuple[TrainSettings, ...]:
        """The design's (learning rate, batch size, weight decay) settings, learning rate first."""
        every = (
            replace(self.settings, learning_rate=rate, batch_size=batch, weight_decay=decay)
            for rate in self.learning_rates
            for batch in self.batch_sizes
            for decay in self.weight_decays
        )
        return tuple(s for s in every if self.in_fraction(s))

    @property
    def configurations(self) -> int:
        """Configurations per stratum and environment (every hyperparameter but n and the seed)."""
        return len(self.layers) * len(self.hidden) * len(self.optimisation_settings())

    @property
    def runs_per_environment(self) -> int:
        return self.configurations * len(self.strata) * len(self.seeds)

    @property
    def runs(self) -> int:
        return self.runs_per_environment * len(ENVIRONMENTS)

    def settings_of(self, environment: StudyEnvironment) -> TrainSettings:
        """The training settings of the environment's runs: trained until they fit, at most its
        ``max_steps``, a checkpoint only at the start and at the fit."""
        steps = environment.max_steps
        return replace(self.settings, steps=steps, save_every=steps)

    def grid(self, environment: StudyEnvironment, seed: int) -> SweepGrid:
        """The full factorial of one seed of the environment (:meth:`specs` keeps the design's fraction)."""
        return SweepGrid(
            layers=self.layers,
            hidden=self.hidden,
            heads=(self.heads,),
            n_train=self.strata,
            label_noise=(environment.label_noise,),
            seeds=(seed,),
            task=environment.task,
            settings=self.settings_of(environment),
            family=environment.family,
            learning_rates=self.learning_rates,
            batch_sizes=self.batch_sizes,
            weight_decays=self.weight_decays,
        )

    def specs(self, environment: StudyEnvironment, seeds: Sequence[int] | None = None) -> tuple[RunSpec, ...]:
        """The environment's runs of ``seeds`` (default: all), seed-major: a study stopped part-way holds
        whole seeds of every configuration, which is what its cluster bootstrap resamples.

        >>> len(DESIGN.specs(ENVIRONMENTS[0], seeds=[0])) == DESIGN.configurations * len(DESIGN.strata)
        True
        """
        chosen = self.seeds if seeds is None else tuple(seeds)
        return tuple(
            spec for seed in chosen for spec in self.grid(environment, seed).specs() if self.in_fraction(spec.settings)
        )

    def corners(self, environment: StudyEnvironment) -> tuple[RunSpec, ...]:
        """The pilot's runs of an environment: at each n, seed 0, the smallest and the largest model, each
        at the smallest learning rate (with the largest batch and weight decay: the slowest to fit) and at
        the largest (with the smallest batch and weight decay: the least stable). Where the design does not
        fit, it fails here first.

        >>> [(s.n_train, s.layers, s.hidden, s.settings.learning_rate) for s in DESIGN.corners(ENVIRONMENTS[0])][::3]
        [(100, 1, 32, 6e-05), (300, 1, 32, 0.0006), (300, 4, 128, 6e-05)]
        """
        slow = (min(self.learning_rates), max(self.batch_sizes), max(self.weight_decays))
        unstable = (max(self.learning_rates), min(self.batch_sizes), min(self.weight_decays))
        models = ((min(self.layers), min(self.hidden)), (max(self.layers), max(self.hidden)))
        corners = {(n, *model, *setting) for n in self.strata for model in models for setting in (slow, unstable)}
        return tuple(
            spec
            for spec in self.specs(environment, seeds=self.seeds[:1])
            if (spec.n_train, spec.layers, spec.hidden, *_optimisation(spec.settings)) in corners
        )


def _optimisation(settings: TrainSettings) -> tuple[float, int, float]:
    return settings.learning_rate, settings.batch_size, settings.weight_decay


#: The pre-registered design.
DESIGN = StudyDesign()


def environment_by_key(key: str) -> StudyEnvironment:
    """The study environment named ``key`` (LabError naming the known ones)."""
    for environment in ENVIRONMENTS:
        if environment.key == key:
            return environment
    raise LabError(f"unknown study environment {key!r} (known: {', '.join(e.key for e in ENVIRONMENTS)})")


def minimum_detectable_difference(
    standard_error: float, *, endpoints: int = len(COMPARATORS), alpha: float = ALPHA, power: float = POWER
) -> float:
    """δ_min = (z_{1 − α / (2m)} + z_power) · s: the smallest |Δτ| a two-sided test at Holm's most
    demanding level α / m detects with probability ``power``, for a standard error s (normal approximation)."""
    normal = NormalDist()
    return (normal.inv_cdf(1.0 - alpha / (2 * endpoints)) + normal.inv_cdf(power)) * standard_error


def projected_standard_error(
    standard_error: float, *, cells: int, configurations: int, planned_cells: int, planned_configurations: int
) -> float:
    """A pilot's standard error projected to a design with more cells and configurations per cell:
    s · √((K · C) / (K' · C')), since τ over C configurations varies as 1 / C and the mean over K
    independent cells divides that by K (an approximation: it assumes the new configurations spread the
    gap as the pilot's did)."""
    return standard_error * math.sqrt((cells * configurations) / (planned_cells * planned_configurations))


@dataclass(frozen=True)
class Cell:
    """One environment at one n: its runs, those that fitted, its configurations, and every endpoint
    measure's τ_b with the gap over the fitted runs (NaN where a measure is constant there)."""

    environment: str
    n_train: int
    runs: int
    fitted: int
    configurations: int
    taus: Mapping[str, float]


@dataclass(frozen=True)
class Endpoint:
    """One primary endpoint: Δτ = τ(ours) − τ(comparator), averaged over the cells, with its paired
    cluster-bootstrap interval, standard error and p-value, Holm's adjusted p-value, and the smallest
    |Δτ| this design detects with 80 % power at that standard error."""

    comparator: Comparator
    delta_tau: float
    interval: Interval
    standard_error: float
    p_value: float
    adjusted_p: float
    detectable: float

    @property
    def rejected(self) -> bool:
        """Whether "ours and the comparator order the gap equally well" is rejected (Holm, α = 0.05)."""
        return math.isfinite(self.adjusted_p) and self.adjusted_p <= ALPHA

    def sentence(self) -> str:
        """The endpoint's answer in words, from its numbers."""
        c = self.comparator
        if not math.isfinite(self.delta_tau):
            return f"({c.hypothesis}) Against {c.words}: undefined (a measure is constant in some cell)."
        numbers = (
            f"Δτ = {self.delta_tau:+.3f} (95 % {self.interval.low:+.3f} to {self.interval.high:+.3f}, "
            f"Holm-adjusted p = {self.adjusted_p:.3g})"
        )
        if self.rejected:
            side = "better" if self.delta_tau > 0 else "worse"
            return f"({c.hypothesis}) Ours orders the gap {side} than {c.words}: {numbers}."
        return (
            f"({c.hypothesis}) Ours and {c.words} cannot be told apart: {numbers}; this design detects "
            f"|Δτ| ≥ {self.detectable:.3f} with 80 % power."
        )


@dataclass(frozen=True)
class StudyAnswer:
    """The pre-registered answer: the cells, the environments left out (not fitted), the endpoints; the
    runs trained and, where given, the runs the design plans (fewer trained: an *interim* answer)."""

    cells: tuple[Cell, ...]
    not_fitted: tuple[str, ...]
    endpoints: tuple[Endpoint, ...]
    draws: int
    trained: int = 0
    planned: int | None = None

    @property
    def interim(self) -> bool:
        """Whether the design is not complete yet, so the answer is not the pre-registered one."""
        return self.planned is not None and self.trained < self.planned

    @property
    def runs(self) -> int:
        return sum(cell.fitted for cell in self.cells)

    def sentences(self) -> tuple[str, ...]:
        """The answer in words, every number read from the endpoints: the headline first."""
        if not self.cells:
            return ("The study has no fitted cell yet: there is no answer.",)
        better = [e.comparator.words for e in self.endpoints if e.rejected and e.delta_tau > 0]
        worse = [e.comparator.words for e in self.endpoints if e.rejected and e.delta_tau < 0]
        environments = sorted({cell.environment for cell in self.cells})
        scope = (
            f"Over {self.runs} fitted runs in {len(self.cells)} cells (environment x n: "
            f"{', '.join(environments)}), at fixed n"
        )
        if not better and not worse:
            headline = f"{scope}, ours at p* orders the gap neither better nor worse than any comparator."
        else:
            parts = []
            if better:
                parts.append(f"better than {', '.join(better)}")
            if worse:
                parts.append(f"worse than {', '.join(worse)}")
            headline = f"{scope}, ours at p* orders the gap {' and '.join(parts)} (Holm over {len(self.endpoints)})."
        left_out = (
            [f"Not fitted, left out: {', '.join(self.not_fitted)}."] if self.not_fitted else []
        )  # SPEC §13b's 80 % rule
        if self.interim:
            headline = (
                f"Interim, not the pre-registered answer: {self.trained:,} of the design's {self.planned:,} runs "
                f"are trained. {headline}"
            )
        return (headline, *left_out, *(e.sentence() for e in self.endpoints))


def _fitted(frame: pd.DataFrame) -> list[bool]:
    """Whether each final row's run fitted its training set (SPEC §13b, :func:`fits_training_set`)."""
    rows = zip(frame["train_loss"], frame["train_error"], frame["label_noise"], strict=True)
    return [fits_training_set(float(loss), float(error), float(noise)) for loss, error, noise in rows]


def _cell_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """A cell's fitted final rows (with a ``configuration`` label each), its run count and its number of
    fitted configurations."""
    fitted = frame[_fitted(frame)].reset_index(drop=True)
    columns = configuration_columns(fitted)
    labels = [json.dumps([str(v) for v in row]) for row in fitted[columns].itertuples(index=False)]
    return fitted.assign(configuration=labels), len(frame), len(set(labels))


def study_answer(
    frames: Mapping[str, pd.DataFrame],
    *,
    comparators: Sequence[Comparator] = COMPARATORS,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
    planned: int | None = None,
) -> StudyAnswer:
    """The pre-registered endpoints from each environment's final runs.csv rows (``frames``: environment
    key to rows, one per run, e.g. :func:`read_final_rows`); ``planned``: the design's run count, which
    marks an answer from fewer runs as interim.

    Cells with fewer than two fitted configurations are left out (no τ can be resampled there)."""
    names = (SUBJECT, *(c.measure for c in comparators))
    columns = {name: MEASURES[name].column for name in names}
    cells: list[Cell] = []
    point: dict[str, list[float]] = {name: [] for name in names}
    resampled: dict[str, list[np.ndarray]] = {name: [] for name in names}
    not_fitted: list[str] = []
    for key, frame in frames.items():
        fitted_share = _fitted_share(frame)
        if fitted_share < MIN_FITTED_SHARE:
            not_fitted.append(f"{key} ({fitted_share:.0%} fitted)")
            continue
        for n_train, stratum in frame.groupby("n_train", sort=True):
            rows, total, configurations = _cell_rows(stratum)
            if configurations < 2:
                continue
            gap = rows["gap"].to_numpy(dtype=np.float64)
            counts = cluster_counts(list(rows["configuration"]), len(rows), draws, seed + len(cells))
            taus = {}
            for name in names:
                values = rows[columns[name]].to_numpy(dtype=np.float64) * MEASURES[name].orientation
                taus[name] = kendall_tau_b(values, gap)
                point[name].append(taus[name])
                resampled[name].append(tau_b_draws(values, gap, counts))
            cells.append(Cell(key, int(str(n_train)), total, len(rows), configurations, taus))
    endpoints = [_endpoint(comparator, point, resampled) for comparator in comparators] if cells else []
    adjusted = holm([p for *_, p in endpoints])
    return StudyAnswer(
        tuple(cells),
        tuple(not_fitted),
        tuple(
            Endpoint(c, d, i, s, p, float(a), minimum_detectable_difference(s, endpoints=len(endpoints)))
            for (c, d, i, s, p), a in zip(endpoints, adjusted, strict=True)
        ),
        draws,
        trained=sum(len(frame) for frame in frames.values()),
        planned=planned,
    )


def _endpoint(
    comparator: Comparator, point: Mapping[str, list[float]], resampled: Mapping[str, list[np.ndarray]]
) -> tuple[Comparator, float, Interval, float, float]:
    """One endpoint before Holm's adjustment: the mean over cells of τ(ours) − τ(comparator), its percentile
    interval over the cluster bootstrap's draws, their standard error and the bootstrap p-value."""
    delta = float(np.mean(np.subtract(point[SUBJECT], point[comparator.measure])))
    difference = np.mean(np.subtract(resampled[SUBJECT], resampled[comparator.measure]), axis=0)  # (draws,)
    finite = difference[np.isfinite(difference)]
    se = float(np.std(finite, ddof=1)) if finite.size > 1 else math.nan
    return comparator, delta, percentile_interval(difference, CONFIDENCE), se, bootstrap_p_value(difference)


def _fitted_share(frame: pd.DataFrame) -> float:
    """The share of an environment's runs that fitted (0 without runs)."""
    fits = _fitted(frame)
    return sum(fits) / len(fits) if fits else 0.0


@dataclass(frozen=True)
class PowerProjection:
    """One endpoint's standard error in a pilot, projected to a design, and the smallest |Δτ| the design
    then detects with 80 % power under Holm (:func:`minimum_detectable_difference`)."""

    comparator: Comparator
    pilot_delta_tau: float
    pilot_standard_error: float
    projected_standard_error: float
    detectable: float

    @property
    def powered(self) -> bool:
        """Whether the design detects :data:`TARGET_DIFFERENCE` with 80 % power."""
        return self.detectable <= TARGET_DIFFERENCE


def power_projection(pilot: StudyAnswer, design: StudyDesign = DESIGN) -> tuple[PowerProjection, ...]:
    """Each endpoint's pilot standard error projected to ``design`` (every environment, every stratum):
    the pilot's cells and mean configurations per cell against the design's."""
    if not pilot.cells:
        raise LabError("the pilot has no fitted cell: no standard error to project")
    cells = len(pilot.cells)
    configurations = round(sum(c.configurations for c in pilot.cells) / cells)
    planned_cells = len(ENVIRONMENTS) * len(design.strata)
    out = []
    for endpoint in pilot.endpoints:
        se = projected_standard_error(
            endpoint.standard_error,
            cells=cells,
            configurations=configurations,
            planned_cells=planned_cells,
            planned_configurations=design.configurations,
        )
        detectable = minimum_detectable_difference(se, endpoints=len(pilot.endpoints))
        out.append(PowerProjection(endpoint.comparator, endpoint.delta_tau, endpoint.standard_error, se, detectable))
    return tuple(out)


#: The pilot: the shipped ``fit`` references of the study's two noise-free environments, at the study's n.
PILOT_REFERENCES: Mapping[str, str] = {"threshold-bert": "reference_fit", "threshold-gpt2": "reference_fit_decoder"}


def pilot_rows(design: StudyDesign = DESIGN) -> dict[str, pd.DataFrame]:
    """The pilot's final rows: the shipped fit references (run before the study was registered) at the
    design's strata."""
    import pandas as pd

    from .reference import REFERENCE_DIR

    frames = {}
    for key, folder in PILOT_REFERENCES.items():
        frame = pd.read_csv(Path(REFERENCE_DIR).parent / folder / RUNS_CSV)
        frame = frame[frame["final"] & frame["n_train"].isin(design.strata)]
        frames[key] = frame.reset_index(drop=True)
    return frames


def read_final_rows(directory: Path | str) -> dict[str, pd.DataFrame]:
    """Each study environment's final runs.csv rows from ``<directory>/<key>/runs.csv`` (environments not
    started yet are absent); LabError if none has a table."""
    import pandas as pd

    directory = Path(directory)
    frames = {}
    for environment in ENVIRONMENTS:
        path = directory / environment.key / RUNS_CSV
        if path.is_file():
            frame = pd.read_csv(path)
            frames[environment.key] = frame[frame["final"]].reset_index(drop=True)
    if not frames:
        known = ", ".join(e.key for e in ENVIRONMENTS)
        raise LabError(f"{directory.name} holds no study environment with a {RUNS_CSV} (expected folders: {known})")
    return frames


def answer_markdown(data: Mapping[str, Any]) -> str:
    """The study's answer as Markdown, from its JSON form (``answer.json`` of a corpus, what
    ``study analyse --json`` prints): the sentences first, then the endpoints' table and the cells'. The
    report and the site print it before the shipped sweeps' verdicts, computing nothing again."""
    title = "## The pre-registered study" + (" (interim)" if data["interim"] else "")
    lines = [
        title,
        "",
        f"Registered in the manual's [pre-registration]({PREREGISTRATION_PAGE}) before its first run "
        f"(commit `{REGISTRATION_COMMIT}`); {data['runs_trained']:,} of the design's {data['runs_planned']:,} "
        f"runs trained; {data['draws']:,} bootstrap draws.",
        "",
        " ".join(data["sentences"]),
        "",
    ]
    if data["endpoints"]:
        lines += [
            "| endpoint | Δτ | 95 % (configurations) | Holm-adjusted p | detectable \\|Δτ\\| (80 %) |",
            "|---|---|---|---|---|",
        ]
        words = {c.hypothesis: c.words for c in COMPARATORS}
        for e in data["endpoints"]:
            lines.append(
                f"| ({e['hypothesis']}) {words.get(e['hypothesis'], e['comparator'])} | {_signed(e['delta_tau'])} "
                f"| {_signed(e['ci_low'])} to {_signed(e['ci_high'])} | {_plain(e['p_holm'], '.3g')} "
                f"| {_plain(e['detectable'], '.3f')} |"
            )
        lines.append("")
    if data["cells"]:
        lines += [
            "| environment | n | runs | fitted | configurations | τ of ours with the gap |",
            "|---|---|---|---|---|---|",
        ]
        for c in data["cells"]:
            lines.append(
                f"| {c['environment']} | {c['n_train']} | {c['runs']} | {c['fitted']} | {c['configurations']} "
                f"| {_signed(c['tau_b'].get(SUBJECT))} |"
            )
        lines.append("")
    return "\n".join(lines)


def study_status(data: Mapping[str, Any]) -> str:
    """Where the pre-registered study stands, in one sentence, from its JSON answer: its answer's headline
    once the design is complete; before, how many runs are trained and where the interim endpoints are
    (no claim rests on them, so no page opens on them).

    >>> interim = {"interim": True, "runs_trained": 432, "runs_planned": 2160, "sentences": ["Interim ..."]}
    >>> study_status(interim).split(". ")[0]
    'The pre-registered study (registered before its first run) is under way: 432 of its 2,160 runs are trained'
    """
    if data["interim"]:
        return (
            f"The pre-registered study (registered before its first run) is under way: {data['runs_trained']:,} "
            f"of its {data['runs_planned']:,} runs are trained. Its answer will open this page once the design "
            "is complete; its interim endpoints, on which no claim rests, are in `specbound lab report`."
        )
    return f"The pre-registered study: {data['sentences'][0]}"


def shipped_study_answer() -> dict[str, Any] | None:
    """The shipped corpus' answer (``answer.json``, as ``study analyse --json`` prints it), or None while
    no corpus is shipped."""
    path = STUDY_CORPUS_DIR / ANSWER_FILE
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def _plain(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)
