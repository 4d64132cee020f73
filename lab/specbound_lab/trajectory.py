"""Every bound term of a run at every saved step, through the normal analysis path.

Each checkpoint directory goes through :func:`specbound.io.load_profile` (so the profile cache
is used, exactly as ``specbound analyze DIR`` would) and :class:`specbound.core.BoundAnalysis`. Per
step: the measured errors; log10 of the bound's layer constant α per layer; p* of every matrix; and
every CHECKPOINT measure of :mod:`specbound_lab.registry` (ours at p* and at p = 0, 1, 2, the
Edelman-style proxy, the comparison measures, the power-law exponents of the spectra), and every
CENTRED measure, read against the run's first saved step (its initialization, or the pretrained base
of a fine-tuning run: :func:`specbound.io.difference_profile`, SPEC §14). The MODEL
measures (flatness, sharpness), computed when the run was trained, join the final step. Proxies are
kept as log10 (they are compared by rank, and log10 never overflows).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specbound.core import (
    LOG10_E,
    PROXIES,
    BoundAnalysis,
    BoundSettings,
    Directions,
    ProgressCallback,
    ProgressEvent,
    is_genuine_int,
    is_real_number,
    silent,
)
from specbound.io import difference_profile, directions_of, load_profile, open_weights
from specbound.studies import StepTerms

from .registry import centred_measures, checkpoint_measures, direction_measures, recorded_measures
from .tasks import task_from_dict
from .train import Family, RunSpec, TrainResult, TrainSettings, family_of, standard_error
from .tuning import FineTuning

#: The bound's constants used by the lab unless told otherwise (those of specbound.core.defaults).
DEFAULT_BOUNDS = BoundSettings()
_CORE = ("step", "train_loss", "train_error", "test_error", "test_samples", "checkpoint", "grid_m")


@dataclass(frozen=True)
class StepRecord:
    """Errors and bound terms of one saved checkpoint (``checkpoint`` relative to the run directory), as
    the run's record holds them.

    ``values`` holds every measure of :data:`specbound_lab.registry.MEASURES` recorded at this step, by
    measure name (CHECKPOINT measures at every step, MODEL measures at the final step); a measure the
    step lacks (an older record, or a MODEL measure before the end) is absent and reads as NaN. The
    bound's own terms among them (each proxy, p*, log10 α) are :attr:`terms`, the library's
    :class:`~specbound.studies.StepTerms`, as every trajectory has them.
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
    test_loss: float = math.nan  # mean cross-entropy on the test set (NaN in records older than §13)
    loss_gap: bool = False  # next-token prediction: the gap is test loss minus training loss
    #: a fine-tune's error on its base's own task (forgetting, :func:`specbound_lab.finetune.base_task_error`);
    #: NaN for a run from scratch and in older records
    base_task_error: float = math.nan

    @property
    def terms(self) -> StepTerms:
        """The bound's terms at this step, as the library follows any run (``trajectory.csv``'s)."""
        return StepTerms(self.step, {proxy: self.value(proxy.key) for proxy in PROXIES}, self.p_opt, self.log10_alpha)

    @property
    def gap(self) -> float:
        """Test error minus training error; test loss minus training loss for next-token prediction."""
        return self.test_loss - self.train_loss if self.loss_gap else self.test_error - self.train_error

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
        if math.isfinite(self.test_loss):
            out["test_loss"] = float(self.test_loss)
        if math.isfinite(self.base_task_error):
            out["base_task_error"] = float(self.base_task_error)
        for measure in recorded_measures():
            value = self.values.get(measure.name)
            if value is not None and math.isfinite(value):
                out[measure.column] = float(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepRecord:
        """The terms as a record stores them, checked (ValueError): a record is a file, not a promise.

        Integers must be genuine and non-negative, every number finite, errors in [0, 1], each p* on
        [0, 2] and the p* list not empty. A measure whose column the record lacks is missing, not an
        error (a record written before the measure existed).
        """
        core = {name: data[name] for name in _CORE}
        for name in ("step", "test_samples", "grid_m"):
            if not is_genuine_int(core[name]) or core[name] < (0 if name == "step" else 1):
                raise ValueError(f"{name} must be a positive integer")
        for name in _FLOAT_TERMS:
            value = core[name]
            if not is_real_number(value, finite=True):
                raise ValueError(f"{name} must be a finite number")
        if not all(0.0 <= core[name] <= 1.0 for name in ("train_error", "test_error")):
            raise ValueError("errors must lie in [0, 1]")
        if not isinstance(core["checkpoint"], str):
            raise ValueError("checkpoint must be a relative path")
        values = {}
        for measure in recorded_measures():
            value = data.get(measure.column)
            if value is None:
                continue
            if not is_real_number(value, finite=True):
                raise ValueError(f"{measure.column} must be a finite number")
            values[measure.name] = float(value)
        p_opt = _finite_tuple(data["p_opt"], "p_opt")
        if not p_opt or not all(0.0 <= p <= 2.0 for p in p_opt):
            raise ValueError("p_opt must hold one p* in [0, 2] per matrix")
        test_loss = data.get("test_loss", math.nan)
        if "test_loss" in data and (not is_real_number(test_loss, finite=True)):
            raise ValueError("test_loss must be a finite number")
        base_task_error = data.get("base_task_error", math.nan)
        if "base_task_error" in data and not (is_real_number(base_task_error) and 0.0 <= base_task_error <= 1.0):
            raise ValueError("base_task_error must lie in [0, 1]")
        return cls(
            **core,
            log10_alpha=_finite_tuple(data["log10_alpha"], "log10_alpha"),
            p_opt=p_opt,
            values=values,
            test_loss=float(test_loss),
            base_task_error=float(base_task_error),
        )


#: The real-valued core terms of a step (all must be finite numbers in a record; the measures are checked
#: by their registry entries).
_FLOAT_TERMS: tuple[str, ...] = ("train_loss", "train_error", "test_error")


def _finite_tuple(values: Any, what: str) -> tuple[float, ...]:
    if not isinstance(values, list) or not all(is_real_number(v) for v in values):
        raise ValueError(f"{what} must be a list of numbers")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} must hold finite numbers")
    return tuple(float(v) for v in values)


@dataclass(frozen=True)
class RunTrajectory:
    """A finished run: what was trained and its terms at every saved step, in step order."""

    spec: RunSpec
    params: int
    seconds: float  # wall time of training and measuring the errors (analysis excluded)
    matrices: tuple[str, ...]  # labels of the proxy matrices ("L0 QK h1", ...), the order of p_opt
    steps: tuple[StepRecord, ...]
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
    def final(self) -> StepRecord:
        return self.steps[-1]

    @property
    def n_train(self) -> int:
        return self.spec.n_train

    @property
    def optimisation_steps(self) -> int:
        """The optimiser steps taken, to the last saved checkpoint."""
        return self.final.step

    @property
    def final_train_loss(self) -> float:
        return self.final.train_loss

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
        """A run from its record, checked whole (ValueError, or LabError for an invalid spec)."""
        params, seconds, matrices = data["params"], data["seconds"], data["matrices"]
        if not is_genuine_int(params) or params < 1:
            raise ValueError("params must be a positive integer")
        timings = [seconds, data.get("model_seconds", 0.0), data.get("analysis_seconds", 0.0)]
        if not all(is_real_number(t, finite=True) and t >= 0 for t in timings):
            raise ValueError("the recorded times must be finite non-negative numbers")
        if not isinstance(matrices, list) or not matrices or not all(isinstance(m, str) for m in matrices):
            raise ValueError("matrices must be a non-empty list of labels")
        spec = spec_from_dict(data["spec"])
        steps = tuple(replace(StepRecord.from_dict(s), loss_gap=spec.task.causal) for s in data["steps"])
        if spec.task.causal and not all(math.isfinite(s.test_loss) for s in steps):
            raise ValueError("a next-token run needs the test loss at every step")
        if not steps or [s.step for s in steps] != sorted({s.step for s in steps}):
            raise ValueError("steps must be a non-empty list in increasing step order")
        for s in steps:
            if len(s.p_opt) != len(matrices) or len(s.log10_alpha) != spec.layers:
                raise ValueError("every step needs one p* per matrix and one log10 alpha per layer")
        return cls(
            spec=spec,
            params=int(params),
            seconds=float(timings[0]),
            matrices=tuple(matrices),
            steps=steps,
            model_seconds=float(timings[1]),
            analysis_seconds=float(timings[2]),
        )


def spec_from_dict(data: Mapping[str, Any]) -> RunSpec:
    """Inverse of :meth:`RunSpec.to_dict` (the threshold is stored resolved; a record without a family is
    a bert run, one whose task has no ``task`` name the threshold task)."""
    task = dict(data["task"])
    ints = [data[k] for k in ("layers", "hidden", "heads", "n_train", "seed")]
    if not all(is_genuine_int(v) for v in ints):  # int(2.7) would quietly read another run
        raise ValueError("a run's sizes, seed and task must be integers")
    if task.get("task", "sparse-threshold") == "sparse-threshold" and "threshold" not in task:
        raise ValueError("a threshold task is stored with its threshold")
    family = data.get("family", Family.BERT)
    if not isinstance(family, str):
        raise ValueError("family must be a name")
    fine_tuning = FineTuning.from_dict(data["fine_tuning"]) if "fine_tuning" in data else None
    return RunSpec(
        layers=int(data["layers"]),
        hidden=int(data["hidden"]),
        heads=int(data["heads"]),
        n_train=int(data["n_train"]),
        seed=int(data["seed"]),
        task=task_from_dict(task),
        settings=TrainSettings(**data["settings"]),
        family=family_of(family),
        fine_tuning=fine_tuning,
    )


def step_record(
    analysis: BoundAnalysis,
    *,
    step: int,
    train_loss: float,
    train_error: float,
    test_error: float,
    test_samples: int,
    checkpoint: str,
    model_values: Mapping[str, float] | None = None,
    test_loss: float = math.nan,
    loss_gap: bool = False,
    centred: BoundAnalysis | None = None,
    directions: Directions | None = None,
    base_task_error: float = math.nan,
) -> StepRecord:
    """The terms of one analysed checkpoint beside its measured errors: every CHECKPOINT measure of the
    registry, every CENTRED measure when ``centred`` (the same checkpoint's analysis against the run's
    first step) is given and those that read singular vectors when ``directions`` (where they moved from
    that step's, SPEC §14b) is, and the MODEL measures in ``model_values`` (given for the final
    checkpoint); ``base_task_error``: a fine-tune's error on its base's own task (forgetting)."""
    values = {m.name: float(m.compute(analysis)) for m in checkpoint_measures()}
    if centred is not None:
        values.update({m.name: float(m.compute(centred)) for m in centred_measures()})
    if directions is not None:
        values.update({m.name: float(m.compute(directions)) for m in direction_measures()})
    values.update(model_values or {})
    return StepRecord(
        step=step,
        train_loss=train_loss,
        train_error=train_error,
        test_error=test_error,
        test_samples=test_samples,
        checkpoint=checkpoint,
        grid_m=analysis.grid_m,
        log10_alpha=tuple(float(v) * LOG10_E for v in analysis.log_alpha),
        p_opt=tuple(float(p) for p in analysis.p_opt),
        values=values,
        test_loss=test_loss,
        loss_gap=loss_gap,
        base_task_error=base_task_error,
    )


def analyse_run(
    result: TrainResult,
    run_dir: Path | str,
    *,
    settings: BoundSettings = DEFAULT_BOUNDS,
    progress: ProgressCallback = silent,
    use_cache: bool = True,
) -> RunTrajectory:
    """Analyse every saved checkpoint of a trained run (checkpoints relative to ``run_dir``): its bound
    terms, centred at its first checkpoint also where its singular vectors moved (intruder dimensions,
    SPEC §14b), and for a fine-tune of the lab's base its error on the base's own task (forgetting)."""
    from .finetune import base_task_error

    run_dir = Path(run_dir)
    started = time.perf_counter()
    steps: list[StepRecord] = []
    labels: tuple[str, ...] = ()
    initial = open_weights(str(run_dir / result.steps[0].checkpoint)) if centred_measures() else None
    for index, record in enumerate(result.steps, start=1):
        where = str(run_dir / record.checkpoint)
        profile = load_profile(where, use_cache=use_cache)
        analysis = BoundAnalysis.from_profile(profile, settings)
        centred, directions = None, None
        if initial is not None:
            delta = difference_profile(open_weights(where), initial, model=f"{result.spec.name} - step 0")
            centred = BoundAnalysis.from_profile(profile, settings, delta=delta)
            directions = directions_of(open_weights(where), initial) if direction_measures() else None
        labels = tuple(matrix.label for matrix in profile.ids)
        steps.append(
            step_record(
                analysis,
                centred=centred,
                directions=directions,
                base_task_error=base_task_error(Path(where), result.spec),
                step=record.step,
                train_loss=record.train_loss,
                train_error=record.train_error,
                test_error=record.test_error,
                test_samples=record.test_samples,
                checkpoint=record.checkpoint,
                model_values=result.model_values if index == len(result.steps) else None,
                test_loss=record.test_loss,
                loss_gap=record.loss_gap,
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
