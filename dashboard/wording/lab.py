"""How the Lab page says what it does: its methods and its rules in words, each number read from the lab.

Every threshold a sentence here states is the lab's own constant (the fit criterion
:data:`specbound_lab.train.FIT_LOSS`, the share of fitted runs and the seeds an environment needs,
:data:`specbound_lab.verdict.MIN_FITTED_SHARE` and :data:`~specbound_lab.verdict.MIN_SEEDS`, the
noise band and the pairs of a coupling of :mod:`specbound_lab.robust`, the grokking rule's saturation,
smoothing and seeds of :mod:`specbound_lab.grokking`, the grokking preset
:data:`specbound_lab.grid.GROK_GRID`): a changed rule changes the page's words with it.

Example, the verdict's rules as the page states them:

    >>> "cross-entropy ≤ 0.01" in VERDICT_RULES and "fewer than five seeds per configuration" in VERDICT_RULES
    True
    >>> "a verdict needs ten seeds" in GROKKING_METHOD
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from dashboard.wording.vocabulary import model_label, spec_words
from specbound.present.numbers import format_count
from specbound_lab.correlation import CONFIDENCE
from specbound_lab.grid import AXES, GROK, GROK_GRID, SEED_AXIS
from specbound_lab.grokking import MIN_SEEDS as GROKKING_SEEDS
from specbound_lab.grokking import SATURATION, SMOOTHING_WINDOW
from specbound_lab.limits import VisitorCaps
from specbound_lab.reference import ShippedReference
from specbound_lab.robust import MIN_COUPLED_PAIRS, NOISE_Z
from specbound_lab.tasks import ModularTask
from specbound_lab.train import FIT_LOSS, RunSpec
from specbound_lab.trajectory import RunTrajectory
from specbound_lab.verdict import MIN_FITTED_SHARE, MIN_SEEDS

_SPELLED = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def spelled(count: int) -> str:
    """A small whole number in words, as prose writes it ("five seeds"); digits from 11 on.

    >>> spelled(5), spelled(12)
    ('five', '12')
    """
    return _SPELLED[count] if 0 <= count < len(_SPELLED) else str(count)


def _percent(share: float) -> str:
    """A share as the page writes it: "80 %"."""
    return f"{round(100 * share)} %"


_LEVEL = _percent(CONFIDENCE)

#: The label of the runs a visitor trains here, and of the first reference: BERT encoders, threshold task.
LAB_MODEL_LABEL = model_label(RunSpec(layers=1, hidden=32, heads=2, n_train=1, seed=0))


def shipped_item(shipped: ShippedReference, runs: int) -> str:
    """One shipped reference with its ``runs`` in a line ("120 runs of the `fit` sweep: BERT encoders,
    threshold task")."""
    what = "the grokking preset" if shipped.preset == GROK else f"the `{shipped.preset}` sweep"
    return f"{format_count(runs, 'run')} of {what}: {shipped.models}, {shipped.task} task"


def run_choice(shipped: ShippedReference | None, run: RunTrajectory) -> str:
    """A run as the picker lists it: its model and task where they are not the first reference's, its
    hyperparameters (the learning rate too: the fit sweeps have two) and where it comes from (which
    shipped sweep, ``shipped`` None for one trained here: the same run name can be in two of them)."""
    origin = f"shipped {shipped.preset} sweep" if shipped is not None else "trained here"
    spec = run.spec
    environment = "" if (spec.family, spec.task.kind) == ("bert", "threshold") else f"{model_label(spec)}: "
    return f"{environment}{spec_words(spec)} ({origin})"


def sweep_choice(shipped: ShippedReference | None, runs: Sequence[RunTrajectory]) -> str:
    """A sweep as the Runs radio offers it: its models and what sets it apart, or the runs trained here."""
    if shipped is None:
        return f"the {format_count(len(runs), 'run')} trained here"
    note = f"{shipped.note}, " if shipped.note else ""
    return f"{model_label(runs[0].spec, plural=True)} ({note}shipped)" if runs else shipped.key


#: What the page says the lab trains and how a gap is measured, above the list of what is shipped.
TRAINED = (
    "Every model here is small and trained by the specbound lab from transformers' own classes, not a "
    "BERT Miniature or a released model. Each task's population is known, so the generalization gap is "
    "measured, not guessed: test error on fresh samples minus training error, or for next-token "
    "prediction test loss minus training loss. Shipped:"
)
#: What the expander says when the package was built without its lab data.
NOTHING_SHIPPED = "no reference (built without its lab data)"


def trained(shipped: list[str]) -> str:
    """The expander's text: :data:`TRAINED`, then each shipped reference on a line of its own."""
    listed = "\n".join(f"- {item}" for item in shipped) if shipped else NOTHING_SHIPPED
    return f"{TRAINED}\n\n{listed}"


def sweep_method(runs: int) -> str:
    """How the correlation table over ``runs`` final checkpoints is computed: τ-b, the granulated τ over
    the hyperparameter axes of :data:`specbound_lab.grid.AXES`, the seed's ψ, the bootstrap."""
    axes = ", ".join(a for a in AXES if a != SEED_AXIS)
    return (
        f"Over the final checkpoints of {format_count(runs, 'run')}. Kendall τ: τ-b over all runs; granulated "
        f"τ (Jiang et al. 2020): the mean over the hyperparameter axes ({axes}) of the mean τ among runs that "
        "differ in that axis alone; the seed's ψ is reported apart, as seed noise. A measure that predicts "
        "generalization ranks the runs as their gaps do (τ near +1). The intervals are "
        f"{_LEVEL} percentile bootstraps over configurations (the seeds of one configuration drawn together), "
        "the granulated τ from the same draws for every axis. The verdict below reads fitted runs only."
    )


def measures_heading(runs: int) -> str:
    """The bold line above the panels of each measure against the gap."""
    return (
        f"**Each measure against the gap over the final checkpoints of {format_count(runs, 'run')}, "
        "fitted or not** (descriptive: the verdict below reads the fitted runs alone)"
    )


DIFFERENCES = (
    "Paired bootstrap of each measure's τ minus ours at p*, over the same draws of runs (and of groups "
    f"for the granulated τ): distinguishable when the {_LEVEL} interval of the difference excludes 0. In the "
    "chart, a point right of 0 is a measure that orders the runs more like their gaps than ours does."
)

VERDICT_RULES = (
    "The rules: a classification run counts when it fitted its training set (cross-entropy "
    f"≤ {FIT_LOSS:g}, or every label, flipped ones included, memorised); an environment where fewer than "
    f"{_percent(MIN_FITTED_SHARE)} fitted, or with fewer than {spelled(MIN_SEEDS)} seeds per configuration, "
    "is shown, not counted: kept out of the robust view, and its table is no verdict. The trivial baselines "
    "(1/n, the optimisation steps, the final training loss, the parameter count) are rows beside the "
    "measures, each read in one declared direction, and so are the measures' normalised forms: C / √n for "
    "an unsquared complexity, √(C / n) for a squared one. Each measure is tested against the strongest "
    "baseline, Holm-adjusted over every measure compared. τ within n and within parameter count: τ over the "
    "pairs of runs that share n (the parameter count): what a measure says beyond ordering data or model size."
)

ROBUST_METHOD = (
    "Dziugaite et al. (2020): a coupling is two configurations that differ in one hyperparameter, "
    "compared seed for seed; on each pair the sign-error is 0 when the measure orders the two runs as "
    f"their gaps, 1 when against, 1/2 on a tie; pairs whose gaps differ by less than {NOISE_Z:g} standard "
    f"errors are left out, and a coupling needs {spelled(MIN_COUPLED_PAIRS)} pairs. A measure is judged by "
    "the distribution of its sign-errors over the couplings of the environments that count: its worst case "
    "first, then its 90th percentile and mean; a best is named only where the paired interval (resampling "
    "configurations) of its mean against the runner-up's excludes 0. For a shipped reference the couplings "
    "of every shipped sweep count together; more environments join with "
    "`specbound lab sweep --task ... --family ...`."
)


def _grokking_setting() -> str:
    """The grokking preset in words, from :data:`specbound_lab.grid.GROK_GRID`."""
    task, settings = GROK_GRID.task, GROK_GRID.settings
    assert isinstance(task, ModularTask)
    (layers,), (n_train,) = GROK_GRID.layers, GROK_GRID.n_train
    return (
        f"Modular addition mod {task.modulus} on {round(100 * n_train / task.pairs)} % of its pairs, a "
        f"{spelled(layers)}-layer GPT-2 decoder, full-batch AdamW with weight decay {settings.weight_decay:g}"
    )


GROKKING_METHOD = (
    f"{_grokking_setting()} (`specbound lab sweep --preset grok --task modular --family gpt2`): training "
    "accuracy saturates early, test accuracy jumps much later. Every curve, smoothed by a running median "
    f"over {spelled(SMOOTHING_WINDOW)} checkpoints, is read from the step training accuracy reaches "
    f"{SATURATION:g}; it moves when it has covered half its excursion from there. A measure's lead is test "
    "accuracy's move step minus its own (positive: it moved first); the null is what the same rule gives on "
    "that measure's curves shifted circularly within a window around each jump, a verdict needs "
    f"{spelled(GROKKING_SEEDS)} seeds, and where the positive control (the weight norm) or the power check "
    "(a synthetic leading curve) fails, every verdict is inconclusive."
)

#: What repeats and what does not, measured (the manual, docs/lab/index.md: reproducibility).
REPRODUCIBILITY = (
    "A run repeats bit for bit on the same machine with the same BLAS and one thread (how the lab trains). "
    "What changes the order of floating-point sums (another CPU, another thread count) leaves step 0 as it "
    "was and takes training down another path from the first steps on: re-training 12 reference runs with "
    "two threads moved final test errors by up to 0.042 (3.9 standard errors of the difference), gaps by up "
    "to 0.074, log10 ours at p* by up to 0.030, the spectral-norm product by up to 0.38 in log10, α by 0.05, "
    "and the flatness and sharpness (searched then on 512 examples with 4 draws and 8 bisections, a smaller "
    "budget than today's) by factors of up to 3 and 14. Swapped into this table, those 12 runs "
    "move each τ by at most 0.07 and each granulated τ by at most 0.10, less than half an interval's width."
)


def training_caption(model: str, caps: VisitorCaps) -> str:
    """What a visitor may train here (``model``, held to ``caps``) and what happens to the run."""
    return (
        f"Train one {model} on this server: at most {caps.max_layers} layers, width "
        f"{' / '.join(map(str, caps.widths))}, n ≤ {caps.max_n_train:,}, {caps.max_steps} steps (about a "
        f"minute at most). Checkpoints are saved at step 0 and {caps.checkpoints} more times and analysed "
        f"like any model; the test error is measured on {caps.test_samples:,} fresh samples. The run then "
        f"joins the run picker."
    )


#: The help of the "Open as a model" button.
OPEN_HELP = (
    "Make this run at this step the model of the other pages (Spectra, Bound explorer, …), "
    "opened from its stored spectra; a link to it works on this server."
)


#: What the fine-tuning sweep's forgetting section says when its runs predate the forgetting outcome.
FORGETTING_NOT_RECORDED = (
    "This sweep's runs were trained before the lab recorded forgetting (a fine-tune's error on its base's "
    "own task), so there is no forgetting table for it yet: `specbound lab sweep --preset finetune` records "
    "it, and the sweep's tables then hold forgetting.csv, shown here."
)

FORGETTING_METHOD = (
    "Forgetting is a fine-tune's error on its base's own task. The same rules as the verdict above (fitted "
    f"runs, {_LEVEL} intervals over configurations, at least {spelled(MIN_SEEDS)} seeds per configuration), "
    "with forgetting in place of the gap: do intruder dimensions (Shuttleworth et al. 2025) and the centred "
    "proxies order it, and do they beat the strongest trivial baseline (Holm-adjusted over the candidates)?"
)


def forgetting_sentence(frame: pd.DataFrame, name: Callable[[str], str]) -> str:
    """The forgetting verdict in one sentence, computed from forgetting.csv's rows of the ``base_task_error``
    outcome: what it stands on, the candidate (trivial baselines apart) with the highest τ, its 95 % interval,
    and its Holm-adjusted test against the strongest trivial baseline; "shown, not counted" where the
    environment does not count.

    >>> rows = pd.DataFrame({
    ...     "outcome": ["base_task_error"] * 2, "counted": [True] * 2, "runs": [80] * 2, "fitted_runs": [73] * 2,
    ...     "seeds": [5] * 2, "measure": ["intruders", "inverse_n"], "baseline": [False, True],
    ...     "kendall_tau": [0.61, 0.05], "kendall_tau_ci_low": [0.45, -0.1], "kendall_tau_ci_high": [0.72, 0.2],
    ...     "vs_baseline": ["inverse_n", None], "vs_baseline_tau_difference": [0.56, float("nan")],
    ...     "vs_baseline_p_holm": [0.002, float("nan")],
    ... })
    >>> for part in forgetting_sentence(rows, str).split(", "):
    ...     print(part)
    Over 73 of 80 fine-tunes that fitted
    intruders orders forgetting best
    τ +0.61 (95 % +0.45 to +0.72)
    and beats the strongest trivial baseline
    inverse_n (τ +0.05): τ 0.56 above it
    Holm-adjusted p = 0.002.
    """
    rows = frame[frame["outcome"] == "base_task_error"]
    head = rows.iloc[0]
    stands = f"Over {int(head['fitted_runs'])} of {int(head['runs'])} fine-tunes that fitted"
    if not bool(head["counted"]):
        return (
            f"{stands} (up to {int(head['seeds'])} seeds per configuration), forgetting is shown, not counted: "
            f"a verdict needs {spelled(MIN_SEEDS)} seeds per configuration and {_percent(MIN_FITTED_SHARE)} of "
            "the runs fitted."
        )
    candidates = rows[~rows["baseline"].astype(bool) & rows["kendall_tau"].notna()]
    if candidates.empty:
        return f"{stands}, no candidate measure has a defined τ with forgetting."
    best = candidates.loc[candidates["kendall_tau"].idxmax()]
    low, high = float(best["kendall_tau_ci_low"]), float(best["kendall_tau_ci_high"])
    sentence = (
        f"{stands}, {name(str(best['measure']))} orders forgetting best, τ {float(best['kendall_tau']):+.2f} "
        f"({_LEVEL} {low:+.2f} to {high:+.2f})"
    )
    other = best["vs_baseline"]
    if not isinstance(other, str):
        return sentence + "."
    floor = rows[rows["measure"] == other].iloc[0]
    difference, p_holm = float(best["vs_baseline_tau_difference"]), float(best["vs_baseline_p_holm"])
    told = p_holm <= 1.0 - CONFIDENCE
    verdict = ("beats" if difference > 0 else "does worse than") if told else "is not told apart from"
    floor_tau = float(floor["kendall_tau"])
    return (
        f"{sentence}, and {verdict} the strongest trivial baseline, {name(other)} (τ {floor_tau:+.2f}): "
        f"τ {abs(difference):.2f} {'above' if difference > 0 else 'below'} it, Holm-adjusted p = {p_holm:.2g}."
    )
