"""The reference sweep shipped inside the package: results of the ``class`` preset, without weights.

Layout of ``lab/specbound_lab/reference/`` (the same layout as a lab directory, minus the checkpoints)::

    manifest.json                 what this is (small encoders trained by the lab, not BERT Miniatures),
                                  the task, the command that regenerates it, the sweep's wall time (when
                                  the whole sweep ran in the exporting command), its training time (the
                                  flatness measures included), the measures and the bootstrap's settings
    runs/<run>/trajectory.json    every run's record (errors and bound terms at every saved step)
    runs/<run>/profiles.npz       an atlas of the spectral profiles of every saved step of that run, named
                                  ``<run>@<step>`` (the Lab page's step slider and "open as a model")
    runs.csv, correlations.csv    as in any lab directory; the checkpoint column names weights not shipped
    atlas.npz                     spectral profiles of the final checkpoints of the depth x width family
                                  (noise 0, first seed, largest n), named by their run (``lab-L2-N64-...``)

One atlas per run keeps each file far below the atlas's model limit and lets a page read only the run
it shows. Nine references are shipped (:data:`EXPORTED`). Eight are the sweeps the Lab and Training runs
pages list (:data:`SHIPPED`): the threshold task's class sweep on BERT encoders (``reference/``), the
Markov task's class sweep on GPT-2 decoders (``reference_decoder/``), the grokking preset
(``reference_grokking/``), the fit preset's four environments (``reference_fit/``,
``reference_fit_decoder/``, ``reference_fit_markov/``, ``reference_fit_markov_llama/``) and the
fine-tuning environment (``reference_finetune/``). The ninth is the scaling grid
(:data:`SCALING_REFERENCE`, ``reference_scaling/``, four depths by three widths), the Scaling page's
offline stand-in for the BERT Miniatures, read by that page alone. Each regenerates with its sweep and
``--export-reference`` (``make lab-reference``).
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from specbound import __version__
from specbound.core import LIMITS, BoundAnalysis, SpecboundError, SpectralProfile, quoted
from specbound.io import (
    FINETUNE_BASE,
    atlas_member,
    atomic_write,
    describe_os_error,
    load_profile,
    read_json,
    save_atlas,
)

from .correlation import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, CONFIDENCE
from .flatness import DEFAULT_FLATNESS
from .records import LAB_LABEL, RUNS_DIR, read_runs, record_measures, record_path, write_record
from .registry import MEASURES, BoundPower, CheckpointMeasure, RunMeasure, step_value
from .robust import environment_name
from .tables import LabResults, read_results, write_tables
from .tables import environment as environment_of_spec
from .tasks import Task
from .train import Family, LabError
from .trajectory import DEFAULT_BOUNDS, RunTrajectory

REFERENCE_DIR = Path(__file__).parent / "reference"
MANIFEST_FILE = "manifest.json"
ATLAS_FILE = "atlas.npz"
#: The atlas of one run's saved steps, beside its record.
STEPS_ATLAS_FILE = "profiles.npz"
#: Between a run's name and a step in the name of a step's profile (``lab-L2-...@500``).
STEP_SEP = "@"
REFERENCE_FORMAT = "specbound-lab-reference"
REGENERATE = "specbound lab sweep --preset class --out DIR --export-reference"


@dataclass(frozen=True)
class ShippedReference:
    """One environment's results shipped inside the package (records and spectra, no weights).

    ``key`` names it in the dashboard's run keys (``<key>:<run>``) and links; ``preset``, ``task`` and
    ``family`` are the sweep that regenerates it with ``--export-reference``.
    """

    key: str
    directory: Path
    preset: str
    task: Task
    family: Family
    #: what sets it apart from another reference of its environment, in a few words (the Lab page's choice)
    note: str = ""
    #: at most this many saved steps of a run are shipped (:func:`shipped_steps`); None: every one
    max_steps: int | None = None
    #: its runs start from a pretrained base (the ``finetune`` preset)
    fine_tuned: bool = False
    #: what it stands in for, when it stands in for released models (written into its manifest)
    stands_for: str = ""

    @property
    def environment(self) -> str:
        """Its environment's name, as the tables write it (``threshold/bert fine-tuned``)."""
        return environment_name(self.task, self.family, self.fine_tuned)

    @property
    def regenerate(self) -> str:
        """The command that retrains and re-exports it."""
        default = (self.task, self.family) == (Task.THRESHOLD, Family.BERT)
        environment = "" if default else f" --task {self.task} --family {self.family}"
        return f"specbound lab sweep --preset {self.preset}{environment} --out DIR --export-reference"

    @property
    def models(self) -> str:
        """The models it holds, in words ("GPT-2 decoders", "BERT encoders fine-tuned from finetune-base")."""
        models = f"{self.family.words}s"
        return f"{models} fine-tuned from {FINETUNE_BASE}" if self.fine_tuned else models


#: The threshold task's class sweep on BERT encoders (SPEC §10), the first reference.
THRESHOLD_REFERENCE = ShippedReference("reference", REFERENCE_DIR, "class", Task.THRESHOLD, Family.BERT)
#: A decoder environment (SPEC §13): the Markov task's class sweep on GPT-2 decoders, so that a visitor
#: without network sees trained decoders, their gaps (on the loss) and their p*.
DECODER_REFERENCE_DIR = Path(__file__).parent / "reference_decoder"
DECODER_REFERENCE = ShippedReference("decoder", DECODER_REFERENCE_DIR, "class", Task.MARKOV, Family.GPT2)
#: The grokking reference: the ``grok`` preset's three seeds (SPEC §13), so that the Lab and Training
#: runs pages show a run that groks without training one.
GROKKING_REFERENCE_DIR = Path(__file__).parent / "reference_grokking"
GROKKING_REFERENCE = ShippedReference("grokking", GROKKING_REFERENCE_DIR, "grok", Task.MODULAR, Family.GPT2)
#: The threshold task's ``fit`` sweep (SPEC §13b): every run trained until it fits its training set, five
#: seeds per configuration and two learning rates, so that a verdict stands on fitted runs.
FIT_REFERENCE_DIR = Path(__file__).parent / "reference_fit"
FIT_REFERENCE = ShippedReference(
    "fit",
    FIT_REFERENCE_DIR,
    "fit",
    Task.THRESHOLD,
    Family.BERT,
    "trained until they fit, 5 seeds, 2 learning rates",
    max_steps=11,  # at most eleven of a run's checkpoints keep the package small
)
#: The same ``fit`` sweep on GPT-2 decoders: a second environment whose runs fit.
FIT_DECODER_REFERENCE_DIR = Path(__file__).parent / "reference_fit_decoder"
FIT_DECODER_REFERENCE = ShippedReference(
    "fit-decoder",
    FIT_DECODER_REFERENCE_DIR,
    "fit",
    Task.THRESHOLD,
    Family.GPT2,
    "trained until they fit, 5 seeds, 2 learning rates",
    max_steps=11,
)
#: The Markov task's ``fit`` preset (SPEC §13b: next-token prediction cannot fit, so a fixed budget of
#: 500 steps) on GPT-2 decoders: five seeds and two learning rates, the design of the fit sweeps.
FIT_MARKOV_REFERENCE_DIR = Path(__file__).parent / "reference_fit_markov"
FIT_MARKOV_REFERENCE = ShippedReference(
    "fit-markov",
    FIT_MARKOV_REFERENCE_DIR,
    "fit",
    Task.MARKOV,
    Family.GPT2,
    "a fixed budget, 5 seeds, 2 learning rates",
    max_steps=3,  # steps 0, 250 and 500 of each run keep the package small
)
#: The same on Llama decoders (rotary positions, grouped-query attention, a gated MLP): a fourth
#: environment, and a second family on the same task.
FIT_MARKOV_LLAMA_REFERENCE_DIR = Path(__file__).parent / "reference_fit_markov_llama"
FIT_MARKOV_LLAMA_REFERENCE = ShippedReference(
    "fit-markov-llama",
    FIT_MARKOV_LLAMA_REFERENCE_DIR,
    "fit",
    Task.MARKOV,
    Family.LLAMA,
    "a fixed budget, 5 seeds, 2 learning rates",
    max_steps=3,
)
#: The ``finetune`` preset (SPEC §14 in the lab): the shipped base fine-tuned on another threshold rule,
#: in full and through LoRA adapters of rank 1, 4 and 16, two n, two learning rates, five seeds.
FINETUNE_REFERENCE_DIR = Path(__file__).parent / "reference_finetune"
FINETUNE_REFERENCE = ShippedReference(
    "finetune",
    FINETUNE_REFERENCE_DIR,
    "finetune",
    Task.THRESHOLD,
    Family.BERT,
    "fine-tuned from the shipped base: full and LoRA ranks 1, 4, 16",
    max_steps=11,
    fine_tuned=True,
)
#: The ``scaling`` preset (SPEC §3's growth study, offline): one BERT encoder per depth L in {1, 2, 3, 4}
#: and width N in {32, 64, 128}, one seed, 500 steps on the threshold task. It stands in for the 24 BERT
#: Miniatures (L in {2, ..., 12}, N in {128, ..., 768}) where the Hub is out of reach: four depths and
#: three widths are the fewest that give a growth exponent along each size an interval (MIN_SIZES).
SCALING_REFERENCE_DIR = Path(__file__).parent / "reference_scaling"
SCALING_REFERENCE = ShippedReference(
    "scaling",
    SCALING_REFERENCE_DIR,
    "scaling",
    Task.THRESHOLD,
    Family.BERT,
    "the scaling grid: depth 1-4 x width 32-128, one seed",
    stands_for="a stand-in for the 24 BERT Miniatures (depth 2-12, width 128-768) of the paper's growth "
    "study, for where the Hugging Face Hub is out of reach: one encoder per depth and width, one seed "
    "(an exponent is fitted across the grid), trained here, not released models",
)
#: Every shipped reference, the threshold sweep first.
SHIPPED: tuple[ShippedReference, ...] = (
    THRESHOLD_REFERENCE,
    DECODER_REFERENCE,
    GROKKING_REFERENCE,
    FIT_REFERENCE,
    FIT_DECODER_REFERENCE,
    FIT_MARKOV_REFERENCE,
    FIT_MARKOV_LLAMA_REFERENCE,
    FINETUNE_REFERENCE,
)
#: Every reference ``--export-reference`` regenerates: the sweeps of :data:`SHIPPED` and the scaling grid.
EXPORTED: tuple[ShippedReference, ...] = (*SHIPPED, SCALING_REFERENCE)
#: The shipped references whose runs form a sweep (the grokking preset's seeds do not), whose verdicts
#: ``specbound lab report`` and the Lab page give, each sweep read as its own: the four environments
#: of the fit preset (five seeds per configuration, SPEC §13b), the fine-tuning environment, and the
#: class sweep of the threshold task, shown as "not fitted" (most of its runs never fit in 500 steps)
#: and kept out of every average.
#: The Markov class sweep (three seeds) stays shipped for the pages that open its runs.
SWEEP_REFERENCES: tuple[ShippedReference, ...] = (
    THRESHOLD_REFERENCE,
    FIT_REFERENCE,
    FIT_DECODER_REFERENCE,
    FIT_MARKOV_REFERENCE,
    FIT_MARKOV_LLAMA_REFERENCE,
    FINETUNE_REFERENCE,
)


def shipped_reference(
    preset: str, task: Task | str = Task.THRESHOLD, family: Family | str = Family.BERT
) -> ShippedReference:
    """The shipped reference a sweep of ``preset`` on ``task`` x ``family`` regenerates (LabError for an
    environment no reference is shipped for: exporting it would replace another environment's)."""
    for shipped in EXPORTED:
        if (shipped.preset, shipped.task, shipped.family) == (preset, task, family):
            return shipped
    known = "; ".join(f"--preset {s.preset} --task {s.task} --family {s.family}" for s in EXPORTED)
    raise LabError(
        f"no reference is shipped for --preset {preset} --task {task} --family {family} "
        f"(--export-reference regenerates one of: {known}); without it the sweep's results stay in --out"
    )


#: How far a run re-trained where floating-point sums run in another order (another CPU, another thread
#: count) may land from the shipped run at its final step: absolute differences of the errors and of
#: every measure, the measures drawn on a log axis (Σ‖W‖_F², flatness, sharpness) as the difference of
#: their log10. About 1.5 times the largest difference measured on 12 re-trained runs (the manual, docs/lab/index.md:
#: reproducibility). Step 0 does not depend on the optimiser and repeats to rounding.
RETRAIN_TOLERANCE: dict[str, float] = {
    "train_error": 0.09,  # measured up to 0.060
    "test_error": 0.065,  # 0.042
    "gap": 0.11,  # 0.074
    "ours": 0.05,  # 0.030
    "ours_p0": 1e-9,  # 0: the ranks do not move
    "ours_p1": 0.14,  # 0.090
    "ours_p2": 0.22,  # 0.147
    "edelman": 0.45,  # 0.295
    "params": 0.0,
    "frobenius": 0.1,  # 0.069 (log10)
    "spectral_product": 0.6,  # 0.383
    "bartlett": 0.55,  # 0.367
    "alpha": 0.075,  # 0.048
    "alpha_hat": 0.25,  # 0.161
    "alpha_skipped": 0.0,
    "pacbayes_flatness": 0.7,  # 0.466 (log10)
    "sharpness": 1.75,  # 1.164 (log10): a noisy search, a factor 14 at worst
    "inverse_n": 0.0,
    "steps": 0.0,
    "train_loss": 0.3,  # 0.190 (log10)
}
#: A normalised form moves as far as log10 C (C / √n: n is the same) or half as far (√(C / n)).
RETRAIN_TOLERANCE |= {
    f"{name}_per_n": tolerance * (1.0 if MEASURES[name].bound_power is BoundPower.UNSQUARED else 0.5)
    for name, tolerance in RETRAIN_TOLERANCE.items()
    if name in MEASURES and MEASURES[name].bound_power is not None
}


def platform_fingerprint() -> dict[str, str]:
    """What decides whether a run repeats bit for bit: the CPU model and its instruction-set flags (hashed),
    the architecture, torch and numpy.

    Where it equals the reference's (``manifest.json``, "platform"), a re-trained reference run must
    repeat exactly; elsewhere within :data:`RETRAIN_TOLERANCE`.
    """
    import numpy as np
    import torch

    cpu, flags = platform.processor() or "unknown", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = dict(line.split(":", 1) for line in f.read().split("\n\n")[0].splitlines() if ":" in line)
        cpu = info.get("model name\t", cpu).strip()
        flags = " ".join(sorted(info.get("flags\t\t", "").split()))  # the instruction sets kernels dispatch on
    except (OSError, ValueError):
        pass
    return {
        "cpu": cpu,
        "cpu_flags": hashlib.sha256(flags.encode()).hexdigest()[:16],
        "machine": platform.machine(),
        "torch": torch.__version__,
        "numpy": np.__version__,
    }


def retrain_deviations(run: RunTrajectory, shipped: RunTrajectory, step: int | None = None) -> dict[str, float]:
    """|difference| between two runs of one spec at a saved step (default: each run's final one, which
    for a run trained until it fits may be another step), for the errors and every registered measure
    both have (a RUN measure, a property of the whole run, at the final step only); the log-axis
    measures as |Δ log10|."""
    if step is None:
        a, b = run.final, shipped.final
    else:
        a = next(s for s in run.steps if s.step == step)
        b = next(s for s in shipped.steps if s.step == step)
    out = {name: abs(getattr(a, name) - getattr(b, name)) for name in ("train_error", "test_error", "gap")}
    for measure in MEASURES.values():
        if isinstance(measure, RunMeasure) and b is not shipped.final:
            continue
        x, y = step_value(measure, a, run), step_value(measure, b, shipped)
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        if not measure.linear_axis and x > 0 and y > 0:
            x, y = math.log10(x), math.log10(y)
        out[measure.name] = abs(x - y)
    return out


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
    into). Either way it is named ``<run>@<step>``. LabError, in one line naming the run and the step,
    if the step was not saved or its spectra cannot be read (a checkpoint gone, corrupt or over the
    limits, a damaged steps atlas): whatever the loader's reason, a caller catches one error.
    """
    record = next((s for s in run.steps if s.step == step), None)
    if record is None:
        raise LabError(f"{run.name} has no saved step {step} (saved: {', '.join(str(s.step) for s in run.steps)})")
    run_dir = Path(directory) / RUNS_DIR / run.name
    steps_atlas = run_dir / STEPS_ATLAS_FILE
    try:
        if steps_atlas.is_file():
            return atlas_member(steps_atlas, step_member(run.name, step))
        return _renamed(load_profile(str(run_dir / record.checkpoint)), run.name, step)
    except LabError:
        raise
    except SpecboundError as exc:
        raise LabError(f"{run.name} at step {step}: {exc}") from exc
    except OSError as exc:
        raise LabError(f"{run.name} at step {step}: {describe_os_error(exc, name_file=True)}") from exc


def _earlier_sweep_seconds(dest: Path, runs: int, training_seconds: float) -> float | None:
    """The wall time recorded by an earlier export of the same runs into ``dest``, else None.

    Re-exporting a finished sweep (to add a file to the reference) resumes it without training, so
    the exporting command cannot time it; the same runs with the same training time are the same sweep.
    """
    try:
        earlier = read_reference_manifest(dest)
    except (OSError, ValueError):
        return None
    same = earlier.get("runs") == runs and earlier.get("training_seconds") == training_seconds
    value = earlier.get("sweep_seconds")
    return float(value) if same and isinstance(value, (int, float)) else None


def shipped_steps(run: RunTrajectory, most: int | None) -> RunTrajectory:
    """The run with at most ``most`` of its saved steps (all of them when ``most`` is None or they fit),
    else the first, the last and evenly spaced ones between (by position): a run trained to a cap of
    thousands of steps with a checkpoint every hundred keeps the package small, and every verdict reads
    the final step, which is always kept. (The grokking reference keeps every step: its rule needs them.)"""
    if most is None or len(run.steps) <= most:
        return run
    keep = sorted({round(k * (len(run.steps) - 1) / (most - 1)) for k in range(most)})  # positions, ends included
    return replace(run, steps=tuple(run.steps[k] for k in keep))


def export_reference(
    sweep_dir: Path | str,
    dest: Path | str = REFERENCE_DIR,
    *,
    sweep_seconds: float | None = None,
    regenerate: str = REGENERATE,
    max_steps: int | None = None,
    environment: str | None = None,
    step_profiles: bool = True,
    stands_for: str | None = None,
) -> tuple[Path, ...]:
    """Write the reference (records, tables, atlas, manifest) of a finished sweep into ``dest``, replacing it.

    The family's profiles come from their final checkpoints through the profile cache and are renamed
    to their run names, so the atlas never carries a local path. With ``max_steps`` each run keeps at
    most that many saved steps (:func:`shipped_steps`); with ``environment`` (``task/family``, with
    `` fine-tuned`` for fine-tuning runs) only that environment's runs are exported, so several
    environments may share one sweep directory. ``step_profiles=False`` leaves out the per-run atlases of
    every saved step (a corpus of thousands of runs keeps their records, whose bound terms summarise the
    spectra, and the family's atlas). ``stands_for`` says in the manifest which released models the
    reference stands in for (the scaling grid: the BERT Miniatures).
    """
    sweep_dir, dest = Path(sweep_dir), Path(dest)
    runs = tuple(
        shipped_steps(run, max_steps)
        for run in read_runs(sweep_dir)
        if environment is None or environment_of_spec(run.spec) == environment
    )
    if not runs:
        raise ValueError(f"{sweep_dir} holds no finished run to export")
    training_seconds = round(sum(r.seconds + r.model_seconds for r in runs), 1)
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
    for run in runs if step_profiles else ():  # every saved step: the Lab page's spectra along the trajectory
        run_dir = sweep_dir / RUNS_DIR / run.name
        files.append(
            save_atlas(
                [_renamed(load_profile(str(run_dir / s.checkpoint)), run.name, s.step) for s in run.steps],
                dest / RUNS_DIR / run.name / STEPS_ATLAS_FILE,
            )
        )
    files += write_tables(dest, runs)
    files.append(save_atlas(profiles, dest / ATLAS_FILE))
    run_family = runs[0].spec.family
    family_class = f"{run_family.words}s"
    trained = "trained by the specbound lab on a synthetic task"
    if runs[0].spec.fine_tuning is not None:
        trained = (
            f"fine-tuned by the specbound lab from {runs[0].spec.fine_tuning.base} on a synthetic task (peft for LoRA)"
        )
    manifest: dict[str, Any] = {
        "format": REFERENCE_FORMAT,
        "label": LAB_LABEL if run_family is Family.BERT else f"small {family_class} trained by the specbound lab",
        "created_by": f"specbound {__version__}",
        "description": f"Small {family_class} (transformers' own classes) {trained}; results and spectral "
        "profiles only, no weights.",
        "task": runs[0].spec.task.describe(),
        "runs": len(runs),
        "regenerate": regenerate,
        "sweep_seconds": sweep_seconds,
        "training_seconds": training_seconds,
        "measures": list(MEASURES),
        "platform": platform_fingerprint(),
        "bootstrap": {"draws": BOOTSTRAP_DRAWS, "seed": BOOTSTRAP_SEED, "confidence": CONFIDENCE},
        "flatness_searches": asdict(DEFAULT_FLATNESS),
        "atlas_models": [r.name for r in members],
        "step_atlases": (
            f"{RUNS_DIR}/<run>/{STEPS_ATLAS_FILE}, members <run>{STEP_SEP}<step>" if step_profiles else None
        ),
        "steps_per_run": "every saved step"
        if max_steps is None
        else f"at most {max_steps} of the saved steps, the first and the last always",
        "weights_shipped": False,
    }
    if stands_for:
        manifest["stands_for"] = stands_for
    with atomic_write(dest / MANIFEST_FILE) as f:
        f.write(json.dumps(manifest, indent=1, allow_nan=False).encode("utf-8"))
    return (dest / MANIFEST_FILE, *files)


def read_reference_manifest(directory: Path | str = REFERENCE_DIR) -> dict[str, Any]:
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


def remeasure(
    directory: Path | str = REFERENCE_DIR, measures: tuple[str, ...] = ("alpha", "alpha_hat", "alpha_skipped")
) -> tuple[Path, ...]:
    """Recompute CHECKPOINT ``measures`` at every saved step of every run in a lab directory from its
    stored spectra (the steps atlases of the reference, else the checkpoints), without retraining, and
    rewrite the records, runs.csv and correlations.csv. Every other value is kept as recorded.

    For a change of a measure's formula (the power-law fit's convention): the spectra do not move, so
    neither does anything else. LabError (one line, naming the names) for a name that is not a
    CHECKPOINT measure, and for a directory without a finished run.
    """
    directory = Path(directory)
    recomputable = sorted(name for name, m in MEASURES.items() if isinstance(m, CheckpointMeasure))
    refused = [name for name in measures if name not in recomputable]
    if refused:
        names = ", ".join(f"'{quoted(name)}'" for name in refused)
        raise LabError(
            f"{names} cannot be recomputed from stored spectra (the CHECKPOINT measures: {', '.join(recomputable)})"
        )
    chosen = [m for m in (MEASURES[name] for name in measures) if isinstance(m, CheckpointMeasure)]
    runs = read_runs(directory)
    if not runs:
        raise LabError(f"the lab directory {directory.name or directory} holds no finished run")
    updated = []
    for run in runs:
        steps = []
        for s in run.steps:
            analysis = BoundAnalysis.from_profile(step_profile(directory, run, s.step), DEFAULT_BOUNDS)
            values = {**s.values, **{m.name: float(m.compute(analysis)) for m in chosen}}
            steps.append(replace(s, values=values))
        updated.append(replace(run, steps=tuple(steps)))
    held = {run.name: {*record_measures(record_path(directory, run.name)), *measures} for run in runs}
    files = [write_record(directory, run, held[run.name]) for run in updated]
    return (*files, *write_tables(directory, updated))
