"""The rule by which a measure "moves before the jump", on synthetic curves with a known answer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from specbound_lab.grokking import (
    GrokEvent,
    LeadSummary,
    MeasureLead,
    RunGrokking,
    grok_event,
    measure_leads,
    move_step,
    summarize_leads,
)

STEPS = list(range(0, 1100, 100))  # 0, 100, ..., 1000


def _sigmoid(center: float, *, low: float = 0.0, high: float = 1.0, width: float = 30.0) -> list[float]:
    return [low + (high - low) / (1 + math.exp(-(s - center) / width)) for s in STEPS]


def _raw(steps: Sequence[int], values: Sequence[float], start: int | None = None) -> int | None:
    """The rule on the raw curve: no smoothing, the origin the value at ``start``."""
    return move_step(steps, values, start, window=1, origin_checkpoints=1)


def test_the_move_step_is_the_first_step_half_way_to_the_extreme() -> None:
    # 0 -> 10 in steps of 1 per 100 steps: half way (5) is first reached at step 500
    assert _raw(STEPS, [float(i) for i in range(11)]) == 500
    # a falling curve: from 8 down to 0, half way is 4, reached at step 400
    assert _raw(STEPS, [8 - min(i, 8) for i in range(11)]) == 400
    # the extreme is the farthest value from the start, not the last one: up to 6 at step 300, back to 1
    assert _raw(STEPS, [0, 2, 4, 6, 5, 4, 3, 2, 1, 1, 1]) == 200  # half of 6 is first covered by 4
    assert _raw([0, 1], [1.0, 1.0]) is None  # constant: never moves
    assert _raw([0], [1.0]) is None
    # non-finite values are left out
    assert _raw([0, 1, 2, 3], [0.0, math.nan, 1.0, 1.0]) == 2


def test_the_rule_reads_smoothed_curves_so_one_checkpoint_cannot_make_a_move() -> None:
    """SPEC §13b: a running median over three checkpoints, the origin its value at the start."""
    from specbound_lab.grokking import running_median

    spike = [0.0, 0.0, 9.0, 0.0, 0.0, 0.0, 0.0, 4.0, 4.0, 4.0, 4.0]  # one noisy checkpoint at 200, a move at 700
    assert _raw(STEPS, spike) == 200  # the raw rule takes the spike for the move
    assert move_step(STEPS, spike) == 700  # smoothed: the spike is gone, the lasting change counts
    assert running_median([0.0, 0.0, 9.0, 0.0, 1.0]).tolist() == [0.0, 0.0, 0.0, 1.0, 0.5]  # ends: mean of two
    # 8 down to 0: smoothed origin (8 + 7) / 2 = 7.5, half of 7.5 first covered by 3, at step 500
    assert move_step(STEPS, [8 - min(i, 8) for i in range(11)]) == 500


def test_a_sigmoid_moves_at_its_center() -> None:
    assert move_step(STEPS, _sigmoid(450.0)) == 500  # crosses 1/2 between 400 and 500
    assert move_step(STEPS, _sigmoid(650.0, low=3.0, high=-1.0)) == 700


def test_a_run_groks_when_test_accuracy_jumps_after_training_accuracy_saturates() -> None:
    train = _sigmoid(150.0, low=0.01, high=1.0)
    test = _sigmoid(650.0, low=0.01, high=0.99)
    event = grok_event(STEPS, train, test)
    assert (event.saturation_step, event.jump_step, event.grokked) == (300, 700, True)
    assert event.test_accuracy_at_saturation == pytest.approx(0.01, abs=1e-4)
    # generalizing together with fitting is not grokking: test accuracy is already high at saturation
    together = grok_event(STEPS, train, _sigmoid(150.0, low=0.01, high=0.99))
    assert together.test_accuracy_at_saturation > 0.9 and not together.grokked
    # a run that never generalizes does not grok
    assert not grok_event(STEPS, train, _sigmoid(650.0, low=0.01, high=0.3)).grokked
    # a run that never fits does not grok
    assert not grok_event(STEPS, _sigmoid(150.0, low=0.01, high=0.9), test).grokked


def test_curves_are_read_from_the_saturation_step() -> None:
    """What a measure does while the training set is being fitted is not counted: a norm that grows
    from initialisation until saturation at 300, then falls from 700, moves at 800, not at 100."""
    grows_then_falls = [0.0, 5.0, 9.0, 10.0, 10.0, 10.0, 10.0, 9.0, 6.0, 4.0, 4.0]
    assert move_step(STEPS, grows_then_falls) == 200  # read from the first step: the fit (origin 2.5, 9 > 6.25)
    assert move_step(STEPS, grows_then_falls, start=300) == 800  # read from saturation: 10 -> 4, half at 7
    event = GrokEvent(saturation_step=300, jump_step=700, final_test_accuracy=0.99)
    (lead,) = measure_leads(STEPS, {"norm": grows_then_falls}, event)
    assert (lead.move_step, lead.lead, lead.before) == (800, -100.0, False)


def test_leads_against_the_jump() -> None:
    event = GrokEvent(saturation_step=300, jump_step=700, final_test_accuracy=0.99)
    curves = {
        "early": _sigmoid(350.0),  # moves at 400
        "late": _sigmoid(850.0),  # moves at 900
        "flat": [1.0] * len(STEPS),
    }
    early, late, flat = measure_leads(STEPS, curves, event)
    assert (early.move_step, early.lead, early.before) == (400, 300.0, True)
    assert (late.move_step, late.lead, late.before) == (900, -200.0, False)
    assert flat.move_step is None and math.isnan(flat.lead) and not flat.before


def test_the_summary_over_seeds_says_only_what_every_seed_supports() -> None:
    seeds = [
        (MeasureLead("a", 400, 700), MeasureLead("b", 900, 700), MeasureLead("c", 400, 700)),
        (MeasureLead("a", 500, 600), MeasureLead("b", 800, 600), MeasureLead("c", 900, 600)),
        (MeasureLead("a", 300, 800), MeasureLead("b", 800, 800), MeasureLead("c", None, 800)),
    ]
    a, b, c = summarize_leads(seeds)
    assert isinstance(a, LeadSummary)
    assert a.leads == (300.0, 100.0, 500.0)
    assert (a.median, a.low, a.high, a.share_before) == (300.0, 100.0, 500.0, 1.0)
    assert (b.median, b.share_before) == (-200.0, 0.0)  # lead 0 at seed 3 is not before
    assert c.share_before == pytest.approx(1 / 3)
    assert np.array_equal(c.finite, [300.0, -300.0])
    # three seeds carry no verdict, however they agree (SPEC §13b: at least ten)
    assert a.verdict == b.verdict == c.verdict == "too few seeds"
    assert LeadSummary("d", (math.nan,)).verdict == "never"


def test_before_needs_ten_seeds_and_a_median_lead_above_the_null_and_a_lead_inside_it_is_inconclusive() -> None:
    from specbound_lab.grokking import MIN_SEEDS

    leads = tuple(float(v) for v in range(100, 100 + 50 * MIN_SEEDS, 50))  # median +325
    assert LeadSummary("m", leads, null_p95=300.0).verdict == "before"
    # a positive lead that shifted curves reach as often: the null could not reject, so no claim either way
    assert LeadSummary("m", leads, null_p95=400.0).verdict == "inconclusive"
    assert LeadSummary("m", tuple(-v for v in leads), null_p95=-500.0).verdict == "not before"  # after the jump
    assert LeadSummary("m", leads[:-1], null_p95=0.0).verdict == "too few seeds"
    # a design that cannot answer (a failed control or power check) says so for every measure that moved
    assert LeadSummary("m", leads, null_p95=300.0, powered=False).verdict == "inconclusive"
    assert LeadSummary("m", tuple(-v for v in leads), null_p95=-500.0, powered=False).verdict == "inconclusive"
    assert LeadSummary("m", (math.nan,) * MIN_SEEDS, powered=False).verdict == "never"


def test_the_null_shifts_each_curve_s_increments_circularly_within_the_window_around_its_jump() -> None:
    from specbound_lab.grokking import jump_window, null_median_leads, shift_increments

    step = np.array([5.0, 0.0, 0.0, 1.0, 3.0, 3.0, 7.0])  # a window over indices 1..5 (the ends stay)
    shifted = shift_increments(step, np.arange(1, 6), 1)  # increments (0, 1, 2, 0) -> (0, 0, 1, 2)
    assert shifted.tolist() == [5.0, 0.0, 0.0, 0.0, 1.0, 3.0, 7.0]

    run = _hand_run()  # saturates at 300, jumps at 700: the window runs from 300 to 1100 (clipped at 1000)
    window = jump_window(run)
    assert [run.steps[i] for i in window] == [300, 400, 500, 600, 700, 800, 900, 1000]
    draws = null_median_leads([run], "ours", permutations=40, seed=5)
    rng = np.random.default_rng([5, sum(ord(c) for c in "ours")])
    curve = np.asarray(run.curves["ours"])
    for drawn in draws:
        shifted = shift_increments(curve, window, int(rng.integers(1, window.size - 1)))
        moved = move_step(run.steps, shifted.tolist(), 300)
        if moved is None:
            assert math.isnan(drawn)
        else:
            assert drawn == 700 - moved
    assert np.isfinite(draws).all() and len(set(draws.tolist())) > 1  # the shift moves the move step


#: A fine grid of checkpoints (every 20 steps), as the grokking preset saves around the jump.
FINE = list(range(0, 3000, 20))


def _fine_runs(leads: dict[str, float], seeds: int = 10) -> list[RunGrokking]:
    """Ten seeds that saturate near step 160 and jump at 1,100 to 1,640; each named curve moves ``lead`` steps
    before its seed's jump (a logistic step of about two checkpoints), plus a little seeded noise."""
    from specbound_lab.grokking import RunGrokking, synthetic_curve

    rng = np.random.default_rng(7)
    out = []
    for seed in range(seeds):
        jump = 1100.0 + 60.0 * seed
        train = synthetic_curve(FINE, 100.0, 20.0)
        test = tuple(0.01 + 0.98 * v for v in synthetic_curve(FINE, jump, 20.0))
        curves = {
            name: tuple(v + rng.normal(0.0, 0.01) for v in synthetic_curve(FINE, jump - lead, 40.0))
            for name, lead in leads.items()
        }
        event = grok_event(FINE, train, test)
        out.append(RunGrokking(f"s{seed}", seed, tuple(FINE), train, test, curves, event,
                               measure_leads(FINE, curves, event)))  # fmt: skip
    return out


def test_the_power_check_calls_a_curve_that_leads_before_and_one_that_does_not_not() -> None:
    """On the runs' own checkpoints and jumps, a synthetic curve that leads by 3/4 of the way from saturation
    to the jump beats its null (the null can reject: its 95th percentile sits below the lead); one that moves
    at the jump is not called before."""
    from specbound_lab.grokking import power_check

    runs = _fine_runs({"frobenius": 800.0})
    assert all(run.event.grokked for run in runs)
    check = power_check(runs, permutations=200)
    assert check.leading.median > 700 and check.leading.null_p95 < check.leading.median
    assert check.leading.rule_verdict == "before" and check.at_jump.rule_verdict != "before"
    assert abs(check.at_jump.median) <= 40  # it moves at the jump, to within two checkpoints
    assert check.passes


def test_a_leading_measure_is_before_and_a_late_one_not_before_when_the_control_behaves() -> None:
    from specbound_lab.grokking import grokking_sentence, grokking_verdict

    runs = _fine_runs({"frobenius": 800.0, "ours": 700.0, "edelman": -300.0})
    verdict = grokking_verdict(runs, permutations=200)
    rows = {s.measure: s for s in verdict.summaries}
    assert verdict.control is not None and verdict.control.rule_verdict == "before" and verdict.powered
    assert rows["ours"].verdict == "before" and rows["edelman"].verdict == "not before"
    assert rows["ours"].median == pytest.approx(700.0, abs=40.0)  # the lead it was built with
    text = grokking_sentence(runs, verdict=verdict)
    assert "The positive control, frobenius, is called before" in text
    assert "Moved before the jump beyond the circular-shift null: frobenius (median +780 steps" in text
    assert f"ours (median +680 steps, null 95th percentile {rows['ours'].null_p95:+,.0f})" in text


def test_a_failed_positive_control_makes_every_verdict_inconclusive() -> None:
    """The weight norm keeps growing after the jump (it moves 300 steps after it): the design cannot show a
    known progress measure moving first, so even a measure that leads is not called "before"."""
    from specbound_lab.grokking import grokking_sentence, grokking_verdict

    runs = _fine_runs({"frobenius": -300.0, "ours": 700.0, "edelman": -300.0})
    verdict = grokking_verdict(runs, permutations=200)
    assert verdict.control is not None and verdict.control.rule_verdict == "not before" and not verdict.powered
    assert verdict.power is not None and verdict.power.passes  # the power check alone would pass
    assert {s.measure: s.verdict for s in verdict.summaries} == {
        "frobenius": "inconclusive",
        "ours": "inconclusive",
        "edelman": "inconclusive",
    }
    assert next(s for s in verdict.summaries if s.measure == "ours").rule_verdict == "before"
    text = grokking_sentence(runs, verdict=verdict)
    assert "The positive control, frobenius, is not called before" in text
    assert "So the design cannot answer: every measure that moved is inconclusive (3 of 3)" in text


def _hand_run() -> RunGrokking:
    from specbound_lab.grokking import RunGrokking

    train = _sigmoid(150.0, low=0.01, high=1.0)
    test = _sigmoid(650.0, low=0.01, high=0.99)
    curves = {"ours": tuple(_sigmoid(350.0)), "edelman": tuple(_sigmoid(850.0, low=2.0, high=1.0))}
    event = grok_event(STEPS, train, test)
    return RunGrokking("run", 3, tuple(STEPS), tuple(train), tuple(test), curves, event,
                       measure_leads(STEPS, curves, event))  # fmt: skip


def test_the_excursion_share_is_what_the_rule_compares_with_one_half() -> None:
    from specbound_lab.grokking import excursion_shares as excursion_share

    values = [0.0, 5.0, 9.0, 10.0, 10.0, 10.0, 10.0, 9.0, 6.0, 4.0, 4.0]
    shares = excursion_share(STEPS, values, 300)
    assert shares[:3] == [None, None, None]
    assert shares[3:] == pytest.approx([0.0, 0.0, 0.0, 0.0, 1 / 6, 4 / 6, 1.0, 1.0])
    first_half = next(s for s, share in zip(STEPS, shares, strict=True) if share is not None and share >= 0.5)
    assert first_half == move_step(STEPS, values, 300) == 800


def test_the_grokking_figure_marks_the_fit_and_the_jump_on_one_step_axis() -> None:
    from specbound_lab.figures import grokking_figure

    run = _hand_run()
    fig = grokking_figure(run).to_dict()
    names = [trace["name"] for trace in fig["data"]]
    assert names[:2] == ["train accuracy", "test accuracy"] and len(names) == 4
    assert {trace["yaxis"] for trace in fig["data"][2:]} == {"y2"}
    lines = [shape["x0"] for shape in fig["layout"]["shapes"] if shape["xref"] == "x"]
    assert lines == [run.event.saturation_step, run.event.jump_step] == [300, 700]
    assert fig["layout"]["xaxis2"]["matches"] == "x"
    assert "seed 3 groks" in fig["layout"]["title"]["text"]
    # the marks' labels face away from each other above the top panel, which has no title to print over
    labels = {note["text"]: note for note in fig["layout"]["annotations"] if note.get("xref") == "x"}
    assert {text: (note["x"], note["xanchor"]) for text, note in labels.items()} == {
        "train fits": (300, "right"),
        "test jumps": (700, "left"),
    }
    titles = [note.get("text", "") for note in fig["layout"]["annotations"] if note.get("xref") != "x"]
    assert titles == ["Each measure's move since saturation"]
    # ours stands out (its own colour, thick); every other measure is grey, none takes an accuracy's blue
    from specbound.core import Proxy
    from specbound.present.figures.style import quantity_color

    by_name = {trace["name"]: trace["line"] for trace in fig["data"]}
    accuracy_colours = {by_name["train accuracy"]["color"], by_name["test accuracy"]["color"]}
    measures = [trace for trace in fig["data"][2:]]
    ours = [t["line"] for t in measures if t["name"] == "ours at p*"]
    assert ours == [{"color": quantity_color(Proxy.OURS), "width": 3}]
    assert all(t["line"]["color"] not in accuracy_colours for t in measures)
    assert all(t["line"]["width"] == 1 for t in measures if t["name"] != "ours at p*")


def test_the_sentence_says_what_every_seed_supports() -> None:
    from specbound_lab.grokking import RunGrokking, grokking_sentence

    def run(seed: int, ours_center: float, other_center: float, grokked: bool = True) -> RunGrokking:
        train = _sigmoid(150.0, low=0.01, high=1.0)
        test = _sigmoid(650.0, low=0.01, high=0.99 if grokked else 0.2)
        curves = {"ours": tuple(_sigmoid(ours_center)), "edelman": tuple(_sigmoid(other_center))}
        event = grok_event(STEPS, train, test)
        return RunGrokking(f"s{seed}", seed, tuple(STEPS), tuple(train), tuple(test), curves, event,
                           measure_leads(STEPS, curves, event))  # fmt: skip

    runs = [run(0, 850.0, 350.0), run(1, 450.0, 450.0), run(2, 850.0, 350.0, grokked=False)]
    text = grokking_sentence(runs, name_of=lambda m: {"ours": "ours at p*", "edelman": "Edelman"}[m])
    assert text.startswith(
        "2 of 3 seeds grok: training accuracy reaches 0.99 by step 300 and test accuracy moves at step 700"
    )
    assert "With 2 seeds that grokked (a verdict needs 10), no measure is said to move before the jump" in text
    from specbound_lab.grokking import grokking_summary

    summaries = grokking_summary(runs)
    ours = next(s for s in summaries if s.measure == "ours")
    assert text.endswith(
        f"Ours at p*: median lead +0 steps (from -200 to +200), against {ours.null_p95:+,.0f} for the null's "
        "95th percentile: too few seeds."
    )
    # a caller that holds the summaries already (the dashboard, once per server) gets the same words
    names = {"ours": "ours at p*", "edelman": "Edelman"}.__getitem__
    assert grokking_sentence(runs, name_of=names, summaries=summaries) == text
    # and the words are those summaries': another null reads as another percentile
    moved = tuple(replace(s, null_p95=s.null_p95 + 1000) if s.measure == "ours" else s for s in summaries)
    assert f"against {ours.null_p95 + 1000:+,.0f} for the null's" in grokking_sentence(
        runs, name_of=names, summaries=moved
    )
    assert grokking_sentence(runs[2:]) == "None of the 1 runs grokked, so no measure can be said to move before a jump."


def test_one_runs_sentence_gives_its_own_steps_and_leads() -> None:
    from specbound_lab.grokking import RunGrokking, run_sentence

    run = _hand_run()  # saturates at 300, jumps at 700; ours moves at 400, Edelman's at 900
    text = run_sentence(run, name_of={"ours": "ours at p*", "edelman": "Edelman"}.__getitem__)
    at_fit = run.test_accuracy[STEPS.index(300)]
    assert text == (
        f"Training accuracy reaches 0.99 at step 300, when test accuracy is {at_fit:.3f}; test accuracy moves at "
        f"step 700 and ends at {run.test_accuracy[-1]:.3f}. Moved before the jump: ours at p* (+300 steps). "
        "Ours at p* moves at step 400 (+300)."
    )
    late = {"ours": run.curves["edelman"]}
    no_lead = RunGrokking("r", 0, run.steps, run.train_accuracy, run.test_accuracy, late, run.event,
                          measure_leads(STEPS, late, run.event))  # fmt: skip
    assert "No measure moved before the jump. Ours moves at step 900 (-200)." in run_sentence(no_lead)
    flat = [0.2] * len(STEPS)
    never = RunGrokking("r", 0, run.steps, tuple(flat), tuple(flat), {}, grok_event(STEPS, flat, flat), ())
    assert run_sentence(never) == (
        "This run does not grok by the rule: training accuracy never reaches 0.99, final test accuracy 0.200."
    )
