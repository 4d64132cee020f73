"""The grid of a sweep: the product of its axis values (depth, width, heads, training-set size, label
noise, seed), the presets, and grid files.

A grid file is validated when it is read: a small regular JSON file whose every value has the declared
type and range (one LabError line otherwise).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from specbound.core import LIMITS, is_real_number, quoted
from specbound.io import describe_os_error, read_json

from .finetune import FINE_TUNE_TASK
from .limits import LAB_LIMITS
from .tasks import TASKS, LabTask, Task, ThresholdTask
from .train import Family, LabError, RunSpec, TrainSettings, family_of, task_of
from .tuning import FineTuning

#: The hyperparameter axes of a sweep (also the axes of the granulated tau): architecture, data, the
#: optimisation axes (the learning rate, the weight decay and the batch size, SPEC §13b), how a fine-tuning
#: run adapts its base (``full`` or ``lora{r}``; :data:`FROM_SCRATCH` for a run trained from a fresh
#: initialization) and the seed.
AXES: tuple[str, ...] = (
    "layers",
    "hidden",
    "heads",
    "n_train",
    "label_noise",
    "learning_rate",
    "fine_tuning",
    "weight_decay",
    "batch_size",
    "seed",
)
#: The hyperparameter axes, the seed apart: the granulated τ's axes and the first columns of a configuration.
HYPERPARAMETER_AXES: tuple[str, ...] = tuple(axis for axis in AXES if axis != "seed")
#: The ``fine_tuning`` axis's value of a run trained from a fresh initialization.
FROM_SCRATCH = "scratch"
#: The axis that is noise, not a hyperparameter: its psi is reported as seed noise and left out of the
#: granulated tau, and the seeds of one configuration are resampled together (SPEC §13b).
SEED_AXIS = "seed"


@dataclass(frozen=True)
class SweepGrid:
    """The full product of the axis values, with one task and one set of training settings."""

    layers: tuple[int, ...]
    hidden: tuple[int, ...]
    heads: tuple[int, ...]
    n_train: tuple[int, ...]
    label_noise: tuple[float, ...] = (0.0,)
    seeds: tuple[int, ...] = (0,)
    task: LabTask = field(default_factory=ThresholdTask)
    settings: TrainSettings = field(default_factory=TrainSettings)
    #: the model family, or its name (read as a Family on construction: LabError for an unknown one)
    family: Family | str = Family.BERT
    #: the optimisation axes (SPEC §13b); each empty: the one value of ``settings``
    learning_rates: tuple[float, ...] = ()
    batch_sizes: tuple[int, ...] = ()
    weight_decays: tuple[float, ...] = ()
    #: how each run starts: None from a fresh initialization, a FineTuning from a pretrained base
    fine_tunings: tuple[FineTuning | None, ...] = (None,)

    def __post_init__(self) -> None:
        object.__setattr__(self, "family", family_of(self.family))

    def specs(self) -> tuple[RunSpec, ...]:
        """Every run of the grid (LabError if one is invalid or there are too many)."""
        rates = self.learning_rates or (self.settings.learning_rate,)
        batches = self.batch_sizes or (self.settings.batch_size,)
        decays = self.weight_decays or (self.settings.weight_decay,)
        axes = (
            self.layers,
            self.hidden,
            self.heads,
            self.n_train,
            self.label_noise,
            rates,
            batches,
            decays,
            self.fine_tunings,
        )
        count = math.prod(len(v) for v in (*axes, self.seeds))
        if count == 0:
            raise LabError("the grid is empty: every axis needs at least one value")
        if count > LAB_LIMITS.max_grid_runs:
            raise LabError(f"the grid has {count} runs; at most {LAB_LIMITS.max_grid_runs} are allowed")
        try:
            return tuple(
                RunSpec(
                    layers=depth,
                    hidden=width,
                    heads=h,
                    n_train=n,
                    seed=s,
                    task=replace(self.task, label_noise=q),
                    settings=replace(self.settings, learning_rate=rate, batch_size=batch, weight_decay=decay),
                    family=family_of(self.family),
                    fine_tuning=tuning,
                )
                for depth, width, h, n, q, rate, batch, decay, tuning, s in itertools.product(*axes, self.seeds)
            )
        except ValueError as exc:
            raise LabError(str(exc)) from None


PRESETS: dict[str, SweepGrid] = {
    # 4 runs, about a minute: what the tests use.
    "smoke": SweepGrid(
        layers=(2,),
        hidden=(32,),
        heads=(2,),
        n_train=(64, 512),
        label_noise=(0.0, 0.2),
        settings=TrainSettings(steps=200, save_every=100, test_samples=2000),
    ),
    # 48 runs, within 15 minutes on 2 cores: every axis but heads has groups for the granulated tau.
    "class": SweepGrid(
        layers=(1, 2),
        hidden=(32, 64),
        heads=(2,),
        n_train=(100, 400, 1600),
        label_noise=(0.0, 0.1),
        seeds=(0, 1),
        settings=TrainSettings(steps=500, save_every=125),
    ),
    # 12 runs, one per (depth, width): the scaling grid, a stand-in for the 24 BERT Miniatures (depth 2-12,
    # width 128-768) that the Scaling page reads offline. Four depths (1-4) and three widths (32, 64, 128,
    # evenly spaced on a log axis, where a growth exponent is a slope) are the fewest that give a slope
    # along either size an interval (three sizes at least); the class preset's 500 steps; one seed, one n
    # and no label noise: an exponent is fitted across the grid, not within a configuration.
    "scaling": SweepGrid(
        layers=(1, 2, 3, 4),
        hidden=(32, 64, 128),
        heads=(2,),
        n_train=(400,),
        label_noise=(0.0,),
        seeds=(0,),
        settings=TrainSettings(steps=500, save_every=250),
    ),
    # 120 runs held to SPEC §13b: every run trained until it fits its training set (cross-entropy <= 0.01
    # on the whole set, checked every 100 steps, at most 6,000), five seeds per configuration, and an
    # optimisation axis (two learning rates, both below the 3e-3 at which width-64 runs diverged). A
    # checkpoint, with its test error and analysis, every 500 steps and at the fit. No label noise: noisy
    # sets of 1,600 do not memorise within 6,000 steps here; n stops at 900 because the flatness searches'
    # budget (SPEC §13b) grows with it.
    "fit": SweepGrid(
        layers=(1, 2),
        hidden=(32, 64),
        heads=(2,),
        n_train=(100, 300, 900),
        label_noise=(0.0,),
        seeds=(0, 1, 2, 3, 4),
        learning_rates=(5e-4, 1e-3),
        settings=TrainSettings(steps=6000, save_every=500, fit_every=100, until_fit=True),
    ),
    # 480 runs for a study with narrower intervals, held to SPEC §13b as the fit preset is (trained until
    # they fit, at most 6,000 steps; five seeds; two learning rates; no label noise, which sets of 900 and
    # more do not memorise within the cap), over depth 1-4, width 32-128 and n 100-2,700: hours on 2 cores,
    # meant for many (the manual, docs/lab/index.md).
    "study": SweepGrid(
        layers=(1, 2, 3, 4),
        hidden=(32, 64, 128),
        heads=(2,),
        n_train=(100, 300, 900, 2700),
        label_noise=(0.0,),
        seeds=(0, 1, 2, 3, 4),
        learning_rates=(5e-4, 1e-3),
        settings=TrainSettings(steps=6000, save_every=500, fit_every=100, until_fit=True),
    ),
}

#: The fine-tuning preset (SPEC §14 in the lab, §13b's rules): the shipped base (a 2-layer BERT of width
#: 64 pretrained on the threshold rule at positions 0, 5, 9) fine-tuned on the same rule at positions
#: 2, 7, 12, in full and through LoRA adapters of rank 1, 4 and 16, on n in {100, 300} fine-tuning
#: examples, at two learning rates, five seeds each: 80 runs, each trained until it fits its training
#: set (at most 6,000 steps), the gap measured on the fine-tuning task. About 35 s a run on one core.
FINETUNE = "finetune"
FINETUNE_GRID = SweepGrid(
    layers=(2,),
    hidden=(64,),
    heads=(2,),
    n_train=(100, 300),
    seeds=(0, 1, 2, 3, 4),
    task=FINE_TUNE_TASK,
    learning_rates=(5e-4, 1e-3),
    fine_tunings=(FineTuning(rank=0), FineTuning(rank=1), FineTuning(rank=4), FineTuning(rank=16)),
    settings=TrainSettings(steps=6000, save_every=500, fit_every=100, until_fit=True),
)

#: The grokking preset (SPEC §13 and §13b, Power et al. 2022): modular addition mod 97 with 30% of its
#: 9,409 pairs for training (the other 6,586 for test), a one-layer model of width 64 with 4 heads,
#: full-batch AdamW (learning rate 1e-3, weight decay 1, beta2 0.98 as Power et al. and Nanda et al.
#: train: with torch's 0.999 the training error fell back to 0.25-0.60 mid-run) for 3,500 steps with a
#: checkpoint every 20; ten seeds. Trained here, seed 0 fits its training set by step 200 and its test
#: error falls from 0.5 at step 1,700 to 0.003 at 2,300 and stays there (the manual, docs/lab/index.md, "Grokking").
GROK = "grok"
_GROK_TRAIN = 2823
GROK_GRID = SweepGrid(
    layers=(1,),
    hidden=(64,),
    heads=(4,),
    n_train=(_GROK_TRAIN,),
    seeds=tuple(range(10)),
    task=TASKS[Task.MODULAR],
    settings=TrainSettings(
        steps=3500,
        save_every=20,
        learning_rate=1e-3,
        weight_decay=1.0,
        batch_size=_GROK_TRAIN,
        test_samples=9409,
        adam_beta2=0.98,
    ),
)
#: Every preset name ``--preset`` takes.
PRESET_NAMES: tuple[str, ...] = (*sorted(PRESETS), FINETUNE, GROK)

#: Per task other than the threshold task, the axes each preset changes: the modular task's n_train is
#: a number of its 97² = 9409 pairs and the Markov task's a number of sequences; neither has label noise,
#: so its noise axis is 0 alone and seeds take its place.
_TASK_AXES: dict[Task, dict[str, dict[str, Any]]] = {
    Task.PARITY: {},
    Task.MODULAR: {
        "smoke": {"n_train": (1000, 4000), "label_noise": (0.0,), "seeds": (0, 1)},
        "class": {"n_train": (1000, 2500, 5000), "label_noise": (0.0,), "seeds": (0, 1, 2, 3)},
        "study": {"n_train": (1000, 2500, 5000, 7500), "label_noise": (0.0,), "seeds": (0, 1, 2, 3, 4)},
    },
    Task.MARKOV: {
        "smoke": {"n_train": (16, 128), "label_noise": (0.0,), "seeds": (0, 1)},
        "class": {"n_train": (16, 64, 256), "label_noise": (0.0,), "seeds": (0, 1, 2)},
        # next-token prediction cannot fit: the study's axes on a fixed budget of 500 steps
        "study": {
            "n_train": (16, 64, 256, 1024),
            "label_noise": (0.0,),
            "seeds": (0, 1, 2, 3, 4),
            "settings": TrainSettings(steps=500, save_every=125),
        },
        # next-token prediction cannot fit (SPEC §13b): the fit preset's five seeds and learning-rate
        # axis on the class preset's fixed budget of 500 steps, a checkpoint every 125
        "fit": {
            "n_train": (16, 64, 256),
            "label_noise": (0.0,),
            "seeds": (0, 1, 2, 3, 4),
            "settings": TrainSettings(steps=500, save_every=125),
        },
    },
}
#: Smoke runs of a decoder or another task: fewer test samples (a Markov test sample is 32 predictions).
_SMOKE_TEST_SAMPLES: dict[Task, int] = {Task.MARKOV: 500}
#: The Markov task's class and study presets: 1,000 test sequences (31,000 predictions).
_MARKOV_TEST_SAMPLES = 1000


def preset_grid(name: str, task: Task | str = Task.THRESHOLD, family: Family | str = Family.BERT) -> SweepGrid:
    """A preset for one environment: ``PRESETS[name]`` on the default instance of ``task`` (the threshold
    task's presets are unchanged) for ``family`` (each a member or its name; LabError for an unknown name)."""
    if name not in PRESET_NAMES:
        raise LabError(f"unknown preset {name!r} (known: {', '.join(PRESET_NAMES)})")
    task, family = task_of(task), family_of(family)
    if name == GROK:
        if task is not Task.MODULAR:
            raise LabError(f"the {GROK} preset trains on the modular task: give --task modular, not {task}")
        return replace(GROK_GRID, family=family)
    if name == FINETUNE:
        if (task, family) != (Task.THRESHOLD, Family.BERT):
            raise LabError(f"the {FINETUNE} preset fine-tunes the shipped BERT base on the threshold task")
        return FINETUNE_GRID
    grid = replace(PRESETS[name], family=family)
    if task is Task.THRESHOLD:
        return grid
    grid = replace(grid, task=TASKS[task], **_TASK_AXES[task].get(name, {}))
    if task is Task.MARKOV and name != "smoke":
        grid = replace(grid, settings=replace(grid.settings, test_samples=_MARKOV_TEST_SAMPLES))
    if name == "smoke":  # seconds, not a minute: 100 steps, checkpoints at 0, 50 and 100
        test_samples = _SMOKE_TEST_SAMPLES.get(task, grid.settings.test_samples)
        grid = replace(grid, settings=replace(grid.settings, steps=100, save_every=50, test_samples=test_samples))
    return grid


_GRID_AXES = {
    "layers": int,
    "hidden": int,
    "heads": int,
    "n_train": int,
    "label_noise": float,
    "learning_rates": float,
    "batch_sizes": int,
    "weight_decays": float,
    "seeds": int,
}


def grid_from_dict(data: Mapping[str, Any], base: SweepGrid | None = None) -> SweepGrid:
    """A grid from JSON-like data: axis lists (layers, hidden, heads, n_train, label_noise, learning_rates,
    batch_sizes, weight_decays, seeds),
    optional ``settings`` (fields of TrainSettings) and ``task`` (vocab_size, length, positions,
    threshold). Missing entries come from ``base`` (default: the smoke preset)."""
    base = base or PRESETS["smoke"]
    if not isinstance(data, Mapping):
        raise LabError("a grid must be a JSON object")
    unknown = set(data) - set(_GRID_AXES) - {"settings", "task"}
    if unknown:
        raise LabError(
            f"unknown grid entries: {', '.join(sorted(unknown))} "
            f"(known: {', '.join([*_GRID_AXES, 'settings', 'task'])})"
        )
    values: dict[str, Any] = {}
    try:
        for axis, convert in _GRID_AXES.items():
            if axis in data:
                raw = data[axis] if isinstance(data[axis], list) else [data[axis]]
                values[axis] = tuple(dict.fromkeys(_grid_number(f"grid entry '{axis}'", v, convert) for v in raw))
        settings, task = data.get("settings", {}), data.get("task", {})
        if not isinstance(settings, Mapping) or not isinstance(task, Mapping):
            raise LabError("grid entries 'settings' and 'task' must be JSON objects")
        known_settings = {f.name for f in fields(TrainSettings)}
        known_task = {f.name for f in fields(type(base.task))} - {"label_noise"}
        if set(settings) - known_settings or set(task) - known_task:
            raise LabError(
                f"unknown settings or task entries: "
                f"{quoted(', '.join(sorted((set(settings) - known_settings) | (set(task) - known_task))), 200)}"
            )
        settings = {
            name: _grid_flag(f"setting '{name}'", v)
            if name in _BOOL_SETTINGS
            else _grid_number(f"setting '{name}'", v, float if name in _FLOAT_SETTINGS else int)
            for name, v in settings.items()
        }
        checked_task: dict[str, Any] = {}
        for name, v in task.items():
            if name == "positions":
                if not isinstance(v, list):
                    raise LabError("task entry 'positions' must be a list of integers")
                checked_task[name] = tuple(_grid_number("task entry 'positions'", i, int) for i in v)
            elif name == "threshold" and v is None:
                checked_task[name] = None
            else:
                checked_task[name] = _grid_number(f"task entry '{name}'", v, int)
        values["settings"] = replace(base.settings, **settings)
        rebalance = {"threshold": None} if isinstance(base.task, ThresholdTask) else {}
        values["task"] = replace(base.task, **{**rebalance, **checked_task})  # rebalanced unless given
        grid = replace(base, **values)
        grid.specs()  # every run valid and within the limits, said now rather than at run 17
        return grid
    except (TypeError, ValueError) as exc:
        raise LabError(f"invalid grid: {quoted(exc, 200)}") from None


#: TrainSettings fields that are real numbers, and those that are true or false (the others are integers).
_FLOAT_SETTINGS = frozenset({"learning_rate", "weight_decay", "adam_beta2"})
_BOOL_SETTINGS = frozenset({"until_fit"})


def _grid_flag(what: str, value: Any) -> bool:
    """A true-or-false setting of a grid file: JSON's true or false, nothing else."""
    if not isinstance(value, bool):
        raise LabError(f"{what} must be true or false, got {quoted(json.dumps(value)[:80])}")
    return value


def _grid_number(what: str, value: Any, convert: Callable[[Any], Any]) -> Any:
    """A number of a grid file: finite, and a genuine integer where one is due (2.0 passes, 2.5 not)."""
    if not is_real_number(value):
        raise LabError(f"{what} must be a number or a list of numbers, got {quoted(json.dumps(value)[:80])}")
    if not math.isfinite(value):
        raise LabError(f"{what} must be a finite number, got {quoted(value)}")
    if convert is int:
        if isinstance(value, float) and not value.is_integer():
            raise LabError(f"{what} must hold integers, got {quoted(value)}")
        value = int(value)
    return convert(value)


def read_grid(path: Path | str, base: SweepGrid | None = None) -> SweepGrid:
    """A grid from a JSON file (see :func:`grid_from_dict`)."""
    path = Path(path)
    try:
        data = read_json(path, f"the grid file {path.name}", LIMITS.max_grid_bytes)
    except OSError as exc:  # missing, a FIFO or a device, too large: said without the directory
        raise LabError(f"cannot read the grid file {path.name}: {describe_os_error(exc)}") from None
    except ValueError as exc:
        raise LabError(f"the grid file {path.name} is not valid JSON ({quoted(exc, 120)})") from None
    return grid_from_dict(data, base)
