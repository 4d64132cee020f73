"""The session's baseline: another opened model, or the random-initialised twin of one, pinned for comparison.

The baseline lives in the session state (key :data:`BASELINE_KEY`) and in the link, like a widget: a
model travels as its link form (:func:`dashboard.state.atlas.link_form`), a twin as ``twin:`` and the link
form of the model it copies. A twin is made in memory by :func:`specbound.studies.twin.random_twin_of` with
the model's own ``initializer_range`` (its config's, which the spectral profile's shape records; BERT's
0.02 for a profile that does not say) and the default seed, and cached for every session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from dashboard import safety
from dashboard.safety import ServerPathRefused
from dashboard.state import atlas, data, session, share
from dashboard.wording.text import plain
from specbound.core.bounds import BoundAnalysis
from specbound.core.defaults import BERT_INITIALIZER_RANGE, DIRECTIONS, TWIN_SEED
from specbound.core.directions import Directions
from specbound.core.errors import SpecboundError
from specbound.io.models import ATLAS_PREFIX, short_model_name
from specbound.studies.twin import random_twin_of, twin_name

#: Session-state key (and link parameter) of the baseline.
BASELINE_KEY = "baseline"
#: How a twin is written in a link: ``twin:<model>``.
TWIN_PREFIX = "twin:"
#: Button keys.
PIN_KEY, TWIN_KEY, CLEAR_KEY = "baseline_pin", "baseline_twin", "baseline_clear"
#: Key (and link parameter) of the Bound explorer's section with these buttons, drawn only when opened.
CONTROLS_SECTION_KEY = "show_baseline"


@dataclass(frozen=True)
class Baseline:
    """A model to compare against: ``model`` itself, or (``twin``) its random-initialised twin."""

    model: str
    twin: bool = False


def _parse(text: str) -> Baseline:
    """A baseline from a link, through the visitor rules of :func:`dashboard.safety.model_ref` like every
    name a visitor gives, so under the same rule as the link's ``model=``: a directory on the server
    opens only where the operator allows server paths (a link the app writes is a link it reopens).
    A refused one raises ValueError saying why (:func:`link_refusal` shows it on the Compare page)."""
    twin = text.startswith(TWIN_PREFIX)
    name = atlas.from_link(text.removeprefix(TWIN_PREFIX).strip())
    if not name:
        raise ValueError("it names no model")
    try:
        safety.model_ref(name)
    except ServerPathRefused as exc:
        raise ValueError(safety.public_message(exc)) from None
    except SpecboundError:
        pass  # a Hub id that may not exist: opening it says so
    return Baseline(name, twin)


def _format(baseline: Baseline) -> str:
    return (TWIN_PREFIX if baseline.twin else "") + atlas.link_form(baseline.model)


BASELINE_CODEC = share.Codec(_parse, _format)


def model_initializer_range(model: str) -> float:
    """σ of the model's weight initialisation, from its profile's shape (which read it from the config);
    BERT's default when the model cannot be opened. The model goes through the visitor rules of
    :func:`dashboard.state.data.analysis_for`, like every name a visitor gives."""
    try:
        return data.analysis_for(model).profile.shape.initializer_range
    except (SpecboundError, OSError):
        return BERT_INITIALIZER_RANGE


@st.cache_resource(show_spinner=False, max_entries=8)
def twin_analysis(model: str, sigma: float, seed: int = TWIN_SEED) -> BoundAnalysis:
    """The analysis of the random-initialised twin of ``model`` (shape from its profile), shared by sessions."""
    return BoundAnalysis.from_profile(random_twin_of(data.profile_for(model), initializer_range=sigma, seed=seed))


def name_of(baseline: Baseline) -> str:
    """How the baseline is named on screen: the model, or "random twin of MODEL (seed 0, σ = 0.02)"."""
    shown = atlas.display_name(baseline.model)
    return twin_name(shown, model_initializer_range(baseline.model), TWIN_SEED) if baseline.twin else shown


def analysis_of(baseline: Baseline) -> BoundAnalysis:
    """The baseline's analysis (a cache hit after the first time); raises SpecboundError if it cannot open."""
    if baseline.twin:
        return twin_analysis(baseline.model, model_initializer_range(baseline.model))
    return data.analysis_for(baseline.model)


def current() -> Baseline | None:
    """The session's baseline (declared shareable here), or None."""
    baseline: Baseline | None = share.shared(BASELINE_KEY, BASELINE_CODEC, None)
    return baseline


def pinned_analysis(on_error: Callable[[str], object] = st.warning) -> tuple[Baseline, BoundAnalysis] | None:
    """(baseline, its analysis), or None when there is none or it cannot be opened (then it is dropped)."""
    baseline = current()
    if baseline is None:
        return None
    try:
        with st.spinner(f"Preparing the baseline {plain(name_of(baseline))}"):
            return baseline, analysis_of(baseline)
    except (SpecboundError, OSError) as exc:
        on_error(
            f"The baseline {plain(name_of(baseline))} cannot be opened here "
            f"({plain(safety.public_message(exc))}); it was dropped."
        )
        st.session_state[BASELINE_KEY] = None
        return None


def link_refusal() -> str | None:
    """Why the link's ``baseline=`` was not used, in a sentence for the page; None when it was, or
    when the link named none. Once the visitor pins a baseline of their own it is not said again."""
    reason = share.refusal(BASELINE_KEY)
    return None if reason is None else f"The link's baseline was not used: {reason}."


def _set(baseline: Baseline | None) -> None:
    share.forget_refusal(BASELINE_KEY)
    st.session_state[BASELINE_KEY] = baseline


def controls() -> None:
    """Buttons: pin the current model, make its random-initialised twin the baseline, clear the baseline."""
    model = session.current_model()
    pinned = current()
    with st.container(horizontal=True):  # buttons wrap onto a second line on a narrow screen
        st.button(
            f"Pin {atlas.display_name(model)} as the baseline",
            key=PIN_KEY,
            on_click=_set,
            args=(Baseline(model),),
            disabled=pinned == Baseline(model),
        )
        st.button(
            "Compare with its random-initialised twin",
            key=TWIN_KEY,
            on_click=_set,
            args=(Baseline(model, twin=True),),
            disabled=pinned == Baseline(model, twin=True),
            type="primary",
            help=f"Same shape, weights drawn from N(0, σ²) with σ = {model_initializer_range(model):g} "
            f"(initializer_range), seed {TWIN_SEED}: an untrained model made in memory.",
        )
        st.button("Clear the baseline", key=CLEAR_KEY, on_click=_set, args=(None,), disabled=pinned is None)


def centred_reading(model: str, pinned: Baseline, base_analysis: BoundAnalysis) -> BoundAnalysis | str:
    """The open model's bound centred at the pinned baseline (SPEC §14), or why there is none: a twin
    is made of spectra, not weights; an atlas holds no weights; a baseline of another family or shape
    is no reference for this model's weights."""
    from specbound.io.centred import check_reference

    if pinned.twin:
        return "the random-initialised twin is drawn as spectra, without weights to subtract"
    if any(name.startswith(ATLAS_PREFIX) for name in (model, pinned.model)):
        return "an atlas keeps spectra, not weights, so the difference of the two cannot be formed"
    try:
        check_reference(
            data.analysis_for(model).profile.shape, base_analysis.profile.shape, "the open model", "the baseline"
        )
        with st.spinner(f"Subtracting {plain(name_of(pinned))} from the open model, layer by layer"):
            return data.centred_for(model, pinned.model)
    except (SpecboundError, OSError) as exc:
        return safety.public_message(exc)


def directions_reading(model: str, pinned: Baseline) -> Directions | str:
    """Where the open model's singular vectors moved from the pinned baseline's (SPEC §14b), or why that
    is not known; asked for only once :func:`centred_reading` found the baseline a reference."""
    try:
        with st.spinner(f"Comparing the singular vectors of the open model with {plain(name_of(pinned))}'s"):
            return data.directions_for(model, pinned.model)
    except (SpecboundError, OSError) as exc:
        return safety.public_message(exc)


#: Key (and link parameter) of the Compare page's switch that also compares singular vectors.
DIRECTIONS_KEY = "directions"


def directions_wanted() -> bool:
    """Whether the Compare page also compares singular vectors (SPEC §14b): the value of its switch
    (:func:`directions_switch`), shared in the link, by default the library's
    (:data:`~specbound.core.defaults.DIRECTIONS`, as ``analyze(..., directions=...)`` and ``--no-directions``).
    Read before the comparison is built, since it decides what the comparison computes; the switch is
    drawn later, beside the maps it governs."""
    wanted: bool = share.shared(DIRECTIONS_KEY, share.BOOL, DIRECTIONS)
    return wanted


def directions_switch() -> None:
    """The Compare page's switch for the comparison of singular vectors (its value: :func:`directions_wanted`)."""
    st.toggle(
        "Where the weights point: compare singular vectors",
        key=DIRECTIONS_KEY,
        help="Intruder dimensions per matrix and head: the top singular vectors of the open model "
        "against the baseline's. This comparison takes longer than the centred reading itself; switched "
        "off, the map of intruders is not drawn and everything else stays as it is. Kept in the link.",
    )


#: Key (and link parameter) of the Bound explorer's switch to the bound centred at the baseline.
CENTRED_KEY = "centred"


def explorer_centring(model: str) -> tuple[BoundAnalysis, str] | None:
    """The Bound explorer's switch "centred at the baseline" (shared in the link), drawn only where the
    pinned baseline offers a centred reading of ``model``: (the centred analysis, the baseline's name)
    when it is on, else None. Every term, slider and figure of the page then reads S_p of W - W⁰."""
    pinned = current()
    share.shared(CENTRED_KEY, share.BOOL, False)
    if pinned is None:
        return None
    try:
        base_analysis = analysis_of(pinned)
    except (SpecboundError, OSError):
        return None
    reading = centred_reading(model, pinned, base_analysis)
    if isinstance(reading, str):
        return None
    name = name_of(pinned)
    on = st.toggle(
        f"Centred at the baseline, {plain(short_model_name(name))}",
        key=CENTRED_KEY,
        help="S_p, rank and p* of the difference W − W⁰ from the baseline; the scales s_W of the open "
        "model's weights. A matrix left unchanged adds nothing.",
    )
    return (reading, name) if on else None
