"""The scaling study: how the proxies grow with depth L and width N across a family of models.

Each model is reduced to a :class:`ModelSummary` (its shape and the natural log of every proxy).
From a set of summaries this module computes, in log space so that nothing overflows:

* normalised growth curves (SPEC §3): for a proxy B, the curve against N at fixed L is
  B(L, N) / B(L, N_ref), and against L at fixed N is B(L, N) / B(L_ref, N), with one reference per
  study (N_ref, L_ref the smallest width and depth in the family; for the BERT Miniatures the
  authors' N = 128 and L = 2), so that curves stay comparable when a model is missing; a curve whose
  group has no model at the reference is left out with a note, never normalised elsewhere; stored
  as ln B(L, N) - ln B(reference), so every curve starts at ln 1 = 0;
* fitted growth laws: the least-squares slope of ln B against ln L (at fixed N) or ln N (at fixed L),
  per fixed value, and a pooled slope over all fixed values (one common slope, a separate intercept
  per group), so a family whose proxy behaves like L^a N^b gives exactly a and b. Against L also a
  log-linear fit, ln B against L itself (growth rate per layer), because Edelman's proxy grows
  exponentially in depth and a power-law "exponent" of an exponential depends on the depths chosen
  (for B = 10^L it is 6.6 on L in {2, 4} and 25.3 on {10, 12}). Every fit carries its within-group
  r², the standard error of its slope with a Student-t interval, a flag when it rests on fewer
  than three sizes, and which law fits better (:class:`GrowthExponent`).

Beside the fits, what the bounds predict (:data:`PREDICTED_GROWTH`: √L for ours, L^{3/2} for Edelman's,
under fixed per-layer norm radii) and where each measured exponent's interval lies against it
(:func:`measured_growth`).

Proxies: "ours" (every matrix at its post-hoc p*), "edelman", and the fixed-index regimes "p=0"
(rank), "p=1" (nuclear) and "p=2" (Frobenius), each with every matrix at that p.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.bounds import BoundAnalysis
from ..core.defaults import FIXED_P
from ..core.logspace import LOG10_E, exp_or_inf
from ..core.proxies import PROXIES, Proxy

if TYPE_CHECKING:
    import pandas as pd


class Axis(str, Enum):
    """The size a curve or an exponent runs against; the other one is held fixed."""

    DEPTH = "L"
    WIDTH = "N"

    @property
    def other(self) -> Axis:
        return Axis.WIDTH if self is Axis.DEPTH else Axis.DEPTH


# --- one model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSummary:
    """A model's shape and the natural log of each proxy (logs, because Edelman's overflows).

    ``log_fixed`` maps a Schatten index p to ln of the proxy with every matrix at p.
    """

    name: str
    num_layers: int
    hidden_size: int
    log_ours: float
    log_edelman: float
    log_fixed: Mapping[float, float] = field(default_factory=dict)
    num_heads: int | None = None

    def __post_init__(self) -> None:
        if self.num_layers < 1 or self.hidden_size < 1:
            raise ValueError(f"{self.name}: L and N must be positive, got L={self.num_layers} N={self.hidden_size}")
        fixed = {float(p): float(v) for p, v in sorted(self.log_fixed.items())}
        object.__setattr__(self, "log_fixed", MappingProxyType(fixed))

    def size(self, axis: Axis) -> int:
        return self.num_layers if axis is Axis.DEPTH else self.hidden_size

    def has(self, proxy: Proxy) -> bool:
        return proxy.fixed_p is None or proxy.fixed_p in self.log_fixed

    def log_proxy(self, proxy: Proxy | str) -> float:
        """ln of one proxy; KeyError for a fixed-p regime this summary does not carry."""
        proxy = Proxy(proxy)
        if proxy is Proxy.OURS:
            return self.log_ours
        if proxy is Proxy.EDELMAN:
            return self.log_edelman
        assert proxy.fixed_p is not None
        return self.log_fixed[proxy.fixed_p]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (fixed-p keys become strings); :meth:`from_dict` reverses it."""
        return {
            "name": self.name,
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "num_heads": self.num_heads,
            "log_ours": self.log_ours,
            "log_edelman": self.log_edelman,
            "log_fixed": {repr(p): v for p, v in self.log_fixed.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSummary:
        return cls(
            name=str(data["name"]),
            num_layers=int(data["num_layers"]),
            hidden_size=int(data["hidden_size"]),
            log_ours=float(data["log_ours"]),
            log_edelman=float(data["log_edelman"]),
            log_fixed={float(p): float(v) for p, v in data["log_fixed"].items()},
            num_heads=None if data.get("num_heads") is None else int(data["num_heads"]),
        )


def summarize(analysis: BoundAnalysis, name: str | None = None, fixed_p: Iterable[float] = FIXED_P) -> ModelSummary:
    """The summary of one analysed model: ln of ours (at p*), of Edelman's and of each fixed-p sum."""
    shape = analysis.profile.shape
    return ModelSummary(
        name=analysis.profile.model if name is None else name,
        num_layers=shape.num_layers,
        hidden_size=shape.hidden_size,
        log_ours=analysis.evaluate().log_total,
        log_edelman=float(analysis.log_edelman),
        log_fixed={float(p): analysis.evaluate(float(p)).log_total for p in fixed_p},
        num_heads=shape.num_heads,
    )


# --- what the bounds predict ----------------------------------------------------------------------


@dataclass(frozen=True)
class PredictedGrowth:
    """The growth in one size that a bound's theory predicts for its complexity, and what it assumes.

    A power law B ∝ size^``exponent``: drawn beside a measured curve normalised at the reference size
    r, it is (size / r)^``exponent``, so measured and predicted start together at 1 and their slopes
    on log-log axes compare directly. ``law`` is the law as plain text writes it (√L, L^(3/2)).
    """

    proxy: Proxy
    against: Axis
    exponent: float
    law: str
    assumption: str

    def ratio(self, sizes: Iterable[float], reference: float) -> list[float]:
        """(size / reference)^exponent for each size: the predicted curve, normalised as the measured ones.

        Example:
            >>> PREDICTED_GROWTH[1].ratio([1, 2, 4], 1)  # Edelman et al.: L^(3/2)
            [1.0, 2.8284271247461903, 8.0]
        """
        return [(float(size) / float(reference)) ** self.exponent for size in sizes]


#: The depth dependence the paper's theoretical comparison states (Sakai & Imaizumi 2026, the comparison
#: with Edelman et al. 2022 in their representative regimes): √L or better for the spectrum-adaptive bound,
#: L^{3/2} for the norm-based one. Width has no such single exponent: in N both depend on how the spectra
#: spread, so no prediction is drawn against N.
PREDICTED_GROWTH: tuple[PredictedGrowth, ...] = (
    PredictedGrowth(
        Proxy.OURS,
        Axis.DEPTH,
        0.5,
        "√L",
        "the spectrum-adaptive bound in the paper's representative regimes (each layer's Frobenius norm, "
        "rank or spectral norm held at a fixed radius as L grows): √L or better, depending on the spectra",
    ),
    PredictedGrowth(
        Proxy.EDELMAN,
        Axis.DEPTH,
        1.5,
        "L^(3/2)",
        "Edelman et al.'s norm-based bound under the same fixed per-layer radii: the sum over L layers "
        "inside the power 3/2",
    ),
)


def predicted_growth(proxy: Proxy | str, against: Axis | str) -> PredictedGrowth | None:
    """The prediction for ``proxy`` against ``against``, or None where the theory states none.

    Example:
        >>> predicted_growth("ours", "L").law, predicted_growth("ours", "N") is None
        ('√L', True)
    """
    key = (Proxy(proxy), Axis(against))
    return next((g for g in PREDICTED_GROWTH if (g.proxy, g.against) == key), None)


# --- grouping -----------------------------------------------------------------------------------


def _groups(summaries: Sequence[ModelSummary], against: Axis) -> dict[int, list[ModelSummary]]:
    """Summaries by the value of the fixed size, each group sorted by the varying size.

    Two models of the same (L, N) would make a curve ambiguous, so they are refused.
    """
    seen: dict[tuple[int, int], str] = {}
    for s in summaries:
        key = (s.num_layers, s.hidden_size)
        if key in seen:
            raise ValueError(
                f"two models share L={key[0]} N={key[1]} ({seen[key]} and {s.name}); "
                f"a scaling study needs one model per shape"
            )
        seen[key] = s.name
    groups: dict[int, list[ModelSummary]] = defaultdict(list)
    for s in summaries:
        groups[s.size(against.other)].append(s)
    return {k: sorted(v, key=lambda s: s.size(against)) for k, v in sorted(groups.items())}


# --- defaults of the statistics -----------------------------------------------------------------

#: Confidence level of the interval quoted around every fitted slope.
CONFIDENCE = 0.95
#: Fewest distinct sizes for a fit to count as evidence: through two points any line fits exactly
#: (r² = 1, no residual), and a power law cannot be told from a log-linear law.
MIN_SIZES = 3
#: Fewest models a growth curve is drawn through (one point says nothing about growth).
MIN_CURVE_POINTS = 2
#: Two residual sums of squares closer than this fraction of SS_within count as a tie.
_TIE_TOLERANCE = 1e-9


def t_critical(confidence: float, df: int) -> float:
    """The two-sided Student-t quantile t with P(|T| <= t) = ``confidence`` for ``df`` degrees of freedom:
    scipy's ``t.ppf`` at (1 + confidence) / 2."""
    if not 0.0 < confidence < 1.0 or df < 1:
        raise ValueError(f"need 0 < confidence < 1 and df >= 1, got {confidence} and {df}")
    from scipy.stats import t

    return float(t.ppf(0.5 + 0.5 * confidence, df))


# --- normalised growth curves -------------------------------------------------------------------


@dataclass(frozen=True)
class GrowthCurve:
    """One proxy against one size at a fixed value of the other, normalised at the study's reference.

    ``log_ratio[i]`` = ln B(x_i) - ln B(reference), where the reference is one size common to every
    curve of the study against this size (the smallest present in the family), so curves stay
    comparable when a model is missing; it is the first point, so a curve starts at 0.
    """

    proxy: Proxy
    against: Axis
    fixed: int  # the value of the size held fixed (N for curves against L, L for curves against N)
    x: tuple[int, ...]
    log_ratio: tuple[float, ...]
    models: tuple[str, ...]
    reference: int

    @property
    def ratio(self) -> np.ndarray:
        """B(x) / B(reference), plain (inf where that overflows)."""
        return np.array([exp_or_inf(v) for v in self.log_ratio])

    @property
    def log10_ratio(self) -> np.ndarray:
        return np.asarray(self.log_ratio) * LOG10_E


def reference_size(summaries: Sequence[ModelSummary], against: Axis | str) -> int:
    """The common reference of every curve against ``against``: the smallest size present in the family.

    For the complete BERT Miniatures grid that is the authors' choice, L = 2 and N = 128.
    """
    against = Axis(against)
    if not summaries:
        raise ValueError("a scaling study needs at least one model")
    return min(s.size(against) for s in summaries)


def _curves_and_notes(
    summaries: Sequence[ModelSummary], against: Axis, proxies: Sequence[Proxy], min_points: int
) -> tuple[tuple[GrowthCurve, ...], tuple[str, ...]]:
    """The normalised curves, and one note per group left out because it lacks the reference size."""
    reference = reference_size(summaries, against)
    name, other = against.value, against.other.value
    curves, notes = [], []
    for fixed, group in _groups(summaries, against).items():
        at_reference = next((s for s in group if s.size(against) == reference), None)
        left_out = []
        for proxy in proxies:
            members = [s for s in group if s.has(proxy)]
            if len(members) < max(min_points, 1):
                continue
            if at_reference is None or not at_reference.has(proxy):
                left_out.append(proxy.value)
                continue
            logs = np.array([s.log_proxy(proxy) for s in members])
            curves.append(
                GrowthCurve(
                    proxy=proxy,
                    against=against,
                    fixed=fixed,
                    x=tuple(s.size(against) for s in members),
                    log_ratio=tuple(float(v) for v in logs - at_reference.log_proxy(proxy)),
                    models=tuple(s.name for s in members),
                    reference=reference,
                )
            )
        if left_out and at_reference is None:
            notes.append(
                f"No curve against {name} at {other} = {fixed}: the study has no model with "
                f"{name} = {reference} and {other} = {fixed}, and every curve against {name} is "
                f"normalised at {name} = {reference} (the smallest {name} in the study)."
            )
        elif left_out:
            notes.append(
                f"{', '.join(left_out)} against {name} at {other} = {fixed} left out: the model at "
                f"the common reference {name} = {reference} does not carry it."
            )
    return tuple(sorted(curves, key=lambda c: proxies.index(c.proxy))), tuple(notes)  # proxy by proxy


def growth_curves(
    summaries: Sequence[ModelSummary],
    against: Axis | str,
    proxies: Iterable[Proxy | str] = PROXIES,
    min_points: int = MIN_CURVE_POINTS,
) -> tuple[GrowthCurve, ...]:
    """Normalised curves of each proxy against ``against`` ("L" or "N"), one per fixed other size.

    Every curve is divided by its value at the common :func:`reference_size`; a group without a model
    at that size is left out (:class:`ScalingStudy` says so in its notes) rather than normalised
    elsewhere. Groups with fewer than ``min_points`` models are left out too (a single point says
    nothing about growth); a fixed-p proxy is drawn through the models that carry it.
    """
    return _curves_and_notes(summaries, Axis(against), tuple(map(Proxy, proxies)), min_points)[0]


# --- fitted growth laws -------------------------------------------------------------------------


class GrowthModel(str, Enum):
    """The law fitted to ln B: its abscissa is ln(size) for a power law, the size itself for exponential growth."""

    POWER = "power"  # ln B = slope · ln x + c: B ~ x^slope, slope is the exponent
    LOG_LINEAR = "log-linear"  # ln B = slope · x + c: B ~ e^(slope · x), slope is the growth rate per unit of x

    def abscissa(self, sizes: Sequence[int]) -> np.ndarray:
        values = np.asarray(sizes, dtype=float)
        return np.log(values) if self is GrowthModel.POWER else values


#: The laws fitted against each size. Against L, Edelman's proxy grows exponentially (α is a product
#: over the layers above), so a log-linear fit stands beside the power law; against N both proxies
#: are polynomial and only the power law is fitted.
GROWTH_MODELS: Mapping[Axis, tuple[GrowthModel, ...]] = MappingProxyType(
    {Axis.DEPTH: (GrowthModel.POWER, GrowthModel.LOG_LINEAR), Axis.WIDTH: (GrowthModel.POWER,)}
)


class BetterFit(str, Enum):
    """Which law fits ln B better, when more than one is fitted against a size."""

    POWER = GrowthModel.POWER.value
    LOG_LINEAR = GrowthModel.LOG_LINEAR.value
    UNDECIDED = "undecided"  # fewer than MIN_SIZES sizes, or residuals equal


@dataclass(frozen=True)
class GrowthExponent:
    """One least-squares fit of ln B against ``model.abscissa(size)``, per group or pooled.

    ``fixed`` is the value of the other size for a per-group fit, or None for the pooled fit, which
    shares one slope across groups and gives each group its own intercept (its intercept is None).
    With x the abscissa and g the group of each of the n points:

    * slope = Σ (x - x̄_g)(y - ȳ_g) / S_xx, S_xx = Σ (x - x̄_g)²;
    * ``r_squared`` = 1 - SS_res / SS_tot (SS_tot about the grand mean): for a pooled fit it counts the
      group intercepts as explained, so a proxy flat in L but varying with N scores near 1;
    * ``r_squared_within`` = 1 - SS_res / SS_within, SS_within = Σ_g Σ (y - ȳ_g)²: the share of the
      variation inside the groups that the slope explains (equal to ``r_squared`` for one group);
    * ``slope_se`` = √(s² / S_xx), s² = SS_res / df, ``residual_df`` = n - groups - 1 (nan when df <= 0);
    * [``ci_low``, ``ci_high``] = slope ∓ t · slope_se, t the two-sided Student-t quantile at
      :data:`CONFIDENCE` with df degrees of freedom (:func:`t_critical`; normal errors assumed);
    * ``few_points``: fewer than :data:`MIN_SIZES` distinct sizes, so r² = 1 proves nothing;
    * ``better_fit``: the law with the smaller residual variance among those fitted on the same
      points (same df, so the smaller SS_res), undecided with too few sizes or a tie; None when only
      one law is fitted against this size.
    """

    proxy: Proxy
    against: Axis
    fixed: int | None
    model: GrowthModel
    slope: float
    intercept: float | None
    r_squared: float  # nan when ln B does not vary
    r_squared_within: float  # nan when ln B does not vary within the groups
    slope_se: float
    ci_low: float
    ci_high: float
    residual_df: int
    num_points: int
    num_groups: int
    num_sizes: int
    better_fit: BetterFit | None

    @property
    def few_points(self) -> bool:
        return self.num_sizes < MIN_SIZES


@dataclass(frozen=True)
class _LeastSquares:
    """Sums of one common-slope fit with an intercept per group."""

    slope: float
    intercept: float  # of the single group; nan for several
    ss_res: float
    ss_within: float
    ss_total: float
    sxx: float
    num_points: int
    num_groups: int
    num_sizes: int


def _fit(groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> _LeastSquares:
    """Common slope with per-group intercepts: slope = Σ (x - x̄_g)(y - ȳ_g) / Σ (x - x̄_g)²."""
    sxy = sxx = ss_res = ss_within = 0.0
    for x, y in groups:
        dx, dy = x - x.mean(), y - y.mean()
        sxy += float(dx @ dy)
        sxx += float(dx @ dx)
        ss_within += float(dy @ dy)
    slope = sxy / sxx
    for x, y in groups:
        residual = (y - y.mean()) - slope * (x - x.mean())
        ss_res += float(residual @ residual)
    all_x, all_y = np.concatenate([x for x, _ in groups]), np.concatenate([y for _, y in groups])
    x0, y0 = groups[0]
    return _LeastSquares(
        slope=slope,
        intercept=float(y0.mean() - slope * x0.mean()) if len(groups) == 1 else math.nan,
        ss_res=ss_res,
        ss_within=ss_within,
        ss_total=float(np.square(all_y - all_y.mean()).sum()),
        sxx=sxx,
        num_points=len(all_y),
        num_groups=len(groups),
        num_sizes=len(np.unique(all_x)),
    )


def _better_fit(fits: Mapping[GrowthModel, _LeastSquares]) -> BetterFit | None:
    """The law with the smaller residual sum of squares, if there is a rival and enough sizes to tell."""
    if len(fits) < 2:
        return None
    if min(f.num_sizes for f in fits.values()) < MIN_SIZES:
        return BetterFit.UNDECIDED
    (best, first), (_, second) = sorted(fits.items(), key=lambda item: item[1].ss_res)[:2]
    if second.ss_res - first.ss_res <= _TIE_TOLERANCE * first.ss_within:
        return BetterFit.UNDECIDED
    return BetterFit(best.value)


def _exponent(
    proxy: Proxy,
    against: Axis,
    fixed: int | None,
    model: GrowthModel,
    fit: _LeastSquares,
    better: BetterFit | None,
    confidence: float,
) -> GrowthExponent:
    df = fit.num_points - fit.num_groups - 1
    se = math.sqrt(fit.ss_res / df / fit.sxx) if df > 0 else math.nan
    half = t_critical(confidence, df) * se if df > 0 else math.nan
    return GrowthExponent(
        proxy=proxy,
        against=against,
        fixed=fixed,
        model=model,
        slope=fit.slope,
        intercept=fit.intercept if fixed is not None else None,
        r_squared=1.0 - fit.ss_res / fit.ss_total if fit.ss_total > 0 else math.nan,
        r_squared_within=1.0 - fit.ss_res / fit.ss_within if fit.ss_within > 0 else math.nan,
        slope_se=se,
        ci_low=fit.slope - half,
        ci_high=fit.slope + half,
        residual_df=df,
        num_points=fit.num_points,
        num_groups=fit.num_groups,
        num_sizes=fit.num_sizes,
        better_fit=better,
    )


def growth_exponents(
    summaries: Sequence[ModelSummary],
    against: Axis | str,
    proxies: Iterable[Proxy | str] = PROXIES,
    pooled: bool = True,
    confidence: float = CONFIDENCE,
) -> tuple[GrowthExponent, ...]:
    """Fits of ln B against each law of :data:`GROWTH_MODELS` (at each fixed other size), plus pooled fits.

    A group needs at least two distinct sizes (and is flagged ``few_points`` below :data:`MIN_SIZES`);
    the pooled fit is given when at least two groups can be fitted (with one group it would repeat
    that group's fit). Rows come per proxy: each group's laws, then the pooled laws.
    """
    against = Axis(against)
    models = GROWTH_MODELS[against]
    results = []
    for proxy in map(Proxy, proxies):
        fitted: list[tuple[list[int], np.ndarray]] = []
        for fixed, group in _groups(summaries, against).items():
            members = [s for s in group if s.has(proxy) and math.isfinite(s.log_proxy(proxy))]
            sizes = [s.size(against) for s in members]
            if len(set(sizes)) < 2:
                continue
            y = np.array([s.log_proxy(proxy) for s in members])
            fitted.append((sizes, y))
            fits = {m: _fit([(m.abscissa(sizes), y)]) for m in models}
            better = _better_fit(fits)
            results += [_exponent(proxy, against, fixed, m, f, better, confidence) for m, f in fits.items()]
        if pooled and len(fitted) >= 2:
            fits = {m: _fit([(m.abscissa(sizes), y) for sizes, y in fitted]) for m in models}
            better = _better_fit(fits)
            results += [_exponent(proxy, against, None, m, f, better, confidence) for m, f in fits.items()]
    return tuple(results)


# --- the whole study ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalingStudy:
    """Summaries of a family of models with their growth curves and exponents along both sizes.

    Curves against L are normalised at ``reference_depth``, against N at ``reference_width`` (the
    smallest of each in the family, chosen once for the study); ``notes`` say which curves had to be
    left out because their group has no model at the reference.
    """

    summaries: tuple[ModelSummary, ...]
    curves_depth: tuple[GrowthCurve, ...]
    curves_width: tuple[GrowthCurve, ...]
    exponents: tuple[GrowthExponent, ...]
    reference_depth: int
    reference_width: int
    notes: tuple[str, ...]

    @classmethod
    def from_summaries(
        cls, summaries: Iterable[ModelSummary], proxies: Iterable[Proxy | str] = PROXIES
    ) -> ScalingStudy:
        ordered = tuple(sorted(summaries, key=lambda s: (s.num_layers, s.hidden_size, s.name)))
        chosen = tuple(map(Proxy, proxies))
        curves_depth, notes_depth = _curves_and_notes(ordered, Axis.DEPTH, chosen, MIN_CURVE_POINTS)
        curves_width, notes_width = _curves_and_notes(ordered, Axis.WIDTH, chosen, MIN_CURVE_POINTS)
        return cls(
            summaries=ordered,
            curves_depth=curves_depth,
            curves_width=curves_width,
            exponents=growth_exponents(ordered, Axis.DEPTH, chosen) + growth_exponents(ordered, Axis.WIDTH, chosen),
            reference_depth=reference_size(ordered, Axis.DEPTH),
            reference_width=reference_size(ordered, Axis.WIDTH),
            notes=notes_depth + notes_width,
        )

    def curves(self, against: Axis | str) -> tuple[GrowthCurve, ...]:
        return self.curves_depth if Axis(against) is Axis.DEPTH else self.curves_width

    def reference(self, against: Axis | str) -> int:
        """The size at which every curve against ``against`` is normalised."""
        return self.reference_depth if Axis(against) is Axis.DEPTH else self.reference_width

    def exponent(
        self,
        proxy: Proxy | str,
        against: Axis | str,
        fixed: int | None = None,
        model: GrowthModel | str = GrowthModel.POWER,
    ) -> GrowthExponent:
        """One fit (fixed=None: the pooled one; the power law by default); KeyError if it was not fitted."""
        key = (Proxy(proxy), Axis(against), fixed, GrowthModel(model))
        for e in self.exponents:
            if (e.proxy, e.against, e.fixed, e.model) == key:
                return e
        raise KeyError(f"no {key[3].value} fit of {key[0].value} against {key[1].value} at fixed={fixed}")

    def models_frame(self) -> pd.DataFrame:
        return summaries_frame(self.summaries)

    def curves_frame(self) -> pd.DataFrame:
        return curves_frame(self.curves_depth + self.curves_width)

    def exponents_frame(self) -> pd.DataFrame:
        return exponents_frame(self.exponents)


# --- measured beside predicted ------------------------------------------------------------------


class Agreement(str, Enum):
    """Where a measured exponent's interval lies against the exponent a bound predicts."""

    HOLDS = "holds"  # the interval contains the predicted exponent
    STEEPER = "steeper"  # the whole interval lies above it: the proxy grows faster than predicted
    FLATTER = "flatter"  # the whole interval lies below it: slower than predicted ("or better" for ours)
    NO_INTERVAL = "no interval"  # fewer than MIN_SIZES sizes, or no residual degree of freedom
    NOT_PREDICTED = "not predicted"  # the theory states no single exponent along this size


@dataclass(frozen=True)
class MeasuredGrowth:
    """One proxy's measured power-law exponent along one size, beside the exponent its bound predicts.

    ``fit`` is the pooled power-law fit (one slope shared by the groups at each fixed other size, an
    intercept per group), or the one group's fit when the study has a single group; None when no
    group has two sizes. Its interval is the Student-t interval of :class:`GrowthExponent` on the
    residual degrees of freedom (normal, independent residuals around a power law: one model per
    (L, N), so the scatter of the models about the law is all the noise there is), given only from
    :data:`MIN_SIZES` sizes up: through two sizes any law fits and "±" would measure nothing.

    Example, a family whose proxy grows exactly like √L · N:

        >>> family = [ModelSummary(f"L{l}N{n}", l, n, 0.5 * math.log(l) + math.log(n), 1.5 * math.log(l))
        ...           for l in (1, 2, 4, 8) for n in (32, 64, 128)]
        >>> row = measured_growth(ScalingStudy.from_summaries(family))[0]
        >>> (row.proxy.value, row.against.value, round(row.fit.slope, 6), row.predicted.law)
        ('ours', 'L', 0.5, '√L')
    """

    proxy: Proxy
    against: Axis
    fit: GrowthExponent | None
    predicted: PredictedGrowth | None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The slope's interval at :data:`CONFIDENCE`, or None where none is honest (fewer than three sizes)."""
        fit = self.fit
        if fit is None or fit.few_points or not (math.isfinite(fit.ci_low) and math.isfinite(fit.ci_high)):
            return None
        return fit.ci_low, fit.ci_high

    @property
    def agreement(self) -> Agreement:
        """Whether the interval holds the predicted exponent, or lies above or below it."""
        if self.predicted is None:
            return Agreement.NOT_PREDICTED
        interval = self.interval
        if interval is None:
            return Agreement.NO_INTERVAL
        if interval[0] > self.predicted.exponent:
            return Agreement.STEEPER
        if interval[1] < self.predicted.exponent:
            return Agreement.FLATTER
        return Agreement.HOLDS


#: The proxies the paper compares, whose growth is set beside its prediction.
COMPARED: tuple[Proxy, ...] = (Proxy.OURS, Proxy.EDELMAN)


def measured_growth(study: ScalingStudy, proxies: Iterable[Proxy | str] = COMPARED) -> tuple[MeasuredGrowth, ...]:
    """Each proxy's power-law exponent in depth L, then in width N, beside :func:`predicted_growth`."""
    rows = []
    for axis in (Axis.DEPTH, Axis.WIDTH):
        for proxy in map(Proxy, proxies):
            fits = [e for e in study.exponents if (e.proxy, e.against, e.model) == (proxy, axis, GrowthModel.POWER)]
            pooled = next((e for e in fits if e.fixed is None), None)
            fit = pooled if pooled is not None else (fits[0] if len(fits) == 1 else None)
            rows.append(MeasuredGrowth(proxy, axis, fit, predicted_growth(proxy, axis)))
    return tuple(rows)


#: Columns of :func:`measured_growth_frame`.
MEASURED_COLUMNS: tuple[str, ...] = (
    "proxy",
    "against",
    "predicted_law",
    "predicted_exponent",
    "measured_exponent",
    "ci_low",
    "ci_high",
    "num_sizes",
    "num_points",
    "agreement",
)


def measured_growth_frame(rows: Iterable[MeasuredGrowth]) -> pd.DataFrame:
    """One row per proxy and size: the predicted law and exponent (empty where none is stated), the
    measured exponent, its interval (empty below three sizes), the sizes and models it rests on, and
    :class:`Agreement`."""
    import pandas as pd

    records = []
    for row in rows:
        interval = row.interval
        records.append(
            {
                "proxy": row.proxy.value,
                "against": row.against.value,
                "predicted_law": None if row.predicted is None else row.predicted.law,
                "predicted_exponent": math.nan if row.predicted is None else row.predicted.exponent,
                "measured_exponent": math.nan if row.fit is None else row.fit.slope,
                "ci_low": math.nan if interval is None else interval[0],
                "ci_high": math.nan if interval is None else interval[1],
                "num_sizes": 0 if row.fit is None else row.fit.num_sizes,
                "num_points": 0 if row.fit is None else row.fit.num_points,
                "agreement": row.agreement.value,
            }
        )
    return pd.DataFrame(records, columns=list(MEASURED_COLUMNS))


# --- table edges --------------------------------------------------------------------------------


def summaries_frame(summaries: Iterable[ModelSummary], proxies: Iterable[Proxy | str] = PROXIES) -> pd.DataFrame:
    """One row per model: name, L, N, H, then log10 and plain value of each proxy (plain: NaN on overflow)."""
    import pandas as pd

    chosen = tuple(map(Proxy, proxies))
    rows = []
    for s in summaries:
        row: dict[str, Any] = {"name": s.name, "L": s.num_layers, "N": s.hidden_size, "H": s.num_heads}
        for proxy in chosen:
            log_value = s.log_proxy(proxy) if s.has(proxy) else math.nan
            plain = exp_or_inf(log_value) if math.isfinite(log_value) else math.nan
            row[f"{proxy.value}_log10"] = log_value * LOG10_E
            row[proxy.value] = plain if math.isfinite(plain) else math.nan
        rows.append(row)
    frame = pd.DataFrame(
        rows, columns=["name", "L", "N", "H", *[c for p in chosen for c in (f"{p.value}_log10", p.value)]]
    )
    frame["H"] = frame["H"].astype("Int64")
    return frame


def curves_frame(curves: Iterable[GrowthCurve]) -> pd.DataFrame:
    """Long table of growth curves: proxy, against, fixed, model, x, log10 and plain ratio, reference size."""
    import pandas as pd

    rows = [
        {
            "proxy": c.proxy.value,
            "against": c.against.value,
            "fixed": c.fixed,
            "model": model,
            "x": x,
            "log10_ratio": lr * LOG10_E,
            "ratio": exp_or_inf(lr),
            "reference": c.reference,
        }
        for c in curves
        for model, x, lr in zip(c.models, c.x, c.log_ratio, strict=True)
    ]
    return pd.DataFrame(rows, columns=["proxy", "against", "fixed", "model", "x", "log10_ratio", "ratio", "reference"])


#: Columns of the exponents table: the original eight first, then the statistics added beside them.
EXPONENT_COLUMNS: tuple[str, ...] = (
    "proxy",
    "against",
    "fixed",
    "slope",
    "intercept",
    "r_squared",
    "num_points",
    "num_groups",
    "model",
    "slope_se",
    "ci_low",
    "ci_high",
    "residual_df",
    "r_squared_within",
    "num_sizes",
    "few_points",
    "better_fit",
)


def exponents_frame(exponents: Iterable[GrowthExponent]) -> pd.DataFrame:
    """One row per fit, :data:`EXPONENT_COLUMNS` (``fixed`` empty for pooled fits; ``model`` "power" or
    "log-linear"; ``better_fit`` empty where only one law is fitted)."""
    import pandas as pd

    rows = [
        {
            "proxy": e.proxy.value,
            "against": e.against.value,
            "fixed": e.fixed,
            "slope": e.slope,
            "intercept": e.intercept,
            "r_squared": e.r_squared,
            "num_points": e.num_points,
            "num_groups": e.num_groups,
            "model": e.model.value,
            "slope_se": e.slope_se,
            "ci_low": e.ci_low,
            "ci_high": e.ci_high,
            "residual_df": e.residual_df,
            "r_squared_within": e.r_squared_within,
            "num_sizes": e.num_sizes,
            "few_points": e.few_points,
            "better_fit": None if e.better_fit is None else e.better_fit.value,
        }
        for e in exponents
    ]
    frame = pd.DataFrame(rows, columns=list(EXPONENT_COLUMNS))
    frame["fixed"] = frame["fixed"].astype("Int64")
    frame["intercept"] = frame["intercept"].astype("float64")
    frame["few_points"] = frame["few_points"].astype(bool)
    return frame
