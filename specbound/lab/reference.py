"""The reference sweep shipped inside the package: results of the ``class`` preset, without weights.

Layout of ``specbound/lab/reference/`` (the same layout as a lab directory, minus the checkpoints)::

    manifest.json                 what this is (small encoders trained by the lab, not BERT Miniatures),
                                  the task, the command that regenerates it, the sweep's wall time (when
                                  the whole sweep ran in the exporting command) and its training time
    runs/<run>/trajectory.json    every run's record (errors and bound terms at every saved step)
    runs.csv, correlations.csv    as in any lab directory; the checkpoint column names weights not shipped
    atlas.npz                     spectral profiles of the final checkpoints of the depth x width family
                                  (noise 0, first seed, largest n), named by their run (``lab-L2-N64-...``)

Regenerate with ``specbound lab sweep --preset class --out DIR --export-reference`` (``make lab-reference``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..loading import load_profile
from ..atlas import save_atlas
from ..files import atomic_write
from .sweep import LAB_LABEL, RUNS_DIR, LabResults, read_results, read_runs, write_record, write_tables
from .trajectory import RunTrajectory

REFERENCE_DIR = Path(__file__).parent / "reference"
MANIFEST_FILE = "manifest.json"
ATLAS_FILE = "atlas.npz"
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


def export_reference(sweep_dir: Path | str, dest: Path | str = REFERENCE_DIR, *,
                     sweep_seconds: float | None = None) -> tuple[Path, ...]:
    """Write the reference (records, tables, atlas, manifest) of a finished sweep into ``dest``, replacing it.

    The family's profiles come from their final checkpoints through the profile cache and are renamed
    to their run names, so the atlas never carries a local path.
    """
    sweep_dir, dest = Path(sweep_dir), Path(dest)
    runs = read_runs(sweep_dir)
    if not runs:
        raise ValueError(f"{sweep_dir} holds no finished run to export")
    members = family(runs)
    profiles = [replace(load_profile(str(sweep_dir / RUNS_DIR / r.name / r.final.checkpoint)),
                        model=r.name, revision=f"lab-step-{r.final.step}") for r in members]
    if (dest / RUNS_DIR).exists():
        shutil.rmtree(dest / RUNS_DIR)
    files = [write_record(dest, run) for run in runs]
    files += write_tables(dest, runs)
    files.append(save_atlas(profiles, dest / ATLAS_FILE))
    manifest: dict[str, Any] = {
        "format": REFERENCE_FORMAT, "label": LAB_LABEL, "created_by": f"specbound {__version__}",
        "description": "Small BERT encoders (transformers' BertForSequenceClassification) trained by the "
                       "specbound lab on a synthetic task; results and spectral profiles only, no weights.",
        "task": runs[0].spec.task.describe(), "runs": len(runs), "regenerate": REGENERATE,
        "sweep_seconds": sweep_seconds, "training_seconds": round(sum(r.seconds for r in runs), 1),
        "atlas_models": [r.name for r in members],
        "weights_shipped": False,
    }
    with atomic_write(dest / MANIFEST_FILE) as f:
        f.write(json.dumps(manifest, indent=1, allow_nan=False).encode("utf-8"))
    return (dest / MANIFEST_FILE, *files)


def read_manifest(directory: Path | str = REFERENCE_DIR) -> dict[str, Any]:
    """The reference's manifest (ValueError if it is missing or not a lab reference)."""
    data = json.loads((Path(directory) / MANIFEST_FILE).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != REFERENCE_FORMAT:
        raise ValueError(f"{directory} is not a specbound lab reference")
    return data


def load_reference(directory: Path | str = REFERENCE_DIR) -> LabResults:
    """The shipped runs and correlations (read from their records, as any lab directory)."""
    return read_results(directory)

