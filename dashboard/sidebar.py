"""The shared sidebar: where the model comes from, opening it with progress, and its shape.

Model sources are a list of :class:`ModelSource`: a label and a function that draws the source's
own inputs and returns the model name to open. Adding a source is one more entry in
``MODEL_SOURCES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import streamlit as st

from specbound.bounds import BoundAnalysis
from specbound.defaults import DEFAULT_MODEL
from specbound.errors import SpecboundError
from specbound.models import (MINIATURE_LAYERS, MINIATURE_WIDTHS, is_miniature, miniature_alias,
                              parse_miniature_alias)

from . import atlas, data

CACHED_MARK, DOWNLOAD_MARK = "●", "○"


@dataclass(frozen=True)
class ModelSource:
    """One way of choosing a model: a label for the picker and the inputs that name the model."""

    label: str
    pick: Callable[[], str | None]  # draws its widgets; returns a model name, or None if incomplete


def _pick_bundled() -> str:
    st.caption("all-MiniLM-L6-v2 (L = 6, N = 384, 12 heads), shipped as a Python package: "
               "it opens with no network.")
    return DEFAULT_MODEL


def miniature_grid_markdown(cached: Mapping[tuple[int, int], bool], selected: tuple[int, int]) -> str:
    """A depth x width table of the 24 BERT Miniatures: cached or not, the selection in brackets."""
    header = "| L \\ H | " + " | ".join(str(w) for w in MINIATURE_WIDTHS) + " |"
    lines = [header, "|" + "---|" * (len(MINIATURE_WIDTHS) + 1)]
    for layers in MINIATURE_LAYERS:
        cells = []
        for width in MINIATURE_WIDTHS:
            mark = CACHED_MARK if cached.get((layers, width)) else DOWNLOAD_MARK
            cells.append(f"**[{mark}]**" if (layers, width) == selected else mark)
        lines.append(f"| **{layers}** | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pick_miniature() -> str:
    cached = {(e.num_layers, e.hidden_size): e.available_offline
              for e in data.catalog_entries() if e.name != DEFAULT_MODEL}
    left, right = st.columns(2)
    layers = left.selectbox("Depth L", MINIATURE_LAYERS, index=1, key="miniature_layers")
    width = right.selectbox("Width H", MINIATURE_WIDTHS, index=1, key="miniature_width")
    st.markdown(miniature_grid_markdown(cached, (layers, width)))
    st.caption(f"{CACHED_MARK} cached, opens offline · {DOWNLOAD_MARK} downloaded from the Hugging Face "
               f"Hub when opened (`google/bert_uncased_L-*_H-*`)")
    return miniature_alias(layers, width)


def _pick_custom() -> str | None:
    name = st.text_input("Hub id or local directory", key="model_custom",
                         placeholder="owner/name or a checkpoint directory",
                         help="A BERT-family encoder (BERT, RoBERTa, ELECTRA, MiniLM, DistilBERT) with "
                              "config.json and safetensors or PyTorch weights.")
    return name.strip() or None


BUNDLED, MINIATURE, CUSTOM, ATLAS = "Bundled model", "BERT Miniature", "Hub id or local directory", "Atlas file"
MODEL_SOURCES: list[ModelSource] = [
    ModelSource(BUNDLED, _pick_bundled),
    ModelSource(MINIATURE, _pick_miniature),
    ModelSource(CUSTOM, _pick_custom),
    ModelSource(ATLAS, atlas.pick_from_atlas),
]
#: Session-state key of the source radio.
SOURCE_KEY = "model_source"


def show_in_picker(name: str) -> None:
    """Set the picker's widgets (before they are drawn) to where a person would choose ``name``.

    Used when a model is opened from a link, so the sidebar shows the model that is open.
    """
    state = st.session_state
    alias = parse_miniature_alias(name)
    if name == DEFAULT_MODEL:
        state[SOURCE_KEY] = BUNDLED
    elif (ref := atlas.atlas_ref(name)) is not None and ref.path is not None:
        atlas.use(ref.path)
        state[SOURCE_KEY] = ATLAS
        if ref.member is not None:
            state[atlas.MODEL_PICK_KEY] = ref.member
    elif alias is not None and is_miniature(*alias):
        state[SOURCE_KEY], state["miniature_layers"], state["miniature_width"] = MINIATURE, *alias
    else:
        state[SOURCE_KEY], state["model_custom"] = CUSTOM, name


def _open(name: str) -> None:
    bar = st.progress(0.0, text=f"Opening {name}")
    try:
        data.open_model(name, data.bar_progress(bar, name))
    except (SpecboundError, OSError) as exc:
        st.session_state[data.ERROR_KEY] = f"Could not open {name}: {exc}. Still showing {data.current_model()}."
        return
    finally:
        bar.empty()
    # The picker above was drawn before the download: draw it again with the model marked as cached.
    st.rerun()


def _shape_summary(analysis: BoundAnalysis) -> None:
    shape = analysis.profile.shape
    st.markdown(f"**Current model:** `{atlas.display_name(data.current_model())}`")
    st.caption(
        f"L = {shape.num_layers} layers · N = {shape.hidden_size} · {shape.num_heads} heads of "
        f"d = {shape.head_dim} · d_ff = {shape.ffn_size}  \n"
        f"{shape.num_matrices} proxy matrices · grid P_m with m = {analysis.grid_m}"
    )


def render_sidebar() -> BoundAnalysis:
    """Draw the model picker and return the analysis of the model the pages should show."""
    with st.sidebar:
        st.header("Model")
        labels = [source.label for source in MODEL_SOURCES]
        chosen = st.radio("Source", labels, key=SOURCE_KEY)
        name = MODEL_SOURCES[labels.index(chosen)].pick()
        if st.button("Open model", key="open_model", disabled=not name, type="primary") and name:
            _open(name)
        if message := st.session_state.get(data.ERROR_KEY):
            st.error(message)
        try:
            analysis = data.current_analysis(on_error=st.error)
        except SpecboundError as exc:  # not even the bundled model opens: nothing to show
            st.error(f"No model can be opened: {exc}")
            st.stop()
        _shape_summary(analysis)
    return analysis
