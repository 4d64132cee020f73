"""specbound inside a transformers ``Trainer``: the bound's proxies logged as the model trains.

:class:`SpecboundCallback` analyses the model in memory (no checkpoint written, the model left in its
mode and unchanged; see :func:`specbound.analyze`) every ``every_steps`` optimizer steps (default:
the Trainer's ``logging_steps``) and at each save, and adds its numbers to the Trainer's logs under
``specbound/``, so that ``state.log_history`` and every ``report_to`` integration (TensorBoard,
W&B, ...) record them. Optionally each profile is kept in a trajectory atlas (members ``NAME@STEP``)
that ``specbound trajectory`` and the dashboard open.

Unlike the rest of the package this module imports transformers when it is imported: it exists for
Trainer users (the ``lab`` extra).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from .api import Analysis, analyze
from .logspace import to_log10
from .profile import SpectralProfile

#: The prefix of every key the callback adds to the logs.
LOG_PREFIX = "specbound/"


def log_values(result: Analysis) -> dict[str, float]:
    """The numbers one analysis adds to the logs: both proxies (log10), p* statistics, per-kind sums,
    the largest depth factor."""
    terms = result.optimal_terms
    values = {
        "ours_log10": result.ours_log10,
        "edelman_log10": result.edelman_log10,
        "p_opt_mean": float(np.mean(result.bounds.p_opt)),
        "p_opt_zero_share": float(np.mean(result.bounds.p_opt == 0)),
        "log10_alpha_max": float(np.max(to_log10(result.bounds.log_alpha))),
    }
    if math.isfinite(result.ours):
        values["ours"] = result.ours
    for kind, log_sum in terms.log_per_kind().items():
        values[f"sum_c_{kind.value}_log10"] = float(to_log10(log_sum))
    return {LOG_PREFIX + key: value for key, value in values.items()}


class SpecboundCallback(TrainerCallback):
    """Log the bound's proxies of the model being trained, read in memory (see the module docstring).

    ``every_steps``: analyse every so many optimizer steps (None: at the Trainer's logging steps;
    0: never on a step); ``on_save``: also at every checkpoint save; ``atlas``: a file in which to
    keep every profile (rewritten whole at each analysis, so it is complete if training stops);
    ``name``: the label of the profiles (default: the config's ``_name_or_path``).

    Attach it with :meth:`attach` so that it comes before the reporting integrations and they record
    its values; passed in ``callbacks=[...]`` it still fills ``state.log_history``.
    """

    def __init__(
        self,
        every_steps: int | None = None,
        *,
        on_save: bool = True,
        atlas: Path | str | None = None,
        name: str | None = None,
        l_phi: float | None = None,
        grid_m: int | None = None,
    ) -> None:
        if every_steps is not None and every_steps < 0:
            raise ValueError(f"every_steps must be at least 0, got {every_steps}")
        self.every_steps = every_steps
        self.on_save_too = on_save
        self.atlas = Path(atlas) if atlas is not None else None
        self.name = name
        self.l_phi, self.grid_m = l_phi, grid_m
        self.profiles: dict[int, SpectralProfile] = {}  # step -> profile, when an atlas is kept
        self._pending: dict[str, float] = {}
        self._measured_step: int | None = None

    @classmethod
    def attach(cls, trainer: Any, *args: Any, **kwargs: Any) -> SpecboundCallback:
        """Make a callback and put it first in ``trainer``'s callbacks, before the reporting integrations."""
        callback = cls(*args, **kwargs)
        trainer.callback_handler.callbacks.insert(0, callback)
        return callback

    # --- the Trainer's events ---------------------------------------------------------------------
    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> TrainerControl:
        every = args.logging_steps if self.every_steps is None else self.every_steps
        step = state.global_step
        if (every and step % int(every) == 0) or (self.on_save_too and _saves_at_step(args, state)):
            self._measure(kwargs.get("model"), state)
            control.should_log = True  # the values go out with this step's log
        return control

    def on_epoch_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> TrainerControl:
        if self.on_save_too and _strategy(args.save_strategy) == "epoch" and self._measured_step != state.global_step:
            self._measure(kwargs.get("model"), state)
            control.should_log = True
        return control

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> TrainerControl:
        if self._pending and logs is not None:
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(self._pending)  # the Trainer copied logs into it already
            logs.update(self._pending)  # for the integrations that come after this callback
            self._pending = {}
        return control

    # --- the analysis ----------------------------------------------------------------------------
    def _measure(self, model: Any, state: TrainerState) -> None:
        if model is None:
            return
        name = self.name or str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        result = analyze(model, name=f"{name}@{state.global_step}", l_phi=self.l_phi, grid_m=self.grid_m)
        self._pending = log_values(result)
        self._measured_step = state.global_step
        if self.atlas is not None:
            from .atlas import save_atlas

            self.profiles[state.global_step] = result.profile
            save_atlas([self.profiles[step] for step in sorted(self.profiles)], self.atlas)


def _strategy(value: Any) -> str:
    return str(getattr(value, "value", value))


def _saves_at_step(args: TrainingArguments, state: TrainerState) -> bool:
    """Whether the Trainer saves a checkpoint after this optimizer step (its "steps" save strategy,
    and the save at the end of training), decided here because this callback may run before the
    Trainer's own flow callback sets ``should_save``."""
    if _strategy(args.save_strategy) != "steps":
        return False
    every = args.save_steps if args.save_steps >= 1 else math.ceil(state.max_steps * args.save_steps)
    return bool(every) and (state.global_step % int(every) == 0 or state.global_step >= state.max_steps)
