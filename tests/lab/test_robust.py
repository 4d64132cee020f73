"""The robust view (Dziugaite et al. 2020): sign-errors of synthetic measures with known orderings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.lab.robust import environment_column, robust_view, sign_error


def test_sign_error_counts_the_pairs_ordered_against_the_gap() -> None:
    gap = np.array([0.1, 0.2, 0.3, 0.4])
    assert sign_error(gap * 3, gap) == (0.0, 6)  # every pair in the gap's order
    assert sign_error(-gap, gap) == (1.0, 6)  # every pair the wrong way
    # one swap of neighbours: 1 of the 6 pairs is discordant
    assert sign_error([1.0, 3.0, 2.0, 4.0], gap) == (pytest.approx(1 / 6), 6)
    # ties in the measure are left out: pairs (0, 1) tied, 5 untied pairs, 0 discordant
    assert sign_error([1.0, 1.0, 2.0, 3.0], gap) == (0.0, 5)
    error, pairs = sign_error([1.0, 1.0], [0.1, 0.2])
    assert math.isnan(error) and pairs == 0
    assert sign_error([1.0, math.nan, 2.0], [0.1, 0.5, 0.2]) == (0.0, 1)  # a non-finite run is left out


def test_sign_error_is_one_minus_tau_over_two_without_ties() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=30), rng.normal(size=30)
    i, j = np.triu_indices(30, k=1)
    tau = float((np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])).mean())
    assert sign_error(x, y)[0] == pytest.approx((1 - tau) / 2, abs=1e-12)


def test_robust_view_gives_each_measures_worst_environment() -> None:
    gap = [0.1, 0.2, 0.3, 0.4]
    environments = {
        "threshold/bert": ({"good": [1, 2, 3, 4], "flip": [4, 3, 2, 1], "swap": [1, 2, 3, 4]}, gap),
        "markov/gpt2": ({"good": [1, 2, 3, 4], "flip": [1, 2, 3, 4], "swap": [2, 1, 3, 4]}, gap),
        "modular/llama": ({"good": [1, 2, 4, 3], "swap": [2, 1, 4, 3]}, gap),  # "flip" missing here
    }
    rows = {r.measure: r for r in robust_view(environments)}
    assert list(rows) == ["good", "flip", "swap"]
    good, flip, swap = rows["good"], rows["flip"], rows["swap"]
    assert good.sign_errors == pytest.approx((0.0, 0.0, 1 / 6))
    assert good.worst == pytest.approx(1 / 6) and good.worst_environment == "modular/llama"
    assert good.mean == pytest.approx(1 / 18)
    assert flip.sign_errors[:2] == (1.0, 0.0) and math.isnan(flip.sign_errors[2]) and flip.pairs[2] == 0
    assert flip.defined == 2 and flip.mean == 0.5 and flip.worst == 1.0
    assert flip.worst_environment == "threshold/bert"
    assert swap.sign_errors == pytest.approx((0.0, 1 / 6, 2 / 6)) and swap.worst_environment == "modular/llama"
    assert environment_column("markov/gpt2") == "sign_error_markov_gpt2"


def test_the_robust_sentence_is_computed_from_the_numbers() -> None:
    from specbound.lab.views import robust_sentence

    gap = [0.1, 0.2, 0.3, 0.4]
    rows = robust_view(
        {
            "threshold/bert": ({"ours": [4, 3, 2, 1], "params": [1, 2, 3, 4]}, gap),
            "markov/gpt2": ({"ours": [1, 2, 3, 4], "params": [2, 1, 3, 4]}, gap),
        }
    )
    text = robust_sentence(rows)
    assert text.startswith("Over 2 environments, params has the smallest worst-case sign-error, 0.17 (in markov/gpt2")
    assert "ours orders 100% of the run pairs against the gap in its worst environment, threshold/bert" in text
    assert "no sign-error" in robust_sentence(robust_view({"a/b": ({"ours": [1, 1]}, [0.1, 0.2])}))
