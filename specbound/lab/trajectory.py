"""Every bound term of a run at every saved step, through the normal analysis path.

Each checkpoint directory goes through :func:`specbound.loading.load_profile` (so the profile cache
is used, exactly as ``specbound analyze DIR`` would) and :class:`specbound.bounds.BoundAnalysis`. Per
step: the measured errors; ours at p* and with every matrix at p = 0, 1, 2; the Edelman-style proxy;
log10 alpha per layer; p* of every matrix; and the comparison measures of :mod:`specbound.lab.measures`.
Proxies are kept as log10 (they are compared by rank, and log10 never overflows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bounds import BoundAnalysis, BoundSettings
from ..limits import is_genuine_int
from ..loading import load_profile
from ..progress import ProgressCallback, ProgressEvent, silent
from .measures import frobenius_sum, log_bartlett, log_spectral_product
from .tasks import ThresholdTask
from .train import RunSpec, TrainResult, TrainSettings, standard_error

_LOG10_E = 1.0 / math.log(10.0)
#: The fixed indices at which "ours" is also recorded (every matrix at the same p).
FIXED_P: tuple[float, ...] = (0.0, 1.0, 2.0)
#: The bound's constants used by the lab unless told otherwise (those of specbound.defaults).
DEFAULT_BOUNDS = BoundSettings()


@dataclass(frozen=True)
class StepTerms:
    """Errors and bound terms of one saved checkpoint (``checkpoint`` relative to the run directory)."""

    step: int
    train_loss: float
    train_error: float
    test_error: float
    test_samples: int
    checkpoint: str
    grid_m: int
    ours_log10: float  # at p*
    ours_p0_log10: float
    ours_p1_log10: float
    ours_p2_log10: float
    edelman_log10: float
    frobenius: float  # sum of ||W||_F^2 over the proxy matrices
    spectral_product_log10: float
    bartlett_log10: float
    log10_alpha: tuple[float, ...]  # one per layer, bottom first
    p_opt: tuple[float, ...]  # one per proxy matrix, in profile order

    @property
    def gap(self) -> float:
        """Test error minus training error."""
        return self.test_error - self.train_error

    @property
    def test_error_se(self) -> float:
        return standard_error(self.test_error, self.test_samples)

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["log10_alpha"], out["p_opt"] = list(self.log10_alpha), list(self.p_opt)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepTerms:
        """The terms as a record stores them, checked (ValueError): a record is a file, not a promise.

        Integers must be genuine and non-negative, every number finite, errors in [0, 1], each p*
        on [0, 2] and the p* list not empty.
        """
        values = {name: data[name] for name in cls.__dataclass_fields__}
        for name in ("step", "test_samples", "grid_m"):
            if not is_genuine_int(values[name]) or values[name] < (0 if name == "step" else 1):
                raise ValueError(f"{name} must be a positive integer")
        for name in _FLOAT_TERMS:
            value = values[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number")
        if not all(0.0 <= values[name] <= 1.0 for name in ("train_error", "test_error")):
            raise ValueError("errors must lie in [0, 1]")
        if not isinstance(values["checkpoint"], str):
            raise ValueError("checkpoint must be a relative path")
        values["log10_alpha"] = _finite_tuple(data["log10_alpha"], "log10_alpha")
        values["p_opt"] = _finite_tuple(data["p_opt"], "p_opt")
        if not values["p_opt"] or not all(0.0 <= p <= 2.0 for p in values["p_opt"]):
            raise ValueError("p_opt must hold one p* in [0, 2] per matrix")
        return cls(**values)


#: The real-valued terms of a step (all must be finite numbers in a record).
_FLOAT_TERMS: tuple[str, ...] = (
    "train_loss",
    "train_error",
    "test_error",
    "ours_log10",
    "ours_p0_log10",
    "ours_p1_log10",
    "ours_p2_log10",
    "edelman_log10",
    "frobenius",
    "spectral_product_log10",
    "bartlett_log10",
)


def _finite_tuple(values: Any, what: str) -> tuple[float, ...]:
    if not isinstance(values, list) or any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise ValueError(f"{what} must be a list of numbers")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} must hold finite numbers")
    return tuple(float(v) for v in values)


@dataclass(frozen=True)
class RunTrajectory:
    """A finished run: what was trained and its terms at every saved step, in step order."""

    spec: RunSpec
    params: int
    seconds: float  # wall time of training (analysis excluded)
    matrices: tuple[str, ...]  # labels of the proxy matrices ("L0 QK h1", ...), the order of p_opt
    steps: tuple[StepTerms, ...]

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
            "matrices": list(self.matrices),
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunTrajectory:
        """A run from its record, checked whole (ValueError, or LabError for an invalid spec)."""
        params, seconds, matrices = data["params"], data["seconds"], data["matrices"]
        if not is_genuine_int(params) or params < 1:
            raise ValueError("params must be a positive integer")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < math.inf:
            raise ValueError("seconds must be a finite non-negative number")
        if not isinstance(matrices, list) or not matrices or not all(isinstance(m, str) for m in matrices):
            raise ValueError("matrices must be a non-empty list of labels")
        spec = spec_from_dict(data["spec"])
        steps = tuple(StepTerms.from_dict(s) for s in data["steps"])
        if not steps or [s.step for s in steps] != sorted({s.step for s in steps}):
            raise ValueError("steps must be a non-empty list in increasing step order")
        for s in steps:
            if len(s.p_opt) != len(matrices) or len(s.log10_alpha) != spec.layers:
                raise ValueError("every step needs one p* per matrix and one log10 alpha per layer")
        return cls(spec=spec, params=int(params), seconds=float(seconds), matrices=tuple(matrices), steps=steps)


def spec_from_dict(data: Mapping[str, Any]) -> RunSpec:
    """Inverse of :meth:`RunSpec.to_dict` (the threshold is stored resolved)."""
    task = data["task"]
    ints = [data[k] for k in ("layers", "hidden", "heads", "n_train", "seed")]
    ints += [task["vocab_size"], task["length"], task["threshold"], *task["positions"]]
    if not all(is_genuine_int(v) for v in ints):  # int(2.7) would quietly read another run
        raise ValueError("a run's sizes, seed and task must be integers")
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
) -> StepTerms:
    """The terms of one analysed checkpoint beside its measured errors."""
    profile = analysis.profile
    fixed = [analysis.evaluate(p).log_total * _LOG10_E for p in FIXED_P]
    return StepTerms(
        step=step,
        train_loss=train_loss,
        train_error=train_error,
        test_error=test_error,
        test_samples=test_samples,
        checkpoint=checkpoint,
        grid_m=analysis.grid_m,
        ours_log10=analysis.evaluate().log_total * _LOG10_E,
        ours_p0_log10=fixed[0],
        ours_p1_log10=fixed[1],
        ours_p2_log10=fixed[2],
        edelman_log10=analysis.log_edelman * _LOG10_E,
        frobenius=frobenius_sum(profile),
        spectral_product_log10=log_spectral_product(profile) * _LOG10_E,
        bartlett_log10=log_bartlett(profile) * _LOG10_E,
        log10_alpha=tuple(float(v) * _LOG10_E for v in analysis.log_alpha),
        p_opt=tuple(float(p) for p in analysis.p_opt),
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
            )
        )
        progress(ProgressEvent("analyse", index, len(result.steps), f"{result.spec.name} step {record.step}"))
    return RunTrajectory(result.spec, result.params, result.seconds, labels, tuple(steps))
