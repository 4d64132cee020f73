"""The shared sidebar: where the model comes from, opening it with progress, and its shape.

Model sources are a list of :class:`ModelSource`: a label and a function that draws the source's
own inputs and returns the model name to open. Adding a source is one more entry in
``MODEL_SOURCES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import streamlit as st

from dashboard import safety
from dashboard.state import adapters, atlas, baseline, data, session
from dashboard.widgets import atlas_files
from dashboard.wording import vocabulary
from dashboard.wording.text import adapted_proxy_note, code, plain
from specbound.core.bounds import BoundAnalysis
from specbound.core.defaults import DEFAULT_MODEL
from specbound.core.errors import SpecboundError
from specbound.core.limits import format_megabytes
from specbound.io import checkpoints, loading
from specbound.io.families import FAMILY_NAMES, family_name
from specbound.io.models import (
    MINIATURE_LAYERS,
    MINIATURE_WIDTHS,
    CatalogEntry,
    is_miniature,
    miniature_alias,
    parse_miniature_alias,
    short_model_name,
)
from specbound.present.report import ffn_widths

CACHED_MARK, DOWNLOAD_MARK = "●", "○"


@dataclass(frozen=True)
class ModelSource:
    """One way of choosing a model: a label for the picker and the inputs that name the model."""

    label: str
    pick: Callable[[], str | None]  # draws its widgets; returns a model name, or None if incomplete


def _pick_bundled() -> str:
    st.caption("all-MiniLM-L6-v2 (L = 6, N = 384, 12 heads), shipped as a Python package: it opens with no network.")
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
    cached = {(e.num_layers, e.hidden_size): e.available_offline for e in data.catalog_entries() if e.is_miniature}
    left, right = st.columns(2)
    layers = left.selectbox("Depth L", MINIATURE_LAYERS, index=1, key="miniature_layers")
    width = right.selectbox(
        "Width N", MINIATURE_WIDTHS, index=1, key="miniature_width", help=vocabulary.help_for("width")
    )
    st.markdown(miniature_grid_markdown(cached, (layers, width)))
    st.caption(
        f"{CACHED_MARK} cached, opens offline · {DOWNLOAD_MARK} downloaded from the Hugging Face "
        f"Hub when opened (`google/bert_uncased_L-*_H-*`)"
    )
    _offline_note(cached.get((layers, width), False))
    return miniature_alias(layers, width)


#: Where the server looks to tell whether the Hugging Face Hub can be reached.
HUB_HOST, HUB_PORT, HUB_TIMEOUT_S = "huggingface.co", 443, 1.5


@st.cache_data(ttl=300, show_spinner=False)
def hub_reachable() -> bool:
    """Whether this server can reach the Hugging Face Hub now (asked at most every five minutes)."""
    import socket

    if checkpoints.offline_mode():
        return False
    try:
        with socket.create_connection((HUB_HOST, HUB_PORT), timeout=HUB_TIMEOUT_S):
            return True
    except OSError:
        return False


def _offline_note(available_offline: bool) -> None:
    """Before any click: say that this server has no network, when a model would need it."""
    if not available_offline and not hub_reachable():
        st.warning(OFFLINE_NOTE, icon=":material/cloud_off:")


#: What a visitor reads when a model would need the Hub and the server cannot reach it.
OFFLINE_NOTE = (
    "This server cannot reach the Hugging Face Hub now, so models marked ○ cannot be opened here. "
    "The bundled model, the models marked ● and atlas files work offline."
)


def _other_family_entries() -> dict[str, CatalogEntry]:
    """The catalog's models of the other families, by Hub id."""
    return {e.repo_id: e for e in data.catalog_entries() if not e.is_miniature and e.name != DEFAULT_MODEL}


def _other_family_label(entry: CatalogEntry) -> str:
    mark = CACHED_MARK if entry.available_offline else DOWNLOAD_MARK
    return f"{mark} {entry.repo_id} ({family_name(entry.family)}, L = {entry.num_layers}, N = {entry.hidden_size})"


def _pick_other_family() -> str:
    entries = _other_family_entries()
    chosen = st.selectbox(
        "Model", list(entries), format_func=lambda repo: _other_family_label(entries[repo]), key="other_family_model"
    )
    st.caption(
        f"Decoders, mixtures of experts, a vision encoder and encoder-decoders, read through their "
        f"family's adapter (adapted proxies: the model card says how). {CACHED_MARK} cached, opens "
        f"offline · {DOWNLOAD_MARK} downloaded from the Hugging Face Hub when opened, after its size is shown."
    )
    _offline_note(entries[chosen].available_offline)
    return str(chosen)


def _pick_custom() -> str | None:
    paths = safety.server_paths_allowed()
    name = st.text_input(
        _custom_label(CUSTOM),
        key="model_custom",
        placeholder="owner/name or a checkpoint directory" if paths else "owner/name",
        help=f"A model of a supported family ({', '.join(FAMILY_NAMES.values())}) with config.json and "
        "safetensors or PyTorch weights.",
    )
    if not hub_reachable():
        st.caption(
            ":material/cloud_off: This server cannot reach the Hugging Face Hub now: "
            "only Hub models already on it open."
        )
    return _adapter_base(name.strip()) if name.strip() else None


#: Session-state keys of the base field of a LoRA adapter, and of "use the pinned baseline as its base".
ADAPTER_BASE_KEY, ADAPTER_PINNED_KEY = "adapter_base", "adapter_base_pinned"


def _adapter_base(name: str) -> str:
    """For a LoRA adapter directory: its base, typed or the pinned baseline, drawn below the name.

    Left empty, the adapter opens on the base its ``adapter_config.json`` records (found beside the
    adapter, in the server's working directory or on the Hub); given, the adapter is merged into that
    base, and the pair is one model (:mod:`dashboard.state.adapters`). Any other name: as it is."""
    try:
        directory = loading.adapter_directory(safety.model_ref(name))
    except SpecboundError:
        directory = None
    if directory is None:
        return name
    pinned = baseline.current()
    usable = pinned is not None and not pinned.twin
    use_pinned = st.checkbox(
        "Use the pinned baseline as its base"
        + (f" ({plain(short_model_name(baseline.name_of(pinned)))})" if usable and pinned else ""),
        key=ADAPTER_PINNED_KEY,
        disabled=not usable,
        help="Merge the adapter into the model pinned as the baseline (Compare), which is then its "
        "reference too: switch the Bound explorer to the bound centred at it."
        if usable
        else "Pin a model (not a twin) as the baseline first, on the Compare page.",
    )
    typed = st.text_input(
        "Base of this LoRA adapter",
        key=ADAPTER_BASE_KEY,
        disabled=use_pinned and usable,
        placeholder="as its adapter_config.json records it",
        help="Empty: the base_model_name_or_path the adapter records, looked for beside the adapter, in "
        "the server's working directory, then on the Hub. A model name or directory: the adapter is "
        "merged into that base instead.",
    )
    base = pinned.model if use_pinned and usable and pinned else typed.strip() or None
    return name if base is None else adapters.with_base(name, base)


def bring_your_own() -> None:
    """How to see one's own model here, saying only what this visitor can do (and what the operator can)."""
    with st.expander("Bring your own model", icon=":material/upload_file:"):
        st.markdown(
            "- **Upload an atlas file** (source *Atlas file*): an atlas holds the spectra of your models, no "
            "weights. Make it where your checkpoint is, with the command line: "
            "`specbound atlas export --models ./my-model --out mine.npz`, or from Python or a notebook: "
            "`specbound.io.atlas`.\n"
            "- **A model on the Hugging Face Hub** (source *Hub id*): type its id, `owner/name`"
            + ("." if hub_reachable() else "; this server cannot reach the Hub now.")
            + "\n"
            + (
                "- **A checkpoint folder on this server**: type its path in *Hub id or local directory*."
                if safety.server_paths_allowed()
                else "- **Whoever runs this server** can also open a checkpoint folder on it, with "
                "`SPECBOUND_ALLOW_SERVER_PATHS=1 make run` (see SECURITY.md)."
            )
        )


def _source_changed() -> None:
    """A new source: the last one's error is no longer about what the sidebar shows."""
    session.forget_error()


def visitor_advice(message: str) -> str:
    """A message about opening a model, without advice the visitor cannot follow (naming a server path)."""
    if safety.server_paths_allowed():
        return message
    for advice in ("\\" + checkpoints.LOCAL_DIRECTORY_ADVICE, checkpoints.LOCAL_DIRECTORY_ADVICE):  # escaped, plain
        message = message.replace(advice, "")
    return message


BUNDLED, MINIATURE, OTHER, CUSTOM, ATLAS = (
    "Bundled model",
    "BERT Miniature",
    "Other families",
    "Hub id or local directory",
    "Atlas file",
)
MODEL_SOURCES: list[ModelSource] = [
    ModelSource(BUNDLED, _pick_bundled),
    ModelSource(MINIATURE, _pick_miniature),
    ModelSource(OTHER, _pick_other_family),
    ModelSource(CUSTOM, _pick_custom),
    ModelSource(ATLAS, atlas_files.pick_from_atlas),
]
#: Session-state key of the source radio.
SOURCE_KEY = "model_source"


def _custom_label(label: str) -> str:
    """How a source is labelled: without local directories when visitors may not name server paths."""
    return label if label != CUSTOM or safety.server_paths_allowed() else "Hub id"


def show_in_picker(name: str) -> None:
    """Set the picker's widgets (before they are drawn) to where a person would choose ``name``.

    Used when a model is opened from a link, so the sidebar shows the model that is open.
    """
    state = st.session_state
    alias = parse_miniature_alias(name)
    if name == DEFAULT_MODEL:
        state[SOURCE_KEY] = BUNDLED
    elif (ref := atlas.atlas_ref(name)) is not None and ref.path is not None:
        if atlas.loaded_file() != ref.path.resolve():  # the session's atlas already: its label stays
            atlas.use(ref.path)
        state[SOURCE_KEY] = ATLAS
        if ref.member is not None:
            state[atlas.MODEL_PICK_KEY] = ref.member
    elif alias is not None and is_miniature(*alias):
        state[SOURCE_KEY], state["miniature_layers"], state["miniature_width"] = MINIATURE, *alias
    elif name in _other_family_entries():
        state[SOURCE_KEY], state["other_family_model"] = OTHER, name
    else:
        adapter, base = adapters.split_base(name)
        state[SOURCE_KEY], state["model_custom"] = CUSTOM, adapter
        state[ADAPTER_BASE_KEY], state[ADAPTER_PINNED_KEY] = base or "", False


def open_linked(linked: str | None) -> None:
    """Open the model a shared link names (``linked`` as the link wrote it, :func:`dashboard.state.share.restore`)
    and show it in the picker; a Hub model not here yet is only sized: a link alone never starts a
    download. A model that cannot be opened is said once, and the session keeps its model."""
    if linked is None:  # a later run, or a link without a model
        return
    model = atlas.from_link(linked)
    if not model or model == session.current_model():
        return
    # an atlas model by its file name; anything else as the link wrote it (never the upload store's path)
    shown = plain(linked if atlas.atlas_ref(model) is None else atlas.display_name(model))
    failures: list[str] = []
    with (
        st.spinner(f"Opening {shown} from the link"),
        safety.guarded(f"opening {model!r} from a link", failures.append),
    ):
        if not session.ask_before_download(model):
            session.open_model(model)
        show_in_picker(model)
    if failures:  # the link's model is dropped from the address bar by publish(): a reload does not retry
        session.fail(
            f"The link names {shown}, which cannot be opened here: {failures[0]}. "
            f"Showing {plain(atlas.display_name(session.current_model()))}."
        )


def _open(name: str, *, confirmed: bool = False) -> None:
    """Open ``name``; a Hub model that is not here yet is first sized, and downloaded once confirmed."""
    shown = plain(atlas.display_name(name))
    bar = st.progress(0.0, text=f"Opening {shown}")
    failures: list[str] = []
    try:
        with safety.guarded(f"opening {name!r} from the sidebar", failures.append):
            if not confirmed and session.ask_before_download(name):
                return  # the sidebar now shows the size and asks
            session.open_model(name, data.bar_progress(bar, atlas.display_name(name)))
    finally:
        bar.empty()
    if failures:
        session.fail(
            f"Could not open {plain(name)}: {visitor_advice(failures[0])}. "  # as typed: it opened as nothing
            f"Still showing {plain(atlas.display_name(session.current_model()))}."
        )
        return
    # The picker above was drawn before the download: draw it again with the model marked as cached.
    st.rerun()


def _confirm_download(name: str | None) -> None:
    """The size of a pending Hub download of the model in the picker, and the button that starts it."""
    pending = session.pending_download()
    if pending is None or pending.name.lower() != (name or "").strip().lower():
        return
    size = format_megabytes(pending.size_bytes)
    st.info(
        f"{plain(atlas.display_name(pending.name))} is not on this server yet: opening it downloads {size} of "
        f"weights from the Hugging Face Hub (at most {format_megabytes(pending.cap_bytes)} are allowed)."
    )
    if st.button(f"Download {size} and open", key="confirm_download"):
        session.forget_pending_download()
        _open(pending.name, confirmed=True)


def _shape_summary(analysis: BoundAnalysis) -> None:
    shape = analysis.profile.shape
    st.markdown(f"**Current model:** {code(atlas.display_name(session.current_model()))}")
    kv = f" ({shape.num_kv_heads} key/value)" if shape.num_kv_heads != shape.num_heads else ""
    experts = ""
    if shape.moe:
        shared = " + a shared one" if shape.shared_expert_size else ""
        experts = f" · {shape.num_experts} experts (top-{shape.experts_per_token}){shared}"
    stacks = (
        f" ({shape.encoder_layers} encoder and {shape.decoder_layers} decoder layers, in series)"
        if shape.encoder_decoder
        else ""
    )
    st.caption(
        f"L = {shape.num_layers} layers{stacks} · N = {shape.hidden_size} · {shape.num_heads} heads{kv} of "
        f"d = {shape.head_dim} · d_ff = {ffn_widths(shape)}{experts}  \n"
        f"{family_name(shape.family)} · {shape.num_matrices} proxy matrices · grid P_m with m = {analysis.grid_m}"
    )
    if not shape.is_bert_like:
        st.caption(plain(adapted_proxy_note(shape)))


def opening_error() -> None:
    """Why the model asked for last could not be opened, in the page's main area (where the eye is,
    and a narrow sidebar would cut it), until another opens; the page below stays usable."""
    if message := session.error():
        st.error(message)


def render_sidebar() -> BoundAnalysis:
    """Draw the model picker and return the analysis of the model the pages should show."""
    with st.sidebar:
        st.header("Model")
        labels = [source.label for source in MODEL_SOURCES]
        chosen = st.radio("Source", labels, key=SOURCE_KEY, format_func=_custom_label, on_change=_source_changed)
        name = None
        with safety.guarded(
            f"drawing the model source {chosen!r}",
            lambda message: st.error(f"This source cannot be used now: {message}"),
        ):
            name = MODEL_SOURCES[labels.index(chosen)].pick()
        clicked = st.button("Open model", key="open_model", disabled=not name, type="primary")
        if name and (clicked or atlas.take_new_upload()):  # an atlas just uploaded opens as it arrives
            session.forget_pending_download()
            _open(name)
        _confirm_download(name)
        if session.error():
            st.caption(":material/error: It could not be opened: the reason is on the page.")
        try:
            analysis = session.current_analysis(on_error=st.error)
        except Exception as exc:  # not even the bundled model opens: nothing to show
            safety.log.exception("opening the bundled model")
            st.error(f"No model can be opened: {plain(safety.public_message(exc))}")
            st.stop()
        _shape_summary(analysis)
        bring_your_own()
    return analysis
