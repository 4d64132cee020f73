"""Every measure the lab records and correlates with the gap: one definition and one registration each.

A :class:`Measure` says where its value comes from (its class, and :class:`MeasureInput`), how to compute
it, the column that holds it in ``runs.csv`` and in a run's record, how it is named on screen (an axis
label, and plain words for the dashboard's tables and sentences) and whether it is drawn on a linear
axis (a log10, an exponent) or a log axis (a positive number spanning decades). Everything else (the
record's fields, the tables' columns, the correlations, the CLI, the Lab page's labels, names and
figures) is derived from :data:`MEASURES`, in registration order. Adding a measure means writing its
function and one :func:`register_measure` call below.

Inputs, one class each, so every ``compute`` is typed by what it reads:

* :class:`CheckpointMeasure` (``CHECKPOINT``): a function of the checkpoint's
  :class:`~specbound.core.BoundAnalysis` (its spectral profile), recorded at every saved step;
* :class:`CentredMeasure` (``CENTRED``): a function of the checkpoint's analysis centred at the run's
  first saved step (SPEC §14: ``delta`` holds the profile of W - W⁰, W⁰ the initialization, or the
  pretrained base of a fine-tuning run), recorded at every saved step: Jiang et al.'s "distance from
  initialization" family; a :class:`DirectionMeasure` is centred the same way but reads where the
  singular vectors moved (SPEC §14b, :class:`specbound.core.Directions`: intruder dimensions);
* :class:`ModelMeasure` (``MODEL``): a function of the trained model and its training set
  (:class:`ModelProbe`), computed when the run is trained, on the final checkpoint only (other steps
  do not have it);
* :class:`RunMeasure` (``RUN``): a property of the run as a whole (:class:`RunFacts`: its parameter count,
  training-set size, optimisation steps and final training loss);
* :class:`DerivedMeasure` (``DERIVED``): a function of another measure's value at the same step and of
  the run (the normalised form of a measure that comes from a bound, ``<name>_per_n``).

**Normalised forms** (SPEC §13b, measure hygiene). A measure that comes from a generalization bound
enters comparisons across n in the form of that bound, which follows from its power in it, declared
once per measure as a :class:`BoundPower`:

* ``UNSQUARED``: the bound is C / √n (the proxies of the paper at p* and at a fixed p, Edelman et
  al.'s, the product of spectral norms, Bartlett et al.'s spectral complexity, and their forms centred
  at initialization): the normalised form is C / √n, log10 C − ½ log10 n;
* ``SQUARED``: C enters the bound squared, under the root, √(C / n) (Σ‖W‖_F², a distance Σ‖W − W⁰‖_F²,
  the parameter count of a VC bound √(d / n), a KL divergence, and Jiang et al.'s centred spectral
  measure Π‖W‖₂² Σ‖W − W⁰‖_F² / ‖W‖₂², the square of a spectral complexity): the normalised form is
  √(C / n), ½ (log10 C − log10 n), what Dziugaite et al.'s ``adjust_measure`` does for theirs.

The columns keep their names (``<name>_per_n_log10``); only the unsquared ones' values changed when
the power was declared (they had been √(C / n), which halves C's spread against n's and so inflates
their τ across n).

**Trivial baselines** (SPEC §13b) are measures like any other, flagged ``baseline``: 1/n, the number of
optimisation steps, the final training loss and the parameter count. They sit in every table beside
the measures, so that a table says when no measure beats them.

A record written before a measure existed lacks its column: the measure is then missing (NaN) for that
run, which the correlations leave out, and the run still loads.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from specbound.core import (
    FIXED_P_PROXIES,
    LOG10_E,
    BoundAnalysis,
    Directions,
    Proxy,
    SpectralProfile,
    SpectrumAlphas,
    spectrum_alphas,
)

from .flatness import censoring_values, inverse_square, pacbayes_sigma, sharpness_alpha
from .measures import (
    frobenius_distance,
    frobenius_sum,
    log_bartlett,
    log_bartlett_init,
    log_spectral_init,
    log_spectral_product,
)

if TYPE_CHECKING:
    import torch


class MeasureInput(str, Enum):
    """What a measure is computed from (not to be confused with :class:`specbound.io.models.Source`, where
    a model comes from)."""

    CHECKPOINT = "checkpoint"  # compute(analysis: BoundAnalysis), every saved step
    CENTRED = "centred"  # compute(centred: BoundAnalysis with delta = W - W⁰), every saved step
    MODEL = "model"  # compute(probe: ModelProbe), the final checkpoint, when the run is trained
    RUN = "run"  # compute(run: RunFacts), one value per run
    DERIVED = "derived"  # compute(step: StepFacts, run: RunFacts), from another measure at the same step


class BoundPower(str, Enum):
    """How a complexity C enters the generalization bound it comes from, and so its normalised form.

    ``UNSQUARED``: gap ≲ C / √n, normalised as C / √n. ``SQUARED``: gap ≲ √(C / n), normalised as
    √(C / n). Both are read in log10 (every normalised column is a log10):

    >>> BoundPower.UNSQUARED.normalised(2.0, 100)  # log10 (100 / √100) = 2 − 1
    1.0
    >>> BoundPower.SQUARED.normalised(2.0, 100)  # log10 √(100 / 100)
    0.0
    """

    UNSQUARED = "unsquared"
    SQUARED = "squared"

    def normalised(self, log10_value: float, n: int) -> float:
        """log10 of the normalised form of a measure whose log10 is ``log10_value``, at training-set size n:
        log10 C − ½ log10 n (``UNSQUARED``), ½ (log10 C − log10 n) (``SQUARED``)."""
        if self is BoundPower.UNSQUARED:
            return log10_value - 0.5 * math.log10(n)
        return 0.5 * (log10_value - math.log10(n))

    @property
    def form(self) -> str:
        """The normalised form in words: "C / √n" or "√(C / n)"."""
        return "C / √n" if self is BoundPower.UNSQUARED else "√(C / n)"


@dataclass(frozen=True)
class ModelProbe:
    """What a MODEL measure sees: the trained model (a ``BertForSequenceClassification``), its training
    inputs (n, T + 1) and labels (n,), and the run's seed for any random draw."""

    model: Any
    ids: torch.Tensor
    labels: torch.Tensor
    seed: int


class RunFacts(Protocol):
    """What a RUN measure sees of a finished run (a :class:`~specbound_lab.trajectory.RunTrajectory`
    is one): declared here, so the registry depends on no module that uses it."""

    @property
    def params(self) -> int: ...

    @property
    def n_train(self) -> int: ...

    @property
    def optimisation_steps(self) -> int: ...

    @property
    def final_train_loss(self) -> float: ...


class StepFacts(Protocol):
    """What a DERIVED measure sees of one saved step (a :class:`~specbound_lab.trajectory.StepRecord`)."""

    def value(self, name: str) -> float: ...


@dataclass(frozen=True, kw_only=True)
class Measure:
    """One measure: its name (``correlations.csv``), column (``runs.csv`` and the record), axis label,
    screen name (plain words), whether it is drawn on a linear or a log axis, and a one-line definition
    with its reference. How it is computed depends on its input: see the three subclasses."""

    computed_from: ClassVar[MeasureInput]
    name: str
    column: str
    label: str  # the axis label and the CLI's name ("log10 ours at p*")
    screen_name: str  # the measure in plain words, as the dashboard's tables and sentences name it
    linear_axis: bool  # drawn on a linear axis (a log10, or a number of order one) or a log axis
    definition: str
    #: also written as 10**value under this column (the proxies people read as plain numbers)
    linear_column: str | None = None
    #: False for a diagnostic that is recorded beside the measures but not ranked against the gap
    correlated: bool = True
    #: a count, written to runs.csv as an integer
    integer: bool = False
    #: a trivial baseline (SPEC §13b): 1/n, the steps, the training loss, the parameter count
    baseline: bool = False
    #: the measure's power in the generalization bound it comes from (None: it comes from no bound of
    #: the gap against n, and has no normalised form); a measure with one is also read in its
    #: normalised form (a :class:`DerivedMeasure` named ``<name>_per_n``, :meth:`BoundPower.normalised`)
    bound_power: BoundPower | None = None
    #: the direction in which the measure is read, declared once: +1 when a larger value should mean a
    #: larger gap, −1 when a smaller one should (a trivial baseline is read in this direction only, never
    #: in whichever direction the data favour)
    orientation: int = 1
    #: values at which the measure is censored (a search that hit an end of its range): such a run's value
    #: is only a bound, counted and shown, never ranked (SPEC §13b)
    censored_at: tuple[float, ...] = ()

    def is_censored(self, value: float) -> bool:
        """Whether ``value`` is one of the measure's censoring values (to 1e-9 relative)."""
        return any(math.isclose(value, bound, rel_tol=1e-9) for bound in self.censored_at)


@dataclass(frozen=True, kw_only=True)
class CheckpointMeasure(Measure):
    """A function of one checkpoint's bound analysis, recorded at every saved step."""

    computed_from: ClassVar[MeasureInput] = MeasureInput.CHECKPOINT
    compute: Callable[[BoundAnalysis], float]


@dataclass(frozen=True, kw_only=True)
class CentredMeasure(Measure):
    """A function of one checkpoint's analysis centred at the run's first saved step (its ``delta`` is
    the profile of W - W⁰), recorded at every saved step."""

    computed_from: ClassVar[MeasureInput] = MeasureInput.CENTRED
    compute: Callable[[BoundAnalysis], float]


@dataclass(frozen=True, kw_only=True)
class DirectionMeasure(Measure):
    """A function of where one checkpoint's singular vectors moved from the run's first saved step's
    (SPEC §14b: intruder dimensions, subspace overlaps), recorded at every saved step beside the
    CENTRED measures and, like them, centred at that step."""

    computed_from: ClassVar[MeasureInput] = MeasureInput.CENTRED
    compute: Callable[[Directions], float]


@dataclass(frozen=True, kw_only=True)
class ModelMeasure(Measure):
    """A function of the trained model and its training set, on the final checkpoint."""

    computed_from: ClassVar[MeasureInput] = MeasureInput.MODEL
    compute: Callable[[ModelProbe], float]


@dataclass(frozen=True, kw_only=True)
class RunMeasure(Measure):
    """A property of the run as a whole, one value per run."""

    computed_from: ClassVar[MeasureInput] = MeasureInput.RUN
    compute: Callable[[RunFacts], float]


@dataclass(frozen=True, kw_only=True)
class DerivedMeasure(Measure):
    """A function of other measures' values at the same step and of the run (never recorded: computed
    wherever it is read, from what is)."""

    computed_from: ClassVar[MeasureInput] = MeasureInput.DERIVED
    compute: Callable[[StepFacts, RunFacts], float]


MEASURES: dict[str, Measure] = {}


def register_measure(measure: Measure) -> Measure:
    """Add a measure to :data:`MEASURES` (ValueError on a repeated name or column)."""
    if measure.name in MEASURES or any(m.column == measure.column for m in MEASURES.values()):
        raise ValueError(f"a measure named {measure.name} or with column {measure.column} is registered already")
    MEASURES[measure.name] = measure
    return measure


def correlated_measures() -> tuple[Measure, ...]:
    """The measures ranked against the gap, in registration order."""
    return tuple(m for m in MEASURES.values() if m.correlated)


def recorded_measures() -> tuple[Measure, ...]:
    """The measures kept per step in a run's record (CHECKPOINT, CENTRED and MODEL inputs)."""
    kept = CheckpointMeasure | CentredMeasure | DirectionMeasure | ModelMeasure
    return tuple(m for m in MEASURES.values() if isinstance(m, kept))


def step_value(measure: Measure, step: StepFacts, run: RunFacts) -> float:
    """A measure's value at one saved step of a run, whatever its input: recorded at the step
    (CHECKPOINT, MODEL; NaN where the step lacks it), of the run (RUN), or derived (DERIVED)."""
    if isinstance(measure, RunMeasure):
        return float(measure.compute(run))
    if isinstance(measure, DerivedMeasure):
        return float(measure.compute(step, run))
    return step.value(measure.name)


def is_baseline(name: str) -> bool:
    """Whether the measure named ``name`` is a trivial baseline (False for a name not registered)."""
    measure = MEASURES.get(name)
    return measure is not None and measure.baseline


def baseline_measures() -> tuple[Measure, ...]:
    """The trivial baselines, in registration order."""
    return tuple(m for m in MEASURES.values() if m.baseline)


def checkpoint_measures() -> tuple[CheckpointMeasure, ...]:
    """The CHECKPOINT measures, in registration order."""
    return tuple(m for m in MEASURES.values() if isinstance(m, CheckpointMeasure))


def centred_measures() -> tuple[CentredMeasure, ...]:
    """The CENTRED measures, in registration order."""
    return tuple(m for m in MEASURES.values() if isinstance(m, CentredMeasure))


def direction_measures() -> tuple[DirectionMeasure, ...]:
    """The CENTRED measures that read singular vectors (:class:`DirectionMeasure`), in registration order."""
    return tuple(m for m in MEASURES.values() if isinstance(m, DirectionMeasure))


def model_measures() -> tuple[ModelMeasure, ...]:
    """The MODEL measures, in registration order."""
    return tuple(m for m in MEASURES.values() if isinstance(m, ModelMeasure))


# --- the definitions ----------------------------------------------------------------------------


def _at_p(p: float) -> Callable[[BoundAnalysis], float]:
    return lambda analysis: analysis.evaluate(p).log_total * LOG10_E


def _alphas(analysis: BoundAnalysis) -> SpectrumAlphas:
    profile = analysis.profile
    return spectrum_alphas(profile.singular_values, profile.above_threshold)


def _params(run: RunFacts) -> float:
    return float(run.params)


def _log10_value(value: float, linear_axis: bool) -> float:
    """log10 of a measure's value: a linear-axis measure of this registry is a log10 already."""
    if linear_axis:
        return value
    return math.log10(value) if value > 0 else math.nan


def _register_normalised(measure: Measure) -> None:
    """The normalised form of a measure C that comes from a bound, by its declared power
    (:class:`BoundPower`): C / √n for an unsquared complexity, √(C / n) for a squared one (Dziugaite et
    al. 2020, ``adjust_measure``), in log10."""
    power = measure.bound_power
    assert power is not None

    def compute(step: StepFacts, run: RunFacts) -> float:
        value = float(measure.compute(run)) if isinstance(measure, RunMeasure) else step.value(measure.name)
        return power.normalised(_log10_value(value, measure.linear_axis), run.n_train)

    unsquared = power is BoundPower.UNSQUARED
    register_measure(
        DerivedMeasure(
            name=f"{measure.name}_per_n",
            column=f"{measure.name}_per_n_log10",
            label=f"log10 {measure.name} / √n" if unsquared else f"log10 √({measure.name} / n)",
            screen_name=f"{measure.screen_name} / √n" if unsquared else f"√({measure.screen_name} / n)",
            linear_axis=True,
            definition=f"{power.form} of {measure.screen_name}: its normalised form, as its bound falls with n",
            compute=compute,
            baseline=measure.baseline,  # √(params / n) is made of two trivial baselines: one itself
            orientation=measure.orientation,
        )
    )


def _pacbayes(probe: ModelProbe) -> float:
    return inverse_square(pacbayes_sigma(probe.model, probe.ids, probe.labels, seed=probe.seed))


def _sharpness(probe: ModelProbe) -> float:
    return inverse_square(sharpness_alpha(probe.model, probe.ids, probe.labels))


register_measure(
    CheckpointMeasure(
        name=Proxy.OURS.key,
        bound_power=BoundPower.UNSQUARED,
        column=Proxy.OURS.column,
        label=f"log10 {Proxy.OURS.label}",
        screen_name=Proxy.OURS.described,
        linear_axis=True,
        definition="the spectrum-adaptive proxy at p* (each matrix at its own optimal p)",
        compute=lambda analysis: analysis.evaluate().log_total * LOG10_E,
        linear_column="ours",
    )
)
for _proxy in FIXED_P_PROXIES:
    assert _proxy.fixed_p is not None
    register_measure(
        CheckpointMeasure(
            name=_proxy.key,
            column=_proxy.column,
            label=f"log10 {_proxy.label}",
            screen_name=_proxy.described,
            linear_axis=True,
            definition=f"the proxy with every matrix at p = {_proxy.fixed_p:g}",
            compute=_at_p(_proxy.fixed_p),
            bound_power=BoundPower.UNSQUARED,
        )
    )
register_measure(
    CheckpointMeasure(
        name=Proxy.EDELMAN.key,
        bound_power=BoundPower.UNSQUARED,
        column=Proxy.EDELMAN.column,
        label=f"log10 {Proxy.EDELMAN.label}",
        screen_name=Proxy.EDELMAN.described,
        linear_axis=True,
        definition="the Edelman-style proxy (Edelman et al. 2022)",
        compute=lambda analysis: analysis.log_edelman * LOG10_E,
        linear_column="edelman",
    )
)
register_measure(
    RunMeasure(
        name="params",
        column="params",
        label="parameters",
        screen_name="number of parameters",
        linear_axis=False,
        definition="every parameter of the model (embeddings, pooler and head included)",
        compute=_params,
        integer=True,
        baseline=True,
        bound_power=BoundPower.SQUARED,  # a VC-type bound √(d / n)
    )
)
register_measure(
    CheckpointMeasure(
        name="frobenius",
        bound_power=BoundPower.SQUARED,
        column="frobenius",
        label="Σ‖W‖_F²",
        screen_name="sum of squared Frobenius norms",
        linear_axis=False,
        definition="Σ ‖W‖_F² over the proxy matrices",
        compute=lambda analysis: frobenius_sum(analysis.profile),
    )
)
register_measure(
    CheckpointMeasure(
        name="spectral_product",
        bound_power=BoundPower.UNSQUARED,
        column="spectral_product_log10",
        label="log10 Π‖W‖₂",
        screen_name="product of spectral norms",
        linear_axis=True,
        definition="log10 of the product of the 4L blocks' spectral norms",
        compute=lambda analysis: log_spectral_product(analysis.profile) * LOG10_E,
    )
)
register_measure(
    CheckpointMeasure(
        name="bartlett",
        bound_power=BoundPower.UNSQUARED,
        column="bartlett_log10",
        label="log10 Bartlett et al.",
        screen_name="Bartlett et al. spectral bound",
        linear_axis=True,
        definition="log10 of the spectral complexity of Bartlett, Foster & Telgarsky (2017), over the 4L blocks",
        compute=lambda analysis: log_bartlett(analysis.profile) * LOG10_E,
    )
)
register_measure(
    CheckpointMeasure(
        name="alpha",
        column="alpha",
        label="power-law α of the ESD",
        screen_name="power-law exponent α of the spectra",
        linear_axis=True,
        definition=(
            "mean over the proxy matrices of WeightWatcher 0.7.7's power-law exponent alpha of the eigenvalues of "
            "WᵀW (Clauset et al. 2009)"
        ),
        compute=lambda analysis: _alphas(analysis).mean_alpha,
    )
)
register_measure(
    CheckpointMeasure(
        name="alpha_hat",
        column="alpha_hat",
        label="α̂ = α log10 λ_max",
        screen_name="weighted power-law exponent α̂",
        linear_axis=True,
        definition=(
            "mean over the proxy matrices of α log10 λ_max, WeightWatcher's alpha_weighted (Martin & Mahoney 2021)"
        ),
        compute=lambda analysis: _alphas(analysis).mean_weighted,
    )
)
register_measure(
    CheckpointMeasure(
        name="alpha_skipped",
        column="alpha_skipped",
        label="matrices too small for a power-law fit",
        screen_name="matrices too small for a power-law fit",
        linear_axis=True,
        definition="proxy matrices with fewer than 2 eigenvalues above 1e-5, left out of alpha and alpha_hat",
        compute=lambda analysis: float(_alphas(analysis).skipped),
        correlated=False,
        integer=True,
    )
)
register_measure(
    ModelMeasure(
        name="pacbayes_flatness",
        censored_at=censoring_values(),
        column="pacbayes_flatness",
        label="PAC-Bayes flatness 1/σ′²",
        screen_name="PAC-Bayes flatness",
        linear_axis=False,
        definition=(
            "1/σ′², σ′ the largest magnitude-aware Gaussian noise raising the training error by ≤ 0.1 "
            "(Jiang et al. 2020)"
        ),
        compute=_pacbayes,
    )
)
register_measure(
    ModelMeasure(
        name="sharpness",
        censored_at=censoring_values(),
        column="sharpness",
        label="sharpness 1/α′²",
        screen_name="sharpness",
        linear_axis=False,
        definition=(
            "1/α′², α′ the largest relative box whose ascent raises the training error by ≤ 0.1 (Jiang et al. 2020)"
        ),
        compute=_sharpness,
    )
)


def _delta(analysis: BoundAnalysis) -> SpectralProfile:
    """The profile of W - W⁰ a CENTRED measure reads (ValueError for an analysis that is not centred)."""
    if analysis.delta is None:
        raise ValueError("a centred measure needs an analysis centred at a reference (delta = W - W⁰)")
    return analysis.delta


def _centred_total(analysis: BoundAnalysis) -> float:
    """ln of the proxy at p* of a centred analysis (its Schatten terms are those of ``delta``)."""
    _delta(analysis)
    return analysis.evaluate().log_total


register_measure(
    CentredMeasure(
        name="ours_init",
        bound_power=BoundPower.UNSQUARED,
        column="ours_init_log10",
        label="log10 ours centred at init",
        screen_name="ours centred at initialization",
        linear_axis=True,
        definition=(
            "the spectrum-adaptive proxy at p* of W - W⁰, W⁰ the run's first checkpoint (its initialization, "
            "or the pretrained base of a fine-tune), with the scales of W (SPEC §14)"
        ),
        compute=lambda analysis: _centred_total(analysis) * LOG10_E,
    )
)
register_measure(
    CentredMeasure(
        name="distance_frobenius",
        column="distance_frobenius",
        label="Σ‖W − W⁰‖_F²",
        bound_power=BoundPower.SQUARED,
        screen_name="Frobenius distance from initialization",
        linear_axis=False,
        definition="Σ ‖W − W⁰‖_F² over the proxy matrices, W⁰ the run's first checkpoint (Jiang et al. 2020)",
        compute=lambda analysis: frobenius_distance(_delta(analysis)),
    )
)
register_measure(
    CentredMeasure(
        name="spectral_init",
        bound_power=BoundPower.SQUARED,
        column="spectral_init_log10",
        label="log10 Π‖W‖₂² Σ‖W − W⁰‖_F²/‖W‖₂²",
        screen_name="spectral norms, centred at initialization",
        linear_axis=True,
        definition=(
            "log10 of Π_b ‖A_b‖₂² · Σ_b ‖A_b − A⁰_b‖_F² / ‖A_b‖₂² over the 4L blocks (Jiang et al. 2020, after "
            "Neyshabur et al. 2018)"
        ),
        compute=lambda analysis: log_spectral_init(analysis.profile, _delta(analysis)) * LOG10_E,
    )
)
register_measure(
    CentredMeasure(
        name="bartlett_init",
        bound_power=BoundPower.UNSQUARED,
        column="bartlett_init_log10",
        label="log10 Bartlett et al., reference at init",
        screen_name="Bartlett et al. bound, reference at initialization",
        linear_axis=True,
        definition=(
            "log10 of Bartlett, Foster & Telgarsky's (2017) spectral complexity with the run's first checkpoint "
            "as reference matrices, over the 4L blocks"
        ),
        compute=lambda analysis: log_bartlett_init(analysis.profile, _delta(analysis)) * LOG10_E,
    )
)
register_measure(
    DirectionMeasure(
        name="intruders",
        column="intruders",
        label="intruder dimensions",
        screen_name="intruder dimensions against the first checkpoint",
        linear_axis=True,
        integer=True,
        definition=(
            "Σ over the proxy matrices of the top-10 left singular vectors of W whose best |cosine| with every "
            "singular vector of W⁰ (the run's first checkpoint: its initialization, or the pretrained base of a "
            "fine-tune) is below 0.5: Shuttleworth et al.'s (2025) intruder dimensions as peft detects them "
            "(SPEC §14b)"
        ),
        compute=lambda directions: float(directions.intruders.sum()),
    )
)

register_measure(
    RunMeasure(
        name="inverse_n",
        column="inverse_n",
        label="1/n",
        screen_name="1/n",
        linear_axis=False,
        definition="one over the training-set size: the trivial baseline a generalization measure should beat",
        compute=lambda run: 1.0 / run.n_train,
        baseline=True,
    )
)
register_measure(
    RunMeasure(
        name="steps",
        column="optimisation_steps",
        label="optimisation steps",
        screen_name="optimisation steps",
        linear_axis=False,
        definition="the optimiser steps the run took (to its last checkpoint)",
        compute=lambda run: float(run.optimisation_steps),
        integer=True,
        baseline=True,
    )
)
register_measure(
    RunMeasure(
        name="train_loss",
        column="final_train_loss",
        label="final training loss",
        screen_name="final training loss",
        linear_axis=False,
        definition="the training cross-entropy at the last checkpoint",
        compute=lambda run: run.final_train_loss,
        baseline=True,
        # a closer fit of the training sample (a lower loss: memorising) should mean a larger gap
        orientation=-1,
    )
)
for _measure in [m for m in MEASURES.values() if m.bound_power is not None]:
    _register_normalised(_measure)
