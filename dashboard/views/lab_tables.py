"""The Lab page's tables as it shows them: each lab table (:mod:`specbound_lab.tables`) with its columns
and measures in words and its numbers formatted for the screen, as pandas ``Styler`` objects that any
page or report draws as they are (:func:`dashboard.wording.numbers.styled_table`, which also sends each
number as shown). The CSV downloads keep every digit.

Example, the headers of ``robust.csv`` in words:

    >>> robust_columns(["measure", "mean_sign_error", "mean_sign_error_n_train", "couplings_hidden"])
    ... # doctest: +NORMALIZE_WHITESPACE
    {'measure': 'Measure', 'mean_sign_error': 'Mean sign-error',
     'mean_sign_error_n_train': 'Mean sign-error, n train couplings', 'couplings_hidden': 'Couplings in hidden'}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd
from pandas.io.formats.style import Styler

from dashboard.wording.numbers import styled_table
from dashboard.wording.vocabulary import measure_name
from specbound_lab.correlation import MeasureCorrelation
from specbound_lab.grokking import LeadSummary, summary_frame
from specbound_lab.registry import is_baseline
from specbound_lab.robust import RobustSummary
from specbound_lab.tables import correlations_frame, robust_frame


def correlation_table(table: Sequence[MeasureCorrelation]) -> pd.DataFrame:
    """The correlation table as ``correlations.csv`` holds it for one environment (headers made readable
    on screen), without the environment's ``task`` and ``family`` columns: the page's runs are all of one
    environment, the lab's BERT encoders on the threshold task."""
    return correlations_frame(table).drop(columns=["task", "family"])


def correlation_view(table: Sequence[MeasureCorrelation]) -> Styler:
    """:func:`correlation_table` as the page shows it: each measure in plain words, not its short name,
    and each τ and ψ signed to three decimals (:func:`dashboard.wording.numbers.styled_table`, which also sends
    them as shown); ``correlations.csv`` keeps every digit."""
    frame = correlation_table(table)
    signed = {
        c: "signed" for c in frame.columns if pd.api.types.is_float_dtype(frame[c]) and not c.startswith("groups")
    }
    return styled_table(frame.assign(measure=[measure_name(m) for m in frame["measure"]]), signed)


def verdict_view_frame(frame: pd.DataFrame) -> Styler:
    """One environment's rows of ``verdict.csv`` (as shipped, or :func:`~specbound_lab.tables.verdict_frame`
    of a verdict computed here) as the page shows them: each measure in plain words (a trivial baseline
    marked), τ with its interval over configurations, τ within strata of n and of the parameter count, the
    granulated τ and the seed noise, the pooled sign-error, tied pairs, censored runs and the coupled
    sign-errors, and the measure's paired difference in τ from the strongest trivial baseline with its
    Holm-adjusted p-value (empty on a baseline's row)."""
    frame = frame.reset_index(drop=True)
    columns = {
        "measure": "Measure",
        "kendall_tau": "τ",
        "kendall_tau_ci_low": "τ: 95 % low",
        "kendall_tau_ci_high": "τ: 95 % high",
        "tau_within_n": "τ within n",
        "tau_within_params": "τ within parameter count",
        "granulated_tau": "Granulated τ",
        "seed_noise": "Seed noise ψ",
        "vs_baseline_tau_difference": "τ minus the strongest baseline's",
        "vs_baseline_p_holm": "Holm-adjusted p against it",
        "pooled_sign_error": "Pooled sign-error",
        "tied_pairs": "Tied pairs",
        "censored": "Censored runs",
        "coupled_couplings": "Couplings",
        "coupled_mean": "Coupled sign-error: mean",
        "coupled_p90": "90th percentile",
        "coupled_max": "Worst",
    }
    shown = frame[list(columns)].rename(columns=columns)
    shown["Measure"] = [measure_name(m) + (" (trivial baseline)" if is_baseline(m) else "") for m in frame["measure"]]
    plain = {c: "number" for c in shown.columns if pd.api.types.is_float_dtype(shown[c])}
    return styled_table(shown, plain)


#: grokking_summary.csv's columns as the page heads them.
GROKKING_COLUMNS: dict[str, str] = {
    "measure": "Measure",
    "seeds": "Seeds that grokked",
    "median_lead": "Median lead (steps)",
    "lowest_lead": "Lowest lead (steps)",
    "highest_lead": "Highest lead (steps)",
    "share_before": "Seeds where it moved first",
    "null_p95": "Null: 95th percentile of the median lead (steps)",
    "rule_verdict": "The rule alone",
    "powered": "Design can answer (control and power check)",
    "verdict": "Verdict",
}


def grokking_view_frame(summaries: Sequence[LeadSummary]) -> Styler:
    """grokking_summary.csv as the page shows it: columns and measures in words, leads in whole steps
    (a lead is a difference of saved steps), the share of seeds as a percentage."""
    frame = summary_frame(summaries)
    frame = frame.assign(measure=[measure_name(m) for m in frame["measure"]])
    for column in ("median_lead", "lowest_lead", "highest_lead", "null_p95"):
        frame[column] = frame[column].round().astype("Int64")  # a median of two leads may end in .5: rounded
    frame["share_before"] = [
        "–" if pd.isna(share) else f"{round(100 * share)} %" for share in frame["share_before"]
    ]  # fmt: skip
    return styled_table(frame.rename(columns=GROKKING_COLUMNS), {})


def robust_columns(columns: Iterable[str]) -> dict[str, str]:
    """``robust.csv``'s columns as the page heads them: 'mean_sign_error_n_train' -> 'Mean sign-error:
    n_train couplings' and so on, in words."""
    words = {
        "measure": "Measure",
        "baseline": "Trivial baseline",
        "couplings": "Couplings",
        "min_pairs": "Seed pairs a coupling needs",
        "mean_sign_error": "Mean sign-error",
        "p90_sign_error": "90th percentile",
        "max_sign_error": "Worst",
    }
    named = {}
    for column in columns:
        if column in words:
            named[column] = words[column]
        elif column.startswith("mean_sign_error_"):
            named[column] = f"Mean sign-error, {column.removeprefix('mean_sign_error_').replace('_', ' ')} couplings"
        elif column.startswith("couplings_"):
            named[column] = f"Couplings in {column.removeprefix('couplings_').replace('_', ' ')}"
        else:
            named[column] = column.replace("_", " ")
    return named


def robust_view_frame(rows: Sequence[RobustSummary]) -> Styler:
    """``robust.csv`` as the page shows it: columns and measures in words, sign-errors to three decimals."""
    frame = robust_frame(rows)
    frame = frame.assign(measure=[measure_name(m) for m in frame["measure"]])
    plain = {c: "number" for c in frame.columns if pd.api.types.is_float_dtype(frame[c])}
    names = robust_columns(frame.columns)
    return styled_table(frame.rename(columns=names), {names[c]: kind for c, kind in plain.items()})


#: forgetting.csv's columns as the page heads them.
FORGETTING_COLUMNS: dict[str, str] = {
    "outcome": "Ordered",
    "measure": "Measure",
    "kendall_tau": "τ",
    "kendall_tau_ci_low": "τ: 95 % low",
    "kendall_tau_ci_high": "τ: 95 % high",
    "vs_baseline_tau_difference": "τ minus the strongest baseline's",
    "vs_baseline_p_holm": "Holm-adjusted p against it",
    "runs_used": "Runs",
}
#: Each outcome of forgetting.csv in words.
OUTCOME_WORDS: dict[str, str] = {"base_task_error": "forgetting", "gap": "the gap"}


def forgetting_view_frame(frame: pd.DataFrame) -> Styler:
    """forgetting.csv as the page shows it: per outcome (forgetting, then the gap) each measure in plain
    words (a trivial baseline marked), its τ with its interval over configurations and its Holm-adjusted
    difference from the strongest trivial baseline (empty on a baseline's row)."""
    shown = frame[list(FORGETTING_COLUMNS)].rename(columns=FORGETTING_COLUMNS)
    shown["Ordered"] = [OUTCOME_WORDS.get(o, o) for o in frame["outcome"]]
    shown["Measure"] = [measure_name(m) + (" (trivial baseline)" if is_baseline(m) else "") for m in frame["measure"]]
    signed = {c: "signed" for c in shown.columns if pd.api.types.is_float_dtype(shown[c])}
    signed["Holm-adjusted p against it"] = "p"
    return styled_table(shown.reset_index(drop=True), signed)
