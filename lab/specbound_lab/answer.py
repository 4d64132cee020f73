"""The lab's answer first: does the bound predict the gap? One sentence and the τ it stands on.

Read from the shipped tables alone (``verdict.csv`` of each shipped sweep, written by
:func:`specbound_lab.tables.verdict_frame`), so a page or the site that opens on the answer computes
nothing those tables hold: no bootstrap, no run record. The rows kept are the bound's proxy (ours at
p*), Edelman's norm-based proxy and every trivial baseline (1/n, the optimisation steps, the final
training loss, the parameter count), each with its τ and 95 % interval over configurations, per
environment.

The answer is said over the environments that count (SPEC §13b: fitted, or a next-token task's fixed
budget; an environment where fewer than 80 % of the runs fitted is shown, not counted). For each, two
questions: does ours order the runs like their gaps (its interval above 0), and does it order them
better than the strongest trivial baseline (its τ above that baseline's, each baseline read in the one
direction the measure registry declares for it, never turned to suit the data)? The headline word
follows from the two counts:

* "No": in no counted environment is ours' interval above 0;
* "Not beyond the trivial baselines": it is in some, but in none is ours' τ above the strongest
  baseline's;
* "Yes": in every counted environment both hold;
* "In part": anything between.

Example, the shipped sweeps:

    >>> answer = shipped_answer()
    >>> answer.sentence().startswith("Does the bound predict the gap here?")
    True
    >>> {row.measure for row in answer.rows} >= {"ours", "edelman", "inverse_n"}
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .reference import SWEEP_REFERENCES, ShippedReference
from .registry import MEASURES
from .tables import VERDICT_CSV

#: The bound's proxy that the question is about, and the other bound read beside it.
BOUND_MEASURE, OTHER_BOUND = "ours", "edelman"
#: A ``status`` of ``verdict.csv`` whose environment is shown but kept out of the answer (SPEC §13b).
NOT_FITTED = "not fitted"


@dataclass(frozen=True)
class TauRow:
    """One measure's τ with the gap in one environment of one shipped sweep, as ``verdict.csv`` holds it."""

    sweep: str
    environment: str
    status: str
    measure: str
    baseline: bool
    tau: float
    low: float
    high: float

    @property
    def counted(self) -> bool:
        """Its environment enters the answer: fitted, or a next-token task's fixed budget."""
        return self.status != NOT_FITTED


@dataclass(frozen=True)
class EnvironmentAnswer:
    """The two questions asked of one counted environment."""

    sweep: str
    environment: str
    ours: TauRow
    #: the trivial baseline with the largest τ there, read in its declared direction (None without one)
    strongest: TauRow | None

    @property
    def orders_like_the_gap(self) -> bool:
        return self.ours.low > 0

    @property
    def beyond_baselines(self) -> bool:
        return self.strongest is None or self.ours.tau > self.strongest.tau


def _label(measure: str) -> str:
    found = MEASURES.get(measure)
    return found.screen_name if found is not None else measure


@dataclass(frozen=True)
class LabAnswer:
    """The rows of the shipped verdict tables that answer the question, and the answer in words."""

    rows: tuple[TauRow, ...]

    @property
    def sweeps(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(row.sweep for row in self.rows))

    def environments(self) -> tuple[EnvironmentAnswer, ...]:
        """Each counted environment (one per sweep) with ours' row and the strongest baseline's."""
        out = []
        for sweep in self.sweeps:
            mine = [r for r in self.rows if r.sweep == sweep and r.counted and math.isfinite(r.tau)]
            ours = next((r for r in mine if r.measure == BOUND_MEASURE), None)
            if ours is None:
                continue
            baselines = [r for r in mine if r.baseline]
            strongest = max(baselines, key=lambda r: r.tau) if baselines else None
            out.append(EnvironmentAnswer(sweep, ours.environment, ours, strongest))
        return tuple(out)

    def sentence(self, name: Callable[[str], str] | None = None) -> str:
        """The answer in one sentence, computed from the rows (``name``: measure -> words)."""
        return answer_sentence(self, name)


def answer_sentence(answer: LabAnswer, name: Callable[[str], str] | None = None) -> str:
    """One sentence: the question, the headline word (module docstring) and the counts it stands on.

    Example, two environments where ours is above 0 but below 1/n in one of them:

        >>> rows = (
        ...     TauRow("a", "threshold/bert", "fitted", "ours", False, 0.5, 0.2, 0.7),
        ...     TauRow("a", "threshold/bert", "fitted", "inverse_n", True, 0.8, 0.6, 0.9),
        ...     TauRow("b", "markov/gpt2", "fixed budget", "ours", False, 0.6, 0.4, 0.8),
        ...     TauRow("b", "markov/gpt2", "fixed budget", "inverse_n", True, 0.3, 0.1, 0.5),
        ... )
        >>> for part in answer_sentence(LabAnswer(rows), str).replace(": ", "; ", 1).split("; "):
        ...     print(part)
        Does the bound predict the gap here? In part
        in the 2 shipped environments, ours has τ from +0.50 to +0.60 with the gap, its 95 % interval above 0 in 2
        in 1 of them a trivial baseline orders the runs at least as well (inverse_n
        τ up to 0.80)
        in 1 it orders them like their gaps and better than every trivial baseline.
    """
    name = name or _label
    envs = answer.environments()
    shown = len(answer.sweeps)
    question = "Does the bound predict the gap here?"
    if not envs:
        return f"{question} No shipped environment counts yet (none fitted): there is no answer to give."
    positive = sum(e.orders_like_the_gap for e in envs)
    beyond = sum(e.orders_like_the_gap and e.beyond_baselines for e in envs)
    if positive == 0:
        headline = "No"
    elif beyond == 0:
        headline = "Not beyond the trivial baselines"
    elif beyond == len(envs):
        headline = "Yes"
    else:
        headline = "In part"
    taus = [e.ours.tau for e in envs]
    others = shown - len(envs)
    count = (
        f"the {len(envs)} of {shown} shipped environments that count" if others else f"the {shown} shipped environments"
    )
    if others:
        count += f" ({others} not fitted)"
    text = (
        f"{question} {headline}: in {count}, {name(BOUND_MEASURE)} has τ from {min(taus):+.2f} to "
        f"{max(taus):+.2f} with the gap, its 95 % interval above 0 in {positive}"
    )
    behind = [e for e in envs if e.strongest is not None and not e.beyond_baselines]
    if behind:
        strongest = [e.strongest for e in behind if e.strongest is not None]
        names = ", ".join(dict.fromkeys(name(r.measure) for r in strongest))
        where = "every one" if len(behind) == len(envs) else f"{len(behind)} of them"
        text += (
            f"; in {where} a trivial baseline orders the runs at least as well ({names}; τ up to "
            f"{max(r.tau for r in strongest):.2f})"
        )
    if beyond:
        text += f"; in {beyond} it orders them like their gaps and better than every trivial baseline"
    return text + "."


def read_answer(sources: Sequence[tuple[str, Path]]) -> LabAnswer:
    """The answer's rows from ``verdict.csv`` of each (sweep in words, lab directory) in ``sources``:
    ours, Edelman's proxy and every trivial baseline; a directory without the table adds nothing."""
    rows: list[TauRow] = []
    for sweep, directory in sources:
        path = Path(directory) / VERDICT_CSV
        if not path.is_file():
            continue
        frame = pd.read_csv(path)
        tuned = frame["fine_tuned"].fillna(False).astype(bool) if "fine_tuned" in frame else False
        suffix = pd.Series(tuned, index=frame.index).map({True: " fine-tuned", False: ""})
        frame = frame.assign(environment=frame["task"] + "/" + frame["family"] + suffix)
        kept = frame[frame["measure"].isin((BOUND_MEASURE, OTHER_BOUND)) | frame["baseline"].astype(bool)]
        rows += [
            TauRow(
                sweep=sweep,
                environment=str(r.environment),
                status=str(r.status),
                measure=str(r.measure),
                baseline=bool(r.baseline),
                tau=float(r.kendall_tau),
                low=float(r.kendall_tau_ci_low),
                high=float(r.kendall_tau_ci_high),
            )
            for r in kept.itertuples()
        ]
    return LabAnswer(tuple(rows))


def sweep_words(shipped: ShippedReference) -> str:
    """A shipped sweep as the answer names it, short enough for a legend on a projector: its environment
    as the tables write it and its preset ("markov/gpt2 (fit)", "threshold/bert fine-tuned (finetune)")."""
    return f"{shipped.environment} ({shipped.preset})"


def shipped_answer() -> LabAnswer:
    """The answer over every shipped sweep (:data:`specbound_lab.reference.SWEEP_REFERENCES`)."""
    return read_answer([(sweep_words(s), s.directory) for s in SWEEP_REFERENCES])
