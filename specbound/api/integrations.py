"""specbound inside a transformers ``Trainer``: the bound's proxies logged as the model trains.

:class:`SpecboundCallback` analyses the model in memory (no checkpoint written, the model left in its
mode and unchanged; see :func:`specbound.analyze`) every ``every_steps`` optimizer steps (default:
the Trainer's ``logging_steps``) and at each save, and adds its numbers to the Trainer's logs under
``specbound/``, so that ``state.log_history`` and every ``report_to`` integration (TensorBoard,
W&B, ...) record them. Optionally each profile is kept in a trajectory atlas (members ``NAME@STEP``)
that ``specbound trajectory`` and the dashboard open.

A callback never stops a training run. What can be checked before training is checked when the
callback is made (its arguments, the atlas's folder) and when it is attached (the model's family and
shapes), with one clear line; a step that cannot be analysed (weights turned NaN, an atlas that can
no longer be written) logs one warning, and training goes on.

Unlike the rest of the package this module imports transformers when it is imported: it exists for
Trainer users (the ``lab`` extra).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from ..core.bounds import BoundSettings
from ..core.errors import SpecboundError
from ..core.logspace import to_log10
from ..core.profile import SpectralProfile
from ..core.proxies import Proxy
from ..core.text import described, quoted
from ..core.values import is_genuine_int
from ..io.files import require_parent
from ..io.models import REVISION_SEP
from ..studies.trajectory import StepTerms
from .analysis import Analysis, analyze

logger = logging.getLogger(__name__)

#: The prefix of every key the callback adds to the logs.
LOG_PREFIX = "specbound/"


def log_values(result: Analysis) -> dict[str, float]:
    """The numbers one analysis adds to the logs: both proxies (log10), p* statistics, per-kind sums,
    the largest depth factor; centred at a reference, also both centred proxies (log10) and the
    distance travelled, Σ_W ‖W - W⁰‖_F over the proxy matrices, in all and per kind (each matrix's
    Frobenius distance summed unsquared: not the lab's measure of the same name, Jiang et al.'s squared
    Σ ‖W - W⁰‖_F², see :class:`~specbound.studies.trajectory.CentredTerms`)."""
    step = StepTerms.of(0, result.bounds, result.centred)  # the step is the Trainer's, logged beside
    values = {
        Proxy.OURS.column: step.proxies[Proxy.OURS],
        Proxy.EDELMAN.column: step.proxies[Proxy.EDELMAN],
        "p_opt_mean": step.p_opt_mean,
        "p_opt_zero_share": step.p_opt_zero_share,
        "log10_alpha_max": max(step.log10_alpha),
    }
    if math.isfinite(result.ours):
        values["ours"] = result.ours
    for kind, log_sum in result.optimal_terms.log_per_kind().items():
        values[f"sum_c_{kind.value}_log10"] = float(to_log10(log_sum))
    if step.centred is not None:  # how far the weights travelled from the reference (SPEC §14)
        values["ours_centred_log10"] = step.centred.ours_log10
        values["edelman_centred_log10"] = step.centred.edelman_log10
        values["distance_frobenius"] = step.centred.distance_frobenius
        for kind, distance in step.centred.distance_by_kind.items():
            values[f"distance_frobenius_{kind.value}"] = distance
    return {LOG_PREFIX + key: value for key, value in values.items()}


class SpecboundCallback(TrainerCallback):
    """Log the bound's proxies of the model being trained, read in memory (see the module docstring).

    ``every_steps``: analyse every so many optimizer steps (None: at the Trainer's logging steps;
    0: never on a step); ``on_save``: also at every checkpoint save; ``atlas``: a file in which to
    keep every profile (rewritten whole at each analysis, so it is complete if training stops);
    ``name``: the label of the profiles (default: :func:`run_name`, the config's ``_name_or_path``
    when it is a Hub id, the last part of it when it is a local path). ``reference``: also the
    proxies centred at a reference (SPEC §14) and the distance travelled from it: ``"init"``, the
    weights as training begins (a copy kept on the CPU), or a base (a name or path, or a model in
    memory) of the same family and dimensions.

    Example::

        >>> callback = SpecboundCallback.attach(trainer, every_steps=50, reference="init")  # doctest: +SKIP
        >>> trainer.train()  # doctest: +SKIP
        >>> trainer.state.log_history[-1]["specbound/distance_frobenius"]  # doctest: +SKIP

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
        reference: Any = None,
    ) -> None:
        _check_reference(reference)
        if every_steps is not None and not (is_genuine_int(every_steps) and every_steps >= 0):
            raise ValueError(
                f"every_steps must be a whole number of steps, at least 0 (0: never on a step), "
                f"not {described(every_steps)}"
            )
        if not isinstance(on_save, bool):
            raise ValueError(f"on_save must be True or False, not {described(on_save)}")
        if name is not None and (not isinstance(name, str) or not name or REVISION_SEP in name):
            raise ValueError(f"name must be a non-empty text without '{REVISION_SEP}', not {described(name)}")
        BoundSettings(l_phi=l_phi, grid_m=grid_m)  # refused now, with the bound's own line, not at a step
        self.every_steps = None if every_steps is None else int(every_steps)
        self.on_save_too = on_save
        self.atlas = _atlas_path(atlas) if atlas is not None else None
        self.name = name
        self.l_phi, self.grid_m = l_phi, grid_m
        self.profiles: dict[int, SpectralProfile] = {}  # step -> profile, when an atlas is kept
        self._pending: dict[str, float] = {}
        self._measured_step: int | None = None
        self._atlas_full = False
        self._refused: str | None = None  # why the model cannot be analysed, when found at the start of training
        self._checked_model: Any = None  # the model attach() found readable
        self.reference = reference
        #: with reference="init": (config, state dict) as training began, copied to the CPU
        self._initial: tuple[dict[str, Any], dict[str, Any]] | None = None

    @classmethod
    def attach(cls, trainer: Any, *args: Any, **kwargs: Any) -> SpecboundCallback:
        """Make a callback and put it first in ``trainer``'s callbacks, before the reporting integrations.

        A model the analysis cannot read (an unsupported family, shapes that do not fit) is refused
        here, with its one line, before any training step."""
        callback = cls(*args, **kwargs)
        model = getattr(trainer, "model", None)
        if model is not None:
            reason = unreadable_reason(model)
            if reason is not None:
                raise SpecboundError(f"the callback cannot analyse this model: {reason}")
            callback._checked_model = model  # on_train_begin need not read it again
        trainer.callback_handler.callbacks.insert(0, callback)
        return callback

    # --- the Trainer's events ---------------------------------------------------------------------
    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> TrainerControl:
        model = kwargs.get("model")
        if model is not None and self.reference == REFERENCE_INIT:
            self._initial = _snapshot(model)
        if model is None or model is self._checked_model:
            return control
        if (reason := unreadable_reason(model)) is not None:  # given in callbacks=[...]: warn, never raise
            self._refused = reason
            logger.warning("specbound: the callback cannot analyse this model and stays idle: %s", reason)
        return control

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> TrainerControl:
        every = _cadence(args.logging_steps, state) if self.every_steps is None else self.every_steps
        step = state.global_step
        due = (every and step % every == 0) or (self.on_save_too and _saves_at_step(args, state))
        if due and self._measure(kwargs.get("model"), state):
            control.should_log = True  # the values go out with this step's log
        return control

    def on_epoch_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> TrainerControl:
        due = self.on_save_too and _strategy(args.save_strategy) == "epoch"
        if due and self._measured_step != state.global_step and self._measure(kwargs.get("model"), state):
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
    def _measure(self, model: Any, state: TrainerState) -> bool:
        """Analyse the model at this step; whether its values are pending for the log. Never raises:
        a step that cannot be analysed, or an atlas that cannot be written, is one warning."""
        step = state.global_step
        if model is None or self._refused is not None:
            return False
        name = self.name or run_name(model)
        try:
            result = analyze(
                model, name=f"{name}{REVISION_SEP}{step}", l_phi=self.l_phi, grid_m=self.grid_m, **self._base()
            )
        except Exception as exc:  # a callback never stops training (SpecboundError: the weights, e.g. NaN)
            logger.warning("specbound: step %d is not analysed: %s", step, _reason(exc))
            return False
        self._pending = log_values(result)
        self._measured_step = step
        if self.atlas is not None and not self._atlas_full:
            self._keep(step, result.profile)
        return True

    def _base(self) -> dict[str, Any]:
        """The reference as :func:`specbound.analyze` takes it: ``base=`` (and ``base_config=``)."""
        if self.reference is None:
            return {}
        if self.reference == REFERENCE_INIT:
            if self._initial is None:
                raise SpecboundError('reference="init" needs the weights as training began: none were seen')
            config, state = self._initial
            return {"base": state, "base_config": config}
        return {"base": self.reference}

    def _keep(self, step: int, profile: SpectralProfile) -> None:
        """Rewrite the atlas with this step's profile added; when an atlas cannot hold it, the atlas
        keeps the steps before and no later step is kept (one warning)."""
        from ..io.atlas import AtlasError, save_atlas

        assert self.atlas is not None
        kept = {**self.profiles, step: profile}
        try:
            save_atlas([kept[s] for s in sorted(kept)], self.atlas)
        except AtlasError as exc:
            self._atlas_full = True
            logger.warning(
                "specbound: %s; it keeps the steps up to %s, later ones are logged only",
                exc,
                max(self.profiles, default="none"),
            )
            return
        except (OSError, SpecboundError) as exc:
            logger.warning(
                "specbound: the atlas %s is not written at step %d: %s", quoted(self.atlas.name), step, _reason(exc)
            )
            return
        self.profiles = kept


def _check_reference(reference: Any) -> None:
    """``reference=`` as :func:`specbound.analyze`'s ``base=`` takes it, checked when the callback is
    made (one line), not at every step: None, ``"init"``, a model name or path (not empty), or a model
    in memory (a ``PreTrainedModel``: its ``state_dict()`` and ``config``). A state dict alone has no
    config to read it by."""
    if (
        reference is None
        or isinstance(reference, Path)
        or (hasattr(reference, "state_dict") and hasattr(reference, "config"))
    ):
        return
    if isinstance(reference, str):
        if reference.strip():
            return
        raise ValueError(
            f'reference must be "init", a model name or path, or a model in memory, not {described(reference)}'
        )
    if isinstance(reference, Mapping):
        raise ValueError(
            "reference must be a model in memory with its config: give the PreTrainedModel, not its state_dict"
        )
    raise ValueError(
        f'reference must be "init", a model name or path, or a model in memory (a PreTrainedModel), '
        f"not {described(reference)} ({type(reference).__name__})"
    )


#: ``reference=`` for the weights as training begins (Jiang et al.'s distance from initialization).
REFERENCE_INIT = "init"


def _snapshot(model: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config, a CPU copy of the state dict) of a model in memory, to be read as a reference later."""
    state = {name: tensor.detach().to("cpu", copy=True) for name, tensor in model.state_dict().items()}
    return model.config.to_dict(), state


def run_name(model: Any) -> str:
    """The label of a model's profiles when none is given: its config's ``_name_or_path`` when that
    is a Hub id, the last part of it when it is a local directory (an atlas travels: it must not show
    the folders of the machine that wrote it), else the model's class."""
    named = getattr(getattr(model, "config", None), "_name_or_path", "")
    if not isinstance(named, str) or not named.strip():
        return type(model).__name__
    path = Path(named)
    try:
        local = path.is_absolute() or named.startswith(("~", ".")) or path.exists()
    except (OSError, ValueError):
        local = True
    label = path.name if local else named
    return label.replace(REVISION_SEP, "_") or type(model).__name__


def unreadable_reason(model: Any) -> str | None:
    """Why the analysis cannot read ``model`` (its family, config or tensor shapes), or None: the
    checks of :func:`specbound.analyze` that need no arithmetic."""
    from ..io.checkpoints import Checkpoint
    from .analysis import _config_dict

    try:
        Checkpoint.from_state_dict(_config_dict(model.config), model.state_dict(), "the model")
    except Exception as exc:  # whatever the model holds, the answer is a line, not a raise
        return _reason(exc)
    return None


def _reason(exc: BaseException) -> str:
    """An exception as the text of one warning: the package's own message, else its kind and text."""
    return str(exc) if isinstance(exc, SpecboundError) else f"{type(exc).__name__}: {quoted(exc, 200)}"


def _atlas_path(atlas: Path | str) -> Path:
    """The atlas file, checked before training: its folder must exist and it must not be a folder."""
    if not isinstance(atlas, str | Path) or not str(atlas):
        raise ValueError(f"atlas must be a file path, not {described(atlas)}")
    path = Path(atlas).expanduser()
    if path.is_dir():
        raise SpecboundError(
            f"the atlas {quoted(path.name)} is a directory: name a file, e.g. {quoted(path.name)}/trajectory.npz"
        )
    require_parent(path, "atlas")
    return path


def _cadence(logging_steps: float, state: TrainerState) -> int:
    """The Trainer's ``logging_steps`` as a number of steps: below 1 it is a share of the run's steps
    (transformers' rule), rounded up."""
    if logging_steps < 1:
        return math.ceil(state.max_steps * logging_steps)
    return int(logging_steps)


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
