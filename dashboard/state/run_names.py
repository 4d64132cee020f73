"""A model trained by the lab, named on screen by its run's words instead of its run id.

The lab names a run by its id, ``lab-gpt2-modular-L1-N64-H4-n2823-q0-s0-t3000`` (:attr:`RunSpec.name
<specbound_lab.train.RunSpec.name>`), and the spectra of one of its saved steps by ``RUN@STEP``
(:func:`specbound_lab.reference.step_member`): that is the member name of the atlas a step opens as
(the Lab page's "Open as a model", the Why page's "Open a model where p* varies") and of the shipped
scaling grid. Labels, subtitles, legends, buttons and file names show the run's short name instead
(:func:`dashboard.wording.vocabulary.run_name`), read from the run's record among the references the
lab ships, or among the runs trained on this server that a page opened (:func:`remember`); a name that
is no lab run's keeps its name.

Example::

    >>> # short_name("lab-gpt2-modular-L1-N64-H4-n2823-q0-s0-t3000@3000")
    >>> # 'lab GPT-2 decoder L1 N64 H4 n2823 seed 0, modular addition task, step 3000'
"""

from __future__ import annotations

import re

import streamlit as st

from dashboard.wording.vocabulary import run_name
from specbound.api.runs import parse_step
from specbound_lab.records import read_record, record_path
from specbound_lab.reference import EXPORTED, STEP_SEP
from specbound_lab.train import RunSpec

#: A lab run's id: ``lab-`` then letters, digits, dots, pluses and hyphens, never a folder separator (a link
#: may carry any member name, and this one becomes a path under a shipped reference).
RUN_ID = re.compile(r"lab-[A-Za-z0-9.+_-]+")


@st.cache_resource(show_spinner=False, max_entries=256)
def _shipped_spec(run: str) -> RunSpec | None:
    """The spec of the shipped run ``run`` from its record (one small file), or None when no reference the
    lab ships (its sweeps and its scaling grid) holds it; read once per server."""
    for shipped in EXPORTED:
        record = read_record(record_path(shipped.directory, run))
        if record is not None:
            return record.spec
    return None


@st.cache_resource(show_spinner=False)
def _trained_here() -> dict[str, RunSpec]:
    """The specs of the runs trained on this server that a page opened as a model, by run id (their
    records are in the server's store, not among the shipped references); one dict per server."""
    return {}


def remember(spec: RunSpec) -> None:
    """Name the run ``spec`` (trained on this server) by its words too, wherever its saved steps show."""
    _trained_here()[spec.name] = spec


def short_name(member: str) -> str | None:
    """The short name of the lab model named ``member`` (``RUN`` or ``RUN@STEP``), or None when it is no
    shipped lab run's."""
    run, sep, step_text = member.rpartition(STEP_SEP)
    step = parse_step(step_text) if sep else None
    if step is None:
        run = member
    if RUN_ID.fullmatch(run) is None:
        return None
    spec = _trained_here().get(run) or _shipped_spec(run)
    return None if spec is None else run_name(spec, step)
