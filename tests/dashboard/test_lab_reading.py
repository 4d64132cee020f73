"""The Lab sweep's reading is written from the sweep's own numbers, whichever measure comes first."""

from __future__ import annotations

from dashboard.views.lab import sweep_reading
from specbound_lab.correlation import Interval, MeasureCorrelation, TauDifference


def _correlation(measure: str, tau: float) -> MeasureCorrelation:
    return MeasureCorrelation(measure, tau, tau, tau, 12, ())


def _difference(measure: str, low: float, high: float) -> TauDifference:
    return TauDifference(measure, "ours", 12, (low + high) / 2, Interval(low, high), 0.0, Interval(-1.0, 1.0))


def test_another_measure_first_names_it_and_where_ours_stands() -> None:
    table = (_correlation("ours", 0.31), _correlation("spectral_product", 0.56), _correlation("params", 0.10))
    told = sweep_reading(table, (_difference("spectral_product", 0.09, 0.42),))
    assert told.startswith("Kendall τ is the share of pairs of runs")
    assert "**product of spectral norms** tracks the measured gap best (τ = 0.56)" in told
    assert "**ours at p*** comes second of 2 (τ = 0.31)" in told  # the parameter count is a baseline, not ranked
    assert "Of the trivial baselines, **number of parameters** has τ = 0.10: below the best measure's" in told
    assert "does tell the two apart" in told and "+0.09 and +0.42" in told
    untold = sweep_reading(table, (_difference("spectral_product", -0.05, 0.42),))
    assert "does not tell the two apart" in untold


def test_a_baseline_is_read_in_its_declared_direction_not_turned_to_suit_the_data() -> None:
    """The final training loss is declared "lower, larger gap": its τ of −0.70 reads as +0.70 as declared,
    and 1/n's τ of −0.80 stays −0.80 (it is not turned round because the data would favour that)."""
    table = (
        _correlation("ours", 0.31),
        _correlation("spectral_product", 0.56),
        _correlation("train_loss", -0.70),
        _correlation("inverse_n", -0.80),
    )
    told = sweep_reading(table, ())
    assert "**final training loss** (a lower value read as a larger gap, as declared) has τ = 0.70" in told
    assert "at least the best measure's" in told


def test_ours_first_says_so() -> None:
    table = (_correlation("ours", 0.62), _correlation("edelman", 0.40))
    assert (
        "**ours at p*** orders the runs most like their gaps (τ = 0.62), ahead of **Edelman-style proxy** (τ = 0.40)"
        in (sweep_reading(table, ()))
    )
    assert sweep_reading((_correlation("params", 0.1),), ()).startswith("Kendall τ")  # no ours: only what τ is
