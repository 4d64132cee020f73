"""The dashboard's one vocabulary: every symbol and technical word, what it means in plain words.

Pages, tables and figures name things with these words and explain them from here (a metric's "?"
hover, a column's header hover, the Overview's glossary), so a term reads the same everywhere and is
explained where it first appears.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from dashboard.wording.text import plain
from specbound.present.numbers import format_count
from specbound_lab.registry import MEASURES

if TYPE_CHECKING:
    from specbound_lab.train import RunSpec


@dataclass(frozen=True)
class Term:
    """A symbol or word as the pages write it, and its meaning for a first-time visitor."""

    symbol: str
    meaning: str


#: Every term, by a key the code uses; the glossary lists them in this order.
TERMS: Mapping[str, Term] = MappingProxyType(
    {
        "ours": Term(
            "Ours at p*",
            "the spectrum-adaptive complexity proxy of Sakai & Imaizumi: Σ c(W; p*) over every weight matrix, "
            "plus √L. Lower is better.",
        ),
        "edelman": Term(
            "Edelman-style proxy",
            "the norm-based complexity proxy of Edelman et al. (2022), built from the same matrices with fixed "
            "norms instead of a chosen p. Lower is better; it grows much faster with depth.",
        ),
        "ratio": Term(
            "Edelman-style ÷ ours",
            "how many times smaller the spectrum-adaptive proxy is than the norm-based one for this model.",
        ),
        "p": Term(
            "p (Schatten index)",
            "how a matrix is measured: p = 0 counts its rank, p = 2 sums its squared singular values "
            "(Frobenius), values in between interpolate.",
        ),
        "p_star": Term("p*", "the p on the grid P_m that makes a matrix's contribution c(W; p) smallest."),
        "grid": Term(
            "P_m",
            "the grid {0, 1/m, …, 2} of p values the theorem's guarantee covers, with m = ⌈L + ln N⌉.",
        ),
        "QK": Term("QK", "per attention head, the query-key product W_Qᵀ W_K restricted to the head: N × N, rank ≤ d."),
        "V": Term("V", "per head, the value map times its slice of the output projection: N × N, rank ≤ d."),
        "QK_x": Term(
            "QK_x",
            "per head of an encoder-decoder's decoder layer, the cross-attention's query-key product: the "
            "decoder's queries against the encoder's keys (N × N, rank ≤ d).",
        ),
        "V_x": Term(
            "V_x",
            "per head of a decoder layer's cross-attention, the value map on the encoder's output times its "
            "slice of the output projection (N × N, rank ≤ d).",
        ),
        "expert": Term(
            "expert",
            "in a mixture of experts, one of the feed-forward blocks of a layer among which a router picks "
            "a few per token (the router's gate values taken as given weights: top-k routing is not "
            "continuous in its input). Each expert's M_gate, M_in and M_out are proxy matrices of their "
            "own, and the layer's factor in α takes the largest expert.",
        ),
        "M_gate": Term("M_gate", "per layer of a gated MLP (Llama-family decoders), the gate's matrix (N × d_ff)."),
        "M_in": Term(
            "M_in", "per layer, the feed-forward block's first matrix (N × d_ff; the up projection if gated)."
        ),
        "M_out": Term("M_out", "per layer, the feed-forward block's second matrix (d_ff × N)."),
        "alpha": Term(
            "α⁽ℓ⁾ (depth factor)",
            "how much the layers above ℓ can magnify a change in layer ℓ: the product of their Lipschitz "
            "bounds (1 at the top).",
        ),
        "gamma": Term(
            "γ (local factor)", "the spectral norms of the other matrices of W's own layer that W passes through."
        ),
        "scale": Term("s_W (scale)", "s_W = γ · α⁽ℓ⁾ · L: how strongly the bound magnifies matrix W's size."),
        "schatten": Term(
            "S_p (Schatten quantity)",
            "Σ σᵢᵖ over W's singular values σᵢ: p = 0 counts the rank, p = 2 is ‖W‖_F².",
        ),
        "contribution": Term(
            "c(W; p)",
            "a matrix's share of the bound: S_p to the power 1/(p+2), times s_W to the power p/(p+2), "
            "times N to the power (p+1)/(p+2).",
        ),
        "break_even": Term(
            "s*_W (break-even scale)",
            "the scale below which some p > 0 beats counting rank; above it, p* = 0.",
        ),
        "decades_above": Term(
            "decades above s*_W",
            "log10 s_W − log10 s*_W: how many powers of ten the scale lies above its break-even (≥ 0 means p* = 0).",
        ),
        "rank": Term("rank", "the number of singular values above the cut-off 10⁻¹⁰ · k · max(σ₁, 1)."),
        "spectral_product": Term(
            MEASURES["spectral_product"].screen_name, "Π ‖W‖₂ over the matrices: a classic norm-based measure."
        ),
        "tau": Term(
            "Kendall τ",
            "how often two models are ranked in the same order by a measure and by their true gap: 1 always, "
            "0 by chance, −1 always reversed.",
        ),
        "width": Term("N (width)", "the hidden width of the model: the size of each token's vector."),
        "heads": Term("H (heads)", "the number of attention heads per layer; each has size d = N / H."),
    }
)


def measure_name(measure: str) -> str:
    """A lab measure in plain words, as its registration names it on screen: 'spectral_product' ->
    'product of spectral norms' (unknown: as given; the CSV files keep the short names)."""
    registered = MEASURES.get(measure)
    return registered.screen_name if registered is not None else measure


def help_for(key: str) -> str:
    """The hover text of a term: 'p*: the p on the grid …', escaped for markdown (a hover renders it)."""
    term = TERMS[key]
    return plain(f"{term.symbol}: {term.meaning}")


def glossary_markdown() -> str:
    """The glossary as a markdown list (the Overview's). Symbols and meanings are escaped: the stars of
    "s*_W" and "p*" would otherwise pair into italics."""
    return "\n".join(f"- **{plain(term.symbol)}**: {plain(term.meaning)}" for term in TERMS.values())


def model_label(spec: RunSpec, *, plural: bool = False) -> str:
    """How a lab model (or, ``plural``, a sweep of them) is named wherever it is shown (never as a BERT
    Miniature or a released model); the words are the lab's own (:attr:`~specbound_lab.train.Family.short_words`,
    :attr:`~specbound_lab.tasks.Task.words`)."""
    model = spec.family.short_words + ("s" if plural else "")
    return f"small {model} trained by the lab on the {spec.task.kind.words} task"


def run_name(spec: RunSpec, step: int | None = None) -> str:
    """A lab run's short name, wherever a label, subtitle, legend, button or file name would otherwise show
    its run id (``lab-gpt2-modular-L1-N64-H4-n2823-…``): the lab's words for its model
    (:attr:`~specbound_lab.train.Family.short_words`), its depth, width, heads, training set and seed, the
    task in the lab's words (:attr:`~specbound_lab.tasks.Task.words`) where it is not the lab's first
    environment's (as :func:`dashboard.wording.lab.run_choice` leaves it out), and the saved ``step``
    shown. Short enough for a chart's subtitle on a projector's narrow panels.

    Example:
        >>> from specbound_lab.tasks import ModularTask
        >>> from specbound_lab.train import RunSpec
        >>> run_name(RunSpec(layers=2, hidden=64, heads=2, n_train=300, seed=1), 500)
        'lab encoder L2 N64 H2 n300 seed 1, step 500'
        >>> run_name(RunSpec(layers=1, hidden=64, heads=4, n_train=2823, task=ModularTask(), family="gpt2"))
        'lab GPT-2 decoder L1 N64 H4 n2823 seed 0, modular addition task'
    """
    task = "" if spec.default_environment else f", {spec.task.kind.words} task"
    at = "" if step is None else f", step {step}"
    size = f"L{spec.layers} N{spec.hidden} H{spec.heads} n{spec.n_train}"
    return f"lab {spec.family.short_words} {size} seed {spec.seed}{task}{at}"


def spec_words(s: RunSpec) -> str:
    """A lab run's hyperparameters in words, where a picker would otherwise show its run id: "L = 1,
    N = 64, H = 4, n = 2823, lr 0.001, seed 0, 3,000 steps"."""
    noise = f", noise {s.label_noise:g}" if s.task.kind.noisy else ""
    return (
        f"L = {s.layers}, N = {s.hidden}, H = {s.heads}, n = {s.n_train}{noise}, "
        f"lr {s.settings.learning_rate:g}, seed {s.seed}, {format_count(s.settings.steps, 'step')}"
    )
