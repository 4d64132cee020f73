"""Every measure the lab records and correlates with the gap: one definition and one registration each.

A :class:`Measure` says where its value comes from (:class:`Source`), how to compute it, the column
that holds it in ``runs.csv`` and in a run's record, how it is named on screen and whether it is
drawn on a linear axis (a log10, an exponent) or a log axis (a positive number spanning decades).
Everything else (the record's fields, the tables' columns, the correlations, the CLI, the Lab page's
labels and figures) is derived from :data:`MEASURES`, in registration order. Adding a measure means
writing its function and one :func:`register` call below.

Sources:

* ``CHECKPOINT``: a function of the checkpoint's :class:`~specbound.bounds.BoundAnalysis` (its spectral
  profile), recorded at every saved step;
* ``MODEL``: a function of the trained model and its training set (:class:`ModelProbe`), computed when
  the run is trained, on the final checkpoint only (other steps do not have it);
* ``RUN``: a property of the run as a whole (its parameter count).

A record written before a measure existed lacks its column: the measure is then missing (NaN) for that
run, which the correlations leave out, and the run still loads.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from ..bounds import BoundAnalysis
from .flatness import inverse_square, pacbayes_sigma, sharpness_alpha
from .heavy_tail import spectrum_alphas
from .measures import frobenius_sum, log_bartlett, log_spectral_product

if TYPE_CHECKING:
    import torch

_LOG10_E = 1.0 / math.log(10.0)
#: The fixed indices at which "ours" is also recorded (every matrix at the same p).
FIXED_P: tuple[float, ...] = (0.0, 1.0, 2.0)


class Source(str, Enum):
    CHECKPOINT = "checkpoint"  # compute(analysis: BoundAnalysis), every saved step
    MODEL = "model"  # compute(probe: ModelProbe), the final checkpoint, when the run is trained
    RUN = "run"  # compute(run: RunFacts), one value per run


@dataclass(frozen=True)
class ModelProbe:
    """What a MODEL measure sees: the trained model (a ``BertForSequenceClassification``), its training
    inputs (n, T + 1) and labels (n,), and the run's seed for any random draw."""

    model: Any
    ids: torch.Tensor
    labels: torch.Tensor
    seed: int


class RunFacts(Protocol):
    """What a RUN measure sees of a finished run (a :class:`~specbound.lab.trajectory.RunTrajectory`
    is one): declared here, so the registry depends on no module that uses it."""

    @property
    def params(self) -> int: ...


@dataclass(frozen=True)
class Measure:
    """One measure: its name (``correlations.csv``), column (``runs.csv`` and the record), screen label,
    whether it is drawn on a linear or a log axis, a one-line definition and its reference, and how it is computed."""

    name: str
    column: str
    label: str
    linear_axis: bool  # drawn on a linear axis (a log10, or a number of order one) or a log axis
    definition: str
    source: Source
    compute: Callable[[Any], float]
    #: also written as 10**value under this column (the proxies people read as plain numbers)
    linear_column: str | None = None
    #: False for a diagnostic that is recorded beside the measures but not ranked against the gap
    correlated: bool = True
    #: a count, written to runs.csv as an integer
    integer: bool = False


MEASURES: dict[str, Measure] = {}


def register(measure: Measure) -> Measure:
    """Add a measure to :data:`MEASURES` (ValueError on a repeated name or column)."""
    if measure.name in MEASURES or any(m.column == measure.column for m in MEASURES.values()):
        raise ValueError(f"a measure named {measure.name} or with column {measure.column} is registered already")
    MEASURES[measure.name] = measure
    return measure


def correlated_measures() -> tuple[Measure, ...]:
    """The measures ranked against the gap, in registration order."""
    return tuple(m for m in MEASURES.values() if m.correlated)


def recorded_measures() -> tuple[Measure, ...]:
    """The measures kept per step in a run's record (CHECKPOINT and MODEL sources)."""
    return tuple(m for m in MEASURES.values() if m.source is not Source.RUN)


# --- the definitions ----------------------------------------------------------------------------


def _at_p(p: float) -> Callable[[BoundAnalysis], float]:
    return lambda analysis: analysis.evaluate(p).log_total * _LOG10_E


def _alphas(analysis: BoundAnalysis) -> Any:
    profile = analysis.profile
    return spectrum_alphas(profile.singular_values, profile.above_threshold)


def _params(run: RunFacts) -> float:
    return float(run.params)


def _pacbayes(probe: ModelProbe) -> float:
    return inverse_square(pacbayes_sigma(probe.model, probe.ids, probe.labels, seed=probe.seed))


def _sharpness(probe: ModelProbe) -> float:
    return inverse_square(sharpness_alpha(probe.model, probe.ids, probe.labels))


_BOUND = Source.CHECKPOINT
register(
    Measure(
        "ours",
        "ours_log10",
        "log10 ours at p*",
        True,
        "the spectrum-adaptive proxy at p* (each matrix at its own optimal p)",
        _BOUND,
        lambda analysis: analysis.evaluate().log_total * _LOG10_E,
        linear_column="ours",
    )
)
for _p in FIXED_P:
    register(
        Measure(
            f"ours_p{_p:g}",
            f"ours_p{_p:g}_log10",
            f"log10 ours at p = {_p:g}",
            True,
            f"the proxy with every matrix at p = {_p:g}",
            _BOUND,
            _at_p(_p),
        )
    )
register(
    Measure(
        "edelman",
        "edelman_log10",
        "log10 Edelman-style",
        True,
        "the Edelman-style proxy (Edelman et al. 2022)",
        _BOUND,
        lambda analysis: analysis.log_edelman * _LOG10_E,
        linear_column="edelman",
    )
)
register(
    Measure(
        "params",
        "params",
        "parameters",
        False,
        "every parameter of the BertForSequenceClassification (embeddings, pooler, classifier)",
        Source.RUN,
        _params,
        integer=True,
    )
)
register(
    Measure(
        "frobenius",
        "frobenius",
        "Σ‖W‖_F²",
        False,
        "Σ ‖W‖_F² over the proxy matrices",
        _BOUND,
        lambda analysis: frobenius_sum(analysis.profile),
    )
)
register(
    Measure(
        "spectral_product",
        "spectral_product_log10",
        "log10 Π‖W‖₂",
        True,
        "log10 of the product of the 4L blocks' spectral norms",
        _BOUND,
        lambda analysis: log_spectral_product(analysis.profile) * _LOG10_E,
    )
)
register(
    Measure(
        "bartlett",
        "bartlett_log10",
        "log10 Bartlett et al.",
        True,
        "log10 of the spectral complexity of Bartlett, Foster & Telgarsky (2017), over the 4L blocks",
        _BOUND,
        lambda analysis: log_bartlett(analysis.profile) * _LOG10_E,
    )
)
register(
    Measure(
        "alpha",
        "alpha",
        "power-law α of the ESD",
        True,
        "mean over the proxy matrices of the power-law exponent of the eigenvalues of WᵀW (Clauset et al. 2009)",
        _BOUND,
        lambda analysis: _alphas(analysis).mean_alpha,
    )
)
register(
    Measure(
        "alpha_hat",
        "alpha_hat",
        "α̂ = α log10 λ_max",
        True,
        "mean over the proxy matrices of α log10 λ_max (Martin & Mahoney 2021)",
        _BOUND,
        lambda analysis: _alphas(analysis).mean_weighted,
    )
)
register(
    Measure(
        "alpha_skipped",
        "alpha_skipped",
        "matrices too small for a power-law fit",
        True,
        "proxy matrices with fewer than 10 positive eigenvalues, left out of alpha and alpha_hat",
        _BOUND,
        lambda analysis: float(_alphas(analysis).skipped),
        correlated=False,
        integer=True,
    )
)
register(
    Measure(
        "pacbayes_flatness",
        "pacbayes_flatness",
        "PAC-Bayes flatness 1/σ′²",
        False,
        "1/σ′², σ′ the largest magnitude-aware Gaussian noise raising the training error by ≤ 0.1 (Jiang et al. 2020)",
        Source.MODEL,
        _pacbayes,
    )
)
register(
    Measure(
        "sharpness",
        "sharpness",
        "sharpness 1/α′²",
        False,
        "1/α′², α′ the largest relative box whose ascent raises the training error by ≤ 0.1 (Jiang et al. 2020)",
        Source.MODEL,
        _sharpness,
    )
)
