"""What the Lab page shows, as plain tables and arrays: a run's trajectory, its p* map at one step,
and every measure beside the gap over the final checkpoints of a sweep.

Pure functions of finished runs (:class:`~specbound_lab.trajectory.RunTrajectory`); the figures of
:mod:`specbound_lab.figures` draw them and the dashboard only picks what to draw. Proxies stay in
log10, as the records keep them; parameter count, Σ‖W‖_F² and the flatness measures are plain
positive numbers (drawn on log axes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .correlation import PairedTest, TauDifference, Verdict
from .registry import MEASURES, is_baseline, recorded_measures
from .robust import MIN_COUPLED_PAIRS, RobustSummary, RobustVerdict, robust_verdict
from .tables import axis_values, measure_value
from .trajectory import RunTrajectory
from .verdict import DIRECTION_CANDIDATES, EnvironmentVerdict, ForgettingVerdict, MeasureVerdict, Outcome

if TYPE_CHECKING:
    import pandas as pd

#: How each measure is named on screen, and whether it is drawn on a linear axis (True: a log10 or an
#: exponent) or on a log axis (a plain positive number), from :data:`specbound_lab.registry.MEASURES`.
MEASURE_LABELS: dict[str, tuple[str, bool]] = {m.name: (m.label, m.linear_axis) for m in MEASURES.values()}


def trajectory_frame(run: RunTrajectory) -> pd.DataFrame:
    """One row per saved step: errors (with the test error's standard error), losses, the gap (on the loss
    for next-token prediction), every recorded measure
    under its column (the proxies in log10; the MODEL measures on the final row only, NaN before), the
    bound's log10 α per layer (``log10_alpha_L{l}``) and the mean p*."""
    import pandas as pd

    rows = []
    for s in run.steps:
        row: dict[str, float] = {
            "step": s.step,
            "train_error": s.train_error,
            "test_error": s.test_error,
            "test_error_se": s.test_error_se,
            "train_loss": s.train_loss,
            "test_loss": s.test_loss,
            "gap": s.gap,
        }
        row.update({m.column: s.value(m.name) for m in recorded_measures()})
        terms = s.terms
        row["p_opt_mean"] = terms.p_opt_mean
        row.update(terms.alpha_columns())
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class PStarMap:
    """p* of every matrix of a run at one step, laid out layer x matrix-within-layer."""

    step: int
    columns: tuple[str, ...]  # "QK h0", ..., "V h0", ..., ["M_gate",] "M_in", "M_out"
    values: np.ndarray  # (L, matrices per layer), row l = layer l

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(range(self.values.shape[0]))


def p_star_map(run: RunTrajectory, step: int) -> PStarMap:
    """The p* map of ``run`` at a saved ``step`` (ValueError if it was not saved).

    The record keeps p* in profile order, layer by layer with the same matrices each (2H + 2 for the
    lab's encoders), so the map is that vector reshaped; the column names are the matrix labels
    without their layer.
    """
    record = next((s for s in run.steps if s.step == step), None)
    if record is None:
        raise ValueError(f"{run.name} has no saved step {step}")
    layers = run.spec.layers
    per_layer = len(run.matrices) // layers
    values = np.asarray(record.p_opt, dtype=np.float64).reshape(layers, per_layer)  # (L, per layer)
    columns = tuple(label.split(" ", 1)[1] for label in run.matrices[:per_layer])
    return PStarMap(step, columns, values)


def sweep_frame(runs: Sequence[RunTrajectory]) -> pd.DataFrame:
    """One row per run's final checkpoint: its axes, train and test error, gap, and every measure."""
    import pandas as pd

    rows = []
    for run in runs:
        spec, final = run.spec, run.final
        row: dict[str, object] = {
            "run": run.name,
            **axis_values(spec),
            "step": final.step,
            "train_error": final.train_error,
            "test_error": final.test_error,
            "gap": final.gap,
        }
        row.update({m.name: measure_value(run, m) for m in MEASURES.values()})
        rows.append(row)
    return pd.DataFrame(rows)


def _signed(value: float) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:+.2f}"


def _statistic(name: str, difference: float, low: float, high: float, verdict: Verdict, other: str) -> str:
    interval = f"{_signed(difference)} (95 % interval {_signed(low)} to {_signed(high)})"
    if verdict is Verdict.INDISTINGUISHABLE:
        return f"{name} differs by {interval}, not distinguishable from {other}"
    return f"{name} differs by {interval}, distinguishably {verdict.value} than {other}"


def comparison_sentence(difference: TauDifference, name: Callable[[str], str] | None = None) -> str:
    """One sentence on whether ``difference.measure`` is distinguishable from ``difference.other`` on this
    sweep, on τ and on the granulated τ (distinguishable: the paired interval of the difference excludes 0).

    ``name`` (measure -> plain words) names both measures by those words alone, as the dashboard
    does; without it, a measure is its label with its short name, as the CLI prints it."""
    if name is not None:
        label, other = name(difference.measure), name(difference.other)
    else:
        label = f"{MEASURE_LABELS.get(difference.measure, (difference.measure, True))[0]} ({difference.measure})"
        other = difference.other
    if difference.runs < 2:
        return f"{label}: fewer than two runs have both it and {other}."
    tau = _statistic(
        "τ",
        difference.kendall_tau,
        difference.kendall_tau_ci.low,
        difference.kendall_tau_ci.high,
        difference.kendall_verdict,
        other,
    )
    granulated = _statistic(
        "granulated τ",
        difference.granulated_tau,
        difference.granulated_tau_ci.low,
        difference.granulated_tau_ci.high,
        difference.granulated_verdict,
        other,
    )
    return f"{label}: {tau}; {granulated}."


def _names(rows: Sequence[RobustSummary], name: Callable[[str], str], most: int = 4) -> str:
    """The rows' measures in words, a baseline marked, at most ``most`` of them and a count of the rest."""
    words = [name(r.measure) + (" (a baseline)" if is_baseline(r.measure) else "") for r in rows[:most]]
    rest = len(rows) - most
    return ", ".join(words) + (f" and {rest} more" if rest > 0 else "")


def _paired_words(test: PairedTest) -> str:
    return f"{_signed(test.difference)} (95 % over configurations {_signed(test.ci.low)} to {_signed(test.ci.high)})"


def robust_sentence(
    rows: Sequence[RobustSummary], name: Callable[[str], str] | None = None, *, reading: RobustVerdict | None = None
) -> str:
    """Sentences from the robust view's numbers (Dziugaite et al.'s couplings over the environments that
    count), in SPEC §13's order (:func:`~specbound_lab.robust.robust_verdict`): the smallest worst case
    and 90th percentile, baselines included; the smallest mean, named "best" only where its paired
    interval against the runner-up excludes 0; ours at p*; and the best trivial baseline (read in its
    declared direction) against the leader. Measures recorded in fewer environments are named apart.
    ``reading``: :func:`~specbound_lab.robust.robust_verdict` of ``rows`` when the caller holds it already
    (its paired bootstrap is the costly part; a page computes it once per sweep, not on every rerun)."""
    name = name or (lambda measure: measure)
    reading = reading if reading is not None else robust_verdict(rows)
    if reading is None:
        return (
            "No environment that counts (fitted, at least five seeds) has a coupling (two configurations "
            f"differing in one hyperparameter, with at least {MIN_COUPLED_PAIRS} seed pairs outside noise) yet: "
            "there is no robust view."
        )
    total = reading.couplings
    worst, p90 = reading.worst[0].max, reading.p90[0].p90
    sentence = (
        f"Over {total} coupling{'s' if total != 1 else ''} of the environments that count (each with at least "
        f"{MIN_COUPLED_PAIRS} seed pairs outside noise), the smallest worst case, SPEC §13's criterion, is "
        f"{worst:.2f} ({_names(reading.worst, name)}), and the smallest 90th percentile {p90:.2f} "
        f"({_names(reading.p90, name)})."
    )
    sentence += _leader_words(reading, rows, name)
    if reading.baseline is not None:
        sentence += _baseline_words(reading, reading.baseline, name)
    fewer = [r for r in rows if r.couplings and r.couplings < total]
    if fewer:
        sentence += (
            f" {len(fewer)} measure{'s' if len(fewer) != 1 else ''} recorded in fewer environments "
            f"({', '.join(name(r.measure) for r in fewer[:3])}{', ...' if len(fewer) > 3 else ''}) "
            f"{'stand' if len(fewer) != 1 else 'stands'} on fewer couplings and "
            f"{'are' if len(fewer) != 1 else 'is'} left out of this comparison."
        )
    return sentence + " A sign-error of 0.5 is chance; a tie counts 0.5."


def _leader_words(reading: RobustVerdict, rows: Sequence[RobustSummary], name: Callable[[str], str]) -> str:
    """The measure with the smallest mean coupled sign-error, against the runner-up (named best only where
    their paired interval excludes 0); then ours at p*, when it is not the leader."""
    leader, runner = reading.leader, reading.runner_up
    sentence = f" The smallest mean of a measure is {name(leader.measure)}'s, {leader.mean:.2f}"
    if runner is not None and reading.against_runner_up is not None:
        verdict = (
            f"so {name(leader.measure)} is the best measure on the mean"
            if reading.best is not None
            else "so no measure is told apart as the best"
        )
        sentence += (
            f"; the runner-up, {name(runner.measure)}, has {runner.mean:.2f}: its mean exceeds the leader's by "
            f"{_paired_words(reading.against_runner_up)}, {verdict}"
        )
    ours = next((r for r in rows if r.measure == "ours" and r.couplings), None)
    if ours is not None and ours is not leader:
        sentence += f". {name('ours')}: mean {ours.mean:.2f}, 90th percentile {ours.p90:.2f}, worst {ours.max:.2f}"
    return sentence + "."


def _baseline_words(reading: RobustVerdict, floor: RobustSummary, name: Callable[[str], str]) -> str:
    """The best trivial baseline (``floor``, in its declared direction) and the leader's paired test against it."""
    leader = reading.leader
    sentence = (
        f" The best trivial baseline, {name(floor.measure)} (read in its declared direction), has a mean of "
        f"{floor.mean:.2f} (90th percentile {floor.p90:.2f}, worst {floor.max:.2f})"
    )
    test = reading.against_baseline
    if test is not None:
        words = f"{name(leader.measure)} {_VERDICT_WORDS[test.verdict]} it"
        sentence += (
            f"; its mean exceeds the leader's by {_paired_words(test)}, Holm-adjusted over the {test.family} "
            f"measures compared with it (p = {test.p_holm:.2g}), so {words}"
        )
    return sentence + "."


def design_sentence(env: EnvironmentVerdict) -> str:
    """What a fine-tuning design shows before any measure is read, from its fitted runs only and per n
    (:func:`~specbound_lab.verdict.design_gaps`): the mean gap of each setting, with how many of its runs
    fitted, and the settings ordered by it at each n."""
    parts = []
    for n in dict.fromkeys(d.n_train for d in env.design):
        at_n = [d for d in env.design if d.n_train == n]
        cells = ", ".join(
            f"{d.setting} {d.mean_gap:.3f}"
            + (f" ({d.fitted_runs} of {d.runs} fitted)" if d.fitted_runs < d.runs else "")
            if d.fitted_runs
            else f"{d.setting} none fitted"
            for d in at_n
        )
        ranked = sorted((d for d in at_n if d.fitted_runs), key=lambda d: d.mean_gap)
        order = " < ".join(d.setting for d in ranked)
        parts.append(f"at n = {n:,}, {cells} (smallest first: {order})")
    what = "gap" if env.outcome is Outcome.GAP else "forgetting (error on the base's own task)"
    return f"Mean {what} over the fitted runs only, per n: " + "; ".join(parts) + "."


def verdict_sentences(env: EnvironmentVerdict, name: Callable[[str], str] | None = None) -> tuple[str, ...]:
    """What one environment's verdict says, in sentences computed from its numbers: what it stands on
    (fitted runs, configurations x seeds), the measure with the highest τ against the best trivial
    baseline's, and what is left of ours at p* within strata of n and of the parameter count."""
    name = name or (lambda measure: measure)
    stands = _stands_sentence(env)
    if env.configurations < 2:
        return (stands, "One configuration: its runs differ only by their seed, so there is no verdict here.")
    defined = [m for m in env.measures if np.isfinite(m.kendall_tau)]
    if not defined:
        return (stands, "No measure has a defined τ here.")
    measures = [m for m in defined if not is_baseline(m.measure)]
    out = [stands]
    if env.design:
        out.append(design_sentence(env))
    if measures:
        out.append(_highest_tau_sentence(env, max(measures, key=lambda m: m.kendall_tau), name))
    return (*out, *_ours_sentences(env, name))


def _stands_sentence(env: EnvironmentVerdict) -> str:
    """What an environment's verdict stands on: its runs (fitted, or a fixed budget and how many memorise),
    its configurations and seeds, and whether it counts."""
    if env.fitted_runs is None:
        stands = (
            f"{env.environment}: {env.runs} runs ({env.configurations} configurations × up to {env.seeds} seeds), "
            f"a fixed budget (next-token prediction cannot fit); {env.below_entropy} of them end with a training loss "
            f"below the chain's entropy rate {env.entropy_rate:.3f} (memorising)."
        )
    else:
        stands = (
            f"{env.environment}: {env.fitted_runs} of {env.runs} runs fitted their training set "
            f"({env.configurations} configurations × up to {env.seeds} seeds)"
        )
        stands += "."
    if not env.counted:
        stands += (
            f" It is shown, not counted ({env.not_counted_because}): kept out of the robust view, and its "
            "table is no verdict."
        )
    return stands


def _highest_tau_sentence(env: EnvironmentVerdict, best: MeasureVerdict, name: Callable[[str], str]) -> str:
    """The measure with the highest τ (``best``), against the strongest trivial baseline: the paired test's
    words and p, and how many of the measures compared beat it or do worse."""
    text = f"The highest τ of a measure is {name(best.measure)}'s, {best.kendall_tau:+.2f}"
    test = env.test_of(best.measure)
    floor = env.measure(test.other) if test is not None else None
    if test is not None and floor is not None:
        turned = " (a lower value read as a larger gap, as declared)" if MEASURES[floor.measure].orientation < 0 else ""
        text += (
            f"; it {_VERDICT_WORDS[test.verdict]} the strongest trivial baseline, {name(floor.measure)}{turned} "
            f"({floor.kendall_tau:+.2f}): "
            f"the paired difference in τ is {_paired_words(test)}, Holm-adjusted over the {test.family} measures "
            f"compared with it (p = {test.p_holm:.2g})"
        )
        beat = sum(t.verdict is Verdict.BETTER for t in env.baseline_tests)
        worse = sum(t.verdict is Verdict.WORSE for t in env.baseline_tests)
        text += (
            f"; of the {test.family}, {beat} beat{'s' if beat == 1 else ''} it and {worse} "
            f"do{'es' if worse == 1 else ''} worse"
        )
    return text + "."


def _ours_sentences(env: EnvironmentVerdict, name: Callable[[str], str]) -> list[str]:
    """Ours at p*: its τ with its interval and within strata (of n, of the parameter count, of the fit for a
    loss gap); then its normalised form C / √n against the baseline it is tested with."""
    ours = next((m for m in env.measures if m.measure == "ours"), None)
    if ours is None or not np.isfinite(ours.kendall_tau):
        return []
    out = [
        f"{name('ours')}: τ {ours.kendall_tau:+.2f} (95 % over configurations {_signed(ours.kendall_tau_ci.low)} "
        f"to {_signed(ours.kendall_tau_ci.high)}), {_signed(ours.tau_within_n)} within strata of n"
        + (
            f", {_signed(ours.tau_within_params)} within strata of the parameter count and "
            f"{_signed(ours.tau_within_fit)} within terciles of the training loss against the entropy rate."
            if env.loss_gap
            else f" and {_signed(ours.tau_within_params)} within strata of the parameter count."
        )
    ]
    normalised = next((m for m in env.measures if m.measure == "ours_per_n"), None)
    test = env.test_of("ours_per_n")
    if normalised is not None and np.isfinite(normalised.kendall_tau) and test is not None:
        out.append(
            f"In its normalised form, {name('ours_per_n')} (C / √n, as its bound falls with n), τ is "
            f"{normalised.kendall_tau:+.2f} (95 % over configurations {_signed(normalised.kendall_tau_ci.low)} to "
            f"{_signed(normalised.kendall_tau_ci.high)}); it {_VERDICT_WORDS[test.verdict]} {name(test.other)} "
            f"(Holm-adjusted over {test.family}, p = {test.p_holm:.2g})."
        )
    return out


#: How a paired test's verdict reads in a sentence.
_VERDICT_WORDS = {
    Verdict.BETTER: "beats",
    Verdict.WORSE: "does worse than",
    Verdict.INDISTINGUISHABLE: "is not told apart from",
}


def _orders(env: EnvironmentVerdict, measure: str, name: Callable[[str], str]) -> str:
    """How one candidate orders ``env``'s outcome: its τ, interval and tied pairs, and its Holm-adjusted
    test against the strongest trivial baseline."""
    m = env.measure(measure)
    text = (
        f"{name(measure)} orders {env.outcome.noun} with τ {_signed(m.kendall_tau)} (95 % over configurations "
        f"{_signed(m.kendall_tau_ci.low)} to {_signed(m.kendall_tau_ci.high)}; {m.tied_pairs} of {m.pairs} pairs "
        "tied in it)"
    )
    test = env.test_of(measure)
    if test is None:
        return text
    floor = env.measure(test.other)
    return (
        f"{text} and {_VERDICT_WORDS[test.verdict]} the strongest trivial baseline, {name(test.other)} "
        f"(τ {_signed(floor.kendall_tau)}; difference {_paired_words(test)}, Holm-adjusted over the "
        f"{test.family} candidates, p = {test.p_holm:.2g})"
    )


def forgetting_sentences(row: ForgettingVerdict, name: Callable[[str], str] | None = None) -> tuple[str, ...]:
    """Whether intruder dimensions (and the centred proxies) order forgetting and the gap in one
    fine-tuning environment, in sentences computed from its two verdicts
    (:class:`~specbound_lab.verdict.ForgettingVerdict`): what they stand on, the mean forgetting per
    setting, then per outcome the intruders' τ and test against the strongest trivial baseline and how
    many of the centred proxies beat it."""
    name = name or (lambda measure: f"`{measure}`")
    forgetting, gap = row.forgetting, row.gap
    recorded = forgetting.measures[0].runs if forgetting.measures else 0
    stands = (
        f"Forgetting in {row.environment}: {forgetting.fitted_runs} of {forgetting.runs} runs fitted their training "
        f"set ({forgetting.configurations} configurations × up to {forgetting.seeds} seeds), {recorded} with their "
        "error on the base's own task recorded; intruder dimensions and the centred proxies are asked to order it "
        "and the gap, beside the trivial baselines."
    )
    if not forgetting.counted:
        return (stands + f" It is shown, not counted ({forgetting.not_counted_because}): no verdict.",)
    out = [stands]
    if forgetting.design:
        out.append(design_sentence(forgetting))
    present = [c for c in DIRECTION_CANDIDATES if any(m.measure == c for m in forgetting.measures)]
    for env in (forgetting, gap):
        if "intruders" in present and np.isfinite(env.measure("intruders").kendall_tau):
            out.append(f"{_orders(env, 'intruders', name)}.")
        tests = {c: t for c in present if c != "intruders" and (t := env.test_of(c)) is not None}
        if tests:
            beat = sum(t.verdict is Verdict.BETTER for t in tests.values())
            worse = sum(t.verdict is Verdict.WORSE for t in tests.values())
            best = max(tests, key=lambda c: env.measure(c).kendall_tau)
            out.append(
                f"Of the {len(tests)} centred proxies, {beat} beat{'s' if beat == 1 else ''} the strongest trivial "
                f"baseline on {env.outcome.noun} and {worse} do{'es' if worse == 1 else ''} worse; the highest τ is "
                f"{name(best)}'s, {_signed(env.measure(best).kendall_tau)}."
            )
    return tuple(out)


def forgetting_report(
    rows: Sequence[ForgettingVerdict], heading: str = "## Intruders, the centred proxies and forgetting"
) -> str:
    """The forgetting verdicts as Markdown (``specbound lab report``): per fine-tuning environment the
    sentences of :func:`forgetting_sentences` and, where it counts, one table with each measure's τ with
    forgetting and with the gap, its interval and its Holm-adjusted test against the strongest baseline;
    "" when no environment recorded forgetting."""
    if not rows:
        return ""
    lines = [
        heading,
        "",
        "Forgetting is a fine-tune's error on fresh samples of its base's own task (`base_task_error` in "
        "`runs.csv`); intruder dimensions are counted against the run's first checkpoint, the base (SPEC §14b). "
        "Both outcomes are read over the same fitted runs, and Holm's adjustment runs over the "
        f"{len(DIRECTION_CANDIDATES)} candidates.",
        "",
    ]
    for row in rows:
        lines += [" ".join(forgetting_sentences(row)), ""]
        if not row.counted:
            continue
        lines += [
            "| measure | τ with forgetting | 95 % (configurations) | against the baseline (Holm p) "
            "| τ with the gap | 95 % (configurations) | against the baseline (Holm p) | tied pairs |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for m in row.forgetting.measures:
            cells = []
            for env in (row.forgetting, row.gap):
                n = env.measure(m.measure)
                test = env.test_of(m.measure)
                against = "–" if test is None else f"{_VERDICT_WORDS[test.verdict]} `{test.other}` ({test.p_holm:.2g})"
                interval = f"{_cell(n.kendall_tau_ci.low)} to {_cell(n.kendall_tau_ci.high)}"
                cells.append(f"{_cell(n.kendall_tau)} | {interval} | {against}")
            label = f"`{m.measure}`" + (" (baseline)" if is_baseline(m.measure) else "")
            lines.append(f"| {label} | {cells[0]} | {cells[1]} | {m.tied_pairs} |")
        lines.append("")
    return "\n".join(lines)


def _cell(value: float, signed: bool = True) -> str:
    return "n/a" if not np.isfinite(value) else (f"{value:+.2f}" if signed else f"{value:.2f}")


#: The head of the report of the shipped references (the documentation site's verdict page).
REPORT_TITLE = (
    "# The lab's verdict on the shipped sweeps\n\n"
    "Printed by `specbound lab report` from the sweeps shipped in the package, each read as its own "
    "(SPEC §13b: runs that fit, trivial baselines as rows, intervals over configurations, Dziugaite et "
    "al.'s couplings). Every sentence is computed from the numbers beside it, and the documentation site "
    "prints this page from the command when it is built. τ: Kendall's τ_b with the gap over the fitted "
    "runs; a *(baseline)* row is a trivial baseline; the coupled sign-errors are 0 when a measure orders "
    "a controlled pair of runs as their gaps, 1 against, 0.5 chance.\n"
)


def verdict_report(
    verdicts: Sequence[EnvironmentVerdict],
    robust: Sequence[RobustSummary],
    title: str | None = None,
    *,
    sources: Sequence[str] | None = None,
) -> str:
    """The lab's verdict as Markdown (what ``specbound lab report`` prints; the site's verdict page for
    the shipped references): per environment the sentences of :func:`verdict_sentences` and its table,
    then the robust view's sentence and table. Every word about a verdict is computed here from the
    numbers, so the text cannot drift from the tables it describes. ``sources`` names the sweep of each
    verdict (a heading each), where several sweeps are reported."""
    lines: list[str] = [title] if title else []
    for number, env in enumerate(verdicts):
        if sources is not None:
            lines += [f"## {sources[number]}", ""]
        lines += [" ".join(verdict_sentences(env)), ""]
        if not env.counted:  # shown, not counted: its numbers stay in verdict.csv, no table reads as a verdict
            lines += ["(Its table is in its `verdict.csv`; it is not printed here as a verdict.)", ""]
            continue
        lines += [*_verdict_table(env), ""]
    lines += [f"**Robust view.** {robust_sentence(robust)}", ""]
    if any(r.couplings for r in robust):
        lines += _robust_tables(robust)
    return "\n".join(lines).rstrip() + "\n"


def _verdict_table(env: EnvironmentVerdict) -> list[str]:
    """One environment's verdict as a Markdown table: per measure (baselines marked) τ and its interval, τ
    within strata, the granulated τ, the seed noise, the pooled and the coupled sign-errors."""
    fit_head, fit_rule = (" τ within training loss |", "---|") if env.loss_gap else ("", "")
    lines = [
        f"| measure | τ | 95 % (configurations) | τ within n | τ within params |{fit_head} granulated τ "
        "| seed noise | pooled sign-error (tied pairs) | coupled sign-error: mean / p90 / max (couplings) |",
        f"|---|---|---|---|---|{fit_rule}---|---|---|---|",
    ]
    for m in env.measures:
        summary = m.coupled_summary
        coupled = (
            f"{summary.mean:.2f} / {summary.p90:.2f} / {summary.max:.2f} ({summary.couplings})"
            if summary.couplings
            else "–"
        )
        name = f"`{m.measure}`" + (" (baseline)" if is_baseline(m.measure) else "")
        censored = f", {m.censored} censored" if m.censored else ""
        lines.append(
            f"| {name} | {_cell(m.kendall_tau)} | {_cell(m.kendall_tau_ci.low)} to {_cell(m.kendall_tau_ci.high)} "
            f"| {_cell(m.tau_within_n)} | {_cell(m.tau_within_params)} |"
            + (f" {_cell(m.tau_within_fit)} |" if env.loss_gap else "")
            + f" {_cell(m.granulated_tau)} "
            f"| {_cell(m.seed_noise)} | {_cell(m.pooled_sign_error, signed=False)} ({m.tied_pairs}{censored}) "
            f"| {coupled} |"
        )
    return lines


def _robust_tables(robust: Sequence[RobustSummary]) -> list[str]:
    """The robust view as Markdown: per measure its couplings, worst case, 90th percentile and mean; then
    the mean per hyperparameter axis (with the couplings along it)."""
    lines = [
        f"| measure | couplings (≥ {MIN_COUPLED_PAIRS} pairs each) | worst | 90th percentile | mean |",
        "|---|---|---|---|---|",
    ]
    for r in robust:
        name = f"`{r.measure}`" + (" (baseline)" if is_baseline(r.measure) else "")
        lines.append(
            f"| {name} | {r.couplings} | {_cell(r.max, False)} | {_cell(r.p90, False)} | {_cell(r.mean, False)} |"
        )
    lines.append("")
    axes = list(dict.fromkeys(axis for r in robust for axis in r.axes))
    counts = {axis: max(sum(a == axis for a in r.axes) for r in robust) for axis in axes}
    lines += [
        "Per hyperparameter axis, the mean coupled sign-error (couplings along it):",
        "",
        "| measure | " + " | ".join(f"{axis} ({counts[axis]})" for axis in axes) + " |",
        "|---|" + "---|" * len(axes),
    ]
    for r in robust:
        by_axis = r.by_axis()
        name = f"`{r.measure}`" + (" (baseline)" if is_baseline(r.measure) else "")
        lines.append(f"| {name} | " + " | ".join(_cell(by_axis.get(a, np.nan), False) for a in axes) + " |")
    lines.append("")
    return lines
