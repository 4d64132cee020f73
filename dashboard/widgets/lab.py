"""What the Lab page draws that needs Streamlit itself: the training progress panel, the "Open as a model"
button (the Why page offers the same for a shipped run whose p* vary) and the correlation table's column
help.

The tables and figures are plain values from :mod:`dashboard.views.lab`; these widgets only draw them or
act on a click through :mod:`dashboard.services.lab`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import streamlit as st

from dashboard import safety
from dashboard.services import lab as service
from dashboard.services.jobs import JobState
from dashboard.state import choices
from dashboard.widgets.sidebar import show_in_picker
from dashboard.widgets.tables import column_width
from dashboard.wording.text import plain
from dashboard.wording.vocabulary import measure_name, run_name
from specbound.core.errors import SpecboundError
from specbound_lab.registry import correlated_measures

#: Session-state key of an error met by "Open as a model" (shown once, on the next run).
OPEN_ERROR_KEY = "lab_open_error"
#: How often the page looks at a running job (seconds).
POLL_SECONDS: float = 1.0


def open_as_model(key: str, step: int) -> None:
    """Button callback: the run ``key`` at ``step`` becomes the session's model on every page, and the
    sidebar's picker shows it (a callback runs before the next script run, so the picker can still be
    set). A failure is kept for :func:`open_error` to show once."""
    try:
        show_in_picker(service.open_step(key, step))
    except (SpecboundError, OSError) as exc:
        # the OS error of a store file names its path: one redaction for every message a visitor sees
        message = safety.public_message(exc)
        choices.hold(OPEN_ERROR_KEY, f"Could not open {service.split_key(key)[1]} at step {step}: {message}")


def open_error() -> None:
    """The error the last "Open as a model" met, in an error box, once."""
    if message := choices.take(OPEN_ERROR_KEY):
        st.error(plain(message))


def open_varied_button() -> None:
    """On the Why page, when every matrix of the model takes one p*: a button that opens the shipped lab
    run whose final checkpoint takes the most distinct p* (none when no shipped run has two)."""
    varied = service.varied_p_star_run()
    if varied is not None:
        key, step = varied
        run = service.available_runs().get(key)
        named = run_name(run.spec, step) if run is not None else f"{service.split_key(key)[1]}, step {step}"
        st.button(
            "Open a model where p* varies",
            key="why_open_varied",
            on_click=open_as_model,
            args=(key, step),
            help=f"A small Transformer trained by the lab and shipped with specbound ({named}), whose matrices "
            "take different p*.",
        )
    open_error()


@st.fragment(run_every=POLL_SECONDS)
def progress_panel() -> None:
    """This session's running job: a bar and a Cancel button, polled; a full rerun when it ends."""
    job = service.session_job()
    if job is None:
        return
    status = job.status()
    if status.state is not JobState.RUNNING:
        st.rerun()  # the whole page: the finished run joins the picker
    cancelling = job.cancel_event.is_set()
    st.progress(status.fraction, text=f"{job.name}: {'cancelling…' if cancelling else status.text}")
    st.button(
        "Cancel",
        key="lab_cancel",
        on_click=job.cancel,
        disabled=cancelling,
        help="Stop training at the next step; nothing of this run is kept.",
    )


def correlation_columns(columns: Iterable[str]) -> dict[str, Any]:
    """Readable headers (and help) for the correlation table's ``columns`` (:func:`dashboard.views.lab_tables.
    correlation_table`): intervals, ψ and groups per axis too."""
    number, text = st.column_config.NumberColumn, st.column_config.TextColumn
    definitions = "; ".join(f"{m.name}: {m.definition}" for m in correlated_measures())
    config: dict[str, Any] = {
        # as wide as the longest name, and in view while the τ and ψ columns scroll sideways
        "measure": text(
            "Measure",
            help=f"{definitions} (see the manual, docs/lab).",
            width=column_width("Measure", (measure_name(m.name) for m in correlated_measures())),
            pinned=True,
        ),
        "kendall_tau": number("Kendall τ", help="τ-b with the gap over all runs."),
        "granulated_tau": number(
            "Granulated τ",
            help="Jiang et al. (2020): mean over axes of the mean τ among runs differing in that axis alone.",
        ),
        "runs": number("Runs", help="Runs with a finite measure and gap."),
        "kendall_tau_ci_low": number("τ 95 % low", help="Percentile bootstrap over runs."),
        "kendall_tau_ci_high": number("τ 95 % high", help="Percentile bootstrap over runs."),
        "granulated_tau_ci_low": number(
            "granulated 95 % low", help="Percentile bootstrap over the groups of every axis."
        ),
        "granulated_tau_ci_high": number(
            "granulated 95 % high", help="Percentile bootstrap over the groups of every axis."
        ),
        "kendall_tau_a": number("τ-a", help="Ties count as neither agreement nor disagreement."),
        "groups": number("Groups", help="Groups behind the granulated τ, over all axes."),
    }
    for column in columns:
        if column.startswith("psi_") and column.endswith(("_ci_low", "_ci_high")):
            axis = column.removeprefix("psi_").removesuffix("_ci_low").removesuffix("_ci_high")
            end = "low" if column.endswith("_ci_low") else "high"
            config[column] = number(f"ψ {axis} 95 % {end}", help="Bootstrap over this axis's groups.")
        elif column.startswith("psi_"):
            config[column] = number(
                f"ψ {column.removeprefix('psi_')}",
                help="Mean τ-a among runs that differ in this axis alone (empty: no group).",
            )
        elif column.startswith("groups_"):
            config[column] = number(f"groups {column.removeprefix('groups_')}")
    return config
