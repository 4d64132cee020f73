"""Every bound term of a run at every saved step, through the normal analysis path.

Each checkpoint directory goes through :func:`specbound.loading.load_profile` (so the profile cache
is used, exactly as ``specbound analyze DIR`` would) and :class:`specbound.bounds.BoundAnalysis`. Per
step: the measured errors; log10 of the bound's layer constant α per layer; p* of every matrix; and
every CHECKPOINT measure of :mod:`specbound.lab.registry` (ours at p* and at p = 0, 1, 2, the
Edelman-style proxy, the comparison measures, the power-law exponents of the spectra). The MODEL
measures (flatness, sharpness), computed when the run was trained, join the final step. Proxies are
kept as log10 (they are compared by rank, and log10 never overflows).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bounds import BoundAnalysis, BoundSettings
from ..loading import load_profile
from ..progress import ProgressCallback, ProgressEvent, silent
from .registry import MEASURES, Source, recorded_measures
from .tasks import ThresholdTask
from .train import RunSpec, TrainResult, TrainSettings, standard_error

_LOG10_E = 1.0 / math.log(10.0)
#: The bound's constants used by the lab unless told otherwise (those of specbound.defaults).
DEFAULT_BOUNDS = BoundSettings()
_CORE = ("step", "train_loss", "train_error", "test_error", "test_samples", "checkpoint", "grid_m")


@dataclass(frozen=True)
class StepTerms:
    """Errors and bound terms of one saved checkpoint (``checkpoint`` relative to the run directory).

    ``values`` holds every measure of :data:`specbound.lab.registry.MEASURES` recorded at this step, by
    measure name (CHECKPOINT measures at every step, MODEL measures at the final step); a measure the
    step lacks (an older record, or a MODEL measure before the end) is absent and reads as NaN.
    """

    step: int
    train_loss: float
    train_error: float
    test_error: float
    test_samples: int
    checkpoint: str
    grid_m: int
    log10_alpha: tuple[float, ...]  # the bound's layer constant α, one per layer, bottom first
    p_opt: tuple[float, ...]  # one per proxy matrix, in profile order
    values: Mapping[str, float] = field(default_factory=dict, hash=False)

    @property
    def gap(self) -> float:
        """Test error minus training error."""
        return self.test_error - self.train_error

    @property
    def test_error_se(self) -> float:
        return standard_error(self.test_error, self.test_samples)

    def value(self, name: str) -> float:
        """The measure ``name`` at this step (NaN when this step does not have it)."""
        return float(self.values.get(name, math.nan))

    @property
    def ours_log10(self) -> float:
        """log10 of the proxy at p*, the total."""
        return self.value("ours")

    @property
    def edelman_log10(self) -> float:
        return self.value("edelman")

    def to_dict(self) -> dict[str, Any]:
        """The step as its record holds it: the core fields, then each recorded measure under its column
        (a non-finite value is left out, so the JSON stays strict)."""
        out: dict[str, Any] = {name: getattr(self, name) for name in _CORE}
        out["log10_alpha"], out["p_opt"] = list(self.log10_alpha), list(self.p_opt)
        for measure in recorded_measures():
            value = self.values.get(measure.name)
            if value is not None and math.isfinite(value):
                out[measure.column] = float(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepTerms:
        """Inverse of :meth:`to_dict`; a measure whose column the record lacks is missing, not an error."""
        core = {name: data[name] for name in _CORE}
        values = {m.name: float(data[m.column]) for m in recorded_measures() if data.get(m.column) is not None}
        return cls(
            **core,
            log10_alpha=tuple(float(v) for v in data["log10_alpha"]),
            p_opt=tuple(float(v) for v in data["p_opt"]),
            values=values,
        )


@dataclass(frozen=True)
class RunTrajectory:
    """A finished run: what was trained and its terms at every saved step, in step order."""

    spec: RunSpec
    params: int
    seconds: float  # wall time of training and measuring the errors (analysis excluded)
    matrices: tuple[str, ...]  # labels of the proxy matrices ("L0 QK h1", ...), the order of p_opt
    steps: tuple[StepTerms, ...]
    model_seconds: float = 0.0  # the MODEL measures on the final checkpoint (0 in older records)
    analysis_seconds: float = 0.0  # the checkpoints' analysis (0 in older records)

    @property
    def wall_seconds(self) -> float:
        """Training, the MODEL measures and the analysis: what the run cost a sweep."""
        return self.seconds + self.model_seconds + self.analysis_seconds

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def final(self) -> StepTerms:
        return self.steps[-1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec.to_dict(),
            "params": self.params,
            "seconds": self.seconds,
            "model_seconds": self.model_seconds,
            "analysis_seconds": self.analysis_seconds,
            "matrices": list(self.matrices),
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunTrajectory:
        return cls(
            spec=spec_from_dict(data["spec"]),
            params=int(data["params"]),
            seconds=float(data["seconds"]),
            matrices=tuple(str(m) for m in data["matrices"]),
            steps=tuple(StepTerms.from_dict(s) for s in data["steps"]),
            model_seconds=float(data.get("model_seconds", 0.0)),
            analysis_seconds=float(data.get("analysis_seconds", 0.0)),
        )


def spec_from_dict(data: Mapping[str, Any]) -> RunSpec:
    """Inverse of :meth:`RunSpec.to_dict` (the threshold is stored resolved)."""
    task = data["task"]
    return RunSpec(
        layers=int(data["layers"]),
        hidden=int(data["hidden"]),
        heads=int(data["heads"]),
        n_train=int(data["n_train"]),
        seed=int(data["seed"]),
        task=ThresholdTask(
            vocab_size=int(task["vocab_size"]),
            length=int(task["length"]),
            positions=tuple(int(i) for i in task["positions"]),
            threshold=int(task["threshold"]),
            label_noise=float(task["label_noise"]),
        ),
        settings=TrainSettings(**data["settings"]),
    )


def step_terms(
    analysis: BoundAnalysis,
    *,
    step: int,
    train_loss: float,
    train_error: float,
    test_error: float,
    test_samples: int,
    checkpoint: str,
    model_values: Mapping[str, float] | None = None,
) -> StepTerms:
    """The terms of one analysed checkpoint beside its measured errors: every CHECKPOINT measure of the
    registry, and the MODEL measures in ``model_values`` (given for the final checkpoint)."""
    values = {m.name: float(m.compute(analysis)) for m in MEASURES.values() if m.source is Source.CHECKPOINT}
    values.update(model_values or {})
    return StepTerms(
        step=step,
        train_loss=train_loss,
        train_error=train_error,
        test_error=test_error,
        test_samples=test_samples,
        checkpoint=checkpoint,
        grid_m=analysis.grid_m,
        log10_alpha=tuple(float(v) * _LOG10_E for v in analysis.log_alpha),
        p_opt=tuple(float(p) for p in analysis.p_opt),
        values=values,
    )


def analyse_run(
    result: TrainResult,
    run_dir: Path | str,
    *,
    settings: BoundSettings = DEFAULT_BOUNDS,
    progress: ProgressCallback = silent,
    use_cache: bool = True,
) -> RunTrajectory:
    """Analyse every saved checkpoint of a trained run (checkpoints relative to ``run_dir``)."""
    run_dir = Path(run_dir)
    started = time.perf_counter()
    steps: list[StepTerms] = []
    labels: tuple[str, ...] = ()
    for index, record in enumerate(result.steps, start=1):
        profile = load_profile(str(run_dir / record.checkpoint), use_cache=use_cache)
        analysis = BoundAnalysis.from_profile(profile, settings)
        labels = tuple(matrix.label for matrix in profile.ids)
        steps.append(
            step_terms(
                analysis,
                step=record.step,
                train_loss=record.train_loss,
                train_error=record.train_error,
                test_error=record.test_error,
                test_samples=record.test_samples,
                checkpoint=record.checkpoint,
                model_values=result.model_values if index == len(result.steps) else None,
            )
        )
        progress(ProgressEvent("analyse", index, len(result.steps), f"{result.spec.name} step {record.step}"))
    return RunTrajectory(
        result.spec,
        result.params,
        result.seconds,
        labels,
        tuple(steps),
        model_seconds=result.model_seconds,
        analysis_seconds=time.perf_counter() - started,
    )
