"""The lab's answer (specbound_lab/answer.py): its rows are the shipped verdict.csv's, its headline word
follows from two counts per counted environment, and an environment that is not fitted is shown, never
counted. The forest plot draws those rows and nothing else."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound_lab.answer import LabAnswer, TauRow, answer_sentence, read_answer, shipped_answer
from specbound_lab.figures import verdict_forest
from specbound_lab.reference import SWEEP_REFERENCES
from specbound_lab.registry import is_baseline
from specbound_lab.tables import VERDICT_CSV


def _rows(*envs: tuple[str, str, float, float, float, float]) -> LabAnswer:
    """(sweep, status, ours τ, ours low, ours high, strongest baseline τ) per environment."""
    rows = []
    for sweep, status, tau, low, high, base in envs:
        rows.append(TauRow(sweep, "threshold/bert", status, "ours", False, tau, low, high))
        rows.append(TauRow(sweep, "threshold/bert", status, "inverse_n", True, base, base - 0.1, base + 0.1))
        rows.append(TauRow(sweep, "threshold/bert", status, "steps", True, 0.05, -0.1, 0.2))
    return LabAnswer(tuple(rows))


def test_the_rows_are_verdict_csv_of_every_shipped_sweep() -> None:
    answer = shipped_answer()
    assert len(answer.sweeps) == len(SWEEP_REFERENCES)
    for shipped, sweep in zip(SWEEP_REFERENCES, answer.sweeps, strict=True):
        table = pd.read_csv(shipped.directory / VERDICT_CSV)
        kept = table[table["measure"].isin(["ours", "edelman"]) | table["baseline"]]
        mine = [r for r in answer.rows if r.sweep == sweep]
        assert [r.measure for r in mine] == list(kept["measure"])
        np.testing.assert_allclose([r.tau for r in mine], kept["kendall_tau"], rtol=1e-12)
        np.testing.assert_allclose([r.low for r in mine], kept["kendall_tau_ci_low"], rtol=1e-12)
        np.testing.assert_allclose([r.high for r in mine], kept["kendall_tau_ci_high"], rtol=1e-12)
        assert all(r.baseline == is_baseline(r.measure) for r in mine)
        assert {r.status for r in mine} == set(table["status"])


def test_the_shipped_answer_counts_fitted_environments_only() -> None:
    answer = shipped_answer()
    counted = answer.environments()
    statuses = {sweep: {r.status for r in answer.rows if r.sweep == sweep} for sweep in answer.sweeps}
    assert {e.sweep for e in counted} == {s for s, st in statuses.items() if st != {"not fitted"}}
    for env in counted:  # the strongest baseline is the largest τ (its declared direction) of that sweep
        baselines = [r for r in answer.rows if r.sweep == env.sweep and r.baseline and math.isfinite(r.tau)]
        assert env.strongest is not None and env.strongest.tau == max(r.tau for r in baselines)
    sentence = answer.sentence()
    taus = [e.ours.tau for e in counted]
    assert f"τ from {min(taus):+.2f} to {max(taus):+.2f}" in sentence
    assert f"interval above 0 in {sum(e.ours.low > 0 for e in counted)}" in sentence


@pytest.mark.parametrize(
    "envs, headline",
    [
        ((("a", "fitted", 0.1, -0.2, 0.4, 0.8), ("b", "fitted", 0.3, -0.1, 0.5, 0.1)), "No"),
        ((("a", "fitted", 0.5, 0.2, 0.7, 0.8), ("b", "fitted", 0.3, -0.1, 0.5, 0.1)), "Not beyond the trivial"),
        # a baseline's τ of -0.8 in its declared direction orders the runs against their gaps: it is not strong
        ((("a", "fitted", 0.5, 0.2, 0.7, -0.8), ("b", "fixed budget", 0.6, 0.4, 0.8, 0.1)), "Yes"),
        ((("a", "fitted", 0.5, 0.2, 0.7, -0.3), ("b", "fitted", 0.3, 0.1, 0.5, 0.6)), "In part"),
    ],
)
def test_the_headline_word_follows_from_the_two_counts(
    envs: tuple[tuple[str, str, float, float, float, float], ...], headline: str
) -> None:
    sentence = answer_sentence(_rows(*envs), str)
    assert sentence.startswith(f"Does the bound predict the gap here? {headline}")


def test_an_unfitted_environment_is_named_but_not_counted() -> None:
    """Its τ of +0.90 would make the range and the count: it enters neither."""
    answer = _rows(("a", "fitted", 0.5, 0.2, 0.7, 0.8), ("b", "not fitted", 0.9, 0.8, 0.95, 0.0))
    assert [e.sweep for e in answer.environments()] == ["a"]
    sentence = answer_sentence(answer, str)
    assert "the 1 of 2 shipped environments that count (1 not fitted)" in sentence
    assert "τ from +0.50 to +0.50" in sentence and "+0.90" not in sentence
    assert "(inverse_n; τ up to 0.80)" in sentence
    nothing = _rows(("b", "not fitted", 0.9, 0.8, 0.95, 0.0))
    assert "No shipped environment counts yet" in answer_sentence(nothing, str)


def test_a_directory_without_its_table_adds_nothing(tmp_path: Path) -> None:
    assert read_answer([("empty", tmp_path)]).rows == ()


def test_the_forest_draws_each_sweep_s_bound_edelman_and_strongest_baseline() -> None:
    """One row per sweep (those not fitted last, hollow); in it ours, Edelman's and the strongest trivial
    baseline by τ, each baseline read in the direction the registry declares for it (never turned to suit
    the data), so that right of 0 always means 'orders the runs as their gaps'."""
    answer = shipped_answer()
    figure = verdict_forest(answer)
    ours, edelman, baseline = figure.data
    assert [t.name for t in figure.data] == ["ours at p*", "Edelman-style proxy", "strongest trivial baseline"]
    labels = dict(zip(figure.layout.yaxis.tickvals, figure.layout.yaxis.ticktext, strict=True))
    fitted = [s for s in answer.sweeps if any(r.sweep == s and r.counted for r in answer.rows)]
    assert [labels[v] for v in sorted(labels, reverse=True)] == fitted + [
        f"{s}, not fitted" for s in answer.sweeps if s not in fitted
    ]
    for trace, measure in ((ours, "ours"), (edelman, "edelman")):
        rows = [r for r in answer.rows if r.measure == measure]
        by_row = {labels[round(y)].removesuffix(", not fitted"): x for x, y in zip(trace.x, trace.y, strict=True)}
        assert by_row == pytest.approx({r.sweep: r.tau for r in rows}, rel=1e-12)
        spans = {labels[round(y)].removesuffix(", not fitted"): (x - lo, x + hi) for x, y, lo, hi in
                 zip(trace.x, trace.y, trace.error_x.arrayminus, trace.error_x.array, strict=True)}  # fmt: skip
        for r in rows:
            assert spans[r.sweep] == pytest.approx((r.low, r.high), rel=1e-12)
    for x, y, lo, hi in zip(baseline.x, baseline.y, baseline.error_x.arrayminus, baseline.error_x.array, strict=True):
        sweep = labels[round(y)].removesuffix(", not fitted")
        rows = [r for r in answer.rows if r.sweep == sweep and r.baseline and math.isfinite(r.tau)]
        strongest = max(rows, key=lambda r: r.tau)  # in its declared direction: never turned to suit the data
        assert x == pytest.approx(strongest.tau, rel=1e-12)
        assert (x - lo, x + hi) == pytest.approx((strongest.low, strongest.high), rel=1e-12)
    hollow = [c == "white" for c in ours.marker.color]
    assert hollow == [labels[round(y)].endswith(", not fitted") for y in ours.y] and any(hollow)


def test_the_site_s_verdict_page_opens_on_the_same_sentence() -> None:
    """docs/hooks/generate.py puts the answer right under the verdict page's title, escaped so that the
    star of p* stays a star, before any of the prose."""
    import importlib.util
    from pathlib import Path

    pytest.importorskip("mkdocs")
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("docs_hooks_generate", root / "docs" / "hooks" / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    intro = (root / "docs" / "lab" / "verdict-text.md").read_text(encoding="utf-8")
    page = generate.answer_first(intro)
    title, blank, first = page.split("\n")[:3]
    assert (title, blank) == (intro.split("\n")[0], "")
    assert first == "**" + shipped_answer().sentence().replace("*", "\\*") + "**"
    assert intro.split("\n", 1)[1].strip() in page  # the prose follows, whole
    with pytest.raises(RuntimeError):
        generate.answer_first("no title here\n")
