"""The Training runs page's data: trajectories of real runs, from the operator's directory or an upload.

A trajectory is an atlas whose members are named ``NAME@STEP`` (what ``specbound trajectory`` and the
Trainer callback write, :mod:`specbound.api.runs`). The operator may name a directory when starting the
server (``SPECBOUND_RUNS_DIR``): every ``*.npz`` trajectory in it and in its subdirectories is
offered, with the losses of the ``trajectory.csv`` beside it (a row or a value that is not a step or
a number is left out, never the page). Run names are shown with any absolute path cut to its last
part, as every message is (:func:`dashboard.safety.redact_paths`). A visitor may upload a trajectory atlas
(through the same store and checks as every atlas upload) but never names a path. The numbers of each
step come from its stored spectra only (:func:`specbound.api.runs.step_row`).

The package ships runs too (:func:`shipped_runs`), so a visitor without network sees real trajectories:
the grokking preset's three seeds and one run per depth x width of each shipped lab sweep, each with the
lab's record (errors and losses measured at every saved step) beside its spectra.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.safety import redact_paths
from dashboard.state import atlas
from dashboard.wording.vocabulary import run_name
from specbound.api.analysis import Analysis
from specbound.api.runs import ATLAS_FILE, TABLE_FILE, parse_step, step_row, steps_of
from specbound.core.bounds import BoundAnalysis
from specbound.core.profile import SpectralProfile
from specbound.io.atlas import AtlasError, load_atlas
from specbound_lab import reference as lab_reference
from specbound_lab.trajectory import RunTrajectory

#: Environment variable naming the operator's directory of trajectories (read when a page asks).
RUNS_DIR_ENV = "SPECBOUND_RUNS_DIR"
#: How deep below that directory trajectories are looked for, and how many are listed at most.
MAX_DEPTH, MAX_RUNS = 2, 64
#: Where an uploaded trajectory and a run the package ships come from, in the run picker.
UPLOADED, SHIPPED = "uploaded", "shipped"


@dataclass(frozen=True)
class Run:
    """One run: its name, where it came from (the operator's directory or an upload), its steps."""

    name: str
    origin: str
    steps: dict[int, SpectralProfile]
    logged: dict[int, dict[str, float]]  # step -> loss, eval_loss (from trajectory.csv)
    #: the lab's record of a shipped run (its measured errors and losses), None for any other run
    lab: RunTrajectory | None = None
    #: what the run's content is: its file and modification time, or the stored upload it came from.
    #: Two runs of one name (a trajectory rewritten in place, another upload) are two entries of the
    #: page's caches, so a step is never drawn from another run's spectra.
    version: str = ""

    @property
    def shown(self) -> str:
        """How the run is named on screen and in file names: a lab run by its words, never its run id
        (:func:`~dashboard.wording.vocabulary.run_name`; an upload of a lab run's steps too,
        :func:`~dashboard.state.atlas.shown_member`), any other by its name."""
        return run_name(self.lab.spec) if self.lab is not None else atlas.shown_member(self.name)

    @property
    def key(self) -> str:
        """The run as the picker and a link name it: where it comes from and its name."""
        return f"{self.origin}:{self.name}"

    @property
    def cache_key(self) -> str:
        """The run's content, for the page's caches (:attr:`key` and :attr:`version`)."""
        return f"{self.key}#{self.version}"


def runs_dir() -> Path | None:
    value = os.environ.get(RUNS_DIR_ENV, "").strip()
    return Path(value).expanduser() if value else None


def _trajectory_files(root: Path) -> list[Path]:
    found: list[Path] = []
    for depth in range(MAX_DEPTH + 1):
        found += sorted(p for p in root.glob("/".join(["*"] * depth + ["*.npz"])) if p.is_file())
    return found[:MAX_RUNS]


@st.cache_data(show_spinner=False, max_entries=64)
def _load(path: str, mtime_ns: int) -> tuple[SpectralProfile, ...]:
    return tuple(load_atlas(Path(path)))


def _logged(table: Path) -> dict[int, dict[str, float]]:
    """step -> the finite ``loss`` / ``eval_loss`` of a trajectory.csv; a row whose step is not a
    step (:func:`~specbound.api.runs.parse_step`) and a value that is not a finite number are left out,
    so one edited table costs its own numbers, never the page."""
    try:
        if not table.is_file():
            return {}
        frame = pd.read_csv(table, nrows=100_000, dtype=str, keep_default_na=False)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError):
        return {}
    if "step" not in frame.columns:
        return {}
    columns = [c for c in ("loss", "eval_loss") if c in frame.columns]
    logged: dict[int, dict[str, float]] = {}
    for _, row in frame.iterrows():
        step = parse_step(row["step"])
        if step is not None:
            logged[step] = {c: value for c in columns if (value := _finite(row[c])) is not None}
    return logged


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def operator_runs() -> list[Run]:
    """The trajectories in the operator's directory (none when it is not set or not readable)."""
    root = runs_dir()
    if root is None or not root.is_dir():
        return []
    runs = []
    for path in _trajectory_files(root):
        try:
            mtime_ns = path.stat().st_mtime_ns
            profiles = _load(str(path), mtime_ns)
        except (AtlasError, OSError):
            continue  # not a trajectory atlas, or unreadable: not offered
        logged = _logged(path.with_name(TABLE_FILE)) if path.name == ATLAS_FILE else {}
        for name, steps in steps_of(profiles).items():
            if len(steps) >= 1:
                runs.append(Run(redact_paths(name), "server", steps, logged, version=f"{path}@{mtime_ns}"))
    return runs


@st.cache_resource(show_spinner=False)
def shipped_runs() -> tuple[Run, ...]:
    """The runs the package ships: every seed of the grokking reference, then one run per depth x width
    of the decoder and threshold sweeps (:func:`specbound_lab.reference.family`), with their saved
    steps' spectra and the training and test losses the lab measured there."""
    runs: list[Run] = []
    order = (lab_reference.GROKKING_REFERENCE, lab_reference.DECODER_REFERENCE, lab_reference.THRESHOLD_REFERENCE)
    for shipped in order:
        if not (shipped.directory / "runs").is_dir():
            continue
        records = lab_reference.load_reference(shipped.directory).runs
        chosen = records if shipped is lab_reference.GROKKING_REFERENCE else lab_reference.family(records)
        for record in chosen:
            path = shipped.directory / "runs" / record.name / lab_reference.STEPS_ATLAS_FILE
            steps = steps_of(_load(str(path), path.stat().st_mtime_ns)).get(record.name, {})
            logged = {
                s.step: {"loss": s.train_loss, "eval_loss": s.test_loss}
                for s in record.steps
                if math.isfinite(s.train_loss) and math.isfinite(s.test_loss)
            }
            runs.append(Run(record.name, SHIPPED, steps, logged, record, version=shipped.key))
    return tuple(runs)


def uploaded_runs(profiles: tuple[SpectralProfile, ...], version: str = "") -> list[Run]:
    """The runs of an uploaded trajectory atlas; ``version`` names the stored upload (its content)."""
    return [Run(redact_paths(name), UPLOADED, steps, {}, version=version) for name, steps in steps_of(profiles).items()]


@st.cache_data(show_spinner=False, max_entries=32)
def trajectory_csv_frame(key: str, _run: Run) -> pd.DataFrame:
    """One row per step of a run (the columns of trajectory.csv), from its stored spectra; ``key`` is
    the run's :attr:`~Run.cache_key`."""
    rows = [
        step_row(step, Analysis(BoundAnalysis.from_profile(profile)), _run.logged.get(step))
        for step, profile in _run.steps.items()
    ]
    return pd.DataFrame(rows)


@st.cache_resource(show_spinner=False, max_entries=32)
def step_analysis(key: str, step: int, _profile: SpectralProfile) -> BoundAnalysis:
    """The bound of one step (``key``: the run's :attr:`~Run.cache_key`)."""
    return BoundAnalysis.from_profile(_profile)
