"""The scaling study: how the proxies grow with depth L and width N across a family of models.

Each model is reduced to a :class:`ModelSummary` (its shape and the natural log of every proxy).
From a set of summaries this module computes, in log space so that nothing overflows:

* normalised growth curves (SPEC §3): for a proxy B, the curve against N at fixed L is
  B(L, N) / B(L, N_min(L)), and against L at fixed N is B(L, N) / B(L_min(N), N); stored as
  ln B(L, N) - ln B(reference), so every curve starts at ln 1 = 0;
* fitted growth exponents: the least-squares slope of ln B against ln L (at fixed N) or ln N (at
  fixed L), per fixed value, and a pooled slope over all fixed values (one common slope, a separate
  intercept per group), so a family whose proxy behaves like L^a N^b gives exactly a and b.

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

from .bounds import BoundAnalysis
from .logspace import LOG10_E, exp_or_inf

if TYPE_CHECKING:
    import pandas as pd


class Proxy(str, Enum):
    """The proxies compared in the study; the value is the column and legend name."""

    OURS = "ours"
    EDELMAN = "edelman"
    P0 = "p=0"
    P1 = "p=1"
    P2 = "p=2"

    @property
    def fixed_p(self) -> float | None:
        """The Schatten index every matrix uses in a fixed-p regime; None for ours and Edelman."""
        return _FIXED_P.get(self)


_FIXED_P: dict[Proxy, float] = {Proxy.P0: 0.0, Proxy.P1: 1.0, Proxy.P2: 2.0}
#: The fixed-index regimes of the study, p = 0, 1, 2.
FIXED_P: tuple[float, ...] = tuple(_FIXED_P.values())
PROXIES: tuple[Proxy, ...] = tuple(Proxy)


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
            raise ValueError(f"{self.name}: L and N must be positive, got L={self.num_layers} "
                             f"N={self.hidden_size}")
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
        return self.log_fixed[proxy.fixed_p]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (fixed-p keys become strings); :meth:`from_dict` reverses it."""
        return {"name": self.name, "num_layers": self.num_layers, "hidden_size": self.hidden_size,
                "num_heads": self.num_heads, "log_ours": self.log_ours, "log_edelman": self.log_edelman,
                "log_fixed": {repr(p): v for p, v in self.log_fixed.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSummary:
        return cls(name=str(data["name"]), num_layers=int(data["num_layers"]),
                   hidden_size=int(data["hidden_size"]), log_ours=float(data["log_ours"]),
                   log_edelman=float(data["log_edelman"]),
                   log_fixed={float(p): float(v) for p, v in data["log_fixed"].items()},
                   num_heads=None if data.get("num_heads") is None else int(data["num_heads"]))


def summarize(analysis: BoundAnalysis, name: str | None = None,
              fixed_p: Iterable[float] = FIXED_P) -> ModelSummary:
    """The summary of one analysed model: ln of ours (at p*), of Edelman's and of each fixed-p sum."""
    shape = analysis.profile.shape
    return ModelSummary(
        name=analysis.profile.model if name is None else name,
        num_layers=shape.num_layers, hidden_size=shape.hidden_size,
        log_ours=analysis.evaluate().log_total, log_edelman=float(analysis.log_edelman),
        log_fixed={float(p): analysis.evaluate(float(p)).log_total for p in fixed_p},
        num_heads=shape.num_heads,
    )


# --- grouping -----------------------------------------------------------------------------------

def _groups(summaries: Sequence[ModelSummary], against: Axis) -> dict[int, list[ModelSummary]]:
    """Summaries by the value of the fixed size, each group sorted by the varying size.

    Two models of the same (L, N) would make a curve ambiguous, so they are refused.
    """
    seen: dict[tuple[int, int], str] = {}
    for s in summaries:
        key = (s.num_layers, s.hidden_size)
        if key in seen:
            raise ValueError(f"two models share L={key[0]} N={key[1]} ({seen[key]} and {s.name}); "
                             f"a scaling study needs one model per shape")
        seen[key] = s.name
    groups: dict[int, list[ModelSummary]] = defaultdict(list)
    for s in summaries:
        groups[s.size(against.other)].append(s)
    return {k: sorted(v, key=lambda s: s.size(against)) for k, v in sorted(groups.items())}


# --- normalised growth curves -------------------------------------------------------------------

@dataclass(frozen=True)
class GrowthCurve:
    """One proxy against one size at a fixed value of the other, normalised to its first point.

    ``log_ratio[i]`` = ln B(x_i) - ln B(x_0) with x_0 the smallest size available, so it starts at 0.
    """

    proxy: Proxy
    against: Axis
    fixed: int  # the value of the size held fixed (N for curves against L, L for curves against N)
    x: tuple[int, ...]
    log_ratio: tuple[float, ...]
    models: tuple[str, ...]

    @property
    def ratio(self) -> np.ndarray:
        """B(x) / B(x_0), plain (inf where that overflows)."""
        return np.array([exp_or_inf(v) for v in self.log_ratio])

    @property
    def log10_ratio(self) -> np.ndarray:
        return np.asarray(self.log_ratio) * LOG10_E


def growth_curves(summaries: Sequence[ModelSummary], against: Axis | str,
                  proxies: Iterable[Proxy | str] = PROXIES, min_points: int = 2) -> tuple[GrowthCurve, ...]:
    """Normalised curves of each proxy against ``against`` ("L" or "N"), one per fixed other size.

    Groups with fewer than ``min_points`` models are left out (a single point says nothing about
    growth); a fixed-p proxy is drawn through the models that carry it.
    """
    against = Axis(against)
    curves = []
    for proxy in map(Proxy, proxies):
        for fixed, group in _groups(summaries, against).items():
            members = [s for s in group if s.has(proxy)]
            if len(members) < max(min_points, 1):
                continue
            logs = np.array([s.log_proxy(proxy) for s in members])
            curves.append(GrowthCurve(
                proxy=proxy, against=against, fixed=fixed, x=tuple(s.size(against) for s in members),
                log_ratio=tuple(float(v) for v in logs - logs[0]), models=tuple(s.name for s in members),
            ))
    return tuple(curves)


# --- fitted growth exponents --------------------------------------------------------------------

@dataclass(frozen=True)
class GrowthExponent:
    """Least-squares slope of ln B against ln(size): B grows like size^slope.

    ``fixed`` is the value of the other size for a per-group fit, or None for the pooled fit, which
    shares one slope across groups and gives each group its own intercept (its intercept is None).
    """

    proxy: Proxy
    against: Axis
    fixed: int | None
    slope: float
    intercept: float | None
    r_squared: float  # 1 - SS_res / SS_tot of ln B; nan when ln B does not vary
    num_points: int
    num_groups: int


def _fit(groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float, float]:
    """Common slope with per-group intercepts: slope = sum (x - x̄_g)(y - ȳ_g) / sum (x - x̄_g)^2.

    Returns (slope, intercept of the single group or nan, r^2 of the fit).
    """
    sxy = sxx = ss_res = 0.0
    for x, y in groups:
        dx, dy = x - x.mean(), y - y.mean()
        sxy += float(dx @ dy)
        sxx += float(dx @ dx)
    slope = sxy / sxx
    all_y = np.concatenate([y for _, y in groups])
    for x, y in groups:
        residual = (y - y.mean()) - slope * (x - x.mean())
        ss_res += float(residual @ residual)
    ss_tot = float(np.square(all_y - all_y.mean()).sum())
    r_squared = 1.0 - ss_res / ss_tot if ss_tot > 0 else math.nan
    x0, y0 = groups[0]
    intercept = float(y0.mean() - slope * x0.mean()) if len(groups) == 1 else math.nan
    return slope, intercept, r_squared


def growth_exponents(summaries: Sequence[ModelSummary], against: Axis | str,
                     proxies: Iterable[Proxy | str] = PROXIES, pooled: bool = True) -> tuple[GrowthExponent, ...]:
    """Slopes of ln B against ln L (at each fixed N) or ln N (at each fixed L), plus a pooled slope.

    A group needs at least two distinct sizes; the pooled fit is given when at least two groups can
    be fitted (with one group it would repeat that group's fit).
    """
    against = Axis(against)
    results = []
    for proxy in map(Proxy, proxies):
        fitted: list[tuple[int, np.ndarray, np.ndarray]] = []
        for fixed, group in _groups(summaries, against).items():
            members = [s for s in group if s.has(proxy) and math.isfinite(s.log_proxy(proxy))]
            if len({s.size(against) for s in members}) < 2:
                continue
            x = np.log([float(s.size(against)) for s in members])
            y = np.array([s.log_proxy(proxy) for s in members])
            fitted.append((fixed, x, y))
            slope, intercept, r2 = _fit([(x, y)])
            results.append(GrowthExponent(proxy, against, fixed, slope, intercept, r2, len(x), 1))
        if pooled and len(fitted) >= 2:
            slope, _, r2 = _fit([(x, y) for _, x, y in fitted])
            results.append(GrowthExponent(proxy, against, None, slope, None, r2,
                                          sum(len(x) for _, x, _ in fitted), len(fitted)))
    return tuple(results)


# --- the whole study ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingStudy:
    """Summaries of a family of models with their growth curves and exponents along both sizes."""

    summaries: tuple[ModelSummary, ...]
    curves_depth: tuple[GrowthCurve, ...]
    curves_width: tuple[GrowthCurve, ...]
    exponents: tuple[GrowthExponent, ...]

    @classmethod
    def from_summaries(cls, summaries: Iterable[ModelSummary],
                       proxies: Iterable[Proxy | str] = PROXIES) -> ScalingStudy:
        ordered = tuple(sorted(summaries, key=lambda s: (s.num_layers, s.hidden_size, s.name)))
        proxies = tuple(map(Proxy, proxies))
        return cls(
            summaries=ordered,
            curves_depth=growth_curves(ordered, Axis.DEPTH, proxies),
            curves_width=growth_curves(ordered, Axis.WIDTH, proxies),
            exponents=growth_exponents(ordered, Axis.DEPTH, proxies) + growth_exponents(ordered, Axis.WIDTH, proxies),
        )

    def curves(self, against: Axis | str) -> tuple[GrowthCurve, ...]:
        return self.curves_depth if Axis(against) is Axis.DEPTH else self.curves_width

    def exponent(self, proxy: Proxy | str, against: Axis | str, fixed: int | None = None) -> GrowthExponent:
        """One fitted exponent (fixed=None: the pooled one); KeyError if it could not be fitted."""
        proxy, against = Proxy(proxy), Axis(against)
        for e in self.exponents:
            if (e.proxy, e.against, e.fixed) == (proxy, against, fixed):
                return e
        raise KeyError(f"no fitted exponent of {proxy.value} against {against.value} at fixed={fixed}")

    def models_frame(self) -> pd.DataFrame:
        return summaries_frame(self.summaries)

    def curves_frame(self) -> pd.DataFrame:
        return curves_frame(self.curves_depth + self.curves_width)

    def exponents_frame(self) -> pd.DataFrame:
        return exponents_frame(self.exponents)


# --- table edges --------------------------------------------------------------------------------

def summaries_frame(summaries: Iterable[ModelSummary], proxies: Iterable[Proxy | str] = PROXIES) -> pd.DataFrame:
    """One row per model: name, L, N, H, then log10 and plain value of each proxy (plain: NaN on overflow)."""
    import pandas as pd

    proxies = tuple(map(Proxy, proxies))
    rows = []
    for s in summaries:
        row: dict[str, Any] = {"name": s.name, "L": s.num_layers, "N": s.hidden_size, "H": s.num_heads}
        for proxy in proxies:
            log_value = s.log_proxy(proxy) if s.has(proxy) else math.nan
            plain = exp_or_inf(log_value) if math.isfinite(log_value) else math.nan
            row[f"{proxy.value}_log10"] = log_value * LOG10_E
            row[proxy.value] = plain if math.isfinite(plain) else math.nan
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["name", "L", "N", "H",
                                        *[c for p in proxies for c in (f"{p.value}_log10", p.value)]])
    frame["H"] = frame["H"].astype("Int64")
    return frame


def curves_frame(curves: Iterable[GrowthCurve]) -> pd.DataFrame:
    """Long table of growth curves: proxy, against, fixed, model, x, log10 and plain ratio."""
    import pandas as pd

    rows = [{"proxy": c.proxy.value, "against": c.against.value, "fixed": c.fixed, "model": model,
             "x": x, "log10_ratio": lr * LOG10_E, "ratio": exp_or_inf(lr)}
            for c in curves for model, x, lr in zip(c.models, c.x, c.log_ratio)]
    return pd.DataFrame(rows, columns=["proxy", "against", "fixed", "model", "x", "log10_ratio", "ratio"])


def exponents_frame(exponents: Iterable[GrowthExponent]) -> pd.DataFrame:
    """One row per fit: proxy, against, fixed (empty for pooled), slope, intercept, r2, counts."""
    import pandas as pd

    rows = [{"proxy": e.proxy.value, "against": e.against.value, "fixed": e.fixed, "slope": e.slope,
             "intercept": e.intercept, "r_squared": e.r_squared, "num_points": e.num_points,
             "num_groups": e.num_groups} for e in exponents]
    frame = pd.DataFrame(rows, columns=["proxy", "against", "fixed", "slope", "intercept", "r_squared",
                                        "num_points", "num_groups"])
    frame["fixed"] = frame["fixed"].astype("Int64")
    frame["intercept"] = frame["intercept"].astype("float64")
    return frame
