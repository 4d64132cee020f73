"""The reference sweep shipped inside the package: results of the ``class`` preset, without weights.

Layout of ``specbound/lab/reference/`` (the same layout as a lab directory, minus the checkpoints)::

    manifest.json                 what this is (small encoders trained by the lab, not BERT Miniatures),
                                  the task, the command that regenerates it, the sweep's wall time (when
                                  the whole sweep ran in the exporting command) and its training time
    runs/<run>/trajectory.json    every run's record (errors and bound terms at every saved step)
    runs/<run>/profiles.npz       an atlas of the spectral profiles of every saved step of that run, named
                                  ``<run>@<step>`` (the Lab page's step slider and "open as a model")
    runs.csv, correlations.csv    as in any lab directory; the checkpoint column names weights not shipped
    atlas.npz                     spectral profiles of the final checkpoints of the depth x width family
                                  (noise 0, first seed, largest n), named by their run (``lab-L2-N64-...``)

One atlas per run keeps each file far below the atlas's model limit and lets a page read only the run
it shows. Regenerate with ``specbound lab sweep --preset class --out DIR --export-reference`` (``make lab-reference``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._version import __version__
from ..atlas import atlas_member, save_atlas
from ..files import atomic_write, describe_os_error, read_json
from ..limits import LIMITS
from ..loading import load_profile
from ..profile import SpectralProfile
from .sweep import LAB_LABEL, RUNS_DIR, LabResults, read_results, read_runs, write_record, write_tables
from .train import LabError
from .trajectory import RunTrajectory

REFERENCE_DIR = Path(__file__).parent / "reference"
MANIFEST_FILE = "manifest.json"
ATLAS_FILE = "atlas.npz"
#: The atlas of one run's saved steps, beside its record.
STEPS_ATLAS_FILE = "profiles.npz"
#: Between a run's name and a step in the name of a step's profile (``lab-L2-...@500``).
STEP_SEP = "@"
REFERENCE_FORMAT = "specbound-lab-reference"
REGENERATE = "specbound lab sweep --preset class --out DIR --export-reference"


def family(runs: tuple[RunTrajectory, ...]) -> tuple[RunTrajectory, ...]:
    """One run per (layers, hidden): noise 0 (else the least), the smallest seed, the largest n."""
    chosen: dict[tuple[int, int], RunTrajectory] = {}
    for run in runs:
        s = run.spec
        key = (s.layers, s.hidden)
        best = chosen.get(key)
        rank = (s.label_noise, s.seed, -s.n_train, s.heads)
        if best is None or rank < (best.spec.label_noise, best.spec.seed, -best.spec.n_train, best.spec.heads):
            chosen[key] = run
    return tuple(chosen[k] for k in sorted(chosen))


def step_member(run: str, step: int) -> str:
    """The name of a run's profile at one saved step, as stored in its steps atlas."""
    return f"{run}{STEP_SEP}{step}"


def _renamed(profile: SpectralProfile, run: str, step: int) -> SpectralProfile:
    """A checkpoint's profile named after its run and step, so no file path travels with it."""
    return replace(profile, model=step_member(run, step), revision=f"lab-step-{step}")


def step_profile(directory: Path | str, run: RunTrajectory, step: int) -> SpectralProfile:
    """The spectral profile of ``run`` at a saved ``step`` of the lab directory ``directory``.

    From the run's steps atlas when the directory has one (the shipped reference, which has no
    weights), else from the saved checkpoint through the profile cache (a directory the lab trained
    into). Either way it is named ``<run>@<step>``. LabError if the step was not saved.
    """
    record = next((s for s in run.steps if s.step == step), None)
    if record is None:
        raise LabError(f"{run.name} has no saved step {step} (saved: {', '.join(str(s.step) for s in run.steps)})")
    run_dir = Path(directory) / RUNS_DIR / run.name
    steps_atlas = run_dir / STEPS_ATLAS_FILE
    if steps_atlas.is_file():
        return atlas_member(steps_atlas, step_member(run.name, step))
    return _renamed(load_profile(str(run_dir / record.checkpoint)), run.name, step)


def _earlier_sweep_seconds(dest: Path, runs: int, training_seconds: float) -> float | None:
    """The wall time recorded by an earlier export of the same runs into ``dest``, else None.

    Re-exporting a finished sweep (to add a file to the reference) resumes it without training, so
    the exporting command cannot time it; the same runs with the same training time are the same sweep.
    """
    try:
        earlier = read_manifest(dest)
    except (OSError, ValueError):
        return None
    same = earlier.get("runs") == runs and earlier.get("training_seconds") == training_seconds
    value = earlier.get("sweep_seconds")
    return float(value) if same and isinstance(value, (int, float)) else None


def export_reference(
    sweep_dir: Path | str, dest: Path | str = REFERENCE_DIR, *, sweep_seconds: float | None = None
) -> tuple[Path, ...]:
    """Write the reference (records, tables, atlas, manifest) of a finished sweep into ``dest``, replacing it.

    The family's profiles come from their final checkpoints through the profile cache and are renamed
    to their run names, so the atlas never carries a local path.
    """
    sweep_dir, dest = Path(sweep_dir), Path(dest)
    runs = read_runs(sweep_dir)
    if not runs:
        raise ValueError(f"{sweep_dir} holds no finished run to export")
    training_seconds = round(sum(r.seconds for r in runs), 1)
    if sweep_seconds is None:
        sweep_seconds = _earlier_sweep_seconds(dest, len(runs), training_seconds)
    members = family(runs)
    profiles = [
        replace(
            load_profile(str(sweep_dir / RUNS_DIR / r.name / r.final.checkpoint)),
            model=r.name,
            revision=f"lab-step-{r.final.step}",
        )
        for r in members
    ]
    if (dest / RUNS_DIR).exists():
        shutil.rmtree(dest / RUNS_DIR)
    files = [write_record(dest, run) for run in runs]
    for run in runs:  # every saved step, so the Lab page can show the spectra along the trajectory
        run_dir = sweep_dir / RUNS_DIR / run.name
        files.append(
            save_atlas(
                [_renamed(load_profile(str(run_dir / s.checkpoint)), run.name, s.step) for s in run.steps],
                dest / RUNS_DIR / run.name / STEPS_ATLAS_FILE,
            )
        )
    files += write_tables(dest, runs)
    files.append(save_atlas(profiles, dest / ATLAS_FILE))
    manifest: dict[str, Any] = {
        "format": REFERENCE_FORMAT,
        "label": LAB_LABEL,
        "created_by": f"specbound {__version__}",
        "description": "Small BERT encoders (transformers' BertForSequenceClassification) trained by the "
        "specbound lab on a synthetic task; results and spectral profiles only, no weights.",
        "task": runs[0].spec.task.describe(),
        "runs": len(runs),
        "regenerate": REGENERATE,
        "sweep_seconds": sweep_seconds,
        "training_seconds": training_seconds,
        "atlas_models": [r.name for r in members],
        "step_atlases": f"{RUNS_DIR}/<run>/{STEPS_ATLAS_FILE}, members <run>{STEP_SEP}<step>",
        "weights_shipped": False,
    }
    with atomic_write(dest / MANIFEST_FILE) as f:
        f.write(json.dumps(manifest, indent=1, allow_nan=False).encode("utf-8"))
    return (dest / MANIFEST_FILE, *files)


def read_manifest(directory: Path | str = REFERENCE_DIR) -> dict[str, Any]:
    """The reference's manifest (ValueError if it is missing or not a lab reference)."""
    try:
        data = read_json(Path(directory) / MANIFEST_FILE, MANIFEST_FILE, LIMITS.max_manifest_bytes)
    except OSError as exc:
        raise ValueError(f"cannot read the lab reference's {MANIFEST_FILE}: {describe_os_error(exc)}") from None
    if not isinstance(data, dict) or data.get("format") != REFERENCE_FORMAT:
        raise ValueError(f"{directory} is not a specbound lab reference")
    return data


def load_reference(directory: Path | str = REFERENCE_DIR) -> LabResults:
    """The shipped runs and correlations (read from their records, as any lab directory)."""
    return read_results(directory)
