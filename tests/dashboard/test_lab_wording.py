"""The Lab page's prose lives in :mod:`dashboard.wording.lab` and states the lab's own thresholds: each
number a rule names is read from the constant that applies it, and the page itself holds no prose."""

from __future__ import annotations

import ast
from pathlib import Path

from dashboard.wording import lab as words
from specbound_lab.grid import GROK_GRID
from specbound_lab.grokking import MIN_SEEDS as GROKKING_SEEDS
from specbound_lab.grokking import SATURATION, SMOOTHING_WINDOW
from specbound_lab.limits import VISITOR_CAPS
from specbound_lab.reference import GROKKING_REFERENCE, THRESHOLD_REFERENCE
from specbound_lab.robust import MIN_COUPLED_PAIRS, NOISE_Z
from specbound_lab.train import FIT_LOSS
from specbound_lab.verdict import MIN_FITTED_SHARE, MIN_SEEDS

ROOT = Path(__file__).resolve().parents[2]
#: The longest text a page may hold as a literal: a label or a short help, not a paragraph of method.
LONGEST_PAGE_TEXT = 160


def test_the_rules_state_the_lab_s_constants() -> None:
    assert (FIT_LOSS, MIN_FITTED_SHARE, MIN_SEEDS) == (0.01, 0.8, 5)  # the words below were checked at these
    assert "(cross-entropy ≤ 0.01, or every label" in words.VERDICT_RULES
    assert "fewer than 80 % fitted, or with fewer than five seeds per configuration" in words.VERDICT_RULES
    assert (NOISE_Z, MIN_COUPLED_PAIRS) == (1.96, 2)
    assert "differ by less than 1.96 standard errors are left out, and a coupling needs two pairs" in (
        words.ROBUST_METHOD
    )
    assert (SATURATION, SMOOTHING_WINDOW, GROKKING_SEEDS) == (0.99, 3, 10)
    assert words.GROKKING_METHOD.startswith(
        "Modular addition mod 97 on 30 % of its pairs, a one-layer GPT-2 decoder, full-batch AdamW with weight "
        "decay 1 (`specbound lab sweep --preset grok"
    )
    assert "running median over three checkpoints" in words.GROKKING_METHOD
    assert "training accuracy reaches 0.99" in words.GROKKING_METHOD and "needs ten seeds" in words.GROKKING_METHOD
    assert round(100 * GROK_GRID.n_train[0] / 97**2) == 30


def test_numbers_are_spelled_as_prose_writes_them() -> None:
    assert [words.spelled(n) for n in (0, 2, 5, 10, 11)] == ["zero", "two", "five", "ten", "11"]


def test_the_training_caption_reads_the_caps() -> None:
    caption = words.training_caption("small encoder", VISITOR_CAPS)
    assert caption.startswith(f"Train one small encoder on this server: at most {VISITOR_CAPS.max_layers} layers")
    assert f"measured on {VISITOR_CAPS.test_samples:,} fresh samples" in caption


def test_shipped_references_and_sweeps_in_words() -> None:
    assert words.shipped_item(THRESHOLD_REFERENCE, 48) == "48 runs of the `class` sweep: BERT encoders, threshold task"
    assert words.shipped_item(GROKKING_REFERENCE, 10).startswith("10 runs of the grokking preset: GPT-2 decoders")
    assert words.sweep_choice(None, ()) == "the 0 runs trained here"
    assert words.sweep_choice(THRESHOLD_REFERENCE, ()) == THRESHOLD_REFERENCE.key  # built without its runs
    assert words.trained([]).endswith("Shipped:\n\nno reference (built without its lab data)")


def test_the_page_holds_no_prose() -> None:
    tree = ast.parse((ROOT / "pages" / "lab.py").read_text(encoding="utf-8"))
    body = tree.body[1:]  # the module's docstring apart
    texts = [
        node.value
        for stmt in body
        for node in ast.walk(stmt)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    assert texts and max(map(len, texts)) <= LONGEST_PAGE_TEXT, max(texts, key=len)
