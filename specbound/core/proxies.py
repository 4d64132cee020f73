"""The proxies by name: the spectrum-adaptive proxy at p*, the Edelman-style baseline and the three
fixed-index regimes, each named once for every place that names it.

The package computes these five numbers for every model (:class:`~specbound.core.bounds.BoundAnalysis`),
and several places write them down: the scaling study's tables and legends, the columns of a training
run's ``trajectory.csv``, the figures' legends, the lab's measures and their ``runs.csv`` columns. A
:class:`Proxy` holds every one of its names, so that these places cannot drift apart:

========== ============= ================== ==================================== ==============
member     ``key``       ``column``         ``label`` / ``described``             ``study_label``
========== ============= ================== ==================================== ==============
OURS       ours          ours_log10         ours at p* / ours at p*              ours (p*)
EDELMAN    edelman       edelman_log10      Edelman-style / Edelman-style proxy  Edelman et al.
P0         ours_p0       ours_p0_log10      ours at p = 0 / ... (rank)           p = 0 (rank)
P1         ours_p1       ours_p1_log10      ours at p = 1 / ... (nuclear norm)   p = 1 (nuclear)
P2         ours_p2       ours_p2_log10      ours at p = 2 / ... (Frobenius)      p = 2 (Frobenius)
========== ============= ================== ==================================== ==============

Examples:
    >>> Proxy.P1.fixed_p, Proxy.P1.key, Proxy.P1.column
    (1.0, 'ours_p1', 'ours_p1_log10')
    >>> Proxy.OURS.fixed_p is None, Proxy.EDELMAN.label, Proxy.P2.described
    (True, 'Edelman-style', 'ours at p = 2 (Frobenius)')
    >>> [proxy.value for proxy in FIXED_P_PROXIES]  # the scaling study's column names
    ['p=0', 'p=1', 'p=2']
"""

from __future__ import annotations

from enum import Enum

from .defaults import FIXED_P

#: What the landmark Schatten indices measure (:data:`~specbound.core.defaults.FIXED_P`).
FIXED_P_NORMS: dict[float, str] = {0.0: "rank", 1.0: "nuclear norm", 2.0: "Frobenius"}


class Proxy(str, Enum):
    """A proxy of the bound; its value is its name in the scaling study's tables (``models.csv``)."""

    OURS = "ours"
    EDELMAN = "edelman"
    P0 = "p=0"
    P1 = "p=1"
    P2 = "p=2"

    @property
    def fixed_p(self) -> float | None:
        """The Schatten index every matrix takes in a fixed-p regime; None for ours and Edelman's."""
        return _FIXED_P.get(self)

    @property
    def key(self) -> str:
        """The proxy's name in the lab's measures and the stem of its columns: ``ours``, ``ours_p0``."""
        return self.value if self.fixed_p is None else f"ours_p{self.fixed_p:g}"

    @property
    def column(self) -> str:
        """The column of its log10 in ``trajectory.csv`` and the lab's ``runs.csv``."""
        return f"{self.key}_log10"

    @property
    def label(self) -> str:
        """Its short name in figures' legends and axis titles: ``ours at p*``, ``Edelman-style``."""
        return {Proxy.OURS: "ours at p*", Proxy.EDELMAN: "Edelman-style"}.get(self) or f"ours at p = {self.fixed_p:g}"

    @property
    def described(self) -> str:
        """Its name in a sentence or a table, with what a fixed p measures."""
        if self is Proxy.EDELMAN:
            return "Edelman-style proxy"
        return self.label if self.fixed_p is None else f"{self.label} ({FIXED_P_NORMS[self.fixed_p]})"

    @property
    def study_label(self) -> str:
        """Its name in the scaling study's legends and tables."""
        if self.fixed_p is None:
            return {Proxy.OURS: "ours (p*)", Proxy.EDELMAN: "Edelman et al."}[self]
        norm = "nuclear" if self.fixed_p == 1.0 else FIXED_P_NORMS[self.fixed_p]
        return f"p = {self.fixed_p:g} ({norm})"


_FIXED_P: dict[Proxy, float] = dict(zip((Proxy.P0, Proxy.P1, Proxy.P2), FIXED_P, strict=True))
#: Every proxy, ours first; and the fixed-index regimes alone, in the order of FIXED_P.
PROXIES: tuple[Proxy, ...] = tuple(Proxy)
FIXED_P_PROXIES: tuple[Proxy, ...] = tuple(_FIXED_P)
