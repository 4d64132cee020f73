"""Wording shared by every page, and number formatting for values carried as natural logs."""

from __future__ import annotations

import re
from collections.abc import Iterable

from specbound.core.architecture import ModelShape
from specbound.present.report import ffn_widths

#: Shown under every bound number: what the proxy is and what it leaves out (SPEC §3).
BOUND_NOTE = (
    "A proxy of the bound's leading complexity factor, not the generalization gap: "
    "the theorem's 1/√n, margin, input-norm and log factors are left out."
)

#: Label of the metric that shows the spectrum-adaptive proxy at the chosen p (tests read it).
TOTAL_LABEL = "Ours at the chosen p"
OPTIMAL_LABEL = "Ours at the optimal p*"
EDELMAN_LABEL = "Edelman-style proxy"
SQRT_DEPTH_LABEL = "√L"


def with_centring(label: str, centring: str | None) -> str:
    """A label of a number that may be centred: ``label`` as it is, or followed by what it is centred
    at (``"Ours at the chosen p, centred at my-base"``), so the number never leaves its centring behind
    (a metric, a report heading, a chart's title).

    Example:
        >>> with_centring(TOTAL_LABEL, "centred at my-base"), with_centring(TOTAL_LABEL, None)
        ('Ours at the chosen p, centred at my-base', 'Ours at the chosen p')
    """
    return label if centring is None else f"{label}, {centring}"


#: Every ASCII punctuation character: CommonMark lets each be escaped with a backslash, and each may
#: start markup in Streamlit's markdown (links, images, emphasis, code, HTML, LaTeX $, :emoji: and
#: :color[...] directives, tables, headings, lists).
_MARKDOWN_ACTIVE = re.compile(r"([!-/:-@\[-`{-~])")
#: Line breaks and other control characters: a message is one line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
#: Where GFM makes a link of plain text even when every character is escaped (it looks for URLs after
#: the escapes are resolved): "scheme://", "www." and "user@host". A word joiner goes in there.
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)
#: U+2060 WORD JOINER: invisible, and not part of any URL or e-mail address.
WORD_JOINER = "\u2060"


def plain(text: str) -> str:
    """``text`` (anything a visitor typed or a link carried) escaped so that markdown shows it as typed.

    For every element that renders markdown: st.error, st.info, st.caption, st.markdown, st.spinner,
    st.progress texts. Each punctuation character gets a backslash, control characters and line
    breaks become one space, and an invisible word joiner breaks every bare URL and e-mail address,
    so no link, image, HTML, LaTeX or emphasis can come out of it.
    """
    text = _AUTOLINK.sub(WORD_JOINER, _CONTROL.sub(" ", str(text)))
    return _MARKDOWN_ACTIVE.sub(r"\\\1", text)


def code(text: str) -> str:
    """``text`` as an inline code span, shown as typed: nothing inside a code span is markup.

    The fence is one backtick longer than any run of backticks in the text, so none can close it.
    """
    text = _CONTROL.sub(" ", str(text))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def adapted_proxy_note(shape: ModelShape) -> str:
    """'Adapted proxy (gpt2): causal.' naming every departure from the paper's BERT encoder."""
    return f"Adapted proxy ({shape.family}): " + ", ".join(a.value for a in shape.adaptations) + "."


def model_card_caption(shape: ModelShape, grid_m: int) -> str:
    """The shape in one caption: sizes, key/value heads when grouped, the MLP and residual, the matrices."""
    heads = f"{shape.num_heads} heads of d = {shape.head_dim}"
    if shape.num_kv_heads != shape.num_heads:
        heads += f" sharing {shape.num_kv_heads} key/value heads"
    mlp = "gated MLP, " if shape.gated else ""
    per = "per layer"
    if shape.moe:
        shared = f" and a shared expert of d_ff = {shape.shared_expert_size}" if shape.shared_expert_size else ""
        routed = f"each token routed to its top-{shape.experts_per_token}"
        mlp = f"{shape.num_experts} experts per layer ({routed}){shared}, "
        per = "per expert"
    residual = " · parallel residual" if shape.parallel else ""
    return (
        f"L = {shape.num_layers} layers · hidden width N = {shape.hidden_size} · {heads} · "
        f"{mlp}feed-forward width d_ff = {ffn_widths(shape)}{residual} · activation {shape.activation} · "
        f"{shape.num_matrices} proxy matrices ({_and(k.value for k in shape.head_kinds)} per query head"
        f"{' (QK_x and V_x in the decoder layers only)' if shape.encoder_decoder else ''}, "
        f"{', '.join(k.value for k in shape.layer_kinds)} {per}) · grid P_m with m = {grid_m}"
    )


def _and(words: Iterable[str]) -> str:
    """'QK and V', 'QK, V, QK_x and V_x'."""
    items = list(words)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
